"""The shipped migrations never change, and the task registry agrees with the schema they build."""

from __future__ import annotations

import hashlib

import pytest

from assess.tasks import LABEL_KINDS, PREJUDGMENT_TASKS
from store import open_db
from store.db import column, rows, run
from store.schema import HISTORY_TABLES, MIGRATIONS

# sha256 of each released migration's SQL. A released migration must never change (stores in the
# field have already run it): add a new migration instead, and its hash here once it ships.
SHIPPED = {
    1: "dc60994385e0ebda506390f6e11d619d0a6e0d68746efda7ce82a928f6c87ad3",
    2: "7bd76f850571853c023b79900bb3ab6f6c5134ac28a7d3c71ae9f53e09d61415",
    3: "36fe16033e126843bf7733a4e4e24d411c3e90292440a29cbdc2cc3fad8e0721",
    4: "b80c884a7eced0e1becdb38c272c57237c44e4d53c0bc185ed8d47915d61a35f",
    5: "a2de05949ff3e1b25cc02ee2fdcf9b73b70db11eec41b78ce48adfd9bf571329",
    6: "b716bedbe2c65ed466730f9c06527d6b2863df89804d6bf9129361308d9ddc01",
    7: "f8af03ef0320f1a5c5551ae1a5881cf3a940372be65952502d7220bcd0e3c130",
    8: "168e071fa1fa716ada4319339a6cc3acc6aae5b576f5d46c5e3f603954170b4c",
    9: "6e042826ab0715c62405f15d34ad991d55b761c56c8566ac60a7f6aa944ffff4",
    10: "838120dd2c3aca2b267c519c1dc6f802f05126be9fb5203c5626f024d4f9cb48",
    11: "06281b1b5d2659588d309bf5b7febf68ff140592e11b40125079232e50815ab7",
    12: "e2873b63099cac2a30f6a5a851ecd9f1c6f6f9b18f65c3e31facfdd8e9d8041a",
    13: "b4e0497804e46e0a0b0b8c31975b062152d551bac49c3c2e80932567b4085dcd",
    14: "8ea3699a3cd093bdfcfae57a8a8f79b96b5f683b9c8cc6f70d5edb485c8e443e",
    15: "ebd5668d3abb4e36269debd9bd369ef4bb134b45aa42d5fda26acb7506b3d785",
    16: "57b7111b03f9553c62702bf782f8c8bfcad011cdab24f77b2716aba564eb0a25",
    17: "3195a293430beaedd3ce4aa4bef697950de0c8c76002aefc9f6253b01e0d0c90",
    18: "546b7650a95a6b38d034b0b5636829ff58929354b96bf42e39a9c755953e8ba3",  # re-shows + overlap
    19: "da0ccd297d793814d85d346e4b0c6dae7ba762b533f8b11dcf715b6769fed911",  # active time, guidelines
    20: "6958d2c0f574b83530c9e8fbcd41cb611de7b11721ad9e534ffa35227e967017",  # job leases (store/schema/job_leases.py)
    21: "05c81cebb7849dba30e60e76cf36cda0a02e4b5eb47170ce8edb4759267173b5",  # citation 'contradicts'
    22: "36e6a6b94ae87965660230cfa362d77ccd2b48b110377d997dfc2a2a22d50182",  # sign-in attempts in flight (store/schema/sign_in_pending.py)
    23: "741ce515c58d679d953ed931195e3c4459fd95ee635eaa233c2f1cbbdb07f25f",  # battle features (store/schema/battle_features.py)
    24: "f087f12a8c11b95c09029d209db9388e0766e2566ae8abd54c46ced0900eccc5",  # HTTP API tokens, webhooks (store/schema/http_api.py)
    25: "246c1e485ddda64a2ac0b98fb39eda1dce87ea0d4f19962d6d0f6ca2938787e6",  # adaptive overlap, roster (store/schema/adaptive_overlap.py)
    26: "cb224d98673335026df4ae6c6ad1d641a57537f89915040dfc0de298dc98c866",  # webhook outbox (store/schema/webhook_events.py)
    27: "d6954144e96b69a67f0db1e73a088290655323b7d56e6cfa0abbfd81d8178439",  # provider batches (store/schema/provider_batches.py)
}


@pytest.mark.parametrize("number", sorted(SHIPPED))
def test_shipped_migration_is_unchanged(number):
    assert number <= len(MIGRATIONS), f"migration {number} was released and must not be removed"
    digest = hashlib.sha256(MIGRATIONS[number - 1].encode()).hexdigest()
    assert digest == SHIPPED[number], (
        f"migration {number} was released and its SQL changed (sha256 {digest}); "
        "restore it and put the change in a new migration"
    )


def test_every_migration_is_pinned():
    unpinned = [n for n in range(1, len(MIGRATIONS) + 1) if n not in SHIPPED]
    assert not unpinned, f"pin the hash of migration(s) {unpinned} in SHIPPED once released"


# sha256 of the PostgreSQL scripts as released: the baseline (equal to SQLite's schema 8) and each later half.
# Their history triggers are generated (item keys from the registry's codec, assess.tasks.ItemKey), so these
# pins are what proves a codec change left the released SQL alone, as SHIPPED does for SQLite.
SHIPPED_POSTGRES = {
    "baseline": "1926dd8d4c2ccf11245d1083920c083b83758022f16b1ff8ea79cb3e96433c8d",
    9: "858576d585dd3a2efa1ffa1c8ba22ded70869d8605162af76652141e1fa52305",
    10: "7f214ded2164039aa484590e3569688e20319c32a68ad1651adc5bf3e4dc2a47",
    11: "c7615f588f35279d782981169db4aeae5db207ac872ab83ddb0ddfff8bd92bda",
    12: "59d75156eca878eabf615b3e7b26e250e430a304d087ce47a75aaf314df4fd8d",
    13: "eae6bf3d8ebdda3fef7e82fe832c7199e52a3920c597985e48511ef974d29980",
    14: "38907c3e23e37a2deffcecf3e66fb5fec45fc4caef00ee18ef42317b473f3c2d",
    15: "9f77220123648255181ee6f9b0e7e2b85433ede45aa9406a7a2ad836f4f97c2d",
    16: "829dcc108d27cdf1aaabaa13945afb0bde36d39382068864d57845c2aae4c027",
    17: "eebd297616a26e70544330e4ca1f845618d95c7811495a2686102a601d149673",
    18: "21ea6ad9afcfbe59e3151e6417e6846496dff24c741262dbcdb6f0565ef7524b",  # re-shows + overlap
    19: "098336f0152fbec13c08c8dc080542fd43e4cf277a2cc7fa2da87b3ae3224181",  # active time, guidelines
    20: "80ce93670e771a0163bede6947e9f209fa3303babd9c199abb7c0ccc23e9137a",  # job leases
    21: "64265bf36eff3f6a4c533f8247e08b9324a3f3997c1b1de6c4459c2f34da6f04",  # citation 'contradicts'
    22: "d1bd816c5b18447da6d1b00c5a6901727b27c3e9b977f9dcdcfe59ed43c38379",  # sign-in attempts in flight
    23: "b54e87a9ff2c69aae208f7b7a1e3fbacdee15c45ed89cc3b77ff689c9bff6e09",  # battle features
    24: "099d03c67b888ce5f1a8cebe7c72df2d01cbdb0dd8f81a77617b869e1bef5a0f",  # HTTP API tokens, webhooks
    25: "ee49aac19e757156687cb32adcc5ec036f28cffb546afd94875129fdf54460fb",  # adaptive overlap, roster
    26: "10fa4052970bb1a0a036f20581ecc8fb7a3db626564a1c0026f3ffb4129a10cd",  # webhook outbox
    27: "0f9b4fc7988ac9e7382d3560887e96b725ee5f2edda30a512b312a1337d39954",  # provider batches
}


def test_shipped_postgres_scripts_are_unchanged():
    from store.schema import postgres

    later = postgres.migrations_from(postgres.BASELINE_VERSION)
    ((_, fresh),) = postgres.migrations_from(0)  # a fresh store: the baseline, then every later half
    scripts = {"baseline": fresh.removesuffix("".join(script for _, script in later)), **dict(later)}
    changed = {
        version: hashlib.sha256(scripts[version].encode()).hexdigest()
        for version, digest in SHIPPED_POSTGRES.items()
        if hashlib.sha256(scripts[version].encode()).hexdigest() != digest
    }
    assert not changed, f"released PostgreSQL scripts changed (sha256 now {changed}): restore them, add a new pair"
    unpinned = [v for v, _ in later if v not in SHIPPED_POSTGRES]
    assert not unpinned, f"pin the hash of PostgreSQL script(s) {unpinned} in SHIPPED_POSTGRES once released"


@pytest.fixture(scope="module")
def schema(tmp_path_factory):
    db = open_db(tmp_path_factory.mktemp("schema") / "schema.db")
    tables = set(column(db, "SELECT name FROM sqlite_master WHERE type = 'table'"))
    columns = {t: {r["name"] for r in rows(db, f"PRAGMA table_info({t})")} for t in tables}
    return columns


@pytest.mark.parametrize("kind", LABEL_KINDS.values(), ids=lambda k: k.task.value)
def test_registry_matches_schema(schema, kind):
    assert kind.table in schema, f"{kind.task}: no table {kind.table}"
    needed = {*kind.key_columns, kind.value_column, *kind.conflict_columns, "note", "mode", "via", "updated_at"}
    assert needed <= schema[kind.table], f"{kind.table} lacks {sorted(needed - schema[kind.table])}"


@pytest.mark.parametrize("kind", LABEL_KINDS.values(), ids=lambda k: k.task.value)
def test_history_triggers_name_the_registry_kind(kind):
    history_kind, item, value = HISTORY_TABLES[kind.table]
    assert history_kind == kind.task.value
    assert item == " || ' ' || ".join(f"X.{c}" for c in kind.item_columns)
    assert f"X.{kind.value_column}" in value


def test_every_history_table_is_a_label_kind():
    assert set(HISTORY_TABLES) == {k.table for k in LABEL_KINDS.values()}


@pytest.mark.parametrize("kind", LABEL_KINDS.values(), ids=lambda k: k.task.value)
def test_the_table_refuses_values_off_the_registry_scale(tmp_path, kind):
    """The CHECK of the value column admits exactly the registry's scale (one value below and above refused)."""
    from sqlalchemy.exc import IntegrityError

    from assess.services.loading import load_demo
    from store.db import write

    db = open_db(tmp_path / "scale.db")
    load_demo(db)
    nugget = rows(db, "SELECT id, turn_id FROM nuggets ORDER BY id LIMIT 1")[0]
    run_name = column(db, "SELECT name FROM runs ORDER BY name LIMIT 1")[0]
    passage = column(db, "SELECT passage_id FROM pool WHERE turn_id = :t LIMIT 1", {"t": nugget["turn_id"]})[0]
    statement = column(db, "SELECT statement_id FROM ptkb_statements LIMIT 1")[0]
    known = {
        "turn_id": nugget["turn_id"],
        "passage_id": passage,
        "statement_id": statement,
        "nugget_id": nugget["id"],
        "run": run_name,
        "criterion": "relevance",
        "sentence": 1,
        "run_a": run_name,
        "run_b": run_name + "-other",
        "occurrence": 0,
        "nugget": 1,
        "answer": 1,
    }
    conversation = column(db, "SELECT conversation_id FROM turns WHERE id = :t", {"t": nugget["turn_id"]})[0]
    extra = {"conversation_id": conversation} if kind.table == "ptkb_labels" else {}
    source = column(db, "SELECT name FROM sources ORDER BY name LIMIT 1")[0]
    if kind.table == "bank_matches":  # its items are a stored bank answer and a stored response
        with write(db):
            run(db, "INSERT INTO bank_topics VALUES (:t, '{}', NULL, 'now')", {"t": nugget["turn_id"]})
            run(
                db,
                "INSERT INTO bank_nuggets VALUES (:t, 1, 'Q', 'OR', NULL, NULL, 'original', NULL, 'now')",
                {"t": nugget["turn_id"]},
            )
            run(
                db,
                "INSERT INTO bank_answers VALUES (:t, 1, 1, 'A', '[]', NULL, 'original', NULL, 'now')",
                {"t": nugget["turn_id"]},
            )
    columns = {**{c: known[c] for c in kind.item_columns}, **extra, "source": source, "updated_at": "2026-01-01"}

    def insert(value: int) -> None:
        names = [*columns, kind.value_column]
        with write(db):
            run(db, f"DELETE FROM {kind.table} WHERE source = :source", {"source": source})
            run(
                db,
                f"INSERT INTO {kind.table} ({', '.join(names)}) VALUES ({', '.join(':' + n for n in names)})",
                {**columns, kind.value_column: value},
            )

    for value in kind.scale.values:
        insert(value)
    for value in (kind.scale.low - 1, kind.scale.high + 1):
        with pytest.raises(IntegrityError):
            insert(value)
    db.close()


def test_prejudgment_tasks_are_the_schema_check():
    """The tasks ``prejudgments`` admits are exactly the registry's PREJUDGMENT_TASKS (on both halves)."""
    import re

    from store.schema.postgres import LATER

    pattern = r"CHECK \(task IN \(([^)]*)\)\)"
    latest_sqlite = [s for s in MIGRATIONS if "CREATE TABLE prejudgments" in s and re.search(pattern, s)][-1]
    latest_postgres = [s for _, s in LATER if "prejudgments_task_check CHECK" in s][-1]
    for script in (latest_sqlite, latest_postgres):  # the CHECK as the latest migration that sets it wrote it
        check = re.search(pattern, script)
        assert check is not None
        assert set(re.findall(r"'([^']+)'", check.group(1))) == set(PREJUDGMENT_TASKS)


def test_migration_9_keeps_the_stored_prejudgments(tmp_path):
    """A store at schema 8 with answers (one a cache copy of another) keeps them, ids included, as sample 0."""
    import sqlite3

    from store.db import _statements

    path = tmp_path / "v8.db"
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA foreign_keys = ON")
    for number, script in enumerate(MIGRATIONS[:8], start=1):
        for statement in _statements(script):
            raw.execute(statement)
        raw.execute(f"PRAGMA user_version = {number}")
    raw.executescript(
        "INSERT INTO conversations (id, number) VALUES ('1', '1');"
        "INSERT INTO turns (id, conversation_id, turn_number, position) VALUES ('1_1', '1', 1, 0);"
        "INSERT INTO sources (name, kind, created_at) VALUES ('llm:m', 'llm', 'x');"
        "INSERT INTO prejudgments (id, source, task, turn_id, item_id, model, prompt_version, input_hash, "
        "parse_status, parsed, created_at) VALUES (7, 'llm:m', 'passage', '1_1', 'd:1', 'm', 'v', 'h', 'ok', '3', 'x');"
        "INSERT INTO prejudgments (id, source, task, turn_id, item_id, model, prompt_version, input_hash, "
        "parse_status, parsed, cached_from, created_at) "
        "VALUES (9, 'llm:m', 'passage', '1_1', 'd:2', 'm', 'v', 'h', 'ok', '3', 7, 'x');"
    )
    raw.commit()
    raw.close()
    db = open_db(path)
    found = rows(db, "SELECT id, item_id, cached_from, sample FROM prejudgments ORDER BY id")
    assert found == [
        {"id": 7, "item_id": "d:1", "cached_from": None, "sample": 0},
        {"id": 9, "item_id": "d:2", "cached_from": 7, "sample": 0},
    ]
    assert rows(db, "PRAGMA foreign_key_check") == []
    assert "REFERENCES prejudgments(id)" in column(db, "SELECT sql FROM sqlite_master WHERE name = 'prejudgments'")[
        0
    ].replace('"', "")
    db.close()


@pytest.mark.parametrize("recursive", [False, True], ids=["plain", "recursive_triggers"])
def test_history_refuses_insert_or_replace_of_an_existing_row(tmp_path, recursive):
    """Another SQLite client cannot overwrite a history row (a REPLACE conflict skips delete triggers).

    SQLite only: PostgreSQL has no INSERT OR REPLACE (its guards are in tests/store/test_engines.py)."""
    from sqlalchemy.exc import DatabaseError

    db = open_db(tmp_path / "h.db")
    if recursive:
        db.raw.execute("PRAGMA recursive_triggers = ON")
    add = "INSERT INTO label_history (label_table, source, item, old_value, new_value, mode, via, at) VALUES "
    run(db, add + "('passage', 'amy', '101_1 d:0', NULL, '3', 'blind', 'ui', '2026-01-01')")
    before = rows(db, "SELECT * FROM label_history")
    forged = "('passage', 'amy', '101_1 d:0', NULL, '0', 'blind', 'ui', '2000-01-01')"
    for verb in ("INSERT OR REPLACE", "REPLACE", "INSERT OR IGNORE", "INSERT"):
        with pytest.raises(DatabaseError, match="append-only"):
            run(
                db,
                f"{verb} INTO label_history (id, label_table, source, item, old_value, new_value, mode, via, at) "
                f"VALUES ({before[0]['id']}, {forged[1:]}",
            )
        assert rows(db, "SELECT * FROM label_history") == before, verb
    run(db, add + forged)  # appending a new row still works
    assert len(rows(db, "SELECT * FROM label_history")) == 2
    db.close()
