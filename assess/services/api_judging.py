"""What the HTTP API (assess/api/) does with a person's passage queue: the /judge page's queue and writes.

The queue is the page's (:func:`store.queue.queue_order` with the app's open-mode scope, less what the person
has labelled, from the first unjudged item on); re-shown items are the page's alone (a client that saw an item
again would know it is a repeat). A write goes through :func:`assess.services.judging.save_grade` as a key
press does, in the study's judging mode, and only for an item of the person's queue: the page offers no other.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from assess import settings
from assess.errors import AssessError
from assess.services import judging
from assess.tasks import Shown
from store import open_db, queue
from store.db import display, exists

_ORDERS: OrderedDict[tuple, object] = OrderedDict()
_ORDERS_LOCK = threading.Lock()
_ORDERS_KEPT = 64


def open_store(target: str, *, must_exist: bool = True):
    """The store at ``target``; with ``must_exist``, a missing one is refused (naming the ``init`` command)."""

    if must_exist and not exists(target):
        raise AssessError(f"{display(target)}: no such database (create it with: python -m assess init --db ...)")
    return open_db(target)


class NotInQueue(AssessError):
    """A write of an item that is not in the person's queue (HTTP 403)."""


def queue_order(db, name: str, task: str):
    """The person's queue order, kept until the pool or their assignments change (as the page keeps it):
    reading it costs a query over the pool, a write only one small version query."""
    open_mode = settings.open_mode()
    key = (db.target, name, task, open_mode, queue.queue_version(db, name))
    with _ORDERS_LOCK:
        if key in _ORDERS:
            _ORDERS.move_to_end(key)
            return _ORDERS[key]
    order = queue.queue_order(db, name, task=task, open_mode=open_mode)
    with _ORDERS_LOCK:
        _ORDERS[key] = order
        while len(_ORDERS) > _ORDERS_KEPT:
            _ORDERS.popitem(last=False)
    return order


def next_items(db, name: str, task: str = "passage", *, limit: int = 100) -> tuple[list[tuple[str, str]], int, int]:
    """(the next ``limit`` unjudged (turn, item) pairs in queue order, judged count, queue size)."""
    order = queue_order(db, name, task)
    done = queue.labelled(db, name, task)
    items = [item for item in order.items if item not in done]
    return items[:limit], len(order.items) - len(items), len(order.items)


def save_passage(db, name: str, turn_id: str, passage_id: str, grade: int | None, *, seen: Shown | None) -> None:
    """Store ``name``'s grade (None: cannot judge) of a passage of their queue, as /judge's key does; ``seen``:
    the label the client saw (:class:`store.labels.StaleLabel` when the stored one differs), None: no check."""
    if (turn_id, passage_id) not in queue_order(db, name, "passage").index:
        raise NotInQueue(f"passage {passage_id} of turn {turn_id} is not in {name}'s queue: nothing was saved")
    judging.save_grade(
        db,
        name,
        turn_id,
        passage_id,
        grade,
        reshow=False,
        note=None,
        mode=queue.judging_mode(db),
        expected=seen,
        via="api",
    )


def undo_latest(db, name: str, task: str = "passage") -> tuple[str, str] | None:
    """/judge's U key: revert the person's latest label change not yet undone; the item it touched, or None."""
    return queue.undo(db, name, task)


# What the API maps to HTTP statuses, named here so that the front end imports services only.
from store.labels import StaleLabel  # noqa: E402
from store.rights import NotAllowed  # noqa: E402

__all__ = [
    "NotAllowed",
    "NotInQueue",
    "StaleLabel",
    "next_items",
    "open_store",
    "queue_order",
    "save_passage",
    "undo_latest",
]
