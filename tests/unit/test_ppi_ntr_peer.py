"""PPI / PPI++ for NtR recall (assess.measures.ppi.corrected_ntr) against ppi-python's equations.

ppi-python is not a dependency (it pulls in numba and gdown, docs/estimates.md), so the peer's few lines are
written here from its source: aangelopoulos/ppi_py, commit bd90caada03a1a3473eea62c53e39123371dedb8,
``ppi_py/ppi.py``: ``ppi_mean_pointestimate`` (lam * mean(w_u * Yhat_u) + mean(w * (Y - lam * Yhat))),
``ppi_mean_ci`` (standard error sqrt(std(w_u * lam * Yhat_u)^2 / N + std(w * (Y - lam * Yhat))^2 / n), numpy's
std with ddof 0) and ``ppi_py/utils/statistics_utils.py`` ``construct_weight_vector`` (weights rescaled to
mean 1: w / sum(w) * n).

How the two relate, for one run's NtR = sum_i w_i y_i (w_i = 1 / (turns x |gold of the turn|)) with every
item judged and a uniform human sample of n of the N items:
- the point estimate is the same for every fixed lam when the peer's weights are N w_i on both sides, which its
  rescaling gives when the sample takes the same share of every turn (the peer's labelled mean is then our
  Horvitz-Thompson total);
- our variance drops the peer's imputed term (the judge labelled the whole population: its total is known,
  not sampled) and applies the finite-population correction with the sample variance (ddof 1):
  se_ours^2 = (1 - n/N) * n/(n-1) * rectifier_std^2 / n.
- the tuned lam differs by design (the peer's has (1 + n/N) var(Yhat) of an i.i.d. unlabelled sample in its
  denominator); the comparison is made at ours and at lam 0 (classical) and 1 (PPI).
"""

from __future__ import annotations

import numpy as np
import pytest

from assess.measures import ppi


def peer_point(y, yhat, yhat_u, lam, w, w_u):
    w, w_u = w / w.sum() * len(w), w_u / w_u.sum() * len(w_u)  # construct_weight_vector
    return (w_u * lam * yhat_u).mean() + (w * (y - lam * yhat)).mean()


def peer_rectifier_var(y, yhat, lam, w):
    w = w / w.sum() * len(w)
    return (w * (y - lam * yhat)).std() ** 2 / len(y)


def test_ntr_ppi_equals_ppi_pythons_estimate_at_the_same_lambda():
    rng = np.random.default_rng(7)
    gold = {"t1": [f"a{i}" for i in range(8)], "t2": [f"b{i}" for i in range(4)]}
    items = [("R", t, g) for t, nuggets in gold.items() for g in nuggets]
    judge = {item: float(rng.random() < 0.6) for item in items}
    truth = {item: judge[item] if rng.random() < 0.75 else 1.0 - judge[item] for item in items}
    # half of each turn: 4 of t1, 2 of t2 (the same share, so the peer's rescaled weights are N w_i)
    sampled = [items[i] for i in (0, 2, 5, 7, 8, 10)]
    human = {item: truth[item] for item in sampled}
    out = ppi.corrected_ntr(gold, judge, human)["R"]["estimate"]
    N, n = len(items), len(sampled)
    weight = {item: 1 / (2 * len(gold[item[1]])) for item in items}
    y = np.array([human[i] for i in sampled])
    yhat = np.array([judge[i] for i in sampled])
    yhat_u = np.array([judge[i] for i in items])
    w, w_u = np.array([weight[i] for i in sampled]), np.array([weight[i] for i in items])
    assert sum(weight[i] for i in sampled) == pytest.approx(n / N)  # the same share of every turn
    for lam, ours in ((out["lambda"], out["ppi"]), (0.0, out["human_only"])):
        assert ours["low"] > 0 and ours["high"] < 1  # not clipped: the raw interval is compared
        assert ours["value"] == pytest.approx(peer_point(y, yhat, yhat_u, lam, w, w_u), abs=1e-12)
        expected = (1 - n / N) * n / (n - 1) * peer_rectifier_var(y, yhat, lam, w)
        assert ours["se"] ** 2 == pytest.approx(expected, abs=1e-12)
        assert ours["high"] - ours["value"] == pytest.approx(1.959963984540054 * ours["se"], abs=1e-12)
    assert 0 < out["lambda"] < 1  # tuned, not a boundary: the comparison at it is not lam 0 or 1 again
    original = ppi.corrected_total(weight, judge, human, lam=1.0)  # original PPI, lam = 1
    assert original.ppi.value == pytest.approx(peer_point(y, yhat, yhat_u, 1.0, w, w_u), abs=1e-12)
    assert original.ppi.se**2 == pytest.approx((1 - n / N) * n / (n - 1) * peer_rectifier_var(y, yhat, 1.0, w))
    # the population value the sample estimates, for the record: the true NtR of these labels
    true_ntr = sum(weight[i] * truth[i] for i in items)
    assert abs(out["ppi"]["value"] - true_ntr) < 3 * out["ppi"]["se"]
