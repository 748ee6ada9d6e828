"""Active time and guideline versions (migration 19) on both engines: every label write stores its own active
time and the guideline version in force, on the label and on its history event; undos and imports carry none;
versions are appended by organizers only; the table export keeps its columns; the speed reads find the events."""

from __future__ import annotations

import pytest

from assess.errors import AssessError
from assess.services.accounts import add_account
from assess.tasks import Task
from store import guidelines, labels, open_db, queue
from store.db import rows
from store.exports import table_frame
from store.review import timed_events
from store.rights import NotAllowed
from store.sources import ensure_source

EVENTS = (
    "SELECT item, old_value, new_value, active_ms, guideline_version FROM label_history "
    "WHERE source = :s AND label_table = :t ORDER BY id"
)


@pytest.fixture
def db(demo_target):
    database = open_db(demo_target)
    yield database
    database.close()


def _pooled(db, n: int = 2) -> list[tuple[str, str]]:
    found = rows(db, "SELECT turn_id, passage_id FROM pool ORDER BY turn_id, passage_id")
    return [(r["turn_id"], r["passage_id"]) for r in found[:n]]


def test_each_write_keeps_its_own_time_and_guideline_version(db):
    amy = ensure_source(db, "amy", "assessor")
    (turn, passage), other = _pooled(db)
    queue.save_passage_label(db, amy, turn, passage, 2, mode="blind", via="ui", active_ms=2150)
    guidelines.add_version(db, "passage", "Grade by the turn's need.", by="org")
    queue.save_passage_label(db, amy, turn, passage, 3, mode="blind", via="ui", active_ms=900)
    queue.save_passage_label(db, amy, *other, None, mode="blind", via="ui")  # untimed
    item = f"{turn} {passage}"
    assert rows(db, EVENTS, {"s": amy, "t": "passage"}) == [
        {"item": item, "old_value": None, "new_value": "2", "active_ms": 2150, "guideline_version": None},
        {"item": item, "old_value": "2", "new_value": "3", "active_ms": 900, "guideline_version": 1},
        {
            "item": " ".join(other),
            "old_value": None,
            "new_value": "cannot-judge",
            "active_ms": None,
            "guideline_version": 1,
        },
    ]
    stored = rows(
        db,
        "SELECT passage_id, grade, active_ms, guideline_version FROM passage_labels WHERE source = :s "
        "ORDER BY passage_id",
        {"s": amy},
    )
    assert {r["passage_id"]: (r["grade"], r["active_ms"], r["guideline_version"]) for r in stored} == {
        passage: (3, 900, 1),
        other[1]: (None, None, 1),
    }
    # an undo is no timed judgment: its event and the label row carry no time
    assert labels.undo(db, Task.PASSAGE, amy) == other
    assert labels.undo(db, Task.PASSAGE, amy) == (turn, passage)
    undone = rows(db, EVENTS, {"s": amy, "t": "passage"})[-2:]
    assert [(e["new_value"], e["active_ms"]) for e in undone] == [(None, None), ("2", None)]
    assert labels.get(db, Task.PASSAGE, amy, (turn, passage)).value == 2
    assert rows(db, "SELECT active_ms FROM passage_labels WHERE source = :s", {"s": amy}) == [{"active_ms": None}]


def test_every_timed_kind_and_a_refused_time(db):
    amy = ensure_source(db, "amy", "assessor")
    statement = rows(db, "SELECT conversation_id, statement_id FROM ptkb_statements ORDER BY 1, 2 LIMIT 1")[0]
    turn = rows(
        db, "SELECT id FROM turns WHERE conversation_id = :conversation_id ORDER BY position LIMIT 1", statement
    )[0]["id"]
    guidelines.add_version(db, "ptkb", "v1", by=None)
    guidelines.add_version(db, "ptkb", "v2", by=None)
    queue.save_ptkb_label(db, amy, turn, statement["statement_id"], 1, mode="shown", via="ui", active_ms=0)
    assert rows(db, EVENTS, {"s": amy, "t": "ptkb"})[-1]["active_ms"] == 0
    assert rows(db, "SELECT active_ms, guideline_version FROM ptkb_labels WHERE source = :s", {"s": amy}) == [
        {"active_ms": 0, "guideline_version": 2}
    ]
    before = rows(db, "SELECT * FROM label_history ORDER BY id")
    for bad in (-1, "5", True, 1.5):
        with pytest.raises(AssessError, match="whole number of milliseconds"):
            labels.save(db, Task.PTKB, amy, (turn, statement["statement_id"]), 0, mode="shown", via="ui", active_ms=bad)
    assert rows(db, "SELECT * FROM label_history ORDER BY id") == before  # nothing written


def test_guideline_versions_are_appended_by_organizers_only(db):
    add_account(db, "olga", "organizer", password="a long password 1", by="setup")
    add_account(db, "ann", "assessor", password="a long password 2", by="setup")
    assert guidelines.current(db, "passage") is None
    assert guidelines.add_version(db, "passage", "first", by="olga") == 1
    assert guidelines.add_version(db, "passage", "first", by="olga") is None  # unchanged: no new version
    assert guidelines.add_version(db, "passage", "second", by="olga") == 2
    with pytest.raises(NotAllowed):
        guidelines.add_version(db, "passage", "third", by="ann")
    for bad in ("", "   "):
        with pytest.raises(AssessError, match="needs some text"):
            guidelines.add_version(db, "passage", bad, by="olga")
    with pytest.raises(AssessError, match="unknown task|task"):
        guidelines.add_version(db, "no-such-task", "x", by="olga")
    assert [(v["version"], v["text"], v["created_by"]) for v in guidelines.versions(db, "passage")] == [
        (2, "second", "olga"),
        (1, "first", "olga"),
    ]
    assert guidelines.current(db, "passage")["version"] == 2
    assert guidelines.versions(db, "ptkb") == []


def test_labels_under_an_older_version_are_listed(db):
    amy, bob = ensure_source(db, "amy", "assessor"), ensure_source(db, "bob", "assessor")
    first, second = _pooled(db)
    guidelines.add_version(db, "passage", "v1", by=None)
    queue.save_passage_label(db, amy, *first, 1, mode="blind", via="ui")
    queue.save_passage_label(db, bob, *first, 2, mode="blind", via="ui")
    guidelines.add_version(db, "passage", "v2", by=None)
    queue.save_passage_label(db, bob, *second, 0, mode="blind", via="ui")
    queue.save_passage_label(db, bob, *first, 3, mode="blind", via="ui")  # re-judged under v2
    older = guidelines.labels_under_older(db)
    assert [
        (r["task"], r["assessor"], r["item"], r["value"], r["guideline_version"], r["current_version"]) for r in older
    ] == [("passage", amy, " ".join(first), 1, 1, 2)]


def test_the_table_export_keeps_its_columns_and_timed_events_read_lengths(db):
    amy = ensure_source(db, "amy", "assessor")
    (turn, passage), other = _pooled(db)
    columns = list(table_frame(db, "passage_labels").columns)
    history_columns = list(table_frame(db, "label_history").columns)
    assert columns == ["source", "turn_id", "passage_id", "grade", "note", "mode", "via", "updated_at"]
    assert history_columns == ["id", "label_table", "source", "item", "old_value", "new_value", "mode", "via", "at"]
    queue.save_passage_label(db, amy, turn, passage, 2, mode="blind", via="ui", active_ms=1234)
    queue.save_passage_label(db, amy, *other, 1, mode="blind", via="ui")  # untimed: no event read
    found = timed_events(db)
    text = rows(db, "SELECT text FROM passages WHERE id = :p", {"p": passage})[0]["text"]
    assert [(e["assessor"], e["task"], e["item"], e["value"], e["active_ms"], e["length"]) for e in found] == [
        (amy, "passage", f"{turn} {passage}", "2", 1234, None if text is None else len(text))
    ]
    assert timed_events(db, assessor="nobody") == []
