"""The fast qrels import: one history event per bulk import with every label's history still
recoverable, foreign keys and triggers exactly as before afterwards, and the schema-5 migration."""

from __future__ import annotations

import sqlite3

import pytest

from assess.errors import AssessError, FormatError
from assess.services.loading import load_file
from store import open_db, queue
from store.db import write
from store.imports import _history_trigger_off
from store.review import item_history
from store.schema import MIGRATIONS
from tests.helpers import ROOT

TOPICS = ROOT / "assets" / "demo" / "topics.json"


def triggers(db) -> dict[str, str]:
    return dict(db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").fetchall())


def history(db, source):
    return db.execute(
        "SELECT item, old_value, new_value, mode, via FROM label_history WHERE source = ? ORDER BY id", (source,)
    ).fetchall()


@pytest.fixture
def db(tmp_path):
    db = open_db(tmp_path / "b.db")
    load_file(db, "topics", TOPICS)
    return db


def qrels(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


def test_first_import_is_one_history_event_and_later_changes_are_rows(db, tmp_path):
    before = triggers(db)
    load_file(
        db, "qrels", qrels(tmp_path, "a.qrels", ["101_1 0 p:1 2", "101_1 0 p:2 0", "101_2 0 p:3 4"]), source="nist"
    )
    assert history(db, "nist") == [("*", None, "3", "import", "bulk")]
    assert db.execute(
        "SELECT turn_id, passage_id, grade, via FROM passage_labels WHERE source = 'nist' ORDER BY 1, 2"
    ).fetchall() == [("101_1", "p:1", 2, None), ("101_1", "p:2", 0, None), ("101_2", "p:3", 4, None)]
    assert triggers(db) == before  # the dropped insert trigger is back, verbatim
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert db.execute("PRAGMA foreign_key_check").fetchall() == []

    # a second file for the same source: one row per real change, old value kept
    load_file(
        db, "qrels", qrels(tmp_path, "b.qrels", ["101_1 0 p:1 3", "101_1 0 p:2 0", "101_3 0 p:9 1"]), source="nist"
    )
    assert history(db, "nist")[1:] == [
        ("101_1 p:1", "2", "3", "import", None),
        ("101_3 p:9", None, "1", "import", None),
    ]


def test_a_source_has_at_most_one_bulk_event(db, tmp_path):
    load_file(db, "qrels", qrels(tmp_path, "a.qrels", ["101_1 0 p:1 2"]), source="nist")
    with write(db):  # every label of the source removed (as an organizer might, by hand)
        db.conn.execute("DELETE FROM passage_labels WHERE source = 'nist'")
    load_file(db, "qrels", qrels(tmp_path, "b.qrels", ["101_1 0 p:1 4", "101_1 0 p:2 1"]), source="nist")
    assert history(db, "nist") == [
        ("*", None, "1", "import", "bulk"),
        ("101_1 p:1", "2", None, "import", "undo"),
        ("101_1 p:1", None, "4", "import", None),
        ("101_1 p:2", None, "1", "import", None),
    ]
    assert [(r["old"], r["new"]) for r in item_history(db, "nist", "101_1 p:1")] == [
        (None, "2"),
        ("2", None),
        (None, "4"),
    ]
    assert [(r["old"], r["new"]) for r in item_history(db, "nist", "101_1 p:2")] == [(None, "1")]


@pytest.mark.parametrize("source", ["team{2024}", "x{}", "llm:m{via}", "o'brien", "a');DROP/**/TABLE/**/pool;--"])
def test_source_names_with_braces_and_quotes_are_stored_verbatim(db, tmp_path, source):
    for name in ("a.qrels", "b.qrels"):  # the bulk path, then the row-by-row path
        load_file(db, "qrels", qrels(tmp_path, name, ["101_1 0 p:1 2", f"101_1 0 p:{len(name)} 1"]), source=source)
    assert db.execute("SELECT DISTINCT source FROM passage_labels").fetchall() == [(source,)]
    assert db.execute("SELECT COUNT(*) FROM pool").fetchone() == (2,)
    assert db.execute("PRAGMA foreign_key_check").fetchall() == []


def test_a_store_written_by_a_newer_version_is_refused(tmp_path):
    path = tmp_path / "new.db"
    open_db(path).conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    with pytest.raises(AssessError, match=r"new\.db: the store has schema version \d+, written by a newer version"):
        open_db(path)


def test_every_labels_history_is_recoverable_after_a_bulk_import(db, tmp_path):
    load_file(db, "qrels", qrels(tmp_path, "a.qrels", ["101_1 0 p:1 2", "101_1 0 p:2 0"]), source="nist")
    stamp = db.execute("SELECT at FROM label_history WHERE item = '*'").fetchone()[0]
    assert item_history(db, "nist", "101_1 p:2") == [
        {"at": stamp, "old": None, "new": "0", "mode": "import", "via": "bulk"}
    ]
    load_file(db, "qrels", qrels(tmp_path, "b.qrels", ["101_1 0 p:1 4", "101_2 0 p:5 1"]), source="nist")
    trail = item_history(db, "nist", "101_1 p:1")
    assert [(r["old"], r["new"], r["via"]) for r in trail] == [(None, "2", "bulk"), ("2", "4", None)]
    assert trail[0]["at"] == stamp
    assert [(r["old"], r["new"]) for r in item_history(db, "nist", "101_2 p:5")] == [(None, "1")]
    assert item_history(db, "nist", "101_9 p:0") == []
    # a label removed later keeps its imported value in the removal row
    with write(db):
        db.conn.execute("DELETE FROM passage_labels WHERE source = 'nist' AND passage_id = 'p:2'")
    assert [(r["old"], r["new"]) for r in item_history(db, "nist", "101_1 p:2")] == [(None, "0"), ("0", None)]


def test_foreign_keys_are_checked_again_after_an_import(db, tmp_path):
    load_file(db, "qrels", qrels(tmp_path, "a.qrels", ["101_1 0 p:1 2"]), source="nist")
    with pytest.raises(sqlite3.IntegrityError), write(db):
        db.conn.execute(
            "INSERT INTO passage_labels (source, turn_id, passage_id, grade, updated_at) "
            "VALUES ('nist', '101_1', 'never-imported:1', 1, 'now')"
        )


def test_a_refused_import_writes_nothing_and_keeps_the_triggers(db, tmp_path):
    before = triggers(db)
    rows, changes = (db.execute(f"SELECT COUNT(*) FROM {t}").fetchone() for t in ("passages", "label_history"))
    with pytest.raises(FormatError, match=r"b\.qrels:2: expected a turn id present in the store"):
        load_file(db, "qrels", qrels(tmp_path, "b.qrels", ["101_1 0 p:1 2", "999_9 0 p:2 1"]), source="nist")
    assert triggers(db) == before
    assert db.execute("SELECT COUNT(*) FROM passages").fetchone() == rows
    assert db.execute("SELECT COUNT(*) FROM label_history").fetchone() == changes
    assert db.execute("SELECT COUNT(*) FROM passage_labels").fetchone() == (0,)


def test_a_failure_inside_the_bulk_block_rolls_the_trigger_drop_back(db):
    before = triggers(db)
    with pytest.raises(RuntimeError), write(db), _history_trigger_off(db, "passage_labels"):
        assert "passage_labels_history_insert" not in triggers(db)
        raise RuntimeError("boom")
    assert triggers(db) == before
    with write(db):  # and it fires again
        db.conn.execute("INSERT INTO sources (name, kind, created_at) VALUES ('x', 'import', 'now')")
        db.conn.execute("INSERT INTO passages (id) VALUES ('p:1')")
        db.conn.execute(
            "INSERT INTO passage_labels (source, turn_id, passage_id, grade, via, updated_at) "
            "VALUES ('x', '101_1', 'p:1', 2, 'bulk', 'now')"
        )
    assert history(db, "x") == [("101_1 p:1", None, "2", "import", "bulk")]


def test_assessor_labels_still_get_one_history_row_each(db, tmp_path):
    load_file(db, "qrels", qrels(tmp_path, "a.qrels", ["101_1 0 p:1 2", "101_1 0 p:2 0"]), source="nist")
    name = queue.sign_in(db, "ann")
    queue.save_passage_label(db, name, "101_1", "p:1", 3)
    queue.save_passage_label(db, name, "101_1", "p:1", 1)
    assert history(db, "ann") == [("101_1 p:1", None, "3", "blind", "key"), ("101_1 p:1", "3", "1", "blind", "key")]
    assert queue.undo(db, name) is not None
    assert db.execute("SELECT grade FROM passage_labels WHERE source = 'ann'").fetchone() == (3,)


def schema_4_file(path, rows_sql: str = "") -> None:
    """A store file as schema 4 left it (migrations 1-4 only), with ``rows_sql`` run in it."""
    conn = sqlite3.connect(path, isolation_level=None)
    for number, script in enumerate(MIGRATIONS[:4], start=1):
        conn.executescript(script)
        conn.execute(f"PRAGMA user_version = {number}")
    conn.executescript(rows_sql)
    conn.close()


def test_schema_4_files_migrate_to_5(tmp_path):
    path = tmp_path / "old.db"
    schema_4_file(path)
    db = open_db(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) >= 5
    index = db.execute("SELECT sql FROM sqlite_master WHERE name = 'label_history_by_source'").fetchone()[0]
    assert index.endswith("label_history(source, label_table)")
    label_tables = ("passage_labels", "ptkb_labels", "ntr_labels", "response_labels")
    assert all("WHEN" not in triggers(db)[f"{t}_history_insert"] for t in label_tables)


def test_schema_5_keeps_the_pool_of_an_older_file_and_its_method_check(tmp_path):
    path = tmp_path / "old.db"
    schema_4_file(
        path,
        """
        INSERT INTO conversations (id, number) VALUES ('1', '1');
        INSERT INTO turns (id, conversation_id, turn_number, position, utterance) VALUES ('1_1', '1', 1, 0, 'u');
        INSERT INTO passages (id) VALUES ('p:1'), ('p:2');
        INSERT INTO pool (turn_id, passage_id, method, detail, best_rank, added_at)
            VALUES ('1_1', 'p:1', 'depth', 'bm25@1', 1, 't'), ('1_1', 'p:2', 'qrels', 'qrels:nist', NULL, 't');
        INSERT INTO sources (name, kind, created_at) VALUES ('nist', 'import', 't');
        INSERT INTO passage_labels (source, turn_id, passage_id, grade, mode, via, updated_at)
            VALUES ('nist', '1_1', 'p:2', 3, 'import', 'bulk', 't');
    """,
    )
    db = open_db(path)
    # schema-4 bulk label rows now say via NULL like any imported label; the history is untouched
    assert db.execute("SELECT grade, via FROM passage_labels").fetchall() == [(3, None)]
    assert db.execute("SELECT COUNT(*) FROM label_history").fetchone() == (0,)
    assert db.execute("SELECT * FROM pool ORDER BY passage_id").fetchall() == [
        ("1_1", "p:1", "depth", "bm25@1", 1, "t"),
        ("1_1", "p:2", "qrels", "qrels:nist", None, "t"),
    ]
    with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint failed"), write(db):
        db.conn.execute("INSERT INTO pool (turn_id, passage_id, method, added_at) VALUES ('1_1', 'p:1', 'x', 't')")
    assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
