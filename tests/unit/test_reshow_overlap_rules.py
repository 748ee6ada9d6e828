"""The re-show rule and the overlap plan (assess.queueing), checked against computations written out here."""

from __future__ import annotations

import hashlib
import math
import random

import pytest

from assess.queueing import ReshowRule, interleave, plan_overlap, unit_draw


def _u(*parts) -> float:
    return int.from_bytes(hashlib.sha256("\0".join(map(str, parts)).encode()).digest()[:8], "big") / 2**64


def test_unit_draw_is_the_first_eight_bytes_of_sha256():
    assert unit_draw(7, "amy", "passage", "block", 3) == _u(7, "amy", "passage", "block", 3)
    assert 0 <= unit_draw("x") < 1


def test_one_item_per_block_of_four_at_the_drawn_offset_with_the_drawn_gap():
    rule = ReshowRule(0.25, gap=3, seed=7)
    expected = {}
    for j in range(10):  # blocks [4j, 4j + 4)
        n = 4 * j + math.floor(_u(7, "amy", "passage", "block", j) * 4)
        expected[n] = 3 + math.floor(_u(7, "amy", "passage", "gap", n) * 4)
    got = {n: rule.picked("amy", "passage", n) for n in range(40)}
    assert {n: g for n, g in got.items() if g is not None} == expected
    assert all(3 <= g <= 6 for g in expected.values())


def test_a_share_that_does_not_divide_one_still_gives_its_share_exactly():
    rule = ReshowRule(0.3, gap=2, seed=1)  # blocks start at ceil(j / 0.3): 0, 4, 7, 10, 14, ...
    picks = [n for n in range(100) if rule.picked("amy", "passage", n) is not None]
    assert len(picks) == 30
    starts = [math.ceil(j / 0.3 - 1e-9) for j in range(31)]
    assert [sum(starts[j] <= n < starts[j + 1] for n in picks) for j in range(30)] == [1] * 30
    assert ReshowRule(1.0, gap=1).picked("amy", "passage", 5) in (1, 2)  # share 1: every label


@pytest.mark.parametrize("share, gap", [(0, 10), (1.5, 10), (-0.1, 10), (True, 10), (0.1, 0), (0.1, 2.5)])
def test_a_bad_rule_is_refused(share, gap):
    with pytest.raises(ValueError):
        ReshowRule(share, gap=gap)


def _items(turns: int = 10, per_turn: int = 4):
    return [(f"t{t}", f"p{i}") for t in range(turns) for i in range(per_turn)]


@pytest.mark.parametrize("copies", [2, 3])
def test_an_item_overlap_plan_gives_the_share_to_copies_assessors(copies):
    items = _items()
    plan = plan_overlap(items, ["ann", "ben", "cy"], share=0.25, copies=copies, unit="item", seed=5)
    assert plan.primary == {f"t{t}": ["ann", "ben", "cy"][t % 3] for t in range(10)}  # round the assessors
    assert (plan.chosen, plan.population) == (10, 40)
    drawn = sorted(random.Random(5).sample(range(40), 10))
    judges: dict[tuple, list[str]] = {}
    for name, blocks in plan.extra.items():
        for block in blocks:
            assert len(block) == 1
            judges.setdefault(block[0], []).append(name)
    assert sorted(judges) == sorted(items[i] for i in drawn)
    for item, extra in judges.items():
        everyone = [plan.primary[item[0]], *extra]
        assert len(everyone) == len(set(everyone)) == copies  # 2 or 3 different assessors per item
        names = ["ann", "ben", "cy"]
        first = names.index(plan.primary[item[0]])
        assert extra == sorted((names[(first + s) % 3] for s in range(1, copies)), key=names.index)


def test_a_turn_overlap_plan_gives_whole_turns():
    plan = plan_overlap(_items(), ["ann", "ben"], share=0.3, copies=2, unit="turn", seed=0)
    assert (plan.chosen, plan.population) == (3, 10)
    blocks = [b for bs in plan.extra.values() for b in bs]
    assert len(blocks) == 3 and all(len(b) == 4 and len({t for t, _ in b}) == 1 for b in blocks)
    for name, bs in plan.extra.items():
        assert all(plan.primary[b[0][0]] != name for b in bs)
    # half up: 0.25 of 10 turns is 3 (2.5 rounded up), as the rule says
    assert plan_overlap(_items(), ["ann", "ben"], share=0.25, unit="turn").chosen == 3


@pytest.mark.parametrize(
    "names, share, copies, unit",
    [(["a"], 0.1, 2, "item"), (["a", "b"], 0.1, 3, "item"), (["a", "a"], 0.1, 2, "item"), (["a", "b"], 0, 2, "item")]
    + [(["a", "b"], 1.2, 2, "item"), (["a", "b"], 0.1, 4, "item"), (["a", "b"], 0.1, 2, "topic")],
)
def test_a_bad_plan_is_refused(names, share, copies, unit):
    with pytest.raises(ValueError):
        plan_overlap(_items(), names, share=share, copies=copies, unit=unit)


def test_interleave_spreads_blocks_evenly_and_never_splits_an_own_turn():
    own = [("a", "1"), ("a", "2"), ("b", "1"), ("b", "2"), ("c", "1"), ("c", "2")]
    x, y = [("x", "1")], [("y", "1"), ("y", "2")]
    # L = 6, E = 2: after own item 2 (end of turn a) and own item 4 (end of turn b)
    assert interleave(own, [x, y]) == [*own[:2], *x, *own[2:4], *y, *own[4:]]
    # E = 1: after own item 3, moved on to the end of turn b
    assert interleave(own, [x]) == [*own[:4], *x, *own[4:]]
    assert interleave([], [x, y]) == [*x, *y]
    assert interleave(own, [[("a", "2")], x]) == [*own[:4], *x, *own[4:]]  # an own item stays where it is
