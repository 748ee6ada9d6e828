"""Aligning two label sources item by item (for agreement and the audit)."""

from __future__ import annotations

from itertools import groupby
from operator import itemgetter
from typing import NamedTuple

from assess.errors import AssessError
from assess.tasks import PTKB_KEYS, Task, label_kind
from store import labels
from store.db import Store, each, each_tuple, row, rows

COMPARABLE = (Task.PASSAGE, Task.PTKB, Task.NTR)
"""The tasks two sources can be aligned on (response criteria are not compared)."""


class Pairs(NamedTuple):
    items: list[tuple]  # item keys, turn id first
    a: list[int]
    b: list[int]
    topics: list[str]  # conversation of each item
    scale: tuple[int, ...]


def label_pairs(db: Store, task: str, a: str, b: str) -> Pairs:
    """The items both sources labelled (cannot-judge left out), with both labels, in item order.

    NtR items are matched on (turn, nugget text, run) so that two nugget sources with the same
    texts (e.g. the same gold file imported twice) still align. PTKB labels are compared as
    relevant (> 0) or not, since imported PTKB qrels may be graded.
    """
    if task not in COMPARABLE:
        raise AssessError(f"task is one of {', '.join(COMPARABLE)}, not {task!r}")
    kind = label_kind(task)
    known = labels.sources(db, kind.task)
    for name in (a, b):
        if name not in known:
            raise AssessError(
                f"source {name!r} has no {task} labels; sources with {task} labels: "
                f"{', '.join(sorted(known)) or 'none'}"
            )
    if kind.task is Task.NTR:
        found = rows(
            db,
            "SELECT la.turn_id AS turn_id, na.text AS nugget, la.run AS run, la.match AS a, lb.match AS b, "
            "t.conversation_id AS topic FROM ntr_labels la JOIN nuggets na ON na.id = la.nugget_id "
            "JOIN ntr_labels lb ON lb.source = :b AND lb.turn_id = la.turn_id AND lb.run = la.run "
            "JOIN nuggets nb ON nb.id = lb.nugget_id AND nb.text = na.text "
            "JOIN turns t ON t.id = la.turn_id WHERE la.source = :a ORDER BY la.turn_id, na.text, la.run",
            {"a": a, "b": b},
        )
        items = [(r["turn_id"], r["nugget"], r["run"]) for r in found]
        return Pairs(
            items, [r["a"] for r in found], [r["b"] for r in found], [r["topic"] for r in found], kind.scale.values
        )
    cols, value = kind.item_columns, kind.value_column
    on = " AND ".join(f"lb.{c} = la.{c}" for c in cols)
    found = rows(
        db,
        f"SELECT {', '.join(f'la.{c} AS {c}' for c in cols)}, la.{value} AS a, lb.{value} AS b, "
        f"t.conversation_id AS topic FROM {kind.table} la JOIN {kind.table} lb ON {on} AND lb.source = :b "
        f"JOIN turns t ON t.id = la.turn_id WHERE la.source = :a AND la.{value} IS NOT NULL "
        f"AND lb.{value} IS NOT NULL ORDER BY {', '.join('la.' + c for c in cols)}",
        {"a": a, "b": b},
    )
    a_values, b_values = [r["a"] for r in found], [r["b"] for r in found]
    scale = kind.values_in_use([*a_values, *b_values])
    if kind.task is Task.PTKB:
        scale, a_values, b_values = PTKB_KEYS.values, [int(v > 0) for v in a_values], [int(v > 0) for v in b_values]
    items = [tuple(r[c] for c in cols) for r in found]
    return Pairs(items, a_values, b_values, [r["topic"] for r in found], scale)


def qrels_of(db: Store, source: str) -> dict[str, dict[str, int]]:
    """One source's passage labels as {turn: {passage: grade}} ('cannot judge' left out)."""
    out: dict[str, dict[str, int]] = {}
    for r in each(
        db,
        "SELECT turn_id, passage_id, grade FROM passage_labels WHERE source = :source AND grade IS NOT NULL",
        {"source": source},
    ):
        out.setdefault(r["turn_id"], {})[r["passage_id"]] = r["grade"]
    return out


def rankings_version(db: Store) -> tuple:
    """Changes whenever a ranking run is imported again, added or removed (an import rewrites the run's rankings
    and its ``imported_at``)."""
    found = row(db, "SELECT COUNT(*) AS runs, MAX(imported_at) AS latest FROM runs WHERE kind = 'ranking'")
    return (found["runs"], found["latest"])


def runs_of(db: Store) -> dict[str, dict[str, dict[str, float]]]:
    """Every stored ranking run as {run: {turn: {passage: score}}}."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    # in key order, a (run, turn) at a time: 1,042,500 rows at ten times iKAT 2024 (5.6 s as a dict each, 1 s now)
    found = each_tuple(db, "SELECT run, turn_id, passage_id, score FROM rankings ORDER BY run, turn_id")
    for (run_name, turn), group in groupby(found, key=itemgetter(0, 1)):
        out.setdefault(run_name, {})[turn] = {passage: score for _, _, passage, score in group}
    return out
