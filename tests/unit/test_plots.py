"""Figure builders (assess.ui.plots): the traces and titles they draw, HTML export, PNG export without a browser
(rendering one in Chromium: tests/browser/test_figure_png_browser.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from assess.measures.aepd import score_aepd_turn
from assess.measures.agreement import agreement_report, kappa_by_group
from assess.measures.gfrc import score_gfrc2_document
from assess.ui.plots import (
    aepd_scatter,
    agreement_matrix_heatmap,
    change_heatmap,
    confusion_heatmap,
    figure_html,
    figure_png,
    gfrc2_curves,
    interval_plot,
    kappa_bars,
    ranking_scatter,
    width_curves,
)
from tests.unit.test_gfrc import COPWA, ORG, document


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
    assert "κ unweighted = 0.487" in fig.layout.title.text
    bars = kappa_bars(kappa_by_group(a, b, ["x"] * 5 + ["y"] * 5, scale=[0, 1, 2, 3, 4]))
    assert list(bars.data[0].x) == ["x", "y"]
    none_bar = kappa_bars({"g": {"n": 2, "agreement": 1.0, "kappa": None}})
    assert list(none_bar.data[0].text) == ["n/a"]


def test_confusion_title_names_each_kappa_as_the_headline_does():
    """Issue 22 item 7: the Two sources headline shows κ unweighted and κ linear; the heat map's title said
    'κ = ' with the linear value. Now it names both, each with the headline's name and value."""
    a = [0, 1, 2, 3, 4, 2, 2, 1, 0, 3]
    b = [0, 2, 2, 3, 3, 2, 1, 1, 0, 4]
    report = agreement_report(a, b, scale=[0, 1, 2, 3, 4], weights="linear")
    assert report["kappa_linear"] != report["kappa_unweighted"]
    title = confusion_heatmap(report).layout.title.text
    assert f"κ unweighted = {report['kappa_unweighted']:.3f}" in title
    assert f"κ linear = {report['kappa_linear']:.3f}" in title
    assert "κ = " not in title
    bars = kappa_bars(kappa_by_group(a, b, ["x"] * 10, scale=[0, 1, 2, 3, 4], weights="linear"), weights="linear")
    assert bars.layout.title.text == "Cohen's κ linear per group"


def test_topic_axes_sort_conversation_ids_as_numbers():
    """Issue 22 item 13: conversation ids 0, 1, 10, 11, 2 sorted as text put 10 before 2."""
    per_group = {str(c): {"n": 3, "agreement": 1.0, "kappa": 0.5} for c in (0, 1, 10, 11, 2, 9)}
    assert list(kappa_bars(per_group).data[0].x) == ["0", "1", "2", "9", "10", "11"]


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


def test_figure_png_without_a_browser_returns_none(monkeypatch, r112):
    fig = gfrc2_curves(r112)

    def broken(*args, **kwargs):
        raise RuntimeError("no browser")

    monkeypatch.setattr(type(fig), "to_image", broken)
    assert figure_png(fig) is None


def test_agreement_matrix_heatmap_cells_are_the_grids_values_and_human_pairs_are_outlined():
    from assess.measures.agreement import agreement_matrix, cohen_kappa, matrix_grid

    ann = {i: i % 5 for i in range(40)}
    ben = {i: (i % 5 if i % 4 else (i + 1) % 5) for i in range(10, 50)}
    llm = {i: min(4, i % 5 + (i % 3 == 0)) for i in range(50)}
    kinds = {"ann": "human", "<b>ben</b>": "human", "llm:x": "llm"}
    matrix = agreement_matrix({"ann": ann, "<b>ben</b>": ben, "llm:x": llm}, scale=range(5), kinds=kinds, bootstrap=0)
    grid = matrix_grid(matrix, "kappa_unweighted")
    fig = agreement_matrix_heatmap(grid, kinds=matrix["kinds"], ceiling=matrix["ceiling"]["kappa_unweighted"])
    heat = fig.data[0]
    shared = sorted(set(ann) & set(ben))
    expected = cohen_kappa([ann[i] for i in shared], [ben[i] for i in shared], scale=range(5))
    assert heat.z[0][1] == heat.z[1][0] == pytest.approx(expected) and heat.z[0][0] is None
    assert heat.text[0][1] == f"{expected:.3f}<br>n={len(shared)}"
    assert list(heat.x) == ["ann (human)", "&lt;b&gt;ben&lt;/b&gt; (human)", "llm:x (llm)"]  # names are data
    assert {(s.x0, s.y0) for s in fig.layout.shapes} == {(0.5, -0.5), (-0.5, 0.5)}  # ann-ben both ways
    assert f"human ceiling (outlined) = {expected:.3f}" in fig.layout.title.text
    alone = agreement_matrix_heatmap(matrix_grid(agreement_matrix({"a": ann, "b": llm}, scale=range(5), bootstrap=0)))
    assert "no two humans share an item" in alone.layout.title.text and not alone.layout.shapes


def test_interval_plot_draws_asymmetric_bars_per_series():
    rows = [
        {"name": "run-1", "series": "PPI", "value": 0.5, "low": 0.4, "high": 0.7},
        {"name": "run-1", "series": "human only", "value": 0.45, "low": 0.2, "high": 0.6},
        {"name": "<i>run-2</i>", "series": "PPI", "value": None, "low": None, "high": None},
    ]
    fig = interval_plot(rows, title="t", axis="P@5", reference=0)
    ppi, human = fig.data
    assert (ppi.name, human.name) == ("PPI", "human only")
    assert list(ppi.x) == ["run-1"] and list(ppi.y) == [0.5]  # no point without a value
    assert list(ppi.error_y.array) == [pytest.approx(0.2)] and list(ppi.error_y.arrayminus) == [pytest.approx(0.1)]
    assert list(human.error_y.array) == [pytest.approx(0.15)] and list(human.error_y.arrayminus) == [
        pytest.approx(0.25)
    ]
    assert fig.layout.shapes[0].y0 == 0 and fig.layout.yaxis.title.text == "P@5"
    assert fig.layout.xaxis.type == "category"  # conversation 101 is a name, not a position on a line
    escaped = interval_plot([{**rows[2], "value": 1.0}], title="judge <b>x</b>", axis="a")
    sent = json.loads(escaped.to_json())["data"][0]
    assert sent["x"] == ["&lt;i&gt;run-2&lt;/i&gt;"] and sent["customdata"] == [["n/a", "n/a"]]
    # No bar without an interval: NaN, sent as a typed array (plotly.js draws no bar for a non-number).
    assert np.isnan(escaped.data[0].error_y.array).all() and sent["error_y"]["array"]["dtype"] == "f8"
    assert escaped.layout.title.text == "judge &lt;b&gt;x&lt;/b&gt;"


def test_width_curves_one_line_per_design_with_values():
    from assess.measures.sampling import expected_width

    judge = {i: i % 5 for i in range(400)}
    plan = expected_width([50, 100, 200], judge)
    fig = width_curves(plan)
    assert [t.name for t in fig.data] == [
        "uniform sample, human only",
        "uniform sample, PPI",
        "stratified by the LLM label (Neyman), PPI",
    ]
    assert list(fig.data[0].x) == [50, 100, 200]
    assert list(fig.data[2].y) == [row["stratified"] for row in plan]
    assert fig.data[0].y[0] > fig.data[0].y[2]  # more humans, narrower


def test_change_heatmap_counts_the_changes():
    from assess.measures.bias import persona_sensitivity

    report = persona_sensitivity({1: 3, 2: 2, 3: 0}, {1: 2, 2: 2, 3: 1}, scale=range(5))
    fig = change_heatmap(report, before="without PTKB", after="with PTKB")
    assert [list(r) for r in fig.data[0].z] == report["matrix"] and fig.data[0].z[2][3] == 1
    assert fig.layout.title.text == "Grades of 3 items: 2 changed (1 up, 1 down)"
