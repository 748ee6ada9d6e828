"""Planned overlap in the store (migration 18: ``overlap_plans``, ``overlap_items``) on both engines: the
stated share judged by 2 or 3 assessors, every turn assigned to its primary, the extra items spread through
the queues by the stated rule; refusals write nothing."""

from __future__ import annotations

import random

import pytest

from assess.errors import AssessError
from store import conversations, open_db, overlap, queue
from store.db import rows
from tests.helpers import snapshot

NAMES = ["ann", "ben", "cy"]


@pytest.fixture
def db(demo_target):
    database = open_db(demo_target)
    yield database
    database.close()


@pytest.mark.parametrize("copies", [2, 3])
def test_an_item_plan_gives_the_share_to_two_or_three_assessors(db, copies):
    made = overlap.create_plan(db, "pilot", NAMES, topics=["101", "102"], share=0.1, copies=copies, seed=9, by="boss")
    ordered = queue.ordered_items(db, "passage", conversations.turns_to_assign(db, ["101", "102"], []))
    assert (made["items"], made["population"], made["chosen"]) == (217, 217, 22)  # 0.1 x 217 = 21.7 -> 22
    judges = overlap.planned_judges(db, "passage", "pilot")
    assert len(judges) == 22 and all(len(people) == copies for people in judges.values())
    # the draw: random.Random(seed) over the items in queue order
    assert sorted(judges) == sorted(ordered[i] for i in random.Random(9).sample(range(217), 22))
    items = ordered
    # every turn assigned to exactly one primary, round the assessors in queue order
    assigned = rows(db, "SELECT assessor, turn_id FROM assignments ORDER BY turn_id")
    turns = sorted({t for t, _ in items})
    assert sorted(r["turn_id"] for r in assigned) == turns
    primary = {r["turn_id"]: r["assessor"] for r in assigned}
    for (turn, _), people in judges.items():
        assert people.count(primary[turn]) == 1  # the primary and copies - 1 others: all different
    assert rows(db, "SELECT label_table, source, item, via FROM label_history WHERE item = 'overlap pilot'") == [
        {"label_table": "assignment", "source": "boss", "item": "overlap pilot", "via": "overlap"}
    ]


def test_the_extra_items_are_spread_through_the_queue_between_own_turns(db):
    overlap.create_plan(db, "pilot", NAMES[:2], topics=["101", "102"], share=0.1, copies=2, seed=1, by="boss")
    for name in NAMES[:2]:
        order = queue.queue_order(db, name).items
        own_turns = {r["turn_id"] for r in rows(db, "SELECT turn_id FROM assignments WHERE assessor = :a", {"a": name})}
        extra = [it for it in order if it[0] not in own_turns]
        own = [it for it in order if it[0] in own_turns]
        planned = rows(
            db,
            "SELECT turn_id, item_id FROM overlap_items WHERE assessor = :a AND extra = 1 ORDER BY position",
            {"a": name},
        )
        assert extra == [(r["turn_id"], r["item_id"]) for r in planned]  # in plan order
        # block j (one item each) right after own item floor((j + 1) L / (E + 1)), moved to the end of its turn
        length, count = len(own), len(extra)
        for j, item in enumerate(extra):
            p = (j + 1) * length // (count + 1)
            while 0 < p < length and own[p][0] == own[p - 1][0]:
                p += 1
            before = order[: order.index(item)]
            assert sum(it[0] in own_turns for it in before) == p
        # no own turn is split: each own turn's items are contiguous
        spans = [i for i, it in enumerate(order) if it[0] in own_turns]
        for turn in own_turns:
            at = [i for i, it in enumerate(order) if it[0] == turn]
            assert at == list(range(at[0], at[-1] + 1))
        assert spans  # the assessor has turns of their own
        assert queue.queue_version(db, name)[-1] > 0  # a new plan changes the cached order's version


def test_a_turn_plan_gives_whole_turns(db):
    made = overlap.create_plan(db, "turns", NAMES[:2], topics=["101", "102"], share=0.25, unit="turn", by="boss")
    assert (made["population"], made["chosen"]) == (12, 3)
    judges = overlap.planned_judges(db, "passage", "turns")
    drawn = {turn for turn, _ in judges}
    assert len(drawn) == 3
    pooled = rows(db, "SELECT turn_id, COUNT(*) AS n FROM pool GROUP BY turn_id")
    assert len(judges) == sum(r["n"] for r in pooled if r["turn_id"] in drawn)  # every item of a drawn turn


@pytest.mark.parametrize(
    "options, message",
    [
        ({"copies": 3}, "at least 3 assessors"),
        ({"share": 0}, "share is in \\(0, 1\\]"),
        ({"topics": ["nope"]}, "unknown conversation 'nope'"),
        ({"topics": []}, "needs turns"),
        ({"name": "two words"}, "non-empty word"),
        ({"task": "ntr"}, "passage, ptkb"),
    ],
)
def test_a_bad_plan_is_refused_and_nothing_is_written(db, demo_target, options, message):
    before = snapshot(demo_target)
    given = {"name": "pilot", "topics": ["101"], "share": 0.1, "copies": 2, **options}
    with pytest.raises(AssessError, match=message):
        overlap.create_plan(db, given.pop("name"), NAMES[:2], by="boss", **given)
    assert snapshot(demo_target) == before


def test_a_plan_name_is_used_once(db, demo_target):
    overlap.create_plan(db, "pilot", NAMES[:2], topics=["101"], share=0.1, by="boss")
    before = snapshot(demo_target)
    with pytest.raises(AssessError, match="exists already"):
        overlap.create_plan(db, "pilot", NAMES[:2], topics=["102"], share=0.1, by="boss")
    assert snapshot(demo_target) == before


def test_with_accounts_on_a_plan_names_enabled_accounts_only(db, demo_target):
    from store import accounts

    accounts.add(db, "boss", "organizer", None, by=None)
    accounts.add(db, "ann", "assessor", None, by="boss")
    accounts.add(db, "ben", "assessor", None, by="boss")
    accounts.set_disabled(db, "ben", True, by="boss")
    before = snapshot(demo_target)
    for names, missing in ((["ann", "<b>eve</b>"], "'<b>eve</b>'"), (["ann", "ben"], "'ben'")):
        with pytest.raises(AssessError, match=f"no enabled account {missing}"):
            overlap.create_plan(db, "pilot", names, topics=["101"], share=0.1, by="boss")
        assert snapshot(demo_target) == before
    accounts.set_disabled(db, "ben", False, by="boss")
    made = overlap.create_plan(db, "pilot", ["ann", "ben"], topics=["101"], share=0.1, by="boss")
    assert made["plan"] == "pilot" and set(made["assignments"]) == {"ann", "ben"}
