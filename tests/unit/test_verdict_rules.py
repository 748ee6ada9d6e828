"""The verdict's rules (assess/measures/verdict.py) on hand-made reports: each criterion's threshold, what a
missing criterion says, and the rule that combines them into replace / pre-filter / assist only."""

from __future__ import annotations

import pytest

from assess.measures import verdict as rules


def matrix(judge_ci, ceiling=0.8, n=100) -> dict:
    pair = {"a": "ref", "b": "llm", "n": n, "kappa_quadratic": sum(judge_ci) / 2, "ci": {"kappa_quadratic": judge_ci}}
    if ceiling is None:
        return {"pairs": [{"a": "ref", "b": "ann", "n": 50}, pair], "ceiling": None}
    top = {"kappa_quadratic": ceiling, "ci": {"kappa_quadratic": [ceiling - 0.05, ceiling + 0.05]}, "n": 50}
    return {"pairs": [{"a": "ref", "b": "ann", "n": 50}, pair], "ceiling": top}


@pytest.mark.parametrize(("judge_ci", "passes"), [([0.6, 0.8], True), ([0.6, 0.79], False), ([0.7, 0.9], True)])
def test_item_agreement_passes_when_the_judges_interval_reaches_the_ceiling(judge_ci, passes):
    found = rules.item_agreement(matrix(judge_ci), "ref", "llm", "cmd", how="HOW")
    assert found["status"] == ("pass" if passes else "fail") and found["passes"] is passes
    judge = found["figures"][0]
    assert (judge["path"], judge["low_path"], judge["high"]) == (
        ["pairs", 1, "kappa_quadratic"],
        ["pairs", 1, "ci", "kappa_quadratic", 0],
        judge_ci[1],
    )


def test_missing_criteria_say_what_is_missing_and_how():
    no_ceiling = rules.item_agreement(matrix([0.1, 0.2], ceiling=None), "ref", "llm", "cmd", how="plan overlap")
    assert no_ceiling["status"] == "missing" and no_ceiling["passes"] is None
    assert no_ceiling["missing"] == "no two human sources share an item, so there is no human ceiling: plan overlap"
    assert [f["name"] for f in no_ceiling["figures"]] == ["kappa_quadratic, judge vs reference", "items both labelled"]
    apart = rules.item_agreement({"pairs": [], "ceiling": None}, "ref", "llm", "cmd", how="x")
    assert apart["missing"].startswith("the reference 'ref' and the judge 'llm' share no labelled item")
    alt = rules.alternative_annotator(None, "cmd", missing="needs 2 humans")
    assert (alt["status"], alt["missing"], alt["figures"]) == ("missing", "needs 2 humans", [])
    assert rules.system_level(None, "cmd", missing="import runs")["missing"] == "import runs"
    empty = rules.bias({"overall": {"n": 0}}, "cmd")
    assert empty["status"] == "missing" and "share no graded passage" in empty["missing"]


def systems(tau=0.95, tau_ap=0.92, significant=5, same=4, flipped=0) -> dict:
    correlations = {name: {"value": v, "ci": [v - 0.1, 1.0]} for name, v in (("kendall_tau", tau), ("tau_ap", tau_ap))}
    significance = {"significant_reference": significant, "same": same, "flipped": flipped}
    return {"correlations": correlations, "significance": significance, "n_runs": 8, "n_topics": 20}


@pytest.mark.parametrize(
    ("report", "passes"),
    [
        (systems(), True),
        (systems(tau=0.89), False),
        (systems(tau_ap=0.85), False),
        (systems(same=3), False),  # 3 of 5 kept: below 80%
        (systems(same=4, flipped=1), False),
        (systems(significant=0, same=0), True),  # nothing significant to keep
    ],
)
def test_system_level_thresholds(report, passes):
    assert rules.system_level(report, "cmd")["passes"] is passes


def test_bias_fails_only_on_an_interval_wholly_outside_the_margin():
    def group(mean, ci):
        return {"mean_diff": mean, "ci": ci}

    report = {
        "overall": {"n": 30, **group(0.2, [0.1, 0.3])},
        "depth": {"groups": [{"group": 1, **group(0.5, [0.26, 0.7])}, {"group": 2, **group(3.0, None)}]},
        "personal": {"groups": [{"group": True, **group(-0.2, [-0.3, -0.1])}]},
    }
    found = rules.bias(report, "cmd")
    assert [(f["name"], f.get("passes")) for f in found["figures"]] == [
        ("mean difference, all", True),
        ("mean difference, turn depth 1", False),  # 0.26 > 0.25: wholly above the margin
        ("mean difference, turn depth 2", None),  # one item: no interval, not tested
        ("mean difference, personal turns", True),
    ]
    assert found["status"] == "fail"
    report["depth"]["groups"][0]["ci"] = [0.25, 0.7]
    assert rules.bias(report, "cmd")["status"] == "pass"


def status(**given) -> dict:
    return {k: {"name": k, "status": given.get(k, "pass")} for k in ("agreement", "alt_test", "systems", "bias")}


@pytest.mark.parametrize(
    ("given", "verdict"),
    [
        ({}, "replace"),
        ({"systems": "missing"}, "pre-filter"),  # no runs: replace needs every criterion, the system level too
        ({"alt_test": "too few"}, "pre-filter"),  # two humans: omega 0.5 is no pass
        ({"agreement": "too few", "alt_test": "too few", "systems": "too few"}, "assist only"),
        ({"bias": "fail"}, "pre-filter"),
        ({"agreement": "missing", "alt_test": "missing"}, "pre-filter"),  # only the system level passes
        ({"agreement": "fail", "systems": "fail"}, "pre-filter"),  # the alternative annotator test passes
        ({"agreement": "missing", "alt_test": "missing", "systems": "missing", "bias": "fail"}, "assist only"),
        ({"agreement": "fail", "alt_test": "fail", "systems": "fail"}, "assist only"),
    ],
)
def test_the_combining_rule(given, verdict):
    found = rules.combine(status(**given))
    assert found["verdict"] == verdict and found["rule"] == rules.RULE
    if given == {}:
        assert found["reason"] == "every criterion passes on its minimum sample"
    if given == {"alt_test": "too few"}:
        assert found["reason"].endswith("has too few items, humans or runs for alt_test")


def test_the_budget_is_the_smallest_reaching_the_width_and_a_refusal_says_how_to_sample():
    plan = {"population": 900, "rows": [{"budget": 50, "stratified": 0.2}, {"budget": 200, "stratified": 0.09}]}
    found = rules.corrected_alternative(plan, None, {}, judge="llm:x", width=0.1, needed=True, refused="not a sample")
    assert found["status"] == "alternative"
    assert [(f["name"], f["value"], f["path"]) for f in found["figures"]] == [
        ("human budget (items)", 200, ["rows", 1, "budget"]),
        ("expected interval width", 0.09, ["rows", 1, "stratified"]),
    ]
    assert found["refused"].startswith("not a sample; draw a sample instead: python -m assess audit sample --name")
    assert "--judge llm:x --budget 200 --assessor NAME" in found["refused"]
    narrow = rules.corrected_alternative(plan, None, {}, judge="llm:x", width=0.01, needed=True)
    assert narrow["figures"] == [] and narrow["missing"].startswith("no budget up to 200 (of the judge's 900 passages)")
    assert rules.corrected_alternative(plan, None, {}, judge="llm:x", width=0.1, needed=False)["status"] == "not needed"


def test_a_criterion_under_its_minimum_sample_is_too_few_never_a_pass():
    """Issue 32: each criterion's figures on too small a sample are shown, and the criterion does not pass."""
    few = rules.item_agreement(matrix([0.6, 0.9], n=rules.MIN_ITEMS - 1), "ref", "llm", "cmd", how="x")
    assert (few["status"], few["passes"]) == ("too few", None) and few["figures"][0]["passes"] is True
    assert few["missing"] == f"the judge and the reference share {rules.MIN_ITEMS - 1} items, fewer than 30"
    enough = rules.item_agreement(matrix([0.6, 0.9], n=rules.MIN_ITEMS), "ref", "llm", "cmd", how="x")
    assert enough["status"] == "pass"
    below = {**matrix([0.1, 0.2], ceiling=None), "ceiling_min_shared": 30, "ceiling_below_minimum": [["a", "b", 12]]}
    no_ceiling = rules.item_agreement(below, "ref", "llm", "cmd", how="plan overlap")
    assert no_ceiling["missing"] == (
        "no two human sources share 30 items or more, so there is no human ceiling (a and b share 12): plan overlap"
    )

    def alt(humans: int) -> dict:
        rows = [{"annotator": f"h{i}", "corrected_p": 0.01} for i in range(humans)]
        return {"computable": True, "passes": True, "omega": 1.0, "rho": 0.9, "epsilon": 0.2, "annotators": rows}

    assert rules.alternative_annotator(alt(2), "cmd")["status"] == "too few"
    assert rules.alternative_annotator(alt(rules.MIN_HUMANS), "cmd")["status"] == "pass"
    assert rules.system_level({**systems(), "n_runs": rules.MIN_RUNS - 1}, "cmd")["status"] == "too few"
    assert rules.system_level({**systems(), "n_topics": rules.MIN_TOPICS - 1}, "cmd")["status"] == "too few"
    assert (
        rules.system_level({**systems(), "n_runs": rules.MIN_RUNS, "n_topics": rules.MIN_TOPICS}, "cmd")["status"]
        == "pass"
    )
    small = {"overall": {"n": rules.MIN_ITEMS - 1, "mean_diff": 0.0, "ci": [-0.1, 0.1]}}
    assert rules.bias(small, "cmd")["status"] == "too few"
    assert rules.bias({"overall": {**small["overall"], "n": rules.MIN_ITEMS}}, "cmd")["status"] == "pass"
