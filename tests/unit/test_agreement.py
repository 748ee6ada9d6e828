"""Agreement (assess.measures.agreement): the toy check of docs/measures.md#agreement, cross-checks against
scikit-learn and statsmodels, degenerate cases, properties, and real iKAT/CONE-RAG judgments."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa

from assess.errors import AssessError
from assess.measures.agreement import (
    agreement_report,
    binary_kappa,
    bootstrap_kappa_ci,
    cohen_kappa,
    confusion_matrix,
    fleiss_kappa,
    kappa_by_group,
    kappa_from_confusion,
    krippendorff_alpha,
    observed_agreement,
)
from tests.conftest import shared_file

SCALE = [0, 1, 2, 3, 4]
# docs/measures.md#agreement, toy check: 10 items on the 0-4 scale, three annotators.
A = [0, 1, 2, 3, 4, 2, 2, 1, 0, 3]
B = [0, 2, 2, 3, 3, 2, 1, 1, 0, 4]
C = [0, 1, 2, 4, 4, 2, 2, 0, 0, 3]


def test_toy_cohen_kappa():
    assert cohen_kappa(A, B, scale=SCALE) == pytest.approx(0.487179, abs=5e-7)
    assert cohen_kappa(A, B, scale=SCALE, weights="linear") == pytest.approx(0.714286, abs=5e-7)
    assert cohen_kappa(A, B, scale=SCALE, weights="quadratic") == pytest.approx(0.871795, abs=5e-7)


def test_toy_fleiss_and_krippendorff():
    items = list(zip(A, B, C))
    assert fleiss_kappa(items, scale=SCALE) == pytest.approx(0.488636, abs=5e-7)
    assert fleiss_kappa(items, scale=SCALE, method="randolph") == pytest.approx(0.5, abs=5e-7)
    assert krippendorff_alpha(items, scale=SCALE, level="nominal") == pytest.approx(0.505682, abs=5e-7)
    assert krippendorff_alpha(items, scale=SCALE, level="ordinal") == pytest.approx(0.911802, abs=5e-7)
    assert krippendorff_alpha(items, scale=SCALE, level="interval") == pytest.approx(0.890152, abs=5e-7)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_kappa_matches_sklearn_and_statsmodels(weights):
    rng = np.random.default_rng(7)
    for size in (5, 50, 500):
        a = rng.integers(0, 5, size)
        b = np.clip(a + rng.integers(-2, 3, size), 0, 4)
        ours = cohen_kappa(a, b, scale=SCALE, weights=weights)
        assert ours == pytest.approx(cohen_kappa_score(a, b, labels=SCALE, weights=weights), abs=1e-12)
        table = confusion_matrix(a, b, scale=SCALE)
        wt = {None: None, "linear": "linear", "quadratic": "quadratic"}[weights]
        sm = sm_cohens_kappa(table, wt=wt).kappa if weights else sm_cohens_kappa(table).kappa
        assert ours == pytest.approx(sm, abs=1e-12)


def test_full_scale_matters_for_weighted_kappa():
    # With grades 2 and 3 never used, the index distances differ from sklearn's default labels.
    a = [0, 1, 4, 4, 0, 1, 4, 0]
    b = [0, 4, 4, 1, 1, 1, 4, 0]
    full = cohen_kappa(a, b, scale=SCALE, weights="linear")
    assert full == pytest.approx(cohen_kappa_score(a, b, labels=SCALE, weights="linear"))
    assert full != pytest.approx(cohen_kappa_score(a, b, weights="linear"))


def test_confusion_rows_are_the_first_annotator():
    m = confusion_matrix([0, 0, 1], [1, 1, 1], scale=[0, 1])
    assert m.tolist() == [[0, 2], [0, 1]]
    report = agreement_report([0, 0, 1], [1, 1, 1], scale=[0, 1])
    assert report["confusion"] == [[0, 2], [0, 1]]


def test_report_keys_and_values():
    report = agreement_report(A, B, scale=SCALE, weights="linear", threshold=2)
    assert report["n"] == 10
    assert report["agreement"] == pytest.approx(0.6)
    assert report["kappa"] == report["kappa_linear"] == pytest.approx(0.714286, abs=5e-7)
    assert report["kappa_unweighted"] == pytest.approx(0.487179, abs=5e-7)
    assert report["kappa_quadratic"] == pytest.approx(0.871795, abs=5e-7)
    assert report["labels"] == SCALE
    assert np.asarray(report["confusion"]).sum() == 10
    binary_a, binary_b = [x >= 2 for x in A], [x >= 2 for x in B]
    assert report["kappa_binary"] == pytest.approx(cohen_kappa_score(binary_a, binary_b))
    assert report["agreement_binary"] == pytest.approx(np.mean(np.equal(binary_a, binary_b)))
    assert report["kappa_binary"] == pytest.approx(binary_kappa(A, B, threshold=2))
    low, high = report["kappa_ci"]
    assert low <= report["kappa"] <= high


def test_degenerate_cases_are_none_not_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isnan(cohen_kappa_score([2, 2, 2], [2, 2, 2], labels=SCALE))  # what sklearn gives
    assert cohen_kappa([2, 2, 2], [2, 2, 2], scale=SCALE) is None
    assert cohen_kappa([], [], scale=SCALE) is None
    assert observed_agreement([], []) is None
    assert kappa_from_confusion(np.zeros((3, 3))) is None
    report = agreement_report([], [], scale=SCALE, threshold=2)
    assert report["n"] == 0 and report["agreement"] is None and report["kappa"] is None
    assert report["kappa_ci"] is None and report["kappa_binary"] is None
    assert bootstrap_kappa_ci([], [], scale=SCALE) is None
    assert fleiss_kappa([[1, 2]], scale=SCALE) is None  # no item with 3 labels
    assert krippendorff_alpha([[1, 1, 1], [1, 1, 1]], scale=SCALE) is None


def test_bad_input_is_refused():
    with pytest.raises(AssessError, match="outside the scale"):
        cohen_kappa([0, 5], [0, 1], scale=SCALE)
    with pytest.raises(AssessError, match="different numbers"):
        cohen_kappa([0, 1], [0], scale=SCALE)
    with pytest.raises(AssessError, match="weights"):
        cohen_kappa([0], [0], scale=SCALE, weights="cubic")
    with pytest.raises(AssessError, match="same number of labels"):
        fleiss_kappa([[0, 1, 2], [0, 1, 2, 3]], scale=SCALE)


def test_string_labels():
    scale = ["fails", "slightly", "moderately"]
    a = ["fails", "slightly", "moderately", "fails"]
    b = ["fails", "moderately", "moderately", "slightly"]
    assert cohen_kappa(a, b, scale=scale) == pytest.approx(cohen_kappa_score(a, b, labels=scale))


def test_kappa_by_group_equals_separate_computations():
    groups = ["t1"] * 4 + ["t2"] * 6
    per = kappa_by_group(A, B, groups, scale=SCALE, weights="quadratic")
    assert list(per) == ["t1", "t2"]
    for key, lo, hi in (("t1", 0, 4), ("t2", 4, 10)):
        assert per[key]["n"] == hi - lo
        assert per[key]["kappa"] == pytest.approx(cohen_kappa(A[lo:hi], B[lo:hi], scale=SCALE, weights="quadratic"))
        assert per[key]["agreement"] == pytest.approx(observed_agreement(A[lo:hi], B[lo:hi]))
    constant = kappa_by_group([1, 1, 0, 1], [1, 1, 1, 0], ["x", "x", "y", "y"], scale=[0, 1])
    assert constant["x"]["kappa"] is None


def test_bootstrap_is_seeded_and_close_to_item_resampling():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 5, 400)
    b = np.clip(a + rng.integers(-1, 2, 400), 0, 4)
    first = bootstrap_kappa_ci(a, b, scale=SCALE, seed=3)
    assert first == bootstrap_kappa_ci(a, b, scale=SCALE, seed=3)
    # Naive bootstrap over item indices: the intervals agree to Monte Carlo precision.
    idx = np.random.default_rng(9).integers(0, 400, (1000, 400))
    naive = [cohen_kappa(a[i], b[i], scale=SCALE) for i in idx]
    low, high = np.percentile(naive, [2.5, 97.5])
    assert first[0] == pytest.approx(low, abs=0.02) and first[1] == pytest.approx(high, abs=0.02)


def test_krippendorff_accepts_items_with_different_label_counts():
    items = [[0, 0, 1], [2, 2, 2, 2], [3, 4, 3], [1]]  # the last item is left out (< 3 labels)
    value = krippendorff_alpha(items, scale=SCALE, level="ordinal")
    import krippendorff

    data = np.full((4, 3), np.nan)
    for j, labels in enumerate(items[:3]):
        data[: len(labels), j] = labels
    assert value == pytest.approx(
        krippendorff.alpha(reliability_data=data, value_domain=SCALE, level_of_measurement="ordinal")
    )


labels = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=1, max_size=60)


@settings(max_examples=200, deadline=None)
@given(labels, st.sampled_from([None, "linear", "quadratic"]))
def test_kappa_is_symmetric(pairs, weights):
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    k1, k2 = cohen_kappa(a, b, scale=SCALE, weights=weights), cohen_kappa(b, a, scale=SCALE, weights=weights)
    assert (k1 is None) == (k2 is None)
    if k1 is not None:
        assert k1 == pytest.approx(k2, abs=1e-12)
        assert -1.0 - 1e-12 <= k1 <= 1.0 + 1e-12


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 4), min_size=2, max_size=60).filter(lambda v: len(set(v)) > 1),
    st.sampled_from([None, "linear", "quadratic"]),
)
def test_kappa_is_one_on_identical_non_constant_labels(a, weights):
    assert cohen_kappa(a, list(a), scale=SCALE, weights=weights) == pytest.approx(1.0, abs=1e-12)


# ---------------------------------------------------------------------------------------------
# Real data (skipped without ../shared)


def _qrels(path):
    out = {}
    for line in path.read_text().splitlines():
        fields = line.split()
        if len(fields) == 4:
            out[(fields[0], fields[2])] = int(fields[3])
    return out


@pytest.mark.realdata
def test_gpt4_pool_vs_nist_2024_qrels():
    gpt = _qrels(
        shared_file("data", "irlabamsterdam-CONE-RAG", "resources", "automatic_resources", "llm-gpt4-pool-depth-30.txt")
    )
    nist = _qrels(shared_file("data", "gyeozai-CFDA-TREC-iKAT2025", "DATA", "topics", "2024_test_qrels.trec"))
    items = sorted(set(gpt) & set(nist))
    assert len(items) > 1000
    a = np.array([nist[i] for i in items])
    b = np.array([gpt[i] for i in items])
    report = agreement_report(a, b, scale=SCALE, weights="quadratic", threshold=2)
    # Independent computation: plain numpy over the 5x5 table.
    table = np.zeros((5, 5))
    np.add.at(table, (a, b), 1)
    n = table.sum()
    expected = np.outer(table.sum(1), table.sum(0)) / n
    idx = np.arange(5)
    for key, w in (
        ("kappa_unweighted", (idx[:, None] != idx[None, :]).astype(float)),
        ("kappa_linear", np.abs(idx[:, None] - idx[None, :]).astype(float)),
        ("kappa_quadratic", (idx[:, None] - idx[None, :]) ** 2.0),
    ):
        assert report[key] == pytest.approx(1 - (w * table).sum() / (w * expected).sum(), abs=1e-12)
    assert report["kappa_unweighted"] == pytest.approx(cohen_kappa_score(a, b, labels=SCALE), abs=1e-12)
    assert report["n"] == len(items)
    assert -1 < report["kappa_binary"] < 1


@pytest.mark.realdata
def test_ikat_2023_ptkb_nist_vs_organisers():
    nist = _qrels(shared_file("data", "irlabamsterdam-iKAT", "2023", "evaluation", "ptkb_rel_nist"))
    org = _qrels(shared_file("data", "irlabamsterdam-iKAT", "2023", "evaluation", "ptkb_rel_org"))
    items = sorted(set(nist) & set(org))
    a, b = [nist[i] for i in items], [org[i] for i in items]
    report = agreement_report(a, b, scale=[0, 1])
    assert report["kappa"] == pytest.approx(cohen_kappa_score(a, b, labels=[0, 1]), abs=1e-12)
    assert report["n"] == len(items) > 300
    per_turn = kappa_by_group(a, b, [turn for turn, _ in items], scale=[0, 1])
    assert sum(g["n"] for g in per_turn.values()) == len(items)
