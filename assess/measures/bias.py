"""Bias and consistency probes of an LLM judge: where does it grade differently from people, and how stable is it?

docs/measures.md#bias-and-consistency-probes. Pure functions over plain mappings:

- grade differences LLM - human on the items both labelled, grouped by a covariate (passage length
  in bins, best rank in the runs in bins, turn depth, personal turn, or any grouping), each group
  with n, mean difference and its t interval, shares LLM higher / equal / lower, and for a numeric
  covariate an OLS slope of the difference on it;
- the same per run, over the items each run retrieved in its top k;
- self-consistency of K sampled answers per item, and the label rule that turns them into one label;
- persona sensitivity: the same items judged with and without the PTKB statements in the prompt.

Items are any hashable keys; in a run, an item is the tuple ``(topic, document)``.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np

from assess import lazylibs
from assess.errors import AssessError
from assess.measures.agreement import confusion_matrix, krippendorff_alpha

# Passage length in words: [0, 50), [50, 100), [100, 150), [150, 200), [200, 300), [300, inf).
LENGTH_EDGES = (0, 50, 100, 150, 200, 300)
# Best rank of a passage over the runs (1 = top): 1, 2-3, 4-5, 6-10, 11-20, 21-50, 51-100, 101+.
RANK_EDGES = (1, 2, 4, 6, 11, 21, 51, 101)
LABEL_RULES = ("majority", "mean")


def _grade(value: Any, who: str, item: Hashable) -> float:
    if type(value) is int:  # the common case, without further checks
        return float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise AssessError(f"the {who} grade of item {item!r} must be a number, found {value!r}")
    return float(value)


def differences(llm: Mapping[Hashable, Any], human: Mapping[Hashable, Any]) -> dict[Hashable, float]:
    """LLM grade - human grade on every item both labelled (in the LLM mapping's order)."""
    if not isinstance(llm, Mapping) or not isinstance(human, Mapping):
        raise AssessError("the LLM and human labels must be mappings {item: grade}")
    return {
        item: _grade(grade, "LLM", item) - _grade(human[item], "human", item)
        for item, grade in llm.items()
        if item in human
    }


def _summary(diffs: np.ndarray, level: float) -> dict[str, Any]:
    """n, mean difference with its t interval (None below 2 items), shares LLM higher / equal / lower."""
    student = lazylibs.scipy_stats().t

    n = int(diffs.size)
    out: dict[str, Any] = {"n": n, "mean_diff": None, "ci": None, "higher": None, "equal": None, "lower": None}
    if n == 0:
        return out
    mean = float(diffs.mean())
    out.update(
        mean_diff=mean,
        higher=float((diffs > 0).mean()),
        equal=float((diffs == 0).mean()),
        lower=float((diffs < 0).mean()),
    )
    if n >= 2:
        half = float(student.ppf(0.5 + level / 2.0, n - 1) * diffs.std(ddof=1) / math.sqrt(n))
        out["ci"] = [mean - half, mean + half]
    return out


def bin_label(value: float, edges: Sequence[float]) -> str:
    """Name the bin of ``value``: '[lo, hi)' between two edges, '>= last' above, '< first' below."""
    if value < edges[0]:
        return f"< {edges[0]:g}"
    for lo, hi in zip(edges, edges[1:]):
        if lo <= value < hi:
            return f"[{lo:g}, {hi:g})"
    return f">= {edges[-1]:g}"


def _slope(x: np.ndarray, y: np.ndarray, level: float) -> dict[str, Any] | None:
    """OLS of y on x with an intercept and HC3 (heteroscedasticity-robust) standard errors (None where undefined)."""
    if x.size < 3 or np.ptp(x) == 0:
        return None
    sm = lazylibs.statsmodels_api()

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        fit = sm.OLS(y, sm.add_constant(x)).fit(cov_type="HC3")
        low, high = fit.conf_int(alpha=1.0 - level)[1]
        p = fit.pvalues[1]
    ci = [float(low), float(high)] if math.isfinite(low) and math.isfinite(high) else None
    return {
        "slope": float(fit.params[1]),
        "intercept": float(fit.params[0]),
        "ci": ci,
        "p": float(p) if math.isfinite(p) else None,
        "n": int(x.size),
    }


def _group_order(keys) -> list:
    try:
        return sorted(keys)
    except TypeError:
        return sorted(keys, key=lambda g: (type(g).__name__, str(g)))


def bias_by(
    llm: Mapping[Hashable, Any],
    human: Mapping[Hashable, Any],
    covariate: Mapping[Hashable, Any],
    *,
    edges: Sequence[float] | None = None,
    numeric: bool | None = None,
    level: float = 0.95,
) -> dict[str, Any]:
    """The LLM - human difference per value (or bin) of a covariate, and its slope when numeric.

    ``covariate`` maps items to a value (length, rank, depth, personal flag, run ...); items
    without one are left out. With ``edges`` numeric values are grouped in bins (see
    :func:`bin_label`, groups in edge order); otherwise each distinct value is a group (sorted).
    ``numeric`` (default: every value a non-boolean number) adds ``slope``: OLS of the difference
    on the raw covariate with HC3 standard errors. Returns ``{"n", "overall", "groups": [{"group",
    ...summary}], "slope"}`` where a summary is n, mean_diff, its t interval, shares higher / equal / lower.
    """
    return _bias_of(differences(llm, human), covariate, edges=edges, numeric=numeric, level=level)


def _bias_of(
    diffs: Mapping[Hashable, float],
    covariate: Mapping[Hashable, Any],
    *,
    edges: Sequence[float] | None,
    numeric: bool | None,
    level: float,
) -> dict[str, Any]:
    if not 0 < level < 1:
        raise AssessError(f"the interval level must be between 0 and 1, found {level}")
    if edges is not None and (len(edges) < 1 or list(edges) != sorted(set(edges))):
        raise AssessError(f"bin edges must be strictly increasing, found {list(edges)!r}")
    items = [item for item in diffs if item in covariate]
    values = [covariate[item] for item in items]
    is_number = all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values)
    if numeric is None:
        numeric = bool(values) and is_number
    if (numeric or edges is not None) and not is_number:
        raise AssessError("a numeric covariate (bins or slope) needs finite numbers for every item")
    d = np.asarray([diffs[item] for item in items], dtype=float)
    keys = [bin_label(v, edges) for v in values] if edges is not None else values
    groups: dict[Any, list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    if edges is not None:
        names = [f"< {edges[0]:g}"] + [f"[{lo:g}, {hi:g})" for lo, hi in zip(edges, edges[1:])] + [f">= {edges[-1]:g}"]
        order = [g for g in names if g in groups]
    else:
        order = _group_order(groups)
    return {
        "n": len(items),
        "overall": _summary(d, level),
        "groups": [{"group": g, **_summary(d[groups[g]], level)} for g in order],
        "slope": _slope(np.asarray(values, dtype=float), d, level) if numeric else None,
    }


def best_ranks(runs: Mapping[str, Mapping[Hashable, Sequence[Hashable]]]) -> dict[tuple, int]:
    """The best (smallest, 1-based) rank of every ``(topic, document)`` over the runs' ranked lists."""
    best: dict[tuple, int] = {}
    for run, topics in runs.items():
        if not isinstance(topics, Mapping):
            raise AssessError(f"run {run!r} must be a mapping {{topic: [documents in rank order]}}")
        for topic, docs in topics.items():
            for rank, doc in enumerate(docs, start=1):
                key = (topic, doc)
                if rank < best.get(key, rank + 1):
                    best[key] = rank
    return best


def bias_per_run(
    llm: Mapping[Hashable, Any],
    human: Mapping[Hashable, Any],
    runs: Mapping[str, Mapping[Hashable, Sequence[Hashable]]],
    *,
    k: int = 10,
    level: float = 0.95,
) -> list[dict[str, Any]]:
    """Does the judge favour some systems? The LLM - human difference over each run's top-k items.

    ``runs`` is ``{run: {topic: [documents in rank order]}}``; items are ``(topic, document)``.
    One summary per run (sorted by name) over the items of its top ``k`` that both sources labelled.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise AssessError(f"top-k needs an integer k >= 1, found {k!r}")
    diffs = differences(llm, human)
    out = []
    for run in sorted(runs):
        topics = runs[run]
        if not isinstance(topics, Mapping):
            raise AssessError(f"run {run!r} must be a mapping {{topic: [documents in rank order]}}")
        seen = {(topic, doc) for topic, docs in topics.items() for doc in list(docs)[:k]}
        d = np.asarray([diffs[item] for item in seen if item in diffs], dtype=float)
        out.append({"run": run, **_summary(d, level)})
    return out


def bias_report(
    llm: Mapping[Hashable, Any],
    human: Mapping[Hashable, Any],
    *,
    lengths: Mapping[Hashable, int] | None = None,
    runs: Mapping[str, Mapping[Hashable, Sequence[Hashable]]] | None = None,
    depth: Mapping[Hashable, int] | None = None,
    personal: Mapping[Hashable, bool] | None = None,
    k: int = 10,
    level: float = 0.95,
) -> dict[str, Any]:
    """Every probe the inputs allow: ``length`` (words, LENGTH_EDGES bins), ``rank`` (best rank over
    ``runs``, RANK_EDGES bins), ``depth`` (turn depth, one group per depth), ``personal`` (personal
    vs non-personal turn) and ``runs`` (per run, top ``k``); plus ``overall``. Missing inputs give None."""
    diffs = differences(llm, human)
    overall = _bias_of(diffs, dict.fromkeys(diffs, "all"), edges=None, numeric=False, level=level)
    report: dict[str, Any] = {"overall": overall["overall"], "level": level}

    def probe(covariate, **how) -> dict[str, Any] | None:
        return None if covariate is None else _bias_of(diffs, covariate, level=level, **how)

    report["length"] = probe(lengths, edges=LENGTH_EDGES, numeric=None)
    report["rank"] = probe(best_ranks(runs) if runs is not None else None, edges=RANK_EDGES, numeric=None)
    report["depth"] = probe(depth, edges=None, numeric=True)
    personal_flags = {i: bool(v) for i, v in personal.items()} if personal is not None else None
    report["personal"] = probe(personal_flags, edges=None, numeric=False)
    report["runs"] = bias_per_run(llm, human, runs, k=k, level=level) if runs is not None else None
    return report


def sample_label(samples: Sequence[int], rule: str = "majority") -> int:
    """One label from K sampled grades.

    'majority': the most frequent grade; a tie goes to the lowest of the tied grades (a grade is
    only raised by a strict majority). 'mean': the mean rounded half up (floor(mean + 1/2)).
    """
    if rule not in LABEL_RULES:
        raise AssessError(f"unknown label rule {rule!r}; expected 'majority' or 'mean'")
    values = list(samples)
    if not values:
        raise AssessError("a label needs at least one sampled answer")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int):
            raise AssessError(f"sampled answers must be integer grades, found {v!r}")
    if rule == "mean":
        return int(math.floor(sum(values) / len(values) + 0.5))
    counts = Counter(values)
    top = max(counts.values())
    return min(v for v, c in counts.items() if c == top)


def self_consistency(
    samples: Mapping[Hashable, Sequence[int]],
    *,
    scale: Sequence[int],
    rule: str = "majority",
    alpha_level: str = "ordinal",
) -> dict[str, Any]:
    """How well a judge agrees with itself over K sampled answers per item.

    ``alpha``: Krippendorff's alpha over the items with at least 2 samples (the samples as coders;
    :func:`assess.measures.agreement.krippendorff_alpha`), ``unanimous``: share of those items
    whose samples are all equal, ``pairwise``: mean over those items of the share of sample pairs
    that agree exactly; ``labels``: :func:`sample_label` of every item under ``rule``.
    """
    if not isinstance(samples, Mapping):
        raise AssessError("samples must be a mapping {item: [sampled grades]}")
    allowed = set(scale)
    for item, values in samples.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            raise AssessError(f"the samples of item {item!r} must be a list of grades")
        for v in values:
            if isinstance(v, bool) or v not in allowed:
                raise AssessError(f"item {item!r} has sampled grade {v!r} outside the scale {list(scale)!r}")
    labels = {item: sample_label(values, rule) for item, values in samples.items() if len(values)}
    multi = [list(values) for values in samples.values() if len(values) >= 2]
    sizes = [len(values) for values in samples.values()]
    pairwise = [sum(a == b for a, b in combinations(v, 2)) / (len(v) * (len(v) - 1) / 2) for v in multi]
    return {
        "n_items": len(samples),
        "n_multi": len(multi),
        "samples": {"min": min(sizes), "max": max(sizes)} if sizes else None,
        "alpha": krippendorff_alpha(multi, scale=scale, level=alpha_level, min_labels=2) if multi else None,
        "alpha_level": alpha_level,
        "unanimous": float(np.mean([len(set(v)) == 1 for v in multi])) if multi else None,
        "pairwise": float(np.mean(pairwise)) if multi else None,
        "rule": rule,
        "labels": labels,
    }


def persona_sensitivity(
    with_ptkb: Mapping[Hashable, int],
    without_ptkb: Mapping[Hashable, int],
    *,
    scale: Sequence[int],
    groups: Mapping[Hashable, Hashable] | None = None,
) -> dict[str, Any]:
    """How the grades change when the PTKB statements are added to the prompt.

    Over the items judged both ways: n, ``changed`` (count and share), ``up`` (with PTKB higher),
    ``down``, ``mean_change`` (with - without) and ``matrix`` (rows: grade without PTKB, columns:
    with, over the full scale); ``groups`` (e.g. personal vs non-personal turn) gives the same per group.
    """
    if not isinstance(with_ptkb, Mapping) or not isinstance(without_ptkb, Mapping):
        raise AssessError("the grades with and without PTKB must be mappings {item: grade}")
    items = [item for item in with_ptkb if item in without_ptkb]

    def summary(chosen: list) -> dict[str, Any]:
        before = [without_ptkb[i] for i in chosen]
        after = [with_ptkb[i] for i in chosen]
        matrix = confusion_matrix(before, after, scale=scale)
        change = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
        n = len(chosen)
        return {
            "n": n,
            "changed": int((change != 0).sum()),
            "share_changed": float((change != 0).mean()) if n else None,
            "up": int((change > 0).sum()),
            "down": int((change < 0).sum()),
            "mean_change": float(change.mean()) if n else None,
            "matrix": matrix.tolist(),
        }

    out = {"scale": list(scale), **summary(items)}
    if groups is not None:
        by: dict[Hashable, list] = {}
        for item in items:
            if item in groups:
                by.setdefault(groups[item], []).append(item)
        out["groups"] = [{"group": g, **summary(by[g])} for g in _group_order(by)]
    return out
