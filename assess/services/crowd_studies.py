"""The organizer's crowd study actions and reads (the ``crowd`` commands): the store's functions of the same names,
so a front end reaches the crowd store only through services. Kept apart from :mod:`assess.services.crowd`, whose
agreement figures need numpy, so that opening, closing or listing a study loads no more than the store."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from assess.crowd.rules import KnownAnswer, StudyConfig
from assess.tasks import Task
from store import crowd as store_crowd


def create_study(
    db,
    name: str,
    config: StudyConfig,
    *,
    runs: Sequence[str] | None = None,
    turns: Sequence[str] | None = None,
    conversations: Sequence[str] | None = None,
    nugget_source: str = "gold",
    known: Iterable[KnownAnswer] = (),
    guideline: dict | None = None,
) -> dict:
    """Create a study from stored data, its known answers as hidden tests (:func:`store.crowd.create_study`)."""
    return store_crowd.create_study(
        db,
        name,
        config,
        runs=runs,
        turns=turns,
        conversations=conversations,
        nugget_source=nugget_source,
        known=known,
        guideline=guideline,
    )


def list_studies(db) -> list[dict]:
    return store_crowd.list_studies(db)


def progress(db, study: str) -> dict:
    """Progress per batch and per worker (:func:`store.crowd.progress`)."""
    return store_crowd.progress(db, study)


def label_task(db, study: str) -> Task:
    """The label task the study's aggregated labels are stored as."""
    return store_crowd.get_study(db, study).config.label_task


def set_decision(db, study: str, worker: str, decision: str | None) -> None:
    """Approve or reject a worker (None: undecided); rejected workers' answers are left out."""
    store_crowd.set_decision(db, study, worker, decision)


def release(db, study: str, worker: str) -> None:
    """Unbind a worker from their browser: the next browser with their link is bound to them."""
    store_crowd.release(db, study, worker)


def set_status(db, study: str, status: str) -> None:
    """Open or close a study."""
    store_crowd.set_status(db, study, status)
