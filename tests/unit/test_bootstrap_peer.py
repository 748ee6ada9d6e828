"""Bootstrap intervals against scipy.stats.bootstrap (method='percentile'), the peer run here.

Our resampling draws the same distribution as scipy's but not the same random numbers: Cohen's kappa resamples
items as one multinomial draw of the confusion cells, the system comparison resamples topics as multinomial
weights; scipy draws item indices. So the endpoints are compared within a Monte Carlo tolerance: with B
replicates on each side, a 2.5% / 97.5% percentile has a standard error of about
sqrt(0.025 * 0.975 / B) / phi(1.96) * sd = 0.0267 sd at B = 10,000 (phi the normal density, sd the spread of the
bootstrap distribution); the difference of two independent estimates sqrt(2) times that, 0.038 sd; the tests
allow 4 of those, 0.15 sd (sd read from scipy's own bootstrap distribution). Both sides are seeded, so the
check is deterministic; a defect (a wrong tail, resampling within the wrong unit) moves an endpoint by far more.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from assess.measures.agreement import bootstrap_kappa_ci
from assess.measures.systems import compare_systems

B = 10_000
TOLERANCE_SD = 0.15


def _kappa(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    """Unweighted Cohen's kappa of 0/1/2 labels along ``axis`` (vectorised for scipy's batches)."""
    observed = np.mean(a == b, axis=axis)
    chance = sum(np.mean(a == c, axis=axis) * np.mean(b == c, axis=axis) for c in (0, 1, 2))
    return (observed - chance) / (1 - chance)


def _check(ours, peer) -> None:
    sd = float(np.std(peer.bootstrap_distribution))
    low, high = peer.confidence_interval
    assert ours[0] == pytest.approx(low, abs=TOLERANCE_SD * sd)
    assert ours[1] == pytest.approx(high, abs=TOLERANCE_SD * sd)


def test_kappa_interval_matches_scipy_bootstrap():
    rng = np.random.default_rng(7)
    a = rng.integers(0, 3, size=150)
    b = np.where(rng.random(150) < 0.6, a, rng.integers(0, 3, size=150))  # kappa about 0.6
    assert _kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))  # the test's own kappa is sklearn's
    peer = stats.bootstrap(
        (a, b), _kappa, paired=True, vectorized=True, n_resamples=B, method="percentile", random_state=1
    )
    ours = bootstrap_kappa_ci(a.tolist(), b.tolist(), scale=(0, 1, 2), n_boot=B, seed=0)
    _check(ours, peer)
    # the tolerance is tight enough to see a wrong interval: 90% instead of 95% falls outside it
    narrow = bootstrap_kappa_ci(a.tolist(), b.tolist(), scale=(0, 1, 2), n_boot=B, seed=0, level=0.90)
    with pytest.raises(AssertionError):
        _check(narrow, peer)


def test_system_comparison_interval_matches_scipy_bootstrap_over_topics():
    rng = np.random.default_rng(3)
    runs, topics = [f"r{i}" for i in range(8)], [f"t{j}" for j in range(40)]
    quality = np.linspace(0.2, 0.8, len(runs))
    a = np.clip(quality[:, None] + rng.normal(0, 0.25, (len(runs), len(topics))), 0, 1)
    b = np.clip(a + rng.normal(0, 0.2, a.shape), 0, 1)
    reference = {r: dict(zip(topics, row)) for r, row in zip(runs, a.tolist())}
    other = {r: dict(zip(topics, row)) for r, row in zip(runs, b.tolist())}

    def pearson_of_means(idx, axis=-1):
        idx = np.asarray(idx, dtype=int)  # (batch, topics) of resampled topic indices
        xa, xb = a[:, idx].mean(axis=-1), b[:, idx].mean(axis=-1)  # runs x batch
        xa, xb = xa - xa.mean(axis=0), xb - xb.mean(axis=0)
        return (xa * xb).sum(axis=0) / np.sqrt((xa**2).sum(axis=0) * (xb**2).sum(axis=0))

    peer = stats.bootstrap(
        (np.arange(len(topics)),),
        pearson_of_means,
        vectorized=True,
        n_resamples=B,
        method="percentile",
        random_state=1,
        batch=1000,
    )
    ours = compare_systems(reference, other, ks=(), bootstrap=B, seed=0)["correlations"]["pearson_r"]
    assert ours["value"] == pytest.approx(stats.pearsonr(a.mean(axis=1), b.mean(axis=1)).statistic)
    _check(ours["ci"], peer)
