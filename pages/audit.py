"""Organizers: audit a judge against another label source (kappa, confusion, per-topic kappa, disagreements
with the LLM's own words, run rankings, anchoring after reveal). Pre-judging jobs: pages/llm.py."""

import pandas as pd
import streamlit as st

from assess import ui
from assess.tasks import label_kind
from store import exports, prejudgments

ui.frame_guard(organizer=True)
database = ui.db()
st.title("Judge audit")
st.caption("Pre-judging jobs and adaptive pooling: page **LLM pre-judging** (`/llm`).")

task = st.radio("Labels", list(ui.AGREEMENT_TASKS), horizontal=True, key="au_task")
names = exports.label_sources(database, label_kind(task).table)
if len(names) < 2:
    st.info("Two label sources are needed to compare.")
else:
    a, b, _report = ui.agreement_panel(database, task, names, key="au", audit=True)
    st.subheader("Disagreements")
    rows = pd.DataFrame(prejudgments.disagreements(database, task, a, b))
    st.caption(f"{len(rows)} items labelled differently (at most 500 shown), with what each LLM answered")
    st.dataframe(rows, hide_index=True, width="stretch", key="au_dis")
    if task == "passage":
        st.subheader("Run rankings under both label sets")
        ui.ranking_panel(database, a, b, key="au_m", name="audit_rank", empty="No ranking runs in the store.")
    if task in ("passage", "ptkb"):
        st.subheader("Anchoring after reveal")
        anchoring = prejudgments.anchoring(database, task)
        if anchoring:
            st.dataframe(pd.DataFrame(anchoring), hide_index=True, width="stretch", key="au_anchor")
        else:
            st.caption("No assessor has changed a label after an LLM label was revealed (judging mode 'reveal').")
