"""Corrected estimates (assess/measures/ppi.py) and budgeted samples (assess/measures/sampling.py).

docs/estimates.md gives the formulas these tests check.
"""

from __future__ import annotations

import math
from itertools import combinations, product

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from assess.errors import AssessError
from assess.measures import ppi, sampling
from assess.measures.rankings import evaluate_runs
from tests.conftest import shared_file

Z95 = 1.959963984540054


# ---------------------------------------------------------------------------------------- PPI by hand


def test_ppi_mean_worked_by_hand():
    # Population a..e, judge f = 1 1 0 0 1 (mean 0.6). Uniform sample {a, c, d} (pi = 3/5) with
    # human y = 1 1 0.
    #   human only: ybar = 2/3, s_y^2 = ((1/3)^2 + (1/3)^2 + (2/3)^2) / 2 = 1/3,
    #               Var = (1 - 3/5) * (1/3) / 3 = 2/45.
    #   on the sample f = 1 0 0: s_f^2 = 1/3, cov(y, f) = ((1/3)(2/3) + (1/3)(-1/3) + (-2/3)(-1/3)) / 2 = 1/6,
    #   lam = (1/6) / (1/3) = 1/2.
    #   PPI: 0.5 * 0.6 + mean(1 - 0.5, 1 - 0, 0 - 0) = 0.3 + 0.5 = 0.8,
    #        s_r^2 = 1/3 - 2 * (1/2)(1/6) + (1/4)(1/3) = 1/4, Var = (2/5) * (1/4) / 3 = 1/30.
    judge = {"a": 1, "b": 1, "c": 0, "d": 0, "e": 1}
    human = {"a": 1, "c": 1, "d": 0}
    out = ppi.corrected_mean(judge, human)
    assert out.lam == pytest.approx(0.5)
    assert out.ppi.value == pytest.approx(0.8)
    assert out.ppi.se == pytest.approx(math.sqrt(1 / 30))
    assert out.ppi.low == pytest.approx(0.8 - Z95 * math.sqrt(1 / 30))
    assert out.human_only.value == pytest.approx(2 / 3)
    assert out.human_only.se == pytest.approx(math.sqrt(2 / 45))
    assert out.judge_only == pytest.approx(0.6)
    assert out.sampled == 3
    # the original PPI (lam = 1): 0.6 + mean(0, 1, 0) = 0.6 + 1/3; residuals 0 1 0: s^2 = 1/3
    fixed = ppi.corrected_mean(judge, human, lam=1.0)
    assert fixed.ppi.value == pytest.approx(0.6 + 1 / 3)
    assert fixed.ppi.se == pytest.approx(math.sqrt(0.4 * (1 / 3) / 3))
    # the same sample given as explicit inclusion probabilities gives the same numbers
    again = ppi.corrected_mean(judge, human, dict.fromkeys(human, 0.6))
    assert again.as_dict() == out.as_dict()


def test_stratified_ht_worked_by_hand():
    # Strata A = {a, b, c, d} with n = 2 (pi = 1/2) and B = {e, f} judged in full (pi = 1).
    # Judge 1 0 0 0 | 1 1; humans: a = 1, c = 1 | e = 0, f = 1.
    # Human only: HT total = (1 + 1) / (1/2) + (0 + 1) = 5, mean 5/6; Var(total) = 4^2 (1 - 1/2) * 0 / 2 = 0.
    # PPI: residuals in A (lam) = 1 - lam, 1; s^2_A(lam) = lam^2 / 2; B contributes no variance; so the
    # variance is minimised at lam = 0 -> the tuned estimate equals the human-only one.
    judge = {"a": 1, "b": 0, "c": 0, "d": 0, "e": 1, "f": 1}
    human = {"a": 1, "c": 1, "e": 0, "f": 1}
    probability = {"a": 0.5, "c": 0.5, "e": 1.0, "f": 1.0}
    out = ppi.corrected_mean(judge, human, probability)
    assert out.human_only.value == pytest.approx(5 / 6)
    assert out.human_only.se == 0
    assert out.lam == 0 and out.ppi.value == pytest.approx(5 / 6)
    # lam = 1: judge total 3, residual HT = (0 + 1) * 2 + (-1 + 0) = 1 -> (3 + 1) / 6
    assert ppi.corrected_mean(judge, human, probability, lam=1.0).ppi.value == pytest.approx(4 / 6)


def test_ht_and_variance_unbiased_by_exact_enumeration():
    # Two strata of an unequal-probability design: A has 4 items sampled 2 (pi 1/2), B has 3 sampled 2
    # (pi 2/3). Every one of the 6 * 3 samples is equally likely; for a fixed lam the PPI estimate
    # averages to the true mean, and its variance estimate averages to the true design variance.
    y = {"a1": 1, "a2": 0, "a3": 1, "a4": 1, "b1": 0, "b2": 0, "b3": 1}
    f = {"a1": 1, "a2": 1, "a3": 0, "a4": 1, "b1": 0, "b2": 1, "b3": 1}
    strata = {"a": ["a1", "a2", "a3", "a4"], "b": ["b1", "b2", "b3"]}
    true = sum(y.values()) / len(y)
    for lam in (0.0, 0.3, 1.0):
        values, variances = [], []
        for sa, sb in product(combinations(strata["a"], 2), combinations(strata["b"], 2)):
            human = {i: y[i] for i in sa + sb}
            prob = {**dict.fromkeys(sa, 0.5), **dict.fromkeys(sb, 2 / 3)}
            out = ppi.corrected_mean(f, human, prob, strata={i: i[0] for i in human}, lam=lam)
            values.append(out.ppi.value)
            variances.append(out.ppi.se**2)
        assert np.mean(values) == pytest.approx(true, abs=1e-12)
        assert np.mean(variances) == pytest.approx(np.var(values), abs=1e-12)


# ---------------------------------------------------------------------------------------- properties


@st.composite
def populations(draw):
    n = draw(st.integers(4, 40))
    y = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    f = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    k = draw(st.integers(2, n))
    chosen = draw(st.permutations(range(n)))[:k]
    return y, f, sorted(chosen)


@settings(max_examples=150, deadline=None)
@given(populations())
def test_perfect_judge_gives_the_population_value(case):
    y, _, chosen = case
    judge = {i: v for i, v in enumerate(y)}
    human = {i: y[i] for i in chosen}
    out = ppi.corrected_mean(judge, human)
    # a perfect judge leaves a zero rectifier: the estimate is the full-population value, exactly
    assert out.ppi.value == pytest.approx(np.mean(y), abs=1e-12)
    assert out.ppi.se == pytest.approx(0, abs=1e-9)
    # and a sample of everything gives the population value with zero width whatever the judge
    census = ppi.corrected_mean({i: 4 - v for i, v in enumerate(y)}, judge)
    assert census.ppi.value == pytest.approx(np.mean(y), abs=1e-12)
    assert census.human_only.value == pytest.approx(np.mean(y), abs=1e-12)
    assert census.ppi.width == census.human_only.width == 0


@settings(max_examples=200, deadline=None)
@given(populations(), st.booleans())
def test_tuned_interval_never_wider_than_human_only(case, stratify):
    # Stated tolerance: 1e-9 (rounding only). The variance estimate is a quadratic in lam whose value
    # at lam = 0 is the human-only one, and lam minimises it over [0, 1].
    y, f, chosen = case
    judge = {i: v for i, v in enumerate(f)}
    human = {i: y[i] for i in chosen}
    prob = strata = None
    if stratify:  # two strata by parity, each sampled item's probability n_h / N_h
        groups = {h: [i for i in range(len(y)) if i % 2 == h] for h in (0, 1)}
        taken = {h: [i for i in chosen if i % 2 == h] for h in (0, 1)}
        if any(len(taken[h]) == 1 and len(groups[h]) > 1 for h in (0, 1)):
            return  # a stratum with one sampled item has no variance (refused, tested below)
        prob = {i: len(taken[i % 2]) / len(groups[i % 2]) for i in chosen}
        strata = {i: i % 2 for i in chosen}
    out = ppi.corrected_mean(judge, human, prob, strata=strata)
    assert 0 <= out.lam <= 1
    assert out.ppi.width <= out.human_only.width + 1e-9


def test_coverage_simulation_near_nominal_on_synthetic_data():
    rng = np.random.default_rng(7)
    n = 6000
    human = rng.choice(5, size=n, p=[0.45, 0.25, 0.18, 0.09, 0.03])
    judge = np.clip(human + rng.choice([-1, 0, 1, 2], size=n, p=[0.2, 0.5, 0.2, 0.1]), 0, 4)
    items = [("t", i) for i in range(n)]
    out = ppi.coverage(
        dict(zip(items, human.tolist())), dict(zip(items, judge.tolist())), sample=400, repeats=4000, seed=3
    )
    assert set(out) == {"n_items", "sample", "repeats", "nominal", "true_value", "ppi", "human_only"}
    assert set(out["ppi"]) == set(out["human_only"]) == {"coverage", "mean_width"}
    assert (out["n_items"], out["sample"], out["repeats"], out["nominal"]) == (n, 400, 4000, 0.95)
    assert out["true_value"] == pytest.approx(float(np.mean(human >= 2)))
    # 4000 repeats: Monte Carlo standard error about 0.0035, so +-0.02 is more than 5 of them
    assert 0.93 <= out["ppi"]["coverage"] <= 0.97
    assert 0.93 <= out["human_only"]["coverage"] <= 0.97
    assert out["ppi"]["mean_width"] < out["human_only"]["mean_width"]
    # expected human-only width: 2 z sqrt(p(1-p)(1 - n/N)/n)
    p = out["true_value"]
    assert out["human_only"]["mean_width"] == pytest.approx(
        2 * Z95 * math.sqrt(p * (1 - p) * (1 - 400 / n) / 400), rel=0.03
    )
    # seeded: the same call gives the same numbers
    assert (
        ppi.coverage(
            dict(zip(items, human.tolist())), dict(zip(items, judge.tolist())), sample=400, repeats=4000, seed=3
        )
        == out
    )


def test_coverage_uses_only_shared_items_and_a_full_sample_is_exact():
    reference = {("t", i): i % 5 for i in range(50)}
    judge = {("t", i): (i + 1) % 5 for i in range(10, 70)}
    out = ppi.coverage(reference, judge, sample=40, repeats=5)
    assert out["n_items"] == 40
    assert out["ppi"] == out["human_only"] == {"coverage": 1.0, "mean_width": 0.0}
    assert out["true_value"] == pytest.approx(np.mean([i % 5 >= 2 for i in range(10, 50)]))


# ---------------------------------------------------------------------------------------- system measures


def _toy(seed=0, topics=6, per_topic=12):
    rng = np.random.default_rng(seed)
    items = [(f"q{t}", f"d{j}") for t in range(topics) for j in range(per_topic)]
    y = rng.integers(0, 5, len(items))
    f = np.clip(y + rng.integers(-1, 2, len(items)), 0, 4)
    truth = {i: int(v) for i, v in zip(items, y)}
    judge = {i: int(v) for i, v in zip(items, f)}
    runs = {
        name: {f"q{t}": [f"d{j}" for j in rng.permutation(per_topic)] + ["unjudged-doc"] for t in range(topics)}
        for name in ("r1", "r2")
    }
    return truth, judge, runs


def _qrels_and_scored(truth, runs):
    qrels: dict = {}
    for (t, d), v in truth.items():
        qrels.setdefault(t, {})[d] = v
    scored = {n: {t: {d: 100.0 - j for j, d in enumerate(docs)} for t, docs in run.items()} for n, run in runs.items()}
    return qrels, scored


def test_census_precision_and_ndcg_equal_trec_eval():
    truth, judge, runs = _toy()
    qrels, scored = _qrels_and_scored(truth, runs)
    expected = evaluate_runs(qrels, scored, ["nDCG@3", "nDCG@5", "P(rel=2)@5"])
    prec = ppi.corrected_precision(runs, judge, truth, k=5, threshold=2)
    for k in (3, 5):
        nd = ppi.corrected_ndcg(runs, judge, truth, k=k, bootstrap=20)
        for run in runs:
            est = nd[run]["estimate"]
            assert est["ppi"]["value"] == pytest.approx(expected[run]["mean"][f"nDCG@{k}"], abs=1e-12)
            assert est["human_only"]["value"] == pytest.approx(expected[run]["mean"][f"nDCG@{k}"], abs=1e-12)
            assert est["ppi"]["width"] == pytest.approx(0, abs=1e-12)
    for run in runs:
        assert prec[run]["estimate"]["ppi"]["value"] == pytest.approx(expected[run]["mean"]["P(rel=2)@5"])
        assert prec[run]["topics"] == 6 and prec[run]["unjudged"] == 0
    # the judge alone: the same measures under the judge's labels
    jq, _ = _qrels_and_scored(judge, runs)
    jexp = evaluate_runs(jq, scored, ["nDCG@3"])
    nd3 = ppi.corrected_ndcg(runs, judge, truth, k=3, bootstrap=20)
    assert nd3["r1"]["estimate"]["judge_only"] == pytest.approx(jexp["r1"]["mean"]["nDCG@3"])


def test_precision_on_a_sample_unbiased_and_unjudged_counted():
    truth, judge, runs = _toy(seed=2)
    qrels, scored = _qrels_and_scored(truth, runs)
    true = evaluate_runs(qrels, scored, ["P(rel=2)@13"])["r1"]["mean"]["P(rel=2)@13"]
    rng = np.random.default_rng(0)
    items = list(truth)
    values = []
    for _ in range(300):
        chosen = rng.choice(len(items), 30, replace=False)
        human = {items[i]: truth[items[i]] for i in chosen}
        out = ppi.corrected_precision(runs, judge, human, k=13)["r1"]
        values.append(out["estimate"]["ppi"]["value"])
        assert out["unjudged"] == 6  # rank 13 is "unjudged-doc" in each of the 6 topics
    # unbiased for fixed lam; with a tuned lam the bias is O(1/n): the mean of 300 estimates is close
    assert np.mean(values) == pytest.approx(true, abs=0.02)


def test_corrected_ntr_by_hand():
    # Run A answers turns t1 (gold g1 g2) and t2 (gold g3): humans label everything (census):
    # t1: g1 captured, g2 not -> 1/2; t2: g3 captured -> 1; NtR = 3/4. The judge says g2 captured too.
    gold = {"t1": ["g1", "g2"], "t2": ["g3"], "t3": []}
    judge = {("A", "t1", "g1"): 1, ("A", "t1", "g2"): 1, ("A", "t2", "g3"): 1, ("A", "t3", "x"): 0}
    human = {("A", "t1", "g1"): 1, ("A", "t1", "g2"): 0, ("A", "t2", "g3"): 1, ("A", "t3", "x"): 0}
    out = ppi.corrected_ntr(gold, judge, human)["A"]
    assert out["turns"] == 2
    assert out["estimate"]["ppi"]["value"] == pytest.approx(0.75)
    assert out["estimate"]["judge_only"] == pytest.approx(1.0)
    with pytest.raises(AssessError, match="must be 0 or 1"):
        ppi.corrected_ntr(gold, {**judge, ("A", "t1", "g1"): 2}, human)


def test_topic_shares_are_domain_estimates():
    truth, judge, _ = _toy(seed=4)
    shares = ppi.corrected_shares(judge, truth)  # census: exact
    for topic, entry in shares.items():
        values = [v >= 2 for (t, _), v in truth.items() if t == topic]
        assert entry["items"] == 12
        assert entry["ppi"]["value"] == pytest.approx(np.mean(values))
        assert entry["ppi"]["width"] == 0


def test_bad_inputs_are_refused_with_the_item_named():
    judge = {"a": 1, "b": 0, "c": 2}
    with pytest.raises(AssessError, match="have no judge label, e.g. 'z'"):
        ppi.corrected_mean(judge, {"a": 1, "z": 0})
    with pytest.raises(AssessError, match="inclusion probability of 'a' must be in"):
        ppi.corrected_mean(judge, {"a": 1, "b": 0}, {"a": 0.0, "b": 0.5})
    with pytest.raises(AssessError, match="stratum 'x' has one sampled item"):
        ppi.corrected_mean(judge, {"a": 1, "b": 0}, {"a": 0.5, "b": 0.5}, strata={"a": "x", "b": "y"})
    with pytest.raises(AssessError, match="differs between its sampled items"):
        ppi.corrected_mean(judge, {"a": 1, "b": 0}, {"a": 0.5, "b": 0.7}, strata={"a": "x", "b": "x"})
    with pytest.raises(AssessError, match="human label of 'a' must be a number, found 'yes'"):
        ppi.corrected_mean(judge, {"a": "yes", "b": 0})
    with pytest.raises(AssessError, match="sample 5 is larger than the 3 items"):
        ppi.coverage(judge, judge, sample=5, repeats=10)
    with pytest.raises(AssessError, match="repeats must be an integer >= 1"):
        ppi.coverage(judge, judge, sample=2, repeats=0)


# ---------------------------------------------------------------------------------------- sampling


def _judge_population(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    grades = rng.choice(5, size=n, p=[0.5, 0.2, 0.15, 0.1, 0.05])
    return {("t", i): int(g) for i, g in enumerate(grades)}


def test_stratified_allocation_is_neyman_and_probabilities_sum_to_budget():
    judge = _judge_population()
    budget = 200
    sample = sampling.stratified_sample(budget, judge, seed=1)
    alloc = sample.allocation
    assert sum(a["n"] for a in alloc.values()) == len(sample.items) == budget
    # the inclusion probabilities of all population items sum to the budget
    assert sum(a["N"] * a["probability"] for a in alloc.values()) == pytest.approx(budget)
    sd = sampling.stratum_sd(judge)
    total = sum(alloc[g]["N"] * sd[g] for g in alloc)
    for g, a in alloc.items():
        assert a["N"] == sum(v == g for v in judge.values())
        assert abs(a["n"] - budget * a["N"] * sd[g] / total) < 1  # Neyman, up to rounding
    for item in sample.items:
        g = judge[item]
        assert sample.stratum[item] == g
        assert sample.probability[item] == alloc[g]["n"] / alloc[g]["N"]
    # the prior: P(human >= 2 | grade g) = 1 / (1 + exp(-(g - 1.5)))
    assert sampling.prior_relevant(2, 2) == pytest.approx(1 / (1 + math.exp(-0.5)))
    # reproducible with a seed, different with another
    assert sampling.stratified_sample(budget, judge, seed=1) == sample
    assert sampling.stratified_sample(budget, judge, seed=2).items != sample.items


def test_minimum_per_stratum_and_small_strata_in_full():
    judge = {**{("t", i): 0 for i in range(500)}, ("t", 900): 4}
    sample = sampling.stratified_sample(10, judge, guess={0: 0.5, 4: 0.5})
    assert sample.allocation[4] == {"N": 1, "n": 1, "probability": 1.0, "weight": 0.5}
    assert sample.allocation[0]["n"] == 9
    with pytest.raises(AssessError, match="below the 3 items needed for 2 per stratum"):
        sampling.stratified_sample(2, judge)
    with pytest.raises(AssessError, match="budget 600 is larger than the 501 items"):
        sampling.stratified_sample(600, judge)


def test_disagreement_probability_rises_with_disagreement_and_estimate_is_unbiased():
    judge = _judge_population(3000, seed=1)
    rng = np.random.default_rng(5)
    second = {i: int(np.clip(v + rng.choice([-2, -1, 0, 1]), 0, 4)) for i, v in judge.items()}
    del second[("t", 0)]
    sample = sampling.disagreement_sample(300, judge, second, seed=4)
    probs = {h: a["probability"] for h, a in sample.allocation.items() if h != sampling.MISSING}
    levels = sorted(probs)
    assert all(probs[a] < probs[b] for a, b in zip(levels, levels[1:]))
    assert min(a["probability"] for a in sample.allocation.values()) > 0
    assert sample.allocation[sampling.MISSING]["N"] == 1
    assert sum(a["n"] for a in sample.allocation.values()) == 300
    # the estimate with these probabilities is unbiased: average over many seeds ~ the truth
    truth = {i: int(np.clip(v + rng.choice([-1, 0, 1]), 0, 4)) for i, v in judge.items()}
    target = np.mean([v >= 2 for v in truth.values()])
    values = []
    for seed in range(200):
        s = sampling.disagreement_sample(300, judge, second, seed=seed)
        out = ppi.corrected_mean(
            ppi.at_least(judge, 2), ppi.at_least({i: truth[i] for i in s.items}, 2), s.probability, strata=s.stratum
        )
        values.append(out.ppi.value)
    assert np.mean(values) == pytest.approx(target, abs=3 * np.std(values) / math.sqrt(200) + 0.002)


def test_expected_width_matches_simulation_under_the_prior():
    judge = _judge_population(4000, seed=3)
    rng = np.random.default_rng(9)
    # humans drawn from the stated prior, so the variance model holds
    truth = {i: int(rng.random() < sampling.prior_relevant(g, 2)) * 2 for i, g in judge.items()}
    rows = sampling.expected_width([100, 400, 1600], judge)
    widths = [r["stratified"] for r in rows]
    assert widths[0] > widths[1] > widths[2] > 0
    assert all(r["uniform_ppi"] <= r["uniform_human_only"] for r in rows)
    observed = []
    for seed in range(100):
        s = sampling.stratified_sample(400, judge, seed=seed)
        out = ppi.corrected_mean(
            ppi.at_least(judge, 2), ppi.at_least({i: truth[i] for i in s.items}, 2), s.probability, strata=s.stratum
        )
        observed.append(out.ppi.width)
    assert np.mean(observed) == pytest.approx(rows[1]["stratified"], rel=0.05)


# ---------------------------------------------------------------------------------------- real data


@pytest.mark.realdata
def test_coverage_on_ikat_2024_nist_vs_gpt4():
    from assess.formats.trec import parse_qrels

    nist = shared_file("data", "gyeozai-CFDA-TREC-iKAT2025", "DATA", "topics", "2024_test_qrels.trec")
    gpt4 = shared_file(
        "data", "irlabamsterdam-CONE-RAG", "resources", "automatic_resources", "llm-gpt4-pool-depth-30.txt"
    )
    reference = {(q.turn_id, q.item_id): q.grade for q in parse_qrels(nist)}
    judge = {(q.turn_id, q.item_id): q.grade for q in parse_qrels(gpt4)}
    out = ppi.coverage(reference, judge, threshold=2, sample=500, repeats=2000, seed=0)
    assert out["n_items"] == 8103
    assert out["true_value"] == pytest.approx(2519 / 8103)
    # stated band: 0.95 +- 0.02 (2000 repeats: Monte Carlo SE about 0.005)
    assert 0.93 <= out["ppi"]["coverage"] <= 0.97
    assert 0.93 <= out["human_only"]["coverage"] <= 0.97
    assert out["ppi"]["mean_width"] <= out["human_only"]["mean_width"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 60), st.floats(0, 10)), min_size=1, max_size=8),
    st.integers(1, 480),
    st.integers(1, 3),
)
@example([(1, 0.0), (1, 0.0), (2, 1.0)], 3, 1)  # minimums and a size cap reached in the same step
def test_allocation_respects_budget_and_bounds(strata, budget, minimum):
    sizes = [n for n, _ in strata]
    weights = [w for _, w in strata]
    low = sum(min(n, minimum) for n in sizes)
    if not low <= budget <= sum(sizes):
        with pytest.raises(AssessError):
            sampling.allocate(sizes, weights, budget, minimum=minimum)
        return
    n = sampling.allocate(sizes, weights, budget, minimum=minimum)
    assert sum(n) == budget
    assert all(min(size, minimum) <= k <= size for k, size in zip(n, sizes))


def test_a_perfectly_matched_small_sample_is_flagged_not_trusted_silently():
    """Issue 34 item 5: five sampled items on which the human and the judge agree exactly give the tuned PPI
    (lam = 1) a residual variance of 0, so a zero-width interval around the judge's mean, while the human-only
    interval on the same five items is wide. The estimator is unchanged (it is PPI's, and unbiased); the entry
    says so (``zero_width``) and docs/estimates.md gives the reason. By hand: judge mean over 20 items 0.5,
    sample labels 1, 0, 1, 0, 1 -> human-only 0.6 with s^2 = 0.3, Var = (1 - 5/20) 0.3 / 5 = 0.045."""
    from assess.measures.ppi import ZERO_WIDTH, corrected_mean

    judge = {i: float(i % 2) for i in range(20)}
    human = {i: judge[i] for i in (1, 2, 3, 4, 5)}
    found = corrected_mean(judge, human)
    entry = found.as_dict()
    assert (found.lam, found.ppi.value, found.ppi.width) == (1.0, 0.5, 0.0)
    assert found.human_only.value == pytest.approx(0.6) and found.human_only.se == pytest.approx(0.045**0.5)
    assert entry["zero_width"] == ZERO_WIDTH
    wide = corrected_mean(judge, {**human, 6: 1.0}).as_dict()  # one disagreement: an interval with width
    assert "zero_width" not in wide and wide["ppi"]["width"] > 0
