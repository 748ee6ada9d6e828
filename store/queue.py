"""Assessor queues, single-label writes, undo, and the context a judging screen needs.

An assessor's queue is the pool of the turns assigned to them (or, in open mode with no
assignment, every pooled turn), in a fixed order: conversation (import order), turn position,
then passage id, so passages of one document sit together as at NIST. Each label is written
in its own transaction the moment it is given; the history triggers record every change.
"""

from __future__ import annotations

from collections.abc import Sequence

from assess.errors import AssessError, UnknownItem
from assess.queueing import QueueOrder, QueueState, interleave
from assess.tasks import PTKB_KEYS, STUDY_MODES, JudgingMode, Label, Shown, Task, label_kind
from store import labels, outbox, overlap_adaptive, reshows
from store.db import Store, column, each, row, value, write
from store.history import record_action
from store.samples import sampled_order
from store.settings import get_setting, set_setting

MODES = tuple(m.value for m in STUDY_MODES)


# ------------------------------------------------------------------------------------------- assessors


def judging_mode(db: Store) -> str:
    """The study's judging mode: 'blind' (default: no other source's label is ever shown),
    'reveal' (blind-then-reveal: LLM labels appear only after one's own label is committed), or
    'shown' (LLM labels are shown before judging)."""
    return get_setting(db, "judging_mode", JudgingMode.BLIND.value)


def set_judging_mode(db: Store, mode: str, *, by: str | None = None) -> bool:
    """Set the study's judging mode (recorded in the history as ``by``'s action); False when it already was
    ``mode``."""
    if mode not in MODES:
        raise AssessError(f"mode is one of {', '.join(MODES)}, not {mode!r}")
    with write(db):
        before = judging_mode(db)
        if before == mode:
            return False
        set_setting(db, "judging_mode", mode)
        record_action(db, by, "judging-mode", "judging_mode", before, mode, via="set")
    return True


# ------------------------------------------------------------------------------------------- queues

_ITEMS = {
    # the items a task's queue holds, as (turn_id, item_id) rows
    Task.PASSAGE: "SELECT p.turn_id AS turn_id, p.passage_id AS item_id FROM pool p",
    Task.PTKB: (
        "SELECT t0.id AS turn_id, s.statement_id AS item_id FROM turns t0 "
        "JOIN ptkb_statements s ON s.conversation_id = t0.conversation_id"
    ),
}


def assessor_scope(db: Store, assessor: str, open_mode: bool) -> tuple[str, dict]:
    if row(db, "SELECT 1 AS assigned FROM assignments WHERE assessor = :assessor LIMIT 1", {"assessor": assessor}):
        return "q.turn_id IN (SELECT turn_id FROM assignments WHERE assessor = :assessor)", {"assessor": assessor}
    if open_mode:
        return "1 = 1", {}
    return "1 = 0", {}


def _ordered(db: Store, task: str, where: str, params: dict) -> QueueOrder:
    """The task's items matching ``where``: conversation import order, turn position, then item id
    (statement ids numerically)."""
    task = Task(task)
    order_item = "q.item_id" if task is Task.PASSAGE else "int_prefix(q.item_id), q.item_id"
    sql = (
        f"SELECT q.turn_id AS turn_id, q.item_id AS item_id FROM ({_ITEMS[task]}) q "
        f"JOIN turns t ON t.id = q.turn_id JOIN conversations c ON c.id = t.conversation_id "
        f"WHERE {where} ORDER BY c.rowid, t.position, {order_item}"
    )
    return QueueOrder.of((r["turn_id"], r["item_id"]) for r in each(db, sql, params))


def ordered_items(db: Store, task: str, turn_ids) -> list[tuple[str, str]]:
    """The task's items of the given turns, in queue order."""
    turn_ids = list(dict.fromkeys(turn_ids))
    if not turn_ids:
        return []
    marks = ", ".join(f":t{i}" for i in range(len(turn_ids)))
    return list(_ordered(db, task, f"q.turn_id IN ({marks})", {f"t{i}": t for i, t in enumerate(turn_ids)}).items)


def overlap_blocks(db: Store, assessor: str, task: str = "passage") -> list[list[tuple[str, str]]]:
    """The assessor's extra items of every overlap plan of ``task`` (store/overlap.py; oldest plan first), as
    blocks in plan order."""
    blocks: dict[tuple[str, int], list[tuple[str, str]]] = {}
    for r in each(
        db,
        "SELECT i.plan AS plan, i.block AS block, i.turn_id AS turn_id, i.item_id AS item_id FROM overlap_items i "
        "JOIN overlap_plans p ON p.name = i.plan WHERE i.assessor = :assessor AND i.extra = 1 AND p.task = :task "
        "ORDER BY p.created_at, p.name, i.position",
        {"assessor": assessor, "task": task},
    ):
        blocks.setdefault((r["plan"], r["block"]), []).append((r["turn_id"], r["item_id"]))
    return list(blocks.values())


def queue_order(db: Store, assessor: str, *, task: str = "passage", open_mode: bool = True) -> QueueOrder:
    """The assessor's items in judging order (cacheable until :func:`queue_version` changes): the items of
    samples given to them (:func:`create_sample`) first, in the samples' order, then the rest of their queue,
    with the extra items of overlap plans spread through it (:func:`assess.queueing.interleave`)."""
    sampled = sampled_order(db, assessor, task=task)
    where, params = assessor_scope(db, assessor, open_mode)
    usual = _ordered(db, task, where, params)
    if blocks := overlap_blocks(db, assessor, Task(task).value):
        usual = QueueOrder.of(interleave(usual.items, blocks))
    if not sampled.items:
        return usual
    return QueueOrder.of([*sampled.items, *(it for it in usual.items if it not in sampled.index)])


def queue_version(db: Store, assessor: str) -> tuple:
    """Changes whenever the pool, the turns or the assessor's assignments change."""
    found = row(
        db,
        "SELECT (SELECT COUNT(*) FROM pool) AS pooled, (SELECT MAX(added_at) FROM pool) AS pooled_at, "
        "(SELECT COUNT(*) FROM turns) AS turns, (SELECT COUNT(*) FROM ptkb_statements) AS statements, "
        "(SELECT COUNT(*) FROM assignments WHERE assessor = :assessor) AS assigned, "
        "(SELECT MAX(assigned_at) FROM assignments WHERE assessor = :assessor) AS assigned_at, "
        "(SELECT COUNT(*) FROM sample_items WHERE assessor = :assessor) AS sampled, "
        "(SELECT COUNT(*) FROM overlap_items WHERE assessor = :assessor) AS overlapping",
        {"assessor": assessor},
    )
    return tuple(found.values())


def labelled(db: Store, assessor: str, task: str = "passage") -> frozenset:
    """The (turn, item) pairs the source has labelled (any value, 'cannot judge' included)."""
    return labels.labelled(db, task, assessor)


def load_queue(
    db: Store, assessor: str, *, task: str = "passage", open_mode: bool = True, order: QueueOrder | None = None
) -> QueueState:
    """The assessor's queue with what they have judged (pass a cached ``order`` to skip the ordering query)."""
    order = order if order is not None else queue_order(db, assessor, task=task, open_mode=open_mode)
    return QueueState(order, labelled(db, assessor, task))


def queue_progress(db: Store, assessor: str, *, task: str = "passage", open_mode: bool = True) -> tuple[int, int]:
    """(judged, total) over the assessor's queue, the figures of ``load_queue(...).progress()``.

    A queue that is its scope alone (no sample given to the assessor, no overlap extras) is counted in SQL,
    without reading its items (an open-mode queue is the whole pool: 45,471 items on iKAT 2024); any other
    is read and counted as :func:`load_queue` orders it."""
    task = Task(task)
    arranged = row(
        db,
        "SELECT 1 AS arranged FROM sample_items i JOIN samples s ON s.name = i.sample "
        "WHERE i.assessor = :assessor AND s.task = :task "
        "UNION ALL SELECT 1 AS arranged FROM overlap_items i JOIN overlap_plans p ON p.name = i.plan "
        "WHERE i.assessor = :assessor AND i.extra = 1 AND p.task = :task",
        {"assessor": assessor, "task": task.value},
    )
    if arranged:
        progress = load_queue(db, assessor, task=task, open_mode=open_mode).progress()
        return progress["judged"], progress["total"]
    where, params = assessor_scope(db, assessor, open_mode)
    kind = label_kind(task)
    turn, item = kind.item_columns
    total = value(db, f"SELECT COUNT(*) AS n FROM ({_ITEMS[task]}) q WHERE {where}", params)
    judged = value(
        db,
        f"SELECT COUNT(*) AS n FROM {kind.table} l JOIN ({_ITEMS[task]}) q ON q.turn_id = l.{turn} "
        f"AND q.item_id = l.{item} WHERE l.source = :source AND {where}",
        {**params, "source": assessor},
    )
    return judged, total


def queue_progress_many(
    db: Store, assessors: Sequence[str], *, task: str = "passage", open_mode: bool = True
) -> dict[str, tuple[int, int]]:
    """:func:`queue_progress` of each of ``assessors``, {name: (judged, total)}, in a fixed number of grouped
    queries (one join of the task's items with the labels of every assessor at once; PostgreSQL would hash the
    whole pool once per assessor otherwise); an assessor with a sample or overlap extras is counted alone."""
    task = Task(task)
    names = list(dict.fromkeys(assessors))
    if not names:
        return {}
    listed = ", ".join(f":a{i}" for i in range(len(names)))
    params = {f"a{i}": name for i, name in enumerate(names)}
    arranged = set(
        column(
            db,
            f"SELECT i.assessor FROM sample_items i JOIN samples s ON s.name = i.sample "
            f"WHERE i.assessor IN ({listed}) AND s.task = :task "
            f"UNION SELECT i.assessor FROM overlap_items i JOIN overlap_plans p ON p.name = i.plan "
            f"WHERE i.assessor IN ({listed}) AND i.extra = 1 AND p.task = :task",
            {**params, "task": task.value},
        )
    )
    assigned = set(column(db, f"SELECT DISTINCT assessor FROM assignments WHERE assessor IN ({listed})", params))
    kind = label_kind(task)
    turn, item = kind.item_columns
    items = f"({_ITEMS[task]}) q ON q.turn_id = l.{turn} AND q.item_id = l.{item}"
    free = [name for name in names if name not in assigned]  # their queue: every item (open mode) or none
    free_listed = ", ".join(f":f{i}" for i in range(len(free))) or "NULL"
    judged = {
        r["source"]: r["n"]
        for r in each(
            db,
            f"SELECT l.source, COUNT(*) AS n FROM {kind.table} l JOIN {items} WHERE l.source IN ({free_listed}) "
            "GROUP BY l.source",
            {f"f{i}": name for i, name in enumerate(free)},
        )
    }
    judged.update(
        (r["source"], r["n"])
        for r in each(
            db,
            f"SELECT l.source, COUNT(*) AS n FROM {kind.table} l JOIN {items} "
            f"JOIN assignments a ON a.assessor = l.source AND a.turn_id = l.{turn} "
            f"WHERE l.source IN ({listed}) GROUP BY l.source",
            params,
        )
    )
    totals = {
        r["assessor"]: r["n"]
        for r in each(
            db,
            f"SELECT a.assessor, COUNT(*) AS n FROM assignments a JOIN ({_ITEMS[task]}) q ON q.turn_id = a.turn_id "
            f"WHERE a.assessor IN ({listed}) GROUP BY a.assessor",
            params,
        )
    }
    everything = value(db, f"SELECT COUNT(*) AS n FROM ({_ITEMS[task]}) q") if open_mode else 0
    out = {}
    for name in names:
        if name in arranged:
            out[name] = queue_progress(db, name, task=task, open_mode=open_mode)
        elif name in assigned:
            out[name] = (judged.get(name, 0), totals.get(name, 0))
        else:
            out[name] = (judged.get(name, 0), everything) if open_mode else (0, 0)
    return out


def queue(db: Store, assessor: str, *, task: str = "passage", open_mode: bool = True) -> list[tuple]:
    """The assessor's queue as [(turn_id, item_id, judged)] in queue order."""
    state = load_queue(db, assessor, task=task, open_mode=open_mode)
    return [state.item(i) for i in range(len(state))]


def turn_items(db: Store, assessor: str, turn_id: str, *, task: str = "passage") -> list[tuple]:
    """One turn's items: [(turn_id, item_id, judged)] in queue order."""
    order = _ordered(db, task, "q.turn_id = :turn_id", {"turn_id": turn_id})
    done = labelled(db, assessor, task)
    return [(t, i, (t, i) in done) for t, i in order.items]


def resume_position(items: list[tuple]) -> int | None:
    """Where an assessor resumes in a [(turn, item, judged)] list: the first unjudged item."""
    for i, item in enumerate(items):
        if not item[2]:
            return i
    return len(items) - 1 if items else None


# ------------------------------------------------------------------------------------------- labels
# An assessor's writes: the queue's own rules (study modes, pool membership, the two PTKB keys),
# then store.labels, which checks the value against the task's scale and writes.


def _check_mode(mode: str) -> None:
    if mode not in (*MODES, JudgingMode.ADJUDICATION):
        raise AssessError(f"mode is one of {', '.join(MODES)}, not {mode!r}")


def save_passage_label(
    db: Store,
    source: str,
    turn_id: str,
    passage_id: str,
    grade: int | None,
    *,
    note: str | None = None,
    mode: str = "blind",
    via: str = "key",
    active_ms: int | None = None,
    expected: Shown | None = None,
) -> None:
    """Write one passage judgment (grade 0-4, or None for 'cannot judge') in its own transaction; the passage
    is in the turn's pool or in a sample given to ``source``. ``active_ms``: its active time (None: untimed).
    ``expected``: what the page showed of the label (:func:`store.labels.save`: a stale view is refused)."""
    label_kind(Task.PASSAGE).check(grade)
    _check_mode(mode)
    with write(db):
        key = {"turn_id": turn_id, "passage_id": passage_id, "assessor": source, "task": Task.PASSAGE.value}
        if not row(
            db,
            "SELECT 1 AS pooled FROM pool WHERE turn_id = :turn_id AND passage_id = :passage_id "
            "UNION ALL SELECT 1 AS pooled FROM sample_items i JOIN samples s ON s.name = i.sample "
            "WHERE i.assessor = :assessor AND i.turn_id = :turn_id AND i.item_id = :passage_id AND s.task = :task",
            key,
        ):
            raise UnknownItem(f"passage {passage_id} is not in the pool of turn {turn_id}")
        rule = reshows.rule(db, Task.PASSAGE) if mode in MODES else None  # adjudication is not re-shown
        if rule is None:
            new = False
        elif expected is not None:  # the write succeeds only when the stored label is the one shown
            new = not expected.labelled
        else:
            new = labels.get(db, Task.PASSAGE, source, (turn_id, passage_id)) is None
        labels.save(
            db,
            Task.PASSAGE,
            source,
            (turn_id, passage_id),
            grade,
            note=note,
            mode=mode,
            via=via,
            active_ms=active_ms,
            expected=expected,
        )
        if new:
            reshows.schedule(db, Task.PASSAGE, source, (turn_id, passage_id), rule)
        overlap_adaptive.after_label(db, source, turn_id, passage_id)  # a disagreement adds an assessor at once
        outbox.assignment_done(db, source, turn_id)


def save_ptkb_label(
    db: Store,
    source: str,
    turn_id: str,
    statement_id: str,
    relevant: int,
    *,
    note: str | None = None,
    mode: str = "blind",
    via: str = "key",
    active_ms: int | None = None,
    expected: Shown | None = None,
) -> None:
    """Write one PTKB statement label (1 relevant, 0 not relevant) in its own transaction; ``expected`` as for
    :func:`save_passage_label`."""
    PTKB_KEYS.check(relevant, what="a PTKB label")
    labels.save(
        db,
        Task.PTKB,
        source,
        (turn_id, statement_id),
        relevant,
        note=note,
        mode=mode,
        via=via,
        active_ms=active_ms,
        expected=expected,
    )


def save_note(db: Store, source: str, task: str, turn_id: str, item_id: str, note: str) -> bool:
    """Attach a note to an existing label; False when there is no label yet."""
    return labels.set_note(db, task, source, (turn_id, item_id), note)


def label_of(db: Store, source: str, task: str, turn_id: str, item_id: str) -> Label | None:
    """The source's own label for one item, or None."""
    return labels.get(db, task, source, (turn_id, item_id))


def undo(db: Store, source: str, task: str = "passage") -> tuple[str, str] | None:
    """Revert the source's latest label change not yet undone; return the (turn, item) it touched.

    Repeated undos walk further back (see :func:`store.labels.undo`).
    """
    return labels.undo(db, task, source)


# ------------------------------------------------------------------------------------------- reveal


def revealed_labels(db: Store, assessor: str, task: str, turn_id: str, item_id: str) -> list[Label]:
    """Other sources' labels for an item, for 'shown' mode or after the assessor's own label exists.

    Blind by default: returns [] in 'blind' mode, and in 'reveal' mode until the assessor has
    committed a label for this item, so nothing leaks into the page before that.
    """
    mode = judging_mode(db)
    if mode == "blind" or (mode == "reveal" and label_of(db, assessor, task, turn_id, item_id) is None):
        return []
    return labels.others(db, task, (turn_id, item_id), kinds=("llm",), exclude=assessor)
