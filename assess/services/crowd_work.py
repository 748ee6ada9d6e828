"""What a crowd worker's page reads and writes, and nothing else: the study, the worker's binding to a browser,
the batch they enter, consent, the screen and an answer (the store's functions of the same names,
:mod:`store.crowd`). Kept apart from :mod:`assess.services.crowd` (the organizers' comparisons) so the worker
page loads no agreement measures, and so that this list is the whole of what a worker can reach."""

from __future__ import annotations

from collections.abc import Iterable

from store import Store
from store import crowd as store_crowd


def study(db: Store, name: str) -> store_crowd.Study:
    return store_crowd.get_study(db, name)


def check_binding(db: Store, study: str, worker: str, presented: Iterable[str | None] = ()) -> store_crowd.Binding:
    """Whether this browser may act as ``worker`` (binds nothing)."""
    return store_crowd.check_binding(db, study, worker, presented)


def bind(db: Store, study: str, worker: str, presented: Iterable[str | None] = ()) -> store_crowd.Binding:
    """Bind ``worker`` to this browser, or check that it is bound here."""
    return store_crowd.bind(db, study, worker, presented)


def enter(db: Store, entry) -> store_crowd.Assignment | None:
    """The worker's assignment (a new batch or the one they hold); None when no work is left."""
    return store_crowd.enter(db, entry)


def consent(db: Store, assignment_id: int) -> None:
    store_crowd.consent(db, assignment_id)


def screen(db: Store, assignment_id: int) -> store_crowd.Screen:
    return store_crowd.screen(db, assignment_id)


def answer(
    db: Store, assignment_id: int, item_id: int, value: int, *, seconds: float | None = None, graded=None
) -> store_crowd.AnswerResult:
    return store_crowd.answer(db, assignment_id, item_id, value, seconds=seconds, graded=graded)
