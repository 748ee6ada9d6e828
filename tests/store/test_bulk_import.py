"""The fast qrels import: one history event per bulk import with every label's history still
recoverable, foreign keys and triggers exactly as before afterwards, and the schema-5 migration."""

from __future__ import annotations

import shutil
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assess.errors import AssessError, FormatError
from assess.services.loading import load_file
from store import open_db, queue, sources
from store.db import IntegrityError, run, value, write
from store.db import rows as query
from store.history import item_history
from store.labels import _history_trigger_off
from store.schema import MIGRATIONS
from tests.helpers import ROOT, snapshot

TOPICS = ROOT / "assets" / "demo" / "topics.json"


def q(db, sql: str, params: dict | None = None) -> list[tuple]:
    """The rows of a query on either engine, as tuples."""
    return [tuple(r.values()) for r in query(db, sql, params or {})]


def triggers(db) -> dict[str, str]:
    """Every trigger of the store: its SQL on SQLite; on PostgreSQL whether it is enabled ('O') or not ('D')."""
    if db.sqlite:
        return dict(q(db, "SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"))
    return dict(q(db, "SELECT tgname AS name, CAST(tgenabled AS TEXT) AS state FROM pg_trigger WHERE NOT tgisinternal"))


def insert_trigger_on(db, table: str) -> bool:
    """The table's insert-history trigger exists and fires (PostgreSQL: enabled, and this transaction's
    bulk setting does not name the table)."""
    name = f"{table}_history_insert"
    if name not in triggers(db) or triggers(db)[name] == "D":
        return False
    if db.sqlite:
        return True
    return q(db, "SELECT COALESCE(current_setting('assess.bulk_insert', true), '') AS t") != [(table,)]


def history(db, source):
    return q(
        db,
        "SELECT item, old_value, new_value, mode, via FROM label_history WHERE source = :source ORDER BY id",
        {"source": source},
    )


def foreign_keys_hold(db) -> bool:
    """SQLite: the foreign keys are on and every row satisfies them (PostgreSQL never lets them lapse)."""
    if not db.sqlite:
        return True
    return (
        db.raw.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        and not db.raw.execute("PRAGMA foreign_key_check").fetchall()
    )


def sql(db, statement: str) -> None:
    with write(db):
        run(db, statement)


@pytest.fixture
def db(store_target):
    db = open_db(store_target)
    load_file(db, "topics", TOPICS)
    yield db
    db.close()


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
    assert q(db, "SELECT turn_id, passage_id, grade, via FROM passage_labels WHERE source = 'nist' ORDER BY 1, 2") == [
        ("101_1", "p:1", 2, None),
        ("101_1", "p:2", 0, None),
        ("101_2", "p:3", 4, None),
    ]
    assert triggers(db) == before  # the insert trigger is back (SQLite: verbatim; PostgreSQL: enabled)
    assert foreign_keys_hold(db)

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
    sql(db, "DELETE FROM passage_labels WHERE source = 'nist'")  # as an organizer might, by hand
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
    assert q(db, "SELECT DISTINCT source FROM passage_labels") == [(source,)]
    assert q(db, "SELECT COUNT(*) FROM pool") == [(2,)]
    assert history(db, source)[0] == ("*", None, "2", "import", "bulk")
    assert foreign_keys_hold(db)


def test_a_store_written_by_a_newer_version_is_refused(tmp_path):
    path = tmp_path / "new.db"
    with open_db(path) as db:
        db.raw.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    with pytest.raises(AssessError, match=r"new\.db: the store has schema version \d+, written by a newer version"):
        open_db(path)


def test_every_labels_history_is_recoverable_after_a_bulk_import(db, tmp_path):
    load_file(db, "qrels", qrels(tmp_path, "a.qrels", ["101_1 0 p:1 2", "101_1 0 p:2 0"]), source="nist")
    stamp = value(db, "SELECT at FROM label_history WHERE item = '*'")
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
    sql(db, "DELETE FROM passage_labels WHERE source = 'nist' AND passage_id = 'p:2'")
    assert [(r["old"], r["new"]) for r in item_history(db, "nist", "101_1 p:2")] == [(None, "0"), ("0", None)]


def test_foreign_keys_are_checked_again_after_an_import(db, tmp_path):
    load_file(db, "qrels", qrels(tmp_path, "a.qrels", ["101_1 0 p:1 2"]), source="nist")
    with pytest.raises(IntegrityError):
        sql(
            db,
            "INSERT INTO passage_labels (source, turn_id, passage_id, grade, updated_at) "
            "VALUES ('nist', '101_1', 'never-imported:1', 1, 'now')",
        )


def test_a_refused_import_writes_nothing_and_keeps_the_triggers(db, tmp_path):
    before = triggers(db)
    rows, changes = (q(db, f"SELECT COUNT(*) FROM {t}") for t in ("passages", "label_history"))
    with pytest.raises(FormatError, match=r"b\.qrels:2: expected a turn id present in the store"):
        load_file(db, "qrels", qrels(tmp_path, "b.qrels", ["101_1 0 p:1 2", "999_9 0 p:2 1"]), source="nist")
    assert triggers(db) == before
    assert q(db, "SELECT COUNT(*) FROM passages") == rows
    assert q(db, "SELECT COUNT(*) FROM label_history") == changes
    assert q(db, "SELECT COUNT(*) FROM passage_labels") == [(0,)]


def test_a_failure_inside_the_bulk_block_rolls_the_trigger_drop_back(db):
    before = triggers(db)
    with pytest.raises(RuntimeError), write(db), _history_trigger_off(db, "passage_labels"):
        assert not insert_trigger_on(db, "passage_labels")
        raise RuntimeError("boom")
    assert triggers(db) == before and insert_trigger_on(db, "passage_labels")
    with write(db):  # and it fires again
        run(db, "INSERT INTO sources (name, kind, created_at) VALUES ('x', 'import', 'now')")
        run(db, "INSERT INTO passages (id) VALUES ('p:1')")
        run(
            db,
            "INSERT INTO passage_labels (source, turn_id, passage_id, grade, via, updated_at) "
            "VALUES ('x', '101_1', 'p:1', 2, 'bulk', 'now')",
        )
    assert history(db, "x") == [("101_1 p:1", None, "2", "import", "bulk")]


def test_assessor_labels_still_get_one_history_row_each(db, tmp_path):
    load_file(db, "qrels", qrels(tmp_path, "a.qrels", ["101_1 0 p:1 2", "101_1 0 p:2 0"]), source="nist")
    name = sources.sign_in(db, "ann")
    queue.save_passage_label(db, name, "101_1", "p:1", 3)
    queue.save_passage_label(db, name, "101_1", "p:1", 1)
    assert history(db, "ann") == [("101_1 p:1", None, "3", "blind", "key"), ("101_1 p:1", "3", "1", "blind", "key")]
    assert queue.undo(db, name) is not None
    assert q(db, "SELECT grade FROM passage_labels WHERE source = 'ann'") == [(3,)]


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
    assert db.raw.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) >= 5
    index = db.raw.execute("SELECT sql FROM sqlite_master WHERE name = 'label_history_by_source'").fetchone()[0]
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
    assert db.raw.execute("SELECT grade, via FROM passage_labels").fetchall() == [(3, None)]
    assert db.raw.execute("SELECT COUNT(*) FROM label_history").fetchone() == (0,)
    assert db.raw.execute("SELECT * FROM pool ORDER BY passage_id").fetchall() == [
        ("1_1", "p:1", "depth", "bm25@1", 1, "t"),
        ("1_1", "p:2", "qrels", "qrels:nist", None, "t"),
    ]
    with pytest.raises(IntegrityError, match="CHECK constraint failed"):
        sql(db, "INSERT INTO pool (turn_id, passage_id, method, added_at) VALUES ('1_1', 'p:1', 'x', 't')")
    assert db.raw.execute("PRAGMA foreign_key_check").fetchall() == []
    assert db.raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)


# ------------------------------------------------------------------------------------------- runs
# The run import streams: blocks go into a temporary table and SQL ranks them. It must agree with the
# in-memory ranking (parse_run + rank_run, the pre-streaming import) on every ranking, pool row and
# error, whatever the block boundaries; small blocks put several of them in every file.

_TAGS = st.sampled_from(["bm25", "dense", "r\u00e9rank"])
_PASSAGES = st.sampled_from(["d:1", "d:2", "d:10", "D:1", "\u00e9:1", "z", "a:b:c", "\u4e2d:3", "d:1x"])
_SCORES = st.sampled_from(["1", "2", "2.0", "0", "-0", "-0.0", "0.5", ".5", "-3.25", "1e300", "-1e-300", "7"])
_BLOCK = st.sampled_from([16, 40, 100, 4096])


def run_lines(draw_lines, turns):
    """Unique (tag, turn, passage) lines in the drawn order, as text."""
    seen, out = set(), []
    for tag, t, passage, rank, score in draw_lines:
        if (tag, turns[t], passage) not in seen:
            seen.add((tag, turns[t], passage))
            out.append(f"{turns[t]} Q0 {passage} {rank} {score} {tag}")
    return out


_LINES = st.lists(st.tuples(_TAGS, st.integers(0, 2), _PASSAGES, st.integers(0, 50), _SCORES), min_size=1, max_size=40)


def reference_import(pool: dict, rows, *, name, depth):
    """The pre-streaming import in memory: rankings by rank_run, pool rows in group order, ranks within."""
    from assess.formats import rank_run

    if name:
        rows = [r._replace(tag=name) for r in rows]
    rankings = {}
    for (tag, turn), items in rank_run(rows).items():
        for rank, r in enumerate(items, start=1):
            rankings[(tag, turn, r.passage_id)] = (rank, r.score)
            if rank <= depth:
                detail, best = pool.get((turn, r.passage_id), (None, None))
                here = f"{tag}@{rank}"
                if detail is None:
                    detail = here
                elif f" {here} " not in f" {detail} ":
                    detail = f"{detail} {here}"
                pool[(turn, r.passage_id)] = (detail, rank if best is None else min(best, rank))
    return rankings


def stored_rankings(db, tags) -> dict:
    return {
        (run, turn, passage): (rank, score)
        for run, turn, passage, rank, score in q(db, "SELECT run, turn_id, passage_id, rank, score FROM rankings")
        if run in tags
    }


def _topics_only(db) -> None:
    load_file(db, "topics", TOPICS)
    with write(db):
        for table in ("pool", "rankings", "runs", "passages"):
            run(db, f"DELETE FROM {table}")


@pytest.fixture(scope="module")
def topics_file(tmp_path_factory):
    """A SQLite store with the demo topics and no run, made once: each drawn example works on a copy."""
    path = tmp_path_factory.mktemp("topics") / "topics.db"
    with open_db(str(path)) as db:
        _topics_only(db)
    return path


def run_store(store_target, tmp, topics_file):
    """A store with the demo topics and no run for one drawn example: a copy of ``topics_file`` for SQLite, or
    the test's PostgreSQL database emptied of what an earlier example imported."""
    if store_target.endswith(".db"):
        target = str(tmp / "r.db")
        shutil.copyfile(topics_file, target)
        return open_db(target), target
    db = open_db(store_target)
    _topics_only(db)
    return db, store_target


def no_temporary_table_left(db) -> bool:
    if db.sqlite:
        return db.raw.execute("PRAGMA temp_store").fetchone() == (2,) and not q(
            db, "SELECT name FROM sqlite_temp_master"
        )
    return not q(db, "SELECT tablename FROM pg_tables WHERE tablename = 'run_lines'")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    first=_LINES,
    second=_LINES,
    depths=st.tuples(st.sampled_from([0, 1, 2, 3, 100]), st.sampled_from([1, 5])),
    rename=st.booleans(),
    block=_BLOCK,
)
def test_streamed_run_import_ranks_and_pools_as_the_in_memory_ranking(
    store_target, tmp_path_factory, topics_file, first, second, depths, rename, block
):
    from assess.formats import parse_run

    tmp = tmp_path_factory.mktemp("runs")
    db, _ = run_store(store_target, tmp, topics_file)
    turns = [r[0] for r in q(db, "SELECT id FROM turns ORDER BY id LIMIT 3")]
    pool: dict = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("assess.formats.reading.BLOCK_BYTES", block)
        for number, (drawn, depth) in enumerate(zip((first, second), depths)):
            path = tmp / f"{number}.run"
            path.write_text("".join(f"{line}\n" for line in run_lines(drawn, turns)))
            name = "merged" if rename and number == 1 and len({line[0] for line in drawn}) == 1 else None
            expected = reference_import(pool, parse_run(path), name=name, depth=depth)
            report = load_file(db, "run", path, depth=depth, name=name)
            tags = sorted({tag for tag, _turn, _passage in expected})
            assert report == {"runs": tags, "rankings": len(expected), "pooled": report["pooled"], "depth": depth}
            assert report["pooled"] == sum(rank <= depth for rank, _score in expected.values())
            assert stored_rankings(db, tags) == expected
    stored_pool = {
        (turn, passage): (detail, best)
        for turn, passage, method, detail, best in q(
            db, "SELECT turn_id, passage_id, method, detail, best_rank FROM pool"
        )
        if method == "depth"
    }
    assert stored_pool == pool
    assert no_temporary_table_left(db)  # SQLite: and temp_store MEMORY again, as the store opened it
    if db.sqlite:
        assert db.raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    db.close()


_FAULTS = st.lists(
    st.tuples(st.sampled_from(["repeat", "score", "fields", "turn", "rank"]), st.integers(0, 10**6)), max_size=3
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(drawn=_LINES, faults=_FAULTS, block=_BLOCK)
def test_run_errors_come_in_line_order_whatever_the_blocks(
    store_target, tmp_path_factory, topics_file, drawn, faults, block
):
    """The first bad line or repeat in the file is reported, else the first unknown turn; the store is unchanged."""
    from assess.formats import parse_run

    tmp = tmp_path_factory.mktemp("badruns")
    db, db_path = run_store(store_target, tmp, topics_file)
    turns = [r[0] for r in q(db, "SELECT id FROM turns ORDER BY id LIMIT 3")]
    lines = run_lines(drawn, turns)
    for kind, at in faults:
        fields = lines[at % len(lines)].split()
        if kind == "repeat":
            fields[4] = "9.5"
        elif kind == "score":
            fields[4] = "x"
        elif kind == "fields":
            fields = fields[:5]
        elif kind == "turn":
            fields[0] = "999_9"
        else:
            fields[3] = "-1"
        lines.insert(at % (len(lines) + 1), " ".join(fields))
    path = tmp / "bad.run"
    path.write_text("".join(f"{line}\n" for line in lines))
    # what reading the whole file first finds: the first bad line or repeat, else the first unknown turn
    expected, seen, unknown = None, {}, None
    for number, line in enumerate(lines, start=1):
        fields = line.split()
        if len(fields) != 6 or fields[4] == "x" or fields[3] == "-1":
            expected = (
                number,
                "expected 6 fields"
                if len(fields) != 6
                else "expected an integer rank"
                if fields[3] == "-1"
                else "expected a numeric score",
            )
            break
        first = seen.setdefault((fields[5], fields[0], fields[2]), number)
        if first != number:
            expected = (number, f"expected each passage once per turn (it is on line {first})")
            break
        if fields[0] == "999_9" and unknown is None:
            unknown = (number, "expected a turn id present in the store")
    expected = expected or unknown
    before = snapshot(db_path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("assess.formats.reading.BLOCK_BYTES", block)
        if expected is None:
            assert load_file(db, "run", path)["rankings"] == len(lines)
            return
        with pytest.raises(FormatError) as caught:
            load_file(db, "run", path)
        if unknown is None or expected != unknown:  # the pure reader finds the same first bad line
            with pytest.raises(FormatError) as pure:
                parse_run(path)
            assert str(pure.value) == str(caught.value)
    assert str(caught.value).startswith(f"{path}:{expected[0]}: {expected[1]}"), (str(caught.value), expected)
    assert snapshot(db_path) == before
    assert no_temporary_table_left(db)
    db.close()
