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
from assess.measures import budget_simulation as simulation
from assess.measures import ndcg_simulation as ndcg
from assess.services.audit import check_two, json_safe, known_sources, passage_pair, pick_roles

MEASURE = re.compile(r"(P|nDCG)@([1-9][0-9]*)")
SEQUENTIAL = "active-sequential"


def parse_measure(measure: str) -> tuple[str, int]:
    """("P" or "nDCG", k) of ``P@k`` / ``nDCG@k``."""
    found = MEASURE.fullmatch(str(measure))
    if not found:
        raise AssessError(
            f"--measure: expected P@k or nDCG@k with k a whole number >= 1 (e.g. P@5, nDCG@5), found {measure!r}"
        )
    return found.group(1), int(found.group(2))


def _population(runs, items, judge: np.ndarray, reference: np.ndarray, measure: str, *, threshold: float):
    """(W, truth, estimate, within) of ``measure`` over ``items``: the design's weights (R x N), every run's
    value under the reference's grades, the IPW-PPI estimator ``estimate(plan, idx)`` and the range widths are
    measured in (nDCG@k's [0, 1]; P@k's widths unclipped, as docs/estimates.md reports them)."""
    name, k = parse_measure(measure)
    if name == "P":
        _, W = active.precision_weights(runs, items, k)
        f, y = (judge >= threshold).astype(float), (reference >= threshold).astype(float)
        return W, W @ y, lambda plan, idx: simulation.ipw_ppi(W, f, y, plan, idx), None
    setup = ndcg.setup(runs, items, judge, reference, k)
    return ndcg.sensitivity(setup), setup.truth(), lambda plan, idx: ndcg.ipw_ndcg(setup, plan, idx), (0.0, 1.0)


def _runs(db) -> dict:
    from store.audit import ranked_runs

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
    return active.active_plan(budget, W, sigma)  # active and active-sequential


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
    level: float = 0.95,
    rounds: int = 4,
) -> dict[str, Any]:
    """``{"results": [{"policy", "budget", "coverage", "mean_width", "tau", "settled", "spent"}, ...]}`` over the
    items both sources graded: each policy reveals ``budget`` reference grades, ``repeats`` times, and every
    stored run's ``measure`` (P@k: judge = its grade at or above ``threshold``; nDCG@k: graded gains) is
    estimated with IPW-PPI at ``level``; ``active-sequential`` draws the active design in ``rounds`` nested
    looks and stops once every run pair is settled (:func:`assess.measures.budget_simulation.simulate`).
    Policies and budgets in the order given."""
    parse_measure(measure)
    unknown = [p for p in policies if p not in active.POLICIES]
    if unknown or not policies:
        raise AssessError(f"--policy: expected some of {', '.join(active.POLICIES)}, found {unknown or 'none'}")
    if not budgets:
        raise AssessError("--budget: give at least one budget")
    if isinstance(level, bool) or not isinstance(level, int | float) or not 0.5 <= level < 1:
        raise AssessError(f"--level: expected a confidence level in [0.5, 1) (e.g. 0.95), found {level!r}")
    reference, judge = pick_roles(db, reference, judge)
    check_two(db, reference, judge)
    f_labels, y_labels = passage_pair(db, reference, judge)
    items = sorted(set(f_labels) & set(y_labels))
    if len(items) < 2:
        raise AssessError(f"{reference!r} and {judge!r} graded {len(items)} passages in common: need at least 2")
    f_grades = np.array([float(f_labels[i]) for i in items])
    y_grades = np.array([float(y_labels[i]) for i in items])
    W, truth, estimate, within = _population(_runs(db), items, f_grades, y_grades, measure, threshold=threshold)
    second_grades = _second_grades(db, second, items, judge)
    rng = np.random.default_rng(seed)
    results = []
    for policy in policies:
        for budget in budgets:
            plan = _plans(policy, budget, W, f_grades, second_grades, threshold=threshold)
            found = simulation.simulate(
                estimate,
                truth,
                plan,
                repeats=repeats,
                rng=rng,
                alpha=1 - level,
                rounds=rounds if policy == SEQUENTIAL else 1,
                within=within,
            )
            results.append({"policy": policy, "budget": budget, **found})
    return json_safe({"results": results})


def active_sample(
    db,
    name: str,
    judge: str,
    *,
    budget: int,
    measure: str = "P@5",
    design: str = "active",
    second: str | None = None,
    assessor: str,
    seed: int = 0,
    threshold: float = 2,
    by: str | None,
) -> dict[str, Any]:
    """Draw the active design over the judge's graded passages for the stored runs' ``measure`` (P@k or nDCG@k;
    the weights at the judge's grades, :func:`_population`) and store it as sample
    ``name`` at the head of ``assessor``'s queue, each item with its inclusion probability (as `audit sample`:
    store.samples.create_sample; ``by``'s action in the history)."""
    from store.samples import SampledItem, create_sample

    if design != "active":
        raise AssessError(f"active_sample draws the active design, not {design!r}")
    known_sources(db, "passage", [judge], role="judge")
    grades = passage_pair(db, judge, judge)[0]
    items = sorted(grades)
    f_grades = np.array([float(grades[i]) for i in items])
    W = _population(_runs(db), items, f_grades, f_grades, measure, threshold=threshold)[0]
    sigma = active.uncertainty(f_grades, _second_grades(db, second, items, judge), threshold=threshold)
    drawn = active.active_plan(budget, W, sigma).draw(items, seed)
    rows = [SampledItem(t, p, drawn.probability[(t, p)], drawn.stratum[(t, p)], assessor) for t, p in drawn.items]
    details = {
        "judge": judge,
        "second": second,
        "seed": seed,
        "threshold": threshold,
        "measure": measure,
        "allocation": drawn.allocation,
    }
    summary = create_sample(
        db, name, task="passage", design="active", population=len(items), items=rows, details=details, by=by
    )
    summary.update(design="active", population=len(items), budget=budget, allocation=drawn.allocation, judge=judge)
    return json_safe(summary)
