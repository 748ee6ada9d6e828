"""Judge-audit measures: the agreement matrix of several sources (assess.measures.agreement),
system-level agreement (assess.measures.systems) and bias / consistency probes (assess.measures.bias).
Hand-worked cases (docs/measures.md#system-level-agreement, #bias-and-consistency-probes),
cross-checks against scipy / scikit-learn / krippendorff, and hypothesis properties."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau, pearsonr, spearmanr, ttest_rel
from sklearn.metrics import cohen_kappa_score

from assess.errors import AssessError
from assess.measures.agreement import (
    MATRIX_STATISTICS,
    agreement_matrix,
    binary_kappa,
    bootstrap_kappa_ci,
    cohen_kappa,
    krippendorff_alpha,
    matrix_grid,
    observed_agreement,
)
from assess.measures.bias import (
    best_ranks,
    bias_by,
    bias_per_run,
    bias_report,
    bin_label,
    persona_sensitivity,
    sample_label,
    self_consistency,
)
from assess.measures.rankings import holm_adjusted, paired_t_tests
from assess.measures.systems import compare_systems, significance_preservation, tau_ap, topk_overlap

SCALE = [0, 1, 2, 3, 4]


# ------------------------------------------------------------------------------ agreement matrix


def _three_sources(seed: int = 1, size: int = 300):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 5, size)
    h1 = truth
    h2 = np.clip(truth + rng.integers(-1, 2, size), 0, 4)
    llm = np.clip(truth + rng.integers(-2, 3, size), 0, 4)
    labels = {
        "nist": {f"i{i}": int(v) for i, v in enumerate(h1)},
        "second": {f"i{i}": int(v) for i, v in enumerate(h2) if i >= 20},  # shares items i20..
        "gpt": {f"i{i}": int(v) for i, v in enumerate(llm)},
    }
    return labels, {"nist": "human", "second": "human", "gpt": "llm"}


def _pair(matrix, a, b):
    [entry] = [p for p in matrix["pairs"] if {p["a"], p["b"]} == {a, b}]
    return entry


def test_matrix_figures_equal_the_pairwise_functions():
    labels, kinds = _three_sources()
    matrix = agreement_matrix(labels, scale=SCALE, kinds=kinds, bootstrap=200, seed=3)
    assert [(p["a"], p["b"]) for p in matrix["pairs"]] == [("nist", "second"), ("nist", "gpt"), ("second", "gpt")]
    for p in matrix["pairs"]:
        shared = [i for i in labels[p["a"]] if i in labels[p["b"]]]
        a = [labels[p["a"]][i] for i in shared]
        b = [labels[p["b"]][i] for i in shared]
        assert p["n"] == len(shared)
        assert p["agreement"] == pytest.approx(observed_agreement(a, b))
        assert p["kappa_unweighted"] == pytest.approx(cohen_kappa_score(a, b, labels=SCALE))
        assert p["kappa_linear"] == pytest.approx(cohen_kappa(a, b, scale=SCALE, weights="linear"))
        assert p["kappa_quadratic"] == pytest.approx(cohen_kappa(a, b, scale=SCALE, weights="quadratic"))
        assert p["kappa_binary"] == pytest.approx(binary_kappa(a, b, threshold=2))
        # Two-coder alpha from the confusion matrix = the krippendorff package on the same items.
        assert p["alpha"] == pytest.approx(krippendorff_alpha(list(zip(a, b)), scale=SCALE, min_labels=2), abs=1e-9)
        for name in MATRIX_STATISTICS:
            low, high = p["ci"][name]
            assert low <= p[name] + 0.05 and high >= p[name] - 0.05 and low <= high
        # The same multinomial redraw as bootstrap_kappa_ci, so the intervals are close (not identical: other draws).
        reference = bootstrap_kappa_ci(a, b, scale=SCALE, seed=3)
        assert p["ci"]["kappa_unweighted"] == pytest.approx(list(reference), abs=0.05)


@pytest.mark.parametrize("level", ["nominal", "interval"])
def test_matrix_alpha_levels_match_the_package(level):
    labels, kinds = _three_sources(seed=5)
    matrix = agreement_matrix(labels, scale=SCALE, alpha_level=level, bootstrap=0)
    p = _pair(matrix, "nist", "gpt")
    items = [(labels["nist"][i], labels["gpt"][i]) for i in labels["nist"]]
    assert p["alpha"] == pytest.approx(krippendorff_alpha(items, scale=SCALE, level=level, min_labels=2), abs=1e-9)
    assert all(v is None for v in p["ci"].values())  # bootstrap=0: no intervals


def test_matrix_breakdowns_and_human_ceiling():
    labels, kinds = _three_sources()
    topic = {f"i{i}": f"t{i % 3}" for i in range(300)}
    personal = {f"i{i}": i % 2 == 0 for i in range(0, 300, 2)}  # odd items have no group here
    matrix = agreement_matrix(
        labels, scale=SCALE, kinds=kinds, groups={"topic": topic, "personal": personal}, bootstrap=100
    )
    entry = _pair(matrix, "nist", "gpt")
    assert [g["group"] for g in entry["by"]["topic"]] == ["t0", "t1", "t2"]
    for g in entry["by"]["topic"]:
        chosen = [i for i in labels["nist"] if topic[i] == g["group"]]
        a = [labels["nist"][i] for i in chosen]
        b = [labels["gpt"][i] for i in chosen]
        assert g["n"] == len(chosen)
        assert g["kappa_linear"] == pytest.approx(cohen_kappa(a, b, scale=SCALE, weights="linear"))
        assert g["ci"]["kappa_linear"] is not None
    [only] = entry["by"]["personal"]
    assert only["group"] is True and only["n"] == 150
    # The ceiling: the one human pair, pooled; the LLM pairs are not part of it.
    ceiling = matrix["ceiling"]
    human = _pair(matrix, "nist", "second")
    assert ceiling["pairs"] == [["nist", "second"]] and human["human_pair"] is True
    assert not _pair(matrix, "nist", "gpt")["human_pair"]
    assert ceiling["n"] == human["n"] == 280
    assert ceiling["kappa_quadratic"] == pytest.approx(human["kappa_quadratic"])
    assert sum(g["n"] for g in ceiling["by"]["topic"]) == 280
    json.dumps(matrix)  # plain data all the way down


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.tuples(st.sampled_from(["t1_1", "t1_2", "t2_1", "t3_4"]), st.integers(0, 30)),
        st.tuples(st.integers(0, 4), st.integers(0, 4), st.booleans()),
        min_size=1,
        max_size=60,
    ),
    st.dictionaries(st.sampled_from(["t1_1", "t1_2", "t2_1", "t3_4"]), st.sampled_from(["x", "y"])),
)
def test_groups_keyed_by_an_items_turn_equal_groups_keyed_by_item(labelled, by_turn):
    """group_key: a breakdown given per turn (the item's first part) gives the figures of the same
    breakdown spelled out per item, including items whose turn has no group (left out)."""
    labels = {
        "a": {item: a for item, (a, _, _) in labelled.items()},
        "b": {item: b for item, (_, b, both) in labelled.items() if both},
    }
    per_item = {item: by_turn[item[0]] for item in labelled if item[0] in by_turn}
    common = {"scale": SCALE, "bootstrap": 20, "seed": 4}
    keyed = agreement_matrix(labels, groups={"g": by_turn}, group_key=lambda item: item[0], **common)
    spelled = agreement_matrix(labels, groups={"g": per_item}, **common)
    assert keyed == spelled


def test_matrix_without_two_humans_has_no_ceiling_and_skips_disjoint_pairs():
    labels = {"a": {"x": 1, "y": 2}, "b": {"x": 1, "y": 3}, "c": {"z": 0}}
    matrix = agreement_matrix(labels, scale=SCALE, kinds={"a": "human", "b": "llm"}, bootstrap=0)
    assert [(p["a"], p["b"]) for p in matrix["pairs"]] == [("a", "b")]
    assert matrix["ceiling"] is None
    assert matrix["kinds"] == {"a": "human", "b": "llm", "c": None}
    grid = matrix_grid(matrix, "agreement")
    assert grid["values"] == [[None, 0.5, None], [0.5, None, None], [None, None, None]]
    assert grid["n"][0][1] == 2 and grid["n"][2][2] == 0


def test_matrix_degenerate_values_are_none():
    labels = {"a": {"x": 2, "y": 2}, "b": {"x": 2, "y": 2}}
    [p] = agreement_matrix(labels, scale=SCALE, bootstrap=50)["pairs"]
    assert p["agreement"] == 1.0
    assert p["kappa_unweighted"] is None and p["alpha"] is None  # no chance disagreement
    assert p["ci"]["kappa_unweighted"] is None


def test_matrix_refuses_bad_input_with_the_source_named():
    with pytest.raises(AssessError, match=r"source 'gpt'.*label 7 outside the scale"):
        agreement_matrix({"nist": {"x": 1}, "gpt": {"x": 7}}, scale=SCALE)
    with pytest.raises(AssessError, match="source 'gpt' has kind 'robot'"):
        agreement_matrix({"nist": {"x": 1}, "gpt": {"x": 2}}, scale=SCALE, kinds={"gpt": "robot"})
    with pytest.raises(AssessError, match="level of measurement"):
        agreement_matrix({"nist": {"x": 1}}, scale=SCALE, alpha_level="ratio")
    with pytest.raises(AssessError, match="must be a mapping"):
        agreement_matrix({"nist": [1, 2]}, scale=SCALE)
    with pytest.raises(AssessError, match="unknown statistic"):
        matrix_grid(agreement_matrix({"a": {"x": 1}}, scale=SCALE), "tau")


labels_strategy = st.dictionaries(
    st.sampled_from(["s1", "s2", "s3", "s4"]),
    st.dictionaries(st.integers(0, 30), st.integers(0, 4), max_size=30),
    min_size=1,
)


@settings(max_examples=60, deadline=None)
@given(labels_strategy)
def test_matrix_pairs_are_symmetric_and_never_a_source_with_itself(labels):
    forward = agreement_matrix(labels, scale=SCALE, bootstrap=0)
    backward = agreement_matrix(dict(reversed(list(labels.items()))), scale=SCALE, bootstrap=0)
    seen = set()
    for p in forward["pairs"]:
        assert p["a"] != p["b"]
        key = frozenset((p["a"], p["b"]))
        assert key not in seen
        seen.add(key)
        q = _pair(backward, p["a"], p["b"])
        for name in ("n", *MATRIX_STATISTICS):
            assert (p[name] is None and q[name] is None) or p[name] == pytest.approx(q[name], abs=1e-12)
        shared = [i for i in labels[p["a"]] if i in labels[p["b"]]]
        a = [labels[p["a"]][i] for i in shared]
        b = [labels[p["b"]][i] for i in shared]
        kappa = cohen_kappa(a, b, scale=SCALE)
        assert (kappa is None and p["kappa_unweighted"] is None) or p["kappa_unweighted"] == pytest.approx(kappa)
    expected = {frozenset((x, y)) for x in labels for y in labels if x != y and set(labels[x]) & set(labels[y])}
    assert seen == expected


# ------------------------------------------------------------------------------ systems

# tau_AP worked by hand (Yilmaz, Aslam & Robertson 2008):
#   reference A > B > C > D; other B > A > C > D (the top pair swapped).
#   Judged list B, A, C, D: i=2 (A): B above, reference puts B below A -> C(2) = 0, 0/1
#                          i=3 (C): B, A above, both above C in the reference -> 2/2
#                          i=4 (D): B, A, C above, all correct -> 3/3
#   tau_AP = 2/(4-1) * (0 + 1 + 1) - 1 = 1/3, while Kendall's tau = (5 - 1)/6 = 2/3.
#   Swapping the bottom pair instead (A, B, D, C): 1 + 1 + 2/3 -> 2/3 * 8/3 - 1 = 7/9.
REF4 = {"A": 4.0, "B": 3.0, "C": 2.0, "D": 1.0}


def test_tau_ap_by_hand():
    top_swapped = {"A": 3.0, "B": 4.0, "C": 2.0, "D": 1.0}
    bottom_swapped = {"A": 4.0, "B": 3.0, "C": 1.0, "D": 2.0}
    assert tau_ap(REF4, top_swapped) == pytest.approx(1 / 3)
    assert tau_ap(REF4, bottom_swapped) == pytest.approx(7 / 9)
    assert kendalltau(list(REF4.values()), list(top_swapped.values())).statistic == pytest.approx(2 / 3)
    # Asymmetric case: reference A > B > C, other C > A > B.
    #   other judged against reference: i=2 (A): C above, wrong -> 0; i=3 (B): C wrong, A right -> 1/2;
    #     tau_AP = 2/2 * (0 + 1/2) - 1 = -1/2
    #   reference judged against other: i=2 (B): A above, right -> 1; i=3 (C): A, B above, both wrong -> 0;
    #     tau_AP = 2/2 * (1 + 0) - 1 = 0
    ref, other = {"A": 3, "B": 2, "C": 1}, {"A": 2, "B": 1, "C": 3}
    assert tau_ap(ref, other) == pytest.approx(-0.5)
    assert tau_ap(other, ref) == pytest.approx(0.0)
    assert tau_ap(ref, other, symmetric=True) == pytest.approx(-0.25)
    assert tau_ap({"A": 1.0}, {"A": 2.0}) is None
    # Ties (Urbano & Marrero's tau_AP,b; worked cases in tests/unit/test_tau_ap_ties.py): every run tied at the top
    # of the judged ranking leaves no position to score, so tau_AP is undefined.
    assert tau_ap(ref, {"A": 1, "B": 1, "C": 1}) is None


def test_topk_overlap_by_hand():
    ref = {"A": 5, "B": 4, "C": 3, "D": 2, "E": 1}
    other = {"B": 5, "E": 4, "A": 3, "C": 2, "D": 1}
    assert topk_overlap(ref, other, 1) == 0.0  # {A} vs {B}
    assert topk_overlap(ref, other, 2) == 0.5  # {A, B} vs {B, E}
    assert topk_overlap(ref, other, 3) == pytest.approx(2 / 3)  # {A, B, C} vs {B, E, A}
    assert topk_overlap(ref, other, 5) == 1.0
    assert topk_overlap(ref, other, 6) is None
    with pytest.raises(AssessError, match="k >= 1"):
        topk_overlap(ref, other, 0)
    with pytest.raises(AssessError, match="run 'A' must be a finite number"):
        topk_overlap({"A": float("nan")}, other, 1)


distinct_scores = st.lists(st.floats(0, 1, allow_nan=False), min_size=2, max_size=12, unique=True)


@settings(max_examples=100, deadline=None)
@given(distinct_scores, st.randoms(use_true_random=False))
def test_tau_ap_properties(scores, rnd):
    runs = [f"r{i}" for i in range(len(scores))]
    ref = dict(zip(runs, scores))
    assert tau_ap(ref, ref) == pytest.approx(1.0)
    assert tau_ap(ref, {r: -v for r, v in ref.items()}) == pytest.approx(-1.0)
    shuffled = scores[:]
    rnd.shuffle(shuffled)
    other = dict(zip(runs, shuffled))
    value = tau_ap(ref, other)
    assert -1.0 - 1e-12 <= value <= 1.0 + 1e-12
    assert tau_ap(ref, other, symmetric=True) == pytest.approx(tau_ap(other, ref, symmetric=True))
    assert tau_ap(ref, other, symmetric=True) == pytest.approx((value + tau_ap(other, ref)) / 2)


def _scores(seed=0, runs=8, topics=30, noise=0.2):
    rng = np.random.default_rng(seed)
    quality = np.linspace(0.2, 0.8, runs)
    ref = {f"r{i}": {f"t{t}": float(quality[i] + rng.normal(0, 0.15)) for t in range(topics)} for i in range(runs)}
    other = {r: {t: v + float(rng.normal(0, noise)) for t, v in d.items()} for r, d in ref.items()}
    return ref, other


def test_compare_systems_matches_scipy_and_the_scalar_functions():
    ref, other = _scores()
    out = compare_systems(ref, other, ks=(1, 3, 20), bootstrap=300, seed=1)
    assert out["n_runs"] == 8 and out["n_topics"] == 30 and out["topics_dropped"] == 0
    runs = out["runs"]
    a = [np.mean(list(ref[r].values())) for r in runs]
    b = [np.mean(list(other[r].values())) for r in runs]
    c = out["correlations"]
    assert c["kendall_tau"]["value"] == pytest.approx(kendalltau(a, b).statistic)
    assert c["spearman_rho"]["value"] == pytest.approx(spearmanr(a, b).statistic)
    assert c["pearson_r"]["value"] == pytest.approx(pearsonr(a, b).statistic)
    means_a, means_b = dict(zip(runs, a)), dict(zip(runs, b))
    assert c["tau_ap"]["value"] == pytest.approx(tau_ap(means_a, means_b))
    assert c["tau_ap_reverse"]["value"] == pytest.approx(tau_ap(means_b, means_a))
    assert c["tau_ap_symmetric"]["value"] == pytest.approx(tau_ap(means_a, means_b, symmetric=True))
    for name, figure in c.items():
        low, high = figure["ci"]
        assert -1.0 <= low <= high <= 1.0, name
    assert [t["k"] for t in out["top_k"]] == [1, 3]  # k = 20 exceeds the 8 runs
    assert out["top_k"][1]["overlap"] == pytest.approx(topk_overlap(means_a, means_b, 3))
    for topic, value in out["per_topic_tau"].items():
        x = [ref[r][topic] for r in runs]
        y = [other[r][topic] for r in runs]
        assert value == pytest.approx(kendalltau(x, y).statistic)
    assert out["leader"]["reference"] == max(runs, key=means_a.get)
    json.dumps(out)


def test_bootstrap_over_topics_is_seeded_and_identical_sources_agree_fully():
    ref, other = _scores(seed=2)
    one = compare_systems(ref, other, bootstrap=60, seed=7)
    assert compare_systems(ref, other, bootstrap=60, seed=7)["correlations"] == one["correlations"]
    same = compare_systems(ref, ref, bootstrap=30)
    for name in ("kendall_tau", "tau_ap", "tau_ap_symmetric", "spearman_rho", "pearson_r"):
        assert same["correlations"][name]["value"] == pytest.approx(1.0)
        assert same["correlations"][name]["ci"] == pytest.approx([1.0, 1.0])
    assert same["significance"]["lost"] == same["significance"]["flipped"] == same["significance"]["gained"] == 0
    assert same["leader"]["changed"] is False
    basic = compare_systems(ref, other, bootstrap=60, seed=7, interval="basic")
    v = basic["correlations"]["kendall_tau"]
    low, high = one["correlations"]["kendall_tau"]["ci"]
    assert v["ci"] == pytest.approx([max(-1, 2 * v["value"] - high), min(1, 2 * v["value"] - low)])
    with pytest.raises(AssessError, match="bootstrap interval"):
        compare_systems(ref, other, interval="bca")


def test_compare_systems_uses_only_complete_topics_and_names_bad_input():
    ref = {"a": {"t1": 0.5, "t2": 0.4, "t3": 0.1}, "b": {"t1": 0.3, "t2": 0.2}}
    other = {"a": {"t1": 0.5, "t2": 0.4, "t3": 0.2}, "b": {"t1": 0.3, "t2": 0.1, "t3": 0.9}, "c": {"t1": 1.0}}
    out = compare_systems(ref, other, bootstrap=10)
    assert out["runs"] == ["a", "b"] and out["n_topics"] == 2 and out["topics_dropped"] == 1
    assert out["reference_means"] == {"a": pytest.approx(0.45), "b": pytest.approx(0.25)}
    with pytest.raises(AssessError, match="reference scores must be a mapping"):
        compare_systems({"a": [0.1]}, other)
    empty = compare_systems({}, other)
    assert empty["n_runs"] == 0 and empty["leader"] is None and empty["correlations"]["kendall_tau"]["value"] is None


# Significance preservation on a constructed case: A beats B and C clearly under the reference;
# under the other source B beats A (flipped) and C becomes too noisy to separate from A (lost).
NOISE = [0.01, -0.02, 0.03, 0.0, -0.01, 0.02, -0.03, 0.01, 0.0, -0.01]
NOISE2 = [-0.01, 0.02, 0.0, 0.01, 0.03, -0.02, 0.01, -0.03, 0.02, 0.0]
WILD = [0.3, -0.25, 0.2, -0.3, 0.25, -0.2, 0.35, -0.3, 0.1, -0.15]
TOPICS = [f"t{i}" for i in range(10)]


def test_significance_preservation_flip_and_loss():
    ref = {
        "A": {t: 0.8 + n for t, n in zip(TOPICS, NOISE)},
        "B": {t: 0.5 + n for t, n in zip(TOPICS, NOISE2)},
        "C": {t: 0.5 + n for t, n in zip(TOPICS, NOISE[::-1])},
    }
    other = {
        "A": {t: 0.5 + n for t, n in zip(TOPICS, NOISE)},
        "B": {t: 0.8 + n for t, n in zip(TOPICS, NOISE2)},
        "C": {t: 0.6 + n for t, n in zip(TOPICS, WILD)},
    }
    out = significance_preservation(ref, other)
    outcomes = {(d["a"], d["b"]): d["outcome"] for d in out["details"]}
    assert outcomes == {("A", "B"): "flipped", ("A", "C"): "lost", ("B", "C"): "neither"}
    assert (out["same"], out["lost"], out["flipped"], out["gained"]) == (0, 1, 1, 0)
    assert out["significant_reference"] == 2 and out["significant_other"] == 1
    assert out["correction"] == "holm" and out["pairs"] == 3
    # Swapping the roles: what was lost under the other source is now gained.
    back = significance_preservation(other, ref)
    assert {(d["a"], d["b"]): d["outcome"] for d in back["details"]}[("A", "C")] == "gained"
    leader = compare_systems(ref, other, bootstrap=0)["leader"]
    assert leader == {"reference": "A", "other": "B", "changed": True, "reference_leader_rank_under_other": 3}


# Three runs on 8 queries where Holm rejects one more pair than Bonferroni:
# raw p (a,c) = 0.00687, (b,c) = 0.01779, (a,b) = 0.533; Bonferroni: 3p -> 0.0206, 0.0534, 1;
# Holm (step-down, sorted p times 3, 2, 1, kept monotone): 0.0206, 0.0356, 0.533.
HOLM_CASE = {
    "a": [0.6, 2.0, 1.4, 1.5, 0.6, 2.3, 2.2, 2.4],
    "b": [2.9, 0.6, 1.9, 0.6, 1.1, 1.1, 1.0, 1.4],
    "c": [-0.3, 0.0, 0.5, 1.7, -0.8, -1.8, -0.5, 0.1],
}


def test_holm_versus_bonferroni():
    per_query = {r: {f"q{i}": v for i, v in enumerate(values)} for r, values in HOLM_CASE.items()}
    raw = {(x, y): ttest_rel(HOLM_CASE[x], HOLM_CASE[y]).pvalue for x, y in (("a", "b"), ("a", "c"), ("b", "c"))}
    holm = {(t["a"], t["b"]): t for t in paired_t_tests(per_query, correction="holm")}
    bonf = {(t["a"], t["b"]): t for t in paired_t_tests(per_query)}
    ordered = sorted(raw, key=raw.get)
    running = 0.0
    for rank, pair in enumerate(ordered):
        running = max(running, min(1.0, (3 - rank) * raw[pair]))
        assert holm[pair]["p_holm"] == pytest.approx(running)
        assert bonf[pair]["p_bonferroni"] == pytest.approx(min(1.0, 3 * raw[pair]))
        assert "p_holm" not in bonf[pair]
    assert [holm[p]["significant"] for p in ordered] == [True, True, False]
    assert [bonf[p]["significant"] for p in ordered] == [True, False, False]
    batched = paired_t_tests(per_query, correction="holm", batched=True)
    assert [t["p_holm"] for t in batched] == pytest.approx([holm[(t["a"], t["b"])]["p_holm"] for t in batched])
    with pytest.raises(AssessError, match="correction"):
        paired_t_tests(per_query, correction="sidak")
    ref = {r: dict(v) for r, v in per_query.items()}
    shifted = {r: {q: v + 0.1 for q, v in d.items()} for r, d in per_query.items()}
    assert significance_preservation(ref, shifted, correction="bonferroni")["significant_reference"] == 1
    assert significance_preservation(ref, shifted, correction="holm")["significant_reference"] == 2


# Ties, ones and zeros included: the p-values come from a small set of values as well as from anywhere in [0, 1].
@given(
    st.lists(st.one_of(st.sampled_from([0.0, 0.01, 0.02, 0.05, 0.5, 1.0]), st.floats(0, 1)), min_size=1, max_size=30)
)
def test_holm_adjusted_equals_statsmodels_multipletests(p_values):
    import gc

    from statsmodels.stats.multitest import multipletests

    with pytest.MonkeyPatch.context() as patch:  # its Holm path collects garbage on each call: 0.1 s an example
        patch.setattr(gc, "collect", lambda *generation: 0)
        expected = multipletests(p_values, method="holm")[1].tolist()
    assert holm_adjusted(p_values) == expected


# ------------------------------------------------------------------------------ bias probes

# A constructed case, differences LLM - human worked by hand:
#   item      llm human diff  length  depth personal
#   (t1, d1)   3    2    +1     40      1    False
#   (t1, d2)   2    2     0     60      1    False
#   (t1, d3)   0    1    -1     70      1    False
#   (t2, d1)   4    2    +2    120      2    True
#   (t2, d4)   1    1     0    130      2    True
LLM = {("t1", "d1"): 3, ("t1", "d2"): 2, ("t1", "d3"): 0, ("t2", "d1"): 4, ("t2", "d4"): 1}
HUMAN = {("t1", "d1"): 2, ("t1", "d2"): 2, ("t1", "d3"): 1, ("t2", "d1"): 2, ("t2", "d4"): 1, ("t3", "x"): 0}
LENGTHS = {("t1", "d1"): 40, ("t1", "d2"): 60, ("t1", "d3"): 70, ("t2", "d1"): 120, ("t2", "d4"): 130}
DEPTH = {item: int(item[0][1]) for item in LLM}
PERSONAL = {item: item[0] == "t2" for item in LLM}
RUNS = {"A": {"t1": ["d1", "d2", "d3"], "t2": ["d1"]}, "B": {"t1": ["d3"], "t2": ["d4", "d1"]}}


def test_bias_by_covariates_by_hand():
    report = bias_report(LLM, HUMAN, lengths=LENGTHS, runs=RUNS, depth=DEPTH, personal=PERSONAL, k=2)
    overall = report["overall"]
    assert overall["n"] == 5 and overall["mean_diff"] == pytest.approx(0.4)
    assert (overall["higher"], overall["equal"], overall["lower"]) == (0.4, 0.4, 0.2)
    # t interval: sd of (1, 0, -1, 2, 0) = sqrt(1.3), half width = t_{0.975, 4} * sqrt(1.3 / 5)
    half = 2.7764451051977987 * math.sqrt(1.3 / 5)
    assert overall["ci"] == pytest.approx([0.4 - half, 0.4 + half])
    length = {g["group"]: g for g in report["length"]["groups"]}
    assert list(length) == ["[0, 50)", "[50, 100)", "[100, 150)"]
    assert length["[50, 100)"]["mean_diff"] == pytest.approx(-0.5) and length["[50, 100)"]["n"] == 2
    assert length["[0, 50)"]["ci"] is None  # one item: no interval
    # OLS of diff on length: x = 40 60 70 120 130 (mean 84), y = 1 0 -1 2 0 (mean 0.4);
    # Sxy = -44*.6 + -24*-.4 + -14*-1.4 + 36*1.6 + 46*-.4 = 42, Sxx = 6120, slope = 42 / 6120
    assert report["length"]["slope"]["slope"] == pytest.approx(42 / 6120)
    depth = {g["group"]: g for g in report["depth"]["groups"]}
    assert depth[1]["mean_diff"] == pytest.approx(0.0) and depth[2]["mean_diff"] == pytest.approx(1.0)
    assert report["depth"]["slope"]["slope"] == pytest.approx(1.0)
    personal = {g["group"]: g for g in report["personal"]["groups"]}
    assert personal[True]["n"] == 2 and personal[True]["higher"] == 0.5 and report["personal"]["slope"] is None
    # Best ranks: (t1,d1) 1, (t1,d2) 2, (t1,d3) 1 (run B), (t2,d1) 1, (t2,d4) 1 -> bins [1, 2) x4 and [2, 4) x1.
    rank = {g["group"]: g["n"] for g in report["rank"]["groups"]}
    assert rank == {"[1, 2)": 4, "[2, 4)": 1}
    # Per run, top 2: A -> (t1,d1) +1, (t1,d2) 0, (t2,d1) +2 = mean 1; B -> (t1,d3) -1, (t2,d4) 0, (t2,d1) +2 = 1/3
    runs = {r["run"]: r for r in report["runs"]}
    assert runs["A"]["n"] == 3 and runs["A"]["mean_diff"] == pytest.approx(1.0)
    assert runs["B"]["n"] == 3 and runs["B"]["mean_diff"] == pytest.approx(1 / 3)
    json.dumps(report)


def test_bias_helpers_and_bad_input():
    assert best_ranks(RUNS)[("t2", "d1")] == 1 and best_ranks(RUNS)[("t1", "d2")] == 2
    assert [bin_label(v, (0, 50, 100)) for v in (-1, 0, 49, 50, 100, 1e9)] == [
        "< 0", "[0, 50)", "[0, 50)", "[50, 100)", ">= 100", ">= 100",
    ]  # fmt: skip
    assert bias_per_run(LLM, HUMAN, {"C": {"t9": ["zz"]}}) == [
        {"run": "C", "n": 0, "mean_diff": None, "ci": None, "higher": None, "equal": None, "lower": None}
    ]
    with pytest.raises(AssessError, match=r"LLM grade of item \('t1', 'd1'\) must be a number"):
        bias_by({("t1", "d1"): "3"}, HUMAN, LENGTHS)
    with pytest.raises(AssessError, match="strictly increasing"):
        bias_by(LLM, HUMAN, LENGTHS, edges=(50, 10))
    with pytest.raises(AssessError, match="numeric covariate"):
        bias_by(LLM, HUMAN, dict.fromkeys(LLM, "long"), edges=(0, 10))
    assert bias_report(LLM, HUMAN)["length"] is None


def test_sample_label_rules():
    assert sample_label([2, 2, 3]) == 2
    assert sample_label([3, 1, 3, 1]) == 1  # tie: the lowest tied grade
    assert sample_label([0, 4, 2]) == 0
    assert sample_label([2, 3], "mean") == 3  # 2.5 rounds half up
    assert sample_label([1, 1, 2], "mean") == 1
    with pytest.raises(AssessError, match="label rule"):
        sample_label([1], "median")
    with pytest.raises(AssessError, match="at least one"):
        sample_label([])


def test_self_consistency_by_hand():
    samples = {"x": [2, 2, 3], "y": [1, 1, 1], "z": [0, 4, 2], "w": [3]}
    out = self_consistency(samples, scale=SCALE)
    assert out["n_items"] == 4 and out["n_multi"] == 3 and out["samples"] == {"min": 1, "max": 3}
    assert out["unanimous"] == pytest.approx(1 / 3)
    # agreeing pairs out of 3: x 1, y 3, z 0 -> (1/3 + 1 + 0) / 3
    assert out["pairwise"] == pytest.approx(4 / 9)
    assert out["alpha"] == pytest.approx(krippendorff_alpha(list(samples.values())[:3], scale=SCALE, min_labels=2))
    assert out["labels"] == {"x": 2, "y": 1, "z": 0, "w": 3}
    with pytest.raises(AssessError, match="item 'x' has sampled grade 9"):
        self_consistency({"x": [9]}, scale=SCALE)


def test_persona_sensitivity_by_hand():
    with_ptkb = {"a": 3, "b": 1, "c": 2, "d": 4}
    without = {"a": 2, "b": 1, "c": 3, "d": 2, "e": 0}
    out = persona_sensitivity(with_ptkb, without, scale=SCALE, groups={"a": "personal", "b": "other", "c": "personal"})
    assert (out["n"], out["changed"], out["up"], out["down"]) == (4, 3, 2, 1)
    assert out["mean_change"] == pytest.approx((1 + 0 - 1 + 2) / 4)
    assert (
        out["matrix"][2][3] == 1 and out["matrix"][3][2] == 1 and out["matrix"][2][4] == 1 and out["matrix"][1][1] == 1
    )
    groups = {g["group"]: g for g in out["groups"]}
    assert groups["personal"]["changed"] == 2 and groups["other"]["changed"] == 0


# ------------------------------------------------------------------------------ real data (skipped without ../shared)


def _qrels(path) -> dict[tuple[str, str], int]:
    from assess.formats.trec import parse_qrels

    return {(q.turn_id, q.item_id): q.grade for q in parse_qrels(path)}


@pytest.mark.realdata
def test_nist_vs_gpt4_2024_matrix_and_bias():
    from tests.conftest import shared_file

    gpt = _qrels(
        shared_file("data", "irlabamsterdam-CONE-RAG", "resources", "automatic_resources", "llm-gpt4-pool-depth-30.txt")
    )
    nist = _qrels(shared_file("data", "gyeozai-CFDA-TREC-iKAT2025", "DATA", "topics", "2024_test_qrels.trec"))
    depth = {item: int(item[0].rsplit("_", 1)[1]) for item in set(gpt) | set(nist)}
    matrix = agreement_matrix(
        {"nist": nist, "gpt4": gpt}, scale=SCALE, kinds={"nist": "human", "gpt4": "llm"}, groups={"depth": depth}
    )
    [p] = matrix["pairs"]
    # docs/measures.md#agreement: 8,103 shared items, observed 0.438, kappa 0.240 / 0.366 / 0.468, binary 0.360.
    assert p["n"] == 8103
    assert p["agreement"] == pytest.approx(0.438, abs=5e-4)
    assert p["kappa_unweighted"] == pytest.approx(0.240, abs=5e-4)
    assert p["kappa_linear"] == pytest.approx(0.366, abs=5e-4)
    assert p["kappa_quadratic"] == pytest.approx(0.468, abs=5e-4)
    assert p["kappa_binary"] == pytest.approx(0.360, abs=5e-4)
    assert p["alpha"] == pytest.approx(0.4475, abs=5e-4)
    assert sum(g["n"] for g in p["by"]["depth"]) == 8103
    assert matrix["ceiling"] is None  # one human source only
    # GPT-4 grades higher than NIST on average, and more so deeper into the conversation.
    bias = bias_by(gpt, nist, depth)
    assert bias["overall"]["mean_diff"] == pytest.approx(0.631, abs=5e-4)
    assert bias["slope"]["slope"] > 0 and bias["slope"]["ci"][0] > 0
