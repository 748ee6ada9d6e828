"""CAsT 2022 path measures (assess.measures.cast_paths): the overview's CPS example and the synthetic path
of docs/measures.md#cast-paths, the > / >= choice, and properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assess.errors import AssessError
from assess.measures.cast_paths import ccg, cps, mean_over_paths, path_scores, tbccg, wtbccg

SYNTHETIC = [0.5, 0.2, 0.6, 0.4, 0.1]


def test_cps_example_of_the_overview():
    # CAsT 2022 overview, Section 3.1: path A = r r n r n, path B = n r r r n, gamma = 2.
    path_a = [1, 1, 0, 1, 0]
    path_b = [0, 1, 1, 1, 0]
    assert cps(path_a, gamma=2) == pytest.approx(5 / 25)
    assert cps(path_b, gamma=2) == pytest.approx(9 / 25)


def test_synthetic_path():
    # docs/measures.md#cast-paths, theta = 0.33.
    assert ccg(SYNTHETIC) == pytest.approx(0.36)
    assert cps(SYNTHETIC, gamma=2) == pytest.approx(0.2)
    assert cps(SYNTHETIC, gamma=3) == pytest.approx(0.072)
    assert tbccg(SYNTHETIC, p_r=1, p_n=0) == pytest.approx(0.14)
    assert tbccg(SYNTHETIC, p_r=1, p_n=0.25) == pytest.approx(0.195)


def test_strict_threshold_is_the_default():
    at_theta = [0.33, 0.33, 0.5]
    assert cps(at_theta) == pytest.approx(1 / 9)  # only the last turn satisfies s > 0.33
    assert cps(at_theta, strict=False) == pytest.approx(1.0)  # s >= 0.33: one run of 3
    assert tbccg(at_theta, p_n=0) == pytest.approx(0.33 / 3)
    assert tbccg(at_theta, p_n=0, strict=False) == pytest.approx((0.33 + 0.33 + 0.5) / 3)


def test_wtbccg_weights():
    assert wtbccg(SYNTHETIC, p_n=0.25) == pytest.approx(tbccg(SYNTHETIC, p_n=0.25))
    w = [2, 1, 1, 1, 1]
    reach = [1, 1, 0.25, 0.25, 0.25]  # t2 (0.2) fails, t3 and t4 satisfy
    expected = sum(r * x * s for r, x, s in zip(reach, w, SYNTHETIC)) / sum(w)
    assert wtbccg(SYNTHETIC, w, p_n=0.25) == pytest.approx(expected)
    with pytest.raises(AssessError):
        wtbccg(SYNTHETIC, [1, 1])
    with pytest.raises(AssessError):
        wtbccg(SYNTHETIC, [0] * 5)


def test_bad_inputs():
    with pytest.raises(AssessError):
        ccg([])
    with pytest.raises(AssessError):
        tbccg(SYNTHETIC, p_r=0.2, p_n=0.5)


def test_mean_over_paths():
    turn_scores = {"t1": 0.5, "t2": 0.2, "t3": 0.6}
    paths = {"p1": ["t1", "t2"], "p2": ["t1", "t3", "t4"]}  # t4 unscored -> 0
    out = mean_over_paths(turn_scores, paths, "ccg")
    assert out["per_path"] == pytest.approx({"p1": 0.35, "p2": 1.1 / 3})
    assert out["mean"] == pytest.approx((0.35 + 1.1 / 3) / 2) and out["n_paths"] == 2
    assert mean_over_paths(turn_scores, [["t1"], ["t3"]], "CPS", gamma=3)["mean"] == pytest.approx(1.0)
    assert mean_over_paths(turn_scores, {}, "CCG")["mean"] is None
    with pytest.raises(AssessError):
        path_scores(turn_scores, ["t4"], missing=None)
    with pytest.raises(AssessError):
        mean_over_paths(turn_scores, paths, "nDCG")


scores = st.lists(st.floats(0, 1), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(scores, st.sampled_from([0.0, 0.25, 1.0]), st.sampled_from([2.0, 3.0]))
def test_bounds(values, p_n, gamma):
    c = ccg(values)
    t = tbccg(values, p_n=p_n)
    assert 0.0 <= cps(values, gamma=gamma) <= 1.0
    assert 0.0 <= t <= c + 1e-12 <= 1.0 + 1e-12  # TBCCG divides by |p|, so it never exceeds CCG
    if p_n == 1.0:
        assert t == pytest.approx(c)
