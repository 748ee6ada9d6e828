"""docs/architecture.md's recipe, proven: a label kind that is one registry entry and one migration (here a
throwaway ``toy`` kind, its entry patched into the registry and its tables made in the test's store) is
listed, checked, saved, undone and put in the app's menu by the code that is there, with no line of its own."""

from __future__ import annotations

from dataclasses import replace
from enum import StrEnum
from types import MappingProxyType

import pytest

from assess import tasks
from assess.errors import AssessError, UnknownItem
from assess.services import kinds
from assess.tasks import ItemSource, LabelKind, MenuPage, Role, Scale
from store import bulk, labels, open_db
from store.db import _statements, rows, write
from store.schema import _history_triggers as sqlite_history_triggers
from store.schema.postgres import _history_triggers as postgres_history_triggers
from store.sources import ensure_source


class ToyTask(StrEnum):
    TOY = "toy"


TOY = LabelKind(
    task=ToyTask.TOY,
    table="toy_labels",
    item_columns=("turn_id", "passage_id"),
    value_column="useful",
    scale=Scale(names={0: "useless", 1: "useful"}),
    item_name="toy passage",
    prompt=None,
    export="none",
    description="a throwaway kind: is a passage of a toy list useful for a turn",
    item_source=ItemSource(table="toy_items"),
    page=MenuPage("pages/toy.py", "Toy", "🧸", "toy"),
)

# The kind's migration: its items' table (a kind whose items come from a stored table names that one
# instead), its label table and the label table's history triggers, as store/schema writes them.
TABLES = """
CREATE TABLE toy_items (
    turn_id TEXT NOT NULL REFERENCES turns(id),
    passage_id TEXT NOT NULL,
    PRIMARY KEY (turn_id, passage_id)
);
CREATE TABLE toy_labels (
    source TEXT NOT NULL REFERENCES sources(name),
    turn_id TEXT NOT NULL,
    passage_id TEXT NOT NULL,
    useful INTEGER NOT NULL CHECK (useful IN (0, 1)),
    note TEXT,
    mode TEXT,
    via TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (source, turn_id, passage_id)
);
"""
HISTORY = ("toy", TOY.key.sql("X."), "CAST(X.useful AS TEXT)")


def migrate_toy(db) -> None:
    with write(db):
        if db.sqlite:
            for statement in _statements(TABLES + "".join(sqlite_history_triggers("toy_labels", *HISTORY).values())):
                db.raw.execute(statement)
        else:
            db.raw.execute(TABLES + postgres_history_triggers("toy_labels", *HISTORY))
        db.raw.execute(
            "INSERT INTO toy_items (turn_id, passage_id) VALUES ('101_2', 'b'), ('101_1', 'b'), ('101_1', 'a')"
        )
        ensure_source(db, "amy", "assessor")


@pytest.fixture
def toy_registered(monkeypatch):
    """The registry with the toy kind's entry added (the one line of the recipe's registry step)."""
    monkeypatch.setattr(tasks, "LABEL_KINDS", MappingProxyType({**tasks.LABEL_KINDS, ToyTask.TOY: TOY}))


@pytest.fixture
def db(demo_target, toy_registered):
    database = open_db(demo_target)
    migrate_toy(database)
    yield database
    database.close()


def history(db) -> list[tuple]:
    found = rows(db, "SELECT item, old_value, new_value, via FROM label_history WHERE label_table = 'toy' ORDER BY id")
    return [(r["item"], r["old_value"], r["new_value"], r["via"]) for r in found]


def test_a_new_kind_is_listed_checked_saved_and_undone_from_its_registry_entry(db):
    assert labels.items(db, "toy") == [("101_1", "a"), ("101_1", "b"), ("101_2", "b")]  # turn order, then id
    order = kinds.queue_order(db, "toy")
    assert order.items == (("101_1", "a"), ("101_1", "b"), ("101_2", "b"))

    with pytest.raises(UnknownItem, match=r"^unknown toy passage '101_1 zz'$"):
        kinds.save(db, "toy", "amy", "101_1", "zz", 1)
    with pytest.raises(AssessError, match=r"^a toy label must be one of 0, 1, not 2$"):
        kinds.save(db, "toy", "amy", "101_1", "a", 2)
    with pytest.raises(UnknownItem, match="unknown toy passage"):
        kinds.screen(db, "toy", "amy", "101_2", "a")
    assert rows(db, "SELECT * FROM toy_labels") == [] and history(db) == []

    kinds.save(db, "toy", "amy", "101_1", "a", 1, active_ms=900)
    kinds.save(db, "toy", "amy", "101_2", "b", 0)
    kinds.save(db, "toy", "amy", "101_2", "b", 1)
    assert kinds.labelled(db, "toy", "amy") == {("101_1", "a"), ("101_2", "b")}
    assert kinds.screen(db, "toy", "amy", "101_1", "a") == kinds.KindScreen("101_1", ("101_1", "a"), 1, True)
    assert kinds.screen(db, "toy", "amy", "101_1", "b") == kinds.KindScreen("101_1", ("101_1", "b"), None, False)
    assert history(db) == [("101_1 a", None, "1", "key"), ("101_2 b", None, "0", "key"), ("101_2 b", "0", "1", "key")]

    assert kinds.undo(db, "toy", "amy") == ("101_2", "b")
    assert kinds.screen(db, "toy", "amy", "101_2", "b").own == 0
    assert kinds.undo(db, "toy", "amy") == ("101_2", "b")
    assert kinds.undo(db, "toy", "amy") == ("101_1", "a")
    assert kinds.undo(db, "toy", "amy") is None
    assert kinds.labelled(db, "toy", "amy") == frozenset()
    assert rows(db, "SELECT * FROM toy_labels") == []


def test_a_new_kind_s_page_is_in_the_menu_after_the_other_judging_pages(toy_registered, monkeypatch):
    from assess.ui.frame import ACCOUNTS, OTHER_ASSESSOR_PAGES, menu

    assessor_pages, organizer_pages = menu()
    assert assessor_pages[-len(OTHER_ASSESSOR_PAGES) - 1 :] == [TOY.page, *OTHER_ASSESSOR_PAGES]
    assert TOY.page not in organizer_pages
    # an organizer's page: under "Organize", before Accounts
    organized = replace(TOY, page=replace(TOY.page, role=Role.ORGANIZER))
    monkeypatch.setattr(tasks, "LABEL_KINDS", MappingProxyType({**tasks.LABEL_KINDS, ToyTask.TOY: organized}))
    assessor_pages, organizer_pages = menu()
    assert organizer_pages[-2:] == [organized.page, ACCOUNTS] and organized.page not in assessor_pages


def test_every_bulk_write_refuses_an_item_the_kind_does_not_have_and_writes_nothing(db):
    with pytest.raises(UnknownItem, match=r"^unknown toy passage '101_2 a'$"):  # an LLM job's path
        labels.save_changed_many(db, "toy", "amy", [(("101_1", "a"), 1), (("101_2", "a"), 1)], mode="llm", via="llm")
    with pytest.raises(UnknownItem, match=r"^unknown toy passage '101_1 zz'$"):
        labels.save_many(db, "toy", "amy", [(("101_1", "b"), 0), (("101_1", "zz"), 1)], mode="key", via="key")
    columns = ("source", "turn_id", "passage_id", "useful", "updated_at")
    with pytest.raises(UnknownItem, match=r"^unknown toy passage '101_2 c'$"), write(db):  # a file import
        labels.import_labels(db, "toy", columns, [("amy", "101_1", "a", 1, "t"), ("amy", "101_2", "c", 0, "t")])
    with (
        pytest.raises(UnknownItem, match=r"^unknown toy passage '101_9 b'$"),
        write(db),
        labels.import_new_labels(db, "toy", "amy", "t") as new,
    ):
        new.write([("101_1", "a", 1), ("101_9", "b", 0)])
    assert rows(db, "SELECT * FROM toy_labels") == [] and history(db) == []
    # more items than one query looks up: each is found
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bulk, "KEYS_PER_QUERY", 2)
        assert labels.save_changed_many(db, "toy", "amy", [((t, p), 1) for t, p in labels.items(db, "toy")], mode="llm",
                                        via="llm") == 3  # fmt: skip
    assert labels.labelled(db, "toy", "amy") == {("101_1", "a"), ("101_1", "b"), ("101_2", "b")}
