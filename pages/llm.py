"""Organizers: LLM pre-judging jobs (estimate, run, resume, the jobs table) and adaptive pooling (as `pool adaptive`)."""

import streamlit as st

from assess import settings, ui
from assess.errors import AssessError
from assess.services import endpoints as endpoint_service
from assess.services import jobs as job_service
from assess.ui import llm as llm_ui

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
    llm_ui.job_tables(database)

with pool_tab:
    llm_ui.adaptive_pool(database)
