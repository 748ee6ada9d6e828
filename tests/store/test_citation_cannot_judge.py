"""'Cannot judge' citation labels (schema 14) on both engines: stored as support NULL with who wrote it and a
history row spelled 'cannot-judge', counted as labelled, undone like any label; and a store at schema 13 with
citation labels keeps every row and every history row when it is migrated, its triggers still recording."""

from __future__ import annotations

import sqlite3

import pytest

from assess.services import rag
from assess.tasks import Label, Task
from store import labels, open_db
from store import responses as cited
from store.db import _statements, rows, run, schema_version, write
from store.schema import MIGRATIONS
from store.sources import ensure_source
from tests.app.test_rag_pages import cited_responses

HISTORY = "SELECT label_table, source, item, old_value, new_value, mode, via FROM label_history ORDER BY id"
LABELS = "SELECT * FROM citation_labels ORDER BY source, turn_id, run, sentence, passage_id"


@pytest.fixture
def db(demo_target):
    database = open_db(demo_target)
    cited.add_responses(database, "answers.jsonl", cited_responses())
    yield database
    database.close()


def test_a_cannot_judge_citation_label_is_stored_with_history_and_undone(db):
    amy = ensure_source(db, "amy", "assessor")
    item = ("101_1", "rag-a", 2, "no-text-doc:7")  # the passage has no text
    rag.save_citation(db, amy, "101_1", rag.citation_key("rag-a", 2, "no-text-doc:7"), None)
    stored = rows(db, "SELECT source, support, mode, via FROM citation_labels WHERE source = 'amy'")
    assert stored == [{"source": "amy", "support": None, "mode": "blind", "via": "key"}]
    assert rows(db, HISTORY)[-1:] == [
        {
            "label_table": "citation",
            "source": "amy",
            "item": "101_1 rag-a 2 no-text-doc:7",
            "old_value": None,
            "new_value": "cannot-judge",
            "mode": "blind",
            "via": "key",
        }
    ]
    # labelled (the queue moves on), shown back as the assessor's own label, read back as None
    assert ("101_1", rag.citation_key("rag-a", 2, "no-text-doc:7")) in rag.citation_done(db, amy)
    screen = rag.citation_screen(db, amy, "101_1", rag.citation_key("rag-a", 2, "no-text-doc:7"))
    assert (screen.labelled, screen.own) == (True, None)
    assert labels.values(db, Task.CITATION, amy) == {item: None}
    # a support value replaces it and back; undo walks the history back through 'cannot judge'
    cited.save_citation_label(db, amy, *item, 2)
    cited.save_citation_label(db, amy, *item, None)
    assert [(r["old_value"], r["new_value"]) for r in rows(db, HISTORY)[-2:]] == [
        ("cannot-judge", "2"),
        ("2", "cannot-judge"),
    ]
    assert rag.undo_citation(db, amy) == ("101_1", rag.citation_key("rag-a", 2, "no-text-doc:7"))
    assert labels.get(db, Task.CITATION, amy, item).value == 2
    rag.undo_citation(db, amy)
    assert labels.get(db, Task.CITATION, amy, item) == Label(Task.CITATION, amy, item, None, None, "blind", "undo")
    rag.undo_citation(db, amy)
    assert labels.get(db, Task.CITATION, amy, item) is None
    assert [r["new_value"] for r in rows(db, HISTORY) if r["source"] == "amy"][-3:] == ["2", "cannot-judge", None]


def _store_at_13(target: str) -> None:
    """A store built by the first 13 migrations exactly as they shipped (no migration 14)."""
    if "://" not in target:
        raw = sqlite3.connect(target)
        raw.execute("PRAGMA foreign_keys = ON")
        for number, script in enumerate(MIGRATIONS[:13], start=1):
            for statement in _statements(script):
                raw.execute(statement)
            raw.execute(f"PRAGMA user_version = {number}")
        raw.commit()
        raw.close()
        return
    from store.schema.postgres import _BASELINE, LATER

    db = open_db(target, migrate=False)
    try:
        with write(db):
            db.raw.execute(_BASELINE + "".join(script for version, script in LATER if version <= 13))
            run(db, "INSERT INTO assess_schema (version, applied_at) VALUES (13, 'then')")
    finally:
        db.close()


def test_a_store_at_schema_13_keeps_its_citation_labels_and_history(store_target):
    _store_at_13(store_target)
    old = open_db(store_target, migrate=False)
    try:
        assert schema_version(old) == 13
        with write(old):
            for sql in (
                "INSERT INTO conversations (id, number) VALUES ('1', '1')",
                "INSERT INTO turns (id, conversation_id, turn_number, position) VALUES ('1_1', '1', 1, 0)",
                "INSERT INTO passages (id, doc_id, text) VALUES ('d:1', 'd', 'some text'), ('d:2', 'd', NULL)",
                "INSERT INTO sources (name, kind, created_at) VALUES ('amy', 'assessor', 'x'), ('bob', 'assessor', 'x')",
                "INSERT INTO runs (name, kind, imported_at) VALUES ('r', 'response', 'x')",
                # the citations the labels are about (a label about no citation is refused: labels.check_item)
                "INSERT INTO responses (run, turn_id, text) VALUES ('r', '1_1', 'It is so.')",
                "INSERT INTO response_citations (run, turn_id, sentence, position, passage_id) VALUES "
                "('r', '1_1', 0, 0, 'd:1'), ('r', '1_1', 1, 0, 'd:1'), ('r', '1_1', 1, 1, 'd:2')",
                "INSERT INTO citation_labels (source, turn_id, run, sentence, passage_id, support, note, mode, via, "
                "updated_at) VALUES ('amy', '1_1', 'r', 1, 'd:1', 2, 'clear', 'blind', 'key', '2026-01-01T00:00:00Z'), "
                "('amy', '1_1', 'r', 1, 'd:2', -1, NULL, 'blind', 'key', '2026-01-01T00:00:01Z'), "
                "('bob', '1_1', 'r', 0, 'd:1', 0, NULL, 'import', NULL, '2026-01-01T00:00:02Z')",
                "UPDATE citation_labels SET support = 1, updated_at = '2026-01-01T00:00:03Z' WHERE source = 'bob'",
            ):
                run(old, sql)
        labels_before, history_before = rows(old, LABELS), rows(old, HISTORY)
        assert len(history_before) == 4  # three inserts and one change, written by schema 9's triggers
    finally:
        old.close()
    db = open_db(store_target)  # migrates
    try:
        assert schema_version(db) == len(MIGRATIONS) >= 14
        after = rows(db, LABELS)
        assert [{c: r[c] for c in labels_before[0]} for r in after] == labels_before  # every row and column as it was
        assert {(r["active_ms"], r["guideline_version"]) for r in after} == {(None, None)}  # migration 19's: empty
        assert rows(db, HISTORY) == history_before  # the rebuild wrote no history
        # the triggers record as before, and 'cannot judge' is now a label of its own
        labels.save(db, Task.CITATION, "amy", ("1_1", "r", 1, "d:2"), None, mode="blind", via="key")
        labels.save(db, Task.CITATION, "bob", ("1_1", "r", 1, "d:2"), None, mode="blind", via="key")
        labels.delete(db, Task.CITATION, "bob", ("1_1", "r", 0, "d:1"))
        assert [(r["source"], r["item"], r["old_value"], r["new_value"], r["via"]) for r in rows(db, HISTORY)[4:]] == [
            ("amy", "1_1 r 1 d:2", "-1", "cannot-judge", "key"),
            ("bob", "1_1 r 1 d:2", None, "cannot-judge", "key"),
            ("bob", "1_1 r 0 d:1", "1", None, "undo"),
        ]
        assert rows(db, "SELECT source, support FROM citation_labels WHERE passage_id = 'd:2' ORDER BY source") == [
            {"source": "amy", "support": None},
            {"source": "bob", "support": None},
        ]
        assert labels.undo(db, Task.CITATION, "amy") == ("1_1", "r", "1", "d:2")
        assert labels.get(db, Task.CITATION, "amy", ("1_1", "r", 1, "d:2")).value == -1
        if db.sqlite:  # the rebuilt table has its three history triggers again, and no foreign key broke
            triggers = rows(
                db, "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'citation_labels'"
            )
            assert sorted(r["name"] for r in triggers) == [
                "citation_labels_history_delete",
                "citation_labels_history_insert",
                "citation_labels_history_update",
            ]
            assert rows(db, "PRAGMA foreign_key_check") == []
    finally:
        db.close()


def test_exports_say_cannot_judge_in_a_column_of_its_own(db, store_target, tmp_path):
    """``export table --table citation_labels``: a 'cannot judge' label is cannot_judge 1 with no support, every
    other label cannot_judge 0 with its support as an integer (CSV and Parquet); the history says cannot-judge."""
    import csv
    import io

    import pandas as pd

    from tests.helpers import run_cli

    amy = ensure_source(db, "amy", "assessor")
    for sentence, passage, value in ((1, "demo-doc-001:0", 2), (1, "demo-doc-002:3", -1), (2, "no-text-doc:7", None)):
        cited.save_citation_label(db, amy, "101_1", "rag-a", sentence, passage, value)
    out = run_cli("export", "table", "--table", "citation_labels", "--source", "amy", db=store_target, check=True)
    got = list(csv.DictReader(io.StringIO(out.stdout)))
    header = out.stdout.splitlines()[0].split(",")
    assert header[header.index("support") + 1] == "cannot_judge"
    assert sorted((r["passage_id"], r["support"], r["cannot_judge"]) for r in got) == [
        ("demo-doc-001:0", "2", "0"),
        ("demo-doc-002:3", "-1", "0"),
        ("no-text-doc:7", "", "1"),
    ]
    parquet = tmp_path / "citations.parquet"
    run_cli("export", "table", "--table", "citation_labels", "-o", parquet, db=store_target, check=True)
    table = pd.read_parquet(parquet).sort_values("passage_id")
    assert table["cannot_judge"].tolist() == [0, 0, 1]
    assert table["support"].tolist()[:2] == [2, -1] and pd.isna(table["support"].tolist()[2])
    history = run_cli("export", "table", "--table", "label_history", "--source", "amy", db=store_target, check=True)
    assert ",cannot-judge," in history.stdout
