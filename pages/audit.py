"""Organizers: the judge audit. Several label sources side by side (agreement matrix with the human ceiling,
breakdowns), two sources in detail (kappa, confusion, disagreements with the LLM's own words, run rankings,
anchoring after reveal), whether a judge can replace the humans (the alternative annotator test), system-level agreement, bias and consistency probes, corrected estimates, budgeted
human samples, and the verdict (can the judge replace the reference here?). Pre-judging jobs: pages/llm.py."""

import pandas as pd
import streamlit as st

from assess import ui
from assess.services import contents
from assess.tasks import label_kind
from assess.ui import audit as panels
from assess.ui import budget as budget_panels
from assess.ui import consistency

ui.frame_guard(organizer=True)
database = ui.db()
st.title("Judge audit")
st.caption("Pre-judging jobs and adaptive pooling: page **LLM pre-judging** (`/llm`).")

task = st.radio("Labels", list(ui.AGREEMENT_TASKS), horizontal=True, key="au_task")
names = contents.label_sources(database, label_kind(task).table)
if len(names) < 2:
    st.info("Two label sources are needed to compare.")
    st.stop()

tabs = ["Side by side", "Two sources", "Replace the humans?"]
chosen = None
if task == "passage":
    tabs += ["Systems", "Bias and consistency", "Estimates", "Budgeted sample", "Verdict"]
    st.caption("Reference and judge of the Systems, Bias, Estimates, Budgeted sample and Verdict tabs:")
    chosen = panels.pick_pair(database, names)
# Only the open tab runs (each tab's numbers take a while on a large store): switching tabs reruns the page.
side, pair, replace, *passage_tabs = st.tabs(tabs, key="au_tab", on_change="rerun")

if side.open:
    with side:
        panels.matrix_panel(database, task, names)
        if task == "passage":
            st.subheader("Each assessor against themselves (re-shown items)")
            consistency.self_agreement_panel(database, key="au")
            st.subheader("Human ceiling over planned overlap")
            consistency.overlap_panel(database, key="au")

if pair.open:
    with pair:
        a, b, _report = ui.agreement_panel(database, task, names, key="au", audit=True)
        st.subheader("Disagreements")
        rows = pd.DataFrame(contents.disagreements(database, task, a, b))
        st.caption(f"{len(rows)} items labelled differently (at most 500 shown), with what each LLM answered")
        st.dataframe(rows, hide_index=True, width="stretch", key="au_dis")
        if task == "passage":
            st.subheader("Run rankings under both label sets")
            ui.ranking_panel(database, a, b, key="au_m", name="audit_rank", empty="No ranking runs in the store.")
        if task in ("passage", "ptkb"):
            st.subheader("Anchoring after reveal")
            panels.anchoring_panel(database, task)

if replace.open:
    with replace:
        panels.alt_test_panel(database, task, names)

if passage_tabs and chosen:
    systems, bias, estimates, sample, verdict = passage_tabs
    reference, judge = chosen
    if systems.open:
        with systems:
            panels.systems_panel(database, reference, judge)
    if bias.open:
        with bias:
            panels.bias_panel(database, reference, judge)
            st.subheader("Self-consistency and persona sensitivity")
            panels.consistency_panel(database, names)
    if estimates.open:
        with estimates:
            panels.estimate_panel(database, reference, judge)
    if sample.open:
        with sample:
            panels.sample_panel(database, names, judge)
            st.subheader("Which policy and budget? Simulated before anyone judges")
            budget_panels.simulate_panel(database, names, reference, judge)
    if verdict.open:
        with verdict:
            panels.verdict_panel(database, reference, judge)
