"""The agreement matrix's splits (human-human, machine-machine, human-machine, pooled) on a small hand-made case:
each equals the figures of its pairs' labels put together, computed here with scikit-learn (Cohen's kappa) and
by counting (observed agreement)."""

from __future__ import annotations

import pytest
from sklearn.metrics import cohen_kappa_score

from assess.measures.agreement import SPLITS, agreement_matrix

SCALE = [0, 1, 2, 3]
LABELS = {
    "h1": dict(enumerate([0, 1, 2, 3, 3, 2, 1, 0, 2, 2])),
    "h2": dict(enumerate([0, 1, 2, 2, 3, 1, 1, 0, 3, 2])),
    "h3": dict(enumerate([1, 1, 2, 3, 2, 2, 0, 0, 2, 2])),
    "m1": dict(enumerate([3, 3, 2, 3, 3, 3, 2, 1, 3, 3])),
    "m2": dict(enumerate([2, 3, 2, 3, 2, 3, 2, 2, 3, 3])),
    "crowd": dict(enumerate([0, 1, 1, 3, 3, 2, 1, 0, 2, 1])),
}
KINDS = {"h1": "human", "h2": "human", "h3": "human", "m1": "llm", "m2": "llm", "crowd": "crowd"}


def pooled_by_hand(pairs):
    """Every pair's shared items one after the other: the pooled confusion matrix is the sum of the pairs'."""
    a = [LABELS[x][i] for x, y in pairs for i in sorted(LABELS[x].keys() & LABELS[y].keys())]
    b = [LABELS[y][i] for x, y in pairs for i in sorted(LABELS[x].keys() & LABELS[y].keys())]
    return {
        "n": len(a),
        "agreement": sum(x == y for x, y in zip(a, b)) / len(a),
        "kappa_unweighted": cohen_kappa_score(a, b, labels=SCALE),
        "kappa_quadratic": cohen_kappa_score(a, b, labels=SCALE, weights="quadratic"),
    }


@pytest.mark.parametrize(
    "split, pairs",
    [
        ("human-human", [("h1", "h2"), ("h1", "h3"), ("h2", "h3")]),
        ("machine-machine", [("m1", "m2")]),
        ("human-machine", [(h, m) for h in ("h1", "h2", "h3") for m in ("m1", "m2")]),
        ("pooled", None),
    ],
)
def test_each_split_equals_its_pairs_pooled_by_hand(split, pairs):
    matrix = agreement_matrix(LABELS, scale=SCALE, threshold=2, kinds=KINDS, bootstrap=0, min_shared=1)
    names = list(LABELS)
    pairs = pairs or [(a, b) for n, a in enumerate(names) for b in names[n + 1 :]]
    got = matrix["splits"][split]
    assert sorted(map(tuple, got["pairs"])) == sorted(pairs)
    for key, value in pooled_by_hand(pairs).items():
        assert got[key] == pytest.approx(value), key
    assert list(matrix["splits"]) == list(SPLITS)


def test_the_human_split_is_the_ceiling_and_a_crowd_pair_only_pooled():
    matrix = agreement_matrix(LABELS, scale=SCALE, threshold=2, kinds=KINDS, bootstrap=0, min_shared=1)
    ceiling, people = matrix["ceiling"], matrix["splits"]["human-human"]
    assert ceiling["kappa_quadratic"] == people["kappa_quadratic"] and ceiling["n"] == people["n"]
    in_a_split = {tuple(p) for name in SPLITS[:3] for p in matrix["splits"][name]["pairs"]}
    assert not any("crowd" in p for p in in_a_split)
    only_people = agreement_matrix({k: LABELS[k] for k in ("h1", "h2")}, scale=SCALE, kinds=KINDS, bootstrap=0)
    assert only_people["splits"]["machine-machine"] is None and only_people["splits"]["human-machine"] is None
