"""Organizers: agreement between label sources, run rankings under two qrels, GFRC2 curves, AEPD scatter."""

import pandas as pd
import streamlit as st

from assess import ui
from assess.errors import AssessError
from assess.services import audit as scoreboard
from assess.ui import plots
from store import exports

ui.frame_guard(organizer=True)
database = ui.db()
st.title("Scores")
agree_tab, runs_tab, gfrc_tab, aepd_tab = st.tabs(["Agreement", "Run rankings", "GFRC2", "AEPD"])

with agree_tab:
    task = st.radio("Labels", ["passage", "ptkb", "ntr"], horizontal=True, key="ag_task")
    names = exports.label_sources(
        database, {"passage": "passage_labels", "ptkb": "ptkb_labels", "ntr": "ntr_labels"}[task]
    )
    if len(names) < 1:
        st.info("No labels of this kind yet.")
    else:
        c1, c2, c3, c4 = st.columns(4)
        a = c1.selectbox("Source A", names, key="ag_a")
        b = c2.selectbox("Source B", names, index=min(1, len(names) - 1), key="ag_b")
        weights = c3.selectbox("Weights", ["none", "linear", "quadratic"], key="ag_w")
        threshold = c4.number_input("Binarise at ≥", 0, 4, 2 if task == "passage" else 1, key="ag_t")
        report = scoreboard.agreement_from_store(
            database, task, a, b, weights=None if weights == "none" else weights, threshold=threshold
        )
        cols = st.columns(4)
        for col, key in zip(cols, ["n", "agreement", "kappa", "kappa_binary"]):
            value = report.get(key)
            col.metric(key, "n/a" if value is None else (f"{value:,}" if key == "n" else f"{value:.3f}"))
        ui.figure(plots.confusion_heatmap(report, names=(a, b)), "confusion")
        ui.figure(plots.kappa_bars(report["per_topic"]), "kappa_per_topic")

with runs_tab:
    names = exports.label_sources(database, "passage_labels")
    if len(names) < 1:
        st.info("Import passage qrels first.")
    else:
        c1, c2 = st.columns(2)
        qa = c1.selectbox("Qrels A", names, key="rk_a")
        qb = c2.selectbox("Qrels B", names, index=min(1, len(names) - 1), key="rk_b")
        view = scoreboard.ranking_view(database, qa, qb)
        if not view:
            st.info("No ranking runs in the store: import runs first.")
        else:
            measure = st.selectbox("Measure", list(view), key="rk_m")
            st.dataframe(pd.DataFrame({qa: view[measure]["a"], qb: view[measure]["b"]}), width="stretch")
            ui.figure(
                plots.ranking_scatter(
                    view[measure]["a"],
                    view[measure]["b"],
                    view[measure]["kendall_tau"],
                    labels=(f"{measure} under {qa}", f"{measure} under {qb}"),
                ),
                "ranking",
            )

with gfrc_tab:
    document, name = ui.case_input("gfrc2", "GFRC2 input (the `score gfrc2` format)")
    if document is not None:
        try:
            view = scoreboard.gfrc2_view(document)
            st.dataframe(pd.DataFrame(view["table"]), hide_index=True, width="stretch")
            conv = st.selectbox("Conversation", list(view["by_conversation"]), key="gf_conv")
            ui.figure(plots.gfrc2_curves(view["by_conversation"][conv]), "gfrc2_curves")
        except AssessError as exc:
            st.error(f"{name}: {exc}")

with aepd_tab:
    document, name = ui.case_input("aepd", "AEPD input (the `score aepd` format)")
    if document is not None:
        try:
            view = scoreboard.aepd_view(document)
            color = st.radio("Colour by", ["system", "conversation"], horizontal=True, key="ae_col")
            ui.figure(plots.aepd_scatter(view["points"], color_by=color), "aepd_scatter")
            st.dataframe(pd.DataFrame(view["points"]), hide_index=True, width="stretch")
        except AssessError as exc:
            st.error(f"{name}: {exc}")
