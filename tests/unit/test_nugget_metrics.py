"""CONE-RAG nugget metrics (assess.measures.nugget_recall): hand-computed turns, the reference code's skip
rules (docs/measures.md#nugget-recall), de-duplicated gold sets, the personal split, and the NtR crowd labels."""

from __future__ import annotations

import pytest

from assess.errors import AssessError
from assess.formats import parse_ntr_labels, parse_nuggets
from assess.measures.nugget_recall import NtnTurn, ntn_run, ntn_turn, ntr_run, ntr_turn, split_personal
from tests.conftest import shared_file

GOLD = {"1_1": {"[1]", "[2]", "[3]", "[4]"}, "1_2": {"[1]", "[2]"}, "1_3": set()}
DEDUP = {"1_1": {"[1]", "[3]"}, "1_2": {"[1]", "[2]"}, "1_3": set()}


def test_ntn_turn_counts_distinct_matched_nuggets():
    # r1 entails g1 and g2, r2 entails g1: N'_g = {g1, g2}, N'_r = {r1, r2}; r3 matches nothing.
    recall, precision = ntn_turn({"g1", "g2", "g3"}, {"r1", "r2", "r3"}, [("r1", "g1"), ("r1", "g2"), ("r2", "g1")])
    assert recall == pytest.approx(2 / 3) and precision == pytest.approx(2 / 3)
    # Pairs outside either set are ignored (e.g. a gold nugget removed by de-duplication).
    assert ntn_turn({"g1"}, {"r1"}, [("r1", "g9"), ("r9", "g1")]) == (0.0, 0.0)
    assert ntn_turn(set(), {"r1"}, []) == (None, 0.0)
    assert ntn_turn({"g1"}, set(), []) == (0.0, None)


def test_ntn_run_skip_rules_of_the_reference_code():
    responses = {
        "1_1": NtnTurn(["[1]", "[2]"], [("[1]", "[1]"), ("[2]", "[2]")]),  # recall 2/4, precision 1
        "1_2": NtnTurn([], []),  # no response nuggets: precision skipped, recall 0
        "1_3": NtnTurn(["[1]"], []),  # no gold nuggets: recall 0 (code) or skipped
    }
    out = ntn_run(responses, GOLD)
    assert out["recall"]["mean"] == pytest.approx((0.5 + 0 + 0) / 3) and out["recall"]["n"] == 3
    assert out["precision"]["mean"] == pytest.approx((1 + 0) / 2) and out["precision"]["n"] == 2
    skipped = ntn_run(responses, GOLD, empty_gold="skip")
    assert skipped["recall"]["mean"] == pytest.approx(0.25) and skipped["recall"]["n"] == 2
    # Against the de-duplicated gold set, the match on gold [2] no longer counts.
    dedup = ntn_run(responses, DEDUP, empty_gold="skip")
    assert dedup["recall"]["per_turn"]["1_1"] == pytest.approx(1 / 2)
    assert dedup["precision"]["per_turn"]["1_1"] == pytest.approx(1 / 2)
    with pytest.raises(AssessError):
        ntn_run(responses, GOLD, empty_gold="maybe")


def test_ntr_turn_and_unjudged_policy():
    captured = {"[1]": True, "[2]": False, "[3]": True}
    assert ntr_turn(GOLD["1_1"], captured) == pytest.approx(2 / 4)  # [4] unjudged counts as no
    assert ntr_turn(GOLD["1_1"], captured, unjudged="ignore") == pytest.approx(2 / 3)
    assert ntr_turn(DEDUP["1_1"], captured) == pytest.approx(1.0)  # only [1] and [3] remain
    assert ntr_turn(set(), captured) is None
    assert ntr_turn({"[9]"}, captured, unjudged="ignore") is None
    with pytest.raises(AssessError):
        ntr_turn({"[1]"}, captured, unjudged="yes")


def test_ntr_run_skips_turns_without_gold_or_response():
    matches = {"1_1": {"[1]": True, "[2]": True, "[3]": False, "[4]": False}, "1_3": {"[1]": True}}
    # 1_2 has no entry (empty response) and 1_3 no gold nugget: only 1_1 is scored.
    out = ntr_run(matches, GOLD)
    assert out == {"mean": 0.5, "n": 1, "per_turn": {"1_1": 0.5}}
    assert ntr_run({}, GOLD) == {"mean": None, "n": 0, "per_turn": {}}


def test_split_personal():
    per_turn = {"1_1": 0.5, "1_2": 0.25, "1_3": None, "2_1": 1.0}
    out = split_personal(per_turn, {"1_1", "2_1", "1_3"})
    assert out["all"] == {"mean": pytest.approx(1.75 / 3), "n": 3}
    assert out["personal"] == {"mean": pytest.approx(0.75), "n": 2}
    assert out["non_personal"] == {"mean": pytest.approx(0.25), "n": 1}
    assert split_personal({}, set())["all"] == {"mean": None, "n": 0}


@pytest.mark.realdata
def test_crowd_ntr_labels_against_human_gold():
    root = ("data", "irlabamsterdam-CONE-RAG", "resources", "human_resources")
    labels: dict = {}
    for r in parse_ntr_labels(shared_file(*root, "human-study-matching-labels.txt")):
        labels.setdefault(r.run, {}).setdefault(r.turn_id, {})[r.nugget_key] = bool(r.match)

    def gold_sets(name):
        out: dict = {}
        for n in parse_nuggets(shared_file(*root, name)):
            out.setdefault(n.turn_id, set()).add(n.key)
        return out

    gold = gold_sets("gold_nuggets_human.json")
    dedup = gold_sets("gold_nuggets_human_deduplicated.json")
    assert sorted(labels) == sorted(["iires-1", "rali-3", "ksu-1", "nii-1", "uva-3", "infos-2"])
    assert sum(len(v) for run in labels.values() for v in run.values()) == 1086
    for run, matches in labels.items():
        assert all(set(m) <= gold[turn] for turn, m in matches.items())  # every label names a gold nugget
        for g in (gold, dedup):
            out = ntr_run(matches, g, unjudged="ignore")
            assert 0 < out["n"] <= 25 and 0.0 <= out["mean"] <= 1.0
            strict = ntr_run(matches, g, unjudged="no")
            assert strict["mean"] <= out["mean"] + 1e-12  # unlabelled nuggets only lower recall
