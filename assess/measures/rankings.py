"""Passage-ranking and PTKB-ranking evaluation under a qrels source, with ir_measures/pytrec_eval.

docs/measures.md#run-rankings. Inputs are plain dicts: qrels ``{qid: {docid: int label}}`` and runs
``{run name: {qid: {docid: float score}}}``. Every measure is computed by ir_measures' pytrec_eval
provider, i.e. exactly trec_eval: documents sorted by score descending, ties by docid descending;
nDCG@k (``ndcg_cut.k``) with the raw label as linear gain; binary measures count label >= threshold
(``trec_eval -l``; CAsT/iKAT "strict" = 2 on the 0-4 scale). A measure given without its own
``rel`` (``P@10``, ``AP``) takes the threshold (``P(rel=2)@10`` at 2); one with ``rel`` keeps it.

Averaging follows trec_eval without ``-c``: a run's mean is over the queries that are both in the
qrels and in the run (with at least one document). ``all_queries=True`` gives ``-c`` instead
(qrels queries the run misses score 0).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from typing import Any

from assess import lazylibs
from assess.errors import AssessError

Qrels = Mapping[str, Mapping[str, int]]
Run = Mapping[str, Mapping[str, float]]


def cast_measures(threshold: int = 2) -> list:
    """Return the CAsT/iKAT passage measures: nDCG@3, nDCG@5, P@20, R@20, AP, RR at ``threshold``.

    nDCG uses graded labels (linear gain, unaffected by the threshold); P(rel=t)@20, R(rel=t)@20,
    AP(rel=t) and RR(rel=t) count label >= t as relevant (ir_measures notation).
    """
    ir = lazylibs.ir_measures()
    AP, RR, P, R, nDCG = ir.AP, ir.RR, ir.P, ir.R, ir.nDCG

    t = _threshold(threshold)
    return [nDCG @ 3, nDCG @ 5, P(rel=t) @ 20, R(rel=t) @ 20, AP(rel=t), RR(rel=t)]


def ptkb_measures() -> list:
    """Return the iKAT PTKB statement-ranking measures: nDCG@3, P@3, R@3 and MRR, relevant = label >= 1."""
    ir = lazylibs.ir_measures()
    RR, P, R, nDCG = ir.RR, ir.P, ir.R, ir.nDCG

    return [nDCG @ 3, P(rel=1) @ 3, R(rel=1) @ 3, RR(rel=1)]


def _threshold(threshold: int) -> int:
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, (int, float))
        or not math.isfinite(threshold)
        or int(threshold) != threshold
        or threshold < 1
    ):
        raise AssessError(f"the relevance threshold must be an integer >= 1, found {threshold!r}")
    return int(threshold)


def parse_measure(measure, threshold: int = 2):
    """One measure in ir_measures notation (or a measure object); a binary one without its own ``rel``
    counts label >= ``threshold`` (``P@10`` at 2 is ``P(rel=2)@10``, as ``trec_eval -l 2``)."""
    ir_measures = lazylibs.ir_measures()

    t = _threshold(threshold)
    try:
        parsed = ir_measures.parse_measure(measure) if isinstance(measure, str) else measure
    except (ValueError, NameError, SyntaxError, TypeError):
        raise AssessError(f"unknown measure {measure!r}; use ir_measures notation such as 'P(rel=2)@20'") from None
    if not ir_measures.pytrec_eval.supports(parsed):
        raise AssessError(
            f"measure {str(parsed)!r} is not computed here (pytrec_eval); use e.g. nDCG@k, P@k, R@k, AP, RR, P(rel=2)@k"
        )
    if "rel" in parsed.SUPPORTED_PARAMS and "rel" not in parsed.params:
        parsed = parsed(rel=t)
    return parsed


def measure_name(measure, threshold: int | None = 2) -> str:
    """A measure's name in ir_measures notation, with its ``rel`` written whenever ir_measures leaves it out
    (at its default, 1) and ``threshold`` (the one a header states) is not 1: under "label >= 2",
    ``P(rel=1)@5`` must not read as ``P@5``. ``threshold`` None: ir_measures' own name."""
    name = str(measure)
    rel = getattr(measure, "params", {}).get("rel")
    if threshold is None or rel is None or threshold == rel or f"rel={rel}" in name:
        return name
    base, at, cutoff = name.partition("@")
    head, paren, rest = base.partition("(")
    return f"{head}(rel={rel}{',' + rest if paren else ')'}{at}{cutoff}"


def _measures(measures: Iterable | None, threshold: int) -> list:
    if measures is None:
        return cast_measures(threshold)
    return [parse_measure(m, threshold) for m in measures]


def evaluate_runs(
    qrels: Qrels,
    runs: Mapping[str, Run],
    measures: Iterable | None = None,
    *,
    threshold: int = 2,
    all_queries: bool = False,
    named_at: int | None = None,
) -> dict[str, dict[str, Any]]:
    """Evaluate every run against ``qrels``; return per-run means and per-query values.

    Returns ``{run: {"n_queries": int, "mean": {measure: float | None}, "per_query": {measure:
    {qid: float}}}}`` with measure names in ir_measures notation (``named_at``: the threshold a header
    states, whose other rels are written out, :func:`measure_name`). Default
    measures: :func:`cast_measures` (threshold); a given binary measure without its own ``rel`` counts
    label >= ``threshold`` (:func:`parse_measure`). Mean = trec_eval "all" line: over queries in both
    qrels and run (``all_queries`` averages over every qrels query, missing = 0, as ``-c``).
    A query with qrels but no document at or above the threshold still counts (its binary
    measures are 0). Degenerate: a run sharing no query with the qrels has mean None everywhere.
    """
    ir_measures = lazylibs.ir_measures()

    if not isinstance(qrels, Mapping) or not isinstance(runs, Mapping):
        raise AssessError("qrels and runs must be dicts: {qid: {docid: label}} and {run: {qid: {docid: score}}}")
    chosen = _measures(measures, threshold)
    names = [measure_name(m, named_at) for m in chosen]
    evaluator = ir_measures.pytrec_eval.evaluator(chosen, qrels)
    results: dict[str, dict[str, Any]] = {}
    label_cache: dict[int, tuple[Any, str]] = {}
    for run_name, run in runs.items():
        if not isinstance(run, Mapping):
            raise AssessError(f"run {run_name!r} must be a dict {{qid: {{docid: score}}}}")
        # The provider also reports qrels queries absent from the run (as 0); trec_eval without
        # -c ignores them, so keep only the run's own queries unless all_queries is set.
        keep = None if all_queries else {q for q, docs in run.items() if docs}
        per_query: dict[str, dict[str, float]] = {name: {} for name in names}
        for metric in evaluator.iter_calc(run):
            if keep is None or metric.query_id in keep:
                measure = metric.measure
                # str(measure) is costly (it re-renders the notation); cache it per object,
                # holding the object so its id cannot be reused.
                cached = label_cache.get(id(measure))
                if cached is None or cached[0] is not measure:
                    cached = label_cache[id(measure)] = (measure, measure_name(measure, named_at))
                per_query[cached[1]][metric.query_id] = float(metric.value)
        queries = set().union(*(v.keys() for v in per_query.values())) if per_query else set()
        means = {
            name: (math.fsum(values.values()) / len(values) if values else None) for name, values in per_query.items()
        }
        results[run_name] = {"n_queries": len(queries), "mean": means, "per_query": per_query}
    return results


def evaluate_ptkb(qrels: Qrels, runs: Mapping[str, Run]) -> dict[str, dict[str, Any]]:
    """Evaluate PTKB statement rankings (qid = turn, docid = statement key) with :func:`ptkb_measures`."""
    return evaluate_runs(qrels, runs, ptkb_measures())


def _finite(value) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def ranking_correlation(scores_a: Mapping[str, float], scores_b: Mapping[str, float]) -> dict[str, Any]:
    """Compare two orderings of the same runs: Kendall's tau-b and Spearman's rho (scipy.stats).

    Typically a run's mean under qrels source A vs source B. Only runs scored in both (and not None)
    count. Degenerate: fewer than 2 runs or a constant side gives None values.
    """
    stats = lazylibs.scipy_stats()
    kendalltau, spearmanr = stats.kendalltau, stats.spearmanr

    common = [r for r in scores_a if r in scores_b and scores_a[r] is not None and scores_b[r] is not None]
    x = [float(scores_a[r]) for r in common]
    y = [float(scores_b[r]) for r in common]
    out: dict[str, Any] = {
        "n": len(common),
        "kendall_tau": None,
        "kendall_p": None,
        "spearman_rho": None,
        "spearman_p": None,
    }
    if len(common) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tau = kendalltau(x, y)
        rho = spearmanr(x, y)
    out.update(
        kendall_tau=_finite(tau.statistic),
        kendall_p=_finite(tau.pvalue),
        spearman_rho=_finite(rho.statistic),
        spearman_p=_finite(rho.pvalue),
    )
    return out


def compare_qrels(
    qrels_a: Qrels, qrels_b: Qrels, runs: Mapping[str, Run], measures: Iterable | None = None, *, threshold: int = 2
) -> dict[str, dict[str, Any]]:
    """Evaluate the runs under two qrels sources and correlate the run orderings, per measure.

    Returns ``{measure: {"a": {run: mean}, "b": {run: mean}, **ranking_correlation(a, b)}}``.
    """
    chosen = _measures(measures, threshold)
    first = evaluate_runs(qrels_a, runs, chosen)
    second = evaluate_runs(qrels_b, runs, chosen)
    out = {}
    for m in chosen:
        name = str(m)
        a = {r: first[r]["mean"][name] for r in runs}
        b = {r: second[r]["mean"][name] for r in runs}
        out[name] = {"a": a, "b": b, **ranking_correlation(a, b)}
    return out


def paired_t_tests(
    per_query: Mapping[str, Mapping[str, float]],
    *,
    alpha: float = 0.05,
    pairs: Sequence[tuple[str, str]] | None = None,
    correction: str = "bonferroni",
    batched: bool = False,
) -> list[dict[str, Any]]:
    """Run paired t-tests between runs on per-query scores, Bonferroni- (or Holm-) corrected.

    ``per_query`` is ``{run: {qid: score}}`` for one measure (e.g. ``evaluate_runs(...)[run]
    ["per_query"]["nDCG@3"]``). Each pair is tested with ``scipy.stats.ttest_rel`` over the queries
    both runs have; with m tests (all pairs by default), p_bonferroni = min(1, m * p) and
    significant = p_bonferroni < alpha. Degenerate: fewer than 2 shared queries, or identical
    differences (zero variance), give t = p = None and significant = False.
    ``correction='holm'`` adds ``p_holm`` (:func:`holm_adjusted`, Holm's step-down over the
    same m tests, an undefined p counting as 1) and decides ``significant`` by it instead.
    ``batched=True`` runs one vectorised ``ttest_rel`` over all pairs sharing the same queries
    (much faster for hundreds of pairs; values may differ from the per-pair call in the last bit).
    """
    ttest_rel = lazylibs.scipy_stats().ttest_rel

    if correction not in ("bonferroni", "holm"):
        raise AssessError(f"unknown multiple-testing correction {correction!r}; expected 'bonferroni' or 'holm'")

    names = list(per_query)
    chosen = list(pairs) if pairs is not None else list(combinations(names, 2))
    for a, b in chosen:
        if a not in per_query or b not in per_query:
            raise AssessError(f"unknown run in pair ({a!r}, {b!r})")
    m = len(chosen)
    results = []
    batch: dict[int, tuple[float | None, float | None]] = {}
    if batched and chosen:
        batch = _batched_t(per_query, chosen)
    for index, (a, b) in enumerate(chosen):
        shared = sorted(set(per_query[a]) & set(per_query[b]))
        x = [float(per_query[a][q]) for q in shared]
        y = [float(per_query[b][q]) for q in shared]
        diffs = [u - v for u, v in zip(x, y)]
        row: dict[str, Any] = {
            "a": a,
            "b": b,
            "n": len(shared),
            "mean_diff": math.fsum(diffs) / len(diffs) if diffs else None,
            "t": None,
            "p": None,
            "p_bonferroni": None,
            "significant": False,
        }
        if len(shared) >= 2 and len(set(diffs)) > 1:
            if index in batch:
                t, p = batch[index]
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    test = ttest_rel(x, y)
                t, p = _finite(test.statistic), _finite(test.pvalue)
            if t is not None and p is not None:
                adjusted = min(1.0, p * m)
                row.update(t=t, p=p, p_bonferroni=adjusted, significant=adjusted < alpha)
        results.append(row)
    if correction == "holm" and results:
        adjusted = holm_adjusted([1.0 if row["p"] is None else row["p"] for row in results])
        for row, p_holm in zip(results, adjusted):
            row["p_holm"] = None if row["p"] is None else float(p_holm)
            row["significant"] = row["p"] is not None and float(p_holm) < alpha
    return results


def holm_adjusted(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: sorted ascending, the k-th smallest (from 0)
    times m - k, made non-decreasing by a running maximum and capped at 1. Equal to statsmodels'
    ``multipletests(p, method="holm")[1]`` (tests/unit/test_audit_measures.py checks it), which this replaces
    because that path runs a full ``gc.collect()`` on every call (0.05-0.25 s in a loaded process)."""
    np = lazylibs.numpy()

    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p)
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(p[order] * np.arange(len(p), 0, -1)))
    return adjusted.tolist()


def _batched_t(
    per_query: Mapping[str, Mapping[str, float]], chosen: Sequence[tuple[str, str]]
) -> dict[int, tuple[float | None, float | None]]:
    """t and p of every pair whose shared queries are those of the first pair, in one ttest_rel call."""
    np = lazylibs.numpy()
    ttest_rel = lazylibs.scipy_stats().ttest_rel

    first = sorted(set(per_query[chosen[0][0]]) & set(per_query[chosen[0][1]]))
    if len(first) < 2:
        return {}
    same = [i for i, (a, b) in enumerate(chosen) if len(set(per_query[a]) & set(per_query[b])) == len(first)]
    same = [i for i in same if set(per_query[chosen[i][0]]) & set(per_query[chosen[i][1]]) == set(first)]
    runs = sorted({r for i in same for r in chosen[i]})
    matrix = {r: np.asarray([float(per_query[r][q]) for q in first]) for r in runs}
    x = np.stack([matrix[chosen[i][0]] for i in same])
    y = np.stack([matrix[chosen[i][1]] for i in same])
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        test = ttest_rel(x, y, axis=1)
    return {
        i: (_finite(t), _finite(p)) for i, t, p in zip(same, np.atleast_1d(test.statistic), np.atleast_1d(test.pvalue))
    }
