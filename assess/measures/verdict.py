"""The judge verdict: can judge J replace reference R on this collection? Pure rules over the reports of
the separate audits (agreement matrix, alternative annotator test, system-level agreement, bias probes,
budget plan), each a plain dict as ``python -m assess audit ... --json`` prints it.

Each criterion returns ``{"key", "name", "status", "passes", "rule", "figures", "commands", "missing"}``:

- ``status``: 'pass', 'fail', 'missing' (cannot be computed here; ``missing`` says what is lacking and how
  to get it), 'too few' (computed, figures shown, on fewer than the criterion's minimum sample: no pass)
  or, for the corrected-estimate alternative, 'alternative' / 'not needed';
- ``figures``: ``[{"name", "value", "from", "path", "low", "high", "low_path", "high_path", "threshold",
  "passes"}]``: every number is copied from the report of the command ``commands[from]`` at the JSON path
  ``path`` (a list of keys and list indices), so it equals that command's figure by construction, and a
  test can check it.

The rules and their defaults (docs/llm.md#the-verdict):

- item agreement: passes when the upper end of the judge-vs-reference interval of ``STATISTIC`` reaches
  the human ceiling's point estimate (the judge is not shown to agree less with the reference than people
  agree with each other);
- alternative annotator test: passes when the winning rate omega >= 0.5 (assess.measures.alt_test);
- system level: Kendall tau >= TAU and tau_AP >= TAU_AP (the usual 0.9 of "equivalent rankings",
  Voorhees 2000), no significant run pair flipped, and at least SIGNIFICANT_KEPT of the pairs significant
  under the reference significant in the same direction under the judge (nothing to keep: no condition);
- bias: passes when no interval of the mean difference judge - reference (overall, per turn depth, per
  personal / non-personal turn; groups of one item have none) lies wholly outside [-BIAS_MARGIN, BIAS_MARGIN];
- minimum samples: a criterion computed on fewer than its minimum is 'too few' (its figures shown, no pass):
  item agreement on fewer than MIN_ITEMS items both labelled (the ceiling pools only human pairs sharing
  assess.measures.agreement.MIN_SHARED items); the alternative annotator test with fewer than MIN_HUMANS tested
  humans (Calderon et al. ask for three: with two, each human is compared with one other person); the system
  level over fewer than MIN_RUNS runs or MIN_TOPICS topics (Kendall tau over 3 runs takes 4 values); bias on
  fewer than MIN_ITEMS shared graded passages;
- overall (:func:`combine`): **replace** only when every criterion passes (item agreement, the alternative
  annotator test, the system level and bias, each on its minimum sample); else **pre-filter** when item
  agreement, the alternative annotator test or the system level passes; else **assist only**.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from assess.measures.alt_test import MIN_HUMANS, PASS_OMEGA

STATISTIC = "kappa_quadratic"
TAU = 0.9
TAU_AP = 0.9
SIGNIFICANT_KEPT = 0.8
BIAS_MARGIN = 0.25
WIDTH = 0.1
MIN_ITEMS = 30
MIN_RUNS = 5
MIN_TOPICS = 10
BUDGETS = (25, 50, 100, 200, 300, 500, 1000, 2000, 3000, 5000, 10000)

REPLACE, PRE_FILTER, ASSIST = "replace", "pre-filter", "assist only"
RULE = (
    "replace: item agreement, the alternative annotator test, the system level and bias all pass, each on its "
    f"minimum sample ({MIN_ITEMS} items both labelled, {MIN_HUMANS} humans tested, {MIN_RUNS} runs over "
    f"{MIN_TOPICS} topics); pre-filter: otherwise, when item agreement, the alternative annotator test or the "
    "system level passes; assist only: otherwise (the judge's labels only beside a person's, or corrected by a "
    "human sample: the corrected-estimate alternative)"
)


def at(report: Any, path: Sequence) -> Any:
    """The value at ``path`` (keys and list indices) in a JSON report."""
    for step in path:
        report = report[step]
    return report


def figure(
    name: str,
    report: Mapping,
    source: str,
    path: Sequence,
    *,
    ci: list | tuple | None = None,
    threshold: str | None = None,
    passes: bool | None = None,
) -> dict[str, Any]:
    """One figure copied from ``report`` (the JSON of command ``source``) at ``path``; ``ci`` the paths of its
    interval's ends (or of a two-element list)."""
    entry: dict[str, Any] = {"name": name, "value": at(report, path), "from": source, "path": list(path)}
    if ci is not None:
        if isinstance(ci, tuple):  # two paths: the low and the high end
            low_path, high_path = list(ci[0]), list(ci[1])
        elif at(report, ci) is not None:  # a path to [low, high]
            low_path, high_path = [*ci, 0], [*ci, 1]
        else:  # no interval (too few items, or no bootstrap)
            low_path = high_path = None
        entry.update(
            low=None if low_path is None else at(report, low_path),
            high=None if high_path is None else at(report, high_path),
            low_path=low_path,
            high_path=high_path,
        )
    if threshold is not None:
        entry["threshold"] = threshold
    if passes is not None:
        entry["passes"] = passes
    return entry


def criterion(
    key: str, name: str, rule: str, *, commands: Mapping[str, str] | None = None, figures=(), passes=None, missing=None
) -> dict[str, Any]:
    """A criterion's record; ``status`` from ``passes`` (None: missing)."""
    if missing is not None:
        status = "missing"
    else:
        status = "pass" if passes else "fail"
    return {
        "key": key,
        "name": name,
        "status": status,
        "passes": None if missing is not None else bool(passes),
        "rule": rule,
        "figures": list(figures),
        "commands": dict(commands or {}),
        "missing": missing,
    }


def too_few(entry: dict[str, Any], what: str) -> dict[str, Any]:
    """``entry`` computed on fewer than its minimum sample: status 'too few', no pass, ``what`` says which."""
    entry.update(status="too few", passes=None, missing=what)
    return entry


def _find_pair(matrix: Mapping, a: str, b: str) -> int | None:
    for index, pair in enumerate(matrix["pairs"]):
        if {pair["a"], pair["b"]} == {a, b}:
            return index
    return None


AGREEMENT_RULE = (
    f"pass when the upper end of the 95% bootstrap interval of the judge-vs-reference {STATISTIC} reaches the "
    "human ceiling's point estimate (the same statistic pooled over every pair of two human sources, kinds "
    "assessor and organizers, on the items both labelled)"
)


def item_agreement(
    matrix: Mapping, reference: str, judge: str, command: str, *, how: str, judge_human: bool = False
) -> dict[str, Any]:
    """Criterion (a): the judge's agreement with the reference against the human ceiling (``matrix``: the
    agreement matrix of the reference, the judge and the other human sources); ``how``: how to get a ceiling.
    A judge of a human kind (``judge_human``) would be part of its own ceiling: missing."""
    name = "item agreement against the human ceiling"
    commands = {"agreement": command}
    if judge_human:
        missing = (
            f"the judge {judge!r} is itself a human source (an assessor or the organizers), so the human ceiling "
            "would hold its own pairs: compare an LLM, crowd or imported source with the people"
        )
        return criterion("agreement", name, AGREEMENT_RULE, commands=commands, missing=missing)
    index = _find_pair(matrix, reference, judge)
    if index is None:
        missing = f"the reference {reference!r} and the judge {judge!r} share no labelled item: have the judge " + (
            "label the reference's items (python -m assess prejudge ...)"
        )
        return criterion("agreement", name, AGREEMENT_RULE, commands=commands, missing=missing)
    judge_fig = figure(
        f"{STATISTIC}, judge vs reference",
        matrix,
        "agreement",
        ["pairs", index, STATISTIC],
        ci=["pairs", index, "ci", STATISTIC],
    )
    shared = figure("items both labelled", matrix, "agreement", ["pairs", index, "n"])
    ceiling = matrix.get("ceiling")
    if not ceiling or ceiling.get(STATISTIC) is None:
        minimum = matrix.get("ceiling_min_shared", 1)
        below = "; ".join(f"{a} and {b} share {n}" for a, b, n in matrix.get("ceiling_below_minimum") or [])
        missing = (
            "no two human sources share "
            + ("an item" if minimum <= 1 else f"{minimum} items or more")
            + ", so there is no human ceiling"
            + (f" ({below})" if below else "")
            + f": {how}"
        )
        return criterion(
            "agreement", name, AGREEMENT_RULE, commands=commands, figures=[judge_fig, shared], missing=missing
        )
    ceiling_fig = figure(
        f"{STATISTIC}, human ceiling", matrix, "agreement", ["ceiling", STATISTIC], ci=["ceiling", "ci", STATISTIC]
    )
    ceiling_n = figure("items in the human ceiling", matrix, "agreement", ["ceiling", "n"])
    high = judge_fig.get("high")
    if high is None:  # no interval (bootstrap off or one item): the point estimate itself
        high = judge_fig["value"]
    passes = high is not None and high >= ceiling_fig["value"]
    judge_fig.update(threshold=f"interval reaches {ceiling_fig['value']:.3f} (the ceiling)", passes=passes)
    found = criterion(
        "agreement",
        name,
        AGREEMENT_RULE,
        commands=commands,
        figures=[judge_fig, shared, ceiling_fig, ceiling_n],
        passes=passes,
    )
    if shared["value"] < MIN_ITEMS:
        return too_few(found, f"the judge and the reference share {shared['value']} items, fewer than {MIN_ITEMS}")
    return found


ALT_TEST_RULE = f"pass when the winning rate omega >= {PASS_OMEGA} (the alternative annotator test, epsilon stated)"


def alternative_annotator(report: Mapping | None, command: str, *, missing: str | None = None) -> dict[str, Any]:
    """Criterion (b): the alternative annotator test's outcome (``report``: `audit alt-test --json`); missing
    with ``missing`` (what is lacking and how to get it) when it could not be run or computed."""
    name = "alternative annotator test"
    commands = {"alt-test": command}
    if report is None or not report["computable"]:
        return criterion("alt_test", name, ALT_TEST_RULE, commands=commands if report else {}, missing=missing)
    figures = [
        figure(
            "winning rate omega",
            report,
            "alt-test",
            ["omega"],
            threshold=f">= {PASS_OMEGA}",
            passes=report["omega"] >= PASS_OMEGA,
        ),
        figure("advantage probability rho", report, "alt-test", ["rho"]),
        figure("margin epsilon", report, "alt-test", ["epsilon"]),
    ]
    for i, row in enumerate(report["annotators"]):
        figures.append(
            figure(f"corrected p, judge vs {row['annotator']}", report, "alt-test", ["annotators", i, "corrected_p"])
        )
    found = criterion(
        "alt_test", name, ALT_TEST_RULE, commands=commands, figures=figures, passes=report["omega"] >= PASS_OMEGA
    )
    tested = len(report["annotators"])
    if tested < MIN_HUMANS:
        return too_few(
            found,
            f"{tested} human(s) tested, fewer than {MIN_HUMANS}: with two, each is compared with one other person "
            f"(have a third assessor judge the shared items, python -m assess overlap --copies 3 ...)",
        )
    return found


SYSTEMS_RULE = (
    f"pass when Kendall tau >= {TAU} and tau_AP >= {TAU_AP} over the stored runs, no run pair significant under "
    f"the reference flips, and at least {SIGNIFICANT_KEPT:.0%} of the pairs significant under the reference stay "
    "significant in the same direction under the judge"
)


def system_level(report: Mapping | None, command: str, *, missing: str | None = None) -> dict[str, Any]:
    """Criterion (c): the runs ranked under the judge's qrels as under the reference's (`audit systems --json`)."""
    name = "system-level agreement"
    commands = {"systems": command}
    if report is None:
        return criterion("systems", name, SYSTEMS_RULE, missing=missing)
    tau = figure(
        "Kendall tau",
        report,
        "systems",
        ["correlations", "kendall_tau", "value"],
        ci=["correlations", "kendall_tau", "ci"],
    )
    tau_ap = figure(
        "tau_AP", report, "systems", ["correlations", "tau_ap", "value"], ci=["correlations", "tau_ap", "ci"]
    )
    tau["passes"] = tau["value"] is not None and tau["value"] >= TAU
    tau["threshold"] = f">= {TAU}"
    tau_ap["passes"] = tau_ap["value"] is not None and tau_ap["value"] >= TAU_AP
    tau_ap["threshold"] = f">= {TAU_AP}"
    sig = report["significance"]
    significant = figure(
        "run pairs significant under the reference", report, "systems", ["significance", "significant_reference"]
    )
    same = figure("of them significant the same way under the judge", report, "systems", ["significance", "same"])
    same["threshold"] = f">= {SIGNIFICANT_KEPT:.0%} of {sig['significant_reference']}"
    same["passes"] = sig["same"] >= SIGNIFICANT_KEPT * sig["significant_reference"]
    flipped = figure("flipped", report, "systems", ["significance", "flipped"], threshold="0")
    flipped["passes"] = sig["flipped"] == 0
    runs = figure("runs", report, "systems", ["n_runs"])
    topics = figure("topics", report, "systems", ["n_topics"])
    figures = [tau, tau_ap, significant, same, flipped, runs, topics]
    passes = all(f["passes"] for f in (tau, tau_ap, same, flipped))
    found = criterion("systems", name, SYSTEMS_RULE, commands=commands, figures=figures, passes=passes)
    if report["n_runs"] < MIN_RUNS or report["n_topics"] < MIN_TOPICS:
        return too_few(
            found,
            f"{report['n_runs']} runs over {report['n_topics']} topics both judged, fewer than {MIN_RUNS} runs "
            f"over {MIN_TOPICS} topics: a ranking correlation of so few says little (import more runs)",
        )
    return found


BIAS_RULE = (
    f"pass when no 95% interval of the mean difference judge - reference (overall, per turn depth, per personal "
    f"and non-personal turn) lies wholly outside [-{BIAS_MARGIN}, {BIAS_MARGIN}] grade points (a group of one "
    "item has no interval and is not tested)"
)


def _within(low: float | None, high: float | None) -> bool | None:
    if low is None or high is None:
        return None
    return high >= -BIAS_MARGIN and low <= BIAS_MARGIN


def _group_name(probe: str, group: Any) -> str:
    if probe == "personal":
        return "personal turns" if group else "non-personal turns"
    return f"turn depth {group}"


def bias(report: Mapping, command: str) -> dict[str, Any]:
    """Criterion (d): mean difference judge - reference with intervals, by turn depth and personal turn
    (`audit bias --json`)."""
    name = "bias (judge - reference)"
    commands = {"bias": command}
    if not report["overall"]["n"]:
        missing = "the reference and the judge share no graded passage: have the judge grade the reference's items"
        return criterion("bias", name, BIAS_RULE, commands=commands, missing=missing)
    threshold = f"interval reaches [-{BIAS_MARGIN}, {BIAS_MARGIN}]"
    figures = [figure("mean difference, all", report, "bias", ["overall", "mean_diff"], ci=["overall", "ci"])]
    for probe in ("depth", "personal"):
        for i, group in enumerate((report.get(probe) or {}).get("groups") or []):
            figures.append(
                figure(
                    f"mean difference, {_group_name(probe, group['group'])}",
                    report,
                    "bias",
                    [probe, "groups", i, "mean_diff"],
                    ci=[probe, "groups", i, "ci"],
                )
            )
    for entry in figures:
        within = _within(entry.get("low"), entry.get("high"))
        if within is not None:
            entry.update(threshold=threshold, passes=within)
    passes = all(entry.get("passes", True) for entry in figures)
    found = criterion("bias", name, BIAS_RULE, commands=commands, figures=figures, passes=passes)
    if report["overall"]["n"] < MIN_ITEMS:
        return too_few(found, f"{report['overall']['n']} graded passages shared, fewer than {MIN_ITEMS}")
    return found


ESTIMATE_RULE = (
    "when the judge cannot replace the reference: estimate with the judge's labels on every item and a person's "
    "on a sample (PPI, docs/estimates.md); the human budget is the smallest whose expected 95% interval width of "
    "the share of passages at or above the threshold, stratified by the judge's grade, is at most the width asked"
)


def corrected_alternative(
    plan: Mapping | None,
    estimate: Mapping | None,
    commands: Mapping[str, str],
    *,
    judge: str,
    width: float,
    needed: bool,
    refused: str | None = None,
) -> dict[str, Any]:
    """Item (e): the corrected-estimate alternative, when ``needed`` (the verdict is not replace): the human
    budget from ``plan`` (`audit plan --json`) and the runs' corrected P@k from ``estimate`` (`audit estimate
    --json`, None when the reference's labels cannot be a sample: ``refused`` says why; how to draw one is
    added)."""
    name = "corrected-estimate alternative (PPI)"
    base = criterion("estimate", name, ESTIMATE_RULE, commands=commands, passes=True)
    base.update(status="alternative", passes=None, width=width, refused=None)
    if not needed or plan is None:
        base.update(status="not needed", figures=[])
        return base
    figures = []
    index = next(
        (i for i, row in enumerate(plan["rows"]) if row.get("stratified") is not None and row["stratified"] <= width),
        None,
    )
    if index is None:
        largest = plan["rows"][-1]["budget"] if plan["rows"] else 0
        base["missing"] = (
            f"no budget up to {largest} (of the judge's {plan['population']} passages) reaches an expected width "
            f"of {width}: ask for a wider interval (--width) or have every item graded"
        )
        budget = largest or 2
    else:
        budget = plan["rows"][index]["budget"]
        figures.append(figure("human budget (items)", plan, "plan", ["rows", index, "budget"]))
        figures.append(
            figure("expected interval width", plan, "plan", ["rows", index, "stratified"], threshold=f"<= {width}")
        )
    if refused is not None:
        base["refused"] = (
            f"{refused}; draw a sample instead: python -m assess audit sample --name verdict --judge {judge} "
            f"--budget {budget} --assessor NAME, have NAME grade it, then python -m assess audit estimate "
            f"--reference NAME --judge {judge} --sample verdict"
        )
    if estimate is not None:
        figures.append(figure("reference labels in the sample", estimate, "estimate", ["design", "graded"]))
        for run, entry in (estimate.get("P@k") or {}).items():
            est = entry["estimate"]
            if est and est.get("estimable"):
                figures.append(
                    figure(
                        f"P@{estimate['k']} of {run}, corrected",
                        estimate,
                        "estimate",
                        ["P@k", run, "estimate", "ppi", "value"],
                        ci=(["P@k", run, "estimate", "ppi", "low"], ["P@k", run, "estimate", "ppi", "high"]),
                    )
                )
    base["figures"] = figures
    return base


def combine(criteria: Mapping[str, Mapping]) -> dict[str, Any]:
    """The overall verdict from the criteria (keys agreement, alt_test, systems, bias): see :data:`RULE`."""
    status = {key: criteria[key]["status"] for key in ("agreement", "alt_test", "systems", "bias")}
    if all(value == "pass" for value in status.values()):
        verdict = REPLACE
        reason = "every criterion passes on its minimum sample"
    elif any(status[k] == "pass" for k in ("agreement", "alt_test", "systems")):
        verdict = PRE_FILTER
        passed = [criteria[k]["name"] for k in ("agreement", "alt_test", "systems") if status[k] == "pass"]
        reason = "passes " + ", ".join(passed) + "; " + _not_passed(criteria)
    else:
        verdict = ASSIST
        reason = "passes none of item agreement, the alternative annotator test and the system level; " + _not_passed(
            criteria
        )
    return {"verdict": verdict, "reason": reason, "rule": RULE}


def _not_passed(criteria: Mapping[str, Mapping]) -> str:
    failed = [c["name"] for c in criteria.values() if c["status"] == "fail"]
    missing = [c["name"] for c in criteria.values() if c["status"] == "missing"]
    few = [c["name"] for c in criteria.values() if c["status"] == "too few"]
    parts = []
    if failed:
        parts.append("fails " + ", ".join(failed))
    if missing:
        parts.append("cannot compute " + ", ".join(missing))
    if few:
        parts.append("has too few items, humans or runs for " + ", ".join(few))
    return "; ".join(parts) or "nothing else to say"
