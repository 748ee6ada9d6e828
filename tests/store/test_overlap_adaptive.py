"""Adaptive overlap (store/overlap_adaptive.py, migration 25) on both engines: on a hand-made turn, the judge's
and the people's grades decide exactly which items get a second and third assessor and which go to
adjudication; the copies reach the queues; the ceiling keeps to the base share; refusals write nothing."""

from __future__ import annotations

import random

import pytest

from assess.errors import AssessError
from store import open_db, overlap, overlap_adaptive, queue, review
from store.db import rows, write
from store.labels import save
from store.sources import ensure_source
from tests.helpers import snapshot

NAMES = ["ann", "ben", "cy"]
JUDGE = "llm:judge"


@pytest.fixture
def db(demo_target):
    database = open_db(demo_target)
    yield database
    database.close()


def _turn(db):
    """The demo's first pooled turn and its items in queue order."""
    turn = queue.ordered_items(
        db, "passage", [rows(db, "SELECT turn_id FROM pool ORDER BY turn_id LIMIT 1")[0]["turn_id"]]
    )
    return turn[0][0], turn


def _judge(db, item, grade):
    with write(db):
        ensure_source(db, JUDGE, "llm")
        save(db, "passage", JUDGE, item, grade, mode="import", via="llm")


def _decided(db):
    return {(r["item_id"], r["step"], r["assessor"]) for r in overlap_adaptive.decisions(db, "pilot")}


def test_the_margin_decides_exactly_the_stated_items(db):
    turn, items = _turn(db)
    share = 1 / len(items)  # one base item: round(1.0)
    (base,) = [items[i] for i in random.Random(5).sample(range(len(items)), 1)]
    a, b, c, d, e, f, g = [it for it in items if it != base][:7]
    for item, grade in ((a, 3), (b, 1), (c, 3), (d, 4), (f, 2)):
        _judge(db, item, grade)  # e and g: the judge has no grade (yet)
    made = overlap.create_plan(
        db, "pilot", NAMES, turns=[turn], share=share, copies=3, seed=5, margin=2, judge=JUDGE, by="boss"
    )
    assert made["adaptive"] == {"margin": 2.0, "judge": JUDGE, "steps": {"judge": 0, "humans": 0, "disputed": 0}}
    assert _decided(db) == {(base[1], "base", "ben")}  # ann is the turn's primary; the draw's second is ben

    def grade(who, item, value):
        queue.save_passage_label(db, who, item[0], item[1], value)

    grade("ann", a, 0)  # 0 vs the judge's 3: apart by 3 >= 2 -> ben
    grade("ann", b, 2)  # 2 vs 1: 1 < 2, no one else
    grade("ann", c, 1)  # 1 vs 3: apart by 2 -> ben
    grade("ann", d, 0)  # 0 vs 4 -> ben
    grade("ann", e, 4)  # no judge grade: no one else
    grade("ann", f, None)  # cannot judge: compares with nothing
    grade("ann", g, 0)
    grade("ann", base, 0)
    grade("ben", base, 1)  # a base item's people 1 apart: nothing
    grade("ben", c, 1)  # agrees with ann: settled
    grade("ben", a, 3)  # ann 0, ben 3: a third (cy)
    grade("cy", a, 1)  # 0, 3, 1: 0 and 1 agree within the margin: settled
    grade("ben", d, 4)  # 0, 4 -> cy
    grade("cy", d, 2)  # 0, 4, 2: every pair apart by >= 2 -> adjudication
    assert _decided(db) == {
        (base[1], "base", "ben"),
        (a[1], "judge", "ben"),
        (a[1], "humans", "cy"),
        (c[1], "judge", "ben"),
        (d[1], "judge", "ben"),
        (d[1], "humans", "cy"),
        (d[1], "disputed", None),
    }
    grades = {(r["item_id"], r["step"]): r["grades"] for r in overlap_adaptive.decisions(db, "pilot")}
    assert grades[(a[1], "judge")] == {"ann": 0, JUDGE: 3}
    assert grades[(d[1], "disputed")] == {"ann": 0, "ben": 4, "cy": 2}

    _judge(db, g, 3)  # the judge's grade comes after ann's: taken when the plan is advanced
    assert overlap_adaptive.advance(db, "pilot") == {"judge": 1, "humans": 0, "disputed": 0}
    assert overlap_adaptive.advance(db, "pilot") == {"judge": 0, "humans": 0, "disputed": 0}  # once
    assert (g[1], "judge", "ben") in _decided(db)

    # the copies are extras of ben's and cy's queues, as planned overlap's; the disputed item heads adjudication
    ben, cy = (list(queue.queue_order(db, who, open_mode=False).items) for who in ("ben", "cy"))
    assert (ben, cy) == ([base, a, c, d, g], [a, d])  # their own turns: none in this plan
    assert review.adjudication_order(db, ["ann", "ben"])[0] == d
    assert overlap_adaptive.disputed(db) == [d] and overlap_adaptive.item_assessors(db, *d) == NAMES
    # the human ceiling reads the base share with the draw's two assessors only
    assert overlap.planned_judges(db, "passage", "pilot") == {base: ["ann", "ben"]}


def test_without_a_judge_only_the_base_share_and_human_disagreement_add_people(db):
    turn, items = _turn(db)
    overlap.create_plan(db, "pilot", NAMES, turns=[turn], share=0.2, copies=3, seed=1, margin=1, by="boss")
    based = {r["item_id"] for r in overlap_adaptive.decisions(db, "pilot")}
    assert len(based) == round(0.2 * len(items))
    first = next(it for it in items if it[1] in based)
    other = next(it for it in items if it[1] not in based)
    queue.save_passage_label(db, "ann", *other, 0)
    queue.save_passage_label(db, "ann", *first, 0)
    queue.save_passage_label(db, "ben", *first, 1)  # apart by the margin: cy
    assert _decided(db) - {(i, "base", "ben") for i in based} == {(first[1], "humans", "cy")}


@pytest.mark.parametrize(
    "options, message",
    [
        ({"margin": 0}, "margin: a grade difference in \\(0, 4\\]"),
        ({"margin": 5}, "margin: a grade difference in \\(0, 4\\]"),
        ({"margin": float("nan")}, "margin: a grade difference"),
        ({"margin": 1, "judge": "nobody"}, "--judge 'nobody' has no passage labels"),
        ({"margin": 1, "judge": "ann"}, "also an assessor"),
        ({"margin": 1, "unit": "turn"}, "one by one"),
        ({"judge": "llm:demo-gpt"}, "belongs to an adaptive plan"),
    ],
)
def test_a_bad_adaptive_plan_is_refused_and_nothing_is_written(db, demo_target, options, message):
    before = snapshot(demo_target)
    with pytest.raises(AssessError, match=message):
        overlap.create_plan(db, "pilot", NAMES, topics=["101"], share=0.1, copies=3, by="boss", **options)
    assert snapshot(demo_target) == before
