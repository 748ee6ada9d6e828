"""The label files of nugget banks and rubrics, staged and made visible in one switch (docs/architecture.md,
"Large imports"): bank matches (``import bank-matches``) and rubric judgments (``import rubric-judgments``), one
row per (response, bank answer) or (response, rubric answer), as large as an LLM's judging of a whole campaign.

Each block is checked against the store (its items exist) and written into a temporary table without the write
lock; the switch copies it under the lock in one INSERT … SELECT, with the history as before (``bank_matches``'
triggers; one ``rubric`` row per changed judgment) and the organizer action of the import. A refusal comes
before the switch: nothing is written."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable

from assess.errors import FormatError, UnknownItem
from assess.formats.banks import BankMatch, RubricJudgment
from store import outbox
from store.banks import check_match, shown_match
from store.bulk import insert_rows
from store.db import Store, now, row, rows, run, value, write
from store.history import record_action
from store.rights import check_writer
from store.sources import ensure_source
from store.staging import stage_block, staging

ROWS_PER_BLOCK = 2_000  # matches or judgments checked and staged per block


def import_matches(db: Store, matches: Iterable[BankMatch], file: str, source: str, *, by: str | None) -> dict:
    """Store a match file's decisions as the source's labels (an unknown item refused naming the file and line,
    nothing written). A match equal to the stored one (as a form shows it: :func:`store.banks.shown_match`) is
    not rewritten; ``changed`` counts the others, compared when their block was staged."""
    count, records = 0, iter(matches)
    with staging(db, _MATCH_STAGING, clustered=_MATCH_STAGING):
        while block := list(itertools.islice(records, ROWS_PER_BLOCK)):
            with stage_block(db):
                staged = []
                for m in block:
                    try:
                        check_match(db, m.topic_id, m.run, m.nugget, m.answer, m.sentences)
                    except UnknownItem as e:
                        raise FormatError(file, m.line, "a stored bank answer and response", str(e)) from None
                    staged.append(
                        (*_match_key(m), int(m.contains), json.dumps(list(m.sentences)), _changes(db, source, m))
                    )
                insert_rows(
                    db,
                    "INSERT INTO staged_matches (turn_id, run, nugget, answer, contains, sentences, changed)",
                    ("?",) * 7,
                    " ON CONFLICT (turn_id, run, nugget, answer) DO UPDATE SET contains = excluded.contains, "
                    "sentences = excluded.sentences, changed = excluded.changed",  # a key given again: the last
                    staged,
                )
            count += len(block)
        with write(db, lock_to_commit=True):  # foreign keys checked per row: an answer or response deleted meanwhile
            check_writer(db, by, action="import")
            ensure_source(db, source)
            changed = value(db, "SELECT COUNT(*) FROM staged_matches WHERE changed = 1")
            run(  # "WHERE changed = 1 ORDER BY …": SQLite reads an ON CONFLICT after a bare FROM as a join's ON
                db,
                "INSERT INTO bank_matches (source, turn_id, run, nugget, answer, contains, sentences, mode, via, "
                "updated_at) SELECT :s, turn_id, run, nugget, answer, contains, sentences, 'import', :via, :at "
                "FROM staged_matches WHERE changed = 1 ORDER BY turn_id, run, nugget, answer "
                "ON CONFLICT (source, turn_id, run, nugget, answer) DO UPDATE SET contains = excluded.contains, "
                "sentences = excluded.sentences, mode = excluded.mode, via = excluded.via, "
                "updated_at = excluded.updated_at",
                {"s": source, "via": file, "at": now()},
            )
            counts = {"matches": count, "changed": int(changed), "source": source}
            record_action(db, by, "import", f"bank-matches {file}", None, counts, via="file", writer_checked=True)
            outbox.import_finished(db, "bank-matches", file, **counts)
    return counts


def _match_key(m: BankMatch) -> tuple:
    return m.topic_id, m.run, m.nugget, m.answer


def _changes(db: Store, source: str, m: BankMatch) -> int:
    """1 when the match differs from the source's stored one (none stored: it differs)."""
    found = row(
        db,
        "SELECT contains, sentences FROM bank_matches "
        "WHERE source = :s AND turn_id = :t AND run = :r AND nugget = :n AND answer = :k",
        dict(zip(("s", "t", "r", "n", "k"), (source, *_match_key(m)))),
    )
    old = None if found is None else shown_match(found["contains"], json.loads(found["sentences"]))
    return int(old != shown_match(m.contains, m.sentences))


_MATCH_STAGING = {
    "staged_matches": "turn_id TEXT NOT NULL, run TEXT NOT NULL, nugget INTEGER NOT NULL, answer INTEGER NOT NULL, "
    "contains INTEGER NOT NULL, sentences TEXT NOT NULL, changed INTEGER NOT NULL, "
    "PRIMARY KEY (turn_id, run, nugget, answer)"
}


def import_rubric_judgments(
    db: Store, judgments: Iterable[RubricJudgment], file: str, source: str, *, by: str | None
) -> dict:
    """Store an assessment file's judgments as the source's rubric labels (a topic or answer the store's rubrics
    lack is refused naming the file and line, nothing written). A judgment given again: the last one. The switch
    writes a ``rubric`` history row for each judgment that differs from the stored one (``changed``)."""
    answers = {(r["topic_id"], r["answer_id"]) for r in rows(db, "SELECT topic_id, answer_id FROM rubric_answers")}
    count, records = 0, iter(judgments)
    with staging(db, _RUBRIC_STAGING, clustered=_RUBRIC_STAGING):
        while block := list(itertools.islice(records, ROWS_PER_BLOCK)):
            for j in block:
                if (j.topic_id, j.answer_id) not in answers:
                    found = f"answer {j.answer_id!r} of topic {j.topic_id!r}"
                    raise FormatError(file, j.line, "an answer of a stored rubric", found)
            with stage_block(db):
                insert_rows(
                    db,
                    "INSERT INTO staged_rubric (topic_id, run, answer_id, judgment)",
                    ("?",) * 4,
                    " ON CONFLICT (topic_id, run, answer_id) DO UPDATE SET judgment = excluded.judgment",
                    _last(block),
                )
            count += len(block)
        with write(db, lock_to_commit=True):  # foreign keys checked per row: a rubric answer deleted meanwhile
            check_writer(db, by, action="import")
            ensure_source(db, source)
            params = {"s": source, "via": file, "at": now()}
            differs = (
                "FROM staged_rubric t LEFT JOIN rubric_labels l ON l.source = :s AND l.topic_id = t.topic_id "
                "AND l.run = t.run AND l.answer_id = t.answer_id WHERE l.judgment IS NULL OR l.judgment <> t.judgment"
            )
            changed = value(db, f"SELECT COUNT(*) {differs}", params)
            run(  # the history first: it reads the old judgments
                db,
                "INSERT INTO label_history (label_table, source, item, old_value, new_value, mode, via, at) "
                "SELECT 'rubric', :s, t.topic_id || ' ' || t.run || ' ' || t.answer_id, CAST(l.judgment AS TEXT), "
                f"CAST(t.judgment AS TEXT), 'import', :via, :at {differs} ORDER BY t.topic_id, t.run, t.answer_id",
                params,
            )
            run(
                db,
                "INSERT INTO rubric_labels (source, topic_id, run, answer_id, judgment, mode, via, updated_at) "
                "SELECT :s, topic_id, run, answer_id, judgment, 'import', :via, :at FROM staged_rubric WHERE true "
                "ORDER BY topic_id, run, answer_id ON CONFLICT (source, topic_id, run, answer_id) DO UPDATE SET "
                "judgment = excluded.judgment, mode = excluded.mode, via = excluded.via, updated_at = excluded.updated_at "
                "WHERE rubric_labels.judgment <> excluded.judgment",
                params,
            )
            counts = {"judgments": count, "changed": int(changed), "source": source}
            record_action(db, by, "import", f"rubric-judgments {file}", None, counts, via="file", writer_checked=True)
            outbox.import_finished(db, "rubric-judgments", file, **counts)
    return counts


def _last(block: list[RubricJudgment]) -> list[tuple]:
    """The block's judgments, one per key (the last given): PostgreSQL refuses to update a row twice in one
    statement."""
    last = {(j.topic_id, j.run, j.answer_id): j.judgment for j in block}
    return [(*key, judgment) for key, judgment in last.items()]


_RUBRIC_STAGING = {
    "staged_rubric": "topic_id TEXT NOT NULL, run TEXT NOT NULL, answer_id TEXT NOT NULL, judgment INTEGER NOT NULL, "
    "PRIMARY KEY (topic_id, run, answer_id)"
}
