"""Figure builders (assess.ui.plots): the traces and titles they draw, HTML export, PNG export."""

from __future__ import annotations

import pytest

from assess.measures.aepd import score_aepd_turn
from assess.measures.agreement import agreement_report, kappa_by_group
from assess.measures.gfrc import score_gfrc2_document
from assess.ui.plots import (
    aepd_scatter,
    confusion_heatmap,
    figure_html,
    figure_png,
    gfrc2_curves,
    kappa_bars,
    ranking_scatter,
)
from tests.test_gfrc import COPWA, ORG, document


@pytest.fixture(scope="module")
def r112():
    return score_gfrc2_document(document(("COPWA", COPWA), ("ORG", ORG)))


def test_gfrc2_curves_one_panel_per_component_one_line_per_run(r112):
    fig = gfrc2_curves(r112)
    assert len(fig.data) == 2 * 3  # (GNP, GF PRONOUN, GF HINDEX) x two runs
    titles = [a.text for a in fig.layout.annotations]
    assert titles == ["GNP", "GF PRONOUN", "GF HINDEX"]
    copwa = [t for t in fig.data if t.name == "COPWA"]
    assert list(copwa[0].x) == [33, 36, 39, 54, 63, 87]
    assert copwa[0].y[0] == pytest.approx(4 / 35)  # Table 1, first cluster's GNP
    assert copwa[1].y[3] == pytest.approx(0.769708, abs=5e-7)  # PRONOUN at wc = 54
    assert sum(t.showlegend is not False for t in fig.data) == 2


def test_aepd_scatter_title_has_tau_and_p():
    points = [
        {"id": f"t{i}", "run": "a" if i % 2 else "b", **score_aepd_turn([10 + i, 20, 5 * i], [True, False, False])}
        for i in range(1, 8)
    ]
    fig = aepd_scatter(points, color_by="run")
    assert {t.name for t in fig.data} == {"a", "b"}
    assert "Kendall τ" in fig.layout.title.text and "p =" in fig.layout.title.text
    single = aepd_scatter({"turns": {"x": {"P": 0.1, "D": 0.2}}})
    assert "τ = n/a" in single.layout.title.text and "n = 1" in single.layout.title.text


def test_confusion_heatmap_and_kappa_bars():
    a = [0, 1, 2, 3, 4, 2, 2, 1, 0, 3]
    b = [0, 2, 2, 3, 3, 2, 1, 1, 0, 4]
    report = agreement_report(a, b, scale=[0, 1, 2, 3, 4])
    fig = confusion_heatmap(report)
    assert [list(r) for r in fig.data[0].z] == report["confusion"]
    assert "κ = 0.487" in fig.layout.title.text
    bars = kappa_bars(kappa_by_group(a, b, ["x"] * 5 + ["y"] * 5, scale=[0, 1, 2, 3, 4]))
    assert list(bars.data[0].x) == ["x", "y"]
    none_bar = kappa_bars({"g": {"n": 2, "agreement": 1.0, "kappa": None}})
    assert list(none_bar.data[0].text) == ["n/a"]


def test_ranking_scatter_computes_tau_when_missing():
    fig = ranking_scatter({"r1": 0.1, "r2": 0.2, "r3": 0.3}, {"r1": 0.2, "r2": 0.1, "r3": 0.3})
    assert "τ = 0.333" in fig.layout.title.text and "3 runs" in fig.layout.title.text
    assert "τ = 0.500" in ranking_scatter({"r1": 0.1}, {"r1": 0.2}, 0.5).layout.title.text


def test_figure_html_is_self_contained(r112):
    html = figure_html(gfrc2_curves(r112))
    assert html.lstrip().lower().startswith(("<!doctype html>", "<html"))
    assert "<script src=" not in html  # no external script (plotly.js mentions its CDN internally)
    assert len(html) > 1_000_000  # plotly.js itself is inlined
    assert "Plotly.newPlot" in html


@pytest.mark.slow
def test_figure_png_renders_with_debian_chromium(r112):
    import os

    if not os.path.exists("/usr/bin/chromium"):
        pytest.skip("/usr/bin/chromium is absent: kaleido has no browser to render PNG")
    png = figure_png(gfrc2_curves(r112), width=640, height=480)
    assert png is not None and png.startswith(b"\x89PNG\r\n\x1a\n")
    assert int.from_bytes(png[16:20], "big") == 640 and int.from_bytes(png[20:24], "big") == 480


def test_figure_png_without_a_browser_returns_none(monkeypatch, r112):
    fig = gfrc2_curves(r112)

    def broken(*args, **kwargs):
        raise RuntimeError("no browser")

    monkeypatch.setattr(type(fig), "to_image", broken)
    assert figure_png(fig) is None
