"""The Bradley-Terry tab of /scores in headless Chromium: a forest plot of strengths with intervals, controlled
and uncontrolled side by side once a control is chosen, the controls' coefficients, the top run's fragility and
provisional marks, and no long unrounded decimals (0.00000000000000004) anywhere on the tab."""

from __future__ import annotations

import json
import re

import pytest

from tests.browser_support import LOAD_TIMEOUT_MS, expect, open_app, server_per_module, settled
from tests.cli.test_battle_analysis_cli import _lines

pytestmark = pytest.mark.browser


def seeded(path) -> None:
    from assess.services.battles import import_file
    from store import open_db

    lines = _lines(m=600) + [
        {
            "topic_id": "t9",
            "run_a": "rare",
            "run_b": "r0",
            "winner": "a",
            "features_a": {"length": 90, "citations": 1},
            "features_b": {"length": 80, "citations": 2},
        }
    ]
    file = path.parent / "b.jsonl"
    file.write_text("".join(json.dumps(x) + "\n" for x in lines))
    db = open_db(path)
    import_file(db, file, "arena")
    db.close()


server = server_per_module("forest", seeded)


def test_the_forest_plot_with_and_without_controls(server, new_page):
    page = new_page()
    open_app(page, server[0] + "/scores")
    page.get_by_role("tab", name="Bradley-Terry").click()
    settled(page)
    panel = page.get_by_role("tabpanel", name="Bradley-Terry")
    plot = panel.locator(".js-plotly-plot").first
    expect(plot).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    assert plot.locator(".scatterlayer .trace").count() == 1  # uncontrolled only
    expect(panel.get_by_text(re.compile(r"Fragility: removing \d+ of the battles"))).to_be_visible()
    expect(panel.get_by_text(re.compile(r"Provisional \(fewer than 50 battles\): rare"))).to_be_visible()

    panel.locator('[data-testid="stMultiSelect"]').click()
    page.get_by_role("option", name="citations").click()
    page.keyboard.press("Escape")
    settled(page)
    expect(panel.get_by_text("Controls (log-odds")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    plot = panel.locator(".js-plotly-plot").first
    expect(plot.locator(".scatterlayer .trace")).to_have_count(2, timeout=LOAD_TIMEOUT_MS)
    legend = plot.locator(".legendtext").all_text_contents()
    assert sorted(legend) == ["controlled", "uncontrolled"]
    text = panel.inner_text()
    assert not re.search(r"\d\.\d{7,}", text), text  # no unrounded figures where people read them
    ticks = plot.locator(".ytick text").all_text_contents()
    assert ticks and all(len(t.split(".")[-1]) <= 3 for t in ticks), ticks
