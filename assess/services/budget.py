"""Human effort where it decides (issue 37): the budget simulator and the active sample's queue.

Both read the reference's and the judge's passage grades and the stored runs, and hand the numbers to
:mod:`assess.measures.active_sampling` / :mod:`assess.measures.budget_simulation`. Formulas and the measured
curve on iKAT 2024: docs/estimates.md#active-sampling.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from assess.errors import AssessError
from assess.measures import active_sampling as active
from assess.measures.budget_simulation import simulate_plan
from assess.services.audit import check_two, json_safe, known_sources, passage_pair, pick_roles
from store.audit import ranked_runs
from store.samples import SampledItem, create_sample

MEASURE = re.compile(r"P@([1-9][0-9]*)")


def precision_cutoff(measure: str) -> int:
    """k of ``P@k`` (the only measure the simulator and the active design take: it is linear in the labels)."""
    found = MEASURE.fullmatch(str(measure))
    if not found:
        raise AssessError(f"--measure: expected P@k with k a whole number >= 1 (e.g. P@5), found {measure!r}")
    return int(found.group(1))


def _runs(db) -> dict:
    runs = ranked_runs(db)
    if not runs:
        raise AssessError("the store has no runs: import some (python -m assess import run FILE) first")
    return runs


def _second_grades(db, second: str | None, items: list, judge: str) -> np.ndarray | None:
    if second is None:
        return None
    check_two(db, judge, second, roles=("judge", "second judge"))
    grades = passage_pair(db, second, second)[0]
    return np.array([float(grades.get(i, np.nan)) for i in items])


def _plans(policy: str, budget: int, W, f_grades, second, *, threshold: float) -> active.Plan:
    if policy == "uniform":
        return active.uniform_plan(budget, W.shape[1])
    if policy == "stratified":
        return active.stratified_plan(budget, f_grades, threshold=threshold)
    if policy == "disagreement":
        if second is None:
            raise AssessError("the disagreement policy needs a second judge (--second SOURCE)")
        return active.disagreement_plan(budget, f_grades, second)
    sigma = active.uncertainty(f_grades, second, threshold=threshold)
    return active.active_plan(budget, W, sigma)


def simulate_view(
    db,
    reference: str | None,
    judge: str | None,
    *,
    measure: str = "P@5",
    budgets=(100, 200, 400),
    policies=("uniform", "active"),
    repeats: int = 100,
    seed: int = 0,
    second: str | None = None,
    threshold: float = 2,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """``{"results": [{"policy", "budget", "coverage", "mean_width", "tau", "settled"}, ...]}`` over the items
    both sources graded: each policy reveals ``budget`` reference grades, ``repeats`` times, and every stored
    run's ``measure`` is estimated with IPW-PPI (judge = its grade at or above ``threshold``); see
    :func:`assess.measures.budget_simulation.simulate_plan`. Policies and budgets in the order given."""

    k = precision_cutoff(measure)
    unknown = [p for p in policies if p not in active.POLICIES]
    if unknown or not policies:
        raise AssessError(f"--policy: expected some of {', '.join(active.POLICIES)}, found {unknown or 'none'}")
    if not budgets:
        raise AssessError("--budget: give at least one budget")
    reference, judge = pick_roles(db, reference, judge)
    check_two(db, reference, judge)
    f_labels, y_labels = passage_pair(db, reference, judge)
    items = sorted(set(f_labels) & set(y_labels))
    if len(items) < 2:
        raise AssessError(f"{reference!r} and {judge!r} graded {len(items)} passages in common: need at least 2")
    _, W = active.precision_weights(_runs(db), items, k)
    f_grades = np.array([float(f_labels[i]) for i in items])
    f = (f_grades >= threshold).astype(float)
    y = np.array([float(y_labels[i] >= threshold) for i in items])
    second_grades = _second_grades(db, second, items, judge)
    rng = np.random.default_rng(seed)
    results = []
    for policy in policies:
        for budget in budgets:
            plan = _plans(policy, budget, W, f_grades, second_grades, threshold=threshold)
            found = simulate_plan(W, f, y, plan, repeats=repeats, rng=rng, alpha=alpha)
            results.append({"policy": policy, "budget": budget, **found})
    return json_safe({"results": results})


def active_sample(
    db,
    name: str,
    judge: str,
    *,
    budget: int,
    k: int = 5,
    design: str = "active",
    second: str | None = None,
    assessor: str,
    seed: int = 0,
    threshold: float = 2,
    by: str | None,
) -> dict[str, Any]:
    """Draw the active design over the judge's graded passages for the stored runs' P@k and store it as sample
    ``name`` at the head of ``assessor``'s queue, each item with its inclusion probability (as `audit sample`:
    store.samples.create_sample; ``by``'s action in the history)."""

    if design != "active":
        raise AssessError(f"active_sample draws the active design, not {design!r}")
    known_sources(db, "passage", [judge], role="judge")
    grades = passage_pair(db, judge, judge)[0]
    items = sorted(grades)
    _, W = active.precision_weights(_runs(db), items, k)
    f_grades = np.array([float(grades[i]) for i in items])
    sigma = active.uncertainty(f_grades, _second_grades(db, second, items, judge), threshold=threshold)
    drawn = active.active_plan(budget, W, sigma).draw(items, seed)
    rows = [SampledItem(t, p, drawn.probability[(t, p)], drawn.stratum[(t, p)], assessor) for t, p in drawn.items]
    details = {
        "judge": judge,
        "second": second,
        "seed": seed,
        "threshold": threshold,
        "measure": f"P@{k}",
        "allocation": drawn.allocation,
    }
    summary = create_sample(
        db, name, task="passage", design="active", population=len(items), items=rows, details=details, by=by
    )
    summary.update(design="active", population=len(items), budget=budget, allocation=drawn.allocation, judge=judge)
    return json_safe(summary)
