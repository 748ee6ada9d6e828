"""`python -m assess audit verdict` (issue 25 item 6) on the demo: each criterion with its figures, thresholds and
pass/fail, every figure equal to the one the separate `audit` command prints, the margin adjustable, refusals."""

from __future__ import annotations

import json

import pytest

from tests.helpers import run_cli, verdict_figures_match

KEYS = ["agreement", "alt_test", "systems", "bias", "estimate"]


@pytest.fixture(scope="module")
def demo(module_demo_target):
    return module_demo_target


def audit_json(db, *args) -> dict:
    return json.loads(run_cli("audit", *args, "--json", db=db, check=True).stdout)


def by_key(report: dict) -> dict:
    return {c["key"]: c for c in report["criteria"]}


def test_verdict_on_the_demo_equals_the_separate_commands(demo):
    report = audit_json(demo, "verdict", "--reference", "demo-ann", "--judge", "llm:demo-gpt")
    assert (report["reference"], report["judge"], report["humans"]) == (
        "demo-ann",
        "llm:demo-gpt",
        ["demo-ann", "demo-ben"],
    )
    assert [c["key"] for c in report["criteria"]] == KEYS
    assert {k: c["status"] for k, c in by_key(report).items()} == {
        "agreement": "fail",
        "alt_test": "too few",
        "systems": "too few",
        "bias": "pass",
        "estimate": "alternative",
    }
    # assist only: item agreement fails; two humans and three runs are too few for the other two to pass
    assert report["verdict"] == "assist only" and report["rule"].startswith("replace: item agreement")
    settings = report["settings"]
    assert (settings["epsilon"], settings["statistic"], settings["tau"], settings["width"]) == (
        0.2,
        "kappa_quadratic",
        0.9,
        0.1,
    )
    compared = verdict_figures_match(report, lambda argv: json.loads(run_cli(*argv, db=demo, check=True).stdout))
    paths = [f.get(p) for c in report["criteria"] for f in c["figures"] for p in ("path", "low_path", "high_path")]
    assert compared == sum(p is not None for p in paths)  # every value and interval end was compared
    assert compared > 40

    criteria = by_key(report)
    judge, shared, ceiling, ceiling_n = criteria["agreement"]["figures"]
    assert (shared["value"], ceiling_n["value"]) == (162, 109)  # the demo's shared items; demo-ann x demo-ben
    assert judge["high"] < ceiling["value"] and judge["passes"] is False  # the rule, on the figures shown
    assert criteria["agreement"]["commands"]["agreement"] == (
        "python -m assess audit agreement --source demo-ann --source llm:demo-gpt --source demo-ben --json"
    )
    omega = criteria["alt_test"]["figures"][0]
    assert (omega["name"], omega["value"], omega["threshold"], omega["passes"]) == (
        "winning rate omega",
        0.5,
        ">= 0.5",
        True,
    )
    tau = criteria["systems"]["figures"][0]
    assert (tau["name"], tau["value"], tau["passes"]) == ("Kendall tau", 1.0, True)
    names = [f["name"] for f in criteria["bias"]["figures"]]
    assert names[0] == "mean difference, all" and names[-2:] == [
        "mean difference, non-personal turns",
        "mean difference, personal turns",
    ]
    assert [n for n in names if "depth" in n] == [f"mean difference, turn depth {d}" for d in range(1, 7)]
    budget, width = criteria["estimate"]["figures"][:2]
    assert (budget["value"], width["threshold"]) == (200, "<= 0.1") and width["value"] <= 0.1

    text = run_cli("audit", "verdict", db=demo, check=True).stdout  # defaults: demo-ann against llm:demo-gpt
    assert text.startswith(
        "can llm:demo-gpt replace demo-ann here? assist only: passes none of item agreement, the alternative "
        "annotator test and the system level; fails item agreement against the human ceiling; has too few items, "
        "humans or runs for alternative annotator test, system-level agreement"
    )
    assert "  too few: 2 human(s) tested, fewer than 3" in text
    assert (
        "  kappa_quadratic, judge vs reference  0.858 [0.807, 0.903]  interval reaches 0.918 (the ceiling)  fail"
        in text
    )


def test_the_margin_is_adjustable_and_a_strict_one_fails_the_alternative_annotator_test(demo):
    strict = audit_json(demo, "verdict", "--epsilon", "0")
    alt = by_key(strict)["alt_test"]
    assert alt["status"] == "too few" and strict["settings"]["epsilon"] == 0.0  # two humans: no pass either way
    assert alt["commands"]["alt-test"].endswith("--judge llm:demo-gpt --epsilon 0.0 --json")
    separate = audit_json(
        demo, "alt-test", "--human", "demo-ann", "--human", "demo-ben", "--judge", "llm:demo-gpt", "--epsilon", "0"
    )
    assert alt["figures"][0]["value"] == separate["omega"] < 0.5 and alt["figures"][0]["passes"] is False
    assert strict["verdict"] == "assist only"


def test_a_human_judge_and_bad_options_are_said(demo):
    human = by_key(audit_json(demo, "verdict", "--reference", "demo-ann", "--judge", "demo-ben"))
    assert human["agreement"]["status"] == "missing"
    assert human["agreement"]["missing"].startswith("the judge 'demo-ben' is itself a human source")
    assert human["alt_test"]["missing"].startswith("the only human source is the reference 'demo-ann'")
    assert (
        "plan 10% overlap: have a second assessor judge the same 1 of the 9 turns 'demo-ann' judged"
        in (human["alt_test"]["missing"])
    )
    for args, message in (
        (["--judge", "demo-ann", "--reference", "demo-ann"], "the reference and the judge are both 'demo-ann'"),
        (["--judge", "llm:nobody"], "judge 'llm:nobody' has no passage labels"),
        (["--width", "0"], "the interval width asked is a number in (0, 1], found 0.0"),
    ):
        result = run_cli("audit", "verdict", *args, db=demo)
        assert result.returncode == 2 and result.stdout == "" and message in result.stderr, (args, result.stderr)
