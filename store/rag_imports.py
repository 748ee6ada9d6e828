"""The RAG track's imports into the store: gold nuggets, plain responses and NtR labels, each staged and made
visible in one switch (docs/architecture.md, "Large imports"); the checks they share with the other imports
are in :mod:`store.imports`."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Sequence

from assess.errors import FormatError
from assess.formats import (
    NtrRecord,
    NuggetRecord,
    ResponseRecord,
    paused_gc,
)
from assess.formats.nuggets import twice
from assess.tasks import LABEL_KINDS, Task
from store import outbox
from store.bulk import insert_rows
from store.db import Store, now, rows, run, write
from store.imports import (
    STAGED_HISTORY,
    Replacements,
    check_turns,
    entry_line_in,
    known_turns,
    labels_on,
    refuse_gone_turns,
    rewrite_refused,
    rows_in_chunks,
    switch_history,
    text_differs,
    turn_line_in,
)
from store.label_imports import IMPORTANCE_STAGING, stage_importance, switch_importance
from store.labels import import_staged_labels
from store.nuggets import gold
from store.sources import ensure_source
from store.staging import stage_block, staging

_NTR = LABEL_KINDS[Task.NTR]


NUGGETS_PER_BLOCK = 2000  # nuggets (or CONE-RAG responses) staged per block of an import


def import_nuggets(
    db: Store,
    file: str,
    nuggets: Iterable[NuggetRecord],
    *,
    source: str,
    dedup: bool = False,
    replace: bool = False,
    by: str | None = None,
    importance: Callable[[NuggetRecord], int] | None = None,
) -> dict:
    """Store gold nuggets (text only, as the public CONE-RAG files have no offsets).

    ``dedup=True`` reads the file as the de-duplicated subset of ``source``: its keys are marked
    kept (``in_dedup = 1``), the source's other nuggets of those turns dropped (0). Nuggets absent
    from the store are created. A nugget stored with another text or relevance is refused (the first
    one, naming its line and the labels on it; nothing written) unless ``replace``: then it is rewritten
    in place (its labels stay on it) and each change recorded (see :func:`labels_on`).

    ``nuggets`` may be an iterator (:func:`assess.formats.nuggets.iter_nuggets` reads the file one turn
    at a time): they are checked and staged :data:`NUGGETS_PER_BLOCK` at a time without the write lock
    (:func:`store.staging.staging`), so memory is bounded by a block (and the file's turn ids) whatever the
    file's size, and made visible in one switch. A refusal in any block (an unknown turn, a rewrite, a bad
    record met while reading) comes before the switch: nothing is written.
    ``importance(record)`` (the nuggetizer import): each nugget's importance, staged with it and written in the
    switch as an importance label of ``source`` on the nugget (:mod:`store.label_imports`). The rows
    are written by :mod:`store.nuggets.gold` (:func:`~store.nuggets.gold.stage_imported`,
    :func:`~store.nuggets.gold.switch_imported`, :func:`~store.nuggets.gold.drop_from_dedup`), the one module
    that writes nuggets.
    """
    stamp = now()
    known = known_turns(db)
    turns: set[str] = set()
    count = 0
    replacements = Replacements(staged=True)
    records = iter(nuggets)
    tables = {**_NUGGETS_STAGING, **(IMPORTANCE_STAGING if importance else {})}
    # staged (store.staging.staging): blocks checked and written to temporary tables without the lock, one switch
    with paused_gc(), staging(db, tables, clustered=("staged_nuggets", "staged_importance")):
        while block := list(itertools.islice(records, NUGGETS_PER_BLOCK)):
            with stage_block(db):
                met = _nugget_block(db, file, block, known, turns, source, replace, by, replacements)
                if dedup and met:
                    insert_rows(db, "INSERT INTO staged_nugget_turns (turn_id)", ("?",), "", ((t,) for t in met))
                gold.stage_imported(db, "staged_nuggets", block)
                if importance:
                    stage_importance(db, {(n.turn_id, n.key): importance(n) for n in block})
            count += len(block)
        with write(db, lock_to_commit=True):
            refuse_gone_turns(db, file, "staged_nuggets")
            ensure_source(db, source)
            if dedup and turns:  # the subset's turns: their nuggets dropped, the file's kept by the copy
                gold.drop_staged_from_dedup(db, source, "staged_nugget_turns")
            elif dedup:  # an empty subset: nothing of the source is kept
                gold.drop_from_dedup(db, source)
            gold.switch_imported(db, source, "staged_nuggets", dedup=dedup, stamp=stamp)
            if importance:
                switch_importance(db, source, stamp)
            switch_history(db, by)
            outbox.import_finished(db, "nuggets", file, nuggets=count, turns=len(turns), source=source)
    summary: dict = {"nuggets": count, "turns": len(turns), "source": source}
    if replace:
        summary.update(replacements.summary("nugget"))
    return summary


_NUGGETS_STAGING = {
    "staged_nuggets": "turn_id TEXT NOT NULL, key TEXT NOT NULL, text TEXT, relevance INTEGER, "
    "PRIMARY KEY (turn_id, key)",
    "staged_nugget_turns": "turn_id TEXT PRIMARY KEY",
    "staged_history": STAGED_HISTORY,
}


def _nugget_block(
    db: Store,
    file: str,
    block: Sequence[NuggetRecord],
    known: set[str],
    turns: set[str],
    source: str,
    replace: bool,
    by: str | None,
    replacements: Replacements,
) -> set[str]:
    """Check one block of :func:`import_nuggets` (its turns, the rewrites it makes) and record its replacements;
    return the turns met for the first time (added to ``turns``)."""
    check_turns(db, file, block, known, locate=turn_line_in(file))
    met = {n.turn_id for n in block} - turns
    turns |= met
    changed = _changed_nuggets(db, file, block, source, replace)
    if replace:
        replacements.record(db, by, file, changed)
    return met


def _changed_nuggets(db: Store, file: str, nuggets: Sequence[NuggetRecord], source: str, replace: bool) -> list:
    """The stored nuggets of ``source`` that the records change (text or relevance), as changes for
    :func:`record_replaced`; without ``replace``, the refusal of the first of them."""
    stored = {
        (r["turn_id"], r["key"]): r
        for r in rows_in_chunks(
            db,
            "SELECT id, turn_id, key, text, relevance FROM nuggets WHERE source = :source AND turn_id IN ({marks})",
            {"source": source},
            (n.turn_id for n in nuggets),
        )
    }
    changed = []
    for n in nuggets:
        old = stored.get((n.turn_id, n.key))
        if old is not None and (old["text"], old["relevance"]) != (n.text, n.relevance):
            changed.append((n, old))
    if not changed:
        return []
    on = labels_on(db, "nugget", [old["id"] for _, old in changed])
    if not replace:
        n, old = changed[0]
        differs = (
            text_differs(n.text, old["text"])
            if n.text != old["text"]
            else f"relevance {n.relevance} where {old['relevance']} is stored"
        )
        line = n.line if n.line is not None else entry_line_in(file, n.turn_id, n.key)
        what = f"nugget {n.key} of turn {n.turn_id!r} (source {source!r})"
        raise rewrite_refused(file, line, what, differs, on[old["id"]])
    return [
        (
            f"nugget {source} {n.turn_id} {n.key}",
            {"text": old["text"], "relevance": old["relevance"]},
            {"text": n.text, "relevance": n.relevance},
            on[old["id"]],
        )
        for n, old in changed
    ]


def import_responses(
    db: Store,
    file: str,
    responses: Iterable[ResponseRecord],
    *,
    gold_source: str | None = None,
    replace: bool = False,
    by: str | None = None,
) -> dict:
    """Store system responses per run and turn; with ``gold_source``, store them as gold responses instead
    (one per turn). A run and turn (a gold source's turn) given twice under keys that differ only by
    surrounding whitespace is refused; a response stored with another text (a gold response: or other
    nuggets) is refused (the first, naming its line and the labels on it; nothing written) unless
    ``replace``: then it is rewritten and each change recorded (see :func:`labels_on`).

    ``responses`` may be an iterator (:func:`assess.formats.ikat.iter_responses` reads the file one turn
    at a time): they are checked and staged :data:`NUGGETS_PER_BLOCK` at a time without the write lock
    (:func:`store.staging.staging`; each run and turn seen is kept across blocks), then made visible in one switch;
    a refusal in any block comes before it: nothing is written."""
    seen: dict[tuple[str, str | None], str] = {}
    known = known_turns(db)
    stamp = now()
    count = 0
    runs: set[str] = set()
    replacements = Replacements(staged=True)
    records = iter(responses)
    with paused_gc(), staging(db, _RESPONSES_STAGING):
        while block := list(itertools.islice(records, NUGGETS_PER_BLOCK)):
            for r in block:
                key = (r.turn_id, None if gold_source else r.run)
                if key in seen:
                    if gold_source and seen[key] != r.run:
                        raise FormatError(
                            file,
                            entry_line_in(file, r.turn_id, r.run),
                            f"one gold response per turn (turn {r.turn_id!r} has {seen[key]!r})",
                            f"a second one, {r.run!r}",
                        )
                    raise twice(file, r.turn_id, r.run, "response")
                seen[key] = r.run
            with stage_block(db):
                check_turns(db, file, block, known, locate=turn_line_in(file))
                if gold_source:
                    changed = _changed_gold(db, file, block, gold_source, replace)
                    insert_rows(
                        db,
                        "INSERT INTO staged_gold (turn_id, text, nuggets_used)",
                        ("?", "?", "?"),
                        "",
                        ((r.turn_id, r.text, json.dumps(list(r.nuggets_used or ()))) for r in block),
                    )
                else:
                    changed = _changed_responses(db, file, block, replace)
                    runs.update(r.run for r in block)
                    insert_rows(
                        db,
                        "INSERT INTO staged_plain (run, turn_id, text)",
                        ("?", "?", "?"),
                        "",
                        ((r.run, r.turn_id, r.text) for r in block),
                    )
                if replace:
                    replacements.record(db, by, file, changed)
            count += len(block)
        with write(db, lock_to_commit=True):  # "WHERE true": see switch_passages
            if gold_source:
                refuse_gone_turns(db, file, "staged_gold")
                ensure_source(db, gold_source)
                run(
                    db,
                    "INSERT INTO gold_responses (source, turn_id, text, nuggets_used, updated_at) "
                    "SELECT :source, turn_id, text, nuggets_used, :at FROM staged_gold WHERE true ORDER BY turn_id "
                    "ON CONFLICT (source, turn_id) DO UPDATE SET text=excluded.text, "
                    "nuggets_used=excluded.nuggets_used, updated_at=excluded.updated_at",
                    {"source": gold_source, "at": stamp},
                )
            else:
                refuse_gone_turns(db, file, "staged_plain")
                register_response_runs(db, runs, file, stamp)
                run(
                    db,
                    "INSERT INTO responses (run, turn_id, text) SELECT run, turn_id, text FROM staged_plain WHERE true "
                    "ORDER BY run, turn_id ON CONFLICT (run, turn_id) DO UPDATE SET text=excluded.text",
                )
            switch_history(db, by)
            outbox.import_finished(db, "gold-responses" if gold_source else "responses", file, responses=count)
    summary: dict = (
        {"gold_responses": count, "source": gold_source} if gold_source else {"responses": count, "runs": len(runs)}
    )
    if replace:
        summary.update(replacements.summary("gold response" if gold_source else "response"))
    return summary


# A run and turn (a gold source's turn) comes once in a file (refused above before it is staged).
_RESPONSES_STAGING = {
    "staged_plain": "run TEXT NOT NULL, turn_id TEXT NOT NULL, text TEXT, PRIMARY KEY (run, turn_id)",
    "staged_gold": "turn_id TEXT PRIMARY KEY, text TEXT, nuggets_used TEXT",
    "staged_history": STAGED_HISTORY,
}


def _changed_responses(db: Store, file: str, responses: Sequence[ResponseRecord], replace: bool) -> list:
    """The stored responses that the records give another text, as changes for :func:`record_replaced`;
    without ``replace``, the refusal of the first of them."""
    stored: dict[tuple[str, str], str] = {}
    for name in sorted({r.run for r in responses}):
        turns = (r.turn_id for r in responses if r.run == name)
        sql = "SELECT turn_id, text FROM responses WHERE run = :run AND turn_id IN ({marks})"
        for s in rows_in_chunks(db, sql, {"run": name}, turns):
            stored[(name, s["turn_id"])] = s["text"]
    changed = [(r, stored[(r.run, r.turn_id)]) for r in responses if stored.get((r.run, r.turn_id), r.text) != r.text]
    if not changed:
        return []
    on = labels_on(db, "response", [(r.run, r.turn_id) for r, _ in changed])
    if not replace:
        r, old = changed[0]
        line = r.line if r.line is not None else entry_line_in(file, r.turn_id, r.run)
        what = f"the response of run {r.run!r} to turn {r.turn_id!r}"
        raise rewrite_refused(file, line, what, text_differs(r.text, old), on[(r.run, r.turn_id)])
    return [
        (f"response {r.run} {r.turn_id}", {"text": old}, {"text": r.text}, on[(r.run, r.turn_id)]) for r, old in changed
    ]


def _changed_gold(db: Store, file: str, responses: Sequence[ResponseRecord], source: str, replace: bool) -> list:
    """The stored gold responses of ``source`` that the records change (text or nuggets used); without
    ``replace``, the refusal of the first (gold responses carry no labels)."""
    stored = {
        g["turn_id"]: g
        for g in rows_in_chunks(
            db,
            "SELECT turn_id, text, nuggets_used FROM gold_responses WHERE source = :s AND turn_id IN ({marks})",
            {"s": source},
            (r.turn_id for r in responses),
        )
    }
    changed = []
    for r in responses:
        old = stored.get(r.turn_id)
        used = json.dumps(list(r.nuggets_used or ()))
        if old is not None and (old["text"], old["nuggets_used"]) != (r.text, used):
            changed.append((r, old, used))
    if changed and not replace:
        r, old, _used = changed[0]
        differs = text_differs(r.text, old["text"]) if r.text != old["text"] else "other nuggets used"
        line = r.line if r.line is not None else entry_line_in(file, r.turn_id, r.run)
        what = f"the gold response of source {source!r} to turn {r.turn_id!r}"
        raise rewrite_refused(file, line, what, differs, {})
    return [
        (
            f"gold-response {source} {r.turn_id}",
            {"text": old["text"], "nuggets_used": old["nuggets_used"]},
            {"text": r.text, "nuggets_used": used},
            {},
        )
        for r, old, used in changed
    ]


def import_ntr_labels(db: Store, file: str, labels: Sequence[NtrRecord], *, source: str, nugget_source: str) -> dict:
    """Store nugget-to-response labels; ``<k>`` names nugget ``[k]`` of ``nugget_source`` for that turn."""
    check_turns(db, file, labels)
    nugget_ids = {
        (r["turn_id"], r["key"]): r["id"]
        for r in rows(db, "SELECT id, turn_id, key FROM nuggets WHERE source = :source", {"source": nugget_source})
    }
    batch = []
    stamp = now()
    for rec in labels:
        nid = nugget_ids.get((rec.turn_id, rec.nugget_key))
        if nid is None:
            raise FormatError(
                file,
                rec.line,
                f"a nugget {rec.nugget_key} of source {nugget_source!r} in turn "
                f"{rec.turn_id} (import the nuggets first)",
                "no such nugget",
            )
        batch.append((source, nid, rec.run, rec.turn_id, rec.match, rec.batch, stamp))
    seen = {}
    for rec in labels:  # one value per (nugget, run) within the file
        key = (nugget_ids[(rec.turn_id, rec.nugget_key)], rec.run)
        if key in seen and seen[key][0] != rec.match:
            raise FormatError(
                file,
                rec.line,
                f"one label per nugget and run (line {seen[key][1]} says {seen[key][0]})",
                str(rec.match),
            )
        seen.setdefault(key, (rec.match, rec.line))
    # staged (store.staging.staging): the rows go to a temporary table without the lock, one INSERT … SELECT switch
    with staging(db, _NTR_STAGING, clustered=_NTR_STAGING):
        with stage_block(db):
            insert_rows(  # an item given twice has one value (refused above otherwise): staged once
                db,
                f"INSERT INTO staged_ntr (nugget_id, run, turn_id, {_NTR.value_column}, batch)",
                ("?", "?", "?", "?", "?"),
                " ON CONFLICT (nugget_id, run) DO NOTHING",
                (b[1:6] for b in batch),  # nugget, run, turn, match, batch
            )
        with write(db, lock_to_commit=True):
            ensure_source(db, source)
            register_response_runs(db, {r.run for r in labels}, file, stamp)
            import_staged_labels(db, Task.NTR, "staged_ntr", _STAGED_NTR, source, stamp)
            outbox.import_finished(db, "ntr", file, labels=len(batch), source=source)
    return {"labels": len(batch), "yes": sum(rec.match for rec in labels), "source": source}


_STAGED_NTR = ("nugget_id", "run", "turn_id", _NTR.value_column, "batch")
_NTR_STAGING = {
    "staged_ntr": f"nugget_id INTEGER NOT NULL, run TEXT NOT NULL, turn_id TEXT NOT NULL, {_NTR.value_column} "
    "INTEGER NOT NULL, batch TEXT, PRIMARY KEY (nugget_id, run)"
}


def register_response_runs(db: Store, names: Iterable[str], file: str, stamp: str) -> None:
    """Register the response runs a file names (an existing run keeps its first file)."""
    for name in sorted(names):
        run(
            db,
            "INSERT INTO runs (name, kind, file, imported_at) VALUES (:name, 'response', :file, :at) "
            "ON CONFLICT(name) DO NOTHING",
            {"name": name, "file": str(file), "at": stamp},
        )
