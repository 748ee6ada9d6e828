"""Active sampling and the budget simulator (issue 37): assess/measures/active_sampling.py and
assess/measures/budget_simulation.py, against hand-worked cases, PPI over a run's own items, scipy's tau and a
seeded simulation. Formulas: docs/estimates.md#active-sampling."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import kendalltau

from assess.errors import AssessError
from assess.measures import active_sampling as active
from assess.measures import budget_simulation as sim
from assess.measures import ppi

ITEMS = [("t1", f"d{j}") for j in range(4)] + [("t2", f"d{j}") for j in range(4)]
RUNS = {"a": {"t1": ["d0", "d1"], "t2": ["d0", "d1"]}, "b": {"t1": ["d0", "d2", "d0"], "t2": ["d3", "d2"]}}


def test_weights_influence_and_inclusion_probabilities_by_hand():
    names, W = active.precision_weights(RUNS, ITEMS, 2)
    assert names == ["a", "b"]
    # P@2 over 2 topics: 1/4 per item of a top 2; b's repeated d0 counts once, so its t1 top 2 is d0, d2
    w = 0.25
    assert W.tolist() == [[w, w, 0, 0, w, w, 0, 0], [w, 0, w, 0, 0, 0, w, w]]
    # m_i = sqrt(sum_r w^2 + sum_{r<s} (w_r - w_s)^2): both runs -> sqrt(2) w, one run -> sqrt(2) w, none -> 0
    m = active.influence(W)
    assert m[0] == pytest.approx(math.sqrt(2) * w) and m[1] == pytest.approx(math.sqrt(1 + 1) * w)
    assert m[3] == 0
    # sigma from the prior: grade 2 at threshold 2 -> p = 1/(1 + e^-0.5) = 0.6225
    sigma = active.uncertainty(np.array([2.0, 0.0]))
    p = 1 / (1 + math.exp(-0.5))
    assert sigma[0] == pytest.approx(math.sqrt(p * (1 - p)))
    # two judges 0 and 4 average their priors: p near 1/2, the largest sigma
    both = active.uncertainty(np.array([0.0]), np.array([4.0]))
    assert both[0] > active.uncertainty(np.array([0.0]))[0] and both[0] > active.uncertainty(np.array([4.0]))[0]
    plan = active.active_plan(4, W, np.full(8, 0.5), strata=1, minimum=2)
    # seven items in some top 2 (one stratum); the one in none (d3 of t1) its own stratum, judged in full
    # (min(minimum, N_h) = 1), which leaves 3 of the budget to the 7
    assert plan.names == ["active 1", active.OUTSIDE] and plan.sizes == [3, 1]
    pi = plan.probabilities(8)
    assert pi.tolist() == pytest.approx([3 / 7, 3 / 7, 3 / 7, 1.0, 3 / 7, 3 / 7, 3 / 7, 3 / 7])
    assert pi.sum() == pytest.approx(plan.budget)
    drawn = plan.draw(ITEMS, seed=3)
    assert len(drawn.items) == 4 and all(drawn.probability[i] == pytest.approx(pi[ITEMS.index(i)]) for i in drawn.items)
    assert plan.draw(ITEMS, seed=3).items == drawn.items  # seeded: the same sample


def test_active_probability_rises_with_score_and_sums_to_budget():
    rng = np.random.default_rng(0)
    W = (rng.random((4, 300)) < 0.2) * 0.1
    sigma = active.uncertainty(rng.integers(0, 5, 300).astype(float))
    plan = active.active_plan(60, W, sigma, strata=4)
    pi = plan.probabilities(300)
    score = active.influence(W) * sigma
    assert pi.sum() == pytest.approx(60) and (pi > 0).all()
    inside = score > 0
    means = [pi[m].mean() for m in plan.members[:-1]]  # strata in decreasing score
    assert means == sorted(means, reverse=True)
    assert pi[inside].min() > pi[~inside].max()
    with pytest.raises(AssessError, match="larger than the 300"):
        active.active_plan(301, W, sigma)
    with pytest.raises(AssessError, match="no run ranks"):
        active.active_plan(10, np.zeros((2, 300)), sigma)


def test_ipw_ppi_of_a_uniform_sample_is_ppi_over_the_run_own_items():
    # Under a uniform sample the Hajek estimate of a run is PPI of the mean over the run's own items (the
    # domain D, size known) times sum_D w: ppi-python's ppi_mean_pointestimate(Y, Yhat, Yhat_unlabeled, lam) =
    # lam * mean(Yhat_unlabeled) + mean(Y - lam * Yhat), with the unlabelled items = all of D (our judge
    # labelled everything; ppi-python's lam is cov(Y, Yhat) / ((1 + n/N) var(Yhat)), ours V_yf / V_ff, since the
    # judge's total is known exactly). Its variance: that of ppi.corrected_mean up to (n_D-1)/n_D x n/(n-1).
    rng = np.random.default_rng(5)
    N = 200
    f = (rng.random(N) < 0.4).astype(float)
    y = np.where(rng.random(N) < 0.8, f, 1 - f)
    W = np.zeros((2, N))
    W[0, :80] = 1 / 80
    W[1, 50:150] = 1 / 100
    plan = active.uniform_plan(60, N)
    idx = sim._draw_indices(plan, 1, rng)
    runs, pairs = sim.ipw_ppi(W, f, y, plan, idx)
    sampled = set(idx[0].tolist())
    for r in range(2):
        domain = np.flatnonzero(W[r])
        judge = {i: f[i] for i in domain}
        human = {i: y[i] for i in domain if i in sampled}
        expected = ppi.corrected_mean(judge, human, lam=float(runs.lam[r, 0]))
        assert runs.value[r, 0] == pytest.approx(expected.ppi.value)
        n_d, n = len(human), 60
        assert runs.var[r, 0] == pytest.approx(expected.ppi.se**2 * (n_d - 1) / n_d * n / (n - 1), rel=0.15)
        assert runs.sampled[r, 0] == n_d
    # a pair's difference is the difference of the runs' estimates
    assert pairs.value.shape == (1, 1)


def test_ipw_ppi_hand_worked_two_strata():
    # Six items, one run weighing items 0..3 at 1/4. Strata {0, 1, 2, 3} (n 2, pi 1/2) and {4, 5} (n 2, census).
    # Sample: items 0, 1 of stratum 1 and 4, 5. Domain D = {0..3}: N_D = 4, N_hat = 2 / (1/2) = 4.
    # y = 1 0 . . ; f = 1 1 . . (items 2, 3: f = 0 1), so J = sum_D w f = 3/4.
    # Hajek means m_a = (1/4)(1 + 0) * 2 / 4 = 1/8, m_b = (1/4)(1 + 1) * 2 / 4 = 1/4.
    # Linearised a = (w y - m_a) = 1/8, -1/8; b = (w f - m_b) = 0, 0 -> V_ff = 0, lam = 1.
    # Estimate: 1 * 3/4 + 4 (1/8 - 1/4) = 1/4.  Var = N_h^2 (1 - n/N) s^2 / n with s^2(a - b) = 1/32:
    # 16 * 1/2 * (1/32) / 2 = 1/8.
    f = np.array([1, 1, 0, 1, 0, 0], dtype=float)
    y = np.array([1, 0, 1, 1, 0, 0], dtype=float)
    W = np.array([[0.25, 0.25, 0.25, 0.25, 0, 0]])
    plan = active.Plan("hand", ["x", "y"], [np.arange(4), np.array([4, 5])], [2, 2])
    runs, _ = sim.ipw_ppi(W, f, y, plan, np.array([[0, 1, 4, 5]]))
    assert runs.lam[0, 0] == 1.0
    assert runs.value[0, 0] == pytest.approx(0.25)
    assert runs.var[0, 0] == pytest.approx(1 / 8)
    # nothing sampled in the run's items: not estimable
    W2 = np.array([[0, 0, 0, 0.5, 0.5, 0]])
    runs2, _ = sim.ipw_ppi(W2, f, y, plan, np.array([[0, 1, 4, 5]]))
    assert runs2.estimable[0, 0]
    runs3, _ = sim.ipw_ppi(np.array([[0, 0, 0.5, 0.5, 0, 0]]), f, y, plan, np.array([[0, 1, 4, 5]]))
    assert not runs3.estimable[0, 0]


def test_kendall_tau_b_equals_scipy():
    rng = np.random.default_rng(1)
    truth = np.array([0.1, 0.4, 0.4, 0.7, 0.9])
    est = np.round(rng.random((5, 30)), 1)
    got = sim.kendall_tau_b(est, truth)
    for j in range(30):
        assert got[j] == pytest.approx(kendalltau(est[:, j], truth).statistic)


@pytest.mark.parametrize("policy", ["uniform", "active"])
def test_coverage_near_nominal_on_a_seeded_simulation(policy):
    # 40 topics x 20 items, 6 runs of varying quality; the judge agrees with the truth 80% of the time
    rng = np.random.default_rng(7)
    items = [(f"t{t}", f"d{d}") for t in range(40) for d in range(20)]
    y = (rng.random(len(items)) < 0.35).astype(float)
    f = np.where(rng.random(len(items)) < 0.8, y, 1 - y)
    runs = {}
    for r in range(6):
        score = 0.3 * r * y + rng.normal(size=len(items))
        runs[f"r{r}"] = {
            f"t{t}": [items[t * 20 + j][1] for j in np.argsort(-score[t * 20 : t * 20 + 20])] for t in range(40)
        }
    _, W = active.precision_weights(runs, items, 5)
    grades = np.where(f == 1, 3.0, 0.0)
    plan = (
        active.uniform_plan(300, len(items))
        if policy == "uniform"
        else active.active_plan(300, W, active.uncertainty(grades))
    )
    got = sim.simulate_plan(W, f, y, plan, repeats=300, rng=np.random.default_rng(0))
    assert 0.91 <= got["coverage"] <= 0.98, got
    assert got["tau"] > 0.5


def test_bad_simulation_input_is_refused():
    with pytest.raises(AssessError, match="budget"):
        active.uniform_plan(1, 10)
    with pytest.raises(AssessError, match="repeats"):
        sim.simulate_plan(
            np.ones((1, 10)),
            np.ones(10),
            np.ones(10),
            active.uniform_plan(5, 10),
            repeats=0,
            rng=np.random.default_rng(0),
        )
    with pytest.raises(AssessError, match="k must be"):
        active.precision_weights(RUNS, ITEMS, 0)
