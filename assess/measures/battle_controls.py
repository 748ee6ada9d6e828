"""Bradley-Terry strengths controlled for features of the answers (LMArena's style control), with intervals.

The model (formulas and choices: docs/measures.md, "Controlled battles")::

    logit P(left wins) = t_left - t_right + sum_k g_k z_k,   d_k = (f_left - f_right) / (f_left + f_right)

``d_k`` is 0 where both features are 0; ``z_k`` is ``d_k`` z-scored over the battles fitted (population standard
deviation). A tie counts half a win each way (``y`` = 0.5), both_bad battles are left out before. Maximum
likelihood by Newton's method, strengths centred to mean 0. With no controls this is :mod:`assess.measures.battles`'
model. Pure functions over index arrays.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from assess.errors import AssessError
from assess.measures.battles import RIDGE, mle_exists, pair_counts, win_matrix

FEATURES = ("length", "citations", "cited_documents", "markdown", "supported_share")
"""Features a battle side may carry: answer length in words, citations, distinct cited documents, markdown
elements (headers, list items, bold spans) and the share of its citations judged supporting."""


def differences(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``(f_left - f_right) / (f_left + f_right)`` per battle and feature, 0 where both are 0."""
    left, right = np.asarray(left, dtype=np.float64), np.asarray(right, dtype=np.float64)
    total = left + right
    return np.divide(left - right, total, out=np.zeros_like(total), where=total != 0)


def standardise(d: np.ndarray, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Z-scores of each column of ``d`` (population standard deviation), with the means and deviations used. A
    control equal in every battle has no effect to estimate: refused, naming it."""
    mean, std = d.mean(axis=0), d.std(axis=0)
    for name, s in zip(names, std):
        if not s > 0:
            raise AssessError(f"the control {name!r} has the same difference in every battle: nothing to estimate")
    return (d - mean) / std, mean, std


class Fit(NamedTuple):
    strength: np.ndarray  # (n,) centred
    coef: np.ndarray  # (K,)
    hessian: np.ndarray  # (n+K, n+K): the information, plus the centring direction on the strengths
    residual: np.ndarray  # (m,) y - p at the fit


def _gram(left, right, z, w, n):
    """``X' diag(w) X`` for the design of the model (+1 at left, -1 at right, then the controls)."""
    k = z.shape[1]
    out = np.zeros((n + k, n + k))
    cross = np.bincount(left * n + right, w, n * n).reshape(n, n)
    out[:n, :n] = -(cross + cross.T)
    idx = np.arange(n)
    out[idx, idx] += np.bincount(left, w, n) + np.bincount(right, w, n)
    if k:
        wz = z * w[:, None]
        tz = np.stack([np.bincount(left, wz[:, j], n) - np.bincount(right, wz[:, j], n) for j in range(k)], axis=1)
        out[:n, n:], out[n:, :n] = tz, tz.T
        out[n:, n:] = z.T @ wz
    return out


def fit(
    left: np.ndarray,
    right: np.ndarray,
    y: np.ndarray,
    z: np.ndarray,
    n: int,
    *,
    alpha: float | None = None,
    start: np.ndarray | None = None,
    tol: float = 1e-11,
    max_iter: int = 100,
) -> Fit:
    """Maximum likelihood of the controlled model (``alpha`` None: 0 where the uncontrolled MLE exists, else the
    ridge :data:`assess.measures.battles.RIDGE` on the strengths, which keeps them finite)."""
    left, right = np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64)
    y = np.asarray(y, dtype=np.float64)
    z = np.asarray(z, dtype=np.float64).reshape(len(y), -1)
    k = z.shape[1]
    if alpha is None:
        code = np.where(y == 1, 0, np.where(y == 0, 1, 2))
        pairs, counts, _ = pair_counts(left, right, code, n)
        alpha = 0.0 if mle_exists(win_matrix(pairs, counts, n)) else RIDGE
    theta = np.zeros(n + k) if start is None else np.array(start, dtype=np.float64)
    centring = np.zeros((n + k, n + k))
    centring[:n, :n] = 1.0 / n
    centring[np.arange(n), np.arange(n)] += alpha
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(-(theta[left] - theta[right] + z @ theta[n:])))
        r = y - p
        grad = np.concatenate(
            [np.bincount(left, r, n) - np.bincount(right, r, n) - alpha * theta[:n], z.T @ r if k else []]
        )
        hessian = _gram(left, right, z, p * (1 - p), n) + centring
        step = np.linalg.lstsq(hessian, grad, rcond=None)[0]  # singular only where a control is degenerate
        step *= min(1.0, 5.0 / max(np.abs(step).max(), 1e-300))  # at most 5 per step: no overshoot far out
        theta += step
        theta[:n] -= theta[:n].mean()
        if np.abs(step).max() < tol:
            break
    # 25 log-odds per standard deviation is no effect people or judges have: the controls separate the verdicts
    # and the likelihood rises without end (the MLE does not exist)
    if k and np.abs(theta[n:]).max() > 25:
        raise AssessError("the controls predict the verdicts perfectly: no finite estimate (too few battles for them?)")
    p = 1.0 / (1.0 + np.exp(-(theta[left] - theta[right] + z @ theta[n:])))
    hessian = _gram(left, right, z, p * (1 - p), n) + centring
    return Fit(theta[:n].copy(), theta[n:].copy(), hessian, y - p)


def score_bootstrap(
    left: np.ndarray,
    right: np.ndarray,
    z: np.ndarray,
    n: int,
    found: Fit,
    *,
    replicates: int,
    level: float,
    seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile intervals (rows ``low``, ``high`` over the n strengths then the K coefficients) from the score
    bootstrap with Gaussian multipliers (Kline & Santos 2012): a replicate is one Newton step from the fit with
    each battle's score ``x_i (y_i - p_i)`` weighted by an independent N(0, 1) draw, which is a draw from
    ``N(fit, H^-1 S H^-1)``, ``S = X' diag((y - p)^2) X`` (the robust, sandwich covariance). A refit per
    replicate on 500,000 battles would take minutes; this takes milliseconds."""
    theta = np.concatenate([found.strength, found.coef])
    if not replicates:
        return theta.copy(), theta.copy()
    inverse = np.linalg.pinv(found.hessian)
    meat = _gram(
        np.asarray(left), np.asarray(right), np.asarray(z).reshape(len(found.residual), -1), found.residual**2, n
    )
    cov = inverse @ meat @ inverse
    values, vectors = np.linalg.eigh((cov + cov.T) / 2)
    root = vectors * np.sqrt(np.clip(values, 0.0, None))
    draws = theta + np.random.default_rng(seed).standard_normal((replicates, len(theta))) @ root.T
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(draws, [tail, 100 - tail], axis=0)
    return low, high


def rank_controlled(
    left: np.ndarray,
    right: np.ndarray,
    y: np.ndarray,
    d: np.ndarray,
    n: int,
    names: Sequence[str],
    *,
    replicates: int,
    level: float,
    seed: int,
) -> dict[str, np.ndarray]:
    """Controlled strengths and coefficients with their intervals, from the raw differences ``d`` (z-scored here):
    ``{strength, low, high}`` per run, ``{coef, coef_low, coef_high, mean, std}`` per control."""
    if not 0 < level < 1:
        raise AssessError(f"the interval level must lie between 0 and 1, not {level}")
    if replicates < 0:
        raise AssessError(f"the number of bootstrap replicates must be >= 0, not {replicates}")
    z, mean, std = standardise(np.asarray(d, dtype=np.float64).reshape(len(y), -1), names)
    found = fit(left, right, y, z, n)
    low, high = score_bootstrap(left, right, z, n, found, replicates=replicates, level=level, seed=seed)
    return {
        "strength": found.strength,
        "low": low[:n],
        "high": high[:n],
        "coef": found.coef,
        "coef_low": low[n:],
        "coef_high": high[n:],
        "mean": mean,
        "std": std,
    }


_HEADER = re.compile(r"^\s{0,3}#{1,6}\s", re.M)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s", re.M)
_BOLD = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")


def answer_features(text: str, citations: Sequence[str], supported: Sequence[bool] | None = None) -> dict[str, float]:
    """An answer's features: ``length`` (words), ``citations`` (every cited passage, repeats kept),
    ``cited_documents`` (distinct documents: a passage id's part before its last ``:``), ``markdown`` (headers,
    list items and bold spans, as LMArena counts them) and, where ``supported`` gives a verdict per judged
    citation, ``supported_share`` (0 for an answer without judged citations)."""
    out = {
        "length": float(len(text.split())),
        "citations": float(len(citations)),
        "cited_documents": float(len({c.rsplit(":", 1)[0] for c in citations})),
        "markdown": float(len(_HEADER.findall(text)) + len(_LIST_ITEM.findall(text)) + len(_BOLD.findall(text))),
    }
    if supported is not None:
        out["supported_share"] = sum(supported) / len(supported) if supported else 0.0
    return out
