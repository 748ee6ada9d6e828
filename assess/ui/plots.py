"""Plotly figures for the scoring results, and their export to HTML and PNG.

Builders take the plain dicts the scoring functions return; nothing here computes a measure
except the summary statistic shown in a title. No Streamlit: pages call these and render them.
"""

from __future__ import annotations

import html
import os
import shutil
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from assess.errors import AssessError
from assess.measures.aepd import tradeoff
from assess.measures.ppi import natural_key
from assess.measures.rankings import ranking_correlation

# Where Debian/Ubuntu put Chromium; kaleido 1.x (through choreographer) reads BROWSER_PATH.
_BROWSERS = (
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "/usr/bin/google-chrome",
    "/usr/bin/google-chrome-stable",
)


def _plain(value: Any) -> str:
    """Data (a run, source, topic or attribute name) for a plotly text: plotly reads a few HTML tags in every
    text (``<a href>`` among them), so ``<``, ``>`` and ``&`` become entities it shows literally."""
    return html.escape(str(value), quote=False)


def _fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def gfrc2_curves(results_by_run: Mapping[str, Mapping[str, Any]]) -> go.Figure:
    """Plot GNP and each GF^m against word count, one line per run (GFRC2 paper Figs. 4-5).

    ``results_by_run`` maps a run name to one conversation's result from
    :func:`assess.measures.gfrc.score_gfrc2_document` (``{"clusters": [{"wc", "GNP", "GF": {attr: v}}], ...}``).
    One panel per component (GNP, then each attribute set), sharing the word-count axis; each point
    is one user cluster (the end of a relevant nugget).
    """
    attrs: list[str] = []
    for result in results_by_run.values():
        for cluster in result.get("clusters", []):
            attrs.extend(a for a in cluster.get("GF", {}) if a not in attrs)
    panels = ["GNP"] + [f"GF {_plain(a)}" for a in attrs]
    fig = make_subplots(rows=len(panels), cols=1, shared_xaxes=True, subplot_titles=panels, vertical_spacing=0.08)
    palette = qualitative.Plotly
    for i, (run, result) in enumerate(results_by_run.items()):
        clusters = result.get("clusters", [])
        wc = [c["wc"] for c in clusters]
        color = palette[i % len(palette)]
        series = [[c["GNP"] for c in clusters]] + [[c["GF"].get(a) for c in clusters] for a in attrs]
        for row, values in enumerate(series, start=1):
            fig.add_trace(
                go.Scatter(
                    x=wc,
                    y=values,
                    mode="lines+markers",
                    name=_plain(run),
                    legendgroup=str(run),
                    showlegend=row == 1,
                    line={"color": color},
                ),
                row=row,
                col=1,
            )
    for row in range(1, len(panels) + 1):
        fig.update_yaxes(range=[0, 1.02], row=row, col=1)
    fig.update_xaxes(title_text="word count (end of a relevant nugget)", row=len(panels), col=1)
    fig.update_layout(title="GFRC2 user clusters: utility and group fairness", height=260 * len(panels))
    return fig


def aepd_scatter(points: Sequence[Mapping[str, Any]] | Mapping[str, Any], color_by: str | None = None) -> go.Figure:
    """Scatter P_score against D_score per turn, with Kendall's tau and p in the title (AEPD Fig. 4).

    ``points`` is a list of ``{"P", "D", ...}`` dicts (other keys, e.g. ``id`` or ``run``, may be
    used by ``color_by`` and show on hover) or the result of
    :func:`assess.measures.aepd.score_aepd_document`. tau is over the turns where both scores are > 0
    (:func:`assess.measures.aepd.tradeoff`).
    """

    if isinstance(points, Mapping):
        points = [{"id": tid, **scores} for tid, scores in points.get("turns", {}).items()]
    rows = list(points)
    trade = tradeoff([p["P"] for p in rows], [p["D"] for p in rows])
    groups: dict[Any, list[Mapping[str, Any]]] = {}
    for p in rows:
        groups.setdefault(p.get(color_by) if color_by else "turns", []).append(p)
    fig = go.Figure()
    for key, members in groups.items():
        fig.add_trace(
            go.Scatter(
                x=[p["P"] for p in members],
                y=[p["D"] for p in members],
                mode="markers",
                name=_plain(key),
                text=[_plain(p.get("id", "")) for p in members],
                hovertemplate="%{text}<br>P=%{x:.4f}<br>D=%{y:.4f}",
            )
        )
    fig.update_layout(
        title=f"P vs D per turn: Kendall τ = {_fmt(trade['kendall_tau'])}, p = {_fmt(trade['p_value'], 4)} "
        f"(n = {trade['n']} turns with P > 0 and D > 0)",
        xaxis_title="P_score (personalization)",
        yaxis_title="D_score (diversification)",
        xaxis_range=[-0.02, 1.02],
        yaxis_range=[-0.02, 1.02],
        showlegend=color_by is not None,
    )
    return fig


def confusion_heatmap(
    report: Mapping[str, Any], *, names: tuple[str, str] = ("annotator A", "annotator B")
) -> go.Figure:
    """Draw the confusion matrix of :func:`assess.measures.agreement.agreement_report` (rows = A, columns = B)."""
    if "confusion" not in report or "labels" not in report:
        raise AssessError("confusion_heatmap needs an agreement_report with 'confusion' and 'labels'")
    labels = [str(x) for x in report["labels"]]
    z = report["confusion"]
    names = (_plain(names[0]), _plain(names[1]))
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=labels,
            y=labels,
            colorscale="Blues",
            text=z,
            texttemplate="%{text}",
            hovertemplate=f"{names[0]}=%{{y}}<br>{names[1]}=%{{x}}<br>items=%{{z}}<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"Confusion (n = {report.get('n')}): {kappa_title(report)}, agreement = {_fmt(report.get('agreement'))}",
        xaxis_title=names[1],
        yaxis_title=names[0],
        yaxis_autorange="reversed",
    )
    return fig


def kappa_title(report: Mapping[str, Any]) -> str:
    """Which kappa a figure shows, named as the page's headline names it: 'κ unweighted = 0.240', and beside
    it the weighted one the report was asked for ('κ linear = 0.366')."""
    if "kappa_unweighted" not in report:  # a bare report: its one kappa, with its weights named
        return f"κ {report.get('weights') or 'unweighted'} = {_fmt(report.get('kappa'))}"
    names = ["kappa_unweighted"] + ([f"kappa_{report['weights']}"] if report.get("weights") else [])
    return ", ".join(f"{statistic_name(n)} = {_fmt(report.get(n))}" for n in names)


def natural_order(keys) -> list:
    """``keys`` with the digit runs of their text read as numbers: conversation 2 before 10."""

    return sorted(keys, key=natural_key)


def kappa_bars(per_group: Mapping[Any, Mapping[str, Any]], *, weights: str | None = None) -> go.Figure:
    """Draw one bar per group from :func:`assess.measures.agreement.kappa_by_group` (undefined kappa: no bar, 'n/a'),
    groups in natural order (conversation 2 before 10); ``weights`` names the kappa (None: unweighted)."""
    keys = natural_order(per_group)
    kappas = [per_group[k].get("kappa") for k in keys]
    fig = go.Figure(
        go.Bar(
            x=[_plain(k) for k in keys],
            y=[0 if v is None else v for v in kappas],
            text=[_fmt(v) for v in kappas],
            textposition="outside",
            customdata=[[per_group[k].get("n"), _fmt(per_group[k].get("agreement"))] for k in keys],
            hovertemplate="%{x}<br>κ=%{text}<br>n=%{customdata[0]}<br>agreement=%{customdata[1]}<extra></extra>",
        )
    )
    name = f"κ {weights or 'unweighted'}"
    fig.update_layout(title=f"Cohen's {name} per group", xaxis_title="group", yaxis_title=name, yaxis_range=[-1, 1.1])
    return fig


def ranking_scatter(
    metric_a: Mapping[str, float],
    metric_b: Mapping[str, float],
    tau: float | None = None,
    *,
    labels: tuple[str, str] = ("qrels A", "qrels B"),
) -> go.Figure:
    """Scatter each run's score under two qrels sources (or measures), with Kendall's tau in the title.

    ``tau`` defaults to :func:`assess.measures.rankings.ranking_correlation` over the runs in both mappings.
    """
    runs = [r for r in metric_a if r in metric_b and metric_a[r] is not None and metric_b[r] is not None]
    if tau is None:
        tau = ranking_correlation({r: metric_a[r] for r in runs}, {r: metric_b[r] for r in runs})["kendall_tau"]
    fig = go.Figure(
        go.Scatter(
            x=[metric_a[r] for r in runs],
            y=[metric_b[r] for r in runs],
            mode="markers",
            text=[_plain(r) for r in runs],
            hovertemplate="%{text}<br>%{x:.4f} vs %{y:.4f}<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"Run scores: Kendall τ = {_fmt(tau)} over {len(runs)} runs",
        xaxis_title=_plain(labels[0]),
        yaxis_title=_plain(labels[1]),
    )
    return fig


_STATISTIC_NAMES = {
    "agreement": "observed agreement",
    "kappa_unweighted": "κ unweighted",  # one name wherever it is shown, beside the weighted ones
    "kappa_linear": "κ linear",
    "kappa_quadratic": "κ quadratic",
    "kappa_binary": "κ binary",
    "alpha": "Krippendorff's α",
    "icc_2_1": "ICC(2,1)",
    "icc_3_1": "ICC(3,1)",
}


def statistic_name(statistic: str) -> str:
    """The reader's name of an agreement statistic (MATRIX_STATISTICS key)."""
    return _STATISTIC_NAMES.get(statistic, statistic)


def agreement_matrix_heatmap(
    grid: Mapping[str, Any], *, kinds: Mapping[str, str | None] | None = None, ceiling: float | None = None
) -> go.Figure:
    """Draw :func:`assess.measures.agreement.matrix_grid` as a sources x sources heat map (value and n per cell).

    Pairs of two human sources are outlined: their agreement is the ceiling an LLM can be held to; the
    pooled human-human value (``ceiling``) is in the title. Empty cells: the diagonal and pairs sharing no item.
    """
    sources = list(grid["sources"])
    kinds = kinds or {}
    shown = [_plain(f"{s} ({kinds[s]})" if kinds.get(s) else s) for s in sources]
    values, counts = grid["values"], grid["n"]
    text = [
        ["" if v is None else f"{v:.3f}<br>n={n:,}" for v, n in zip(row, nrow)] for row, nrow in zip(values, counts)
    ]
    name = statistic_name(grid["statistic"])
    fig = go.Figure(
        go.Heatmap(
            z=[[None if v is None else v for v in row] for row in values],
            x=shown,
            y=shown,
            zmin=-1 if grid["statistic"] != "agreement" else 0,
            zmax=1,
            colorscale="RdBu",
            text=text,
            texttemplate="%{text}",
            hovertemplate=f"%{{y}} vs %{{x}}<br>{name} = %{{z:.3f}}<extra></extra>",
            colorbar={"title": name},
        )
    )
    for i, a in enumerate(sources):
        for j, b in enumerate(sources):
            if i != j and kinds.get(a) == "human" and kinds.get(b) == "human" and values[i][j] is not None:
                fig.add_shape(
                    type="rect", x0=j - 0.5, x1=j + 0.5, y0=i - 0.5, y1=i + 0.5, line={"color": "black", "width": 3}
                )
    ceiling_text = (
        f"; human ceiling (outlined) = {_fmt(ceiling)}" if ceiling is not None else "; no two humans share an item"
    )
    fig.update_layout(
        title=f"{name} of every pair of sources{ceiling_text}",
        yaxis_autorange="reversed",
        height=max(360, 90 * len(sources) + 160),
    )
    return fig


def interval_plot(
    rows: Sequence[Mapping[str, Any]], *, title: str, axis: str, reference: float | None = None
) -> go.Figure:
    """Point estimates with their intervals, one marker per row and one colour per ``series``.

    ``rows``: ``[{"name", "series", "value", "low", "high"}]`` (``low`` / ``high`` None: no bar; ``value``
    None: no point). Used for system-level correlations, bias per group and corrected estimates per run.
    ``reference`` draws a dashed line (e.g. 0 for a difference, 1 for a correlation). ``title`` and ``axis`` are
    plain text (they may hold source and run names): escaped like the names.
    """
    series: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        series.setdefault(str(r.get("series", "")), []).append(r)
    traces = []
    for name, members in series.items():
        kept = [r for r in members if r.get("value") is not None]
        value = np.array([r["value"] for r in kept], dtype=float)
        high = np.array([np.nan if r.get("high") is None else r["high"] for r in kept], dtype=float)
        low = np.array([np.nan if r.get("low") is None else r["low"] for r in kept], dtype=float)
        # numpy arrays throughout: plotly checks a list element by element, which for the 45 pairs x 200
        # topics of a large audit cost most of the page's first render; NaN draws no bar, as None did.
        traces.append(
            go.Scatter(
                x=np.array([_plain(r["name"]) for r in kept], dtype=object),
                y=value,
                mode="markers",
                name=_plain(name),
                error_y={
                    "type": "data",
                    "array": high - value,
                    "arrayminus": value - low,
                    "symmetric": False,
                    "visible": True,
                },
                customdata=np.array([[_fmt(r.get("low")), _fmt(r.get("high"))] for r in kept], dtype=object).reshape(
                    len(kept), 2
                ),
                hovertemplate="%{x}<br>%{y:.3f} [%{customdata[0]}, %{customdata[1]}]<extra>%{fullData.name}</extra>",
            )
        )
    fig = go.Figure(data=traces)
    if reference is not None:
        fig.add_hline(y=reference, line_dash="dash", line_color="grey")
    fig.update_layout(
        title=_plain(title),
        yaxis_title=_plain(axis),
        xaxis_type="category",  # names such as conversation 101 are labels, never numbers on a line
        scattermode="group",
        showlegend=len(series) > 1,
    )
    return fig


def width_curves(plan: Sequence[Mapping[str, Any]]) -> go.Figure:
    """Expected interval width against the human budget, one line per design
    (:func:`assess.measures.sampling.expected_width` rows; a design without a value at a budget is left out)."""
    names = {
        "uniform_human_only": "uniform sample, human only",
        "uniform_ppi": "uniform sample, PPI",
        "stratified": "stratified by the LLM label (Neyman), PPI",
        "disagreement": "stratified by disagreement, PPI",
    }
    designs = [k for k in names if any(row.get(k) is not None for row in plan)]
    fig = go.Figure()
    for design in designs:
        points = [(row["budget"], row[design]) for row in plan if row.get(design) is not None]
        fig.add_trace(
            go.Scatter(
                x=[b for b, _ in points],
                y=[w for _, w in points],
                mode="lines+markers",
                name=names[design],
                hovertemplate="budget %{x}<br>width %{y:.4f}<extra></extra>",
            )
        )
    fig.update_layout(
        title="Expected 95% interval width of the share of relevant items, by human budget",
        xaxis_title="items judged by humans",
        yaxis_title="interval width",
    )
    return fig


def budget_curves(results: Sequence[Mapping[str, Any]], *, measure: str) -> go.Figure:
    """Mean interval width and Kendall tau against the human budget, one line per policy in both panels
    (``audit simulate``'s results, :func:`assess.services.budget.simulate_view`; a missing tau is left out)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("mean interval width", "Kendall τ with the full reference"))
    policies = list(dict.fromkeys(r["policy"] for r in results))
    for n, policy in enumerate(policies):
        rows = [r for r in results if r["policy"] == policy]
        color = qualitative.Plotly[n % len(qualitative.Plotly)]
        for col, field in ((1, "mean_width"), (2, "tau")):
            points = [(r["budget"], r[field]) for r in rows if r[field] is not None]
            fig.add_trace(
                go.Scatter(
                    x=[b for b, _ in points],
                    y=[v for _, v in points],
                    mode="lines+markers",
                    name=_plain(policy),
                    legendgroup=_plain(policy),
                    showlegend=col == 1,
                    line={"color": color},
                    hovertemplate=f"budget %{{x}}<br>{field} %{{y:.4f}}<extra></extra>",
                ),
                row=1,
                col=col,
            )
    fig.update_layout(title=f"Simulated {_plain(measure)} estimates by human budget, per sampling policy")
    fig.update_xaxes(title_text="items judged by humans")
    return fig


def assignment_progress(timeline: Mapping[str, Any]) -> go.Figure:
    """The assigned items judged so far against time (``store.review.dashboard``'s timeline: cumulative count per
    hour or day), with the number assigned as a horizontal line: how far the campaign is, and how fast it moves."""
    points = timeline["points"]
    unit = timeline["unit"]
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[p["at"] for p in points],
            y=[p["cumulative"] for p in points],
            mode="lines+markers",
            line_shape="hv",
            name="judged (cumulative)",
            customdata=[p["judged"] for p in points],
            hovertemplate=f"%{{x}}<br>%{{y}} judged (%{{customdata}} this {unit})<extra></extra>",
        )
    )
    fig.add_hline(
        y=timeline["assigned"],
        line_dash="dash",
        annotation_text=f"assigned: {timeline['assigned']}",
        annotation_position="top left",
    )
    fig.update_layout(
        title=f"Assigned items judged, per {unit} (cumulative, UTC)",
        xaxis_title=unit,
        yaxis_title="items",
        yaxis_rangemode="tozero",
        height=320,
        margin={"l": 40, "r": 20, "t": 50, "b": 40},
        showlegend=False,
    )
    return fig


def change_heatmap(report: Mapping[str, Any], *, before: str, after: str) -> go.Figure:
    """Grades before (rows) against after (columns), e.g. without vs with the PTKB statements in the prompt
    (:func:`assess.measures.bias.persona_sensitivity`: ``scale``, ``matrix``, ``n``, ``changed``, ``up``, ``down``)."""
    labels = [str(x) for x in report["scale"]]
    before, after = _plain(before), _plain(after)
    fig = go.Figure(
        go.Heatmap(
            z=report["matrix"],
            x=labels,
            y=labels,
            colorscale="Blues",
            text=report["matrix"],
            texttemplate="%{text}",
            hovertemplate=f"{before}=%{{y}}<br>{after}=%{{x}}<br>items=%{{z}}<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"Grades of {report['n']} items: {report['changed']} changed ({report['up']} up, {report['down']} down)",
        xaxis_title=after,
        yaxis_title=before,
        yaxis_autorange="reversed",
    )
    return fig


def figure_html(fig: go.Figure) -> str:
    """Return a self-contained HTML page for ``fig`` with plotly.js inlined (works offline)."""
    return fig.to_html(include_plotlyjs=True, full_html=True)


def _ensure_browser_path() -> None:
    if os.environ.get("BROWSER_PATH"):
        return
    for candidate in _BROWSERS + tuple(filter(None, (shutil.which("chromium"), shutil.which("google-chrome")))):
        if os.path.exists(candidate):
            os.environ["BROWSER_PATH"] = candidate
            return


def figure_png(fig: go.Figure, *, width: int | None = None, height: int | None = None) -> bytes | None:
    """Render ``fig`` to PNG bytes with kaleido; None when no headless browser can be started.

    kaleido 1.x drives a local Chrome/Chromium; if BROWSER_PATH is unset we point it at a Debian
    Chromium when one is installed.
    """
    _ensure_browser_path()
    try:
        return fig.to_image(format="png", width=width, height=height)
    except Exception:
        return None
