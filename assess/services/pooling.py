"""Adaptive pooling as in iKAT 2024 over the store: the report of what an LLM's grades would let into the
pool, and the pool filter for run imports. The rule itself is :func:`assess.measures.pooling.adaptive_keep`."""

from __future__ import annotations

from typing import Any

from assess.errors import AssessError
from assess.measures.pooling import adaptive_keep
from store import Store, prejudgments


def adaptive_pool(
    db: Store,
    source: str,
    threshold: int,
    always: int = 5,
    depth: int = 30,
    *,
    qrels: str | None = None,
    relevant: int = 2,
    apply: bool = False,
) -> dict:
    """Adaptive pooling as in iKAT 2024 (:func:`assess.measures.pooling.adaptive_keep`): ranks 1..``always``
    of every run enter the pool; ranks ``always``+1..``depth`` only when ``source`` (an LLM) grades the
    passage >= ``threshold``.

    Returns the depth pool (union of every run's top ``depth``), the adaptive pool, how many pairs
    that saves, how many candidates the LLM has not graded (they stay out), and with ``qrels`` (a
    human source) how many of its relevant pairs (grade >= ``relevant``) the filter drops.
    Without stored runs the report covers the pairs both sources judged instead (no rank known:
    every pair is treated as below rank ``always``). ``apply`` adds the adaptive pool to the pool
    (method 'adaptive'); pairs already pooled stay.
    """
    if threshold < 0 or always < 0 or depth < always:
        raise AssessError(f"need threshold >= 0 and 0 <= always <= depth, got {threshold}, {always}, {depth}")
    if not prejudgments.has_passage_labels(db, source):
        raise AssessError(f"source {source!r} has no passage labels (pre-judge the candidates first)")
    human = {}
    if qrels:
        if not prejudgments.has_passage_labels(db, qrels):
            raise AssessError(f"source {qrels!r} has no passage labels")
        human = prejudgments.passage_grades(db, qrels)
    grades = prejudgments.passage_grades(db, source)
    runs = prejudgments.ranking_runs(db)
    report: dict[str, Any] = {
        "source": source,
        "threshold": threshold,
        "always": always,
        "depth": depth,
        "qrels": qrels,
        "relevant": relevant,
        "relevant_grade": relevant,
        "runs": runs,
    }

    def keep(pair: tuple[str, str], rank: int | None) -> bool:
        return adaptive_keep(rank, grades.get(pair), threshold=threshold, always=always)

    if runs:
        best = prejudgments.best_ranks(db, depth)
        kept = {k: r for k, r in best.items() if keep(k, r)}
        report.update(
            mode="runs",
            depth_pool=len(best),
            always_in=sum(r <= always for r in best.values()),
            adaptive_pool=len(kept),
            saved=len(best) - len(kept),
            ungraded=sum(1 for k, r in best.items() if r > always and k not in grades),
        )
        candidates = best
    else:
        both = [k for k in grades if not qrels or k in human]
        kept = {k: None for k in both if keep(k, None)}
        report.update(mode="judged pairs", pairs=len(both), kept=len(kept), saved=len(both) - len(kept))
        candidates = dict.fromkeys(both)
    report["saved_share"] = report["saved"] / len(candidates) if candidates else None
    if qrels:
        rel = [k for k in candidates if human.get(k, -1) >= relevant]
        dropped = [k for k in rel if k not in kept]
        report.update(
            judged_by_qrels=sum(1 for k in candidates if k in human),
            relevant=len(rel),
            relevant_dropped=len(dropped),
            relevant_dropped_share=len(dropped) / len(rel) if rel else None,
            relevant_dropped_by_grade={
                g: sum(1 for k in dropped if human[k] == g) for g in sorted({human[k] for k in dropped})
            },
        )
    if apply and runs:
        detail = f"adaptive {source} >= {threshold}, always top {always}, depth {depth}"
        report["added_to_pool"] = prejudgments.add_to_pool(db, kept, method="adaptive", detail=detail)
    return report


def adaptive_filter(db: Store, source: str, threshold: int, always: int = 5):
    """A ``pool_filter(turn_id, passage_id, rank)`` for :func:`store.imports.import_run`: the top ``always``
    ranks, and below them the passages ``source`` graded >= ``threshold``."""
    grades = prejudgments.passage_grades(db, source)
    return lambda turn_id, passage_id, rank: adaptive_keep(
        rank, grades.get((turn_id, passage_id)), threshold=threshold, always=always
    )
