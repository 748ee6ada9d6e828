"""/audit's budget simulation (issue 37) through AppTest: the chart's lines and the table hold exactly what
`python -m assess audit simulate --json` prints for the same pair and form; bad budgets are one st.error."""

from __future__ import annotations

import html
import json

from tests.app.test_audit_page import app_db, chart, frame_with, open_audit  # noqa: F401 (fixture)
from tests.helpers import run_cli, snapshot


def shown(element) -> str:
    """A message box's text as read: the character references and word joiners of inert markdown undone."""
    return html.unescape(element.value).replace("\u2060", "")


def fill(at, *, measure="nDCG@5", budgets="10, 20", policies=("uniform", "active", "active-sequential")):
    at.text_input(key="au_sim_m").input(measure)
    at.text_input(key="au_sim_b").input(budgets)
    at.number_input(key="au_sim_r").set_value(30)
    at.multiselect(key="au_sim_p").set_value(list(policies))
    next(b for b in at.button if b.label == "Simulate budgets").click().run()
    assert not at.exception, at.exception


def test_budget_plot_and_table_equal_the_cli_json(app_db):
    at = open_audit(tab="Budgeted sample")
    fill(at)
    assert not at.error
    cli = run_cli(
        "audit", "simulate", "--reference", "demo-ann", "--judge", "llm:demo-gpt", "--measure", "nDCG@5",
        "--budget", "10", "--budget", "20", "--policy", "uniform", "--policy", "active",
        "--policy", "active-sequential", "--repeats", "30", "--seed", "0", "--json", db=app_db, check=True,
    )  # fmt: skip
    expected = json.loads(cli.stdout)["results"]
    spec = chart(at, "Simulated nDCG@5 estimates by human budget")
    lines = {(t["name"], t["xaxis"]): (t["x"], t["y"]) for t in spec["data"]}
    for policy in ("uniform", "active", "active-sequential"):
        rows = [r for r in expected if r["policy"] == policy]
        assert lines[(policy, "x")] == ([10, 20], [r["mean_width"] for r in rows])
        assert lines[(policy, "x2")] == ([10, 20], [r["tau"] for r in rows])
    shown = frame_with(at, "policy", "budget", "coverage", "mean_width", "tau")
    assert shown.to_dict("records") == expected


def test_bad_budgets_are_one_error_and_nothing_is_simulated(app_db):
    at = open_audit(tab="Budgeted sample")
    before = snapshot(app_db)
    fill(at, budgets="10, many")
    assert [shown(e) for e in at.error] == [
        "Not simulated: Budgets: expected whole numbers separated by commas (e.g. 20, 40), found '10, many'"
    ]
    assert not any("Simulated" in (json.loads(c.proto.spec)["layout"].get("title") or {}).get("text", "")
                   for c in at.get("plotly_chart"))  # fmt: skip
    fill(at, measure="MAP@5")
    assert [shown(e) for e in at.error] == [
        "Not simulated: --measure: expected P@k or nDCG@k with k a whole number >= 1 (e.g. P@5, nDCG@5), found 'MAP@5'"
    ]
    assert snapshot(app_db) == before
