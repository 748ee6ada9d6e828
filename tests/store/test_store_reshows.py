"""Re-shown items in the store (migration 18: ``reshows``) on both engines: which labels are picked, when one
is due, its answer stored beside the untouched primary label; refusals leave the store unchanged."""

from __future__ import annotations

import pytest

from assess.errors import AssessError, UnknownItem
from assess.queueing import ReshowRule
from store import labels, open_db, queue, reshows, sources
from store.db import rows

RESHOWS = (
    "SELECT turn_id, item_id, first_count, min_due, due_count, value, answered_at FROM reshows ORDER BY first_count"
)


@pytest.fixture
def db(demo_target):
    database = open_db(demo_target)
    sources.sign_in(database, "amy")
    yield database
    database.close()


def _judge(db, items, grade=2, **options):
    for turn, passage in items:
        queue.save_passage_label(db, "amy", turn, passage, grade, **options)


def test_picked_labels_are_recorded_as_the_rule_says_and_come_due_in_time(db):
    rule = reshows.set_rule(db, 0.5, gap=2, seed=4, by="boss")
    assert reshows.rule(db) == rule == ReshowRule(0.5, gap=2, seed=4)
    items = [(t, p) for t, p, _ in queue.queue(db, "amy")[:8]]
    _judge(db, items[:6])
    expected = [
        (*items[n], n, n + 1 + 2, n + 1 + rule.picked("amy", "passage", n), None, None)
        for n in range(6)
        if rule.picked("amy", "passage", n) is not None
    ]
    assert [tuple(r.values()) for r in rows(db, RESHOWS)] == expected
    assert len(expected) == 3  # one per block of two labels
    # seed 4 picks labels 0, 2 and 4 with gaps 4, 3 and 2: due at 5, 6 and 7 labels held (least: 3, 5, 7)
    assert [(r[2], r[4]) for r in expected] == [(0, 5), (2, 6), (4, 7)]
    assert reshows.due(db, "amy") == items[0]  # 6 labels held
    assert reshows.due(db, "amy", held=6) == items[0]  # as a judging page that keeps the count asks
    assert reshows.due(db, "amy", held=4) is None  # the count given is the count used
    reshows.answer(db, "amy", "passage", items[0], 1, mode="blind")
    assert reshows.due(db, "amy") == items[2]
    reshows.answer(db, "amy", "passage", items[2], 1, mode="blind")
    assert reshows.due(db, "amy") is None
    assert reshows.due(db, "amy", complete=True) is None  # a complete queue waits for the least gap: 7
    _judge(db, items[6:7])
    assert reshows.due(db, "amy", complete=True) == items[4]


def test_only_new_labels_in_a_study_mode_are_picked(db):
    reshows.set_rule(db, 1.0, gap=1, by="boss")
    item = [(t, p) for t, p, _ in queue.queue(db, "amy")[:1]]
    _judge(db, item)
    _judge(db, item, grade=3)  # a changed label is not a new one
    assert len(rows(db, RESHOWS)) == 1
    sources.ensure_source(db, "adjudication", "adjudication")
    queue.save_passage_label(db, "adjudication", *item[0], 1, mode="adjudication")
    assert rows(db, "SELECT assessor FROM reshows") == [{"assessor": "amy"}]
    reshows.set_rule(db, 0, by="boss")
    assert reshows.rule(db) is None
    _judge(db, [(t, p) for t, p, _ in queue.queue(db, "amy")[1:3]])
    assert len(rows(db, RESHOWS)) == 1


def test_an_answer_is_stored_beside_the_untouched_label_and_refusals_change_nothing(db):
    reshows.set_rule(db, 1.0, gap=1, by="boss")
    items = [(t, p) for t, p, _ in queue.queue(db, "amy")[:3]]
    _judge(db, items[:2], grade=3)
    before = labels.get(db, "passage", "amy", items[0])
    stored = rows(db, "SELECT * FROM reshows ORDER BY first_count")
    with pytest.raises(AssessError, match="grade|0-4|scale|label"):
        reshows.answer(db, "amy", "passage", items[0], 7, mode="blind")
    with pytest.raises(UnknownItem, match="not an item of 'amy' picked to come back"):
        reshows.answer(db, "amy", "passage", items[2], 1, mode="blind")
    assert rows(db, "SELECT * FROM reshows ORDER BY first_count") == stored
    reshows.answer(db, "amy", "passage", items[0], None, mode="blind")
    assert rows(db, "SELECT value, first_value, first_missing FROM reshows WHERE item_id = :i", {"i": items[0][1]}) == [
        {"value": None, "first_value": 3, "first_missing": 0}
    ]
    assert labels.get(db, "passage", "amy", items[0]) == before
    assert reshows.answers(db)[0]["second"] is None
    # a postponed re-show comes after the next label; an undone label's re-show is not due
    reshows.postpone(db, "amy", "passage", items[1])
    assert rows(db, "SELECT due_count FROM reshows WHERE item_id = :i", {"i": items[1][1]}) == [{"due_count": 3}]
    assert reshows.due(db, "amy") is None
    _judge(db, items[2:3])
    assert reshows.due(db, "amy") == items[1]
    queue.undo(db, "amy")  # takes back the third label: held 2 again
    queue.undo(db, "amy")  # and the second, whose re-show is then never due
    assert reshows.due(db, "amy", complete=True) is None


def test_a_bad_rule_is_refused_and_nothing_is_set(db):
    for share, gap in ((1.5, 10), (0.1, 0)):
        with pytest.raises(AssessError):
            reshows.set_rule(db, share, gap=gap, by="boss")
    assert reshows.rule(db) is None
    with pytest.raises(AssessError, match="re-shown on the passage queue"):
        reshows.rule(db, "ptkb")
