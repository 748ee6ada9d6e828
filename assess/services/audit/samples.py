"""Budgeted human samples: the interval width a budget should reach before anyone judges, and drawing a
sample of the judge's passages into an assessor's queue."""

from __future__ import annotations

from typing import Any

from assess.errors import AssessError
from assess.measures.sampling import DESIGNS, disagreement_sample, expected_width, stratified_sample
from assess.services.audit.sources import (
    audit_sources,
    check_two,
    default_roles,
    json_safe,
    known_sources,
    passage_pair,
)
from store.samples import SampledItem
from store.samples import create_sample as store_sample


def _designed(db, judge: str, design: str, second: str | None) -> tuple[dict, dict | None]:
    if design not in DESIGNS:
        raise AssessError(f"unknown design {design!r}; expected one of {', '.join(DESIGNS)}")
    if design == "disagreement" and second is None:
        raise AssessError("the disagreement design needs a second judge (--second SOURCE)")
    if second is not None:
        check_two(db, judge, second, roles=("judge", "second judge"))
        f, g = passage_pair(db, second, judge)
        return f, g
    known_sources(db, "passage", [judge], role="judge")
    return passage_pair(db, judge, judge)[0], None


def _default_judge(db) -> str:
    """The judge a page or command opens on when none is named: the one :func:`default_roles` picks (the
    only source when there is one)."""
    names = audit_sources(db, "passage")
    if len(names) == 1:
        return names[0]
    return default_roles(db, names)[1]


def _budget(budget) -> int:
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise AssessError(f"a budget is a whole number of items >= 1, found {budget!r}")
    return budget


def sample_plan(
    db,
    judge: str | None,
    *,
    budgets=(100, 200, 500, 1000),
    design: str = "stratified",
    second: str | None = None,
    threshold: float = 2,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Expected interval width of the share at ``threshold`` for each budget, before anyone judges
    (assess.measures.sampling.expected_width: uniform human-only, uniform PPI, stratified by the judge's
    grade, and by disagreement with ``second`` when given). Budgets above the judge's item count are skipped."""

    budgets = [_budget(b) for b in budgets]
    if judge is None:
        judge = _default_judge(db)
    f, g = _designed(db, judge, design, second)
    usable = [b for b in budgets if b <= len(f)]
    rows = expected_width(usable, f, second=g, threshold=threshold, alpha=alpha) if usable else []
    return json_safe(
        {
            "judge": judge,
            "second": second,
            "design": design,
            "population": len(f),
            "threshold": threshold,
            "alpha": alpha,
            "prior": "P(human >= t | judge grade g) = 1 / (1 + exp(-(g - t + 0.5))) (docs/estimates.md)",
            "rows": rows,
            "skipped": [b for b in budgets if b > len(f)],
        }
    )


def create_sample(
    db,
    name: str,
    judge: str,
    *,
    budget: int,
    design: str = "stratified",
    second: str | None = None,
    assessor: str,
    seed: int = 0,
    threshold: float = 2,
    by: str | None,
) -> dict[str, Any]:
    """Draw ``budget`` of the judge's graded passages (stratified by its grade with Neyman allocation, or by
    disagreement with ``second``) and store them as sample ``name`` at the head of ``assessor``'s queue,
    each with its inclusion probability (store.samples.create_sample; ``by``'s action in the history)."""

    _budget(budget)
    f, g = _designed(db, judge, design, second)
    if budget > len(f):
        raise AssessError(f"the budget {budget} is larger than the {len(f)} passages {judge!r} graded")
    if design == "disagreement":
        drawn = disagreement_sample(budget, f, g, seed=seed)
    else:
        drawn = stratified_sample(budget, f, threshold=threshold, seed=seed)
    items = [
        SampledItem(turn, passage, drawn.probability[(turn, passage)], str(drawn.stratum[(turn, passage)]), assessor)
        for turn, passage in drawn.items
    ]
    allocation = {str(h): v for h, v in drawn.allocation.items()}
    details = {"judge": judge, "second": second, "seed": seed, "threshold": threshold, "allocation": allocation}
    summary = store_sample(
        db, name, task="passage", design=design, population=len(f), items=items, details=details, by=by
    )
    summary.update(design=design, population=len(f), budget=budget, allocation=allocation, judge=judge)
    return json_safe(summary)
