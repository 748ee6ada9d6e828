"""Moving a store between engines, and the faults of a server database: an unreachable URL, a restart in
the middle of a judging session, a copy into a store that is not empty."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import sqlalchemy as sa

from assess.services.loading import load_demo
from store import labels, open_db
from store.db import StoreUnavailable, rows
from store.sources import ensure_source
from tests.helpers import ROOT, run_cli, snapshot


def judge(db, turn_id: str, passage_id: str, grade: int) -> None:
    """A key press of the assessor amy on the judge page."""
    ensure_source(db, "amy", "assessor")
    labels.save(db, "passage", "amy", (turn_id, passage_id), grade, mode="blind", via="key")


def table_rows(target) -> dict[str, list]:
    """Every row of every table, as sorted lists of tuples (conversations with their insertion order)."""
    out = {}
    with open_db(target) as db:
        names = sa.inspect(db.sa).get_table_names()
        for name in sorted(set(names) - {"assess_schema"}):
            got = rows(db, f'SELECT * FROM "{name}"')
            out[name] = sorted((tuple((k, v) for k, v in sorted(r.items()) if k != "rowid") for r in got), key=repr)
        out["conversation order"] = [r["id"] for r in rows(db, "SELECT id FROM conversations c ORDER BY c.rowid")]
    return out


def test_copy_sqlite_to_postgresql_and_back_keeps_every_row_and_the_history(tmp_path, pg_url):
    first, back = tmp_path / "first.db", tmp_path / "back.db"
    with open_db(first) as db:
        load_demo(db)
        judge(db, "101_1", "demo-doc-001:0", 3)
        judge(db, "101_1", "demo-doc-001:0", 2)
    there = run_cli("copy", "--from", first, "--to", pg_url, "--json", check=True)
    copied = json.loads(there.stdout)
    assert copied["label_history"] > 500 and copied["passage_labels"] > 200
    run_cli("copy", "--from", pg_url, "--to", back, check=True)
    original, on_pg, returned = table_rows(first), table_rows(pg_url), table_rows(back)
    assert original == returned
    assert {k: len(v) for k, v in on_pg.items()} == {k: len(v) for k, v in original.items()}
    assert on_pg["label_history"] == original["label_history"]  # same ids, items, values, times
    assert on_pg["conversation order"] == original["conversation order"] == ["101", "102"]
    stats = [run_cli("stats", "--json", db=t, check=True).stdout for t in (first, pg_url, back)]
    assert stats[0] == stats[1] == stats[2]
    # Labels written after the copy get new history ids after the copied ones, on PostgreSQL too.
    with open_db(pg_url) as db:
        judge(db, "101_1", "demo-doc-001:0", 4)
        top = rows(db, "SELECT id, old_value, new_value FROM label_history ORDER BY id DESC LIMIT 1")[0]
    assert top == {"id": copied["label_history"] + 1, "old_value": "2", "new_value": "4"}


def test_copy_into_a_store_that_is_not_empty_is_refused_and_changes_nothing(tmp_path, store_target):
    source = tmp_path / "source.db"
    with open_db(source) as db:
        load_demo(db)
    with open_db(store_target) as db:
        load_demo(db)
    before = snapshot(store_target)
    proc = run_cli("copy", "--from", source, "--to", store_target)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "the target store is not empty (conversations: 2 rows" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert snapshot(store_target) == before


def test_an_unreachable_database_url_is_one_line_without_the_password():
    url = "postgresql://campaign:s3cret-pw@127.0.0.1:9/assess"  # nothing listens on port 9
    for argv in (["stats", "--json"], ["init"], ["users", "list"]):
        proc = run_cli(*argv, db=url, timeout=60)
        assert proc.returncode == 2, (argv, proc.stdout, proc.stderr)
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert "s3cret-pw" not in proc.stderr + proc.stdout
        assert proc.stderr.startswith("error: postgresql://campaign:***@127.0.0.1:9/assess: ")


def test_a_server_restart_in_a_judging_session_loses_no_label(pg_cluster, pg_url):
    from tests import pg

    db = open_db(pg_url)
    load_demo(db)
    first, second = (
        r["passage_id"]
        for r in rows(db, "SELECT passage_id FROM pool WHERE turn_id = '101_1' ORDER BY passage_id LIMIT 2")
    )
    judge(db, "101_1", first, 3)
    pg.restart(pg_cluster)  # the store's connection is now closed by the server
    # The next key press reconnects (nothing of it had been sent) and is saved.
    judge(db, "101_1", second, 1)
    pg.restart(pg_cluster)
    assert labels.values(db, "passage", "amy") == {("101_1", first): 3, ("101_1", second): 1}
    history = rows(db, "SELECT item, new_value FROM label_history WHERE source = 'amy' ORDER BY id")
    assert history == [{"item": f"101_1 {first}", "new_value": "3"}, {"item": f"101_1 {second}", "new_value": "1"}]
    db.close()


def test_a_server_that_stays_down_is_a_plain_message_and_nothing_is_half_written(pg_cluster, pg_url):
    db = open_db(pg_url)
    load_demo(db)
    before = labels.values(db, "passage", "amy")
    pg_cluster.stop("fast")
    try:
        with pytest.raises(StoreUnavailable, match="cannot be reached; nothing was saved"):
            judge(db, "101_1", "demo-doc-001:0", 3)
    finally:
        pg_cluster.start()
    assert labels.values(db, "passage", "amy") == before
    db.close()


def test_the_judge_page_says_a_key_press_was_not_saved_while_the_server_is_down(pg_cluster, pg_url, monkeypatch):
    from tests.helpers import open_app

    with open_db(pg_url) as db:
        load_demo(db)
    monkeypatch.setenv("ASSESS_DB", pg_url)
    monkeypatch.delenv("ASSESS_OPEN", raising=False)
    at = open_app("pages/judge.py", assessor="amy")
    pg_cluster.stop("fast")
    try:
        at.button(key="g3").click().run()
        assert not at.exception, at.exception
        shown = [e.value for e in at.error]
        assert any(m.startswith("NOT SAVED: the store cannot be reached; nothing was saved") for m in shown), shown
        assert any("The store cannot be reached" in m for m in shown), shown
        assert not any("127.0.0.1" in m or "postgresql" in m for m in shown), shown  # nothing about the store
    finally:
        pg_cluster.start()
    with open_db(pg_url) as db:
        assert labels.values(db, "passage", "amy") == {}
    at.run()  # the page comes back with the server; the same key press now saves
    at.button(key="g3").click().run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    with open_db(pg_url) as db:
        assert list(labels.values(db, "passage", "amy").values()) == [3]


@pytest.mark.parametrize(
    "url, shown",
    [
        ("postgresql://campaign:s3cret-pw@127.0.0.1:9/assess", "postgresql://campaign:***@127.0.0.1:9/assess"),
        ("postgresql://campaign@127.0.0.1:9/assess?password=s3cret-pw", "postgresql://campaign@127.0.0.1:9/assess"),
        ("POSTGRESQL+psycopg://campaign:s3cret-pw@127.0.0.1:9/assess", "postgresql://campaign:***@127.0.0.1:9/assess"),
    ],
)
def test_a_password_in_any_url_form_is_never_shown(url, shown, tmp_path):
    from store.db import display

    assert display(url) == shown
    proc = run_cli("stats", db=url, timeout=60)
    assert proc.returncode == 2 and "s3cret-pw" not in proc.stderr + proc.stdout, proc.stderr


def test_a_url_of_another_engine_is_refused_and_creates_nothing(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "assess", "init", "--db", "mysql://root:s3cret-pw@localhost/assess"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "a store is a SQLite file (or sqlite:///FILE) or a postgresql:// URL" in proc.stderr
    assert "s3cret-pw" not in proc.stderr and list(tmp_path.iterdir()) == []


def test_a_nul_character_in_imported_text_is_refused_with_its_line(tmp_path, store_target):
    passages = tmp_path / "passages.jsonl"
    passages.write_text('{"id": "d:1", "contents": "fine"}\n{"id": "d:2", "contents": "bad \\u0000 text"}\n')
    with open_db(store_target) as db:
        load_demo(db)
    before = snapshot(store_target)
    proc = run_cli("import", "passages", passages, db=store_target)
    assert proc.returncode == 2, proc.stderr
    assert (
        proc.stderr
        == f"error: {passages}:2: expected one JSON object per line (text without NUL characters), found U+0000 (a NUL character)\n"
    )
    assert snapshot(store_target) == before


def test_open_stores_hold_no_postgresql_connection_between_units_of_work(pg_url):
    """An app process opens a store per script run and keeps some alive in callbacks: on PostgreSQL they
    share the process's small pool, each taking a connection only for a statement or a transaction."""
    from store.db import each, value, write

    stores = [open_db(pg_url) for _ in range(60)]  # more than the pool may ever hold (5 + 15)
    pool = stores[0].sa.engine.pool
    stores[0].release()
    for db in stores:
        with write(db):
            ensure_source(db, "amy", "assessor")
        assert value(db, "SELECT COUNT(*) AS n FROM sources") == 1
    reading = each(stores[0], "SELECT name FROM sources")
    assert next(reading) == {"name": "amy"}
    assert pool.checkedout() == 1  # the result set being read keeps its connection ...
    assert list(reading) == []
    assert pool.checkedout() == 0  # ... until it is read to the end
    for db in stores:
        db.close()
