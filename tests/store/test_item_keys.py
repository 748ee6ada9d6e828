"""The item-key codec (assess.tasks.ItemKey) and the source kinds (assess.tasks.SourceKind, source_kind):
round trips for every kind, the spelling the history triggers write, refusals, and the one kind decision."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assess.errors import AssessError
from assess.tasks import (
    ANNOTATION_KINDS,
    LABEL_KINDS,
    NLI_SOURCE_PREFIXES,
    ItemKey,
    SourceKind,
    Task,
    source_kind,
)

KEYS = {
    **{k.task.value: k.key for k in LABEL_KINDS.values()},
    **{n: a.key for n, a in ANNOTATION_KINDS.items() if a.key},
}

# an id as the id rule allows it: no spaces, any other character (tabs and line breaks included: the codec
# splits on the space alone); the spaced column (a run name) may hold anything but be empty
IDS = st.text(st.characters(blacklist_characters=" ", blacklist_categories=("Cs",)), min_size=1)
SPACED = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1)
INTEGERS = st.integers(min_value=-(10**12), max_value=10**12)


def _items(key: ItemKey) -> st.SearchStrategy[tuple]:
    free = key.columns.index(key.spaced) if key.spaced else len(key.columns) - 1
    return st.tuples(
        *(INTEGERS if c in key.integers else SPACED if n == free else IDS for n, c in enumerate(key.columns))
    )


@pytest.mark.parametrize("name", sorted(KEYS))
@given(data=st.data())
def test_decode_inverts_encode_for_every_kind(name, data):
    key = KEYS[name]
    item = data.draw(_items(key))
    assert key.decode(key.encode(item)) == item
    assert key.decode_id(key.encode_id(item[1:])) == item[1:]
    assert key.encode(item) == " ".join(map(str, item))  # the spelling the shipped triggers write


@pytest.mark.parametrize("name", sorted(KEYS))
@given(data=st.data())
def test_the_sql_expression_spells_an_item_as_encode_does(name, data):
    """What the history triggers' SQL writes for a row (here on SQLite) is the codec's text of that row's key."""
    key = KEYS[name]
    item = data.draw(_items(key))
    columns = ", ".join(f":{c} AS {c}" for c in key.columns)
    with sqlite3.connect(":memory:") as con:
        (written,) = con.execute(
            f"SELECT {key.sql('X.')} FROM (SELECT {columns}) X", dict(zip(key.columns, item))
        ).fetchone()
    assert written == key.encode(item)
    assert key.decode(written) == item


def test_the_registry_spells_items_as_the_shipped_triggers():
    """The expressions the shipped migrations were written with (their text is pinned by tests/store/test_migrations.py)."""
    assert LABEL_KINDS[Task.PASSAGE].key.sql("X.") == "X.turn_id || ' ' || X.passage_id"
    assert LABEL_KINDS[Task.NTR].key.sql("X.") == "X.turn_id || ' ' || X.nugget_id || ' ' || X.run"
    assert (
        LABEL_KINDS[Task.CITATION].key.sql("X.")
        == "X.turn_id || ' ' || X.run || ' ' || X.sentence || ' ' || X.passage_id"
    )
    assert ANNOTATION_KINDS["nugget-duplicate"].key.sql("X.") == "X.turn_id || ' ' || X.nugget_a || ' ' || X.nugget_b"
    assert ANNOTATION_KINDS["gold-response"].key.sql("X.") == "X.turn_id"
    assert LABEL_KINDS[Task.IMPORTANCE].key.sql() == "turn_id || ' ' || nugget_id"


def test_examples_with_spaces_in_run_names():
    ntr, citation, response = (LABEL_KINDS[t].key for t in (Task.NTR, Task.CITATION, Task.RESPONSE))
    assert ntr.encode_id((7, "my run 2")) == "7 my run 2"
    assert ntr.decode_id("7 my run 2") == (7, "my run 2")
    assert ntr.decode("101_1 7  run ") == ("101_1", 7, " run ")
    assert citation.decode("101_1 a run 3 doc:0") == ("101_1", "a run", 3, "doc:0")
    assert citation.decode_id("a run 3 doc:0") == ("a run", 3, "doc:0")
    assert response.decode_id("run x relevance") == ("run x", "relevance")
    assert LABEL_KINDS[Task.PASSAGE].key.decode("101_1 doc with spaces") == ("101_1", "doc with spaces")
    assert LABEL_KINDS[Task.IMPORTANCE].key.decode_id("12") == (12,)
    assert LABEL_KINDS[Task.PASSAGE].history_item("101_1", "d:0") == "101_1 d:0"


@pytest.mark.parametrize(
    ("task", "item", "says"),
    [
        (Task.NTR, ("t 1", 3, "run"), "turn_id is an id without spaces"),
        (Task.CITATION, ("t", "run", 1, "p 0"), "passage_id is an id without spaces"),
        (Task.NTR, ("t", "3a", "run"), "nugget_id is an integer"),
        (Task.NTR, ("t", True, "run"), "nugget_id is an integer"),
        (Task.NTR, ("t", 3), "has 3 parts, not 2"),
        (Task.PASSAGE, ("t", ""), "passage_id is an id without spaces"),
    ],
)
def test_an_item_the_text_could_not_name_is_refused(task, item, says):
    with pytest.raises(AssessError, match=says):
        LABEL_KINDS[task].key.encode(item)


@pytest.mark.parametrize(
    ("task", "text"),
    [(Task.NTR, "101_1 x run"), (Task.NTR, "101_1 3"), (Task.CITATION, "t run x p"), (Task.IMPORTANCE, "t")],
)
def test_a_text_that_names_no_item_is_refused(task, text):
    with pytest.raises(AssessError, match="does not name an item"):
        LABEL_KINDS[task].key.decode(text)


def test_a_key_is_declared_consistently():
    with pytest.raises(ValueError):
        ItemKey(("turn_id", "run"), integers=("sentence",))
    with pytest.raises(ValueError):
        ItemKey(("turn_id", "nugget_id"), integers=("nugget_id",), spaced="nugget_id")
    assert all(k.key.columns == k.item_columns for k in LABEL_KINDS.values())


def test_prejudgment_items_decode_to_label_keys():
    from store.prejudgments import label_item

    assert label_item("ntr", "101_1", "4 bm25 run") == ("101_1", 4, "bm25 run")
    assert label_item("citation", "101_1", "a b 2 doc:1") == ("101_1", "a b", 2, "doc:1")
    assert label_item("response", "101_1", "a b relevance") == ("101_1", "a b", "relevance")
    assert label_item("importance", "101_1", "9") == ("101_1", 9)
    assert label_item("passage", "101_1", "doc:1") == ("101_1", "doc:1")


# ------------------------------------------------------------------------------------------- source kinds


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("llm:gpt-4o", SourceKind.LLM),
        ("llm:demo-gpt:no-ptkb", SourceKind.LLM),
        ("crowd:mturk", SourceKind.CROWD),
        ("adjudication", SourceKind.ADJUDICATION),
        ("adjudication-2", SourceKind.ADJUDICATION),
        ("organizers", SourceKind.ORGANIZERS),
        ("nist", SourceKind.IMPORT),
        ("human", SourceKind.IMPORT),
        ("nli:roberta", SourceKind.IMPORT),  # not a reserved name: anyone may import under it
        ("llm-ntn:gpt", SourceKind.IMPORT),  # as before: only 'llm:' says LLM by the name alone
        ("LLM:upper", SourceKind.IMPORT),
    ],
)
def test_a_name_alone_says_only_its_reserved_kind(name, kind):
    assert source_kind(name) is kind


@pytest.mark.parametrize(
    ("name", "stored", "kind"),
    [
        ("gpt4", "llm", SourceKind.LLM),  # any name may be an LLM source
        ("nli:roberta", "llm", SourceKind.NLI),
        ("nli-ntn:roberta", "llm", SourceKind.NLI),
        ("llm:x", "assessor", SourceKind.ASSESSOR),
        ("nli:x", "import", SourceKind.IMPORT),
        ("crowd:s", "crowd", SourceKind.CROWD),
        ("organizers", "organizers", SourceKind.ORGANIZERS),
        ("adjudication", "adjudication", SourceKind.ADJUDICATION),
    ],
)
def test_the_stored_kind_wins_and_nli_is_told_by_its_name(name, stored, kind):
    assert source_kind(name, stored) is kind
    assert kind.stored == stored


def test_an_unknown_stored_kind_is_refused():
    with pytest.raises(AssessError, match="'robot' is not a kind of label source"):
        source_kind("x", "robot")


def test_every_kind_is_recorded_as_a_kind_the_sources_table_accepts(tmp_path):
    from store import open_db
    from store.db import column, run, write

    db = open_db(tmp_path / "kinds.db")
    with write(db):
        for n, kind in enumerate(SourceKind):
            run(
                db,
                "INSERT INTO sources (name, kind, created_at) VALUES (:name, :kind, 'now')",
                {"name": f"s{n}", "kind": kind.stored},
            )
    stored = column(db, "SELECT kind FROM sources ORDER BY name")
    assert sorted(set(stored)) == sorted({"assessor", "organizers", "import", "adjudication", "crowd", "llm"})
    assert all(p.endswith(":") for p in NLI_SOURCE_PREFIXES)


def test_ensure_source_records_the_kind_the_name_says(tmp_path):
    from store import open_db
    from store.db import rows, write
    from store.sources import ensure_source

    db = open_db(tmp_path / "sources.db")
    with write(db):
        for name in ("llm:m1", "crowd:s", "adjudication", "organizers", "nist", "nli:m2"):
            ensure_source(db, name)
    assert rows(db, "SELECT name, kind, model FROM sources ORDER BY name") == [
        {"name": "adjudication", "kind": "adjudication", "model": None},
        {"name": "crowd:s", "kind": "crowd", "model": None},
        {"name": "llm:m1", "kind": "llm", "model": "m1"},
        {"name": "nist", "kind": "import", "model": None},
        {"name": "nli:m2", "kind": "import", "model": None},
        {"name": "organizers", "kind": "organizers", "model": None},
    ]
