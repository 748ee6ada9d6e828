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
from store.audit import ranked_runs
from store.samples import SampledItem, create_sample, extend_sample, sample_items, samples

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
    sequential: bool = False,
    level: float = 0.95,
    rounds: int = 4,
    reference: str | None = None,
    by: str | None,
) -> dict[str, Any]:
    """Draw the active design over the judge's graded passages for the stored runs' ``measure`` (P@k or nDCG@k;
    the weights at the judge's grades, :func:`_population`) and store it as sample
    ``name`` at the head of ``assessor``'s queue, each item with its inclusion probability (as `audit sample`:
    store.samples.create_sample; ``by``'s action in the history). ``sequential``: :func:`sequential_round`."""
    if design != "active":
        raise AssessError(f"active_sample draws the active design, not {design!r}")
    if sequential:
        options = {"judge": judge, "budget": budget, "measure": measure, "second": second, "seed": seed}
        options |= {"threshold": threshold, "level": level, "rounds": rounds}
        return sequential_round(db, name, reference, assessor=assessor, by=by, **options)
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


def _sequential_draw(db, details: dict) -> tuple[list, np.ndarray, Any, list]:
    """(items, judge grades, the estimator's factory, per look the drawn indices per stratum) of a sequential
    active sample's stored parameters: the plan drawn again, each stratum in one seeded order whose prefixes
    are the looks (:func:`assess.measures.budget_simulation.looks`)."""
    judge, measure, threshold = details["judge"], details["measure"], details["threshold"]
    known_sources(db, "passage", [judge], role="judge")
    grades = passage_pair(db, judge, judge)[0]
    items = sorted(grades)
    f_grades = np.array([float(grades[i]) for i in items])
    runs = _runs(db)
    W = _population(runs, items, f_grades, f_grades, measure, threshold=threshold)[0]
    sigma = active.uncertainty(f_grades, _second_grades(db, details["second"], items, judge), threshold=threshold)
    plan = active.active_plan(details["sequential"]["budget"], W, sigma)
    rng = np.random.default_rng(details["seed"])
    orders = [members[rng.permutation(len(members))[:n]] for members, n in zip(plan.members, plan.sizes)]
    looks = simulation.looks(plan, details["sequential"]["rounds"])
    drawn = [[order[:n] for order, n in zip(orders, look.sizes)] for look in looks]

    def estimator(reference_grades: np.ndarray):
        return _population(runs, items, f_grades, reference_grades, measure, threshold=threshold)[2]

    return items, f_grades, estimator, list(zip(looks, drawn))


def sequential_round(
    db,
    name: str,
    reference: str | None,
    *,
    judge: str,
    budget: int,
    measure: str,
    second: str | None,
    seed: int,
    threshold: float,
    level: float,
    rounds: int,
    assessor: str,
    by: str | None,
) -> dict[str, Any]:
    """A sequential active sample: the first call stores look 1 of ``rounds`` nested looks of the active design
    for ``budget`` items; each later call (same name, ``reference`` = the source whose grades people gave)
    estimates every run pair's difference from the judged look (IPW-PPI, level 1 - (1 - level)/rounds: a
    Bonferroni split over the looks) and either stops, every pair settled, or adds the next look's items and
    raises every stratum's inclusion probability to the nested sample's (store.samples.extend_sample)."""
    if isinstance(level, bool) or not isinstance(level, int | float) or not 0.5 <= level < 1:
        raise AssessError(f"--level: expected a confidence level in [0.5, 1) (e.g. 0.95), found {level!r}")
    stored = {s["name"]: s for s in samples(db)}.get(name)
    if stored is None:
        details = {"judge": judge, "second": second, "seed": seed, "threshold": threshold, "measure": measure}
        details["sequential"] = {"budget": budget, "rounds": rounds, "level": level, "round": 1}
        items, _, _, looks = _sequential_draw(db, details)
        look, drawn = looks[0]
        rows = [
            SampledItem(*items[int(i)], n / len(members), h, assessor)
            for h, members, n, picked in zip(look.names, look.members, look.sizes, drawn)
            for i in picked
        ]
        details["allocation"] = _allocation(look)
        summary = create_sample(
            db, name, task="passage", design="active", population=len(items), items=rows, details=details, by=by
        )
        return json_safe(summary | {"design": "active", "population": len(items), "budget": budget, "round": 1,
                                    "rounds": rounds, "allocation": details["allocation"], "judge": judge,
                                    "status": "drawn"})  # fmt: skip
    details = stored["details"]
    if stored["design"] != "active" or "sequential" not in details:
        raise AssessError(f"a sample named {name!r} exists already and is not a sequential active sample")
    if judge != details["judge"]:
        raise AssessError(f"sample {name!r} was drawn for judge {details['judge']!r}, not {judge!r}")
    if reference is None:
        raise AssessError(f"sample {name!r} exists: give --reference, the source whose grades people gave it")
    items, _, estimator, looks = _sequential_draw(db, details)
    now = details["sequential"]["round"]
    look, drawn = looks[now - 1]
    index = np.concatenate(drawn)
    held = {(r["turn_id"], r["item_id"]) for r in sample_items(db, name)}
    if held != {items[int(i)] for i in index}:
        raise AssessError(
            f"sample {name!r} no longer matches its design: the judge's grades or the stored runs changed since "
            "it was drawn; draw a new sample"
        )
    graded = passage_pair(db, reference, reference)[0]
    missing = sorted(held - set(graded))
    if missing:
        raise AssessError(
            f"{len(missing)} of the {len(held)} items of round {now} have no grade from {reference!r} yet "
            f"(first: {missing[0][0]} {missing[0][1]}): judge them before the next round"
        )
    y = np.zeros(len(items))
    y[index] = [float(graded[items[int(i)]]) for i in index]
    meta = details["sequential"]
    alpha = (1 - meta["level"]) / meta["rounds"]
    runs, pairs = estimator(y)(look, index[None, :])
    half = simulation.quantile(pairs.sampled, alpha) * np.sqrt(pairs.var)
    apart = (pairs.estimable & (np.abs(pairs.value) > half))[:, 0]
    names = sorted(_runs(db))
    r_idx, s_idx = np.triu_indices(len(names), k=1)
    report = {"sample": name, "design": "active", "judge": details["judge"], "reference": reference,
              "round": now, "rounds": meta["rounds"], "level": meta["level"], "budget": meta["budget"],
              "pairs": len(r_idx), "settled": int(apart.sum()),
              "unsettled": [[names[r], names[s]] for r, s, a in zip(r_idx, s_idx, apart) if not a]}  # fmt: skip
    if apart.all() or now == meta["rounds"]:
        status = "every pair settled" if apart.all() else "budget spent"
        return json_safe(report | {"items": len(held), "added": 0, "status": status, "allocation": _allocation(look)})
    nxt, drawn_next = looks[now]
    new = [
        SampledItem(*items[int(i)], n / len(members), h, assessor)
        for h, members, n, picked in zip(nxt.names, nxt.members, nxt.sizes, drawn_next)
        for i in picked
        if items[int(i)] not in held
    ]
    inclusion = {h: n / len(members) for h, members, n in zip(nxt.names, nxt.members, nxt.sizes)}
    details = details | {"sequential": meta | {"round": now + 1}, "allocation": _allocation(nxt)}
    added = extend_sample(db, name, new, inclusion=inclusion, details=details, expected=len(held), by=by)
    return json_safe(report | added | {"round": now + 1, "status": "next round drawn", "allocation": _allocation(nxt),
                                       "assessors": [assessor]})  # fmt: skip


def _allocation(plan: active.Plan) -> dict[str, dict]:
    return {
        h: {"N": len(members), "n": n, "probability": n / len(members)}
        for h, members, n in zip(plan.names, plan.members, plan.sizes)
    }
