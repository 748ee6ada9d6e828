"""'Contradicts' citation labels (support -2) on both engines: a store from before the migration keeps every
label and history row, its triggers record -2, a value below it is refused; ``score citations`` reads a
contradicting citation as not supported and adds the run's contradiction rate only for a source that has one."""

from __future__ import annotations

import json
import sqlite3

import pytest
from sqlalchemy.exc import IntegrityError

from assess.services import rag
from assess.services.audit import agreement_view
from assess.tasks import CITATION_CONTRADICTS, Task
from store import labels, open_db
from store import responses as cited
from store.db import _statements, rows, run, schema_version, write
from store.schema import MIGRATIONS
from store.schema.citation_contradicts import POSTGRES
from store.sources import ensure_source
from tests.app.test_rag_pages import cited_responses
from tests.helpers import run_cli

HISTORY = "SELECT label_table, source, item, old_value, new_value, mode, via FROM label_history ORDER BY id"
LABELS = "SELECT * FROM citation_labels ORDER BY source, turn_id, run, sentence, passage_id"
BEFORE = next(i for i, script in enumerate(MIGRATIONS) if "citation_labels_contradicts" in script)
"""The schema version just before the migration (its index in MIGRATIONS)."""


def _store_before(target: str) -> None:
    """A store built by the migrations before this one, exactly as they shipped."""
    if "://" not in target:
        raw = sqlite3.connect(target)
        raw.execute("PRAGMA foreign_keys = ON")
        for number, script in enumerate(MIGRATIONS[:BEFORE], start=1):
            for statement in _statements(script):
                raw.execute(statement)
            raw.execute(f"PRAGMA user_version = {number}")
        raw.commit()
        raw.close()
        return
    from store.schema.postgres import _BASELINE, LATER

    assert dict(LATER)[BEFORE + 1] == POSTGRES  # the same number on both engines
    db = open_db(target, migrate=False)
    try:
        with write(db):
            db.raw.execute(_BASELINE + "".join(script for version, script in LATER if version <= BEFORE))
            run(db, "INSERT INTO assess_schema (version, applied_at) VALUES (:v, 'then')", {"v": BEFORE})
    finally:
        db.close()


def test_a_store_from_before_keeps_its_labels_and_history_and_takes_contradicts(store_target):
    _store_before(store_target)
    old = open_db(store_target, migrate=False)
    try:
        with write(old):
            for sql in (
                "INSERT INTO conversations (id, number) VALUES ('1', '1')",
                "INSERT INTO turns (id, conversation_id, turn_number, position) VALUES ('1_1', '1', 1, 0)",
                "INSERT INTO passages (id, doc_id, text) VALUES ('d:1', 'd', 'some text'), ('d:2', 'd', NULL)",
                "INSERT INTO sources (name, kind, created_at) VALUES ('amy', 'assessor', 'x')",
                "INSERT INTO runs (name, kind, imported_at) VALUES ('r', 'response', 'x')",
                # the citations the labels are about (a label about no citation is refused: labels.check_item)
                "INSERT INTO responses (run, turn_id, text) VALUES ('r', '1_1', 'It is so.')",
                "INSERT INTO response_citations (run, turn_id, sentence, position, passage_id) VALUES "
                "('r', '1_1', 0, 0, 'd:1'), ('r', '1_1', 1, 0, 'd:1'), ('r', '1_1', 1, 1, 'd:2')",
                "INSERT INTO citation_labels (source, turn_id, run, sentence, passage_id, support, note, mode, via, "
                "updated_at, active_ms) VALUES "
                "('amy', '1_1', 'r', 1, 'd:1', 2, 'clear', 'blind', 'key', '2026-01-01T00:00:00Z', 1500), "
                "('amy', '1_1', 'r', 1, 'd:2', NULL, NULL, 'blind', 'key', '2026-01-01T00:00:01Z', NULL)",
            ):
                run(old, sql)
        with pytest.raises(IntegrityError), write(old):  # before: -2 is off the scale
            run(old, "UPDATE citation_labels SET support = -2 WHERE passage_id = 'd:1'")
        labels_before, history_before = rows(old, LABELS), rows(old, HISTORY)
        assert len(history_before) == 2
    finally:
        old.close()
    db = open_db(store_target)  # migrates
    try:
        assert schema_version(db) == len(MIGRATIONS) > BEFORE
        assert rows(db, LABELS) == labels_before  # every column, the active time included
        assert rows(db, "SELECT active_ms FROM label_history ORDER BY id") == [{"active_ms": 1500}, {"active_ms": None}]
        assert rows(db, HISTORY) == history_before  # the rebuild wrote no history
        labels.save(db, Task.CITATION, "amy", ("1_1", "r", 1, "d:1"), CITATION_CONTRADICTS, mode="blind", via="key")
        labels.save(db, Task.CITATION, "amy", ("1_1", "r", 1, "d:2"), CITATION_CONTRADICTS, mode="blind", via="key")
        assert [(r["item"], r["old_value"], r["new_value"]) for r in rows(db, HISTORY)[2:]] == [
            ("1_1 r 1 d:1", "2", "-2"),
            ("1_1 r 1 d:2", "cannot-judge", "-2"),
        ]
        assert labels.undo(db, Task.CITATION, "amy") == ("1_1", "r", "1", "d:2")
        assert labels.get(db, Task.CITATION, "amy", ("1_1", "r", 1, "d:2")).value is None
        with pytest.raises(IntegrityError), write(db):  # the CHECK still stops below -2
            run(db, "UPDATE citation_labels SET support = -3 WHERE passage_id = 'd:1'")
        assert rows(db, "SELECT support FROM citation_labels WHERE passage_id = 'd:1'") == [{"support": -2}]
        if db.sqlite:
            triggers = rows(
                db, "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'citation_labels'"
            )
            assert len(triggers) == 3
            assert rows(db, "PRAGMA foreign_key_check") == []
    finally:
        db.close()


def test_score_citations_adds_the_contradiction_rate_for_a_source_with_contradicts(demo_target):
    """amy: sentence 1 cites a contradicting and a fully supporting passage, sentence 2 a contradicting one,
    sentence 3 nothing: recall 1/3, precision 1/3 (contradicts is not supported), 2 of 3 judged citations
    contradict. bob labels 0 where amy says contradicts: the same scores, and none of the added keys."""
    with open_db(demo_target) as db:
        cited.add_responses(db, "answers.jsonl", cited_responses())
        for name, value in (("amy", CITATION_CONTRADICTS), ("bob", 0)):
            who = ensure_source(db, name, "assessor")
            for sentence, passage, support in ((1, "demo-doc-001:0", value), (1, "demo-doc-002:3", 2)):
                rag.save_citation(db, who, "101_1", rag.citation_key("rag-a", sentence, passage), support)
            rag.save_citation(db, who, "101_1", rag.citation_key("rag-a", 2, "no-text-doc:7"), value)
    amy = json.loads(run_cli("score", "citations", "--source", "amy", "--json", db=demo_target, check=True).stdout)
    bob = json.loads(run_cli("score", "citations", "--source", "bob", "--json", db=demo_target, check=True).stdout)
    row = amy["runs"]["rag-a"]
    assert (row["recall"], row["precision"], row["citations"]) == (1 / 3, 1 / 3, 3)
    assert (row["contradicts"], row["contradiction_rate"]) == (2, 2 / 3)
    assert {k: v for k, v in row.items() if k not in ("contradicts", "contradiction_rate")} == bob["runs"]["rag-a"]
    assert list(bob["runs"]["rag-a"])[-1] == "supported_lax_micro"  # no added key without a contradicts label
    text = run_cli("score", "citations", "--source", "amy", "--per-response", db=demo_target, check=True).stdout
    header = next(line for line in text.splitlines() if line.startswith("run "))
    assert header.split()[-2:] == ["contradicts", "contradiction_rate"]
    plain = run_cli("score", "citations", "--source", "bob", db=demo_target, check=True).stdout
    assert "contradict" not in plain
    # agreement reads the scale as before unless a label contradicts: its confusion gains the -2 row only then
    with open_db(demo_target) as db:
        ensure_source(db, "cal", "assessor")
        rag.save_citation(db, "cal", "101_1", rag.citation_key("rag-a", 1, "demo-doc-002:3"), 2)
        before = agreement_view(db, "citation", ["bob", "cal"], threshold=None, bootstrap=0, breakdowns=())
        after = agreement_view(db, "citation", ["amy", "cal"], threshold=None, bootstrap=0, breakdowns=())
    assert (before["scale"], after["scale"]) == ([-1, 0, 1, 2], [-2, -1, 0, 1, 2])
