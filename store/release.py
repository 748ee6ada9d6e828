"""Reads of a release bundle (``export release``): every table streamed row by row, in key order.

Each reader yields plain dicts from one query (:func:`store.db.stream`: chunks on PostgreSQL too), so a bundle's memory stays bounded by
what its writer buffers, whatever the store's size."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from assess.tasks import LABEL_KINDS
from store.db import Store, rows, stream
from store.schema.active_time import TIMED_TABLES


def _in(sources: Sequence[str], column: str = "source") -> tuple[str, dict]:
    """`` AND column IN (:s0, ...)`` and its parameters (an empty list keeps every source)."""
    if not sources:
        return "", {}
    names = {f"s{i}": s for i, s in enumerate(sources)}
    return f" AND {column} IN ({', '.join(':' + n for n in names)})", names


def docs(db: Store) -> Iterator[dict]:
    """(id, text) of every passage in id order; text None where the store has none (not public)."""
    yield from stream(db, "SELECT id, text FROM passages ORDER BY id")


def queries(db: Store) -> Iterator[dict]:
    """(id, resolved, utterance) of every turn in conversation order."""
    yield from stream(
        db,
        "SELECT id, resolved_utterance AS resolved, utterance FROM turns ORDER BY conversation_id, position, id",
    )


def qrels(db: Store, source: str) -> Iterator[dict]:
    """(turn, passage, grade) of ``source`` as :func:`store.exports.passage_qrels` orders them, streamed."""
    yield from stream(
        db,
        "SELECT l.turn_id, l.passage_id, l.grade FROM passage_labels l JOIN turns t ON t.id = l.turn_id "
        "WHERE l.source = :source AND l.grade IS NOT NULL ORDER BY t.conversation_id, t.position, l.passage_id",
        {"source": source},
    )


def label_kinds() -> list[str]:
    """The label kinds a bundle's labels table holds: every kind but battles (a table of their own)."""
    return [task for task, kind in LABEL_KINDS.items() if kind.table != "battles"]


def labels(db: Store, task: str, sources: Sequence[str]) -> Iterator[dict]:
    """The labels of one kind with their history summary: ``task, source, turn_id, item`` (the item's other
    key columns joined by spaces), ``value, note, mode, via, updated_at, guideline_version`` and, from
    ``label_history``, ``changes`` (rows written for the item: the first label counts), ``first_at`` and
    ``first_value`` (the earliest row's new value)."""
    kind = LABEL_KINDS[task]
    others = [c for c in kind.item_columns if c != "turn_id"]
    item = " || ' ' || ".join(f"CAST(l.{c} AS TEXT)" for c in others) or "''"
    key = " || ' ' || ".join(f"CAST(l.{c} AS TEXT)" for c in kind.item_columns)
    version = "l.guideline_version" if kind.table in TIMED_TABLES else "CAST(NULL AS INTEGER)"
    where, params = _in(sources, "l.source")
    # The history is grouped per source and item once (its index starts with the source), then joined.
    hist_where, _ = _in(sources, "source")
    yield from stream(
        db,
        f"SELECT l.source, l.turn_id, {item} AS item, l.{kind.value_column} AS value, l.note, l.mode, l.via, "
        f"l.updated_at, {version} AS guideline_version, COALESCE(h.changes, 0) AS changes, h.first_at, "
        "(SELECT f.new_value FROM label_history f WHERE f.id = h.first_id) AS first_value "
        f"FROM {kind.table} l LEFT JOIN (SELECT source, item, COUNT(*) AS changes, MIN(at) AS first_at, "
        "MIN(id) AS first_id FROM label_history WHERE label_table = :task"
        f"{hist_where} GROUP BY source, item) h ON h.source = l.source AND h.item = {key} "
        f"WHERE 1 = 1{where} ORDER BY l.source, {', '.join('l.' + c for c in kind.item_columns)}",
        {"task": str(kind.task), **params},
    )


def nuggets(db: Store, sources: Sequence[str]) -> Iterator[dict]:
    """Every nugget of ``sources`` (all when empty) in source, turn and id order."""
    where, params = _in(sources, "n.source")
    yield from stream(
        db,
        "SELECT n.source, n.turn_id, n.key, n.text, n.relevance, n.passage_id, n.start_char, n.end_char, "
        "n.in_dedup, n.created_at FROM nuggets n JOIN turns t ON t.id = n.turn_id "
        f"WHERE 1 = 1{where} ORDER BY n.source, t.conversation_id, t.position, n.id",
        params,
    )


def battles(db: Store, sources: Sequence[str]) -> Iterator[dict]:
    """Every battle of ``sources`` (all when empty) with its history's row count, in key order."""
    where, params = _in(sources, "b.source")
    hist_where, _ = _in(sources, "source")
    key = "b.turn_id || ' ' || b.run_a || ' ' || b.run_b || ' ' || CAST(b.occurrence AS TEXT)"
    yield from stream(
        db,
        "SELECT b.source, b.turn_id, b.run_a, b.run_b, b.occurrence, b.outcome, b.reshow, b.note, b.mode, b.via, "
        "b.updated_at, COALESCE(h.changes, 0) AS changes FROM battles b LEFT JOIN (SELECT source, item, "
        f"COUNT(*) AS changes FROM label_history WHERE label_table = 'battle'{hist_where} GROUP BY source, item) h "
        f"ON h.source = b.source AND h.item = {key} WHERE 1 = 1{where} "
        "ORDER BY b.source, b.turn_id, b.run_a, b.run_b, b.occurrence",
        params,
    )


def responses(db: Store) -> Iterator[dict]:
    """Every stored response (run, turn, text, layout) in run and turn order."""
    yield from stream(
        db,
        "SELECT r.run, r.turn_id, r.text, r.layout FROM responses r JOIN turns t ON t.id = r.turn_id "
        "ORDER BY r.run, t.conversation_id, t.position",
    )


def roster(db: Store, sources: Sequence[str]) -> list[dict]:
    """Who judged: each source (all when empty) with its kind, model, prompt version, description and, when
    an account of that name exists, the account's role."""
    where, params = _in(sources, "s.name")
    return rows(
        db,
        "SELECT s.name, s.kind, s.model, s.prompt_version, s.description, a.role FROM sources s "
        f"LEFT JOIN accounts a ON a.name = s.name WHERE 1 = 1{where} ORDER BY s.name",
        params,
    )


def guideline_versions(db: Store) -> list[dict]:
    """Every stored guideline version (task, version, created_at), without its text."""
    return rows(db, "SELECT task, version, created_at FROM guidelines ORDER BY task, version")


def known_sources(db: Store) -> list[str]:
    """Every source name, in name order."""
    return [r["name"] for r in rows(db, "SELECT name FROM sources ORDER BY name")]
