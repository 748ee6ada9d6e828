"""Divergences between an achieved and a target probability distribution.

Sakai's measures as used by GFR/GFRC/GFRC2 (group fairness) and AEPD (content-length uniformity);
see docs/measures.md#divergences. Every divergence here lies in [0, 1], and
``DistrSim = 1 - divergence``.

Each function takes ``p`` (achieved) and ``target`` (gold) either as 1-D vectors (returns a float)
or as a 2-D array of row distributions against one 1-D target (returns a 1-D array), so that the
scorers can evaluate thousands of prefixes in one call.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from assess.errors import AssessError

#: The divergences :func:`distr_sim` knows, by upper-case name.
KINDS = ("JSD", "NMD", "RNOD", "RNSS", "RSNOD")

_SUM_TOLERANCE = 1e-6


def _as_distributions(p, target, *, check: bool = True) -> tuple[np.ndarray, np.ndarray, bool]:
    """Return (rows of p as 2-D float array, target as 1-D array, whether p was 1-D)."""
    p_arr = np.asarray(p, dtype=float)
    t_arr = np.asarray(target, dtype=float)
    single = p_arr.ndim == 1
    rows = p_arr[None, :] if single else p_arr
    if rows.ndim != 2 or t_arr.ndim != 1:
        raise AssessError(
            f"expected 1-D or 2-D distributions and a 1-D target, found shapes {p_arr.shape} and {t_arr.shape}"
        )
    if rows.shape[1] != t_arr.shape[0] or t_arr.shape[0] == 0:
        raise AssessError(f"achieved and target distributions differ in length: {rows.shape[1]} vs {t_arr.shape[0]}")
    if check:
        for name, arr in (("achieved", rows), ("target", t_arr[None, :])):
            if not np.all(np.isfinite(arr)) or np.any(arr < 0):
                raise AssessError(f"{name} distribution has a negative or non-finite entry")
            sums = arr.sum(axis=1)
            if np.any(np.abs(sums - 1.0) > _SUM_TOLERANCE):
                bad = sums[np.argmax(np.abs(sums - 1.0))]
                raise AssessError(f"{name} distribution must sum to 1, found a sum of {bad!r}")
    return rows, t_arr, single


def _out(values: np.ndarray, single: bool):
    return float(values[0]) if single else values


def _kl2(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # KL in bits with 0 log 0 = 0; b > 0 wherever a > 0 because b is a midpoint containing a.
    # hypothesis feeds subnormal probabilities: a / b may overflow where the product a * log2(.) is ~0.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        terms = np.where(a > 0, a * np.log2(np.where(a > 0, a, 1.0) / np.where(b > 0, b, 1.0)), 0.0)
    return terms.sum(axis=-1)


def jsd(p, target, *, check: bool = True):
    """Compute the Jensen-Shannon divergence in bits (nominal groups).

    JSD(p, p*) = (KL(p || m) + KL(p* || m)) / 2 with m = (p + p*) / 2 and KL in log base 2,
    so JSD lies in [0, 1] (Sakai 2021, ACL; docs/measures.md#jsd). Zero entries contribute 0 (0 log 0 = 0).
    Example: (1,0,0) vs uniform(3) gives 0.459148.
    """
    rows, t, single = _as_distributions(p, target, check=check)
    m = (rows + t) / 2.0
    values = (_kl2(rows, m) + _kl2(np.broadcast_to(t, rows.shape), m)) / 2.0
    return _out(np.clip(values, 0.0, 1.0), single)


def nmd(p, target, *, check: bool = True):
    """Compute the Normalised Match Distance (ordinal groups).

    NMD = sum_i |cp_i - cp*_i| / (|C| - 1) with cp the cumulative distributions, i.e. the earth
    mover's distance between the histograms scaled to [0, 1] (docs/measures.md#nmd).
    Degenerate: with a single class (|C| = 1) both distributions are (1,) and NMD is 0.
    """
    rows, t, single = _as_distributions(p, target, check=check)
    k = t.shape[0]
    if k == 1:
        return _out(np.zeros(rows.shape[0]), single)
    md = np.abs(np.cumsum(rows - t, axis=1)).sum(axis=1)
    return _out(np.clip(md / (k - 1), 0.0, 1.0), single)


def _order_aware(rows: np.ndarray, t: np.ndarray, support: np.ndarray) -> np.ndarray:
    """OD(p || p*) = mean over i in support of DW_i, DW_i = sum_j |i - j| (p_j - p*_j)^2."""
    k = t.shape[0]
    idx = np.arange(k)
    distance = np.abs(idx[:, None] - idx[None, :]).astype(float)
    d2 = (rows - t) ** 2
    if support.ndim == 1:
        # sum_{i in C*} DW_i = sum_j d_j^2 sum_{i in C*} |i - j|: one matrix-vector product.
        return d2 @ distance[support].sum(axis=0) / support.size
    dw = d2 @ distance  # dw[:, i] = sum_j |i - j| d_j^2 (distance is symmetric)
    counts = support.sum(axis=1)
    return np.where(counts > 0, (dw * support).sum(axis=1) / np.maximum(counts, 1), 0.0)


def rnod(p, target, *, check: bool = True):
    """Compute the Root Normalised Order-aware Divergence RNOD(p || p*) (ordinal groups).

    DW_i = sum_j |i - j| (p_j - p*_j)^2; OD = mean of DW_i over C* = {i : p*_i > 0}, the support
    of the TARGET (asymmetric, Sakai 2021 ACL Eqs. 12-13, as in NTCIREVAL ``sysgold2rnod``);
    RNOD = sqrt(OD / (|C| - 1)) (docs/measures.md#rnod). Example: (0,0,0,1) vs uniform(4) gives
    sqrt(17/48) = 0.595119. Degenerate: |C| = 1 gives 0.
    """
    rows, t, single = _as_distributions(p, target, check=check)
    k = t.shape[0]
    if k == 1:
        return _out(np.zeros(rows.shape[0]), single)
    od = _order_aware(rows, t, np.flatnonzero(t > 0))
    return _out(np.clip(np.sqrt(od / (k - 1)), 0.0, 1.0), single)


def rsnod(p, target, *, check: bool = True):
    """Compute the symmetric RSNOD = sqrt((OD(p||p*) + OD(p*||p)) / 2 / (|C| - 1)).

    Not the measure GFRC/GFRC2 use (they use :func:`rnod`); kept so that the difference can be
    shown and tested (docs/measures.md#rsnod: (0,0,0,1) vs uniform(4) gives 0.489473, not 0.595119).
    Degenerate: |C| = 1 gives 0.
    """
    rows, t, single = _as_distributions(p, target, check=check)
    k = t.shape[0]
    if k == 1:
        return _out(np.zeros(rows.shape[0]), single)
    forward = _order_aware(rows, t, np.flatnonzero(t > 0))
    # OD(p*||p): the roles swap, so the averaging set is each row's own support.
    backward = _order_aware(rows, t, rows > 0)
    return _out(np.clip(np.sqrt((forward + backward) / 2.0 / (k - 1)), 0.0, 1.0), single)


def rnss(p, target, *, check: bool = True):
    """Compute the Root Normalised Sum of Squares RNSS = sqrt(sum_i (p_i - p*_i)^2 / 2).

    The largest sum of squares between two distributions is 2, so RNSS is in [0, 1]
    (Sakai 2018 SIGIR; AEPD Eqs. 12-13; docs/measures.md#rnss).
    """
    rows, t, single = _as_distributions(p, target, check=check)
    values = np.sqrt(((rows - t) ** 2).sum(axis=1) / 2.0)
    return _out(np.clip(values, 0.0, 1.0), single)


_FUNCTIONS = {"JSD": jsd, "NMD": nmd, "RNOD": rnod, "RNSS": rnss, "RSNOD": rsnod}


def divergence(p, target, kind: str, *, check: bool = True):
    """Compute the divergence named by ``kind`` (JSD, NMD, RNOD, RNSS or RSNOD, any case)."""
    try:
        function = _FUNCTIONS[str(kind).upper()]
    except KeyError:
        raise AssessError(f"unknown divergence {kind!r}; expected one of {', '.join(KINDS)}") from None
    return function(p, target, check=check)


def distr_sim(p, target, kind: str, *, check: bool = True):
    """Compute DistrSim = 1 - divergence(p || target) for the divergence named by ``kind``.

    GFRC Eq. 10 and GFRC2 Eq. 17 use 1 - JSD for nominal groups and 1 - RNOD (or 1 - NMD) for
    ordinal groups. Returns a float for a 1-D ``p``, an array for a 2-D ``p`` (one row each).
    """
    return 1.0 - divergence(p, target, kind, check=check)


def default_divergence(kind: str) -> str:
    """Return the default divergence for an attribute set: JSD if nominal, RNOD if ordinal."""
    value = str(kind).lower()
    if value == "nominal":
        return "JSD"
    if value == "ordinal":
        return "RNOD"
    raise AssessError(f"unknown attribute kind {kind!r}; expected 'nominal' or 'ordinal'")


def uniform(k: int) -> Sequence[float]:
    """Return the uniform distribution over ``k`` classes (the usual fairness target)."""
    if k < 1:
        raise AssessError(f"a distribution needs at least one class, found {k}")
    return [1.0 / k] * k
