"""The /audit page's panels: several judges side by side, system-level agreement, bias and consistency probes,
corrected estimates and budgeted human samples. Numbers come from :mod:`assess.services.audit`; figures from
:mod:`assess.ui.plots`. Names of sources, runs and topics are data: they reach markdown only through ``esc`` /
``code`` and plotly only through the plot builders (which escape them); table cells are plain text."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from assess.errors import AssessError
from assess.formats.inert_csv import frame_csv
from assess.measures import alt_test as measure
from assess.measures import verdict as verdict_rules
from assess.services import audit as service
from assess.services.contents import labels_version, samples, source_kinds, source_model
from assess.services.contents import stored_answers as stored
from assess.services.jobs import persona_versions
from assess.ui import plots
from assess.ui.frame import actor
from assess.ui.widgets import code, error, esc, figure

STATISTICS = ("kappa_unweighted", "kappa_linear", "kappa_quadratic", "kappa_binary", "alpha", "agreement")
BREAKDOWN_POINTS = 1_000  # more figures than this in a breakdown: chart and table show one source's pairs
BREAKDOWN_NAMES = {"topic": "topic (conversation)", "depth": "turn depth", "personal": "personal turn"}
BIAS_PROBES = {"length": "passage length (words)", "rank": "best rank in the runs", "depth": "turn depth"}
BIAS_PROBES |= {"personal": "personal turn", "runs": "run (its top k)"}
BUDGETS = (25, 50, 100, 200, 500, 1000, 2000, 5000, 10000)


def _ci(ci) -> str:
    return "" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _num(value) -> float | None:
    return None if value is None else round(float(value), 4)


def table(frame: pd.DataFrame, name: str, *, key: str) -> None:
    """A table with its CSV download (cells are plain text: names need no escaping)."""
    st.dataframe(frame, hide_index=True, width="stretch", key=f"tb_{key}")
    download_csv(frame, name, key=key)


def download_csv(frame: pd.DataFrame, name: str, *, key: str, label: str = "Download CSV") -> None:
    """A CSV download of ``frame``, written when the button is clicked (not on every run)."""
    st.download_button(
        label,
        lambda: frame_csv(frame).encode("utf-8"),
        file_name=f"{name}.csv",
        mime="text/csv",
        key=f"csv_{key}",
    )


def pick_pair(database, names: list[str]) -> tuple[str, str] | None:
    """Reference and judge pickers, each source shown with its kind (defaults by role: a human source and an
    LLM, :func:`assess.services.audit.default_roles`); None when both are the same."""
    kinds = service.stored_kinds(database, names)
    default_reference, default_judge = service.rank_roles(names, kinds, counts=service.label_counts(database, names))
    c1, c2 = st.columns(2)

    def label(name: str) -> str:
        return service.role_label(name, kinds)

    reference = c1.selectbox(
        "Reference (default: the human source with the most labels)",
        names,
        index=names.index(default_reference),
        format_func=label,
        key="au_ref",
    )
    judge = c2.selectbox(
        "Judge (default: an LLM)", names, index=names.index(default_judge), format_func=label, key="au_judge"
    )
    if reference == judge:
        st.info("Choose two different sources: a source is never compared with itself.")
        return None
    return reference, judge


@st.cache_data(max_entries=32, show_spinner="Computing the agreement of every pair…")
def _cached_agreement(_database, target: str, task: str, chosen: tuple, threshold: int, breakdown: str, version):
    return service.agreement_view(_database, task, list(chosen), threshold=threshold, breakdowns=(breakdown,))


def _agreement_view(database, task: str, chosen: tuple, threshold: int, breakdown: str) -> dict:
    """The agreement matrix, kept until one of the chosen sources' labels change (changing the statistic,
    opening another tab and coming back redraw it at once)."""

    version = tuple(labels_version(database, task, source) for source in chosen)
    return _cached_agreement(database, database.target, task, chosen, threshold, breakdown, version)


def ceiling_rule(minimum: int, below: list) -> str:
    """The human ceiling's minimum of shared items in words, with the human pairs it leaves out (inert)."""
    text = (
        f"Human ceiling: pooled over the pairs of two human sources that share at least {minimum} items "
        "(`audit agreement --min-shared`); a pair over fewer is listed here, not pooled."
    )
    if below:
        text += " Not pooled: " + "; ".join(f"{code(a)} and {code(b)} ({n} items)" for a, b, n in below) + "."
    return text


def matrix_panel(database, task: str, names: list[str]) -> None:
    """Agreement of every pair of chosen sources: heat map with the human ceiling, per-pair table with
    intervals, and the breakdown by topic, turn depth and personal turn."""
    chosen = st.multiselect("Sources", names, default=names[:10], key=f"au_mx_sources_{task}")  # per task
    c1, c2, c3 = st.columns(3)
    statistic = c1.selectbox("Statistic", STATISTICS, format_func=plots.statistic_name, key="au_mx_stat")
    threshold = c2.number_input("Binarise at ≥", 0, 4, 2 if task == "passage" else 1, key=f"au_mx_t_{task}")
    breakdown = c3.selectbox("Break down by", list(BREAKDOWN_NAMES), format_func=BREAKDOWN_NAMES.get, key="au_mx_by")
    try:  # only the chosen breakdown is computed: group intervals are most of the cost
        view = _agreement_view(database, task, tuple(chosen), threshold, breakdown)
    except AssessError as exc:
        st.info(esc(exc))
        return
    ceiling = view["ceiling"]
    fig = plots.agreement_matrix_heatmap(
        view["grids"][statistic], kinds=view["kinds"], ceiling=ceiling[statistic] if ceiling else None
    )
    figure(fig, "audit_matrix")
    pairs = [
        {"a": p["a"], "b": p["b"], "kinds": " / ".join(map(str, p["kinds"])), "n": p["n"]}
        | {plots.statistic_name(s): _num(p[s]) for s in STATISTICS}
        | {f"{plots.statistic_name(s)} CI": _ci(p["ci"][s]) for s in STATISTICS}
        for p in view["pairs"]
    ]
    if ceiling:
        pairs.append(
            {"a": "human ceiling", "b": f"{len(ceiling['pairs'])} human pair(s)", "kinds": "human / human"}
            | {"n": ceiling["n"]}
            | {plots.statistic_name(s): _num(ceiling[s]) for s in STATISTICS}
            | {f"{plots.statistic_name(s)} CI": _ci(ceiling["ci"][s]) for s in STATISTICS}
        )
    for name, pooled in view["splits"].items():  # people and machines never pooled together but in 'pooled'
        if pooled:
            pairs.append(
                {
                    "a": "pooled (every pair)" if name == "pooled" else f"pooled {name}",
                    "b": f"{len(pooled['pairs'])} pair(s)",
                    "kinds": name.replace("-", " / "),
                }
                | {"n": pooled["n"]}
                | {plots.statistic_name(s): _num(pooled[s]) for s in STATISTICS}
                | {f"{plots.statistic_name(s)} CI": _ci(pooled["ci"][s]) for s in STATISTICS}
            )
    level = view["bootstrap"]["level"]
    st.caption(
        f"Intervals: {level:.0%} percentile bootstrap over items ({view['bootstrap']['replicates']} replicates). "
        + ceiling_rule(view["ceiling_min_shared"], view["ceiling_below_minimum"])
    )
    table(pd.DataFrame(pairs), "agreement_pairs", key="au_mx_pairs")
    figures = [(p, g) for p in view["pairs"] for g in p["by"].get(breakdown, [])]  # (pair, group) in table order
    rows = [
        {"pair": f"{p['a']} vs {p['b']}", "group": str(g["group"]), "n": g["n"], "value": _num(g[statistic])}
        | {"CI": _ci(g["ci"][statistic])}
        for p, g in figures
    ]
    rule = view["breakdowns"].get(breakdown)
    if isinstance(rule, dict):
        st.caption(esc(f"{rule['rule']}; PTKB source: {rule['ptkb_source'] or 'none'}"))
    if not rows:
        st.caption("No group of this breakdown is known for these sources.")
        return
    if view["bootstrap"]["replicates"] and not view["bootstrap"]["groups"]:
        st.caption(
            f"No intervals per {BREAKDOWN_NAMES[breakdown]}: {len(rows):,} groups of the pairs times "
            f"{view['bootstrap']['replicates']:,} replicates exceed {view['group_draws_limit']:,} draws "
            "(their cost grows with that product); choose fewer sources for them."
        )
    shown = [True] * len(rows)
    if len(rows) > BREAKDOWN_POINTS:  # e.g. 45 pairs x 200 topics: one source's pairs at a time
        humans = [s for s in view["sources"] if view["kinds"].get(s) == "human"]
        focus = st.selectbox(
            "Breakdown of the pairs with",
            view["sources"],
            index=view["sources"].index(humans[0]) if humans else 0,
            key="au_mx_focus",
        )
        shown = [focus in (p["a"], p["b"]) for p, _ in figures]
        st.caption(
            esc(
                f"{len(rows):,} figures ({len(view['pairs'])} pairs by {BREAKDOWN_NAMES[breakdown]}) are more than a "
                f"chart can show: the chart and the table hold the {sum(shown):,} of the pairs with {focus}; "
                "the download below the table has every pair."
            )
        )
    points = [
        {"name": r["group"], "series": r["pair"], "value": r["value"]}
        | dict(zip(("low", "high"), g["ci"][statistic] or (None, None)))
        for r, (_, g), keep in zip(rows, figures, shown)
        if keep
    ]
    title = f"{plots.statistic_name(statistic)} per {BREAKDOWN_NAMES[breakdown]}"
    figure(plots.interval_plot(points, title=title, axis=plots.statistic_name(statistic)), "audit_breakdown")
    every = pd.DataFrame(rows)
    if all(shown):
        table(every, f"agreement_by_{breakdown}", key="au_mx_by")
    else:
        table(every[shown], f"agreement_by_{breakdown}_shown", key="au_mx_by")
        download_csv(every, f"agreement_by_{breakdown}", key="au_mx_by_all", label="Download every pair (CSV)")


def systems_panel(database, reference: str, judge: str) -> None:
    """The runs ranked under both sources: correlations and top-k overlap with intervals, significance
    preservation, leader change."""
    c1, c2 = st.columns(2)
    measure = c1.selectbox("Measure", ["nDCG@5", "nDCG@3", "nDCG@10", "P@5", "P@10"], key="au_sys_m")
    correction = c2.radio("Correction", ["holm", "bonferroni"], horizontal=True, key="au_sys_c")
    try:
        view = service.systems_view(database, reference, judge, measure=measure, correction=correction)
    except AssessError as exc:
        st.info(esc(exc))
        return
    if not view["n_topics"] or view["n_runs"] < 2:
        st.info(f"Runs: {view['n_runs']}, topics judged by both: {view['n_topics']}: too few to compare rankings.")
        return
    names = {"kendall_tau": "Kendall τ", "tau_ap": "τ_AP", "spearman_rho": "Spearman ρ", "pearson_r": "Pearson r"}
    points = [{"name": names[n], "series": "correlation", **_bounds(view["correlations"][n])} for n in names]
    points += [{"name": f"top-{t['k']} overlap", "series": "top-k overlap", **_bounds(t)} for t in view["top_k"]]
    title = f"{view['measure']}: {view['n_runs']} runs over {view['n_topics']} topics ({view['bootstrap']['method']})"
    figure(plots.interval_plot(points, title=title, axis="agreement of the rankings", reference=1), "audit_systems")
    table(pd.DataFrame([{k: p[k] for k in ("name", "value", "low", "high")} for p in points]), "systems", key="sy")
    sig = view["significance"]
    st.markdown(
        f"**Significance preservation** ({esc(sig['test'])}, {sig['correction']} correction, α = {sig['alpha']}): "
        f"of {sig['significant_reference']} run pairs significant under the reference, {sig['same']} keep their "
        f"direction, {sig['lost']} lose significance, {sig['flipped']} flip; {sig['gained']} become significant."
    )
    details = [
        {"run A": d["a"], "run B": d["b"], "outcome": d["outcome"]}
        | {f"{side} {key}": _num(d[side].get(key)) for side in ("reference", "other") for key in ("mean_diff", "p")}
        | {f"{side} significant": d[side]["significant"] for side in ("reference", "other")}
        for d in sig["details"]
    ]
    table(pd.DataFrame(details), "significance", key="au_sig")
    lead = view["leader"]
    change = "changes" if lead["changed"] else "stays the same"
    st.markdown(
        f"Leading run under {code(reference)}: {code(lead['reference'])}; under {code(judge)}: "
        f"{code(lead['other'])}. The leader {change} (the reference's leader is ranked "
        f"{lead['reference_leader_rank_under_other']} under the judge)."
    )


def _bounds(entry: dict[str, Any]) -> dict[str, Any]:
    value = entry.get("value", entry.get("overlap"))
    ci = entry.get("ci") or (None, None)
    return {"value": value, "low": ci[0], "high": ci[1]}


def bias_panel(database, reference: str, judge: str) -> None:
    """Judge - reference grade differences against a covariate, with intervals."""
    try:
        view = service.bias_view(database, reference, judge)
    except AssessError as exc:
        st.info(esc(exc))
        return
    overall = view["overall"]
    if not overall["n"]:
        st.info("The two sources share no graded passage.")
        return
    st.caption(
        f"{view['difference']}: mean {overall['mean_diff']:+.3f} {_ci(overall['ci'])} over {overall['n']} passages; "
        f"judge higher on {overall['higher']:.0%}, equal {overall['equal']:.0%}, lower {overall['lower']:.0%}."
    )
    probes = [p for p in BIAS_PROBES if view.get(p) and (p == "runs" or view[p].get("groups"))]
    if not probes:
        st.info("No probe has groups to show here (no passage texts, runs, turn depths or PTKB labels to group by).")
        return
    probe = st.radio("Against", probes, format_func=BIAS_PROBES.get, horizontal=True, key="au_bias_p")
    groups = view[probe] if probe == "runs" else view[probe]["groups"]
    label = "run" if probe == "runs" else "group"
    rows = [
        {"name": str(g[label]), "series": "judge - reference", "value": g["mean_diff"]}
        | dict(zip(("low", "high"), g["ci"] or (None, None)))
        | {"n": g["n"], "higher": g["higher"], "equal": g["equal"], "lower": g["lower"]}
        for g in groups
    ]
    title = f"Grade difference ({judge} - {reference}) by {BIAS_PROBES[probe]}"
    figure(plots.interval_plot(rows, title=title, axis="mean difference", reference=0), "audit_bias")
    slope = view[probe].get("slope") if probe != "runs" else None
    if slope:
        st.caption(f"OLS slope of the difference on the raw value: {slope['slope']:+.4f} {_ci(slope['ci'])}.")
    if probe == "length" and view["length_unknown"]:
        st.caption(f"{view['length_unknown']} passages without stored text: length unknown, left out.")
    table(pd.DataFrame(rows).drop(columns=["series"], errors="ignore"), f"bias_{probe}", key="au_bias")


def alt_test_panel(database, task: str, names: list[str]) -> None:
    """Can a judge replace the human sources? The alternative annotator test (``audit alt-test``): the humans
    default to every source of a human kind, the judge to an LLM; epsilon, q and the minimum are the
    measure's defaults, epsilon adjustable."""

    kinds = service.stored_kinds(database, names)
    humans_default = [n for n in names if kinds[n] in service.HUMAN_KINDS]  # overlap plans' assessors among them
    _, judge_default = service.rank_roles(names, kinds, counts=service.label_counts(database, names))
    c1, c2, c3 = st.columns([3, 2, 1])
    humans = c1.multiselect(
        "Humans (two or more)",
        names,
        default=humans_default,
        format_func=lambda n: service.role_label(n, kinds),
        key="au_alt_humans",
    )
    judge = c2.selectbox(
        "Judge that would replace them",
        names,
        index=names.index(judge_default),
        format_func=lambda n: service.role_label(n, kinds),
        key="au_alt_judge",
    )
    epsilon = c3.number_input(
        "Margin ε",
        min_value=0.0,
        max_value=4.0,
        value=measure.EPSILON,
        step=0.05,
        help="How much worse than a human the judge may be per item: 0.2 for expert assessors, 0.15 skilled "
        "annotators, 0.1 crowd workers (the authors' rule of thumb).",
        key="au_alt_eps",
    )
    try:
        view = service.alt_test_view(database, humans, judge, task=task, epsilon=epsilon)
    except AssessError as e:
        error(str(e))
        return
    if not view["computable"]:
        st.info(view["reason"])
        return
    verdict = "can replace" if view["passes"] else "cannot replace"
    if view["too_few_humans"]:
        st.warning(esc(view["too_few_humans"]))
    st.markdown(
        f"**{esc(judge)} {verdict} these humans here**: it wins against {view['omega']:.0%} of them "
        f"(winning rate ω = {view['omega']:.3f}; it passes at ω ≥ 0.5), advantage probability ρ = {view['rho']:.3f}, "
        f"margin ε = {view['epsilon']:g}, Benjamini–Yekutieli at q = {view['q']:g}, scoring {view['scoring']}."
    )
    frame = pd.DataFrame(
        [
            {
                "human": r["annotator"],
                "items": r["items"],
                "judge advantage": _num(r["llm_advantage"]),
                "human advantage": _num(r["human_advantage"]),
                "p": _num(r["p_value"]),
                "corrected p": _num(r["corrected_p"]),
                "judge wins": r["rejected"],
            }
            for r in view["annotators"]
        ]
    )
    table(frame, "alt_test", key="au_alt")
    if view["skipped"]:
        st.caption(
            "Not tested (fewer than "
            f"{view['min_items']} items): "
            + ", ".join(f"{esc(r['annotator'])} ({r['items']})" for r in view["skipped"])
        )
    if view["below_recommended"]:
        st.caption("A tested human has fewer than the 50 items the authors recommend: the verdict is fragile.")
    st.caption(
        "The alternative annotator test (Calderon, Reichart and Dror 2025): each human left out in turn, the judge "
        "and that human scored against the other humans item by item, a one-sided paired t-test with margin ε. "
        "The same figures: `python -m assess audit alt-test --json`."
    )


def consistency_panel(database, names: list[str]) -> None:
    """Self-consistency of the LLM sources among ``names`` with K answers per item, and persona sensitivity of
    each model that answered with and without the PTKB statements (``prejudge --no-ptkb`` keeps the variant's
    answers in a source of its own, ``llm:MODEL:no-ptkb``: the versions are gathered over the model's sources)."""

    kinds = service.source_kinds(database, names)
    found = False
    by_model: dict[str, list[str]] = {}
    for source in (n for n in names if kinds[n] == "llm"):
        by_model.setdefault(source_model(database, source) or source, []).append(source)
        try:
            view = service.consistency_view(database, source)
        except AssessError:
            continue
        if view["samples"] and view["samples"]["max"] > 1:
            found = True
            st.markdown(
                f"**{esc(source)}** answered {view['n_multi']} items at least twice: Krippendorff's α = "
                f"{view['alpha']:.3f}, unanimous {view['unanimous']:.0%}, agreeing answer pairs {view['pairwise']:.0%}; "
                f"the consensus differs from the first answer on {view['changed_by_consensus']} items."
            )
    for sources in by_model.values():
        versions = sorted({r["prompt_version"] for s in sources for r in stored(database, s, "passage", limit=5000)})
        if len(versions) >= 2:
            found = True
            main = next((s for s in sources if not s.endswith(":no-ptkb")), sources[0])
            persona_panel(database, main, versions)
    if not found:
        st.caption("No LLM source has several answers per item (prejudge --samples K) or two prompt versions.")


def persona_panel(database, source: str, versions: list[str]) -> None:
    """The model's grades with and without the PTKB statements (defaults: the passage prompt and its no-PTKB
    variant when both were asked, else a version named ...noptkb... as the one without)."""

    with_default, without = persona_versions()
    if with_default not in versions or without not in versions:
        without = next((v for v in versions if "noptkb" in v.replace("-", "").replace("_", "")), versions[-1])
        with_default = next(v for v in versions if v != without)
    c1, c2 = st.columns(2)
    with_v = c1.selectbox("Prompt with PTKB", versions, index=versions.index(with_default), key=f"au_pw_{source}")
    without_v = c2.selectbox("Prompt without PTKB", versions, index=versions.index(without), key=f"au_pn_{source}")
    try:
        view = service.persona_view(database, source, with_v, without_v)
    except AssessError as exc:
        st.caption(esc(exc))
        return
    figure(plots.change_heatmap(view, before="without PTKB", after="with PTKB"), f"audit_persona_{source}")
    rows = [{"turns": "all", **{k: view[k] for k in ("n", "changed", "up", "down", "mean_change")}}]
    rows += [
        {"turns": str(g["group"]), **{k: g[k] for k in ("n", "changed", "up", "down", "mean_change")}}
        for g in view.get("groups", [])
    ]
    table(pd.DataFrame(rows), "persona", key=f"au_persona_{source}")


ESTIMATES = {"P@k": "P@k at the threshold", "nDCG@k": "nDCG@k", "ntr": "NtR recall", "topics": "topic share"}


def estimate_panel(database, reference: str, judge: str) -> None:
    """Each run's corrected (PPI) estimate beside the human-only one from the same sample, with the sample's
    design said in words; then the coverage simulation (shown also where the estimate is refused)."""

    names = [None] + [s["name"] for s in samples(database) if s["task"] == "passage"]
    c1, c2, c3 = st.columns(3)
    drawn = service.reference_sample(database, reference)  # the sample the reference was given, when there is one
    sample = c1.selectbox(
        "Human sample",
        names,
        index=names.index(drawn) if drawn in names else 0,
        format_func=lambda s: "the reference's labels (assumed uniform)" if s is None else f"{s} (drawn)",
        key=f"au_es_s_{reference}",  # per reference: its default follows the reference picked
    )
    k = c2.number_input("k", 1, 100, 5, key="au_es_k")
    threshold = c3.number_input("Relevant at ≥", 1, 4, 2, key="au_es_t")
    try:
        view = service.estimate_view(database, reference, judge, sample=sample, k=int(k), threshold=int(threshold))
    except AssessError as exc:
        st.info(esc(f"No estimate: {exc}"))
    else:
        estimates(view, k=int(k))
    st.subheader("Coverage of the intervals")
    coverage_panel(database, reference, judge)


def estimates(view: dict, *, k: int) -> None:
    """The estimate view's figures: the design in words, a chart and a table per measure."""
    design = view["design"]
    st.caption(esc(f"{view['estimator']}. Sample ({design['kind']}): {design['statement']}."))
    for reason in (view.get("refused") or {}).values():
        st.caption(esc(f"NtR recall not estimated: {reason}"))
    shown = [m for m in ESTIMATES if m == "topics" or view.get(m)]
    measure = st.radio("Estimate", shown, format_func=ESTIMATES.get, horizontal=True, key="au_es_m")
    if measure == "topics":
        entries = {str(t): v for t, v in view["topic_shares"].items()}
    elif measure == "ntr":
        entries = {r: v["estimate"] for r, v in view["ntr"]["runs"].items()}
    else:
        entries = {r: v["estimate"] for r, v in view[measure].items()}
    rows, points, missing = [], [], []
    for name, e in entries.items():
        if not e:
            continue
        rows.append({"name": name, "judge only": _num(e["judge_only"]), "λ": e["lambda"], "sampled": e["sampled"]})
        if not e["estimable"]:
            missing.append(name)
            rows[-1] |= {f"{series} {x}": None for series in ("PPI", "human only") for x in ("value", "low", "high")}
            rows[-1]["estimable"] = "no: nothing sampled"
            continue
        for series, key in (("PPI", "ppi"), ("human only", "human_only")):
            points.append({"name": name, "series": series, **{x: e[key][x] for x in ("value", "low", "high")}})
            rows[-1] |= {f"{series} {x}": _num(e[key][x]) for x in ("value", "low", "high")}
        rows[-1]["estimable"] = "yes"
    title = f"{ESTIMATES[measure].replace('@k', f'@{k}')}: PPI vs human only"
    figure(plots.interval_plot(points, title=title, axis=ESTIMATES[measure]), "audit_estimates")
    if missing:
        st.caption(
            esc(
                f"Not estimable (no sampled item informs it, so no interval is shown): {', '.join(missing)}. "
                "Shares are reported inside [0, 1]."
            )
        )
    table(pd.DataFrame(rows), f"estimates_{measure}", key="au_es")


def coverage_panel(database, reference: str, judge: str) -> None:
    """The coverage simulation: a form for its size, its result kept for the pair and drawn below the form (a
    download button cannot sit inside a form)."""
    with st.form("au_cov"):
        c1, c2 = st.columns(2)
        n = c1.number_input("Sample size", 2, 100000, 50, key="au_cov_n")
        repeats = c2.number_input("Repeats", 1, 10000, 500, key="au_cov_r")
        submitted = st.form_submit_button("Simulate coverage")
    asked = (reference, judge, int(n), int(repeats))
    if submitted:
        try:
            st.session_state["au_cov_result"] = (
                asked,
                service.coverage_view(database, reference, judge, sample=int(n), repeats=int(repeats)),
            )
        except AssessError as exc:
            st.session_state.pop("au_cov_result", None)
            error("", exc)
            return
    kept = st.session_state.get("au_cov_result")
    if not kept or kept[0] != asked:  # another pair or size since: simulate again
        return
    cov = kept[1]
    st.caption(
        esc(
            f"{reference} (reference) vs {judge} (judge): nominal {cov['nominal']:.0%}, true share "
            f"{cov['true_value']:.3f} of {cov['n_items']} items both graded; {cov['repeats']} uniform samples "
            f"of {cov['sample']}."
        )
    )
    rows = [{"estimate": k, **cov[k]} for k in ("ppi", "human_only")]
    table(pd.DataFrame(rows), "coverage", key="au_cov")


def sample_panel(database, names: list[str], judge: str) -> None:
    """Expected interval widths by budget, and a form to draw a budgeted sample into an assessor's queue."""

    assessors = sorted(n for n, kind in source_kinds(database).items() if kind == "assessor")
    others = [n for n in names if n != judge]
    c1, c2 = st.columns(2)
    design = c1.radio("Design", ["stratified", "disagreement"], horizontal=True, key="au_sa_d")
    second = None
    if design == "disagreement":  # default: another judge (an LLM before a person), by the sources' kinds
        kinds = service.stored_kinds(database, names)
        other = service.rank_roles(names, kinds, reference=judge)[1]
        second = c2.selectbox(
            "Second judge (disagreement)",
            others,
            index=others.index(other),
            format_func=lambda n: service.role_label(n, kinds),
            key="au_sa_2",
        )
    try:
        plan = service.sample_plan(database, judge, budgets=BUDGETS, design=design, second=second)
    except AssessError as exc:
        st.info(esc(exc))
        return
    st.caption(esc(f"{plan['population']} passages graded by {judge}. Prior: {plan['prior']}."))
    if plan["rows"]:
        figure(plots.width_curves(plan["rows"]), "audit_widths")
        table(pd.DataFrame(plan["rows"]), "expected_widths", key="au_sa_w")
    if not assessors:
        st.caption("No assessor yet: sign one in (or create an account) to give them a sample.")
        return
    with st.form("au_sample"):
        c1, c2, c3 = st.columns(3)
        name = c1.text_input("Sample name", key="au_sa_name")
        budget = c2.number_input("Budget (items)", 1, max(1, plan["population"]), min(50, plan["population"]))
        assessor = c3.selectbox("Assessor", assessors, key="au_sa_who")
        if st.form_submit_button("Create sample"):
            try:
                done = service.create_sample(
                    database,
                    name,
                    judge,
                    budget=int(budget),
                    design=design,
                    second=second,
                    assessor=assessor,
                    by=_actor(),
                )
            except AssessError as exc:
                error("Sample not created: ", exc)
            else:
                st.success(esc(f"Sample {done['sample']}: {done['items']} items lead {assessor}'s queue."))


def _actor() -> str | None:
    return actor()


def anchoring_panel(database, task: str) -> None:
    """Anchoring after reveal with the active time of the changes, then rubber-stamping of shown LLM labels
    (share equal to the LLM by time taken, Potato's flag), each with its CSV download."""
    report = service.rubber_stamping(database, task)
    if report["anchoring"]:
        table(pd.DataFrame(report["anchoring"]), f"anchoring_{task}", key="au_anchor")
    else:
        st.caption("No assessor has changed a label after an LLM label was revealed (judging mode 'reveal').")
    st.subheader("Rubber-stamping of shown LLM labels")
    rules = report["rules"]
    st.caption(
        f"Labels written with an LLM's label on screen ('shown' mode; changes after a 'reveal'): the share equal to "
        f"the LLM's, by time taken. Flag ({esc(rules['source'])}): {rules['min_accepted']}+ accepted, median under "
        f"{rules['median_ms_below']} ms, at most {rules['max_corrected_share']:.0%} corrected later."
    )
    if not report["rows"]:
        st.caption("No label was written with an LLM label on screen.")
        return
    flat = []
    for r in report["rows"]:
        base = {k: v for k, v in r.items() if k != "by_time"}
        flat += [{**base, "time_taken": b, **{f"bucket_{k}": v for k, v in x.items()}} for b, x in r["by_time"].items()]
    for r in report["rows"]:
        if r["flag"]:
            st.warning(f"{esc(r['assessor'])} vs {esc(r['llm'])}: {esc(r['flag'])}")
    table(pd.DataFrame(flat), f"rubber_stamp_{task}", key="au_stamp")


VERDICT_STATUS = {"pass": "pass", "fail": "fail", "missing": "cannot be computed", "alternative": "the alternative"}
VERDICT_STATUS |= {"not needed": "not needed", "too few": "too few to tell"}


def verdict_panel(database, reference: str, judge: str) -> None:
    """Can the judge replace the reference here? The verdict of ``audit verdict`` (replace, pre-filter or assist
    only) with its rule; per criterion its figures, thresholds and pass/fail (values as the JSON has them), the
    command each figure comes from, or what is missing and how to get it. Margin ε and the interval width the
    human budget should reach are adjustable."""

    c1, c2 = st.columns(2)
    epsilon = c1.number_input(
        "Margin ε of the alternative annotator test",
        min_value=0.0,
        max_value=1.0,
        value=measure.EPSILON,
        step=0.05,
        help="0.2 for expert assessors, 0.15 skilled annotators, 0.1 crowd workers (the authors' rule of thumb).",
        key="au_vd_eps",
    )
    width = c2.number_input(
        "Interval width the human budget should reach",
        min_value=0.01,
        max_value=1.0,
        value=verdict_rules.WIDTH,
        step=0.01,
        key="au_vd_w",
    )
    try:
        view = service.verdict_view(database, reference, judge, epsilon=float(epsilon), width=float(width))
    except AssessError as exc:
        error("No verdict: ", exc)
        return
    st.markdown(
        f"**Verdict: {view['verdict']}.** Can {code(judge)} replace {code(reference)} here? {esc(view['reason'])}."
    )
    st.caption(esc(f"Rule: {view['rule']}."))
    summary = [{"criterion": c["name"], "status": VERDICT_STATUS[c["status"]]} for c in view["criteria"]]
    st.dataframe(pd.DataFrame(summary), hide_index=True, width="stretch", key="au_vd_summary")
    for item in view["criteria"]:
        st.subheader(f"{item['name'][0].upper()}{item['name'][1:]}: {VERDICT_STATUS[item['status']]}")
        st.caption(esc(f"Rule: {item['rule']}."))
        if item["figures"]:
            rows = [
                {
                    "figure": f["name"],
                    "value": f["value"],
                    "low": f.get("low"),
                    "high": f.get("high"),
                    "threshold": f.get("threshold", ""),
                    "passes": {True: "pass", False: "fail"}.get(f.get("passes"), ""),
                }
                for f in item["figures"]
            ]
            table(pd.DataFrame(rows), f"verdict_{item['key']}", key=f"au_vd_{item['key']}")
            used = [
                command for name, command in item["commands"].items() if any(f["from"] == name for f in item["figures"])
            ]
            st.caption("The same figures: " + "; ".join(code(c) for c in used))
        for note in (item["missing"], item.get("refused")):
            if note:
                st.info(esc(f"{'Too few' if item['status'] == 'too few' else 'Missing'}: {note}"))
