"""The Bradley-Terry tab (AppTest): rounded figures beside the exact CSV, controlled strengths beside the
uncontrolled ones once a control is chosen, and the sway table of every source (people and LLM judges)."""

from __future__ import annotations

import json

import pytest

from tests.cli.test_battle_analysis_cli import _judged
from tests.helpers import open_app, run_cli


@pytest.fixture
def app_db(demo_target, monkeypatch, tmp_path):
    monkeypatch.setenv("ASSESS_DB", demo_target)
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    for source, seed, driver in (("nia", 1, "supported_share"), ("llm:judge", 2, "citations")):
        file = tmp_path / f"{seed}.jsonl"
        file.write_text("".join(json.dumps(x) + "\n" for x in _judged(seed, driver, m=400)))
        run_cli("battles", "import", str(file), "--source", source, db=demo_target, check=True)
    return demo_target


def test_controls_and_sway_on_the_tab(app_db):
    at = open_app()
    at.switch_page("pages/scores.py")
    at.session_state["sc_tab"] = "Bradley-Terry"  # only the open tab runs
    at.run()
    assert not at.exception, at.exception
    (strengths,) = [d.value for d in at.dataframe if "strength" in d.value.columns]
    assert "controlled" not in strengths.columns
    numbers = strengths[["strength", "low", "high", "win_rate"]].to_numpy().ravel()
    assert all(round(x, 3) == x for x in numbers)  # rounded for people
    (sway,) = [d.value for d in at.dataframe if "supported_share" in d.value.columns]
    assert list(sway["source"]) == ["llm:judge", "nia"] and list(sway["kind"]) == ["llm", "import"]
    judge, human = sway.iloc[0], sway.iloc[1]
    assert judge["citations_low"] > 0 and human["supported_share_low"] > 0

    at.multiselect(key="bt_controls").set_value(["citations", "supported_share"]).run()
    assert not at.exception, at.exception[0].stack_trace
    (strengths,) = [d.value for d in at.dataframe if "strength" in d.value.columns]
    assert {"controlled", "controlled_low", "controlled_high"} <= set(strengths.columns)
    (controls,) = [d.value for d in at.dataframe if "control" in d.value.columns]
    assert list(controls["control"]) == ["citations", "supported_share"]
