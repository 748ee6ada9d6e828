"""/audit's Verdict tab (issue 25 item 6) through AppTest on the demo: the verdict and every criterion's figures,
thresholds and pass/fail as `python -m assess audit verdict --json` gives them, with the margin ε adjustable."""

from __future__ import annotations

import html
import json
import math

import pytest

from tests.helpers import open_app, run_cli


@pytest.fixture
def app_db(tmp_path, monkeypatch):
    path = tmp_path / "app.db"  # the app loads the demo into it
    monkeypatch.setenv("ASSESS_DB", str(path))
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    return path


def plain(value):
    return None if isinstance(value, float) and math.isnan(value) else value


def shown_figures(at) -> list[list[dict]]:
    """The figure tables of the tab, in order, as records (NaN read as None)."""
    frames = [d.value for d in at.dataframe if {"figure", "value", "threshold", "passes"} <= set(d.value.columns)]
    return [[{k: plain(v) for k, v in row.items()} for row in frame.to_dict("records")] for frame in frames]


def expected_figures(report: dict) -> list[list[dict]]:
    passes = {True: "pass", False: "fail"}
    return [
        [
            {
                "figure": f["name"],
                "value": f["value"],
                "low": f.get("low"),
                "high": f.get("high"),
                "threshold": f.get("threshold", ""),
                "passes": passes.get(f.get("passes"), ""),
            }
            for f in c["figures"]
        ]
        for c in report["criteria"]
        if c["figures"]
    ]


def verdict_json(db, *args) -> dict:
    return json.loads(run_cli("audit", "verdict", *args, "--json", db=db, check=True).stdout)


def test_the_verdict_tab_shows_the_commands_verdict_and_figures(app_db):
    at = open_app("pages/audit.py", timeout=120)
    at.session_state["au_tab"] = "Verdict"
    at.run()
    assert not at.exception and not at.error
    cli = verdict_json(app_db)  # the pickers' defaults are the command's: demo-ann against llm:demo-gpt
    headline = next(m.value for m in at.markdown if m.value.startswith("**Verdict:"))
    assert headline.startswith(f"**Verdict: {cli['verdict']}.** Can `llm:demo-gpt` replace `demo-ann` here?")
    summary = next(d.value for d in at.dataframe if list(d.value.columns) == ["criterion", "status"])
    assert list(summary["status"]) == ["fail", "too few to tell", "too few to tell", "pass", "the alternative"]
    assert cli["verdict"] == "assist only"  # the demo's LLM is not said to replace anyone (issue 32)
    infos = [html.unescape(i.value) for i in at.info]
    assert any(i.startswith("Too few: 2 human(s) tested, fewer than 3") for i in infos)
    assert any(i.startswith("Too few: 3 runs over 9 topics both judged") for i in infos)
    assert shown_figures(at) == expected_figures(cli)
    assert any("audit alt-test --human demo-ann --human demo-ben" in c.value for c in at.caption)

    at.number_input(key="au_vd_eps").set_value(0.0).run()
    strict = verdict_json(app_db, "--epsilon", "0")
    assert shown_figures(at) == expected_figures(strict) != expected_figures(cli)
    at.number_input(key="au_vd_w").set_value(0.01).run()  # narrower than any budget of the demo reaches
    infos = [html.unescape(i.value) for i in at.info]
    assert any(i.startswith("Missing: no budget up to 200 (of the judge's 214 passages)") for i in infos)
