"""System-level agreement of two label sources: do the runs rank (and differ significantly) the same way?

docs/measures.md#system-level-agreement. Inputs are per-topic scores of one measure,
``{run: {topic: score}}``, once under the reference source's qrels (e.g. NIST) and once under the
other source's (e.g. an LLM judge), as ``evaluate_runs(...)[run]["per_query"][measure]`` gives them.

Both sides are reduced to one runs x topics matrix: the runs scored under both sources and the
topics where every one of those runs has a score under both (so each run's mean, each bootstrap
replicate and each t-test use the same topics on both sides). A run's score is its mean over those
topics. Rankings sort by score descending with ties broken by run name (code point order), so
top-k sets and leaders are reproducible; tau_AP keeps tied scores tied (Urbano & Marrero's
tau_AP,b, see :func:`_tau_ap`) instead of ordering them by name.

Every correlation gets a percentile bootstrap interval over topics: a replicate draws the topics
with replacement (as multinomial weights), recomputes both sides' run means and the statistic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from assess import lazylibs
from assess.errors import AssessError
from assess.measures.rankings import paired_t_tests, ranking_correlation

Scores = Mapping[str, Mapping[str, float]]
DEFAULT_KS = (1, 3, 5, 10)
CORRELATIONS = ("kendall_tau", "tau_ap", "tau_ap_reverse", "tau_ap_symmetric", "spearman_rho", "pearson_r")
_CELLS_PER_CHUNK = 2_000_000  # replicates x runs x runs held in memory at once


def _matrices(reference: Scores, other: Scores) -> tuple[list[str], list[str], np.ndarray, np.ndarray, int]:
    """Runs, complete topics, the two runs x topics matrices, and how many topics were dropped."""
    for name, scores in (("reference", reference), ("other", other)):
        if not isinstance(scores, Mapping) or not all(isinstance(v, Mapping) for v in scores.values()):
            raise AssessError(f"the {name} scores must be a mapping {{run: {{topic: score}}}}")
    runs = sorted(r for r in reference if r in other)
    if not runs:
        return [], [], np.zeros((0, 0)), np.zeros((0, 0)), 0
    every = set().union(*(set(reference[r]) | set(other[r]) for r in runs))

    def usable(run: str, topic: str) -> bool:
        for side in (reference, other):
            value = side[run].get(topic)
            if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
                return False
            if not math.isfinite(value):
                return False
        return True

    topics = sorted(t for t in every if all(usable(r, t) for r in runs))
    a = np.asarray([[float(reference[r][t]) for t in topics] for r in runs], dtype=float).reshape(len(runs), -1)
    b = np.asarray([[float(other[r][t]) for t in topics] for r in runs], dtype=float).reshape(len(runs), -1)
    return runs, topics, a, b, len(every) - len(topics)


def _positions(scores: np.ndarray) -> np.ndarray:
    """Rank position (0 = best) of each run, per row: score descending, ties by run order (name)."""
    names = np.broadcast_to(np.arange(scores.shape[-1]), scores.shape)
    order = np.lexsort((names, -scores), axis=-1)
    pos = np.empty_like(order)
    np.put_along_axis(pos, order, np.broadcast_to(np.arange(scores.shape[-1]), scores.shape), axis=-1)
    return pos


def _kendall_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b per row: sum sx*sy / sqrt(sum |sx| * sum |sy|) over run pairs; NaN if a side is constant."""
    sx = np.sign(x[..., :, None] - x[..., None, :])
    sy = np.sign(y[..., :, None] - y[..., None, :])
    with np.errstate(divide="ignore", invalid="ignore"):
        return (sx * sy).sum(axis=(-2, -1)) / np.sqrt(np.abs(sx).sum(axis=(-2, -1)) * np.abs(sy).sum(axis=(-2, -1)))


def _pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    dx = x - x.mean(axis=-1, keepdims=True)
    dy = y - y.mean(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (dx * dy).sum(axis=-1) / np.sqrt((dx * dx).sum(axis=-1) * (dy * dy).sum(axis=-1))
    return np.clip(r, -1.0, 1.0)


def _spearman(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    rankdata = lazylibs.scipy_stats().rankdata

    return _pearson(rankdata(x, axis=-1), rankdata(y, axis=-1))


def _tau_ap(truth: np.ndarray, judged: np.ndarray) -> np.ndarray:
    """tau_AP of the ``judged`` ranking against ``truth`` per row, tie-aware (Urbano & Marrero 2017).

    Yilmaz, Aslam & Robertson (2008): tau_AP = 2 / (N - 1) * sum_{i=2..N} C(i) / (i - 1) - 1, i the
    position in the judged ranking, C(i) the runs above i that the truth also puts above it. With
    ties, the judged half of Urbano & Marrero's tau_AP,b (ircor ``tauAP_b.ties``, pyircore
    ``tauap_b_ties``, as trec-auto-judge's auto-judge-evaluate computes it): p(i) = the runs strictly
    above i in the judged ranking, C(i) = those of them the truth puts strictly above i, the runs
    tied at the top (p = 0) are skipped, tau = 2 / |{i: p(i) > 0}| * sum C(i) / p(i) - 1. A pair tied
    in the judged ranking is not compared; one tied only in the truth counts as discordant. Without
    ties it is Yilmaz's tau_AP. NaN when every run ties at the top of the judged ranking (or N < 2).
    """
    n = truth.shape[-1]
    if n < 2:
        return np.full(truth.shape[:-1], np.nan)
    above = judged[..., :, None] > judged[..., None, :]  # [j, i]: j strictly above i in the judged ranking
    p = above.sum(axis=-2)
    c = (above & (truth[..., :, None] > truth[..., None, :])).sum(axis=-2)
    share = np.where(p > 0, c / np.maximum(p, 1), 0.0).sum(axis=-1)
    counted = (p > 0).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(counted > 0, 2.0 / counted * share - 1.0, np.nan)


def _overlap(x: np.ndarray, y: np.ndarray, k: int) -> np.ndarray:
    return ((_positions(x) < k) & (_positions(y) < k)).sum(axis=-1) / k


def _as_vector(scores: Mapping[str, float], name: str) -> dict[str, float]:
    if not isinstance(scores, Mapping):
        raise AssessError(f"the {name} scores must be a mapping {{run: score}}")
    out = {}
    for run, value in scores.items():
        if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise AssessError(f"the {name} score of run {run!r} must be a finite number, found {value!r}")
        out[run] = float(value)
    return out


def _pair_vectors(reference: Mapping[str, float], other: Mapping[str, float]) -> tuple[np.ndarray, np.ndarray]:
    ref, oth = _as_vector(reference, "reference"), _as_vector(other, "other")
    runs = sorted(r for r in ref if r in oth)
    return np.asarray([ref[r] for r in runs]), np.asarray([oth[r] for r in runs])


def _scalar(value) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def tau_ap(reference: Mapping[str, float], other: Mapping[str, float], *, symmetric: bool = False) -> float | None:
    """tau_AP of the ``other`` ordering of runs against the ``reference`` ordering (runs in both), tie-aware.

    ``symmetric=True`` averages it with the reverse (``reference`` judged against ``other``): Urbano &
    Marrero's tau_AP,b (:func:`tau_ap_b`). None with fewer than 2 runs or when every run ties at the top
    of the judged ordering. docs/measures.md#tau_ap.
    """
    x, y = _pair_vectors(reference, other)
    value = _tau_ap(x, y)
    if symmetric:
        value = (value + _tau_ap(y, x)) / 2.0
    return _scalar(value)


def tau_ap_b(reference: Mapping[str, float], other: Mapping[str, float]) -> float | None:
    """Urbano & Marrero's (2017) tie-aware AP correlation tau_AP,b of two orderings of runs (runs in both).

    The mean of the two directions of :func:`_tau_ap` (each ordering judged against the other), as ircor's
    ``tauAP_b`` and trec-auto-judge's ``tauap_b``: 1 for identical orderings, ties included. None with fewer
    than 2 runs or when one ordering ties every run (the measure is undefined there; pyircore warns and uses 0).
    """
    return tau_ap(reference, other, symmetric=True)


def topk_overlap(reference: Mapping[str, float], other: Mapping[str, float], k: int) -> float | None:
    """|top-k under reference ∩ top-k under other| / k over the runs in both; None if k exceeds the runs."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise AssessError(f"top-k needs an integer k >= 1, found {k!r}")
    x, y = _pair_vectors(reference, other)
    if k > x.size:
        return None
    return float(_overlap(x, y, k))


def _bootstrap_weights(n_topics: int, replicates: int, rng) -> np.ndarray:
    return rng.multinomial(n_topics, np.full(n_topics, 1.0 / n_topics), size=replicates).astype(float)


def _statistics(x: np.ndarray, y: np.ndarray, ks: Sequence[int]) -> dict[str, np.ndarray]:
    forward, reverse = _tau_ap(x, y), _tau_ap(y, x)
    out = {
        "kendall_tau": _kendall_b(x, y),
        "tau_ap": forward,
        "tau_ap_reverse": reverse,
        "tau_ap_symmetric": (forward + reverse) / 2.0,
        "spearman_rho": _spearman(x, y),
        "pearson_r": _pearson(x, y),
    }
    for k in ks:
        out[f"top_{k}"] = _overlap(x, y, k)
    return out


INTERVALS = ("percentile", "basic")


def _interval(samples: np.ndarray, point: float | None, level: float, kind: str, lowest: float) -> list[float] | None:
    """Percentile interval [q_lo, q_hi], or the basic one [2 v - q_hi, 2 v - q_lo] clipped to [lowest, 1]."""
    kept = samples[~np.isnan(samples)]
    if kept.size == 0:
        return None
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(kept, [tail, 100.0 - tail])
    if kind == "basic":
        if point is None:
            return None
        low, high = min(1.0, max(lowest, 2 * point - high)), min(1.0, max(lowest, 2 * point - low))
    return [float(low), float(high)]


def significance_preservation(
    reference: Scores, other: Scores, *, alpha: float = 0.05, correction: str = "holm"
) -> dict[str, Any]:
    """Which run pairs significantly different under the reference stay so under the other source.

    Every pair of runs is tested with a paired t-test over the complete topics
    (:func:`assess.measures.rankings.paired_t_tests`, ``correction`` 'holm' or 'bonferroni' over all
    pairs, at ``alpha``), once per source. Of the pairs significant under the reference: ``same``
    (significant under the other, same direction), ``lost`` (not significant), ``flipped``
    (significant, opposite direction); ``gained``: significant only under the other source.
    """
    runs, topics, a, b, dropped = _matrices(reference, other)
    return _preservation(runs, topics, a, b, alpha, correction)


def _preservation(runs, topics, a, b, alpha: float, correction: str) -> dict[str, Any]:
    def per_query(matrix: np.ndarray) -> dict[str, dict[str, float]]:
        return {run: dict(zip(topics, row.tolist())) for run, row in zip(runs, matrix)}

    under_ref = paired_t_tests(per_query(a), alpha=alpha, correction=correction, batched=True)
    under_other = paired_t_tests(per_query(b), alpha=alpha, correction=correction, batched=True)
    adjusted = "p_holm" if correction == "holm" else "p_bonferroni"
    counts = {"same": 0, "lost": 0, "flipped": 0, "gained": 0, "neither": 0}
    details = []
    for r, o in zip(under_ref, under_other):
        sign_r = np.sign(r["mean_diff"] or 0.0)
        sign_o = np.sign(o["mean_diff"] or 0.0)
        if r["significant"]:
            outcome = "lost" if not o["significant"] else ("same" if sign_r == sign_o else "flipped")
        else:
            outcome = "gained" if o["significant"] else "neither"
        counts[outcome] += 1
        details.append(
            {
                "a": r["a"],
                "b": r["b"],
                "outcome": outcome,
                "reference": {key: r.get(key) for key in ("mean_diff", "t", "p", adjusted, "significant")},
                "other": {key: o.get(key) for key in ("mean_diff", "t", "p", adjusted, "significant")},
            }
        )
    return {
        "test": "paired t-test over topics (scipy.stats.ttest_rel), all run pairs",
        "correction": correction,
        "alpha": alpha,
        "n_topics": len(topics),
        "pairs": len(details),
        "significant_reference": counts["same"] + counts["lost"] + counts["flipped"],
        "significant_other": counts["same"] + counts["flipped"] + counts["gained"],
        **counts,
        "details": details,
    }


def compare_systems(
    reference: Scores,
    other: Scores,
    *,
    ks: Sequence[int] = DEFAULT_KS,
    bootstrap: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    alpha: float = 0.05,
    correction: str = "holm",
    interval: str = "percentile",
) -> dict[str, Any]:
    """Compare the run orderings of one measure under a reference source and another source.

    Returns the runs and complete topics used, each run's mean on both sides, ``correlations``
    (``kendall_tau`` tau-b, ``tau_ap`` with the reference as truth and the other source's ranking
    judged, ``tau_ap_reverse``, ``tau_ap_symmetric`` their mean, ``spearman_rho``, ``pearson_r``;
    each ``{"value", "ci"}``), ``top_k`` (``[{"k", "overlap", "ci"}]`` for each k up to the number of
    runs), ``per_topic_tau`` (tau-b of the runs' scores on each topic), ``significance`` (see
    :func:`significance_preservation`) and ``leader`` (the best run on each side, whether it
    changes and where the reference's leader lands). Intervals: bootstrap over topics
    (``bootstrap`` replicates, seeded; 0 turns them off), ``interval`` 'percentile' or 'basic'
    (reflected around the estimate, which corrects the bootstrap's pull of correlations towards 0;
    docs/measures.md#system-level-agreement). Undefined values are None.
    """
    if interval not in INTERVALS:
        raise AssessError(f"unknown bootstrap interval {interval!r}; expected 'percentile' or 'basic'")
    if bootstrap < 0 or not 0 < level < 1:
        raise AssessError(f"bootstrap needs replicates >= 0 and 0 < level < 1, found {bootstrap}, {level}")
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise AssessError(f"top-k needs integers k >= 1, found {k!r}")
    runs, topics, a, b, dropped = _matrices(reference, other)
    n_runs, n_topics = len(runs), len(topics)
    usable_ks = [k for k in sorted(set(ks)) if k <= n_runs]
    mean_a = a.mean(axis=1) if n_topics else np.full(n_runs, np.nan)
    mean_b = b.mean(axis=1) if n_topics else np.full(n_runs, np.nan)
    point = _statistics(mean_a, mean_b, usable_ks) if n_topics and n_runs else {}

    boot: dict[str, list[np.ndarray]] = {}
    if bootstrap and n_topics and n_runs >= 2:
        rng = np.random.default_rng(seed)
        chunk = max(1, _CELLS_PER_CHUNK // (n_runs * n_runs))
        for start in range(0, bootstrap, chunk):
            w = _bootstrap_weights(n_topics, min(chunk, bootstrap - start), rng)
            xa, xb = (w @ a.T) / n_topics, (w @ b.T) / n_topics  # replicates x runs
            for name, values in _statistics(xa, xb, usable_ks).items():
                boot.setdefault(name, []).append(values)

    def figure(name: str) -> dict[str, Any]:
        value = _scalar(point[name]) if name in point else None
        lowest = 0.0 if name.startswith("top_") else -1.0
        ci = _interval(np.concatenate(boot[name]), value, level, interval, lowest) if name in boot else None
        return {"value": value, "ci": ci}

    correlations = {name: figure(name) for name in CORRELATIONS}
    if n_topics and n_runs:  # tau-b and rho from scipy, with their p-values
        scipy_view = ranking_correlation(dict(zip(runs, mean_a.tolist())), dict(zip(runs, mean_b.tolist())))
        correlations["kendall_tau"].update(value=scipy_view["kendall_tau"], p=scipy_view["kendall_p"])
        correlations["spearman_rho"].update(value=scipy_view["spearman_rho"], p=scipy_view["spearman_p"])

    per_topic = {}
    if n_topics and n_runs >= 2:
        taus = _kendall_b(a.T, b.T)
        per_topic = {topic: _scalar(t) for topic, t in zip(topics, taus)}

    leader = None
    if n_topics and n_runs:
        pos_a, pos_b = _positions(mean_a), _positions(mean_b)
        lead_a, lead_b = runs[int(np.argmin(pos_a))], runs[int(np.argmin(pos_b))]
        leader = {
            "reference": lead_a,
            "other": lead_b,
            "changed": lead_a != lead_b,
            "reference_leader_rank_under_other": int(pos_b[runs.index(lead_a)]) + 1,
        }
    return {
        "runs": runs,
        "n_runs": n_runs,
        "n_topics": n_topics,
        "topics_dropped": dropped,
        "reference_means": dict(zip(runs, [_scalar(v) for v in mean_a])),
        "other_means": dict(zip(runs, [_scalar(v) for v in mean_b])),
        "correlations": correlations,
        "top_k": [{"k": k, "overlap": figure(f"top_{k}")["value"], "ci": figure(f"top_{k}")["ci"]} for k in usable_ks],
        "per_topic_tau": per_topic,
        "significance": _preservation(runs, topics, a, b, alpha, correction) if n_runs >= 2 else None,
        "leader": leader,
        "bootstrap": {
            "replicates": int(bootstrap),
            "level": level,
            "seed": seed,
            "method": f"{interval}; topics resampled with replacement, run means recomputed",
        },
    }
