"""Organizers: LLM pre-judging jobs (estimate, run, resume, the jobs table) and adaptive pooling (as `pool adaptive`)."""

import pandas as pd
import streamlit as st

from assess import settings, ui
from assess.errors import AssessError
from assess.services import endpoints as endpoint_service
from assess.services import jobs as job_service
from assess.services import pooling

ui.frame_guard(organizer=True)
database = ui.db()
st.title("LLM pre-judging")
run_tab, pool_tab = st.tabs(["Pre-judge", "Adaptive pool"])

with run_tab:
    env = settings.llm_settings()
    try:
        allowed = endpoint_service.allowed_endpoints()
    except AssessError as exc:
        allowed = []
        ui.error("", exc)
    if not allowed:
        st.info(
            "No LLM endpoint is configured: the deployment sets ASSESS_LLM_BASE_URL (its own endpoint, with "
            "ASSESS_LLM_API_KEY) or ASSESS_LLM_ENDPOINTS (named endpoints); see docs/settings.md."
        )
    with st.form("prejudge_form"):
        c1, c2 = st.columns(2)
        endpoint = c1.selectbox(
            "Endpoint (configured by the deployment)",
            [e["name"] for e in allowed],
            key="pj_endpoint",
            accept_new_options=True,
            format_func=lambda name: next(
                (f"{name}: {e['base URL']}" for e in allowed if e["name"] == name), str(name)
            ),
            help="Only the endpoints the deployment configures (ASSESS_LLM_BASE_URL as `default`, and "
            "ASSESS_LLM_ENDPOINTS); the server's key goes only to `default`.",
        )
        model = c2.text_input("Model", env["model"] or "", key="pj_model")
        c1, c2, c3, c4, c5 = st.columns(5)
        job_task = c1.selectbox("Task", list(job_service.TASKS), key="pj_task")
        source = c2.text_input("Source (llm:NAME; empty: llm:MODEL)", key="pj_source")
        concurrency = c3.number_input("Concurrency", 1, 64, 16, key="pj_conc")
        limit = c4.number_input("Limit (0: all)", 0, 1_000_000, 0, key="pj_limit")
        depth = c5.number_input(
            "Depth (0: the pool)",
            0,
            1000,
            0,
            key="pj_depth",
            help="passage and nuggets tasks: the top K of every stored run instead of the pool, "
            "e.g. 30 to grade ranks 6–30 before adaptive pooling",
        )
        if allowed:
            st.caption(
                "Allowed endpoints: "
                + "; ".join(ui.esc(f"{e['name']} → {e['base URL']} (key: {e['key']})") for e in allowed)
            )
        c1, c2, c3 = st.columns(3)
        estimate_clicked = c1.form_submit_button("Estimate")
        start_clicked = c2.form_submit_button("Start / resume", type="primary")
        stop_clicked = c3.form_submit_button("Stop")
    options = dict(
        model=model or None,
        endpoint=endpoint or "",
        source=source or None,
        limit=limit or None,
        depth=depth or None,
        concurrency=int(concurrency),
    )
    if stop_clicked:
        st.warning("Stopped. Every answer received so far is stored; Start / resume asks only what is missing.")
    elif estimate_clicked or start_clicked:
        try:
            plan, estimate, cfg = job_service.prepare(database, job_task, starting=start_clicked, **options)
            st.info(ui.esc(job_service.describe_estimate(estimate)))
            if start_clicked:
                bar = st.progress(0.0, text="Starting…")

                def progress(done, total, counts):
                    fraction, caption = job_service.describe_progress(done, total, counts)
                    bar.progress(fraction, text=ui.esc(caption))

                summary = job_service.run_with_settings(
                    database, plan, cfg, concurrency=int(concurrency), progress=progress
                )
                st.success(f"Job {summary['job']}: {ui.esc(job_service.describe_stored(summary))}")
        except AssessError as exc:
            ui.error("", exc)
    st.subheader("Jobs")
    st.caption(
        "A job killed without a chance to stop (its process gone, or no heartbeat for 2 × the call "
        "timeout, at least 60 s) is shown as interrupted; Start / resume picks up what it left."
    )
    job_rows = job_service.latest_jobs(database)
    st.dataframe(pd.DataFrame(job_rows), hide_index=True, width="stretch", key="pj_jobs")
    worker_rows = job_service.worker_rows(database, [j["id"] for j in job_rows])
    if worker_rows:
        st.caption("Workers of shared jobs (`prejudge --join`): each claims blocks of items under a lease.")
        st.dataframe(pd.DataFrame(worker_rows), hide_index=True, width="stretch", key="pj_workers")
    endpoint_rows = endpoint_service.figure_rows(database, [j["id"] for j in job_rows])
    if endpoint_rows:
        st.caption("Jobs spread over several endpoints (`prejudge --endpoint`): the figures of each endpoint.")
        st.dataframe(pd.DataFrame(endpoint_rows), hide_index=True, width="stretch", key="pj_endpoints")

with pool_tab:
    st.caption(
        "iKAT 2024 adaptive pooling: ranks 1 to *always* of every stored run enter the pool; deeper ranks, "
        "down to *depth*, only when the LLM source graded the passage at or above the threshold. Pre-judge "
        "the candidates first (tab Pre-judge, task passage, depth 30)."
    )
    llm_sources, humans = job_service.adaptive_sources(database)
    if not llm_sources:
        st.info("No LLM source yet: pre-judge passages first.")
    else:
        with st.form("adaptive_form"):
            c1, c2, c3, c4, c5, c6 = st.columns(6)
            llm = c1.selectbox("LLM source", llm_sources, key="ap_source")
            threshold = c2.number_input("Threshold (grade ≥)", 0, 4, 2, key="ap_threshold")
            always = c3.number_input("Always pooled ranks", 0, 1000, 5, key="ap_always")
            pool_depth = c4.number_input("Depth", 1, 1000, 30, key="ap_depth")
            qrels = c5.selectbox("Human qrels (relevant dropped)", ["(none)", *humans], key="ap_qrels")
            relevant = c6.number_input("Relevant at grade ≥", 0, 4, 2, key="ap_relevant")
            c1, c2 = st.columns(2)
            report_clicked = c1.form_submit_button("Report")
            apply_clicked = c2.form_submit_button("Apply: add to the pool", type="primary")
        if report_clicked or apply_clicked:
            try:
                r = pooling.adaptive_pool(
                    database,
                    llm,
                    int(threshold),
                    int(always),
                    int(pool_depth),
                    qrels=None if qrels == "(none)" else qrels,
                    relevant=int(relevant),
                    apply=apply_clicked,
                )
            except AssessError as exc:
                ui.error("", exc)
            else:
                shown = job_service.adaptive_metrics(r)
                for col, (label, value) in zip(st.columns(len(shown)), shown.items()):
                    col.metric(label, f"{value:,}")
                st.info(ui.esc(job_service.describe_adaptive(r)))
                if apply_clicked and "added_to_pool" in r:
                    st.success(f"Added {r['added_to_pool']:,} pairs to the pool (method adaptive).")
                elif apply_clicked:
                    st.warning("No stored runs: nothing to add to the pool (the report covers the judged pairs).")
