"""Assessors' own consistency: re-shown items (store/reshows.py) and planned overlap (store/overlap.py), how far
each assessor agrees with themselves, and the human ceiling over the items a plan gave to two or three."""

from __future__ import annotations

from itertools import combinations
from typing import Any

from assess.measures.agreement import MATRIX_STATISTICS, MIN_SHARED, agreement_matrix
from assess.services.audit.sources import json_safe
from store import overlap, overlap_adaptive, reshows
from store.audit import scale_of, task_labels
from store.review import ADJUDICATION


def headline_statistic(task: str) -> str:
    """The statistic a consistency figure leads with: quadratic-weighted kappa on a graded scale (more than
    two values, as the agreement matrix's table), unweighted kappa on a yes/no scale."""

    return "kappa_quadratic" if len(scale_of(task)) > 2 else "kappa_unweighted"


def self_agreement_view(
    db,
    task: str = "passage",
    *,
    assessor: str | None = None,
    threshold: float | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Each assessor's agreement with themselves: their answered re-shows (the second answer against the
    primary label as it stood when it was given), as the agreement matrix computes one pair (observed
    agreement, kappa unweighted / linear / quadratic, binarised at ``threshold``, ordinal alpha, each with a
    seeded percentile bootstrap interval over items). Pairs where either answer is 'cannot judge' are
    counted and left out."""

    statistic = headline_statistic(task)
    found: dict[str, list[dict]] = {}
    for r in reshows.answers(db, task, assessor):
        found.setdefault(r["assessor"], []).append(r)
    people = []
    for name, answered in found.items():
        graded = [r for r in answered if r["first"] is not None and r["second"] is not None]
        first = {(r["turn_id"], r["item_id"]): r["first"] for r in graded}
        second = {(r["turn_id"], r["item_id"]): r["second"] for r in graded}
        pair = None
        if graded:
            matrix = agreement_matrix(
                {"first": first, "second": second},
                scale=scale_of(task),
                threshold=threshold,
                bootstrap=bootstrap,
                seed=seed,
            )
            pair = matrix["pairs"][0]
        people.append(
            {
                "assessor": name,
                "answered": len(answered),
                "n": len(graded),
                "cannot_judge": len(answered) - len(graded),
                "changed": sum(first[k] != second[k] for k in first),
                "value": pair[statistic] if pair else None,
                "ci": pair["ci"][statistic] if pair else None,
                **{s: pair[s] if pair else None for s in MATRIX_STATISTICS},
                "intervals": {s: pair["ci"][s] for s in MATRIX_STATISTICS} if pair else None,
            }
        )
    return json_safe(
        {
            "task": task,
            "statistic": statistic,
            "threshold": threshold,
            "bootstrap": {"replicates": bootstrap, "seed": seed, "level": 0.95},
            "rule": "second answer of a re-shown item against the primary label as it stood then; "
            "'cannot judge' on either side left out",
            "assessors": people,
            "pending": [c for c in reshows.counts(db, task) if assessor is None or c["assessor"] == assessor],
        }
    )


def overlap_view(
    db,
    task: str = "passage",
    *,
    plan: str | None = None,
    threshold: float | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
    min_shared: int | None = None,
) -> dict[str, Any]:
    """The human ceiling over planned overlap: the items drawn for overlap (of one plan, or every plan of
    ``task``), each with the labels of the assessors planned to judge it, as the agreement matrix computes
    them (every pair of assessors and the ceiling pooled over those pairs: observed agreement, kappa
    unweighted / linear / quadratic, binarised at ``threshold``, ordinal alpha, each with a seeded percentile
    bootstrap interval over items). Also how far the plan has got: items judged by two and by all of their
    planned assessors. Labels of unplanned items and of other sources are left out ('cannot judge' too). Pairs
    sharing fewer than ``min_shared`` items (default ``MIN_SHARED``) are listed (``below_minimum``), not pooled."""

    judges = overlap.planned_judges(db, task, plan)
    names = sorted({a for people in judges.values() for a in people})
    stored = task_labels(db, task, names)
    labels: dict[str, dict] = {a: {} for a in names}
    judged = {}
    for item, people in judges.items():
        done = [a for a in people if item in stored[a]]
        judged[item] = (len(done), len(people))
        for a in done:
            labels[a][item] = stored[a][item]
    matrix = None
    if len(names) >= 2:
        matrix = agreement_matrix(
            labels,
            scale=scale_of(task),
            threshold=threshold,
            kinds=dict.fromkeys(names, "human"),
            bootstrap=bootstrap,
            seed=seed,
            min_shared=MIN_SHARED if min_shared is None else min_shared,
        )
    statistic = headline_statistic(task)
    ceiling = matrix["ceiling"] if matrix else None
    return json_safe(
        {
            "task": task,
            "plan": plan,
            "plans": [p for p in overlap.plans(db, task) if plan is None or p["name"] == plan],
            "assessors": names,
            "items": len(judges),
            "judged_by_two": sum(done >= 2 for done, _ in judged.values()),
            "judged_by_all": sum(done == planned for done, planned in judged.values()),
            "statistic": statistic,
            "threshold": threshold,
            "value": ceiling[statistic] if ceiling else None,
            "ci": ceiling["ci"][statistic] if ceiling else None,
            "ceiling": {k: v for k, v in ceiling.items() if k != "by"} if ceiling else None,
            "pairs": [{k: v for k, v in p.items() if k != "by"} for p in matrix["pairs"]] if matrix else [],
            "min_shared": MIN_SHARED if min_shared is None else min_shared,
            "below_minimum": matrix["ceiling_below_minimum"] if matrix else [],
            "bootstrap": {"replicates": bootstrap, "seed": seed, "level": 0.95},
            "adaptive": _adaptive_extras(db, task, plan),
        }
    )


def _adaptive_extras(db, task: str, plan: str | None) -> dict[str, Any] | None:
    """What adaptive plans added beyond their base share, apart from the ceiling: those items got more people
    because grades disagreed, so their agreement is low by selection and says nothing of the ceiling. Per
    step, the items and the observed agreement of every pair of people on them; the disputed items and how
    many of them are adjudicated. None when no plan of ``task`` (or ``plan``) is adaptive."""
    if not any(p["margin"] is not None for p in overlap.plans(db, task) if plan is None or p["name"] == plan):
        return None
    found = overlap_adaptive.decisions(db, plan, task)
    judges: dict[tuple, list[str]] = {}
    for r in found:
        if r["assessor"] is not None:
            judges.setdefault((r["turn_id"], r["item_id"]), []).append(r["assessor"])
    primaries = overlap_adaptive.primaries(db, plan, task)
    names = sorted({a for people in judges.values() for a in people} | set(primaries.values()))
    stored = task_labels(db, task, names)
    steps = {}
    for step in ("judge", "humans"):
        items = {(r["turn_id"], r["item_id"]) for r in found if r["step"] == step}
        pairs = same = 0
        for item in items:
            graded = [stored[a][item] for a in [primaries[item], *judges.get(item, [])] if item in stored[a]]
            for x, y in combinations(graded, 2):
                pairs += 1
                same += x == y
        steps[step] = {"items": len(items), "pairs": pairs, "agreement": same / pairs if pairs else None}
    disputed = {(r["turn_id"], r["item_id"]) for r in found if r["step"] == "disputed"}
    adjudicated = task_labels(db, task, [ADJUDICATION])[ADJUDICATION] if disputed else {}
    return {
        "rule": "the ceiling reads only the base share (the items drawn at the plan's share, with the draw's two "
        "assessors); the items and assessors added because grades disagreed are reported here, apart: chosen "
        "for disagreement, their agreement is low by selection",
        "base_items": sum(r["step"] == "base" for r in found),
        "steps": steps,
        "disputed": len(disputed),
        "adjudicated": sum(item in adjudicated for item in disputed),
    }
