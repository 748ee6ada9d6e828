"""Re-shown items: the organizer's rule, which judged items come back, and their second (consistency) answers.

An organizer sets, per task, a share of each assessor's judged items to come back later
(:class:`assess.queueing.ReshowRule`). When an assessor labels an item for the first time in a study mode,
:func:`schedule` (inside that label's transaction) records the item if the rule picks it. Once due, the
judging screen shows it again, blind, and :func:`answer` stores the second answer here, beside the primary
label as it stood then: the primary label itself is never touched, and nothing that reads the label tables
(qrels, exports, agreement) ever sees a consistency label.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from assess.errors import AssessError, UnknownItem
from assess.queueing import ReshowRule
from assess.tasks import Task, label_kind
from store.db import Store, now, row, rows, run, write
from store.history import record_action
from store.rights import check_writer
from store.settings import get_setting, set_setting

TASKS = (Task.PASSAGE.value,)
"""The tasks whose judging screens re-show items (the /judge queue)."""


class Reshow(NamedTuple):
    turn_id: str
    item_id: str


def _setting_key(task: str) -> str:
    return f"reshow:{task}"


def _task(task: str) -> str:
    if task not in TASKS:
        raise AssessError(f"items are re-shown on the {', '.join(TASKS)} queue, not {task!r}")
    return task


def rule(db: Store, task: str = "passage") -> ReshowRule | None:
    """The task's re-show rule, or None when items are not re-shown."""
    stored = get_setting(db, _setting_key(_task(task)), "")
    if not stored:
        return None
    found = json.loads(stored)
    return ReshowRule(found["share"], gap=found["gap"], seed=found["seed"])


def set_rule(
    db: Store, share: float, *, gap: int = 10, seed: int = 0, task: str = "passage", by: str | None = None
) -> ReshowRule | None:
    """Set the task's re-show rule (share 0: off), recorded in the history as ``by``'s action. Items already
    picked keep their place; the rule decides for labels given from now on."""
    _task(task)
    try:
        new = None if share == 0 else ReshowRule(share, gap=gap, seed=seed)
    except ValueError as exc:
        raise AssessError(str(exc)) from None
    text = "" if new is None else json.dumps({"share": new.share, "gap": new.gap, "seed": new.seed}, sort_keys=True)
    with write(db):
        before = get_setting(db, _setting_key(task), "")
        set_setting(db, _setting_key(task), text)
        record_action(db, by, "judging-mode", _setting_key(task), before or None, text or None, via="set")
    return new


def _held(kind) -> str:
    return f"(SELECT COUNT(*) FROM {kind.table} WHERE source = :assessor)"


def schedule(db: Store, task: str, assessor: str, item, found: ReshowRule | None) -> bool:
    """Inside the write of an assessor's new label of ``item`` (turn, item id): record the item when ``found``
    (the task's rule) picks it. True when it was picked."""
    if found is None:
        return False
    kind = label_kind(task)
    held = row(db, f"SELECT {_held(kind)} AS held", {"assessor": assessor})["held"]
    n = held - 1  # the labels held before this one
    gap = found.picked(assessor, kind.task.value, n)
    if gap is None:
        return False
    run(
        db,
        "INSERT INTO reshows (task, assessor, turn_id, item_id, first_count, min_due, due_count, scheduled_at) "
        "VALUES (:task, :assessor, :turn_id, :item_id, :n, :min_due, :due, :at) ON CONFLICT DO NOTHING",
        {
            "task": kind.task.value,
            "assessor": assessor,
            "turn_id": item[0],
            "item_id": item[1],
            "n": n,
            "min_due": held + found.gap,
            "due": held + gap,
            "at": now(),
        },
    )
    return True


def due(
    db: Store, assessor: str, task: str = "passage", *, complete: bool = False, held: int | None = None
) -> Reshow | None:
    """The assessor's re-show to answer now: the earliest due one whose primary label still exists. Due once
    the assessor holds ``due_count`` labels; when their queue is complete, once they hold ``min_due``.
    ``held``: the number of labels the assessor holds of the task, when the caller knows it (a judging page
    keeps their labelled items): counting them costs more than the rest (3 ms for 20,000 labels)."""
    kind = label_kind(_task(task))
    a, b = kind.item_columns
    count = _held(kind) if held is None else ":held"
    found = row(
        db,
        f"SELECT r.turn_id AS turn_id, r.item_id AS item_id FROM reshows r JOIN {kind.table} l "
        f"ON l.source = r.assessor AND l.{a} = r.turn_id AND l.{b} = r.item_id "
        "WHERE r.assessor = :assessor AND r.task = :task AND r.answered_at IS NULL "
        f"AND r.{'min_due' if complete else 'due_count'} <= {count} "
        "ORDER BY r.due_count, r.turn_id, r.item_id LIMIT 1",
        {"assessor": assessor, "task": kind.task.value} | ({} if held is None else {"held": held}),
    )
    return None if found is None else Reshow(found["turn_id"], found["item_id"])


def answer(db: Store, assessor: str, task: str, item, value, *, mode: str) -> None:
    """Store the assessor's second answer of a re-shown item with their primary label as it stands, in one
    transaction (an answer given again replaces the second answer; the primary label is never written)."""
    kind = label_kind(_task(task))
    checked = kind.check(value)
    a, b = kind.item_columns
    with write(db):
        check_writer(db, assessor)
        first = row(
            db,
            f"SELECT l.{kind.value_column} AS value FROM reshows r JOIN {kind.table} l "
            f"ON l.source = r.assessor AND l.{a} = r.turn_id AND l.{b} = r.item_id "
            "WHERE r.assessor = :assessor AND r.task = :task AND r.turn_id = :turn_id AND r.item_id = :item_id",
            {"assessor": assessor, "task": kind.task.value, "turn_id": item[0], "item_id": item[1]},
        )
        if first is None:
            raise UnknownItem(f"{item[1]} of turn {item[0]} is not an item of {assessor!r} picked to come back")
        run(
            db,
            "UPDATE reshows SET value = :value, first_value = :first, first_missing = :missing, mode = :mode, "
            "answered_at = :at WHERE assessor = :assessor AND task = :task AND turn_id = :turn_id "
            "AND item_id = :item_id",
            {
                "value": checked,
                "first": first["value"],
                "missing": int(first["value"] is None),
                "mode": mode,
                "at": now(),
                "assessor": assessor,
                "task": kind.task.value,
                "turn_id": item[0],
                "item_id": item[1],
            },
        )


def postpone(db: Store, assessor: str, task: str, item) -> None:
    """Skip a re-shown item for now: it is due again after the assessor's next label."""
    kind = label_kind(_task(task))
    with write(db):
        check_writer(db, assessor)
        run(
            db,
            f"UPDATE reshows SET due_count = {_held(kind)} + 1, min_due = {_held(kind)} + 1 "
            "WHERE assessor = :assessor AND task = :task AND turn_id = :turn_id AND item_id = :item_id "
            "AND answered_at IS NULL",
            {"assessor": assessor, "task": kind.task.value, "turn_id": item[0], "item_id": item[1]},
        )


def answers(db: Store, task: str = "passage", assessor: str | None = None) -> list[dict]:
    """Every answered re-show: assessor, turn_id, item_id, first (the primary label then; None: cannot
    judge), second (None: cannot judge), answered_at; by assessor, then item."""
    sql = (
        "SELECT assessor, turn_id, item_id, first_value AS first, value AS second, answered_at FROM reshows "
        "WHERE task = :task AND answered_at IS NOT NULL"
    )
    params = {"task": label_kind(_task(task)).task.value}
    if assessor is not None:
        sql += " AND assessor = :assessor"
        params["assessor"] = assessor
    return rows(db, sql + " ORDER BY assessor, turn_id, item_id", params)


def counts(db: Store, task: str = "passage") -> list[dict]:
    """Per assessor: re-shows picked, answered and still to come."""
    return rows(
        db,
        "SELECT assessor, COUNT(*) AS picked, COUNT(answered_at) AS answered, "
        "COUNT(*) - COUNT(answered_at) AS pending FROM reshows WHERE task = :task GROUP BY assessor ORDER BY assessor",
        {"task": label_kind(_task(task)).task.value},
    )
