"""Controlled Bradley-Terry (LMArena's style control) against statsmodels' logistic regression on a seeded
simulation with a citation confound; a hand-worked case; fragility sets verified by refitting."""

from __future__ import annotations

import math

import numpy as np
import pytest

from assess.errors import AssessError
from assess.measures import battle_controls as bc
from assess.measures import fragility as fr


def _simulation(seed=7, n=6, m=4000):
    """Runs of known strength whose citation habits have nothing to do with their quality, and voters who
    reward the answer with more citations: the confound a RAG arena must see and correct."""
    rng = np.random.default_rng(seed)
    true = np.linspace(-1, 1, n)
    habit = np.array([6.0, 1.0, 5.0, 1.5, 4.0, 1.0])[:n]  # the weak runs cite most
    left = rng.integers(0, n, m)
    right = (left + rng.integers(1, n, m)) % n
    fa = np.stack([rng.poisson(80, m), rng.poisson(habit[left])], 1)
    fb = np.stack([rng.poisson(80, m), rng.poisson(habit[right])], 1)
    d = bc.differences(fa, fb)
    z = (d - d.mean(0)) / d.std(0)
    p = 1 / (1 + np.exp(-(true[left] - true[right] + z @ np.array([0.0, 0.9]))))
    u = rng.random(m)
    y = np.where(u < 0.1, 0.5, np.where(u < 0.1 + 0.9 * p, 1.0, 0.0))
    return left, right, y, d, z, n, true


def test_controlled_strengths_and_coefficients_equal_statsmodels():
    import statsmodels.api as sm

    left, right, y, d, z, n, _ = _simulation()
    got = bc.rank_controlled(left, right, y, d, n, ["length", "citations"], replicates=2000, level=0.95, seed=1)
    design = np.zeros((len(y), n - 1 + 2))
    for j in range(1, n):  # run 0 the reference; a tie is y = 0.5: half a win each way
        design[:, j - 1] = (left == j).astype(float) - (right == j)
    design[:, n - 1 :] = z
    res = sm.GLM(y, design, family=sm.families.Binomial()).fit(tol=1e-14, cov_type="HC0")
    strengths = np.concatenate([[0.0], res.params[: n - 1]])
    np.testing.assert_allclose(got["strength"], strengths - strengths.mean(), atol=1e-6, rtol=0)
    np.testing.assert_allclose(got["coef"], res.params[n - 1 :], atol=1e-6, rtol=0)
    # the score bootstrap's intervals are the robust (HC0) normal ones, up to Monte Carlo error
    half = (got["coef_high"] - got["coef_low"]) / 2
    np.testing.assert_allclose(half, 1.959964 * res.bse[n - 1 :], rtol=0.08)
    assert got["coef_low"][1] > 0.5 and abs(got["coef"][0]) < 0.2  # citations sway the votes, length does not


def test_the_control_corrects_the_confounded_ranking():
    from assess.measures.battles import rank_indices

    left, right, y, d, _, n, true = _simulation()
    code = np.where(y == 1, 0, np.where(y == 0, 1, 2))
    plain = rank_indices(left, right, code, n, replicates=0)["strength"]
    fixed = bc.rank_controlled(left, right, y, d, n, ["length", "citations"], replicates=0, level=0.95, seed=0)
    centred = true - true.mean()
    assert np.abs(fixed["strength"] - centred).max() < np.abs(plain - centred).max()
    assert list(fr.order(fixed["strength"])) == list(np.argsort(-true))


def test_a_hand_worked_case():
    # A and B on both sides, d = +1 (left cites more) or -1, two battles of each pattern; mean d 0, sd 1: z = d.
    # pattern (left, d): outcomes -> mean y:  (A, +1): win, tie -> .75; (B, +1): tie, tie -> .5;
    #                                         (A, -1): tie, tie -> .5;  (B, -1): loss, tie -> .25
    # With a = delta + g, b = delta - g (delta = t_A - t_B) the score equations are
    #   .75 - .5 + .5 - .25 + 2 = 2 (s(a) + s(b))  and  .75 + .5 - .5 - .25 = 2 (s(a) - s(b)),
    # so s(a) = 3/4, s(b) = 1/2: a = ln 3, b = 0, delta = g = ln(3) / 2, t_A = -t_B = ln(3) / 4.
    left = np.array([0, 0, 1, 1, 0, 0, 1, 1])
    right = 1 - left
    y = np.array([1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.0, 0.5])
    d = np.array([[1.0], [1.0], [1.0], [1.0], [-1.0], [-1.0], [-1.0], [-1.0]])
    got = bc.rank_controlled(left, right, y, d, 2, ["citations"], replicates=0, level=0.95, seed=0)
    assert got["strength"] == pytest.approx([math.log(3) / 4, -math.log(3) / 4], abs=1e-12)
    assert got["coef"] == pytest.approx([math.log(3) / 2], abs=1e-12)


def test_equal_differences_are_refused_naming_the_control():
    with pytest.raises(AssessError, match="'citations' has the same difference in every battle"):
        bc.standardise(np.zeros((4, 1)), ["citations"])


def test_features_of_an_answer():
    text = "# Heat pumps\n\n- **Cheap** to run\n- work below 0\n1. see [1]\n"
    got = bc.answer_features(text, ["doc1:0", "doc1:3", "doc2:1", "doc1:0"], [True, False, True])
    assert got == {
        "length": 14.0,  # words as whitespace cuts them: markdown marks count
        "citations": 4.0,
        "cited_documents": 2.0,
        "markdown": 5.0,  # one header, three list items, one bold span
        "supported_share": pytest.approx(2 / 3),
    }


@pytest.mark.parametrize("controls", [0, 2])
def test_the_fragility_set_flips_the_top_pair_when_refitted(controls):
    left, right, y, d, _, n, _ = _simulation(seed=11, n=4, m=1500)
    d = d[:, :controls]
    z = bc.standardise(d, ["length", "citations"][:controls])[0] if controls else d
    rank = fr.order(bc.fit(left, right, y, z, n).strength)
    chosen = fr.flip_set(left, right, y, d, n, int(rank[0]), int(rank[1]))
    assert chosen is not None and 0 < len(chosen) < len(y) // 10
    keep = np.ones(len(y), dtype=bool)
    keep[chosen] = False
    zk = bc.standardise(d[keep], ["x", "y"][:controls])[0] if controls else d[keep]
    again = fr.order(bc.fit(left[keep], right[keep], y[keep], zk, n).strength)
    assert again[0] != rank[0]
    if len(chosen) > fr.PRUNE_UP_TO:
        return
    # pruned: putting any one of them back keeps the old top
    back = keep.copy()
    back[chosen[0]] = True
    zb = bc.standardise(d[back], ["x", "y"][:controls])[0] if controls else d[back]
    assert fr.order(bc.fit(left[back], right[back], y[back], zb, n).strength)[0] == rank[0]


def test_controls_that_predict_every_verdict_are_refused_not_run_off():
    left, right = np.array([0, 1, 0, 1]), np.array([1, 0, 1, 0])
    y = np.array([1.0, 1.0, 0.0, 0.0])
    d = np.array([[1.0], [0.5], [-1.0], [-0.5]])  # the side citing more always wins
    with pytest.raises(AssessError, match="predict the verdicts perfectly"):
        bc.rank_controlled(left, right, y, d, 2, ["citations"], replicates=10, level=0.95, seed=0)
