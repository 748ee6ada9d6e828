"""Run evaluation (assess.measures.rankings): the trec_eval v10.0 toy regression (docs/measures.md#trec_eval-conventions),
averaging conventions, correlations, t-tests, PTKB measures, and real iKAT PTKB qrels."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau, spearmanr, ttest_rel

from assess.errors import AssessError
from assess.measures.rankings import (
    cast_measures,
    compare_qrels,
    evaluate_ptkb,
    evaluate_runs,
    paired_t_tests,
    parse_measure,
    ranking_correlation,
)
from tests.conftest import shared_file

QRELS = {
    "q1": {"d1": 4, "d2": 3, "d3": 2, "d4": 1, "d5": 0, "d6": 2, "d7": 1},
    "q2": {"e1": 1, "e2": 2, "e3": 0, "e4": 4},
}
RUN = {
    "q1": {"d5": 10, "d4": 9, "d3": 8, "dX": 7, "d1": 6, "d7": 5, "d2": 5},
    "q2": {"e1": 3, "e3": 2, "e2": 1},
}
# trec_eval v10.0 output for the toy qrels/run, printed to 4 decimals (docs/measures.md#trec_eval-conventions):
# measure -> (q1 -l1, q2 -l1, all -l1, q1 -l2, q2 -l2, all -l2); ir_measures names with rel=level.
TOY = {
    "nDCG@3": (0.2366, 0.3471, 0.2919, 0.2366, 0.3471, 0.2919),
    "nDCG@5": (0.3904, 0.3471, 0.3688, 0.3904, 0.3471, 0.3688),
    "nDCG@10": (0.5337, 0.3471, 0.4404, 0.5337, 0.3471, 0.4404),
    "P(rel={l})@3": (0.6667, 0.6667, 0.6667, 0.3333, 0.3333, 0.3333),
    "P(rel={l})@5": (0.6000, 0.4000, 0.5000, 0.4000, 0.2000, 0.3000),
    "R(rel={l})@5": (0.5000, 0.6667, 0.5833, 0.5000, 0.5000, 0.5000),
    "AP(rel={l})": (0.5246, 0.5556, 0.5401, 0.2905, 0.1667, 0.2286),
    "RR(rel={l})": (0.5000, 1.0000, 0.7500, 0.3333, 0.3333, 0.3333),
}


@pytest.mark.parametrize("level", [1, 2])
def test_trec_eval_toy_regression(level):
    import ir_measures

    for template, values in TOY.items():
        q1, q2, mean = values[:3] if level == 1 else values[3:]
        measure = ir_measures.parse_measure(template.format(l=level))
        result = evaluate_runs(QRELS, {"toy": RUN}, [measure])["toy"]
        name = str(measure)
        assert result["per_query"][name]["q1"] == pytest.approx(q1, abs=5e-5), name
        assert result["per_query"][name]["q2"] == pytest.approx(q2, abs=5e-5), name
        assert result["mean"][name] == pytest.approx(mean, abs=5e-5), name


def test_tie_is_broken_by_docid_descending():
    # d7 and d2 tie at score 5: trec_eval ranks d7 (label 1) before d2 (label 3).
    only_tie = {"q1": {"d7": 5, "d2": 5}}
    result = evaluate_runs(QRELS, {"r": only_tie}, ["RR(rel=3)"])["r"]
    assert result["mean"]["RR(rel=3)"] == pytest.approx(0.5)


@pytest.mark.parametrize("level", [1, 2])
def test_measures_without_rel_take_the_threshold(level):
    """Issue 22 item 3: ``P@5`` at threshold 2 is trec_eval -l 2's P_5 (the TOY values above, printed by
    trec_eval v10.0), not P at label >= 1; a measure with its own rel keeps it."""
    import ir_measures

    given = ["P@5", "R@5", "AP", "RR", "nDCG@3"]
    result = evaluate_runs(QRELS, {"toy": RUN}, given, threshold=level)["toy"]
    named = {
        "P@5": "P(rel={l})@5",
        "R@5": "R(rel={l})@5",
        "AP": "AP(rel={l})",
        "RR": "RR(rel={l})",
        "nDCG@3": "nDCG@3",
    }
    for short, template in named.items():
        name = str(ir_measures.parse_measure(template.format(l=level)))
        q1, q2, mean = TOY[template][3:] if level == 2 else TOY[template][:3]
        assert result["per_query"][name] == pytest.approx({"q1": q1, "q2": q2}, abs=5e-5), short
        assert result["mean"][name] == pytest.approx(mean, abs=5e-5), short
    own = evaluate_runs(QRELS, {"toy": RUN}, ["P(rel=1)@5"], threshold=2)["toy"]
    assert own["mean"] == {"P@5": pytest.approx(0.5, abs=5e-5)}  # rel=1 given: the threshold does not apply
    assert str(parse_measure("AP", 3)) == "AP(rel=3)" and str(parse_measure("nDCG@5", 3)) == "nDCG@5"
    with pytest.raises(AssessError, match="threshold"):
        parse_measure("P@5", 0)


def test_default_measures_follow_the_threshold():
    assert [str(m) for m in cast_measures(2)] == [
        "nDCG@3",
        "nDCG@5",
        "P(rel=2)@20",
        "R(rel=2)@20",
        "AP(rel=2)",
        "RR(rel=2)",
    ]
    assert [str(m) for m in cast_measures(1)][2:] == ["P@20", "R@20", "AP", "RR"]
    with pytest.raises(AssessError):
        cast_measures(0)


def test_mean_is_over_queries_in_both_qrels_and_run():
    qrels = {**QRELS, "q3": {"f1": 3}, "q4": {"g1": 0}}  # q3 missing from the run
    run = {**RUN, "q4": {"g1": 1.0}, "q9": {"x": 1.0}}  # q4 has no relevant doc; q9 has no qrels
    result = evaluate_runs(qrels, {"r": run}, threshold=2)["r"]
    assert result["n_queries"] == 3
    assert set(result["per_query"]["AP(rel=2)"]) == {"q1", "q2", "q4"}
    assert result["per_query"]["AP(rel=2)"]["q4"] == 0.0
    assert result["mean"]["AP(rel=2)"] == pytest.approx((0.2905 + 0.1667 + 0) / 3, abs=1e-4)
    everything = evaluate_runs(qrels, {"r": run}, threshold=2, all_queries=True)["r"]  # trec_eval -c
    assert everything["n_queries"] == 4
    assert everything["mean"]["AP(rel=2)"] == pytest.approx((0.2905 + 0.1667) / 4, abs=1e-4)


def test_run_without_shared_queries_has_no_mean():
    result = evaluate_runs(QRELS, {"r": {"q9": {"x": 1.0}}})["r"]
    assert result["n_queries"] == 0 and all(v is None for v in result["mean"].values())


def test_bad_measure_and_bad_inputs():
    with pytest.raises(AssessError, match="unknown measure"):
        evaluate_runs(QRELS, {"r": RUN}, ["NoSuchMeasure@3"])
    with pytest.raises(AssessError):
        evaluate_runs(QRELS, {"r": [1, 2]})


def test_ranking_correlation_matches_scipy():
    a = {"r1": 0.1, "r2": 0.4, "r3": 0.3, "r4": 0.9, "r5": 0.5}
    b = {"r1": 0.2, "r2": 0.3, "r3": 0.5, "r4": 0.8, "r5": 0.4, "extra": 1.0}
    out = ranking_correlation(a, b)
    x, y = [a[k] for k in a], [b[k] for k in a]
    assert out["n"] == 5
    assert out["kendall_tau"] == pytest.approx(kendalltau(x, y).statistic)
    assert out["kendall_p"] == pytest.approx(kendalltau(x, y).pvalue)
    assert out["spearman_rho"] == pytest.approx(spearmanr(x, y).statistic)
    assert ranking_correlation({"r1": 0.1}, {"r1": 0.2})["kendall_tau"] is None
    assert ranking_correlation({"r1": 0.1, "r2": 0.1}, {"r1": 0.2, "r2": 0.3})["kendall_tau"] is None


def test_compare_qrels_correlates_the_orderings():
    rng = random.Random(1)
    runs = {f"r{i}": {q: {d: rng.random() for d in docs} for q, docs in QRELS.items()} for i in range(6)}
    lenient = {q: {d: min(4, v + 1) for d, v in docs.items()} for q, docs in QRELS.items()}
    out = compare_qrels(QRELS, lenient, runs, ["nDCG@3"])
    assert set(out["nDCG@3"]["a"]) == set(runs)
    same = compare_qrels(QRELS, QRELS, runs, ["nDCG@3"])["nDCG@3"]
    assert same["kendall_tau"] == pytest.approx(1.0)


def test_paired_t_tests_with_bonferroni():
    per_query = {
        "a": {"q1": 0.5, "q2": 0.6, "q3": 0.7, "q4": 0.2},
        "b": {"q1": 0.4, "q2": 0.65, "q3": 0.5, "q4": 0.1},
        "c": {"q1": 0.5, "q2": 0.6, "q3": 0.7, "q4": 0.2, "q5": 1.0},
    }
    tests = paired_t_tests(per_query)
    assert [(t["a"], t["b"]) for t in tests] == [("a", "b"), ("a", "c"), ("b", "c")]
    expected = ttest_rel([0.5, 0.6, 0.7, 0.2], [0.4, 0.65, 0.5, 0.1])
    assert tests[0]["t"] == pytest.approx(expected.statistic)
    assert tests[0]["p"] == pytest.approx(expected.pvalue)
    assert tests[0]["p_bonferroni"] == pytest.approx(min(1.0, 3 * expected.pvalue))
    assert tests[1]["n"] == 4 and tests[1]["t"] is None and tests[1]["significant"] is False  # identical
    assert paired_t_tests(per_query, pairs=[("a", "b")])[0]["p_bonferroni"] == pytest.approx(expected.pvalue)
    with pytest.raises(AssessError):
        paired_t_tests(per_query, pairs=[("a", "zzz")])


def test_ptkb_measures():
    qrels = {"t1": {"1": 1, "2": 0, "3": 1}, "t2": {"1": 0, "2": 1}}
    run = {"t1": {"1": 0.9, "2": 0.8, "3": 0.1}, "t2": {"1": 0.9, "2": 0.5}}
    result = evaluate_ptkb(qrels, {"r": run})["r"]
    assert list(result["mean"]) == ["nDCG@3", "P@3", "R@3", "RR"]
    assert result["per_query"]["P@3"] == pytest.approx({"t1": 2 / 3, "t2": 1 / 3})
    assert result["per_query"]["R@3"] == pytest.approx({"t1": 1.0, "t2": 1.0})
    assert result["per_query"]["RR"] == pytest.approx({"t1": 1.0, "t2": 0.5})


@settings(max_examples=30, deadline=None)
@given(st.randoms(use_true_random=False))
def test_permuting_queries_changes_no_run_mean(rnd):
    qrels = {f"q{i}": {f"d{j}": rnd.randint(0, 4) for j in range(8)} for i in range(6)}
    run = {q: {f"d{j}": rnd.random() for j in range(10)} for q in qrels}
    order = list(run)
    rnd.shuffle(order)
    shuffled_run = {q: run[q] for q in order}
    shuffled_qrels = {q: qrels[q] for q in reversed(order)}
    a = evaluate_runs(qrels, {"r": run})["r"]["mean"]
    b = evaluate_runs(shuffled_qrels, {"r": shuffled_run})["r"]["mean"]
    assert a == pytest.approx(b, abs=1e-15)
    assert all(0.0 <= v <= 1.0 for v in a.values())


def _qrels_file(path):
    out = {}
    for line in path.read_text().splitlines():
        f = line.split()
        if len(f) == 4:
            out.setdefault(f[0], {})[f[2]] = int(f[3])
    return out


@pytest.mark.realdata
def test_ikat_2023_ptkb_rankings_against_nist():
    nist = _qrels_file(shared_file("data", "irlabamsterdam-iKAT", "2023", "evaluation", "ptkb_rel_nist"))
    org = _qrels_file(shared_file("data", "irlabamsterdam-iKAT", "2023", "evaluation", "ptkb_rel_org"))
    # The organisers' labels as a ranking (relevant first, ties by statement key), and its
    # reverse, judged by NIST: the organisers' ranking must win on every PTKB measure.
    rng = np.random.default_rng(0)
    organisers = {t: {k: v + 0.01 * rng.random() for k, v in s.items()} for t, s in org.items()}
    reverse = {t: {k: -v for k, v in s.items()} for t, s in organisers.items()}
    result = evaluate_ptkb(nist, {"org": organisers, "reverse": reverse})
    assert result["org"]["n_queries"] == len(set(nist) & set(org))
    for name, value in result["org"]["mean"].items():
        assert 0.0 <= value <= 1.0
        assert value > result["reverse"]["mean"][name]


def test_a_measure_pytrec_eval_does_not_compute_is_refused_by_name():
    with pytest.raises(AssessError, match="'Judged@10' is not computed here"):
        evaluate_runs(QRELS, {"r": RUN}, ["Judged@10"])
