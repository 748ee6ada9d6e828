"""Assessor queues, single-label writes, undo, and the context a judging screen needs.

An assessor's queue is the pool of the turns assigned to them (or, in open mode with no
assignment, every pooled turn), in a fixed order: conversation (import order), turn position,
then passage id, so passages of one document sit together as at NIST. Each label is written
in its own transaction the moment it is given; the history triggers record every change.
"""

from __future__ import annotations

from typing import NamedTuple

from sqlite_utils import Database

from assess.errors import AssessError, UnknownItem
from assess.queueing import QueueOrder, QueueState
from store.db import write
from store.imports import ensure_source, now

MODES = ("blind", "reveal", "shown")


class QueueItem(NamedTuple):
    turn_id: str
    item_id: str  # passage id (passage task) or statement id (PTKB task)


# ------------------------------------------------------------------------------------------- assessors


def sign_in(db: Database, name: str) -> str:
    """Register ``name`` as an assessor source (idempotent); refuse names of other kinds of source."""
    name = (name or "").strip()
    if not name or len(name) > 64 or any(c.isspace() for c in name) or ":" in name:
        raise AssessError("an assessor name is 1-64 characters without spaces or ':'")
    row = db.conn.execute("SELECT kind FROM sources WHERE name = ?", (name,)).fetchone()
    if row and row[0] != "assessor":
        raise AssessError(f"{name!r} is the name of a {row[0]} label source; choose another assessor name")
    if not row:
        with write(db):
            ensure_source(db, name, "assessor")
    return name


def get_setting(db: Database, key: str, default: str) -> str:
    row = db.conn.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
    return row[0] if row else default


def set_setting(db: Database, key: str, value: str) -> None:
    with write(db):
        db.conn.execute(
            "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )


def judging_mode(db: Database) -> str:
    """The study's judging mode: 'blind' (default: no other source's label is ever shown),
    'reveal' (blind-then-reveal: LLM labels appear only after one's own label is committed), or
    'shown' (LLM labels are shown before judging)."""
    return get_setting(db, "judging_mode", "blind")


# ------------------------------------------------------------------------------------------- queues

_TASKS = {
    # task: (item source query, label table, item column, value column)
    "passage": (
        "SELECT p.turn_id AS turn_id, p.passage_id AS item_id FROM pool p",
        "passage_labels",
        "passage_id",
        "grade",
    ),
    "ptkb": (
        "SELECT t0.id AS turn_id, s.statement_id AS item_id FROM turns t0 "
        "JOIN ptkb_statements s ON s.conversation_id = t0.conversation_id",
        "ptkb_labels",
        "statement_id",
        "relevant",
    ),
}


def _scope(db: Database, assessor: str, open_mode: bool) -> tuple[str, tuple]:
    has = db.conn.execute("SELECT 1 FROM assignments WHERE assessor = ? LIMIT 1", (assessor,)).fetchone()
    if has:
        return "q.turn_id IN (SELECT turn_id FROM assignments WHERE assessor = ?)", (assessor,)
    if open_mode:
        return "1", ()
    return "0", ()


def _order_sql(task: str, where: str) -> str:
    items = _TASKS[task][0]
    order_item = "q.item_id" if task == "passage" else "CAST(q.item_id AS INTEGER), q.item_id"
    return (
        f"SELECT q.turn_id, q.item_id FROM ({items}) q "
        f"JOIN turns t ON t.id = q.turn_id JOIN conversations c ON c.id = t.conversation_id "
        f"WHERE {where} ORDER BY c.rowid, t.position, {order_item}"
    )


def queue_order(db: Database, assessor: str, *, task: str = "passage", open_mode: bool = True) -> QueueOrder:
    """The assessor's items in judging order (cacheable until :func:`queue_version` changes)."""
    where, params = _scope(db, assessor, open_mode)
    return QueueOrder.of(db.conn.execute(_order_sql(task, where), params))


def queue_version(db: Database, assessor: str) -> tuple:
    """Changes whenever the pool, the turns or the assessor's assignments change."""
    return tuple(
        db.conn.execute(
            "SELECT (SELECT COUNT(*) FROM pool), (SELECT MAX(added_at) FROM pool), (SELECT COUNT(*) FROM turns), "
            "(SELECT COUNT(*) FROM ptkb_statements), (SELECT COUNT(*) FROM assignments WHERE assessor = ?), "
            "(SELECT MAX(assigned_at) FROM assignments WHERE assessor = ?)",
            (assessor, assessor),
        ).fetchone()
    )


def labelled(db: Database, assessor: str, task: str = "passage") -> frozenset:
    """The (turn, item) pairs the source has labelled (any value, 'cannot judge' included)."""
    _, table, col, _ = _TASKS[task]
    return frozenset(db.conn.execute(f"SELECT turn_id, {col} FROM {table} WHERE source = ?", (assessor,)))


def load_queue(
    db: Database, assessor: str, *, task: str = "passage", open_mode: bool = True, order: QueueOrder | None = None
) -> QueueState:
    """The assessor's queue with what they have judged (pass a cached ``order`` to skip the ordering query)."""
    order = order if order is not None else queue_order(db, assessor, task=task, open_mode=open_mode)
    return QueueState(order, labelled(db, assessor, task))


def queue(db: Database, assessor: str, *, task: str = "passage", open_mode: bool = True) -> list[tuple]:
    """The assessor's queue as [(turn_id, item_id, judged)] in queue order."""
    state = load_queue(db, assessor, task=task, open_mode=open_mode)
    return [state.item(i) for i in range(len(state))]


def turn_items(db: Database, assessor: str, turn_id: str, *, task: str = "passage") -> list[tuple]:
    """One turn's items: [(turn_id, item_id, judged)] in queue order."""
    order = QueueOrder.of(db.conn.execute(_order_sql(task, "q.turn_id = ?"), (turn_id,)))
    done = labelled(db, assessor, task)
    return [(t, i, (t, i) in done) for t, i in order.items]


def resume_position(items: list[tuple]) -> int | None:
    """Where an assessor resumes in a [(turn, item, judged)] list: the first unjudged item."""
    for i, item in enumerate(items):
        if not item[2]:
            return i
    return len(items) - 1 if items else None


# ------------------------------------------------------------------------------------------- labels


def save_passage_label(
    db: Database,
    source: str,
    turn_id: str,
    passage_id: str,
    grade: int | None,
    *,
    note: str | None = None,
    mode: str = "blind",
    via: str = "key",
) -> None:
    """Write one passage judgment (grade 0-4, or None for 'cannot judge') in its own transaction."""
    if grade is not None and (isinstance(grade, bool) or grade not in (0, 1, 2, 3, 4)):
        raise AssessError(f"a grade is 0, 1, 2, 3 or 4 (or cannot judge), not {grade!r}")
    if mode not in MODES + ("adjudication",):
        raise AssessError(f"mode is one of {', '.join(MODES)}, not {mode!r}")
    with write(db):
        if not db.conn.execute(
            "SELECT 1 FROM pool WHERE turn_id = ? AND passage_id = ?", (turn_id, passage_id)
        ).fetchone():
            raise UnknownItem(f"passage {passage_id} is not in the pool of turn {turn_id}")
        db.conn.execute(
            "INSERT INTO passage_labels (source, turn_id, passage_id, grade, note, mode, via, updated_at) "
            "VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(source, turn_id, passage_id) DO UPDATE SET "
            "grade=excluded.grade, note=COALESCE(excluded.note, note), mode=excluded.mode, via=excluded.via, "
            "updated_at=excluded.updated_at",
            (source, turn_id, passage_id, grade, note, mode, via, now()),
        )


def save_ptkb_label(
    db: Database,
    source: str,
    turn_id: str,
    statement_id: str,
    relevant: int,
    *,
    note: str | None = None,
    mode: str = "blind",
    via: str = "key",
) -> None:
    """Write one PTKB statement label (1 relevant, 0 not relevant) in its own transaction."""
    if relevant not in (0, 1):
        raise AssessError(f"a PTKB label is 0 or 1, not {relevant!r}")
    with write(db):
        row = db.conn.execute("SELECT conversation_id FROM turns WHERE id = ?", (turn_id,)).fetchone()
        if row is None:
            raise UnknownItem(f"unknown turn {turn_id!r}")
        db.conn.execute(
            "INSERT INTO ptkb_labels (source, turn_id, conversation_id, statement_id, relevant, note, mode, via, "
            "updated_at) VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(source, turn_id, statement_id) DO UPDATE SET "
            "relevant=excluded.relevant, note=COALESCE(excluded.note, note), mode=excluded.mode, "
            "via=excluded.via, updated_at=excluded.updated_at",
            (source, turn_id, row[0], statement_id, relevant, note, mode, via, now()),
        )


def save_note(db: Database, source: str, task: str, turn_id: str, item_id: str, note: str) -> bool:
    """Attach a note to an existing label; False when there is no label yet."""
    table, col = ("passage_labels", "passage_id") if task == "passage" else ("ptkb_labels", "statement_id")
    with write(db):
        cur = db.conn.execute(
            f"UPDATE {table} SET note = ?, updated_at = ? WHERE source = ? AND turn_id = ? AND {col} = ?",
            (note or None, now(), source, turn_id, item_id),
        )
        return cur.rowcount > 0


def label_of(db: Database, source: str, task: str, turn_id: str, item_id: str) -> dict | None:
    """The source's own label for one item (value, note, mode), or None."""
    table, col, val = {
        "passage": ("passage_labels", "passage_id", "grade"),
        "ptkb": ("ptkb_labels", "statement_id", "relevant"),
    }[task]
    row = db.conn.execute(
        f"SELECT {val}, note, mode FROM {table} WHERE source = ? AND turn_id = ? AND {col} = ?",
        (source, turn_id, item_id),
    ).fetchone()
    return None if row is None else {"value": row[0], "note": row[1], "mode": row[2]}


def last_change(db: Database, source: str, kind: str) -> tuple[str, str | None] | None:
    """The (item, old value) of the source's latest change of one label kind that no undo has cancelled.

    Walks the history backwards: each undo row (via 'undo') cancels one earlier change. Used inside
    the undo's own write transaction.
    """
    pending = 0
    for item, old, via in db.conn.execute(
        "SELECT item, old_value, via FROM label_history WHERE source = ? AND label_table = ? AND via IS NOT 'bulk' "
        "ORDER BY id DESC",
        (source, kind),
    ):
        if via == "undo":
            pending += 1
        elif pending:
            pending -= 1
        else:
            return item, old
    return None


def undo(db: Database, source: str, task: str = "passage") -> tuple[str, str] | None:
    """Revert the source's latest label change not yet undone; return the (turn, item) it touched.

    Repeated undos walk further back: each undo write is itself in the history (via 'undo') and
    cancels one earlier change.
    """
    table, col, val, kind = {
        "passage": ("passage_labels", "passage_id", "grade", "passage"),
        "ptkb": ("ptkb_labels", "statement_id", "relevant", "ptkb"),
    }[task]
    with write(db):
        target = last_change(db, source, kind)
        if target is None:
            return None
        turn_id, item_id = target[0].split(" ", 1)
        old = target[1]
        if old is None:
            db.conn.execute(
                f"DELETE FROM {table} WHERE source = ? AND turn_id = ? AND {col} = ?", (source, turn_id, item_id)
            )
        else:
            value = None if old == "cannot-judge" else int(old)
            db.conn.execute(
                f"UPDATE {table} SET {val} = ?, via = 'undo', updated_at = ? WHERE source = ? "
                f"AND turn_id = ? AND {col} = ?",
                (value, now(), source, turn_id, item_id),
            )
        return turn_id, item_id


# ------------------------------------------------------------------------------------------- reveal


def revealed_labels(db: Database, assessor: str, task: str, turn_id: str, item_id: str) -> list[dict]:
    """Other sources' labels for an item, for 'shown' mode or after the assessor's own label exists.

    Blind by default: returns [] in 'blind' mode, and in 'reveal' mode until the assessor has
    committed a label for this item, so nothing leaks into the page before that.
    """
    mode = judging_mode(db)
    if mode == "blind" or (mode == "reveal" and label_of(db, assessor, task, turn_id, item_id) is None):
        return []
    table, col, val = {
        "passage": ("passage_labels", "passage_id", "grade"),
        "ptkb": ("ptkb_labels", "statement_id", "relevant"),
    }[task]
    rows = db.conn.execute(
        f"SELECT l.source, s.kind, l.{val} FROM sources s JOIN {table} l ON l.source = s.name "
        f"AND l.turn_id = ? AND l.{col} = ? WHERE s.kind = 'llm' AND s.name != ? ORDER BY l.source",
        (turn_id, item_id, assessor),
    ).fetchall()
    return [{"source": r[0], "kind": r[1], "value": r[2]} for r in rows]
