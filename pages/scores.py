"""Organizers: agreement between label sources, run rankings under two qrels, GFRC2 curves, AEPD scatter, and
the RAG scores of stored labels (NtR recall, All / Vital / Weighted, citation precision and recall)."""

import pandas as pd
import streamlit as st

from assess import ui
from assess.errors import AssessError
from assess.services import audit as scoreboard
from assess.services import contents
from assess.tasks import label_kind
from assess.ui import banks as bank_scores
from assess.ui import battles as battle_scores
from assess.ui import plots
from assess.ui import rag as rag_panels
from assess.ui.audit import table

ui.frame_guard(organizer=True)
database = ui.db()
st.title("Scores")
# Only the open tab runs (switching tabs reruns the page): at ten times iKAT 2024 the run rankings (50 runs under
# two qrels) and the Bradley-Terry fit (100,000 battles) took tens of seconds on every run of the page.
agree_tab, runs_tab, gfrc_tab, aepd_tab, rag_tab, bt_tab, bank_tab = st.tabs(
    ["Agreement", "Run rankings", "GFRC2", "AEPD", "RAG", "Bradley-Terry", "Banks & rubrics"],
    key="sc_tab",
    on_change="rerun",
)

if agree_tab.open:
    with agree_tab:
        task = st.radio("Labels", list(ui.AGREEMENT_TASKS), horizontal=True, key="ag_task")
        names = contents.label_sources(database, label_kind(task).table)
        if len(names) < 2:  # never a source against itself
            st.info("Two label sources of this kind are needed to compare.")
        else:
            ui.agreement_panel(database, task, names, key="ag")

if runs_tab.open:
    with runs_tab:
        names = contents.label_sources(database, label_kind("passage").table)
        if len(names) < 2:
            st.info("Two sets of passage qrels are needed: import qrels or judge passages first.")
        else:
            c1, c2 = st.columns(2)
            first, second = scoreboard.default_roles(database, names)  # a human source, then an LLM
            qa = c1.selectbox("Qrels A", names, index=names.index(first), key="rk_a")
            qb = c2.selectbox("Qrels B", names, index=names.index(second), key="rk_b")
            ui.ranking_panel(
                database,
                qa,
                qb,
                key="rk_m",
                name="ranking",
                empty="No ranking runs in the store: import runs first.",
                table=True,
            )

if gfrc_tab.open:
    with gfrc_tab:
        document, name = ui.case_input("gfrc2", "GFRC2 input (the `score gfrc2` format)")
        if document is not None:
            try:
                view = scoreboard.gfrc2_view(document)
                table(pd.DataFrame(view["table"]), "gfrc2_scores", key="gf_scores")  # its CSV through the inert writer
                conv = st.selectbox("Conversation", list(view["by_conversation"]), key="gf_conv")
                ui.figure(plots.gfrc2_curves(view["by_conversation"][conv]), "gfrc2_curves")
            except AssessError as exc:
                ui.error("", f"{name}: {exc}")

if aepd_tab.open:
    with aepd_tab:
        document, name = ui.case_input("aepd", "AEPD input (the `score aepd` format)")
        if document is not None:
            try:
                view = scoreboard.aepd_view(document)
                color = st.radio("Colour by", ["system", "conversation"], horizontal=True, key="ae_col")
                ui.figure(plots.aepd_scatter(view["points"], color_by=color), "aepd_scatter")
                table(pd.DataFrame(view["points"]), "aepd_points", key="ae_points")
            except AssessError as exc:
                ui.error("", f"{name}: {exc}")

if rag_tab.open:
    with rag_tab:
        rag_panels.scores_tab(database)

if bt_tab.open:
    with bt_tab:
        battle_scores.scores_tab(database)

if bank_tab.open:
    with bank_tab:
        bank_scores.scores_tab(database)
