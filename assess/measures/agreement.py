"""Inter-annotator agreement: Cohen's kappa (unweighted, linear, quadratic, binarised), per-group
kappa, bootstrap intervals, Fleiss' kappa and Krippendorff's alpha. docs/measures.md#agreement.

Pure functions over plain sequences of labels. Labels are mapped to their index in an explicit
``scale`` (e.g. ``[0, 1, 2, 3, 4]``): weights use those indices, exactly like scikit-learn's
``cohen_kappa_score(..., labels=scale)``, so unobserved grades still count. Cohen's kappa is
computed here from a numpy confusion matrix (``np.bincount``) because scikit-learn takes ~0.3 s per
call on a million pairs; the tests cross-check every variant against scikit-learn and statsmodels.

Degenerate cases return ``None`` (never NaN, never ZeroDivisionError): no items, or a chance
disagreement of zero (e.g. both annotators always give the same single label), where
scikit-learn would return NaN.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from itertools import chain, repeat
from operator import itemgetter
from typing import Any

import numpy as np

from assess import lazylibs
from assess.errors import AssessError
from assess.measures.ppi import natural_key

WEIGHTS = (None, "linear", "quadratic")


def _scale_array(scale: Sequence) -> np.ndarray:
    values = list(scale)
    if not values:
        raise AssessError("the label scale is empty")
    if len(set(values)) != len(values):
        raise AssessError(f"the label scale has repeated labels: {values!r}")
    mixed = len({isinstance(v, str) for v in values}) > 1  # numpy would turn 0 and "0" into the same string
    return np.asarray(values, dtype=object if mixed else None)


def _codes(labels: Sequence, scale: Sequence, name: str = "labels") -> np.ndarray:
    """Return the index in ``scale`` of every label (vectorised; raises on labels off the scale)."""
    scale_arr = _scale_array(scale)
    arr = np.asarray(labels)
    if arr.ndim != 1:
        if arr.size == 0:
            return np.zeros(0, dtype=np.int64)
        raise AssessError(f"{name} must be a flat sequence of labels, found shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    try:
        order = np.argsort(scale_arr, kind="stable")
        ordered = scale_arr[order]
        pos = np.minimum(np.searchsorted(ordered, arr), len(ordered) - 1)
        ok = ordered[pos] == arr
        if not isinstance(ok, np.ndarray) or ok.shape != arr.shape:
            raise TypeError
        codes = order[pos]
    except TypeError:  # labels and scale of incomparable types: map one by one
        index = {v: i for i, v in enumerate(scale_arr.tolist())}
        codes = np.asarray([index.get(v, -1) if isinstance(v, Hashable) else -1 for v in arr.tolist()], dtype=np.int64)
        ok = codes >= 0
    if not np.all(ok):
        bad = arr[np.flatnonzero(~ok)[0]]
        bad = bad.item() if isinstance(bad, np.generic) else bad
        raise AssessError(f"{name} has label {bad!r} outside the scale {list(scale)!r}")
    return codes.astype(np.int64)


def _pair_codes(a: Sequence, b: Sequence, scale: Sequence) -> tuple[np.ndarray, np.ndarray]:
    if len(a) != len(b):
        raise AssessError(f"the two annotators label different numbers of items: {len(a)} vs {len(b)}")
    return _codes(a, scale, "first labels"), _codes(b, scale, "second labels")


def weight_matrix(k: int, weights: str | None = None) -> np.ndarray:
    """Return the k x k disagreement weights: 0/1 (None), |i - j| ('linear') or (i - j)^2 ('quadratic')."""
    if weights not in WEIGHTS:
        raise AssessError(f"unknown kappa weights {weights!r}; expected None, 'linear' or 'quadratic'")
    idx = np.arange(k)
    diff = np.abs(idx[:, None] - idx[None, :]).astype(float)
    if weights is None:
        return (diff > 0).astype(float)
    return diff if weights == "linear" else diff**2


def confusion_matrix(a: Sequence, b: Sequence, *, scale: Sequence) -> np.ndarray:
    """Count label pairs over the full scale: rows = labels of ``a``, columns = labels of ``b``."""
    ca, cb = _pair_codes(a, b, scale)
    k = len(scale)
    return np.bincount(ca * k + cb, minlength=k * k).reshape(k, k)


def _kappa_batch(counts: np.ndarray, w: np.ndarray) -> np.ndarray:
    """kappa = 1 - sum(W O) / sum(W E) over the last two axes; NaN where undefined."""
    return _kappas(_Margins(counts), [w])[0]


class _Margins:
    """A stack of confusion matrices (last two axes) as floats, flattened, with n and both margins."""

    def __init__(self, counts: np.ndarray):
        counts = np.asarray(counts, dtype=float)
        k = counts.shape[-1]
        self.flat = counts.reshape(*counts.shape[:-2], k * k)
        self.rows = counts.sum(axis=-1)
        self.cols = counts.sum(axis=-2)
        self.n = self.rows.sum(axis=-1)


def _kappas(m: _Margins, weights: Sequence[np.ndarray]) -> list[np.ndarray]:
    """kappa for each disagreement weight matrix; the weighted sums as matrix products (sum(W O) = O . W
    flattened; sum(W E) = rows W cols / n), which cost a fraction of summing W * O over 1,000s of matrices."""
    out = []
    for w in weights:
        observed_d = m.flat @ w.reshape(-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            expected_d = ((m.rows @ w) * m.cols).sum(axis=-1) / m.n
            kappa = 1.0 - observed_d / expected_d
        out.append(np.where((m.n > 0) & (expected_d > 0), kappa, np.nan))
    return out


def _none_if_nan(value) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def kappa_from_confusion(confusion, weights: str | None = None) -> float | None:
    """Compute Cohen's kappa from a square count matrix (rows = annotator A, columns = B).

    kappa = 1 - sum_ij w_ij O_ij / sum_ij w_ij E_ij, E_ij = row_i * col_j / n (Cohen 1960/1968),
    with w from :func:`weight_matrix`. None if n = 0 or sum(w E) = 0.
    """
    counts = np.asarray(confusion)
    if counts.ndim != 2 or counts.shape[0] != counts.shape[1]:
        raise AssessError(f"a confusion matrix must be square, found shape {counts.shape}")
    return _none_if_nan(_kappa_batch(counts, weight_matrix(counts.shape[0], weights)))


def cohen_kappa(a: Sequence, b: Sequence, *, scale: Sequence, weights: str | None = None) -> float | None:
    """Compute Cohen's kappa between two annotators over the full ``scale``.

    Same value as ``sklearn.metrics.cohen_kappa_score(a, b, labels=scale, weights=weights)``;
    weights use indices into ``scale``. None if there are no items or chance disagreement is 0.
    """
    return kappa_from_confusion(confusion_matrix(a, b, scale=scale), weights)


def observed_agreement(a: Sequence, b: Sequence) -> float | None:
    """Return the fraction of items given the same label by both annotators (None if no items)."""
    if len(a) != len(b):
        raise AssessError(f"the two annotators label different numbers of items: {len(a)} vs {len(b)}")
    if len(a) == 0:
        return None
    return float(np.mean(np.asarray(a, dtype=object) == np.asarray(b, dtype=object)))


def binarise(labels: Sequence, threshold: float) -> np.ndarray:
    """Map graded labels to relevant (label >= threshold) / not relevant, as trec_eval ``-l``."""
    try:
        arr = np.asarray(labels, dtype=float)
    except (TypeError, ValueError):
        raise AssessError("binarising needs numeric labels") from None
    return arr >= threshold


def binary_kappa(a: Sequence, b: Sequence, *, threshold: float) -> float | None:
    """Compute unweighted Cohen's kappa after binarising both label lists at ``label >= threshold``."""
    return cohen_kappa(binarise(a, threshold), binarise(b, threshold), scale=[False, True])


def _group_codes(groups: Sequence) -> tuple[list, np.ndarray]:
    keys: dict[Any, int] = {}
    try:
        codes = np.asarray([keys.setdefault(g, len(keys)) for g in groups], dtype=np.int64)
    except TypeError:
        raise AssessError("group keys must be hashable (strings or numbers)") from None
    return list(keys), codes


def kappa_by_group(
    a: Sequence, b: Sequence, groups: Sequence, *, scale: Sequence, weights: str | None = None
) -> dict[Any, dict[str, Any]]:
    """Compute Cohen's kappa separately for each group key (e.g. per topic or per assessor).

    ``groups[i]`` is the key of item i. Returns ``{key: {"n", "agreement", "kappa"}}`` in order of
    first appearance; kappa is None for a group where it is undefined (see :func:`cohen_kappa`).
    """
    ca, cb = _pair_codes(a, b, scale)
    if len(groups) != len(ca):
        raise AssessError(f"one group key per item expected: {len(groups)} keys for {len(ca)} items")
    names, g = _group_codes(groups)
    k = len(scale)
    counts = np.bincount((g * k + ca) * k + cb, minlength=len(names) * k * k).reshape(len(names), k, k)
    kappas = _kappa_batch(counts, weight_matrix(k, weights))
    n = counts.sum(axis=(1, 2))
    agree = np.trace(counts, axis1=1, axis2=2)
    return {
        name: {"n": int(n[i]), "agreement": float(agree[i] / n[i]), "kappa": _none_if_nan(kappas[i])}
        for i, name in enumerate(names)
    }


def bootstrap_kappa_ci(
    a: Sequence,
    b: Sequence,
    *,
    scale: Sequence,
    weights: str | None = None,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Return a percentile bootstrap interval for Cohen's kappa, resampling items with replacement.

    Resampling n items with replacement is drawn as one multinomial draw of the k x k confusion
    cells with probabilities O/n (the same distribution, without materialising n indices), so
    ``n_boot`` replicates cost O(n_boot * k^2). Seeded (numpy default_rng(seed)); replicates where
    kappa is undefined are dropped. None if there are no items or no replicate is defined.
    """
    return _bootstrap(confusion_matrix(a, b, scale=scale), weights, n_boot, level, seed)


def _bootstrap(
    counts: np.ndarray, weights: str | None, n_boot: int, level: float, seed: int
) -> tuple[float, float] | None:
    if n_boot < 1 or not 0 < level < 1:
        raise AssessError(f"bootstrap needs n_boot >= 1 and 0 < level < 1, found {n_boot}, {level}")
    n = int(counts.sum())
    if n == 0:
        return None
    rng = np.random.default_rng(seed)
    k = counts.shape[0]
    draws = rng.multinomial(n, counts.ravel() / n, size=n_boot).reshape(n_boot, k, k)
    kappas = _kappa_batch(draws, weight_matrix(k, weights))
    kappas = kappas[~np.isnan(kappas)]
    if kappas.size == 0:
        return None
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(kappas, [tail, 100.0 - tail])
    return float(low), float(high)


def _item_counts(items: Sequence[Sequence], scale: Sequence, min_labels: int) -> np.ndarray:
    """Items x categories count table over the items that have at least ``min_labels`` labels."""
    kept = [list(labels) for labels in items if len(labels) >= min_labels]
    k = len(scale)
    if not kept:
        return np.zeros((0, k), dtype=np.int64)
    sizes = np.asarray([len(labels) for labels in kept])
    codes = _codes([x for labels in kept for x in labels], scale, "item labels")
    rows = np.repeat(np.arange(len(kept)), sizes)
    return np.bincount(rows * k + codes, minlength=len(kept) * k).reshape(len(kept), k)


def fleiss_kappa(
    items: Sequence[Sequence], *, scale: Sequence, min_labels: int = 3, method: str = "fleiss"
) -> float | None:
    """Compute Fleiss' kappa (nominal) over items with at least ``min_labels`` labels each.

    ``items[i]`` holds the labels item i received (rater identity is irrelevant). Uses
    ``statsmodels.stats.inter_rater.fleiss_kappa`` on the items x categories table over the full
    scale; ``method='randolph'`` uses uniform chance agreement. Every kept item must have the same
    number of labels (Fleiss' definition). None if no item qualifies or kappa is undefined.
    """
    sm_fleiss = lazylibs.statsmodels_stats().inter_rater.fleiss_kappa

    table = _item_counts(items, scale, min_labels)
    if table.shape[0] == 0:
        return None
    per_item = table.sum(axis=1)
    if np.any(per_item != per_item[0]):
        raise AssessError(
            "Fleiss' kappa needs the same number of labels for every item "
            f"(found {sorted(set(per_item.tolist()))}); use krippendorff_alpha instead"
        )
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore")
        return _none_if_nan(sm_fleiss(table, method=method))


def krippendorff_alpha(
    items: Sequence[Sequence], *, scale: Sequence, level: str = "ordinal", min_labels: int = 3
) -> float | None:
    """Compute Krippendorff's alpha over items with at least ``min_labels`` labels.

    Uses ``krippendorff.alpha(value_counts=..., value_domain=scale, level_of_measurement=level)``
    (the package defaults to 'interval'; here 'ordinal' unless told). Items may have different
    numbers of labels. The value domain is the full scale, so unobserved grades still shape the
    ordinal distances. Non-numeric scales are replaced by their indices (fine for nominal and
    ordinal). None if no item qualifies or alpha is undefined (e.g. a single observed value).
    """
    import krippendorff

    if level not in ("nominal", "ordinal", "interval", "ratio"):
        raise AssessError(f"unknown level of measurement {level!r}")
    table = _item_counts(items, scale, max(min_labels, 2))
    if table.shape[0] == 0:
        return None
    values = list(scale)
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    if not numeric and level in ("interval", "ratio"):
        raise AssessError(f"{level} alpha needs a numeric scale, found {values!r}")
    domain = values if numeric else list(range(len(values)))
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore")
        try:
            value = krippendorff.alpha(value_counts=table, value_domain=domain, level_of_measurement=level)
        except (ValueError, ZeroDivisionError):
            return None
    return _none_if_nan(value)


def icc(ratings: Sequence[Sequence[float]]) -> dict[str, float | None]:
    """Shrout & Fleiss's (1979) single-rater intraclass correlations of an items x raters table (no missing cells).

    From the two-way ANOVA without interaction: MSR (items), MSC (raters), MSE (residual), k raters, n items:
    ``icc_2_1`` = (MSR - MSE) / (MSR + (k-1) MSE + k (MSC - MSE) / n) (random raters, absolute agreement: a
    rater who grades everything one level higher lowers it) and ``icc_3_1`` = (MSR - MSE) / (MSR + (k-1) MSE)
    (fixed raters, consistency: such a shift does not). None where undefined (under 2 items or raters, or a
    zero denominator, e.g. every rating equal). docs/measures.md#intraclass-correlation."""
    y = np.asarray(ratings, dtype=float)
    if y.ndim != 2:
        raise AssessError(f"ICC needs an items x raters table, found {y.ndim} dimension(s)")
    n, k = y.shape
    if n < 2 or k < 2:
        return {"icc_2_1": None, "icc_3_1": None}
    grand = y.mean()
    ss_rows = k * ((y.mean(axis=1) - grand) ** 2).sum()
    ss_cols = n * ((y.mean(axis=0) - grand) ** 2).sum()
    ss_error = ((y - grand) ** 2).sum() - ss_rows - ss_cols
    msr, msc, mse = ss_rows / (n - 1), ss_cols / (k - 1), ss_error / ((n - 1) * (k - 1))

    def ratio(num: float, den: float) -> float | None:
        return float(num / den) if den > 1e-12 * max(1.0, abs(num)) else None

    return {
        "icc_2_1": ratio(msr - mse, msr + (k - 1) * mse + k * (msc - mse) / n),
        "icc_3_1": ratio(msr - mse, msr + (k - 1) * mse),
    }


def _icc_of_confusion(counts: np.ndarray, scale: Sequence) -> dict[str, float | None]:
    """:func:`icc` of two raters from their confusion matrix (cell (i, j) repeated as its count of items);
    None on a scale that is not numeric (ICC treats the labels as interval values)."""
    try:
        values = np.asarray([float(v) for v in scale])
    except (TypeError, ValueError):
        return {"icc_2_1": None, "icc_3_1": None}
    i, j = np.nonzero(counts)
    repeats = counts[i, j]
    return icc(np.column_stack([np.repeat(values[i], repeats), np.repeat(values[j], repeats)]))


def agreement_report(
    a: Sequence,
    b: Sequence,
    *,
    scale: Sequence,
    weights: str | None = None,
    threshold: float | None = None,
    ci: bool = True,
    seed: int = 0,
) -> dict[str, Any]:
    """Summarise agreement between two annotators over the same items.

    Keys: ``n``, ``agreement`` (observed), ``kappa`` (with ``weights``), ``kappa_unweighted``,
    ``kappa_linear``, ``kappa_quadratic``, ``kappa_ci`` (95% bootstrap of ``kappa``, seeded, when
    ``ci``), ``weights``, ``labels`` (the scale), ``confusion`` (list of lists, rows = a, cols = b)
    and, when ``threshold`` is given, ``threshold``, ``agreement_binary`` and ``kappa_binary``
    (label >= threshold); ``icc_2_1`` and ``icc_3_1`` (:func:`icc`, the labels read as numbers; None on a
    scale that is not numeric). Undefined values are None (see :func:`cohen_kappa`).
    """
    counts = confusion_matrix(a, b, scale=scale)
    n = int(counts.sum())
    k = counts.shape[0]
    kappas = {w: _none_if_nan(_kappa_batch(counts, weight_matrix(k, w))) for w in WEIGHTS}
    if weights not in WEIGHTS:
        raise AssessError(f"unknown kappa weights {weights!r}; expected None, 'linear' or 'quadratic'")
    report: dict[str, Any] = {
        "n": n,
        "agreement": float(np.trace(counts) / n) if n else None,
        "kappa": kappas[weights],
        "weights": weights,
        "kappa_unweighted": kappas[None],
        "kappa_linear": kappas["linear"],
        "kappa_quadratic": kappas["quadratic"],
        "labels": list(scale),
        "confusion": counts.tolist(),
        **_icc_of_confusion(counts, scale),
    }
    if ci:
        interval = _bootstrap(counts, weights, 1000, 0.95, seed)
        report["kappa_ci"] = list(interval) if interval else None
    if threshold is not None:
        values = np.asarray(list(scale), dtype=object)
        try:
            relevant = np.asarray([float(v) >= threshold for v in values])
        except (TypeError, ValueError):
            raise AssessError("a binary threshold needs a numeric scale") from None
        # Collapse the confusion matrix instead of re-reading the labels.
        binary = np.zeros((2, 2), dtype=np.int64)
        for i in range(2):
            for j in range(2):
                binary[i, j] = counts[np.ix_(relevant == bool(i), relevant == bool(j))].sum()
        report["threshold"] = threshold
        report["agreement_binary"] = float(np.trace(binary) / n) if n else None
        report["kappa_binary"] = kappa_from_confusion(binary)
    return report


# ------------------------------------------------------------------------------ several sources at once
# docs/measures.md#agreement-matrix. Every figure of a pair is a function of its confusion matrix,
# so one multinomial draw of the confusion cells per bootstrap replicate gives all of them at once.

MATRIX_STATISTICS = (
    "agreement",
    "kappa_unweighted",
    "kappa_linear",
    "kappa_quadratic",
    "kappa_binary",
    "alpha",
    "icc_2_1",
    "icc_3_1",
)
SOURCE_KINDS = ("human", "llm", "crowd", "import")
ALPHA_LEVELS = ("nominal", "ordinal", "interval")
MIN_SHARED = 30
"""The human ceiling pools only pairs of two humans sharing at least this many items: a pair over a handful of
items has a kappa that swings by chance from -1 to 1 and would pull the ceiling with the weight of its few
items. Pairs below it are listed (``ceiling_below_minimum``), not pooled; 30 is the usual smallest sample for an
interval of a proportion and the alternative annotator test's default minimum per annotator."""


def _alpha_batch(counts: np.ndarray, level: str, values: np.ndarray | None) -> np.ndarray:
    """Krippendorff's alpha of two coders from their confusion matrices (last two axes), NaN where undefined.

    With two values per item the coincidence matrix is C = O + O^T, n_c its margins and n = sum n_c;
    alpha = 1 - (n - 1) sum C d^2 / sum n_c n_k d^2, with the metric d^2 of ``level`` (ordinal:
    (sum of n_g for g between c and k - (n_c + n_k) / 2)^2, Krippendorff 2011).
    """
    counts = counts.astype(float)
    coincidence = counts + np.swapaxes(counts, -1, -2)
    margins = coincidence.sum(axis=-1)
    n = margins.sum(axis=-1)
    k = counts.shape[-1]
    idx = np.arange(k)
    if level == "nominal":
        d2 = np.broadcast_to((idx[:, None] != idx[None, :]).astype(float), coincidence.shape)
    elif level == "interval":
        d2 = np.broadcast_to((values[:, None] - values[None, :]) ** 2, coincidence.shape)
    else:
        cum = np.cumsum(margins, axis=-1)
        lo = np.minimum(idx[:, None], idx[None, :])
        hi = np.maximum(idx[:, None], idx[None, :])
        between = cum[..., hi] - cum[..., lo] + margins[..., lo]
        d2 = (between - (margins[..., :, None] + margins[..., None, :]) / 2.0) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = (coincidence * d2).sum(axis=(-2, -1))
        expected = (margins[..., :, None] * margins[..., None, :] * d2).sum(axis=(-2, -1))
        alpha = 1.0 - (n - 1.0) * observed / expected
    return np.where((n > 2) & (expected > 0), alpha, np.nan)


def _matrix_figures(counts: np.ndarray, relevant: np.ndarray | None, level: str, values) -> dict[str, np.ndarray]:
    """Every statistic of MATRIX_STATISTICS for confusion matrices on the last two axes."""
    k = counts.shape[-1]
    n = counts.sum(axis=(-2, -1)).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        agreement = np.where(n > 0, np.trace(counts, axis1=-2, axis2=-1) / n, np.nan)
    out = {"agreement": agreement}
    kappas = _kappas(_Margins(counts), [weight_matrix(k, w) for w in WEIGHTS])
    out.update(zip(("kappa_unweighted", "kappa_linear", "kappa_quadratic"), kappas))
    if relevant is None:
        out["kappa_binary"] = np.full(n.shape, np.nan)
    else:
        collapse = np.stack([~relevant, relevant], axis=1).astype(float)  # k x 2
        out["kappa_binary"] = _kappa_batch(collapse.T @ counts @ collapse, weight_matrix(2))
    out["alpha"] = _alpha_batch(counts, level, values)
    out["icc_2_1"], out["icc_3_1"] = _icc_batch(counts, values)
    return out


def _icc_batch(counts: np.ndarray, values: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`icc` (2,1) and (3,1) of two raters for confusion matrices on the last two axes (cell (i, j): items
    rated values[i] by a, values[j] by b), from the sums of the cells; NaN without a numeric scale or where
    undefined."""
    n = counts.sum(axis=(-2, -1)).astype(float)
    if values is None:
        return np.full(n.shape, np.nan), np.full(n.shape, np.nan)
    c = counts.astype(float)
    sum_a, sum_b = c.sum(axis=-1) @ values, c.sum(axis=-2) @ values
    squares = (c.sum(axis=-1) + c.sum(axis=-2)) @ values**2  # sum of every rating squared
    pair_sums = (c * (values[:, None] + values[None, :]) ** 2).sum(axis=(-2, -1))  # sum of (a + b)^2 over items
    with np.errstate(divide="ignore", invalid="ignore"):
        correction = (sum_a + sum_b) ** 2 / (2 * n)
        ss_rows = pair_sums / 2 - correction
        ss_cols = (sum_a**2 + sum_b**2) / n - correction
        ss_error = squares - correction - ss_rows - ss_cols
        msr, msc, mse = ss_rows / (n - 1), ss_cols, ss_error / (n - 1)
        consistency_den = msr + mse
        absolute_den = consistency_den + 2 * (msc - mse) / n
        icc2 = np.where((n >= 2) & (absolute_den > 1e-12), (msr - mse) / absolute_den, np.nan)
        icc3 = np.where((n >= 2) & (consistency_den > 1e-12), (msr - mse) / consistency_den, np.nan)
    return icc2, icc3


def _nan_percentiles(samples: np.ndarray, qs: Sequence[float]) -> np.ndarray:
    """Percentiles (numpy's default 'linear' rule) of each column over its non-NaN rows; NaN for an all-NaN column.

    Same values as ``np.nanpercentile(samples, qs, axis=0).T`` at a fraction of its cost for many columns.
    """
    ordered = np.sort(samples, axis=0)  # NaN sorts last
    valid = (~np.isnan(samples)).sum(axis=0)
    out = np.full((samples.shape[1], len(qs)), np.nan)
    has = valid > 0
    for column, q in enumerate(qs):
        pos = (valid[has] - 1) * (q / 100.0)
        low = np.floor(pos).astype(np.int64)
        high = np.minimum(low + 1, valid[has] - 1)
        cols = np.flatnonzero(has)
        a, b = ordered[low, cols], ordered[high, cols]
        out[has, column] = a + (b - a) * (pos - low)
    return out


_CELLS_PER_DRAW = 4_000_000  # bootstrap replicates x groups x cells drawn at once


def _entries(counts: np.ndarray, relevant, level: str, values, replicates: int, ci_level: float, rng) -> list[dict]:
    """One entry per confusion matrix of ``counts`` (groups x k x k): n, every statistic and its
    percentile interval over ``replicates`` multinomial redraws of that matrix's cells (none if 0)."""
    groups, k = counts.shape[0], counts.shape[-1]
    figures = _matrix_figures(counts, relevant, level, values)
    n = counts.sum(axis=(1, 2))
    bounds = {name: np.full((groups, 2), np.nan) for name in MATRIX_STATISTICS}
    drawn = np.flatnonzero(n > 0) if replicates > 0 else np.zeros(0, dtype=np.int64)
    tail = (1.0 - ci_level) / 2.0 * 100.0
    step = max(1, _CELLS_PER_DRAW // (replicates * k * k)) if replicates > 0 else 1
    for begin in range(0, drawn.size, step):
        chosen = drawn[begin : begin + step]
        probabilities = counts[chosen].reshape(chosen.size, k * k) / n[chosen, None]
        draws = rng.multinomial(n[chosen], probabilities, size=(replicates, chosen.size))
        boot = _matrix_figures(draws.reshape(replicates, chosen.size, k, k), relevant, level, values)
        for name in MATRIX_STATISTICS:
            bounds[name][chosen] = _nan_percentiles(boot[name], (tail, 100.0 - tail))
    # Plain values, built from lists (a per-group numpy lookup for each of thousands of groups cost more
    # than the statistics themselves).
    point = {name: [None if v != v else v for v in figures[name].astype(float).tolist()] for name in MATRIX_STATISTICS}
    interval = {
        name: [None if lo != lo or hi != hi else [lo, hi] for lo, hi in bounds[name].tolist()]
        for name in MATRIX_STATISTICS
    }
    return [
        {
            "n": count,
            **{name: point[name][g] for name in MATRIX_STATISTICS},
            "ci": {name: interval[name][g] for name in MATRIX_STATISTICS},
        }
        for g, count in enumerate(n.tolist())
    ]


def _sorted_keys(keys) -> list:
    keys = list(keys)
    if keys and all(isinstance(k, str) for k in keys):  # ids such as conversations: 2 before 10
        return sorted(keys, key=natural_key)
    try:
        return sorted(keys)
    except TypeError:  # mixed key types: a stable, readable order
        return sorted(keys, key=lambda g: (type(g).__name__, str(g)))


SPLITS = ("human-human", "machine-machine", "human-machine", "pooled")
"""The classes of pairs the agreement matrix pools apart (``splits``): two people, two machines (LLM or NLI
sources), one of each, and every pair."""


def agreement_matrix(
    labels: Mapping[str, Mapping[Hashable, Any]],
    *,
    scale: Sequence,
    threshold: float | None = 2,
    groups: Mapping[str, Mapping[Hashable, Hashable]] | None = None,
    group_key: Callable[[Hashable], Hashable] | None = None,
    kinds: Mapping[str, str] | None = None,
    bootstrap: int = 1000,
    group_bootstrap: bool = True,
    level: float = 0.95,
    alpha_level: str = "ordinal",
    seed: int = 0,
    min_shared: int = MIN_SHARED,
    group_draws_limit: int | None = None,
) -> dict[str, Any]:
    """Agreement of every unordered pair of label sources over the items both labelled.

    ``labels`` is ``{source: {item: label}}`` (labels on ``scale``); ``groups`` is ``{breakdown:
    {item: group}}`` (e.g. ``"topic"``, ``"depth"``, ``"personal"``); ``kinds`` is ``{source:
    "human" | "llm" | "crowd" | "import"}``. For each pair sharing at least one item (sources in
    the order given, never a source with itself): ``n`` and every statistic of
    ``MATRIX_STATISTICS`` (observed agreement, Cohen's kappa unweighted / linear / quadratic,
    unweighted kappa binarised at label >= ``threshold``, Krippendorff's alpha at ``alpha_level``),
    each with a percentile bootstrap interval (``bootstrap`` replicates resampling the pair's
    items; 0 turns intervals off), and ``by``: the same figures per group of each breakdown
    (items without a group in a breakdown are left out of it; ``group_bootstrap=False`` skips the
    group intervals; ``group_draws_limit``: skip them too when the groups present, summed over the pairs and the
    breakdowns, times ``bootstrap`` exceed it, as their cost grows with that product). With ``group_key``, each breakdown maps ``group_key(item)`` rather than the
    item to its group (e.g. the item's turn: one entry per turn instead of one per labelled item).
    ``ceiling``: the same figures pooled over every pair of two human sources sharing at least ``min_shared``
    items (None when no such pair); the human pairs below it are listed in ``ceiling_below_minimum`` (``[a, b,
    n]``), not pooled, and each pair says ``in_ceiling``. ``splits``: the same figures pooled over every pair of
    two humans, of two machines (kind "llm"), of one of each, and over every pair (:data:`SPLITS`; None when
    no such pair), whatever the minimum. Undefined values are None. See
    docs/measures.md#agreement-matrix.
    """
    if isinstance(min_shared, bool) or not isinstance(min_shared, int) or min_shared < 1:
        raise AssessError(f"the minimum of shared items is an integer >= 1, found {min_shared!r}")
    if not isinstance(labels, Mapping):
        raise AssessError("labels must be a mapping {source: {item: label}}")
    if alpha_level not in ALPHA_LEVELS:
        raise AssessError(f"unknown level of measurement {alpha_level!r}; expected one of {', '.join(ALPHA_LEVELS)}")
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, int) or bootstrap < 0 or not 0 < level < 1:
        raise AssessError(
            f"bootstrap needs an integer number of replicates >= 0 and 0 < level < 1, found {bootstrap!r}, {level!r}"
        )
    scale_values = list(scale)
    _scale_array(scale_values)
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in scale_values)
    if alpha_level == "interval" and not numeric:
        raise AssessError(f"interval alpha needs a numeric scale, found {scale_values!r}")
    values = np.asarray(scale_values, dtype=float) if numeric else None
    relevant = None
    if threshold is not None:
        if not numeric:
            raise AssessError("a binary threshold needs a numeric scale")
        relevant = values >= threshold
    kinds = dict(kinds or {})
    for source, kind in kinds.items():
        if kind not in SOURCE_KINDS:
            raise AssessError(f"source {source!r} has kind {kind!r}; expected one of {', '.join(SOURCE_KINDS)}")

    # One column per item of any source; one row of scale indices (-1: not labelled) per source.
    sources = list(labels)
    for source in sources:
        if not isinstance(labels[source], Mapping):
            raise AssessError(f"the labels of source {source!r} must be a mapping {{item: label}}")
    try:
        union = dict.fromkeys(chain.from_iterable(labels[source] for source in sources))
    except TypeError:
        bad = next(s for s in sources if not all(isinstance(i, Hashable) for i in labels[s]))
        raise AssessError(f"the items of source {bad!r} must be hashable") from None
    index = dict(zip(union, range(len(union))))
    table = np.full((len(sources), len(index)), -1, dtype=np.int16)
    for row, source in enumerate(sources):
        mapping = labels[source]
        pos = np.asarray(itemgetter(*mapping)(index) if len(mapping) > 1 else [index[i] for i in mapping], np.int64)
        table[row, pos] = _codes(list(mapping.values()), scale_values, f"the labels of source {source!r}")

    breakdowns: dict[str, tuple[list, np.ndarray]] = {}
    item_keys = None
    for name, mapping in (groups or {}).items():
        if not isinstance(mapping, Mapping):
            raise AssessError(f"breakdown {name!r} must be a mapping {{item: group}}")
        try:
            keys = _sorted_keys(set(mapping.values()))
        except TypeError:
            raise AssessError(f"the groups of breakdown {name!r} must be hashable") from None
        key_code = dict(zip(keys, range(len(keys))))
        if group_key is not None:
            if item_keys is None:
                item_keys = list(map(group_key, index))
            code_of = {key: key_code[group] for key, group in mapping.items()}
            gcodes = np.fromiter(map(code_of.get, item_keys, repeat(-1)), np.int64, len(index))
        else:
            at = np.fromiter(map(index.get, mapping, repeat(-1)), np.int64, len(mapping))
            code = np.fromiter(map(key_code.__getitem__, mapping.values()), np.int64, len(mapping))
            gcodes = np.full(len(index), -1, dtype=np.int64)
            gcodes[at[at >= 0]] = code[at >= 0]
        breakdowns[name] = (keys, gcodes)

    k = len(scale_values)
    rng = np.random.default_rng(seed)
    replicates = int(bootstrap)
    group_replicates = replicates if group_bootstrap else 0

    def grouped(keys: list, counts: np.ndarray, draws: int) -> list[list[dict[str, Any]]]:
        """Entries of the groups present in each of a stack of per-group matrices (stack x groups x k x k),
        computed in one batch (one bootstrap draw for all of them, not one per pair), with ``draws`` replicates."""
        flat = counts.reshape(-1, k, k)
        present = np.flatnonzero(flat.any(axis=(1, 2)))
        entries = iter(_entries(flat[present], relevant, alpha_level, values, draws, level, rng))
        out: list[list[dict[str, Any]]] = [[] for _ in range(counts.shape[0])]
        for at in present.tolist():
            out[at // len(keys)].append({"group": keys[at % len(keys)], **next(entries)})
        return out

    # Every pair's confusion matrix (and per group) first; then the statistics and their bootstrap
    # intervals of all pairs in one batch, which costs a fraction of one batch per pair.
    pairs = []
    pair_counts = []
    pair_groups: dict[str, list[np.ndarray]] = {name: [] for name in breakdowns}
    for i in range(len(sources)):
        for j in range(i + 1, len(sources)):
            a, b = table[i], table[j]
            both = (a >= 0) & (b >= 0)
            if not both.any():
                continue
            cells = a[both].astype(np.int64) * k + b[both]
            pair_counts.append(np.bincount(cells, minlength=k * k).reshape(k, k))
            for name, (keys, gcodes) in breakdowns.items():
                g = gcodes[both]
                has = g >= 0
                per_group = np.bincount(g[has] * (k * k) + cells[has], minlength=len(keys) * k * k)
                pair_groups[name].append(per_group.reshape(len(keys), k, k))
            kind_a, kind_b = kinds.get(sources[i]), kinds.get(sources[j])
            human_pair = kind_a == "human" and kind_b == "human"
            pairs.append({"a": sources[i], "b": sources[j], "kinds": [kind_a, kind_b], "human_pair": human_pair})

    if pairs:
        stacked = np.stack(pair_counts)
        for entry, figures in zip(pairs, _entries(stacked, relevant, alpha_level, values, replicates, level, rng)):
            entry.update(figures)
            entry["by"] = {}
        stacks = {name: np.stack(pair_groups[name]) for name in breakdowns}
        present = sum(int(stack.reshape(-1, k * k).any(axis=1).sum()) for stack in stacks.values())
        if group_draws_limit is not None and present * group_replicates > group_draws_limit:
            group_replicates = 0  # every breakdown without intervals, rather than some with and some without
        for name, (keys, _) in breakdowns.items():
            for entry, groups_of_pair in zip(pairs, grouped(keys, stacks[name], group_replicates)):
                entry["by"][name] = groups_of_pair

    ceiling = None
    for entry in pairs:
        entry["in_ceiling"] = entry["human_pair"] and entry["n"] >= min_shared
    humans = [p for p, entry in enumerate(pairs) if entry["in_ceiling"]]
    below = [[e["a"], e["b"], e["n"]] for e in pairs if e["human_pair"] and not e["in_ceiling"]]
    if humans:
        ceiling = {"pairs": [[pairs[p]["a"], pairs[p]["b"]] for p in humans]}
        total = stacked[humans].sum(axis=0)
        ceiling.update(_entries(total[None], relevant, alpha_level, values, replicates, level, rng)[0])
        ceiling["by"] = {
            name: grouped(keys, np.stack(pair_groups[name])[humans].sum(axis=0)[None], group_replicates)[0]
            for name, (keys, _) in breakdowns.items()
        }
    # Pooled figures per class of pair, after the ceiling (its draws stay as they were): people and machines
    # apart, then every pair. A pair with a crowd, import or adjudication source is only in 'pooled'.
    classes = {"human": "human", "llm": "machine"}
    splits: dict[str, Any] = {}
    for name in SPLITS:
        members = [
            p
            for p, entry in enumerate(pairs)
            if name == "pooled" or "-".join(sorted(classes.get(k, "other") for k in entry["kinds"])) == name
        ]
        splits[name] = None
        if members:
            total = stacked[members].sum(axis=0)
            figures = _entries(total[None], relevant, alpha_level, values, replicates, level, rng)[0]
            splits[name] = {"pairs": [[pairs[p]["a"], pairs[p]["b"]] for p in members], **figures}
    return {
        "sources": sources,
        "kinds": {s: kinds.get(s) for s in sources},
        "splits": splits,
        "scale": scale_values,
        "threshold": threshold,
        "alpha_level": alpha_level,
        "statistics": list(MATRIX_STATISTICS),
        "bootstrap": {
            "replicates": replicates,
            "groups": group_replicates,
            "group_draws_limit": group_draws_limit,
            "level": level,
            "seed": seed,
            "method": "percentile; items resampled with replacement (multinomial over confusion cells)",
        },
        "pairs": pairs,
        "ceiling": ceiling,
        "ceiling_min_shared": min_shared,
        "ceiling_below_minimum": below,
    }


def matrix_grid(matrix: Mapping[str, Any], statistic: str = "kappa_quadratic") -> dict[str, Any]:
    """Lay one statistic of :func:`agreement_matrix` out as a symmetric sources x sources grid.

    Returns ``{"sources", "statistic", "values", "n"}``; the diagonal and pairs sharing no item are None.
    """
    if statistic not in MATRIX_STATISTICS:
        raise AssessError(f"unknown statistic {statistic!r}; expected one of {', '.join(MATRIX_STATISTICS)}")
    sources = list(matrix["sources"])
    where = {s: i for i, s in enumerate(sources)}
    values: list[list[float | None]] = [[None] * len(sources) for _ in sources]
    n: list[list[int]] = [[0] * len(sources) for _ in sources]
    for pair in matrix["pairs"]:
        i, j = where[pair["a"]], where[pair["b"]]
        values[i][j] = values[j][i] = pair[statistic]
        n[i][j] = n[j][i] = pair["n"]
    return {"sources": sources, "statistic": statistic, "values": values, "n": n}
