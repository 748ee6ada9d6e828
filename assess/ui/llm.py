"""The /llm page's tables and the adaptive pooling tab: the pre-judging jobs with their workers and endpoints, and
``pool adaptive`` as a form."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from assess.errors import AssessError
from assess.services import endpoints as endpoint_service
from assess.services import jobs as job_service
from assess.services import pooling, provider_batches
from assess.ui.widgets import error, esc


def job_tables(database) -> None:
    """The latest jobs, the workers of the shared ones and the figures of jobs spread over endpoints."""
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
    batch_rows = provider_batches.batch_rows(database, [j["id"] for j in job_rows])
    if batch_rows:
        st.caption("Jobs sent through a provider's batch API (`prejudge --batch-submit`): each batch and its state.")
        st.dataframe(pd.DataFrame(batch_rows), hide_index=True, width="stretch", key="pj_batches")
    endpoint_rows = endpoint_service.figure_rows(database, [j["id"] for j in job_rows])
    if endpoint_rows:
        st.caption("Jobs spread over several endpoints (`prejudge --endpoint`): the figures of each endpoint.")
        st.dataframe(pd.DataFrame(endpoint_rows), hide_index=True, width="stretch", key="pj_endpoints")


def adaptive_pool(database) -> None:
    """iKAT 2024 adaptive pooling: its parameters, the report and (on Apply) the pairs added to the pool."""
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
                error("", exc)
            else:
                shown = job_service.adaptive_metrics(r)
                for col, (label, value) in zip(st.columns(len(shown)), shown.items()):
                    col.metric(label, f"{value:,}")
                st.info(esc(job_service.describe_adaptive(r)))
                if apply_clicked and "added_to_pool" in r:
                    st.success(f"Added {r['added_to_pool']:,} pairs to the pool (method adaptive).")
                elif apply_clicked:
                    st.warning("No stored runs: nothing to add to the pool (the report covers the judged pairs).")
