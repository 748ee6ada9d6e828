"""Aligning two label sources item by item (for agreement and the audit)."""

from __future__ import annotations

from typing import NamedTuple

from sqlite_utils import Database

from assess.errors import AssessError

TASKS = {
    # task: (table, item columns, value column, scale)
    "passage": ("passage_labels", ("turn_id", "passage_id"), "grade", (0, 1, 2, 3, 4)),
    "ptkb": ("ptkb_labels", ("turn_id", "statement_id"), "relevant", (0, 1)),
    "ntr": ("ntr_labels", ("turn_id", "nugget_id", "run"), "match", (0, 1)),
}


class Pairs(NamedTuple):
    items: list[tuple]  # item keys, turn id first
    a: list[int]
    b: list[int]
    topics: list[str]  # conversation of each item
    scale: tuple[int, ...]


def label_pairs(db: Database, task: str, a: str, b: str) -> Pairs:
    """The items both sources labelled (cannot-judge left out), with both labels, in item order.

    NtR items are matched on (turn, nugget text, run) so that two nugget sources with the same
    texts (e.g. the same gold file imported twice) still align.
    """
    if task not in TASKS:
        raise AssessError(f"task is one of {', '.join(TASKS)}, not {task!r}")
    table, cols, value, scale = TASKS[task]
    known = {r[0] for r in db.conn.execute(f"SELECT DISTINCT source FROM {table}")}
    for name in (a, b):
        if name not in known:
            raise AssessError(
                f"source {name!r} has no {task} labels; sources with {task} labels: "
                f"{', '.join(sorted(known)) or 'none'}"
            )
    if task == "ntr":
        sql = (
            "SELECT la.turn_id, na.text, la.run, la.match, lb.match, t.conversation_id "
            "FROM ntr_labels la JOIN nuggets na ON na.id = la.nugget_id "
            "JOIN ntr_labels lb ON lb.source = ? AND lb.turn_id = la.turn_id AND lb.run = la.run "
            "JOIN nuggets nb ON nb.id = lb.nugget_id AND nb.text = na.text "
            "JOIN turns t ON t.id = la.turn_id WHERE la.source = ? ORDER BY la.turn_id, na.text, la.run"
        )
        rows = db.conn.execute(sql, (b, a)).fetchall()
        return Pairs([r[:3] for r in rows], [r[3] for r in rows], [r[4] for r in rows], [r[5] for r in rows], scale)
    on = " AND ".join(f"lb.{c} = la.{c}" for c in cols)
    sql = (
        f"SELECT {', '.join('la.' + c for c in cols)}, la.{value}, lb.{value}, t.conversation_id "
        f"FROM {table} la JOIN {table} lb ON {on} AND lb.source = ? JOIN turns t ON t.id = la.turn_id "
        f"WHERE la.source = ? AND la.{value} IS NOT NULL AND lb.{value} IS NOT NULL "
        f"ORDER BY {', '.join('la.' + c for c in cols)}"
    )
    rows = db.conn.execute(sql, (b, a)).fetchall()
    k = len(cols)
    if task == "ptkb":  # graded PTKB labels count as relevant when > 0
        rows = [(*r[:k], int(r[k] > 0), int(r[k + 1] > 0), r[k + 2]) for r in rows]
    return Pairs([r[:k] for r in rows], [r[k] for r in rows], [r[k + 1] for r in rows], [r[k + 2] for r in rows], scale)


def qrels_of(db: Database, source: str) -> dict[str, dict[str, int]]:
    """One source's passage labels as {turn: {passage: grade}} ('cannot judge' left out)."""
    out: dict[str, dict[str, int]] = {}
    for turn, passage, grade in db.conn.execute(
        "SELECT turn_id, passage_id, grade FROM passage_labels WHERE source = ? AND grade IS NOT NULL", (source,)
    ):
        out.setdefault(turn, {})[passage] = grade
    return out


def runs_of(db: Database) -> dict[str, dict[str, dict[str, float]]]:
    """Every stored ranking run as {run: {turn: {passage: score}}}."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for run, turn, passage, score in db.conn.execute("SELECT run, turn_id, passage_id, score FROM rankings"):
        out.setdefault(run, {}).setdefault(turn, {})[passage] = score
    return out
