"""Labels and passages travel as records (assess.tasks.Label, Passage): the store reads them, the judging
screens hold them. Both engines, one demo store for the module."""

from __future__ import annotations

import pytest

from assess.errors import UnknownItem
from assess.services import judging
from assess.tasks import Label, Passage, SourceKind, Task
from store import conversations, labels, open_db, prejudgments, queue, review, settings, sources
from store.db import value

TURN, PASSAGE = "101_1", "demo-doc-001:0"


@pytest.fixture(scope="module")
def db(module_demo_target):
    store = open_db(module_demo_target)
    yield store
    store.close()


def test_a_label_is_read_back_as_a_record(db):
    sources.sign_in(db, "rec")
    labels.save(db, Task.PASSAGE, "rec", (TURN, PASSAGE), 2, note="half of it", mode="blind", via="key")
    own = Label(Task.PASSAGE, "rec", (TURN, PASSAGE), 2, "half of it", "blind", "key")
    assert labels.get(db, Task.PASSAGE, "rec", (TURN, PASSAGE)) == own
    assert queue.label_of(db, "rec", "passage", TURN, PASSAGE) == own
    assert labels.get_by_history_item(db, Task.PASSAGE, "rec", f"{TURN} {PASSAGE}") == own
    assert not own.missing
    labels.save(db, Task.PASSAGE, "rec", (TURN, PASSAGE), None, mode="blind", via="key")  # cannot judge
    stored = labels.get(db, Task.PASSAGE, "rec", (TURN, PASSAGE))
    assert (stored.value, stored.missing, stored.note) == (None, True, "half of it")  # a None note keeps the note
    assert labels.get(db, Task.PASSAGE, "rec", (TURN, "demo-doc-002:0")) is None


def test_an_item_keeps_its_columns_types(db):
    """An NtR item's nugget id is an integer column: the record's item holds it as the integer it is."""
    sources.sign_in(db, "rec-ntr")
    nugget = value(db, "SELECT id FROM nuggets WHERE turn_id = :t ORDER BY id LIMIT 1", {"t": TURN})
    item = (TURN, nugget, "demo-bm25")
    labels.save(db, Task.NTR, "rec-ntr", item, 1, mode="blind", via="key")
    got = labels.get(db, Task.NTR, "rec-ntr", item)
    assert (got.task, got.item, got.value) == (Task.NTR, item, 1)
    assert isinstance(got.item[1], int)


def test_other_sources_labels_carry_their_kind(db):
    found = labels.others(db, Task.PASSAGE, (TURN, PASSAGE), kinds=("llm",), exclude="rec")
    assert [r.source for r in found] == ["llm:demo-gpt", "llm:demo-llama"]
    stored = {s: labels.values(db, Task.PASSAGE, s)[(TURN, PASSAGE)] for s in ("llm:demo-gpt", "llm:demo-llama")}
    assert {r.source: r.value for r in found} == stored
    assert all(r.source_kind is SourceKind.LLM and r.item == (TURN, PASSAGE) for r in found)


def test_the_judging_screens_hold_records(db):
    sources.sign_in(db, "rec-screen")
    settings.set_setting(db, "judging_mode", "shown")
    try:
        queue.save_passage_label(db, "rec-screen", TURN, PASSAGE, 3, mode="shown")
        screen = judging.item_screen(
            db, "rec-screen", "passage", TURN, PASSAGE, passage=lambda p: judging.read_passage(db, p)
        )
    finally:
        settings.set_setting(db, "judging_mode", "blind")
    assert isinstance(screen.own, Label) and screen.own.value == 3
    assert [r.source for r in screen.revealed] == ["llm:demo-gpt", "llm:demo-llama"]
    said = [prejudgments.rationale(db, r.source, "passage", TURN, PASSAGE) for r in screen.revealed]
    assert [r.rationale for r in screen.revealed] == said and all(
        r.source_kind is SourceKind.LLM for r in screen.revealed
    )
    assert screen.passage == Passage(PASSAGE, conversations.passage_text(db, PASSAGE))
    adjudication = judging.adjudication_screen(db, TURN, PASSAGE, ["rec-screen", "llm:demo-gpt"], blind=False)
    assert adjudication.passage == screen.passage and adjudication.own is None
    assert [(c["source"], c["grade"]) for c in adjudication.labels] == [
        (label.source, label.value) for label in review.item_labels(db, TURN, PASSAGE, ["rec-screen", "llm:demo-gpt"])
    ]


def test_a_passage_is_a_record_and_an_unknown_one_an_error(db):
    passage = conversations.passage(db, PASSAGE)
    assert passage.id == PASSAGE and passage.text and passage.text == conversations.passage_text(db, PASSAGE)
    with pytest.raises(UnknownItem, match="unknown passage 'no-such:0'"):
        conversations.passage(db, "no-such:0")
