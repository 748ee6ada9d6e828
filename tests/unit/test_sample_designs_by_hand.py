"""`audit sample --design stratified|disagreement` (assess.measures.sampling) worked by hand: the allocation and
inclusion probabilities, then the Horvitz-Thompson (IPW) estimate and its variance from the drawn items, as
Cochran's stratified estimator gives them (W. G. Cochran, Sampling Techniques, 3rd ed., 1977, eqs. 5.1 and 5.7:
ybar_st = sum_h W_h ybar_h, v = sum_h W_h^2 (1 - f_h) s_h^2 / n_h, s_h^2 with ddof 1), the formula survey
packages (R's survey::svymean, samplics) use for a stratified simple random sample without replacement."""

from __future__ import annotations

import math

import pytest

from assess.measures import ppi, sampling

STRATIFIED_JUDGE = {**{f"a{i}": 0 for i in range(8)}, **{f"b{i}": 3 for i in range(4)}}


def test_stratified_design_by_hand():
    # Neyman weights N_h S_h with the given guesses: grade 0: 8 x sqrt(.5 x .5) = 4.0; grade 3: 4 x sqrt(.1 x .9)
    # = 1.2. Budget 5: 5 x 4/5.2 = 3.85 and 1.15; 1.15 is below the minimum of 2, so grade 3 gets 2 and grade 0
    # the other 3: pi = 3/8 and 2/4.
    sample = sampling.stratified_sample(5, STRATIFIED_JUDGE, guess={0: 0.5, 3: 0.1}, seed=3)
    assert {h: (a["N"], a["n"], a["probability"]) for h, a in sample.allocation.items()} == {
        0: (8, 3, 0.375),
        3: (4, 2, 0.5),
    }
    assert sample.allocation[0]["weight"] == 4.0 and sample.allocation[3]["weight"] == pytest.approx(1.2)
    assert sample.items == ["a0", "a1", "a4", "b2", "b3"]  # seed 3's draw
    # the inclusion probabilities of the 12 items sum to the budget: 8 x 3/8 + 4 x 1/2 = 5
    assert sum(a["N"] * a["probability"] for a in sample.allocation.values()) == 5
    # humans: a0 relevant, a1 and a4 not; b2 relevant, b3 not.
    # HT mean = (1/12) (1/0.375 + 1/0.5) = (8/3 + 2)/12 = 7/18; Cochran: 8/12 x 1/3 + 4/12 x 1/2 = 7/18.
    # v = (8/12)^2 (1 - 3/8) (1/3) / 3 + (4/12)^2 (1 - 1/2) (1/2) / 2 = 5/162 + 1/72 = 29/648.
    human = {"a0": 1, "a1": 0, "a4": 0, "b2": 1, "b3": 0}
    judge = ppi.at_least(STRATIFIED_JUDGE, 2)
    out = ppi.corrected_mean(judge, human, sample.probability, strata=sample.stratum)
    assert out.human_only.value == pytest.approx(7 / 18, abs=1e-12)
    assert out.human_only.se == pytest.approx(math.sqrt(29 / 648), abs=1e-12)
    # the judge is constant inside each stratum (the design stratifies by it): PPI equals the human-only estimate
    assert (out.ppi.value, out.ppi.se) == pytest.approx((7 / 18, math.sqrt(29 / 648)), abs=1e-12)


def test_disagreement_design_by_hand():
    # |judge - second|: c0-c5 agree (d = 0), d0-d2 differ by 2, e0 has no second label (weighed as d = 1).
    # Weights N_h (floor + d): 6 x 1 = 6, 3 x 3 = 9, 1 x 2 = 2. Budget 5: 5 x 6/17 = 1.76 (below 2) and
    # 5 x 2/17 = 0.59 (below e's 1 item) are raised to 2 and 1; the 2 left go to d = 2: pi = 2/6, 2/3, 1/1,
    # rising with the disagreement.
    judge = {**{f"c{i}": 1 for i in range(6)}, **{f"d{i}": 3 for i in range(3)}, "e0": 2}
    second = {**{f"c{i}": 1 for i in range(6)}, **{f"d{i}": 1 for i in range(3)}}
    sample = sampling.disagreement_sample(5, judge, second, seed=3)
    assert {h: (a["N"], a["n"], a["probability"]) for h, a in sample.allocation.items()} == {
        0: (6, 2, pytest.approx(1 / 3)),
        2: (3, 2, pytest.approx(2 / 3)),
        sampling.MISSING: (1, 1, 1.0),
    }
    assert [sample.allocation[h]["weight"] for h in (0, 2, sampling.MISSING)] == [6.0, 9.0, 2.0]
    assert sample.items == ["c0", "c4", "d0", "d2", "e0"]  # seed 3's draw
    # humans: c0 not relevant, c4 relevant; d0, d2 relevant; e0 not.
    # HT mean = (1/10) (1/(1/3) + 2/(2/3) + 0) = 0.6; Cochran: 6/10 x 1/2 + 3/10 x 1 + 1/10 x 0 = 0.6.
    # v = (6/10)^2 (1 - 2/6) (1/2) / 2 + 0 (d = 2: both 1) + 0 (e: judged in full) = 0.06.
    human = {"c0": 0, "c4": 1, "d0": 1, "d2": 1, "e0": 0}
    out = ppi.corrected_mean(ppi.at_least(judge, 2), human, sample.probability, strata=sample.stratum)
    assert (out.human_only.value, out.human_only.se) == pytest.approx((0.6, math.sqrt(0.06)), abs=1e-12)
    assert (out.ppi.value, out.ppi.se) == pytest.approx((0.6, math.sqrt(0.06)), abs=1e-12)
