"""A PostgreSQL store with a campaign's two roles (docs/deploy.md): the owner migrates, the app role reads and
writes rows but can neither change the schema nor get around the label history."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import psycopg
import pytest

from assess.errors import AssessError
from assess.services.loading import load_demo, load_file
from store import labels, open_db
from store.db import app_roles, owns_store, run, schema_version, write
from store.db import rows as query
from store.history import item_history
from store.roles import grant_app_role
from store.schema import HISTORY_TABLES, MIGRATIONS
from store.schema.postgres import ANNOTATION_TABLES, history_insert_trigger
from store.schema.roles import APP_DELETES, APP_UPDATES, LABEL_TABLES, READ_ONLY
from store.sources import ensure_source
from tests.helpers import ROOT, run_cli

DEMO = ROOT / "assets" / "demo"
LABEL = (
    "INSERT INTO passage_labels (source, turn_id, passage_id, grade, mode, updated_at) "
    "VALUES ('amy', '101_1', 'demo-doc-001:0', 3, 'blind', '2026-11-26T00:00:00.000Z')"
)


def q(db, sql: str, params: dict | None = None) -> list[tuple]:
    return [tuple(r.values()) for r in query(db, sql, params or {})]


def history(db) -> list[tuple]:
    """The history of the sources the tests write (the topics' own PTKB labels aside)."""
    return q(
        db,
        "SELECT label_table, source, item, old_value, new_value, via FROM label_history "
        "WHERE source IN ('amy', 'nist') ORDER BY id",
    )


@pytest.fixture
def roles(pg_roles):
    """The two roles, the store migrated by the owner and the app role granted (as ``init --app-role`` does)."""
    with open_db(pg_roles.owner_url) as db:
        assert grant_app_role(db, pg_roles.app) == []
    return pg_roles


@pytest.fixture
def app(roles):
    """The app role's store, with the demo topics and an assessor source."""
    db = open_db(roles.app_url)
    load_file(db, "topics", DEMO / "topics.json")
    load_file(db, "passages", DEMO / "passages.jsonl")
    ensure_source(db, "amy", "assessor")
    yield db
    db.close()


def app_connection(roles) -> psycopg.Connection:
    return psycopg.connect(roles.app_url, autocommit=True)


# -------------------------------------------------------------------------------------------- migrating


def test_the_app_role_cannot_create_the_schema_and_is_told_to_use_the_owner(pg_roles):
    with pytest.raises(AssessError) as refused:
        open_db(pg_roles.app_url)
    message = str(refused.value)
    assert "\n" not in message and "does not own the store" in message
    assert "python -m assess init --db OWNER_URL" in message and "password" not in message
    proc = run_cli("init", db=pg_roles.app_url)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "the owner role's URL" in proc.stderr
    with open_db(pg_roles.owner_url, migrate=False) as db:
        assert schema_version(db) == 0  # nothing was created


def test_init_as_the_owner_with_an_app_role_gives_the_app_what_it_needs(pg_roles):
    proc = run_cli("init", "--app-role", pg_roles.app, db=pg_roles.owner_url, check=True)
    assert f"the role {pg_roles.app} may read and write rows, not change the schema" in proc.stdout
    assert proc.stderr == ""
    with open_db(pg_roles.app_url) as db:  # no migration left for the app role
        assert schema_version(db) == len(MIGRATIONS)
        assert not owns_store(db)
        assert app_roles(db) == [pg_roles.app]
    assert run_cli("stats", "--json", db=pg_roles.app_url, check=True).stdout.startswith("{")


def test_a_migration_the_app_role_cannot_run_is_one_line_naming_the_owner(roles):
    with open_db(roles.owner_url) as db, write(db):
        run(db, "UPDATE assess_schema SET version = :v", {"v": len(MIGRATIONS) - 1})  # as before the last one
    with pytest.raises(AssessError, match=r"schema is at version \d+ and this workbench needs \d+, but the role"):
        open_db(roles.app_url)
    proc = run_cli("stats", db=roles.app_url)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "init --db OWNER_URL" in proc.stderr


def test_a_later_migration_by_the_owner_gives_the_app_role_its_privileges_again(roles):
    """A migration run again by the owner re-grants the app roles granted before (tables a migration adds reach
    them without naming the role again); the last migration is written to run twice."""
    with open_db(roles.owner_url) as db, write(db):
        run(db, "UPDATE assess_schema SET version = :v", {"v": len(MIGRATIONS) - 1})  # as before the last one
        run(db, f"REVOKE ALL ON settings FROM {roles.app}")
    with app_connection(roles) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("SELECT * FROM settings")
    run_cli("init", db=roles.owner_url, check=True)
    with app_connection(roles) as conn:
        conn.execute("INSERT INTO settings (key, value) VALUES ('k', 'v')")
        conn.execute("UPDATE settings SET value = 'w' WHERE key = 'k'")


@pytest.mark.parametrize("whom", ["owner", "superuser", "missing"])
def test_the_app_role_must_not_have_the_owners_privileges(roles, whom):
    role = {"owner": roles.owner, "superuser": "postgres", "missing": "nobody_here"}[whom]
    with open_db(roles.owner_url) as db, pytest.raises(AssessError) as refused:
        grant_app_role(db, role)
    assert ("no role" if whom == "missing" else "could rewrite the history") in str(refused.value)
    proc = run_cli("init", "--app-role", role, db=roles.owner_url)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


def test_app_role_is_for_postgresql_only_and_creates_no_file(tmp_path):
    target = tmp_path / "store.db"
    proc = run_cli("init", "--app-role", "assess_app", db=target)
    assert proc.returncode == 2 and "--app-role is for a PostgreSQL store" in proc.stderr
    assert not target.exists()


# ----------------------------------------------------------------------------- what the app role is refused

REFUSED = {
    "disable a history trigger": "ALTER TABLE passage_labels DISABLE TRIGGER passage_labels_history_insert",
    "disable every trigger": "ALTER TABLE passage_labels DISABLE TRIGGER ALL",
    "drop a history trigger": "DROP TRIGGER passage_labels_history_insert ON passage_labels",
    "drop the history": "DROP TABLE label_history",
    "truncate the labels": "TRUNCATE passage_labels",
    "truncate the history": "TRUNCATE label_history",
    "update the history": "UPDATE label_history SET new_value = '4'",
    "delete the history": "DELETE FROM label_history",
    "replace a trigger function": "CREATE OR REPLACE FUNCTION passage_labels_history_insert() RETURNS trigger "
    "LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$",
    "create a table in the schema": "CREATE TABLE public.shadow (a int)",
    "take the tables": "ALTER TABLE label_history OWNER TO CURRENT_USER",
    "turn triggers off for the session": "SET session_replication_role = replica",
    "change the schema version": "UPDATE assess_schema SET version = 1",
}


@pytest.mark.parametrize("statement", REFUSED.values(), ids=REFUSED.keys())
def test_the_app_role_cannot_alter_drop_or_truncate(app, roles, statement):
    labels.save(app, "passage", "amy", ("101_1", "demo-doc-001:0"), 3, mode="blind", via="key")
    before = history(app)
    with app_connection(roles) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute(statement)
    labels.save(app, "passage", "amy", ("101_1", "demo-doc-001:0"), 1, mode="blind", via="key")
    assert history(app) == [*before, ("passage", "amy", "101_1 demo-doc-001:0", "3", "1", "key")]
    enabled = q(
        app,
        "SELECT tgname, CAST(tgenabled AS TEXT) AS state FROM pg_trigger "
        "WHERE NOT tgisinternal AND tgname = 'passage_labels_history_insert'",
    )
    assert enabled == [("passage_labels_history_insert", "O")]


def test_the_bulk_switch_writes_the_history_all_the_same_for_the_app_role(app, roles):
    with write(app):
        run(app, history_insert_trigger("passage_labels", False))
        run(app, LABEL)
    assert history(app) == [("passage", "amy", "101_1 demo-doc-001:0", None, "3", None)]
    # The owner may still use it (it could drop the trigger anyway): its bulk imports stay one event.
    with open_db(roles.owner_url) as db:
        ensure_source(db, "nist", "import")
        with write(db):
            run(db, history_insert_trigger("passage_labels", False))
            run(db, LABEL.replace("'amy'", "'nist'"))
    assert [h[1] for h in history(app)] == ["amy"]


def test_every_insert_history_trigger_honours_the_switch_only_for_the_owner(app):
    tables = set(HISTORY_TABLES) | set(ANNOTATION_TABLES)
    found = dict(
        q(
            app,
            "SELECT t.tgname, pg_get_triggerdef(t.oid) AS def FROM pg_trigger t "
            "WHERE NOT t.tgisinternal AND t.tgname LIKE '%history_insert'",
        )
    )
    assert set(found) == {f"{t}_history_insert" for t in tables}
    for table in tables:
        assert f"assess_may_skip_history(('{table}'::regclass)::oid)" in found[f"{table}_history_insert"]


def test_a_bulk_import_as_the_app_role_keeps_a_history_row_per_label(app, roles, tmp_path):
    qrels = tmp_path / "nist.qrels"
    qrels.write_text("101_1 0 demo-doc-001:0 4\n101_1 0 demo-doc-002:3 2\n")
    proc = run_cli("import", "qrels", qrels, "--source", "nist", db=roles.app_url)
    assert proc.returncode == 0, proc.stderr
    assert history(app) == [
        ("passage", "nist", "101_1 demo-doc-001:0", None, "4", None),
        ("passage", "nist", "101_1 demo-doc-002:3", None, "2", None),
        ("passage", "nist", "*", None, "2", "bulk"),
    ]
    assert [(h["old"], h["new"], h["via"]) for h in item_history(app, "nist", "101_1 demo-doc-001:0")] == [
        (None, "4", None)
    ]


def test_a_temporary_label_history_does_not_catch_the_app_roles_history(app, roles):
    with app_connection(roles) as conn:
        conn.execute("CREATE TEMP TABLE label_history AS SELECT * FROM public.label_history WITH NO DATA")
        conn.execute("SET search_path = pg_temp, public")
        conn.execute(LABEL)
        assert conn.execute("SELECT COUNT(*) FROM pg_temp.label_history").fetchone() == (0,)
    assert history(app) == [("passage", "amy", "101_1 demo-doc-001:0", None, "3", None)]


def test_every_trigger_function_runs_with_the_schemas_own_search_path(app):
    unpinned = q(
        app,
        "SELECT p.proname FROM pg_proc p WHERE p.pronamespace = CAST(current_schema() AS regnamespace) "
        "AND p.prorettype = CAST('trigger' AS regtype) "
        "AND NOT COALESCE('search_path=pg_catalog, public, pg_temp' = ANY (p.proconfig), false)",
    )
    assert unpinned == []


# ----------------------------------------------------------------------------------- what the app role does


def test_the_app_roles_everyday_work(roles):
    """Loading the demo (topics, passages, runs, qrels, nuggets, responses, LLM outcomes), judging, a note,
    undo, and the CLI's exports, accounts and stats, all as the app role."""
    app = open_db(roles.app_url)
    assert load_demo(app)
    ensure_source(app, "amy", "assessor")
    labels.save(app, "passage", "amy", ("101_1", "demo-doc-001:0"), 3, mode="blind", via="key")
    labels.set_note(app, "passage", "amy", ("101_1", "demo-doc-001:0"), "on topic")
    labels.save(app, "passage", "amy", ("101_1", "demo-doc-001:0"), 1, mode="blind", via="key")
    assert labels.undo(app, "passage", "amy") == ("101_1", "demo-doc-001:0")
    assert labels.get(app, "passage", "amy", ("101_1", "demo-doc-001:0")).value == 3
    assert [h["new"] for h in item_history(app, "amy", "101_1 demo-doc-001:0")] == ["3", "3", "1", "3"]
    proc = run_cli("export", "qrels", "--source", "demo-ann", db=roles.app_url, check=True)
    assert proc.stdout.count("\n") > 10
    run_cli("users", "add", "olga", "--role", "organizer", "--no-password", db=roles.app_url, check=True)
    stats = run_cli("stats", db=roles.app_url, check=True)
    assert "passage labels amy" in stats.stdout
    app.close()


# ------------------------------------------------------------------------------- the grants stay complete


def _sql_texts(path: Path) -> list[str]:
    """Every string of a module, f-strings with their placeholders written as ``{expression}``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
        elif isinstance(node, ast.JoinedStr):
            out.append(
                "".join(
                    part.value if isinstance(part, ast.Constant) else "{" + ast.unparse(part.value) + "}"
                    for part in node.values
                )
            )
    return out


WRITES = [
    ("UPDATE", re.compile(r"\bUPDATE\s+([\w{}.]+)\s+SET\b")),
    ("DELETE", re.compile(r"\bDELETE\s+FROM\s+([\w{}.]+)")),
    ("INSERT", re.compile(r"\bINSERT\s+INTO\s+\"?([\w{}.]+)")),
]


def store_writes() -> set[tuple[str, str]]:
    """(privilege, table) for every statement of store/ that writes a table (the schema, the migrations in
    store/db.py and the owner's ``copy`` in store/transfer.py aside). A table named by an expression is a
    label table; an upsert (``ON CONFLICT ... DO UPDATE``) needs UPDATE as well."""
    found = set()
    skip = {ROOT / "store" / "db.py", ROOT / "store" / "transfer.py"}
    for path in sorted((ROOT / "store").rglob("*.py")):
        if path in skip or "schema" in path.parts:
            continue
        for text in _sql_texts(path):
            for privilege, pattern in WRITES:
                for table in pattern.findall(text):
                    for name in LABEL_TABLES if "{" in table else (table,):
                        found.add((privilege, name))
                        if privilege == "INSERT" and "DO UPDATE" in text:
                            found.add(("UPDATE", name))
            if "DO UPDATE" in text and "INSERT" not in text:  # an upsert's tail, built apart: a label table's
                found |= {("UPDATE", name) for name in LABEL_TABLES}
    return found


def test_every_write_of_the_store_is_granted_to_the_app_role(tmp_path):
    with open_db(tmp_path / "schema.db") as db:
        tables = {r[0] for r in q(db, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    writes = {(p, t) for p, t in store_writes() if t in tables}
    assert ("DELETE", "passage_labels") in writes and ("UPDATE", "accounts") in writes  # the scan finds them
    granted = {("INSERT", t) for t in tables - READ_ONLY}
    granted |= {("UPDATE", t) for t in APP_UPDATES} | {("DELETE", t) for t in APP_DELETES}
    assert sorted(writes - granted) == [], "grant these in store/schema/roles.py (or write them otherwise)"
    assert "label_history" not in APP_UPDATES | APP_DELETES  # the history is only ever appended to
    assert set(LABEL_TABLES) == set(HISTORY_TABLES)
    assert tables >= (APP_UPDATES | APP_DELETES), "a grant names a table the schema does not have"


def test_the_app_warns_in_its_log_when_it_connects_as_the_owner(roles, monkeypatch, caplog):
    from tests.helpers import open_app

    with open_db(roles.app_url) as db:
        load_demo(db)
    monkeypatch.delenv("ASSESS_OPEN", raising=False)
    for url in (roles.app_url, roles.owner_url):
        monkeypatch.setenv("ASSESS_DB", url)
        with caplog.at_level("WARNING", logger="assess"):
            open_app()
    warnings = [r.getMessage() for r in caplog.records if "owns the store's tables" in r.getMessage()]
    assert warnings == [
        f"{roles.owner_url}: the app connects as a role that owns the store's tables, which could rewrite the "
        "label history; give the app a role of its own (python -m assess init --app-role, docs/deploy.md)"
    ]
