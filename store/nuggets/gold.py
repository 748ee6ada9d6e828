"""Gold nuggets of a turn: the passages they come from, spans, edits, locating imported nuggets.

A span is re-checked against the stored passage text inside the write transaction, so it is never
stored unless ``text == passage[start:end]``. The ``in_dedup`` flags of a set follow its confirmed
duplicate decisions (:func:`refresh_dedup`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from assess.errors import AssessError, InvalidSpan, UnknownItem
from assess.nuggets import dedup, spans
from assess.tasks import NUGGET_RELEVANCE
from store import labels
from store.bulk import insert_rows
from store.conversations import passage_text, response_provenance
from store.db import IntegrityError, Store, column, each, now, returning, row, rows, run, run_many, value, write
from store.sources import ensure_source

NUGGET_COLUMNS = "id, source, turn_id, key, text, relevance, passage_id, start_char, end_char, in_dedup, span_method"

_TURN_ORDER = "JOIN conversations c ON c.id = t.conversation_id"


# ------------------------------------------------------------------------------------------- turns and passages


def has_grades(db: Store, source: str, turn_id: str) -> bool:
    """Whether ``source`` has given a grade (not 'cannot judge') to a passage of the turn."""
    return any(v is not None for v in labels.values(db, "passage", source, turn_id=turn_id).values())


def relevant_passages(db: Store, turn_id: str, *, source: str | None, threshold: int = 2) -> list[dict]:
    """Pooled passages of a turn with text: graded >= ``threshold`` by ``source``, or all when source is None.

    Each row: passage_id, grade (None when all pooled are listed), words. Passage id order.
    """
    if source is None:
        found = each(
            db,
            "SELECT p.passage_id AS passage_id, NULL AS grade, s.text AS text FROM pool p "
            "JOIN passages s ON s.id = p.passage_id WHERE p.turn_id = :turn_id AND s.text IS NOT NULL ORDER BY p.passage_id",
            {"turn_id": turn_id},
        )
    else:
        found = each(
            db,
            "SELECT l.passage_id AS passage_id, l.grade AS grade, s.text AS text FROM passage_labels l "
            "JOIN passages s ON s.id = l.passage_id WHERE l.source = :source AND l.turn_id = :turn_id "
            "AND l.grade >= :threshold AND s.text IS NOT NULL ORDER BY l.passage_id",
            {"source": source, "turn_id": turn_id, "threshold": threshold},
        )
    return [{"passage_id": r["passage_id"], "grade": r["grade"], "words": len(r["text"].split())} for r in found]


def passages_without_text(db: Store, turn_id: str) -> int:
    return value(
        db,
        "SELECT COUNT(*) AS n FROM pool p JOIN passages s ON s.id = p.passage_id WHERE p.turn_id = :turn_id AND s.text IS NULL",
        {"turn_id": turn_id},
    )


# ------------------------------------------------------------------------------------------- nuggets


def nugget(db: Store, nugget_id: int) -> dict:
    found = row(db, f"SELECT {NUGGET_COLUMNS} FROM nuggets WHERE id = :id", {"id": nugget_id})
    if found is None:
        raise UnknownItem(f"unknown nugget {nugget_id!r}")
    return found


def in_key_order(nuggets: list[dict]) -> list[dict]:
    """Nuggets in their set's order: key ('[2]' before '[10]'), then id."""
    return sorted(nuggets, key=lambda r: (spans.key_order(r["key"]), r["id"]))


def turn_nuggets(db: Store, source: str, turn_id: str) -> list[dict]:
    """The nuggets of one source for a turn, in key order (the set's order)."""
    found = rows(
        db,
        f"SELECT {NUGGET_COLUMNS} FROM nuggets WHERE source = :source AND turn_id = :turn_id",
        {"source": source, "turn_id": turn_id},
    )
    return in_key_order(found)


def passage_spans(db: Store, source: str, turn_id: str, passage_id: str) -> list[tuple[int, int]]:
    """(start, end) of the source's nuggets of a turn inside one passage (for highlighting)."""
    return [
        (r["start_char"], r["end_char"])
        for r in each(
            db,
            "SELECT start_char, end_char FROM nuggets WHERE source = :source AND turn_id = :turn_id "
            "AND passage_id = :passage_id AND start_char IS NOT NULL ORDER BY start_char",
            {"source": source, "turn_id": turn_id, "passage_id": passage_id},
        )
    ]


def marked_spans(db: Store, sources: Sequence[str] | None = None) -> tuple[list[dict], dict[str, str]]:
    """Every nugget span (source, turn_id, passage_id, start_char, end_char) of ``sources`` (all when None)
    in a passage whose text the store holds, and those texts (span agreement counts the passages' units)."""
    where, params = "", {}
    if sources:
        names = {f"s{i}": s for i, s in enumerate(sources)}
        where, params = f" AND source IN ({', '.join(':' + k for k in names)})", names
    found = rows(
        db,
        "SELECT n.source AS source, n.turn_id AS turn_id, n.passage_id AS passage_id, n.start_char AS start_char, "
        "n.end_char AS end_char FROM nuggets n JOIN passages p ON p.id = n.passage_id "
        # a passage known by id alone (licensed text) has no units to count: its spans are not compared
        "WHERE n.start_char IS NOT NULL AND p.text IS NOT NULL"
        + where.replace("source IN", "n.source IN")
        + " ORDER BY n.source, n.turn_id, n.passage_id, n.start_char, n.end_char",
        params,
    )
    return found, {p: passage_text(db, p) for p in sorted({r["passage_id"] for r in found})}


def nugget_turns(db: Store, source: str) -> list[str]:
    """Turns where ``source`` has nuggets, in conversation and turn order."""
    return column(
        db,
        f"SELECT t.id AS id FROM turns t {_TURN_ORDER} WHERE EXISTS "
        "(SELECT 1 FROM nuggets n WHERE n.turn_id = t.id AND n.source = :source) ORDER BY c.rowid, t.position",
        {"source": source},
    )


def nugget_counts(db: Store) -> dict[str, int]:
    """{source: how many gold nuggets it holds} of every nugget set."""
    return {r["source"]: r["n"] for r in each(db, "SELECT source, COUNT(*) AS n FROM nuggets GROUP BY source")}


def nugget_sources(db: Store, *, viewer: str | None = None) -> list[str]:
    """The sources with gold nuggets, by name: all of them for an organizer (``viewer`` None); for an
    assessor only their own set and the sets the organizers provide (imported, adjudicated or their own
    sources) -- other assessors' and LLM or crowd sets are organizer information."""
    if viewer is None:
        return column(db, "SELECT DISTINCT source FROM nuggets ORDER BY source")
    return column(
        db,
        "SELECT DISTINCT n.source AS source FROM nuggets n JOIN sources s ON s.name = n.source "
        "WHERE n.source = :viewer OR s.kind IN ('import', 'organizers', 'adjudication') ORDER BY n.source",
        {"viewer": viewer},
    )


def check_turn(db: Store, turn_id: str) -> None:
    if row(db, "SELECT 1 AS found FROM turns WHERE id = :id", {"id": turn_id}) is None:
        raise UnknownItem(f"unknown turn {turn_id!r}")


def _new_key(db: Store, source: str, turn_id: str) -> str:
    return spans.next_key(
        column(
            db,
            "SELECT key FROM nuggets WHERE source = :source AND turn_id = :turn_id",
            {"source": source, "turn_id": turn_id},
        )
    )


def _check_relevance(relevance: int | None) -> None:
    if relevance is not None and relevance not in NUGGET_RELEVANCE:
        raise AssessError(f"a nugget relevance is 0-4 or none, not {relevance!r}")


def ensure_author(db: Store, source: str) -> None:
    """Register who writes nuggets or gold responses: an assessor, unless the name says 'llm:...' and the like."""
    ensure_source(db, source, "assessor" if ":" not in source else None)


def _insert_nugget(db: Store, source: str, turn_id: str, fields: dict[str, Any]) -> int:
    """Insert one nugget of the source (a new key, kept in the de-duplicated set) and refresh the set's flags."""
    ensure_author(db, source)
    columns = {"source": source, "turn_id": turn_id, "key": _new_key(db, source, turn_id), **fields}
    columns.update(in_dedup=1, created_at=now())
    nid = returning(
        db,
        f"INSERT INTO nuggets ({', '.join(columns)}) VALUES ({', '.join(':' + c for c in columns)}) RETURNING id",
        columns,
    )["id"]
    refresh_dedup(db, source, turn_id, only_if_decided=True)
    return nid


def drop_from_dedup(db: Store, source: str, turn_ids: Sequence[str] | None = None) -> None:
    """Mark the nuggets of ``source`` in ``turn_ids`` (every turn when None) as left out of its de-duplicated
    set (``in_dedup = 0``): a bulk import of a de-duplicated subset, in the caller's write transaction."""
    if turn_ids is None:
        run(db, "UPDATE nuggets SET in_dedup = 0 WHERE source = :source", {"source": source})
        return
    for start in range(0, len(turn_ids), 500):
        chunk = turn_ids[start : start + 500]
        params = {"source": source, **{f"t{i}": t for i, t in enumerate(chunk)}}
        marks = ", ".join(f":t{i}" for i in range(len(chunk)))
        run(db, f"UPDATE nuggets SET in_dedup = 0 WHERE source = :source AND turn_id IN ({marks})", params)


def drop_staged_from_dedup(db: Store, source: str, table: str) -> None:
    """:func:`drop_from_dedup` for the turns listed in the staging table ``table`` (an import's switch)."""
    run(
        db,
        f"UPDATE nuggets SET in_dedup = 0 WHERE source = :source AND turn_id IN (SELECT turn_id FROM {table})",
        {"source": source},
    )


def stage_imported(db: Store, table: str, nuggets: Iterable) -> None:
    """Stage imported text nuggets (records with ``turn_id, key, text, relevance``) in ``table`` for
    :func:`switch_imported`; a key given again replaces the one staged, as a second upsert would."""
    insert_rows(
        db,
        f"INSERT INTO {table} (turn_id, key, text, relevance)",
        ("?", "?", "?", "?"),
        " ON CONFLICT (turn_id, key) DO UPDATE SET text=excluded.text, relevance=excluded.relevance",
        ((n.turn_id, n.key, n.text, n.relevance) for n in nuggets),
    )


def switch_imported(db: Store, source: str, table: str, *, dedup: bool, stamp: str) -> None:
    """In an import's switch: the nuggets staged in ``table`` written by key (a stored key gets the new text and
    relevance in place, its labels staying on it; ``dedup`` marks every one kept in the de-duplicated set, else a
    stored nugget keeps its flag), one INSERT … SELECT in key order ("WHERE true": SQLite reads an ON CONFLICT after a bare SELECT … FROM as a join's ON)."""
    run(
        db,
        "INSERT INTO nuggets (source, turn_id, key, text, relevance, in_dedup, created_at) "
        f"SELECT :source, turn_id, key, text, relevance, CAST(:in_dedup AS INTEGER), :created_at FROM {table} WHERE true "
        "ORDER BY turn_id, key ON CONFLICT(source, turn_id, key) DO UPDATE SET text=excluded.text, "
        "relevance=excluded.relevance, in_dedup=COALESCE(excluded.in_dedup, nuggets.in_dedup)",
        {"source": source, "in_dedup": 1 if dedup else None, "created_at": stamp},
    )


def add_span_nugget(
    db: Store,
    source: str,
    turn_id: str,
    passage_id: str,
    start: int,
    end: int,
    text: str,
    *,
    relevance: int | None = None,
    method: str = "selected",
) -> int:
    """Store a nugget at code-point span ``start..end`` of a passage; ``text`` must equal the passage there."""
    _check_relevance(relevance)
    with write(db):
        check_turn(db, turn_id)
        body = passage_text(db, passage_id)
        if body is None:
            raise InvalidSpan(f"passage {passage_id} has no text: a span cannot be stored")
        span = spans.validate_span(body, start, end, text)
        return _insert_nugget(
            db,
            source,
            turn_id,
            {
                "text": span.text,
                "relevance": relevance,
                "passage_id": passage_id,
                "start_char": span.start,
                "end_char": span.end,
                "span_method": method,
            },
        )


def add_llm_spans(
    db: Store, source: str, turn_id: str, passage_id: str, found: Iterable[dict], *, relevance: int | None
) -> None:
    """Store an LLM's nugget spans of a passage (``found``: {start, end, text}), each keyed
    ``<passage>@<start>-<end>``; a span the source has already is kept as it is."""
    stamp = now()
    run_many(
        db,
        "INSERT INTO nuggets (source, turn_id, key, text, relevance, passage_id, start_char, end_char, created_at) "
        "VALUES (:source, :turn_id, :key, :text, :relevance, :passage_id, :start_char, :end_char, :created_at) "
        "ON CONFLICT(source, turn_id, key) DO NOTHING",
        [
            {
                "source": source,
                "turn_id": turn_id,
                "key": f"{passage_id}@{s['start']}-{s['end']}",
                "text": s["text"],
                "relevance": relevance,
                "passage_id": passage_id,
                "start_char": s["start"],
                "end_char": s["end"],
                "created_at": stamp,
            }
            for s in found
        ],
    )


def add_text_nugget(
    db: Store, source: str, turn_id: str, text: str, *, passage_id: str | None = None, relevance: int | None = None
) -> int:
    """Store a typed nugget; when ``passage_id`` is given and the text is found there, with its span."""
    text = (text or "").strip()
    if not text:
        raise AssessError("a nugget needs some text")
    if passage_id is not None:
        found = spans.locate(passage_text(db, passage_id) or "", text)
        if found:
            span = found[0]
            return add_span_nugget(
                db, source, turn_id, passage_id, span.start, span.end, span.text, relevance=relevance, method="typed"
            )
    _check_relevance(relevance)
    with write(db):
        check_turn(db, turn_id)
        return _insert_nugget(db, source, turn_id, {"text": text, "relevance": relevance, "passage_id": passage_id})


def _own(db: Store, nugget_id: int, source: str) -> dict:
    found = nugget(db, nugget_id)
    if found["source"] != source:
        raise AssessError(f"nugget {nugget_id} belongs to {found['source']!r}, not to {source!r}")
    return found


def update_nugget(
    db: Store, source: str, nugget_id: int, *, text: str | None = None, relevance: int | None | str = "keep"
) -> dict:
    """Edit a nugget's text and/or relevance. A new text is looked up in the nugget's passage: found, the
    span follows it; not found, the nugget becomes free text (its passage kept, offsets cleared)."""
    old = _own(db, nugget_id, source)
    changes: dict[str, Any] = {}
    if relevance != "keep":
        _check_relevance(relevance)  # type: ignore[arg-type]
        changes["relevance"] = relevance
    if text is not None and text.strip() != old["text"]:
        text = text.strip()
        if not text:
            raise AssessError("a nugget needs some text (delete it instead)")
        changes.update(text=text, start_char=None, end_char=None, span_method=None)
        body = passage_text(db, old["passage_id"]) if old["passage_id"] else None
        found = spans.locate(body or "", text)
        if found:
            changes.update(text=found[0].text, start_char=found[0].start, end_char=found[0].end, span_method="typed")
    if changes:
        with write(db):
            sets = ", ".join(f"{k} = :{k}" for k in changes)
            run(db, f"UPDATE nuggets SET {sets} WHERE id = :id", {**changes, "id": nugget_id})
    return nugget(db, nugget_id)


def set_nugget_span(
    db: Store, source: str, nugget_id: int, start: int, end: int, text: str, *, passage_id: str | None = None
) -> dict:
    """Move a nugget to a new span of its passage (re-selected in the browser). ``passage_id``, when
    given, is the passage the selection was made in: it must be the nugget's own."""
    old = _own(db, nugget_id, source)
    if not old["passage_id"]:
        raise InvalidSpan(f"nugget {old['key']} has no passage")
    if passage_id is not None and passage_id != old["passage_id"]:
        raise InvalidSpan(
            f"nugget {old['key']} belongs to passage {old['passage_id']}: select its new span there, "
            f"not in {passage_id}"
        )
    with write(db):
        span = spans.validate_span(passage_text(db, old["passage_id"]) or "", start, end, text)
        run(
            db,
            "UPDATE nuggets SET text = :text, start_char = :start, end_char = :end, span_method = 'selected' "
            "WHERE id = :id",
            {"text": span.text, "start": span.start, "end": span.end, "id": nugget_id},
        )
    return nugget(db, nugget_id)


def movable_nugget(db: Store, source: str, nugget_id, turn_id: str) -> dict | None:
    """The nugget being moved to a new span, if ``nugget_id`` is one of the source's nuggets of this
    turn with a passage; else None (e.g. the turn changed since "Move span" was pressed)."""
    if nugget_id is None:
        return None
    found = row(db, f"SELECT {NUGGET_COLUMNS} FROM nuggets WHERE id = :id", {"id": nugget_id})
    if found is None or found["source"] != source or found["turn_id"] != turn_id or not found["passage_id"]:
        return None
    return found


def delete_nugget(db: Store, source: str, nugget_id: int) -> None:
    """Delete one of the source's own nuggets (refused when labels refer to it)."""
    old = _own(db, nugget_id, source)
    try:
        with write(db):
            run(db, "DELETE FROM nuggets WHERE id = :id", {"id": nugget_id})
            refresh_dedup(db, source, old["turn_id"], only_if_decided=True)
    except IntegrityError:
        raise AssessError(
            f"nugget {old['key']} has NtR or crowd labels that refer to it; it cannot be deleted"
        ) from None


def refresh_dedup(db: Store, source: str, turn_id: str, *, only_if_decided: bool = False) -> None:
    """Recompute ``in_dedup`` of a source's nuggets of a turn from the confirmed duplicate decisions."""
    decided = [
        (r["nugget_a"], r["nugget_b"], r["decision"])
        for r in each(
            db,
            "SELECT nugget_a, nugget_b, decision FROM nugget_duplicates WHERE source = :source "
            "AND turn_id = :turn_id AND decision IS NOT NULL",
            {"source": source, "turn_id": turn_id},
        )
    ]
    if only_if_decided and not decided:
        return
    order = [r["id"] for r in turn_nuggets(db, source, turn_id)]
    keep = dedup.dedup_keep(order, dedup.entailment_edges(decided))
    run_many(db, "UPDATE nuggets SET in_dedup = :keep WHERE id = :id", [{"keep": int(keep[i]), "id": i} for i in order])


# ------------------------------------------------------------------------------------------- locating imported nuggets


def _candidate_passages(db: Store, turn_id: str) -> list[tuple[str, str | None]]:
    """A turn's passages to search: its response provenance first, then the pool by best rank, then id."""
    out = []
    for pid in response_provenance(db, turn_id):
        found = row(db, "SELECT text FROM passages WHERE id = :id", {"id": pid})
        if found is not None:
            out.append((pid, found["text"]))
    seen = {p for p, _ in out}
    out += [
        (r["passage_id"], r["text"])
        for r in each(
            db,
            "SELECT p.passage_id AS passage_id, s.text AS text FROM pool p JOIN passages s ON s.id = p.passage_id "
            "WHERE p.turn_id = :turn_id ORDER BY COALESCE(p.best_rank, 1000000), p.passage_id",
            {"turn_id": turn_id},
        )
        if r["passage_id"] not in seen
    ]
    return out


def locate_nuggets(db: Store, source: str, *, relocate: bool = False) -> dict:
    """Locate a source's text-only nuggets in their turn's passages (exact, then whitespace/case-normalised).

    Found: passage id, code-point offsets and the method are recorded (the stored text stays the
    nugget's own). Not found, or no passage text: the nugget stays free text. Returns counts.
    """
    if row(db, "SELECT 1 AS found FROM sources WHERE name = :name", {"name": source}) is None:
        raise UnknownItem(f"no nugget source named {source!r}")
    counts = {"nuggets": 0, "exact": 0, "normalised": 0, "already_located": 0, "not_found": 0, "no_passage_text": 0}
    updates = []
    with write(db):
        cache: dict[str, list] = {}
        for n in rows(
            db,
            "SELECT id, turn_id, text, start_char FROM nuggets WHERE source = :source ORDER BY id",
            {"source": source},
        ):
            counts["nuggets"] += 1
            if n["start_char"] is not None and not relocate:
                counts["already_located"] += 1
                continue
            if n["turn_id"] not in cache:
                cache[n["turn_id"]] = _candidate_passages(db, n["turn_id"])
            candidates = cache[n["turn_id"]]
            if not any(t for _, t in candidates):
                counts["no_passage_text"] += 1
                continue
            found = spans.locate_in_passages(n["text"], candidates)
            if found is None:
                counts["not_found"] += 1
                continue
            counts[found.method] += 1
            updates.append(
                {
                    "passage_id": found.passage_id,
                    "start": found.span.start,
                    "end": found.span.end,
                    "method": found.method,
                    "id": n["id"],
                }
            )
        run_many(
            db,
            "UPDATE nuggets SET passage_id = :passage_id, start_char = :start, end_char = :end, "
            "span_method = :method WHERE id = :id",
            updates,
        )
    counts["located"] = counts["exact"] + counts["normalised"]
    counts["free_text"] = counts["not_found"] + counts["no_passage_text"]
    return counts
