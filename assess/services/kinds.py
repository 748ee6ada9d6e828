"""The judging page of a simple label kind, read from the registry alone: its queue, one item's screen, a key
press's label and its undo, for a kind whose registry entry names where its items come from
(:attr:`assess.tasks.LabelKind.item_source`).

A queue item is (turn, the item's other columns as :meth:`assess.tasks.ItemKey.encode_id` spells them, the
spelling of a pre-judgment's ``item_id``). The page is blind: it shows the assessor's own label only. Kinds
with more to show (citation support: the sentence, the passages it cites) keep services of their own
(:mod:`assess.services.rag`); these are what a new kind's page calls until it needs more.
"""

from __future__ import annotations

from dataclasses import dataclass

from assess.queueing import QueueOrder
from assess.tasks import JudgingMode, Task, label_kind
from store import labels


def _queue_key(task: str | Task, item: tuple) -> tuple[str, str]:
    return str(item[0]), label_kind(task).key.encode_id(item[1:])


def _item(task: str | Task, turn_id: str, item_id: str) -> tuple:
    """The label's item (every item column) of a queue item."""
    return (turn_id, *label_kind(task).key.decode_id(item_id))


def queue_order(db, task: str | Task) -> QueueOrder:
    """Every item of the kind (:func:`store.labels.items`) as queue items, in conversation and turn order.
    Every assessor sees every item (no assignment scope)."""
    return QueueOrder.of(_queue_key(task, item) for item in labels.items(db, task))


def labelled(db, task: str | Task, assessor: str) -> frozenset:
    """The items the assessor has labelled, as queue keys."""
    return frozenset(_queue_key(task, item) for item in labels.labelled(db, task, assessor))


@dataclass(frozen=True)
class KindScreen:
    """One item as a simple kind's page shows it: the item's columns and the assessor's own label."""

    turn_id: str
    item: tuple  # every item column, the turn first (as the registry's item_columns)
    own: int | None  # the assessor's value: None for no label or a 'cannot judge' one (see labelled)
    labelled: bool = False


def screen(db, task: str | Task, assessor: str, turn_id: str, item_id: str) -> KindScreen:
    """What the page shows for one queue item; :class:`~assess.errors.UnknownItem` when it is no item of the
    kind any more (e.g. re-imported meanwhile)."""
    item = _item(task, turn_id, item_id)
    labels.check_item(db, task, item)
    own = labels.get(db, task, assessor, item)
    return KindScreen(turn_id, item, None if own is None else own.value, own is not None)


def save(
    db, task: str | Task, assessor: str, turn_id: str, item_id: str, value: int | None, *, active_ms: int | None = None
) -> None:
    """One key press: the assessor's label of the item (checked against the kind's scale and items), in one
    transaction."""
    item = _item(task, turn_id, item_id)
    labels.save(db, task, assessor, item, value, mode=JudgingMode.BLIND, via="key", active_ms=active_ms)


def undo(db, task: str | Task, assessor: str) -> tuple[str, str] | None:
    """Revert the assessor's latest label change of the kind; the queue key (turn, item) it touched."""
    touched = labels.undo(db, task, assessor)
    if touched is None:
        return None
    return _queue_key(task, touched)
