"""store.labels on a real store of each engine: writes, notes, undo walking back, and refused values."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assess.errors import AssessError
from assess.tasks import LABEL_KINDS, Task
from store import labels, open_db
from store.db import rows

ITEMS = {
    Task.PASSAGE: ("101_1", "demo-doc-001:0"),
    Task.PTKB: ("101_1", "1"),
    Task.NTR: ("101_1", 1, "demo-bm25"),
    Task.RESPONSE: ("101_1", "demo-bm25", "relevance"),
    Task.NTR_SUPPORT: ("101_1", 1, "demo-bm25"),
    Task.IMPORTANCE: ("101_1", 1),
    Task.CITATION: ("101_1", "rag-a", 1, "demo-doc-001:0"),  # the fixture's response cites it
    Task.BATTLE: ("101_1", "demo-bm25", "demo-dense", 0),
    Task.BANK_MATCH: ("101_1", "demo-bm25", 1, 1),  # answer 1 of nugget 1 of the bank the fixture stores
}
VALUES = {  # three different values per task, written in turn
    Task.PASSAGE: (3, None, 1),
    Task.PTKB: (1, 0, 1),
    Task.NTR: (1, 0, 1),
    Task.RESPONSE: (4, -1, 2),
    Task.NTR_SUPPORT: (2, 1, 0),
    Task.IMPORTANCE: (1, 0, 1),
    Task.CITATION: (2, -1, 1),
    Task.BATTLE: (1, -1, 0),
    Task.BANK_MATCH: (1, 0, 1),
}


@pytest.fixture(scope="module")
def db(module_demo_target):
    from assess.formats.banks import BankAnswer, BankNugget, NuggetBank
    from assess.tasks import CitedResponse, CitedSentence
    from store import responses as cited
    from store.banks import import_banks

    database = open_db(module_demo_target)
    bank = NuggetBank("101_1", {"topic_id": "101_1"}, (BankNugget("Q?", "OR", (BankAnswer("A"),)),))
    import_banks(database, [bank], "bank.jsonl", by="tests")
    # a citation label is about a passage a stored response's sentence cites (store.labels.check_item)
    said = CitedSentence("Start with walk-run intervals.", ("demo-doc-001:0",))
    cited.add_responses(database, "answers.jsonl", [CitedResponse("rag-a", "101_1", (said,))])
    yield database
    database.close()


_names = itertools.count()


def fresh_source(db) -> str:
    from store.db import write
    from store.sources import ensure_source

    name = f"tester{next(_names)}"
    with write(db):
        ensure_source(db, name, "assessor")
    return name


def table_rows(db, task, source):
    kind = LABEL_KINDS[task]
    return rows(
        db,
        f"SELECT * FROM {kind.table} WHERE source = :source ORDER BY {', '.join(kind.item_columns)}",
        {"source": source},
    )


@pytest.mark.parametrize("task", list(Task))
def test_save_then_undo_walks_back_each_step(db, task):
    source, item = fresh_source(db), ITEMS[task]
    first, second, third = VALUES[task]
    for v in (first, second, third):
        labels.save(db, task, source, item, v, mode="blind", via="key")
    assert labels.get(db, task, source, item).value == third
    assert labels.undo(db, task, source) == tuple(str(p) for p in item)
    assert labels.get(db, task, source, item).value == second
    labels.undo(db, task, source)
    assert labels.get(db, task, source, item).value == first
    labels.undo(db, task, source)
    assert labels.get(db, task, source, item) is None
    assert labels.undo(db, task, source) is None


@pytest.mark.parametrize("task", list(Task))
def test_note_attaches_to_an_existing_label_and_survives_a_new_value(db, task):
    source, item = fresh_source(db), ITEMS[task]
    assert labels.set_note(db, task, source, item, "too early") is False
    labels.save(db, task, source, item, VALUES[task][0], mode="blind", via="key")
    assert labels.set_note(db, task, source, item, "checked twice") is True
    labels.save(db, task, source, item, VALUES[task][1], mode="blind", via="key")
    assert labels.get(db, task, source, item).note == "checked twice"
    assert labels.labelled(db, task, source) == frozenset({tuple(item)})


@pytest.mark.parametrize("task", list(Task))
@pytest.mark.parametrize("bad", [True, 2.0, "2", 5])
def test_refused_values_leave_the_store_unchanged(db, task, bad):
    source, item = fresh_source(db), ITEMS[task]
    labels.save(db, task, source, item, VALUES[task][0], mode="blind", via="key")
    before = table_rows(db, task, source)
    history = rows(db, "SELECT * FROM label_history WHERE source = :source ORDER BY id", {"source": source})
    with pytest.raises(AssessError):
        labels.save(db, task, source, item, bad, mode="blind", via="key")
    with pytest.raises(AssessError):
        labels.save_many(db, task, source, [(item, bad)], mode="blind", via="key")
    assert table_rows(db, task, source) == before
    assert rows(db, "SELECT * FROM label_history WHERE source = :source ORDER BY id", {"source": source}) == history


PASSAGES = ["demo-doc-001:0", "demo-doc-002:3", "demo-doc-003:0"]  # pooled for turn 101_1


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(PASSAGES), st.sampled_from([0, 1, 2, 3, 4, None])), max_size=8))
def test_as_many_undos_as_saves_restore_the_empty_table(db, saves):
    source = fresh_source(db)
    for passage, grade in saves:
        labels.save(db, Task.PASSAGE, source, ("101_1", passage), grade, mode="blind", via="key")
    # a save that changes nothing leaves no history row: its undo finds nothing left and returns None
    changes = len(rows(db, "SELECT id FROM label_history WHERE source = :source", {"source": source}))
    undone = [labels.undo(db, Task.PASSAGE, source) for _ in saves]
    assert sum(u is not None for u in undone) == changes
    assert table_rows(db, Task.PASSAGE, source) == []
    assert labels.undo(db, Task.PASSAGE, source) is None


# ------------------------------------------------------------------------------------------- stale writes


@pytest.mark.parametrize("task", list(Task))
def test_a_write_from_a_stale_view_is_refused_then_replaces_on_a_second_press(db, task):
    """Tab A and tab B show the item unlabelled; A stores a value; B's press (expected: no label) stores nothing
    and says what is stored, by whom and when; B's second press, from a view showing A's label, replaces it; the
    history holds both writes. Each kind, each engine; the check is in the write's own statement."""
    from assess.tasks import NOTHING_SHOWN, Shown
    from store.history import item_history

    kind = LABEL_KINDS[task]
    amy, item = fresh_source(db), ITEMS[task]
    first, second, _ = VALUES[task]
    labels.save(db, task, amy, item, first, mode="blind", via="ui", expected=NOTHING_SHOWN)  # tab A
    with pytest.raises(labels.StaleLabel) as refused:  # tab B, drawn before A's label
        labels.save(db, task, amy, item, second, mode="blind", via="ui", expected=NOTHING_SHOWN)
    assert refused.value.stored.value == first and refused.value.source == amy and refused.value.at
    assert f"labelled {kind.scale.label(first)} by {amy} at " in str(refused.value)
    assert "press again to replace it" in str(refused.value)
    assert labels.get(db, task, amy, item).value == first  # unchanged
    labels.save(db, task, amy, item, second, mode="blind", via="ui", expected=Shown.of(labels.get(db, task, amy, item)))
    assert labels.get(db, task, amy, item).value == second
    trail = item_history(db, amy, kind.key.encode(item), task.value)
    assert [(c["old"], c["new"]) for c in trail] == [
        (None, labels.history_text(task, first)),
        (labels.history_text(task, first), labels.history_text(task, second)),
    ]
    # a view showing the first value is stale too now (its value was replaced); cannot judge counts as a value
    with pytest.raises(labels.StaleLabel):
        labels.save(db, task, amy, item, first, mode="blind", via="ui", expected=Shown(True, first))
    labels.save(db, task, amy, item, first, mode="blind", via="ui")  # no expectation (command line, jobs): no check
    assert labels.get(db, task, amy, item).value == first


def test_a_stale_view_of_cannot_judge_differs_from_no_label(db):
    """ "Cannot judge" (a stored NULL) is a label: a view that showed none is stale, one that showed it is not."""
    from assess.tasks import NOTHING_SHOWN, Shown

    amy, item = fresh_source(db), ITEMS[Task.PASSAGE]
    labels.save(db, Task.PASSAGE, amy, item, None, mode="blind", via="ui", expected=NOTHING_SHOWN)
    with pytest.raises(labels.StaleLabel, match="labelled cannot judge"):
        labels.save(db, Task.PASSAGE, amy, item, 2, mode="blind", via="ui", expected=NOTHING_SHOWN)
    with pytest.raises(labels.StaleLabel):
        labels.save(db, Task.PASSAGE, amy, item, 2, mode="blind", via="ui", expected=Shown(True, 0))
    labels.save(db, Task.PASSAGE, amy, item, 2, mode="blind", via="ui", expected=Shown(True, None))
    assert labels.get(db, Task.PASSAGE, amy, item).value == 2


def test_a_note_saved_meanwhile_is_no_conflict(db):
    """The check compares the label's value, not its time: a note the same page saved (its own write) before the
    key press does not refuse the press."""
    from assess.tasks import Shown

    amy, item = fresh_source(db), ITEMS[Task.PASSAGE]
    labels.save(db, Task.PASSAGE, amy, item, 3, mode="blind", via="ui")
    labels.set_note(db, Task.PASSAGE, amy, item, "typed before the key")
    labels.save(db, Task.PASSAGE, amy, item, 1, mode="blind", via="ui", expected=Shown(True, 3))
    assert labels.get(db, Task.PASSAGE, amy, item).value == 1
