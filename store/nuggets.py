"""All SQL of the nugget workbench: passage nuggets with spans, duplicates, gold responses, NtR labels
of assessors, GFRC2 response nuggets and studies, AEPD aspects.

Every write is one transaction (:func:`store.db.write`); spans are re-checked against the stored
passage text inside that transaction, so a span is never stored unless ``text ==
passage[start:end]``. The pure rules (offsets, locating, the de-duplication rule, the GFRC2 and AEPD
documents) live in :mod:`assess.nuggets`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from sqlite_utils import Database

from assess import nuggets as pure
from assess.errors import AssessError, InvalidSpan, UnknownItem
from assess.queueing import QueueOrder, QueueState
from store.db import write
from store.imports import ensure_source, now

ALL_POOLED = None  # relevance "source" meaning: every pooled passage with text


# ------------------------------------------------------------------------------------------- turns and passages


def pooled_turns(db: Database) -> list[str]:
    """Turns that have pooled passages, in conversation and turn order."""
    return [
        r[0]
        for r in db.conn.execute(
            "SELECT t.id FROM turns t JOIN conversations c ON c.id = t.conversation_id "
            "WHERE EXISTS (SELECT 1 FROM pool p WHERE p.turn_id = t.id) ORDER BY c.rowid, t.position"
        )
    ]


def all_turns(db: Database) -> list[str]:
    return [
        r[0]
        for r in db.conn.execute(
            "SELECT t.id FROM turns t JOIN conversations c ON c.id = t.conversation_id ORDER BY c.rowid, t.position"
        )
    ]


def label_sources(db: Database, turn_id: str | None = None) -> list[str]:
    """Sources with passage labels (of one turn when given)."""
    if turn_id is None:
        return [r[0] for r in db.conn.execute("SELECT DISTINCT source FROM passage_labels ORDER BY source")]
    return [
        r[0]
        for r in db.conn.execute(
            "SELECT DISTINCT source FROM passage_labels WHERE turn_id = ? ORDER BY source", (turn_id,)
        )
    ]


def has_labels(db: Database, source: str, turn_id: str) -> bool:
    return (
        db.conn.execute(
            "SELECT 1 FROM passage_labels WHERE source = ? AND turn_id = ? AND grade IS NOT NULL LIMIT 1",
            (source, turn_id),
        ).fetchone()
        is not None
    )


def relevant_passages(db: Database, turn_id: str, *, source: str | None, threshold: int = 2) -> list[dict]:
    """Pooled passages of a turn with text: graded >= ``threshold`` by ``source``, or all when source is None.

    Each row: passage_id, grade (None when all pooled are listed), words. Passage id order.
    """
    if source is None:
        rows = db.conn.execute(
            "SELECT p.passage_id, NULL, s.text FROM pool p JOIN passages s ON s.id = p.passage_id "
            "WHERE p.turn_id = ? AND s.text IS NOT NULL ORDER BY p.passage_id",
            (turn_id,),
        )
    else:
        rows = db.conn.execute(
            "SELECT l.passage_id, l.grade, s.text FROM passage_labels l JOIN passages s ON s.id = l.passage_id "
            "WHERE l.source = ? AND l.turn_id = ? AND l.grade >= ? AND s.text IS NOT NULL ORDER BY l.passage_id",
            (source, turn_id, threshold),
        )
    return [{"passage_id": p, "grade": g, "words": len(t.split())} for p, g, t in rows]


def passages_without_text(db: Database, turn_id: str) -> int:
    return db.conn.execute(
        "SELECT COUNT(*) FROM pool p JOIN passages s ON s.id = p.passage_id WHERE p.turn_id = ? AND s.text IS NULL",
        (turn_id,),
    ).fetchone()[0]


def passage_text(db: Database, passage_id: str) -> str | None:
    row = db.conn.execute("SELECT text FROM passages WHERE id = ?", (passage_id,)).fetchone()
    if row is None:
        raise UnknownItem(f"unknown passage {passage_id!r}")
    return row[0]


# ------------------------------------------------------------------------------------------- nuggets

_NUGGET_COLS = (
    "id",
    "source",
    "turn_id",
    "key",
    "text",
    "relevance",
    "passage_id",
    "start_char",
    "end_char",
    "in_dedup",
    "span_method",
)


def _natural_key(key: str) -> tuple:
    digits = key.strip("[]")
    return (0, int(digits), key) if digits.isdigit() else (1, 0, key)


def nugget(db: Database, nugget_id: int) -> dict:
    row = db.conn.execute(f"SELECT {', '.join(_NUGGET_COLS)} FROM nuggets WHERE id = ?", (nugget_id,)).fetchone()
    if row is None:
        raise UnknownItem(f"unknown nugget {nugget_id!r}")
    return dict(zip(_NUGGET_COLS, row))


def turn_nuggets(db: Database, source: str, turn_id: str) -> list[dict]:
    """The nuggets of one source for a turn, in key order (the set's order)."""
    rows = [
        dict(zip(_NUGGET_COLS, r))
        for r in db.conn.execute(
            f"SELECT {', '.join(_NUGGET_COLS)} FROM nuggets WHERE source = ? AND turn_id = ?", (source, turn_id)
        )
    ]
    return sorted(rows, key=lambda r: (_natural_key(r["key"]), r["id"]))


def passage_spans(db: Database, source: str, turn_id: str, passage_id: str) -> list[tuple[int, int]]:
    """(start, end) of the source's nuggets of a turn inside one passage (for highlighting)."""
    return [
        tuple(r)
        for r in db.conn.execute(
            "SELECT start_char, end_char FROM nuggets WHERE source = ? AND turn_id = ? AND passage_id = ? "
            "AND start_char IS NOT NULL ORDER BY start_char",
            (source, turn_id, passage_id),
        )
    ]


def nugget_turns(db: Database, source: str) -> list[str]:
    """Turns where ``source`` has nuggets, in conversation and turn order."""
    return [
        r[0]
        for r in db.conn.execute(
            "SELECT t.id FROM turns t JOIN conversations c ON c.id = t.conversation_id WHERE EXISTS "
            "(SELECT 1 FROM nuggets n WHERE n.turn_id = t.id AND n.source = ?) ORDER BY c.rowid, t.position",
            (source,),
        )
    ]


def nugget_sources(db: Database) -> list[str]:
    return [r[0] for r in db.conn.execute("SELECT DISTINCT source FROM nuggets ORDER BY source")]


def _check_turn(c: sqlite3.Connection, turn_id: str) -> None:
    if not c.execute("SELECT 1 FROM turns WHERE id = ?", (turn_id,)).fetchone():
        raise UnknownItem(f"unknown turn {turn_id!r}")


def _new_key(c: sqlite3.Connection, source: str, turn_id: str) -> str:
    return pure.next_key(
        r[0] for r in c.execute("SELECT key FROM nuggets WHERE source = ? AND turn_id = ?", (source, turn_id))
    )


def _check_relevance(relevance: int | None) -> None:
    if relevance is not None and (isinstance(relevance, bool) or relevance not in range(5)):
        raise AssessError(f"a nugget relevance is 0-4 or none, not {relevance!r}")


def add_span_nugget(
    db: Database,
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
        c = db.conn
        _check_turn(c, turn_id)
        body = passage_text(db, passage_id)
        if body is None:
            raise InvalidSpan(f"passage {passage_id} has no text: a span cannot be stored")
        span = pure.validate_span(body, start, end, text)
        ensure_source(db, source, "assessor" if ":" not in source else None)
        cur = c.execute(
            "INSERT INTO nuggets (source, turn_id, key, text, relevance, passage_id, start_char, end_char, in_dedup, "
            "span_method, created_at) VALUES (?,?,?,?,?,?,?,?,1,?,?)",
            (
                source,
                turn_id,
                _new_key(c, source, turn_id),
                span.text,
                relevance,
                passage_id,
                span.start,
                span.end,
                method,
                now(),
            ),
        )
        nid = cur.lastrowid
        _refresh_dedup(c, source, turn_id, only_if_decided=True)
        return nid


def add_text_nugget(
    db: Database, source: str, turn_id: str, text: str, *, passage_id: str | None = None, relevance: int | None = None
) -> int:
    """Store a typed nugget; when ``passage_id`` is given and the text is found there, with its span."""
    text = (text or "").strip()
    if not text:
        raise AssessError("a nugget needs some text")
    if passage_id is not None:
        body = passage_text(db, passage_id)
        found = pure.locate(body or "", text)
        if found:
            return add_span_nugget(
                db,
                source,
                turn_id,
                passage_id,
                found[0].start,
                found[0].end,
                found[0].text,
                relevance=relevance,
                method="typed",
            )
    _check_relevance(relevance)
    with write(db):
        c = db.conn
        _check_turn(c, turn_id)
        ensure_source(db, source, "assessor" if ":" not in source else None)
        cur = c.execute(
            "INSERT INTO nuggets (source, turn_id, key, text, relevance, passage_id, in_dedup, created_at) "
            "VALUES (?,?,?,?,?,?,1,?)",
            (source, turn_id, _new_key(c, source, turn_id), text, relevance, passage_id, now()),
        )
        _refresh_dedup(c, source, turn_id, only_if_decided=True)
        return cur.lastrowid


def _own(db: Database, nugget_id: int, source: str) -> dict:
    row = nugget(db, nugget_id)
    if row["source"] != source:
        raise AssessError(f"nugget {nugget_id} belongs to {row['source']!r}, not to {source!r}")
    return row


def update_nugget(
    db: Database, source: str, nugget_id: int, *, text: str | None = None, relevance: int | None | str = "keep"
) -> dict:
    """Edit a nugget's text and/or relevance. A new text is looked up in the nugget's passage: found, the
    span follows it; not found, the nugget becomes free text (its passage kept, offsets cleared)."""
    row = _own(db, nugget_id, source)
    changes: dict[str, Any] = {}
    if relevance != "keep":
        _check_relevance(relevance)  # type: ignore[arg-type]
        changes["relevance"] = relevance
    if text is not None and text.strip() != row["text"]:
        text = text.strip()
        if not text:
            raise AssessError("a nugget needs some text (delete it instead)")
        changes.update(text=text, start_char=None, end_char=None, span_method=None)
        body = passage_text(db, row["passage_id"]) if row["passage_id"] else None
        found = pure.locate(body or "", text)
        if found:
            changes.update(text=found[0].text, start_char=found[0].start, end_char=found[0].end, span_method="typed")
    if changes:
        with write(db):
            sets = ", ".join(f"{k} = ?" for k in changes)
            db.conn.execute(f"UPDATE nuggets SET {sets} WHERE id = ?", (*changes.values(), nugget_id))
    return nugget(db, nugget_id)


def set_nugget_span(
    db: Database, source: str, nugget_id: int, start: int, end: int, text: str, *, passage_id: str | None = None
) -> dict:
    """Move a nugget to a new span of its passage (re-selected in the browser). ``passage_id``, when
    given, is the passage the selection was made in: it must be the nugget's own."""
    row = _own(db, nugget_id, source)
    if not row["passage_id"]:
        raise InvalidSpan(f"nugget {row['key']} has no passage")
    if passage_id is not None and passage_id != row["passage_id"]:
        raise InvalidSpan(
            f"nugget {row['key']} belongs to passage {row['passage_id']}: select its new span there, "
            f"not in {passage_id}"
        )
    with write(db):
        body = passage_text(db, row["passage_id"])
        span = pure.validate_span(body or "", start, end, text)
        db.conn.execute(
            "UPDATE nuggets SET text = ?, start_char = ?, end_char = ?, span_method = 'selected' WHERE id = ?",
            (span.text, span.start, span.end, nugget_id),
        )
    return nugget(db, nugget_id)


def movable_nugget(db: Database, source: str, nugget_id, turn_id: str) -> dict | None:
    """The nugget being moved to a new span, if ``nugget_id`` is one of the source's nuggets of this
    turn with a passage; else None (e.g. the turn changed since "Move span" was pressed)."""
    if nugget_id is None:
        return None
    row = db.conn.execute(f"SELECT {', '.join(_NUGGET_COLS)} FROM nuggets WHERE id = ?", (nugget_id,)).fetchone()
    row = dict(zip(_NUGGET_COLS, row)) if row else None
    if row is None or row["source"] != source or row["turn_id"] != turn_id or not row["passage_id"]:
        return None
    return row


def delete_nugget(db: Database, source: str, nugget_id: int) -> None:
    """Delete one of the source's own nuggets (refused when labels refer to it)."""
    row = _own(db, nugget_id, source)
    try:
        with write(db):
            db.conn.execute("DELETE FROM nuggets WHERE id = ?", (nugget_id,))
            _refresh_dedup(db.conn, source, row["turn_id"], only_if_decided=True)
    except sqlite3.IntegrityError:
        raise AssessError(
            f"nugget {row['key']} has NtR or crowd labels that refer to it; it cannot be deleted"
        ) from None


# ------------------------------------------------------------------------------------------- locating imported nuggets


def _candidate_passages(c: sqlite3.Connection, turn_id: str) -> list[tuple[str, str | None]]:
    """A turn's passages to search: its response provenance first, then the pool by best rank, then id."""
    row = c.execute("SELECT response_provenance FROM turns WHERE id = ?", (turn_id,)).fetchone()
    provenance = json.loads(row[0]) if row and row[0] else []
    out = []
    for pid in provenance:
        text = c.execute("SELECT text FROM passages WHERE id = ?", (pid,)).fetchone()
        if text is not None:
            out.append((pid, text[0]))
    seen = {p for p, _ in out}
    out += [
        (p, t)
        for p, t in c.execute(
            "SELECT p.passage_id, s.text FROM pool p JOIN passages s ON s.id = p.passage_id WHERE p.turn_id = ? "
            "ORDER BY COALESCE(p.best_rank, 1000000), p.passage_id",
            (turn_id,),
        )
        if p not in seen
    ]
    return out


def locate_nuggets(db: Database, source: str, *, relocate: bool = False) -> dict:
    """Locate a source's text-only nuggets in their turn's passages (exact, then whitespace/case-normalised).

    Found: passage id, code-point offsets and the method are recorded (the stored text stays the
    nugget's own). Not found, or no passage text: the nugget stays free text. Returns counts.
    """
    if not db.conn.execute("SELECT 1 FROM sources WHERE name = ?", (source,)).fetchone():
        raise UnknownItem(f"no nugget source named {source!r}")
    counts = {"nuggets": 0, "exact": 0, "normalised": 0, "already_located": 0, "not_found": 0, "no_passage_text": 0}
    updates = []
    with write(db):
        c = db.conn
        cache: dict[str, list] = {}
        for nid, turn_id, text, start in c.execute(
            "SELECT id, turn_id, text, start_char FROM nuggets WHERE source = ? ORDER BY id", (source,)
        ).fetchall():
            counts["nuggets"] += 1
            if start is not None and not relocate:
                counts["already_located"] += 1
                continue
            if turn_id not in cache:
                cache[turn_id] = _candidate_passages(c, turn_id)
            candidates = cache[turn_id]
            if not any(t for _, t in candidates):
                counts["no_passage_text"] += 1
                continue
            found = pure.locate_in_passages(text, candidates)
            if found is None:
                counts["not_found"] += 1
                continue
            counts[found.method] += 1
            updates.append((found.passage_id, found.span.start, found.span.end, found.method, nid))
        c.executemany(
            "UPDATE nuggets SET passage_id = ?, start_char = ?, end_char = ?, span_method = ? WHERE id = ?", updates
        )
    counts["located"] = counts["exact"] + counts["normalised"]
    counts["free_text"] = counts["not_found"] + counts["no_passage_text"]
    return counts


# ------------------------------------------------------------------------------------------- duplicates


def _refresh_dedup(c: sqlite3.Connection, source: str, turn_id: str, *, only_if_decided: bool = False) -> None:
    """Recompute ``in_dedup`` of a source's nuggets of a turn from the confirmed duplicate decisions."""
    decided = c.execute(
        "SELECT nugget_a, nugget_b, decision FROM nugget_duplicates WHERE source = ? AND turn_id = ? "
        "AND decision IS NOT NULL",
        (source, turn_id),
    ).fetchall()
    if only_if_decided and not decided:
        return
    ids = [
        (r[0], r[1])
        for r in c.execute("SELECT id, key FROM nuggets WHERE source = ? AND turn_id = ?", (source, turn_id))
    ]
    order = [i for i, k in sorted(ids, key=lambda r: (_natural_key(r[1]), r[0]))]
    keep = pure.dedup_keep(order, pure.entailment_edges(decided))
    c.executemany("UPDATE nuggets SET in_dedup = ? WHERE id = ?", [(int(keep[i]), i) for i in order])


def suggest_duplicates(
    db: Database, source: str, turn_id: str, judge: pure.Entailment | None = None, *, threshold: float = 0.5
) -> int:
    """Score every pair of the turn's nuggets both ways and store the pairs at or above ``threshold``.

    Decisions already made are kept; scores are refreshed. Returns the number of suggested pairs.
    """
    judge = pure.as_entailment(judge)
    rows = turn_nuggets(db, source, turn_id)
    found = pure.suggest_duplicates([(r["id"], r["text"]) for r in rows], judge, threshold=threshold)
    name = pure.judge_name(judge)
    stamp = now()
    with write(db):
        for s in found:
            a, b, ab, ba = (s.a, s.b, s.score_ab, s.score_ba) if s.a < s.b else (s.b, s.a, s.score_ba, s.score_ab)
            db.conn.execute(
                "INSERT INTO nugget_duplicates (nugget_a, nugget_b, turn_id, source, score_ab, score_ba, suggested_by, "
                "updated_at) VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(nugget_a, nugget_b) DO UPDATE SET "
                "score_ab = excluded.score_ab, score_ba = excluded.score_ba, suggested_by = excluded.suggested_by",
                (a, b, turn_id, source, ab, ba, name, stamp),
            )
    return len(found)


def duplicate_pairs(db: Database, source: str, turn_id: str) -> list[dict]:
    """The turn's stored pairs with both texts, open ones first, most mutual first."""
    rows = db.conn.execute(
        "SELECT d.nugget_a, na.key, na.text, d.nugget_b, nb.key, nb.text, d.score_ab, d.score_ba, d.suggested_by, "
        "d.decision, d.decided_by FROM nugget_duplicates d JOIN nuggets na ON na.id = d.nugget_a "
        "JOIN nuggets nb ON nb.id = d.nugget_b WHERE d.source = ? AND d.turn_id = ?",
        (source, turn_id),
    ).fetchall()
    keys = (
        "a",
        "key_a",
        "text_a",
        "b",
        "key_b",
        "text_b",
        "score_ab",
        "score_ba",
        "suggested_by",
        "decision",
        "decided_by",
    )
    out = [dict(zip(keys, r)) for r in rows]
    return sorted(
        out, key=lambda r: (r["decision"] is not None, -min(r["score_ab"] or 0, r["score_ba"] or 0), r["a"], r["b"])
    )


_FLIP = {"a_covers_b": "b_covers_a", "b_covers_a": "a_covers_b", "same": "same", "distinct": "distinct", None: None}


def decide_duplicate(db: Database, a: int, b: int, decision: str | None, *, by: str) -> None:
    """Confirm (``same``, ``a_covers_b``, ``b_covers_a``), reject (``distinct``) or reopen (None) a pair;
    the turn's ``in_dedup`` flags follow at once."""
    if decision not in _FLIP:
        raise AssessError(f"a duplicate decision is one of {', '.join(pure.DECISIONS)}, not {decision!r}")
    if a == b:
        raise AssessError("a nugget cannot duplicate itself")
    na, nb = nugget(db, a), nugget(db, b)
    if (na["source"], na["turn_id"]) != (nb["source"], nb["turn_id"]):
        raise AssessError("duplicates are pairs of nuggets of one set and one turn")
    if a > b:
        a, b, decision = b, a, _FLIP[decision]
    with write(db):
        db.conn.execute(
            "INSERT INTO nugget_duplicates (nugget_a, nugget_b, turn_id, source, suggested_by, decision, decided_by, "
            "updated_at) VALUES (?,?,?,?, 'manual', ?,?,?) ON CONFLICT(nugget_a, nugget_b) DO UPDATE SET "
            "decision = excluded.decision, decided_by = excluded.decided_by, updated_at = excluded.updated_at",
            (a, b, na["turn_id"], na["source"], decision, by if decision else None, now()),
        )
        _refresh_dedup(db.conn, na["source"], na["turn_id"])


def dedup_counts(db: Database, source: str, turn_id: str) -> dict:
    row = db.conn.execute(
        "SELECT COUNT(*), SUM(in_dedup = 1), SUM(in_dedup IS NULL) FROM nuggets WHERE source = ? AND turn_id = ?",
        (source, turn_id),
    ).fetchone()
    open_pairs = db.conn.execute(
        "SELECT COUNT(*) FROM nugget_duplicates WHERE source = ? AND turn_id = ? AND decision IS NULL",
        (source, turn_id),
    ).fetchone()[0]
    return {"nuggets": row[0], "kept": row[1] or 0, "unknown": row[2] or 0, "open_pairs": open_pairs}


# ------------------------------------------------------------------------------------------- gold responses


def gold_response(db: Database, source: str, turn_id: str) -> dict | None:
    row = db.conn.execute(
        "SELECT text, nuggets_used, updated_at FROM gold_responses WHERE source = ? AND turn_id = ?", (source, turn_id)
    ).fetchone()
    if row is None:
        return None
    used = json.loads(row[1]) if row[1] else []
    return {"text": row[0], "nuggets_used": used, "updated_at": row[2]}


def turn_nugget_choices(db: Database, turn_id: str, sources: Sequence[str] | None = None) -> list[dict]:
    """All nuggets of a turn (of the given sources), for composing a gold response."""
    sql = f"SELECT {', '.join(_NUGGET_COLS)} FROM nuggets WHERE turn_id = ?"
    params: list = [turn_id]
    if sources:
        sql += f" AND source IN ({','.join('?' * len(sources))})"
        params += list(sources)
    rows = [dict(zip(_NUGGET_COLS, r)) for r in db.conn.execute(sql, params)]
    return sorted(rows, key=lambda r: (r["source"], _natural_key(r["key"]), r["id"]))


def save_gold_response(db: Database, source: str, turn_id: str, text: str, nugget_ids: Iterable[int]) -> None:
    """Store an assessor's gold response for a turn and the ids of the nuggets it uses."""
    text = (text or "").strip()
    if not text:
        raise AssessError("a gold response needs some text")
    ids = sorted({int(i) for i in nugget_ids})
    with write(db):
        _check_turn(db.conn, turn_id)
        if ids:
            found = {
                r[0]
                for r in db.conn.execute(
                    f"SELECT id FROM nuggets WHERE turn_id = ? AND id IN ({','.join('?' * len(ids))})", (turn_id, *ids)
                )
            }
            missing = [i for i in ids if i not in found]
            if missing:
                raise UnknownItem(f"nugget {missing[0]} is not a nugget of turn {turn_id}")
        ensure_source(db, source, "assessor" if ":" not in source else None)
        db.conn.execute(
            "INSERT INTO gold_responses (source, turn_id, text, nuggets_used, updated_at) VALUES (?,?,?,?,?) "
            "ON CONFLICT(source, turn_id) DO UPDATE SET text = excluded.text, nuggets_used = excluded.nuggets_used, "
            "updated_at = excluded.updated_at",
            (source, turn_id, text, json.dumps(ids), now()),
        )


# ------------------------------------------------------------------------------------------- NtR labels of assessors


def ntr_order(db: Database, assessor: str, nugget_source: str, *, open_mode: bool = True) -> QueueOrder:
    """NtR items (turn, 'run nugget_id') in judging order: conversation, turn, run, nugget key.

    Items are every gold nugget of ``nugget_source`` x every run with a response to that turn, over
    the assessor's assigned turns (or all turns in open mode without assignments).
    """
    from store.queue import _scope

    where, params = _scope(db, assessor, open_mode)
    rows = db.conn.execute(
        f"SELECT q.turn_id, r.run, n.id, n.key FROM (SELECT id AS turn_id FROM turns) q "
        f"JOIN turns t ON t.id = q.turn_id JOIN conversations c ON c.id = t.conversation_id "
        f"JOIN nuggets n ON n.turn_id = q.turn_id AND n.source = ? "
        f"JOIN responses r ON r.turn_id = q.turn_id AND length(trim(r.text)) > 0 "
        f"WHERE {where} ORDER BY c.rowid, t.position, r.run",
        (nugget_source, *params),
    ).fetchall()
    grouped: dict[tuple, list] = {}
    for turn, run, nid, key in rows:
        grouped.setdefault((turn, run), []).append((_natural_key(key), nid))
    items = [(turn, f"{run} {nid}") for (turn, run), ns in grouped.items() for _, nid in sorted(ns)]
    return QueueOrder.of(items)


def ntr_queue(db: Database, assessor: str, nugget_source: str, *, open_mode: bool = True) -> QueueState:
    order = ntr_order(db, assessor, nugget_source, open_mode=open_mode)
    done = frozenset(
        (t, f"{r} {n}")
        for t, n, r in db.conn.execute("SELECT turn_id, nugget_id, run FROM ntr_labels WHERE source = ?", (assessor,))
    )
    return QueueState(order, done)


def ntr_item(db: Database, item: str) -> dict:
    """What the NtR screen shows for an item 'run nugget_id': the response and the gold nugget."""
    run, nid = item.split(" ", 1)
    row = nugget(db, int(nid))
    response = db.conn.execute(
        "SELECT text FROM responses WHERE run = ? AND turn_id = ?", (run, row["turn_id"])
    ).fetchone()
    if response is None:
        raise UnknownItem(f"run {run} has no response to turn {row['turn_id']}")
    return {
        "run": run,
        "nugget_id": row["id"],
        "key": row["key"],
        "nugget": row["text"],
        "turn_id": row["turn_id"],
        "response": response[0],
    }


def ntr_label_of(db: Database, source: str, nugget_id: int, run: str) -> int | None:
    row = db.conn.execute(
        "SELECT match FROM ntr_labels WHERE source = ? AND nugget_id = ? AND run = ?", (source, nugget_id, run)
    ).fetchone()
    return None if row is None else row[0]


def save_ntr_label(
    db: Database, source: str, nugget_id: int, run: str, match: int, *, mode: str = "blind", via: str = "ui"
) -> None:
    """Write one assessor's NtR label (1 = the nugget is covered by the response) in its own transaction."""
    if match not in (0, 1) or isinstance(match, bool):
        raise AssessError(f"an NtR label is 1 (covered) or 0 (not covered), not {match!r}")
    with write(db):
        row = db.conn.execute(
            "SELECT n.turn_id FROM nuggets n JOIN responses r ON r.turn_id = n.turn_id AND r.run = ? WHERE n.id = ?",
            (run, nugget_id),
        ).fetchone()
        if row is None:
            raise UnknownItem(f"nugget {nugget_id} with a response of run {run} does not exist")
        db.conn.execute(
            "INSERT INTO ntr_labels (source, nugget_id, run, turn_id, match, mode, via, updated_at) "
            "VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(source, nugget_id, run) DO UPDATE SET match = excluded.match, "
            "mode = excluded.mode, via = excluded.via, updated_at = excluded.updated_at",
            (source, nugget_id, run, row[0], match, mode, via, now()),
        )


def undo_ntr(db: Database, source: str) -> tuple[str, str] | None:
    """Revert the source's latest NtR label change not yet undone; return (turn, 'run nugget_id') it touched."""
    from store.queue import last_change

    with write(db):
        target = last_change(db, source, "ntr")
        if target is None:
            return None
        turn_id, nid, run = target[0].split(" ", 2)
        if target[1] is None:
            db.conn.execute(
                "DELETE FROM ntr_labels WHERE source = ? AND nugget_id = ? AND run = ?", (source, int(nid), run)
            )
        else:
            db.conn.execute(
                "UPDATE ntr_labels SET match = ?, via = 'undo', updated_at = ? WHERE source = ? AND "
                "nugget_id = ? AND run = ?",
                (int(target[1]), now(), source, int(nid), run),
            )
        return turn_id, f"{run} {nid}"


def ntr_sources(db: Database) -> list[str]:
    """Sources that hold NtR labels (assessors, ``crowd:NAME``, ``llm:MODEL``, imports)."""
    return [r[0] for r in db.conn.execute("SELECT DISTINCT source FROM ntr_labels ORDER BY source")]


def ptkb_sources(db: Database) -> list[str]:
    return [r[0] for r in db.conn.execute("SELECT DISTINCT source FROM ptkb_labels ORDER BY source")]


def ntr_scoring_input(
    db: Database, ntr_source: str, *, nugget_source: str | None = None, ptkb_source: str | None = None
) -> dict:
    """What NtR recall of ``ntr_source`` needs, read from the store as plain values.

    - ``matches``: ``{run: {turn: {nugget id: captured}}}`` over the labels of ``ntr_source`` on
      nuggets of the gold set; a (run, turn) is present when the source labelled at least one of
      its gold nuggets (as a line of the NtR TSV does). Labels on a stored response that is empty
      or only white space are left out (CONE-RAG skips empty responses) and counted.
    - ``gold`` / ``gold_dedup``: ``{turn: {nugget ids}}`` of the nugget set (``nugget_source``, or
      the one set the labels refer to) and of its de-duplicated subset (``in_dedup = 1``);
      the de-duplicated set is the one ``export nuggets --dedup`` writes. ``dedup_unknown_turns``:
      turns with nuggets whose status is unknown (imported without ``--dedup`` and never decided on
      the Duplicates page); they are not in the de-duplicated set.
    - ``personal``: with ``ptkb_source``, the turns with at least one statement it labelled relevant.
    """
    c = db.conn
    sources = ntr_sources(db)
    if ntr_source not in sources:
        raise UnknownItem(
            f"no NtR labels of source {ntr_source!r}; sources with NtR labels: {', '.join(sources) or 'none'}"
        )
    labelled_sets = [
        r[0]
        for r in c.execute(
            "SELECT DISTINCT n.source FROM ntr_labels l JOIN nuggets n ON n.id = l.nugget_id WHERE l.source = ? "
            "ORDER BY n.source",
            (ntr_source,),
        )
    ]
    if nugget_source is None:
        if len(labelled_sets) != 1:
            raise AssessError(
                f"the labels of {ntr_source} refer to the nugget sets {', '.join(labelled_sets)}: "
                f"name one with --nugget-source"
            )
        nugget_source = labelled_sets[0]
    elif nugget_source not in nugget_sources(db):
        raise UnknownItem(
            f"no nuggets of source {nugget_source!r}; nugget sources: {', '.join(nugget_sources(db)) or 'none'}"
        )
    gold: dict[str, set[int]] = {}
    gold_dedup: dict[str, set[int]] = {}
    status: dict[str, set] = {}
    for nid, turn, in_dedup in c.execute(
        "SELECT id, turn_id, in_dedup FROM nuggets WHERE source = ?", (nugget_source,)
    ):
        gold.setdefault(turn, set()).add(nid)
        status.setdefault(turn, set()).add(in_dedup)
        if in_dedup == 1:
            gold_dedup.setdefault(turn, set()).add(nid)
    matches: dict[str, dict[str, dict[int, bool]]] = {}
    counts = {"labels": 0, "other_set_labels": 0, "empty_response_labels": 0}
    for nid, run, turn, match, in_set, empty in c.execute(
        "SELECT l.nugget_id, l.run, l.turn_id, l.match, n.source = ?, length(trim(r.text)) = 0 "
        "FROM ntr_labels l JOIN nuggets n ON n.id = l.nugget_id JOIN turns t ON t.id = l.turn_id "
        "JOIN conversations c ON c.id = t.conversation_id "
        "LEFT JOIN responses r ON r.run = l.run AND r.turn_id = l.turn_id WHERE l.source = ? "
        "ORDER BY l.run, c.rowid, t.position, l.nugget_id",
        (nugget_source, ntr_source),
    ):
        if not in_set:
            counts["other_set_labels"] += 1
        elif empty:
            counts["empty_response_labels"] += 1
        else:
            counts["labels"] += 1
            matches.setdefault(run, {}).setdefault(turn, {})[nid] = bool(match)
    personal = None
    if ptkb_source is not None:
        if ptkb_source not in ptkb_sources(db):
            raise UnknownItem(
                f"no PTKB labels of source {ptkb_source!r}; PTKB label sources: {', '.join(ptkb_sources(db)) or 'none'}"
            )
        personal = {
            r[0]
            for r in c.execute(
                "SELECT DISTINCT turn_id FROM ptkb_labels WHERE source = ? AND relevant > 0", (ptkb_source,)
            )
        }
    return {
        "ntr_source": ntr_source,
        "nugget_source": nugget_source,
        "ptkb_source": ptkb_source,
        "matches": matches,
        "gold": gold,
        "gold_dedup": gold_dedup,
        "dedup_unknown_turns": [t for t in all_turns(db) if None in status.get(t, ())],
        "personal": personal,
        **counts,
    }


# ------------------------------------------------------------------------------------------- GFRC2


def save_study(db: Database, name: str, attributes: Sequence[dict], *, max_level: int = 2, L: int = 1000) -> dict:
    """Create or update a GFRC2 study: its attribute sets (validated), level range and L."""
    name = (name or "").strip()
    if not name or "/" in name:
        raise AssessError("a study name is non-empty and has no '/'")
    if not isinstance(max_level, int) or max_level < 1 or not isinstance(L, int) or L < 1:
        raise AssessError("max_level and L are positive integers")
    clean = pure.validate_attributes(attributes)
    with write(db):
        db.conn.execute(
            "INSERT INTO gfrc_studies (name, attributes, max_level, L, created_at) VALUES (?,?,?,?,?) "
            "ON CONFLICT(name) DO UPDATE SET attributes = excluded.attributes, max_level = excluded.max_level, "
            "L = excluded.L",
            (name, json.dumps(clean), max_level, L, now()),
        )
    return study(db, name)


def studies(db: Database) -> list[str]:
    return [r[0] for r in db.conn.execute("SELECT name FROM gfrc_studies ORDER BY created_at, name")]


def study(db: Database, name: str) -> dict:
    row = db.conn.execute("SELECT attributes, max_level, L FROM gfrc_studies WHERE name = ?", (name,)).fetchone()
    if row is None:
        raise UnknownItem(f"no GFRC2 study named {name!r}")
    return {"name": name, "attributes": json.loads(row[0]), "max_level": row[1], "L": row[2]}


def response_runs(db: Database) -> list[str]:
    return [r[0] for r in db.conn.execute("SELECT DISTINCT run FROM responses ORDER BY run")]


def conversations(db: Database) -> list[str]:
    return [r[0] for r in db.conn.execute("SELECT id FROM conversations ORDER BY rowid")]


def system_conversation(db: Database, run: str, conversation_id: str) -> list[pure.TurnText]:
    """The conversation as the run had it: each turn's user utterance and the run's response, in order."""
    rows = db.conn.execute(
        "SELECT t.id, t.position, t.utterance, r.text FROM turns t LEFT JOIN responses r ON r.turn_id = t.id "
        "AND r.run = ? WHERE t.conversation_id = ? ORDER BY t.position",
        (run, conversation_id),
    ).fetchall()
    return [pure.TurnText(tid, pos + 1, utt, resp) for tid, pos, utt, resp in rows]


def _response_words(db: Database, run: str, turn_id: str) -> list[str]:
    row = db.conn.execute("SELECT text FROM responses WHERE run = ? AND turn_id = ?", (run, turn_id)).fetchone()
    if row is None:
        raise UnknownItem(f"run {run} has no response to turn {turn_id}")
    return pure.words(row[0])


def mark_response_nugget(
    db: Database, study_name: str, run: str, turn_id: str, start_word: int, end_word: int, level: int, groups: dict
) -> int:
    """Mark words ``start_word..end_word`` (1-based, inclusive) of a run's response as a relevant nugget."""
    config = study(db, study_name)
    if not isinstance(level, int) or not 1 <= level <= config["max_level"]:
        raise AssessError(f"a level is 1..{config['max_level']}, not {level!r}")
    for a in config["attributes"]:
        if groups.get(a["name"]) not in a["groups"]:
            raise AssessError(f"{a['name']} is one of {', '.join(a['groups'])}, not {groups.get(a['name'])!r}")
    toks = _response_words(db, run, turn_id)
    if not 1 <= start_word <= end_word <= len(toks):
        raise InvalidSpan(f"words {start_word}-{end_word} are not inside the response ({len(toks)} words)")
    with write(db):
        clash = db.conn.execute(
            "SELECT start_word, end_word FROM response_nuggets WHERE study = ? AND run = ? AND turn_id = ? "
            "AND start_word <= ? AND end_word >= ?",
            (study_name, run, turn_id, end_word, start_word),
        ).fetchone()
        if clash:
            raise InvalidSpan(f"words {start_word}-{end_word} overlap the nugget at words {clash[0]}-{clash[1]}")
        cur = db.conn.execute(
            "INSERT INTO response_nuggets (study, run, turn_id, start_word, end_word, level, groups, text, updated_at) "
            "VALUES (?,?,?,?,?,?,?,?,?)",
            (
                study_name,
                run,
                turn_id,
                start_word,
                end_word,
                level,
                json.dumps({a["name"]: groups[a["name"]] for a in config["attributes"]}),
                " ".join(toks[start_word - 1 : end_word]),
                now(),
            ),
        )
        return cur.lastrowid


def response_marks(db: Database, study_name: str, run: str, conversation_id: str | None = None) -> list[dict]:
    sql = (
        "SELECT m.id, m.turn_id, m.start_word, m.end_word, m.level, m.groups, m.text FROM response_nuggets m "
        "JOIN turns t ON t.id = m.turn_id WHERE m.study = ? AND m.run = ?"
    )
    params: list = [study_name, run]
    if conversation_id is not None:
        sql += " AND t.conversation_id = ?"
        params.append(conversation_id)
    keys = ("id", "turn_id", "start_word", "end_word", "level", "groups", "text")
    rows = [dict(zip(keys, r)) for r in db.conn.execute(sql + " ORDER BY t.position, m.start_word", params)]
    for r in rows:
        r["groups"] = json.loads(r["groups"])
    return rows


def delete_mark(db: Database, mark_id: int) -> None:
    with write(db):
        db.conn.execute("DELETE FROM response_nuggets WHERE id = ?", (mark_id,))


def gfrc2_export(
    db: Database, study_name: str, *, runs: Sequence[str] | None = None, conversation_ids: Sequence[str] | None = None
) -> dict:
    """The ``score gfrc2`` input of a study: one conversation '<run>/<conversation>' per run and conversation."""
    config = study(db, study_name)
    runs = list(runs) if runs else response_runs(db)
    convs = list(conversation_ids) if conversation_ids else conversations(db)
    built = []
    for run in runs:
        for conv in convs:
            turns = system_conversation(db, run, conv)
            if not any(t.response for t in turns):
                continue
            built.append({"id": f"{run}/{conv}", "turns": turns, "marks": response_marks(db, study_name, run, conv)})
    return pure.gfrc2_document(
        config,
        built,
        about=f"GFRC2 study {study_name}: response nuggets marked in the "
        "assessment workbench; conversation id '<run>/<conversation>'; positions are "
        "1-based inclusive word positions over U1 S1 U2 S2 ... split on whitespace.",
    )


# ------------------------------------------------------------------------------------------- AEPD aspects


def _ptkb_check(c: sqlite3.Connection, turn_id: str, statements: Sequence[str]) -> str:
    conv = c.execute("SELECT conversation_id FROM turns WHERE id = ?", (turn_id,)).fetchone()
    if conv is None:
        raise UnknownItem(f"unknown turn {turn_id!r}")
    known = {r[0] for r in c.execute("SELECT statement_id FROM ptkb_statements WHERE conversation_id = ?", conv)}
    for s in statements:
        if str(s) not in known:
            raise UnknownItem(f"conversation {conv[0]} has no PTKB statement {s!r}")
    return conv[0]


def aspects(db: Database, turn_id: str) -> list[dict]:
    """The turn's aspects in order, each with its PTKB statement ids and content per run."""
    rows = db.conn.execute(
        "SELECT id, text FROM aspects WHERE turn_id = ? ORDER BY position, id", (turn_id,)
    ).fetchall()
    out = []
    for aid, text in rows:
        ptkb = sorted(
            (r[0] for r in db.conn.execute("SELECT statement_id FROM aspect_ptkb WHERE aspect_id = ?", (aid,))),
            key=lambda s: (not s.isdigit(), int(s) if s.isdigit() else 0, s),
        )
        content = dict(db.conn.execute("SELECT run, text FROM aspect_content WHERE aspect_id = ?", (aid,)))
        out.append({"id": aid, "aspect": text, "ptkb": ptkb, "content": content})
    return out


def save_aspect(
    db: Database, turn_id: str, text: str, ptkb: Sequence[str] = (), *, aspect_id: int | None = None
) -> int:
    """Add an aspect to a turn (or edit one when ``aspect_id`` is given) with the PTKB statements it relates to."""
    text = (text or "").strip()
    if not text:
        raise AssessError("an aspect needs a description")
    ptkb = [str(s) for s in ptkb]
    with write(db):
        c = db.conn
        conv = _ptkb_check(c, turn_id, ptkb)
        try:
            if aspect_id is None:
                position = c.execute(
                    "SELECT COALESCE(MAX(position), -1) + 1 FROM aspects WHERE turn_id = ?", (turn_id,)
                ).fetchone()[0]
                aspect_id = c.execute(
                    "INSERT INTO aspects (turn_id, position, text, updated_at) VALUES (?,?,?,?)",
                    (turn_id, position, text, now()),
                ).lastrowid
            else:
                if (
                    c.execute(
                        "UPDATE aspects SET text = ?, updated_at = ? WHERE id = ? AND turn_id = ?",
                        (text, now(), aspect_id, turn_id),
                    ).rowcount
                    == 0
                ):
                    raise UnknownItem(f"turn {turn_id} has no aspect {aspect_id}")
        except sqlite3.IntegrityError:
            raise AssessError(f"turn {turn_id} already has this aspect") from None
        c.execute("DELETE FROM aspect_ptkb WHERE aspect_id = ?", (aspect_id,))
        c.executemany(
            "INSERT INTO aspect_ptkb (aspect_id, conversation_id, statement_id) VALUES (?,?,?)",
            [(aspect_id, conv, s) for s in dict.fromkeys(ptkb)],
        )
        return aspect_id


def delete_aspect(db: Database, aspect_id: int) -> None:
    with write(db):
        db.conn.execute("DELETE FROM aspects WHERE id = ?", (aspect_id,))


def set_aspect_content(db: Database, aspect_id: int, run: str, text: str) -> None:
    """Record the words of a run's response about an aspect ('' = the response does not cover it)."""
    with write(db):
        row = db.conn.execute("SELECT turn_id FROM aspects WHERE id = ?", (aspect_id,)).fetchone()
        if row is None:
            raise UnknownItem(f"unknown aspect {aspect_id}")
        if not db.conn.execute("SELECT 1 FROM responses WHERE run = ? AND turn_id = ?", (run, row[0])).fetchone():
            raise UnknownItem(f"run {run} has no response to turn {row[0]}")
        db.conn.execute(
            "INSERT INTO aspect_content (aspect_id, run, text, updated_at) VALUES (?,?,?,?) "
            "ON CONFLICT(aspect_id, run) DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at",
            (aspect_id, run, (text or "").strip(), now()),
        )


def llm_aspect_sources(db: Database, turn_id: str, run: str) -> list[str]:
    """Sources with a parsed ``prejudge --task aepd`` answer for a run's response to a turn."""
    return [
        r[0]
        for r in db.conn.execute(
            "SELECT DISTINCT source FROM prejudgments WHERE task = 'aepd' AND turn_id = ? AND item_id = ? "
            "AND parse_status IN ('ok', 'repaired') AND parsed IS NOT NULL ORDER BY source",
            (turn_id, run),
        )
    ]


def llm_aspects(db: Database, source: str, turn_id: str, run: str) -> list[dict]:
    """The aspects of the source's latest parsed AEPD answer for (run, turn): [{aspect, ptkb, text}]
    (the text is the response's words the model gave for the aspect, '' = not covered)."""
    row = db.conn.execute(
        "SELECT parsed FROM prejudgments WHERE source = ? AND task = 'aepd' AND turn_id = ? AND item_id = ? "
        "AND parse_status IN ('ok', 'repaired') AND parsed IS NOT NULL ORDER BY id DESC LIMIT 1",
        (source, turn_id, run),
    ).fetchone()
    if row is None:
        raise UnknownItem(f"{source} has no AEPD aspects for run {run} on turn {turn_id}")
    out = []
    for a in json.loads(row[0]).get("aspects") or []:
        text = str(a.get("aspect") or "").strip()
        if text:
            out.append(
                {
                    "aspect": text,
                    "ptkb": [str(p) for p in a.get("ptkb") or []],
                    "text": str(a.get("text") or "").strip(),
                }
            )
    return out


def prefill_aspects(db: Database, source: str, turn_id: str, run: str) -> dict:
    """Copy an LLM's AEPD aspects for (run, turn) into the turn's aspect list, as the organizer's, to edit.

    One transaction. An aspect whose description the turn already has (ignoring case) is kept as it is;
    its content for ``run`` is filled only when it has none yet. A new aspect gets the LLM's PTKB links
    (statement ids the conversation lacks are dropped) and its content for ``run``. Returns counts.
    """
    proposed = llm_aspects(db, source, turn_id, run)
    counts = {"added": 0, "existing": 0, "content": 0, "dropped_ptkb": 0}
    with write(db):
        c = db.conn
        conv = _ptkb_check(c, turn_id, [])
        known = {r[0] for r in c.execute("SELECT statement_id FROM ptkb_statements WHERE conversation_id = ?", (conv,))}
        have = {a["aspect"].casefold(): a for a in aspects(db, turn_id)}
        for a in proposed:
            old = have.get(a["aspect"].casefold())
            if old is None:
                links = [p for p in a["ptkb"] if p in known]
                counts["dropped_ptkb"] += len(a["ptkb"]) - len(links)
                aid = save_aspect(db, turn_id, a["aspect"], links)
                have[a["aspect"].casefold()] = {"id": aid, "content": {}}
                counts["added"] += 1
            else:
                aid = old["id"]
                counts["existing"] += 1
                if run in old["content"]:
                    continue
            set_aspect_content(db, aid, run, a["text"])
            have[a["aspect"].casefold()]["content"][run] = a["text"]
            counts["content"] += 1
    return counts


def content_spans(db: Database, turn_id: str, run: str) -> list[tuple[int, int]]:
    """Where the turn's aspect contents for ``run`` are in the run's response (code points, for highlighting).

    Contents are stored as words only; they are located with :func:`assess.nuggets.locate_pieces`."""
    response = response_text(db, run, turn_id) or ""
    return [
        (s.start, s.end) for a in aspects(db, turn_id) for s in pure.locate_pieces(response, a["content"].get(run, ""))
    ]


def response_text(db: Database, run: str, turn_id: str) -> str | None:
    row = db.conn.execute("SELECT text FROM responses WHERE run = ? AND turn_id = ?", (run, turn_id)).fetchone()
    return None if row is None else row[0]


def aepd_export(db: Database, *, runs: Sequence[str] | None = None, turn_ids: Sequence[str] | None = None) -> dict:
    """The ``score aepd`` input: one entry '<run>/<turn>' per run with a response to a turn that has aspects."""
    runs = list(runs) if runs else response_runs(db)
    turns = (
        list(turn_ids)
        if turn_ids
        else [t for t in all_turns(db) if db.conn.execute("SELECT 1 FROM aspects WHERE turn_id = ?", (t,)).fetchone()]
    )
    entries = []
    for run in runs:
        for turn in turns:
            if response_text(db, run, turn) is None:
                continue
            listed = aspects(db, turn)
            if not listed:
                continue
            conv = db.conn.execute("SELECT conversation_id FROM turns WHERE id = ?", (turn,)).fetchone()[0]
            entries.append(
                {
                    "id": f"{run}/{turn}",
                    "system": run,
                    "conversation": conv,
                    "aspects": [
                        {"aspect": a["aspect"], "ptkb": pure.ptkb_ids(a["ptkb"]), "text": a["content"].get(run, "")}
                        for a in listed
                    ],
                }
            )
    return pure.aepd_document(entries)
