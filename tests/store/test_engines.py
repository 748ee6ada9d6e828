"""Both engines: PostgreSQL's schema equals SQLite's after every migration, its triggers write the same
history rows, its guards refuse what SQLite's refuse, and concurrent first opens migrate once."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

from assess.tasks import Task
from store import labels
from store.db import IntegrityError, open_db, rows, run, schema_version, value, write
from store.engines import _int_prefix
from store.schema import MIGRATIONS
from store.schema.postgres import history_insert_trigger, migrations_from

AT = "2024-05-01T10:00:00.000Z"
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
PG_ONLY_COLUMNS = {("conversations", "rowid")}
PG_ONLY_TABLES = {"assess_schema"}


def seed(db) -> None:
    """The few rows every label needs, in portable SQL."""
    with write(db):
        for sql in (
            "INSERT INTO conversations (id, number, title, collection, year) VALUES ('9-1', '9-1', 'c', 'demo', 2023)",
            "INSERT INTO turns (id, conversation_id, turn_number, position) VALUES ('9-1_1', '9-1', 1, 0)",
            "INSERT INTO ptkb_statements (conversation_id, statement_id, text) VALUES ('9-1', '1', 'likes tea')",
            "INSERT INTO passages (id, doc_id, text) VALUES ('doc:1', 'doc', 'some text')",
            "INSERT INTO sources (name, kind, created_at) VALUES ('alice', 'assessor', :at)",
            "INSERT INTO runs (name, kind, imported_at) VALUES ('bm25', 'response', :at)",
        ):
            run(db, sql, {"at": AT})


def history(db) -> list[tuple]:
    return [
        tuple(r.values())
        for r in rows(
            db,
            "SELECT label_table, source, item, old_value, new_value, mode, via, at FROM label_history ORDER BY id",
        )
    ]


# ------------------------------------------------------------------------------------------- schema


def _sqlite_schema(path: Path) -> dict:
    db = open_db(path)
    try:
        raw = db.raw
        tables = [
            r[0]
            for r in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        ]
        out = {"columns": {}, "keys": {}, "fks": set(), "indexes": set(), "triggers": set()}
        for table in tables:
            info = raw.execute(f"PRAGMA table_info({table})").fetchall()  # cid, name, type, notnull, default, pk
            pk = tuple(r[1] for r in sorted((r for r in info if r[5]), key=lambda r: r[5]))
            out["columns"][table] = [
                (r[1], r[2], bool(r[3]) or r[1] in pk, None if r[4] is None else str(r[4])) for r in info
            ]
            keys = {(pk, True, False)}
            for _, name, unique, _origin, partial in raw.execute(f"PRAGMA index_list({table})").fetchall():
                cols = tuple(r[2] for r in raw.execute(f"PRAGMA index_info({name})").fetchall())
                keys.add((cols, bool(unique), bool(partial)))
            out["keys"][table] = keys
            fks: dict[int, list] = {}
            for fk_id, _seq, target, source_col, target_col, _upd, on_delete, _m in raw.execute(
                f"PRAGMA foreign_key_list({table})"
            ).fetchall():
                fks.setdefault(fk_id, [target, on_delete, [], []])
                fks[fk_id][2].append(source_col)
                fks[fk_id][3].append(target_col)
            out["fks"] |= {(table, tuple(s), target, tuple(t), on_delete) for target, on_delete, s, t in fks.values()}
        out["indexes"] = {
            r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
        }
        out["triggers"] = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
        return out
    finally:
        db.close()


_PG_TYPES = {"text": "TEXT", "integer": "INTEGER", "bigint": "INTEGER", "double precision": "REAL"}
_PG_ON_DELETE = {"a": "NO ACTION", "c": "CASCADE", "r": "RESTRICT", "n": "SET NULL", "d": "SET DEFAULT"}


def _pg_schema(url: str) -> dict:
    db = open_db(url)
    try:
        raw = db.raw
        out = {"columns": {}, "keys": {}, "fks": set(), "indexes": set(), "triggers": set(), "deferrable": set()}
        for table, name, data_type, nullable, default in raw.execute(
            "SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns "
            "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
        ).fetchall():
            if default is not None:
                default = re.sub(r"::[a-z ]+$", "", default)
            out["columns"].setdefault(table, []).append((name, _PG_TYPES[data_type], nullable == "NO", default))
        for table, cols, unique, partial, primary in raw.execute(
            "SELECT c.relname, array(SELECT CASE WHEN k = 0 THEN NULL ELSE a.attname END "
            "  FROM unnest(i.indkey) WITH ORDINALITY AS u(k, n) "
            "  LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = u.k ORDER BY u.n), "
            "i.indisunique, i.indpred IS NOT NULL, i.indisprimary "
            "FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid "
            "JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = current_schema()"
        ).fetchall():
            out["keys"].setdefault(table, set()).add((tuple(cols), unique, partial))
        out["indexes"] = {
            r[0] for r in raw.execute("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")
        }
        for table, cols, target, target_cols, on_delete, deferrable, deferred in raw.execute(
            "SELECT c.conrelid::regclass::text, "
            "array(SELECT attname FROM unnest(c.conkey) WITH ORDINALITY u(k, n) "
            "  JOIN pg_attribute ON attrelid = c.conrelid AND attnum = u.k ORDER BY u.n), "
            "c.confrelid::regclass::text, "
            "array(SELECT attname FROM unnest(c.confkey) WITH ORDINALITY u(k, n) "
            "  JOIN pg_attribute ON attrelid = c.confrelid AND attnum = u.k ORDER BY u.n), "
            "c.confdeltype, c.condeferrable, c.condeferred FROM pg_constraint c WHERE c.contype = 'f'"
        ).fetchall():
            out["fks"].add((table, tuple(cols), target, tuple(target_cols), _PG_ON_DELETE[on_delete]))
            if deferrable and not deferred:
                out["deferrable"].add((table, tuple(cols)))
        out["triggers"] = {
            r[0]
            for r in raw.execute(
                "SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                "JOIN pg_namespace s ON s.oid = c.relnamespace WHERE NOT t.tgisinternal AND s.nspname = current_schema()"
            )
        }
        return out
    finally:
        db.close()


@pytest.fixture(scope="module")
def schemas(tmp_path_factory, pg_cluster) -> tuple[dict, dict]:
    name = pg_cluster.create_database()
    try:
        return _sqlite_schema(tmp_path_factory.mktemp("schema") / "s.db"), _pg_schema(pg_cluster.url(name))
    finally:
        pg_cluster.drop_database(name)


def test_pg_tables_and_columns_equal_sqlite(schemas):
    lite, pg = schemas
    assert set(pg["columns"]) - PG_ONLY_TABLES == set(lite["columns"])
    for table, columns in lite["columns"].items():
        pg_columns = [c for c in pg["columns"][table] if (table, c[0]) not in PG_ONLY_COLUMNS]
        assert [c[0] for c in pg_columns] == [c[0] for c in columns], table
        assert pg_columns == columns, table  # names, types, NOT NULL, defaults


def test_pg_keys_indexes_and_foreign_keys_equal_sqlite(schemas):
    lite, pg = schemas
    for table, keys in lite["keys"].items():
        pg_keys = {k for k in pg["keys"][table] if "rowid" not in k[0]}
        assert pg_keys == keys, table
    assert lite["indexes"] <= pg["indexes"]
    assert pg["fks"] == lite["fks"]
    assert pg["deferrable"] == {(t, cols) for t, cols, *_ in pg["fks"]}  # every FK: DEFERRABLE INITIALLY IMMEDIATE


def test_pg_triggers_match_sqlite(schemas):
    lite, pg = schemas
    # SQLite's INSERT OR REPLACE guard has no PostgreSQL counterpart (no such statement there);
    # PostgreSQL also refuses TRUNCATE of the history.
    assert pg["triggers"] == lite["triggers"] - {"label_history_no_replace"} | {"label_history_no_truncate"}


def test_pg_store_has_the_latest_schema_version(pg_url):
    db = open_db(pg_url)
    try:
        assert schema_version(db) == len(MIGRATIONS)
        assert value(db, "SELECT COUNT(*) AS n FROM assess_schema") == 1
        assert [v for v, _ in migrations_from(0)][-1] == len(MIGRATIONS)
        assert migrations_from(len(MIGRATIONS)) == []
    finally:
        db.close()
    again = open_db(pg_url)  # reopening migrates nothing
    try:
        assert value(again, "SELECT COUNT(*) AS n FROM assess_schema") == 1
    finally:
        again.close()


# ------------------------------------------------------------------------------------------ history


def test_a_saved_grade_is_in_the_history_alike_on_both_engines(store_target):
    db = open_db(store_target)
    try:
        seed(db)
        item = ("9-1_1", "doc:1")
        labels.save(db, Task.PASSAGE, "alice", item, 2, mode="blind", via="key", at=AT)
        labels.save(db, Task.PASSAGE, "alice", item, 3, mode="blind", via="key", at=AT)
        labels.save(db, Task.PASSAGE, "alice", item, None, mode="shown", via="click", at=AT)
        labels.delete(db, Task.PASSAGE, "alice", item)
        found = history(db)
    finally:
        db.close()
    assert [r[:7] for r in found] == [
        ("passage", "alice", "9-1_1 doc:1", None, "2", "blind", "key"),
        ("passage", "alice", "9-1_1 doc:1", "2", "3", "blind", "key"),
        ("passage", "alice", "9-1_1 doc:1", "3", "cannot-judge", "shown", "click"),
        ("passage", "alice", "9-1_1 doc:1", "cannot-judge", None, "shown", "undo"),
    ]
    assert [r[7] for r in found[:3]] == [AT] * 3
    assert STAMP.match(found[3][7])


TRICKY = 'a "quoted" \\ back\\slash\nnew\tline\r\x01\x1f é ✓ 𝄞 </script>'


def _write_every_history_table(db) -> None:
    """Insert, change and delete rows of every table with history triggers (portable SQL)."""
    seed(db)
    steps = [
        # labels of the four tasks
        "INSERT INTO passage_labels (source, turn_id, passage_id, grade, mode, via, updated_at) "
        "VALUES ('alice', '9-1_1', 'doc:1', NULL, 'import', NULL, :at)",
        "UPDATE passage_labels SET note = 'n', via = 'ui' WHERE source = 'alice'",  # a note alone is recorded
        "UPDATE passage_labels SET mode = 'blind' WHERE source = 'alice'",  # nothing recorded
        "INSERT INTO ptkb_labels (source, turn_id, conversation_id, statement_id, relevant, mode, via, updated_at) "
        "VALUES ('alice', '9-1_1', '9-1', '1', 2, 'blind', 'key', :at)",
        "UPDATE ptkb_labels SET relevant = 0 WHERE source = 'alice'",
        "DELETE FROM ptkb_labels",
        "INSERT INTO nuggets (source, turn_id, key, text, relevance, passage_id, start_char, end_char, "
        "created_at, span_method) VALUES ('alice', '9-1_1', '[1]', :tricky, NULL, 'doc:1', 0, 4, :at, 'selected')",
        "INSERT INTO nuggets (source, turn_id, key, text, relevance, created_at) "
        "VALUES ('alice', '9-1_1', '[2]', 'plain', 2, :at)",
        "UPDATE nuggets SET span_method = 'typed' WHERE key = '[2]'",  # not part of the value: nothing recorded
        "UPDATE nuggets SET relevance = 3, text = :tricky WHERE key = '[2]'",
        "INSERT INTO ntr_labels (source, nugget_id, run, turn_id, match, mode, via, updated_at) "
        "VALUES ('alice', 1, 'bm25', '9-1_1', 1, 'blind', 'key', :at)",
        "UPDATE ntr_labels SET match = 0, updated_at = :at",
        "DELETE FROM ntr_labels",
        "INSERT INTO response_labels (source, run, turn_id, criterion, value, mode, via, updated_at) "
        "VALUES ('alice', 'bm25', '9-1_1', 'relevance', -1, 'blind', 'key', :at)",
        "UPDATE response_labels SET value = 4",
        "INSERT INTO nugget_duplicates (nugget_a, nugget_b, turn_id, source, score_ab, updated_at) "
        "VALUES (1, 2, '9-1_1', 'alice', 0.5, :at)",  # no decision: nothing recorded
        "UPDATE nugget_duplicates SET decision = 'same', decided_by = 'bob'",
        "DELETE FROM nugget_duplicates",
        "INSERT INTO gold_responses (source, turn_id, text, nuggets_used, updated_at) "
        "VALUES ('alice', '9-1_1', :tricky, NULL, :at)",
        "UPDATE gold_responses SET nuggets_used = '[1, 2]'",
        "DELETE FROM gold_responses",
        "DELETE FROM nuggets WHERE key = '[1]'",
        "DELETE FROM passage_labels",
    ]
    for sql in steps:
        with write(db):
            run(db, sql, {"at": AT, "tricky": TRICKY})


def test_every_history_trigger_writes_the_same_rows_on_both_engines(tmp_path, pg_url):
    found = {}
    for engine, target in (("sqlite", tmp_path / "h.db"), ("postgresql", pg_url)):
        db = open_db(target)
        try:
            _write_every_history_table(db)
            found[engine] = history(db)
        finally:
            db.close()
    lite, pg = found["sqlite"], found["postgresql"]
    assert len(lite) == 20
    assert [r[:7] for r in pg] == [r[:7] for r in lite]  # JSON values included, character for character
    for (_, _, _, _, _, _, _, at_lite), (_, _, _, _, _, _, _, at_pg) in zip(lite, pg):
        assert (at_lite == AT) == (at_pg == AT)
        assert STAMP.match(at_pg) and STAMP.match(at_lite)


def test_bulk_import_switch_of_the_insert_history_trigger(pg_url):
    db = open_db(pg_url)
    try:
        seed(db)
        with write(db):
            run(db, history_insert_trigger("passage_labels", False))
            run(
                db,
                "INSERT INTO passage_labels (source, turn_id, passage_id, grade, updated_at) "
                "VALUES ('alice', '9-1_1', 'doc:1', 1, :at)",
                {"at": AT},
            )
            run(db, history_insert_trigger("passage_labels", True))
        assert history(db) == []
        with write(db):
            run(db, "UPDATE passage_labels SET grade = 2")
        assert [r[3:5] for r in history(db)] == [("1", "2")]
    finally:
        db.close()
    with pytest.raises(ValueError):
        history_insert_trigger("label_history", False)


# ------------------------------------------------------------------------------------------- guards


def test_history_refuses_update_delete_and_truncate(store_target):
    db = open_db(store_target)
    try:
        seed(db)
        with write(db):
            run(
                db,
                "INSERT INTO passage_labels (source, turn_id, passage_id, grade, mode, via, updated_at) "
                "VALUES ('alice', '9-1_1', 'doc:1', 2, 'blind', 'key', :at)",
                {"at": AT},
            )
        before = history(db)
        assert len(before) == 1
        refused = ["UPDATE label_history SET new_value = '4'", "DELETE FROM label_history"]
        if not db.sqlite:
            refused.append("TRUNCATE label_history")
        for sql in refused:
            with pytest.raises(IntegrityError, match="label_history is append-only"), write(db):
                run(db, sql)
        assert history(db) == before
    finally:
        db.close()


def test_crowd_answers_refuse_updates(store_target):
    db = open_db(store_target)
    try:
        seed(db)
        with write(db):
            for sql in (
                "INSERT INTO crowd_studies (name, task, source, config, guideline, secret, created_at) "
                "VALUES ('s', 'response', 'crowd:s', '{}', '{}', 'k', :at)",
                "INSERT INTO crowd_items (id, study, turn_id, run, criterion) "
                "VALUES (1, 's', '9-1_1', 'bm25', 'relevance')",
                "INSERT INTO crowd_batches (id, study, number, label) VALUES (1, 's', 1, 'b1')",
                "INSERT INTO crowd_workers (study, worker, platform, first_seen) VALUES ('s', 'w', 'direct', :at)",
                "INSERT INTO crowd_assignments (id, study, worker, batch_id, started_at, last_seen) "
                "VALUES (1, 's', 'w', 1, :at, :at)",
                "INSERT INTO crowd_answers (assignment_id, item_id, value, answered_at) VALUES (1, 1, 2, :at)",
            ):
                run(db, sql, {"at": AT})
        with pytest.raises(IntegrityError, match="crowd answers are kept as first given"), write(db):
            run(db, "UPDATE crowd_answers SET value = 3")
        assert value(db, "SELECT value FROM crowd_answers") == 2
    finally:
        db.close()


# ------------------------------------------------------------------------------------------ helpers


@pytest.mark.parametrize(
    "text",
    ["9-1", "10-1", "  42abc", "\t-7x", "+3", "abc", "", "-", "123456789012345678901", "007", "1.5", None],
)
def test_int_prefix_is_the_same_on_both_engines(store_target, text):
    db = open_db(store_target)
    try:
        assert value(db, "SELECT int_prefix(:t) AS n", {"t": text}) == _int_prefix(text)
    finally:
        db.close()


def test_conversations_keep_their_insertion_order_by_rowid(store_target):
    db = open_db(store_target)
    try:
        with write(db):
            for cid in ("b", "a", "c"):
                run(db, "INSERT INTO conversations (id, number) VALUES (:id, :id)", {"id": cid})
        assert [r["id"] for r in rows(db, "SELECT c.id FROM conversations c ORDER BY c.rowid")] == ["b", "a", "c"]
    finally:
        db.close()


# ---------------------------------------------------------------------------------------- migration


def test_concurrent_first_opens_migrate_once(pg_url):
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []
    versions: list[int] = []

    def opener():
        try:
            barrier.wait()
            db = open_db(pg_url)
            try:
                versions.append(schema_version(db))
            finally:
                db.close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert versions == [len(MIGRATIONS)] * 4
    db = open_db(pg_url, migrate=False)
    try:
        assert value(db, "SELECT COUNT(*) AS n FROM assess_schema") == 1
    finally:
        db.close()
