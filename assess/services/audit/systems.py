"""System-level agreement: the stored runs ranked under two sources' qrels, and how far the rankings agree."""

from __future__ import annotations

from typing import Any

from assess import lazylibs
from assess.errors import AssessError
from assess.measures.rankings import evaluate_runs
from assess.measures.systems import compare_systems
from assess.services.audit.sources import check_two, json_safe, pick_roles
from store.compare import qrels_of, runs_of


def _measure(name: str, threshold: int):
    """One ir_measures measure; a binary one without its own ``rel`` counts grades >= ``threshold``."""
    ir_measures = lazylibs.ir_measures()

    try:
        measure = ir_measures.parse_measure(name)
    except (ValueError, NameError, SyntaxError, TypeError):
        raise AssessError(f"unknown measure {name!r}; use ir_measures notation such as nDCG@5 or P@10") from None
    if "rel" in measure.SUPPORTED_PARAMS and "rel" not in measure.params:
        measure = measure(rel=int(threshold))
    return measure


def systems_view(
    db,
    reference: str | None,
    other: str | None,
    *,
    measure: str = "nDCG@5",
    threshold: int = 2,
    k=(1, 3, 5),
    correction: str = "holm",
    bootstrap: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """The stored runs scored under each source's qrels with one measure, then compared: Kendall tau,
    tau_AP, Spearman, Pearson and top-k overlap with topic-bootstrap intervals, per-topic tau, significance
    preservation (paired t-tests, ``correction`` 'holm' or 'bonferroni') and whether the leader changes.
    Binary measures without ``(rel=...)`` count grades >= ``threshold``."""

    reference, other = pick_roles(db, reference, other)
    check_two(db, reference, other, roles=("reference", "other source"))
    if correction not in ("holm", "bonferroni"):
        raise AssessError(f"unknown correction {correction!r}; expected 'holm' or 'bonferroni'")
    chosen = _measure(measure, threshold)
    runs = runs_of(db)
    if not runs:
        raise AssessError("the store has no ranking runs to rank: import a run first")
    name = str(chosen)
    scores = {}
    for source in (reference, other):
        evaluated = evaluate_runs(qrels_of(db, source), runs, [chosen], threshold=threshold)
        scores[source] = {run: result["per_query"][name] for run, result in evaluated.items()}
    report = compare_systems(
        scores[reference],
        scores[other],
        ks=tuple(k),
        bootstrap=bootstrap,
        seed=seed,
        alpha=alpha,
        correction=correction,
    )
    report.update(reference=reference, other=other, measure=name, threshold=threshold)
    return json_safe(report)
