"""Organizers: audit a judge against another label source (kappa, confusion, per-topic kappa, disagreements
with the LLM's own words, run rankings, anchoring after reveal) and run LLM pre-judging jobs."""
import pandas as pd
import streamlit as st

from assess import plots, prejudge, scoreboard, settings, ui
from assess.errors import AssessError
from store import exports, prejudgments

ui.frame_guard(organizer=True)
database = ui.db()
st.title("Judge audit")
audit_tab, run_tab = st.tabs(["Audit", "Pre-judge"])
TABLES = {"passage": "passage_labels", "ptkb": "ptkb_labels", "ntr": "ntr_labels"}

with audit_tab:
    task = st.radio("Labels", list(TABLES), horizontal=True, key="au_task")
    names = exports.label_sources(database, TABLES[task])
    llm = [n for n in names if n.startswith("llm:")]
    if len(names) < 2:
        st.info("Two label sources are needed to compare.")
    else:
        c1, c2, c3, c4 = st.columns(4)
        a = c1.selectbox("Source A", names, key="au_a")
        b = c2.selectbox("Source B (e.g. the LLM)", names, key="au_b",
                         index=names.index(llm[0]) if llm and llm[0] != names[0] else 1)
        weights = c3.selectbox("Weights", ["linear", "quadratic"], key="au_w")
        threshold = c4.number_input("Binarise at ≥", 0, 4, 2 if task == "passage" else 1, key="au_t")
        report = scoreboard.agreement_from_store(database, task, a, b, weights=weights, threshold=threshold)
        shown = {"n": "n", "agreement": "agreement", "kappa_unweighted": "κ", f"kappa_{weights}": f"κ {weights}",
                 "kappa_binary": f"κ binary (≥ {threshold})"}
        for col, (key, label) in zip(st.columns(len(shown)), shown.items()):
            value = report.get(key)
            col.metric(label, "n/a" if value is None else (f"{value:,}" if key == "n" else f"{value:.3f}"))
        if report["n"]:
            ui.figure(plots.confusion_heatmap(report, names=(a, b)), "audit_confusion")
            ui.figure(plots.kappa_bars(report["per_topic"]), "audit_kappa_per_topic")
        st.subheader("Disagreements")
        rows = pd.DataFrame(prejudgments.disagreements(database, task, a, b))
        st.caption(f"{len(rows)} items labelled differently (at most 500 shown), with what each LLM answered")
        st.dataframe(rows, hide_index=True, width="stretch", key="au_dis")
        if task == "passage":
            st.subheader("Run rankings under both label sets")
            view = scoreboard.ranking_view(database, a, b)
            if not view:
                st.info("No ranking runs in the store.")
            else:
                measure = st.selectbox("Measure", list(view), key="au_m")
                ui.figure(plots.ranking_scatter(view[measure]["a"], view[measure]["b"], view[measure]["kendall_tau"],
                                                labels=(f"{measure} under {a}", f"{measure} under {b}")), "audit_rank")
        if task in ("passage", "ptkb"):
            st.subheader("Anchoring after reveal")
            anchoring = prejudgments.anchoring(database, task)
            if anchoring:
                st.dataframe(pd.DataFrame(anchoring), hide_index=True, width="stretch", key="au_anchor")
            else:
                st.caption("No assessor has changed a label after an LLM label was revealed (judging mode 'reveal').")

with run_tab:
    env = settings.llm_settings()
    with st.form("prejudge_form"):
        c1, c2 = st.columns(2)
        base_url = c1.text_input("Base URL (OpenAI-compatible; empty: OpenAI)", env["base_url"] or "", key="pj_url")
        model = c2.text_input("Model", env["model"] or "", key="pj_model")
        c1, c2, c3, c4 = st.columns(4)
        job_task = c1.selectbox("Task", list(prejudge.TASKS), key="pj_task")
        source = c2.text_input("Source (llm:NAME; empty: llm:MODEL)", key="pj_source")
        concurrency = c3.number_input("Concurrency", 1, 64, 16, key="pj_conc")
        limit = c4.number_input("Limit (0: all)", 0, 1_000_000, 0, key="pj_limit")
        st.caption("API key: " + ("from ASSESS_LLM_API_KEY / OPENAI_API_KEY" if env["api_key"] else
                                  "none set (fine for a local server; set ASSESS_LLM_API_KEY for OpenAI)"))
        c1, c2, c3 = st.columns(3)
        estimate_clicked = c1.form_submit_button("Estimate")
        start_clicked = c2.form_submit_button("Start / resume", type="primary")
        stop_clicked = c3.form_submit_button("Stop")
    options = dict(model=model or None, base_url=base_url or None, source=source or None, limit=limit or None,
                   concurrency=int(concurrency))
    if stop_clicked:
        st.warning("Stopped. Every answer received so far is stored; Start / resume asks only what is missing.")
    elif estimate_clicked or start_clicked:
        try:
            plan, estimate, cfg = prejudge.prepare(database, job_task, **options)
            st.info(prejudge.describe_estimate(estimate))
            if start_clicked:
                bar = st.progress(0.0, text="Starting…")

                def progress(done, total, counts):
                    bar.progress(done / total if total else 1.0, text=f"{done} / {total} stored · "
                                 f"{counts['unparseable']} unparseable · {counts['error']} failed")

                summary = prejudge.run_with_settings(database, plan, cfg, concurrency=int(concurrency),
                                                     progress=progress)
                st.success(f"Job {summary['job']}: {summary['asked'] + summary['copied']} stored "
                           f"({summary['ok']} ok, {summary['repaired']} repaired, {summary['unparseable']} "
                           f"unparseable, {summary['error']} failed), {summary['copied']} from cache")
        except AssessError as exc:
            st.error(str(exc))
    st.subheader("Jobs")
    st.dataframe(pd.DataFrame(prejudgments.jobs(database)), hide_index=True, width="stretch", key="pj_jobs")
