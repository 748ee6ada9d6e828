"""Reading labels back out in exchange formats (TREC qrels, CONE-RAG JSON, tables)."""

from __future__ import annotations

from collections.abc import Iterator

from assess.errors import AssessError
from assess.formats import format_qrels
from assess.tasks import EXPORT_TABLES, LABEL_KINDS, UNSOURCED_TABLES, Task, kind_of_table
from store import labels
from store.db import Store, column, each, frame, row, stream
from store.schema.active_time import TIMED_COLUMNS


def require_source(db: Store, source: str) -> None:
    """Refuse a label source name the store does not have, listing the ones it has."""
    if row(db, "SELECT 1 AS known FROM sources WHERE name = :name", {"name": source}) is None:
        names = column(db, "SELECT name FROM sources ORDER BY name")
        raise AssessError(f"no label source named {source!r}; the store has: {', '.join(names) or 'none'}")


def _triples(db: Store, sql: str, params: dict) -> Iterator[tuple]:
    for r in each(db, sql, params):
        yield tuple(r.values())


def passage_qrels(db: Store, source: str) -> Iterator[tuple[str, str, int]]:
    """(turn, passage, grade) of ``source`` in turn order; 'cannot judge' labels are left out.

    Read turn by turn along the label table's primary key (source, turn, passage), each turn's rows streamed
    (:func:`store.db.stream`): no sort of the whole source, so a million labels leave in the memory of one
    turn's rows on either engine (the HTTP API streams them)."""
    require_source(db, source)
    turns = column(
        db,
        "SELECT t.id FROM turns t WHERE EXISTS (SELECT 1 FROM passage_labels l WHERE l.source = :source "
        "AND l.turn_id = t.id) ORDER BY t.conversation_id, t.position",
        {"source": source},
    )
    for turn_id in turns:
        for r in stream(
            db,
            "SELECT turn_id, passage_id, grade FROM passage_labels WHERE source = :source AND turn_id = :turn_id "
            "AND grade IS NOT NULL ORDER BY passage_id",
            {"source": source, "turn_id": turn_id},
        ):
            yield r["turn_id"], r["passage_id"], r["grade"]


def ptkb_qrels(db: Store, source: str) -> Iterator[tuple[str, str, int]]:
    """(turn, statement, relevance) of ``source`` in turn and statement order."""
    require_source(db, source)
    yield from _triples(
        db,
        "SELECT l.turn_id, l.statement_id, l.relevant FROM ptkb_labels l JOIN turns t ON t.id = l.turn_id "
        "WHERE l.source = :source ORDER BY t.conversation_id, t.position, "
        "int_prefix(l.statement_id), l.statement_id",
        {"source": source},
    )


def nuggets(db: Store, source: str, *, dedup: bool = False) -> Iterator[tuple[str, str, str, int | None]]:
    """(turn, key, text, relevance) of ``source``; ``dedup`` keeps only the de-duplicated set."""
    require_source(db, source)
    where = " AND n.in_dedup = 1" if dedup else ""
    yield from _triples(
        db,
        "SELECT n.turn_id, n.key, n.text, n.relevance FROM nuggets n JOIN turns t ON t.id = n.turn_id "
        f"WHERE n.source = :source{where} ORDER BY t.conversation_id, t.position, n.id",
        {"source": source},
    )


def table_frame(db: Store, table: str, source: str | None = None):
    """Any label table as a pandas DataFrame (optionally one source's rows).

    A label kind with a ``missing_column`` in the registry (``citation_labels``: ``cannot_judge``) gets that
    column (1 or 0) after its value column: a 'cannot judge' label is 1 there with no value, so it is never
    read as a missing or a 0 value; values stay integers (an empty cell only beside a 1)."""
    if table not in EXPORT_TABLES:
        raise AssessError(f"unknown table {table!r}; choose one of {', '.join(EXPORT_TABLES)}")
    sql, params = f"SELECT * FROM {table}", {}
    if source is not None and table not in UNSOURCED_TABLES:
        col = "name" if table == "sources" else "source"
        sql, params = sql + f" WHERE {col} = :source", {"source": source}
    out = frame(db, sql, params)
    # Active time and guideline versions (migration 19) are read by `audit speed` and the review page; the
    # table export keeps the columns it always wrote.
    out = out.drop(columns=[c for c in TIMED_COLUMNS if c in out.columns])
    kind = next((k for k in LABEL_KINDS.values() if k.table == table), None)
    if kind is not None and kind.missing_column is not None:
        value = kind.value_column
        out[value] = out[value].astype("Int64")
        out.insert(out.columns.get_loc(value) + 1, kind.missing_column, out[value].isna().astype("int64"))
    return out


def qrels_text(db: Store, source: str, task: str = "passage") -> str:
    """TREC qrels text of one source: passage qrels (task 'passage') or PTKB qrels (task 'ptkb')."""
    rows = passage_qrels(db, source) if task == Task.PASSAGE else ptkb_qrels(db, source)
    return "".join(format_qrels(rows))


def label_sources(db: Store, table: str = "passage_labels") -> list[str]:
    """Names of the sources that hold labels in the label table ``table``."""
    return labels.sources(db, kind_of_table(table).task)
