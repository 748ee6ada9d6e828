"""nDCG@k and the sequential draw in the budget simulator (issue 37): assess/measures/ndcg_simulation.py and
assess/measures/budget_simulation.simulate, against hand-worked cases, ppi.corrected_ndcg (the estimate
`audit estimate` gives on a stored sample) and seeded simulations. Formulas: docs/estimates.md#active-sampling."""

from __future__ import annotations

import math

import numpy as np
import pytest

from assess.errors import AssessError
from assess.measures import active_sampling as active
from assess.measures import budget_simulation as sim
from assess.measures import ndcg_simulation as nd
from assess.measures import ppi

D2, D3 = 1 / math.log2(3), 1 / math.log2(4)  # the discounts of ranks 2 and 3


def test_ideal_and_its_gradient_by_hand():
    grades = np.array([1.0, 2.0])
    disc = nd.discounts(3)
    # two items of grade 2, two of grade 1, k = 3: positions 2, 2, 1 -> 2 + 2 D2 + D3
    value, grad = nd.ideal(np.array([2.0, 2.0]), grades, disc)
    assert value == pytest.approx(2 + 2 * D2 + D3)
    # one more grade-2 item pushes the grade-1 item out of position 3: +(2 - 1) D3; a grade-1 item adds nothing
    assert grad.tolist() == pytest.approx([0.0, D3])
    # a fractional count fills a fraction of a position (corrected_ndcg's rule)
    assert nd.ideal(np.array([0.0, 1.5]), grades, disc)[0] == pytest.approx(2 + 0.5 * 2 * D2)
    assert nd.ideal(np.array([-1.0, 0.0]), grades, disc)[0] == 0  # a negative count counts as none


def _population():
    rng = np.random.default_rng(3)
    items = [(f"t{t}", f"d{d:02d}") for t in range(30) for d in range(25)]
    y = rng.choice([0, 1, 2, 3], len(items), p=[0.55, 0.25, 0.12, 0.08]).astype(float)
    f = np.where(rng.random(len(items)) < 0.7, y, rng.choice([0, 1, 2, 3], len(items))).astype(float)
    runs = {}
    for r in range(5):
        score = 0.4 * r * y + 1.5 * rng.normal(size=len(items))
        runs[f"r{r}"] = {
            f"t{t}": [items[t * 25 + j][1] for j in np.argsort(-score[t * 25 : t * 25 + 25])] for t in range(30)
        }
    return items, runs, f, y


def test_truth_is_trec_eval_ndcg_and_sensitivity_a_finite_difference():
    items, runs, f, y = _population()
    s = nd.setup(runs, items, f, y, 5)
    labels = {item: int(g) for item, g in zip(items, y)}
    census = ppi.corrected_ndcg(runs, labels, labels, k=5, bootstrap=2)
    assert s.truth().tolist() == pytest.approx([census[r]["estimate"]["judge_only"] for r in sorted(runs)])
    W = nd.sensitivity(s)
    # the run's nDCG with item i at the top grade (3) minus at 0, the others the judge's grades; where that is
    # below the floor (a top grade at rank k: the judge's ideal saturated), minus the floor
    disc5 = 1 / math.log2(6)
    for i in range(0, 750, 37):
        high, low = f.copy(), f.copy()
        high[i], low[i] = 3, 0
        moved = nd.setup(runs, items, f, high, 5).truth() - nd.setup(runs, items, f, low, 5).truth()
        low_s = nd.setup(runs, items, f, low, 5)
        t = s.topic[i]
        best = nd.ideal(low_s.counts(low_s.y_class)[t], low_s.grades, low_s.disc)[0]
        floor = low_s.dcg(low)[:, t] * 3 * disc5 / best**2 / 30
        assert W[:, i] == pytest.approx(np.where(np.abs(moved) < floor, -floor, moved)), i
    # through the ideal, items in no run's top 5 move the runs too, less than those in some top 5
    outside = (s.A == 0).all(axis=0)
    assert (W[:, outside] != 0).any()
    assert np.abs(W[:, outside]).sum(axis=0).mean() < np.abs(W[:, ~outside]).sum(axis=0).mean()


def test_ipw_ndcg_hand_worked_linearised_variance():
    # One topic of 4 items, one run ranking items 0, 1, 3 (k = 3: discounts 1, D2, D3), lam = 0 (human only).
    # Sample {0, 2} of the stratum {0..3} (pi = 1/2). y = 2 0 1 0.
    # HT: D = 1 * 2 / (1/2) = 4; counts (grade 1, grade 2) = (1/(1/2), 1/(1/2)) = (2, 2) -> I = 2 + 2 D2 + D3.
    # nDCG = D / I. dI/dc_2 = D3, dI/dc_1 = 0 (test above). e_i = a_i y_i / I - D / I^2 dI/dc_{y_i}:
    # item 0: 2 / I - 4 D3 / I^2; item 2: 0. Var = N^2 (1 - n/N) s^2 / n = 16 * 1/2 * s^2 / 2 = 4 s^2.
    items = [("t", f"d{j}") for j in range(4)]
    runs = {"r": {"t": ["d0", "d1", "d3"]}}
    y = np.array([2.0, 0, 1, 0])
    f = np.array([1.0, 2, 0, 0])
    s = nd.setup(runs, items, f, y, 3)
    plan = active.Plan("hand", ["all"], [np.arange(4)], [2])
    got, _ = nd.ipw_ndcg(s, plan, np.array([[0, 2]]), lam=0.0)
    ideal = 2 + 2 * D2 + D3
    assert got.value[0, 0] == pytest.approx(4 / ideal)
    e0 = 2 / ideal - 4 * D3 / ideal**2
    assert got.var[0, 0] == pytest.approx(4 * np.var([e0, 0.0], ddof=1))
    census, _ = nd.ipw_ndcg(s, active.Plan("all", ["all"], [np.arange(4)], [4]), np.array([[0, 1, 2, 3]]))
    assert census.value[0, 0] == pytest.approx(s.truth()[0]) and census.var[0, 0] == 0


def test_ipw_ndcg_equals_corrected_ndcg_at_its_lambda():
    items, runs, f, y = _population()
    s = nd.setup(runs, items, f, y, 5)
    plan = active.uniform_plan(150, len(items))
    idx = sim._draw_indices(plan, 1, np.random.default_rng(1))
    sampled = [items[i] for i in idx[0]]
    judge = {item: int(g) for item, g in zip(items, f)}
    human = {item: int(y[items.index(item)]) for item in sampled}
    peer = ppi.corrected_ndcg(runs, judge, human, {item: 150 / len(items) for item in sampled}, k=5, bootstrap=400)
    for r, name in enumerate(sorted(runs)):
        entry = peer[name]["estimate"]
        ours, _ = nd.ipw_ndcg(s, plan, idx, lam=entry["lambda"])
        assert ours.value[r, 0] == pytest.approx(entry["ppi"]["value"])  # the same plug-in estimate
        # linearised vs Rao-Wu bootstrap standard error: the same order
        assert 0.6 < math.sqrt(ours.var[r, 0]) / entry["ppi"]["se"] < 1.6


@pytest.mark.parametrize("policy", ["uniform", "active"])
def test_ndcg_coverage_near_nominal_on_a_seeded_simulation(policy):
    items, runs, f, y = _population()
    s = nd.setup(runs, items, f, y, 5)
    plan = (
        active.uniform_plan(150, len(items))
        if policy == "uniform"
        else active.active_plan(150, nd.sensitivity(s), active.uncertainty(f))
    )
    got = sim.simulate(
        lambda p, idx: nd.ipw_ndcg(s, p, idx), s.truth(), plan, repeats=300, rng=np.random.default_rng(0)
    )
    assert 0.92 <= got["coverage"] <= 0.99, got
    assert got["tau"] > 0.8 and got["spent"] == 150
    # seeded: uniform 0.967 coverage, width 0.552; active 0.945, width 0.303
    assert got["mean_width"] < (0.6 if policy == "uniform" else 0.35)


def test_sequential_looks_stop_once_every_pair_is_settled():
    plan = active.Plan("p", ["a", "b", "c"], [np.arange(10), np.arange(10, 30), np.arange(30, 31)], [8, 3, 1])
    assert [look.sizes for look in sim.looks(plan, 4)] == [[2, 2, 1], [4, 2, 1], [6, 3, 1], [8, 3, 1]]
    with pytest.raises(AssessError, match="rounds"):
        sim.looks(plan, 0)
    # Three runs far apart on P@5 over 40 topics x 20 items: the pairs settle long before the budget of 600.
    rng = np.random.default_rng(2)
    N = 800
    y = (rng.random(N) < 0.4).astype(float)
    f = np.where(rng.random(N) < 0.85, y, 1 - y)
    W = np.zeros((3, N))
    for r, share in enumerate((0.1, 0.5, 0.9)):  # run r's top 5s: relevant items with probability `share`
        for t in range(40):
            block = np.arange(t * 20, t * 20 + 20)
            rel, non = block[y[block] == 1], block[y[block] == 0]
            pick = [*rng.permutation(rel)[: round(5 * share)], *rng.permutation(non)][:5]
            W[r, pick] = 1 / (5 * 40)
    plan = active.active_plan(600, W, active.uncertainty(np.where(f == 1, 3.0, 0.0)))

    def estimate(p, idx):
        return sim.ipw_ppi(W, f, y, p, idx)

    once = sim.simulate(estimate, W @ y, plan, repeats=200, rng=np.random.default_rng(0))
    seq = sim.simulate(estimate, W @ y, plan, repeats=200, rng=np.random.default_rng(0), rounds=4)
    assert once["spent"] == 600 and seq["spent"] < 300  # most repeats stop at the first look (150 items)
    assert seq["settled"] == 1.0 and seq["coverage"] >= 0.95  # Bonferroni's 1 - 0.05/4 intervals
    assert seq["tau"] == 1.0


def test_bad_ndcg_input_is_refused():
    with pytest.raises(AssessError, match="k must be"):
        nd.setup({"r": {"t": ["d"]}}, [("t", "d")], np.zeros(1), np.zeros(1), 0)
    with pytest.raises(AssessError, match="ranks none"):
        nd.setup({"r": {"u": ["d"]}}, [("t", "d")], np.zeros(1), np.zeros(1), 5)
