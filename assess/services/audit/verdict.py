"""The verdict, "can J replace R here?" (issue 25 item 6): the separate audits, run with their own defaults,
combined by the stated rules of assess/measures/verdict.py. Every figure is copied from the JSON of the
`audit` command named beside it, so the two always agree."""

from __future__ import annotations

from typing import Any

from assess.errors import AssessError
from assess.measures import alt_test as alt
from assess.measures import verdict as verdict_rules
from assess.measures.agreement import MIN_SHARED
from assess.measures.ppi import natural_key
from assess.services.audit.agreement import agreement_view, alt_test_view
from assess.services.audit.estimates import estimate_view
from assess.services.audit.probes import bias_view
from assess.services.audit.samples import sample_plan
from assess.services.audit.sources import audit_sources, check_two, json_safe, pick_roles, source_kinds
from assess.services.audit.systems import systems_view
from store.audit import task_labels

OVERLAP_SHARE = 0.1


def _command(*args: str) -> str:
    import shlex

    return shlex.join(["python", "-m", "assess", "audit", *args, "--json"])


def _overlap_how(db, reference: str, *, reference_human: bool) -> str:
    """How to get human overlap: a share (OVERLAP_SHARE) of the reference's turns, spread over them, given to a
    second assessor (to two assessors when the reference is not an assessor or the organizers: the human
    ceiling pairs only those kinds, as `audit agreement` does)."""

    turns = sorted({item[0] for item in task_labels(db, "passage", [reference])[reference]}, key=natural_key)
    share = max(1, round(len(turns) * OVERLAP_SHARE))
    picked = " ".join(turns[:: max(1, len(turns) // share)][:share])
    who = "a second assessor" if reference_human else "two assessors"
    why = "" if reference_human else f" (the human ceiling pairs assessors or organizers: {reference!r} is not one)"
    return (
        f"plan {OVERLAP_SHARE:.0%} overlap: have {who} judge the same {share} of the {len(turns)} turns "
        f"{reference!r} judged{why}, e.g. python -m assess overlap --name ceiling --assessor A --assessor B --turn "
        f"{picked} --share 1 (docs/judging.md#planned-overlap; the alternative annotator test wants 50-100 shared "
        "items per person), then ask for the verdict again"
    )


def verdict_view(
    db, reference: str | None, judge: str | None, *, epsilon: float | None = None, width: float | None = None
) -> dict[str, Any]:
    """Can ``judge`` replace ``reference`` on this store? Each criterion with its figures, threshold and pass /
    fail, or what is missing and how to get it, and the overall verdict (replace, pre-filter or assist only) by
    the rule of :mod:`assess.measures.verdict`: item agreement against the human ceiling (`audit agreement` of
    the reference, the judge and every other human source), the alternative annotator test (`audit alt-test`,
    the reference and the other human sources as the humans, margin ``epsilon``), system-level agreement
    (`audit systems`), bias (`audit bias`) and, unless the verdict is replace, the corrected-estimate
    alternative (`audit plan` for the human budget reaching ``width``, `audit estimate` for the runs' P@k).
    Passage grades; each command with its defaults."""

    reference, judge = pick_roles(db, reference, judge)
    check_two(db, reference, judge)
    epsilon = float(alt.EPSILON if epsilon is None else epsilon)
    width = verdict_rules.WIDTH if width is None else width
    if isinstance(width, bool) or not isinstance(width, int | float) or not 0 < width <= 1:
        raise AssessError(f"the interval width asked is a number in (0, 1], found {width!r}")
    names = audit_sources(db, "passage")
    kinds = source_kinds(db, names)
    others = [n for n in names if kinds[n] == "human" and n not in (reference, judge)]
    humans = [reference, *others]
    how = _overlap_how(db, reference, reference_human=kinds[reference] == "human")

    chosen = [reference, judge, *others]
    matrix = agreement_view(db, "passage", chosen, threshold=2)
    agreement_command = _command("agreement", *(arg for s in chosen for arg in ("--source", s)))
    criteria = {
        "agreement": verdict_rules.item_agreement(
            matrix, reference, judge, agreement_command, how=how, judge_human=kinds[judge] == "human"
        )
    }

    alt_command = _command(
        "alt-test", *(arg for h in humans for arg in ("--human", h)), "--judge", judge, "--epsilon", repr(epsilon)
    )
    if len(humans) < 2:
        missing = f"the only human source is the reference {reference!r}: the test needs 2 or more humans; {how}"
        criteria["alt_test"] = verdict_rules.alternative_annotator(None, alt_command, missing=missing)
    else:
        report = alt_test_view(db, humans, judge, epsilon=epsilon)
        missing = None if report["computable"] else f"{report['reason']}: {how}"
        criteria["alt_test"] = verdict_rules.alternative_annotator(report, alt_command, missing=missing)

    systems_command = _command("systems", "--reference", reference, "--other", judge)
    try:
        systems = systems_view(db, reference, judge)
    except AssessError as exc:
        systems, missing = None, f"{exc} (python -m assess import run FILE --name RUN, two runs or more)"
    else:
        if systems["n_runs"] < 2 or not systems["n_topics"]:
            missing = (
                f"{systems['n_runs']} run(s) over {systems['n_topics']} topic(s) that both sources judged: the "
                "rankings need 2 or more runs on topics both judged (python -m assess import run FILE --name RUN)"
            )
            systems = None
    criteria["systems"] = verdict_rules.system_level(systems, systems_command, missing=missing)

    bias_command = _command("bias", "--reference", reference, "--judge", judge)
    criteria["bias"] = verdict_rules.bias(bias_view(db, reference, judge), bias_command)

    overall = verdict_rules.combine(criteria)
    criteria["estimate"] = _corrected_alternative(
        db, reference, judge, width, needed=overall["verdict"] != verdict_rules.REPLACE
    )
    return json_safe(
        {
            "reference": reference,
            "judge": judge,
            "task": "passage",
            "humans": humans,
            **overall,
            "settings": {
                "statistic": verdict_rules.STATISTIC,
                "threshold": 2,
                "bootstrap": 1000,
                "seed": 0,
                "epsilon": epsilon,
                "q": alt.Q,
                "min_items": alt.MIN_ITEMS,
                "min_shared": MIN_SHARED,  # the human ceiling's pairs
                "min_humans": alt.MIN_HUMANS,
                "min_items_shared": verdict_rules.MIN_ITEMS,  # judge vs reference, and bias
                "min_runs": verdict_rules.MIN_RUNS,
                "min_topics": verdict_rules.MIN_TOPICS,
                "measure": "nDCG@5",
                "correction": "holm",
                "tau": verdict_rules.TAU,
                "tau_ap": verdict_rules.TAU_AP,
                "significant_kept": verdict_rules.SIGNIFICANT_KEPT,
                "bias_margin": verdict_rules.BIAS_MARGIN,
                "width": width,
                "budgets": list(verdict_rules.BUDGETS),
                "estimate": "P@5 at grade >= 2 (PPI++)",
            },
            "criteria": list(criteria.values()),
        }
    )


def _corrected_alternative(db, reference: str, judge: str, width: float, *, needed: bool) -> dict[str, Any]:
    budgets = [arg for b in verdict_rules.BUDGETS for arg in ("--budget", str(b))]
    commands = {
        "plan": _command("plan", "--judge", judge, *budgets),
        "estimate": _command("estimate", "--reference", reference, "--judge", judge, "--measure", "P@k"),
    }
    if not needed:
        return verdict_rules.corrected_alternative(None, None, commands, judge=judge, width=width, needed=False)
    plan = sample_plan(db, judge, budgets=verdict_rules.BUDGETS)
    refused = None
    try:
        estimate = estimate_view(db, reference, judge, measures=("P@k",))
    except AssessError as exc:
        estimate, refused = None, f"no corrected estimate from the reference's labels: {exc}"
    return verdict_rules.corrected_alternative(
        plan, estimate, commands, judge=judge, width=width, needed=True, refused=refused
    )
