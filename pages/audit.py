"""Organizers: audit a judge against another label source (kappa, confusion, per-topic kappa, disagreements
with the LLM's own words, run rankings, anchoring after reveal). Pre-judging jobs: pages/llm.py."""

import pandas as pd
import streamlit as st

from assess import ui
from assess.services import audit as scoreboard
from assess.ui import plots
from store import exports, prejudgments

ui.frame_guard(organizer=True)
database = ui.db()
st.title("Judge audit")
st.caption("Pre-judging jobs and adaptive pooling: page **LLM pre-judging** (`/llm`).")
TABLES = {"passage": "passage_labels", "ptkb": "ptkb_labels", "ntr": "ntr_labels"}

task = st.radio("Labels", list(TABLES), horizontal=True, key="au_task")
names = exports.label_sources(database, TABLES[task])
llm = [n for n in names if n.startswith("llm:")]
if len(names) < 2:
    st.info("Two label sources are needed to compare.")
else:
    c1, c2, c3, c4 = st.columns(4)
    a = c1.selectbox("Source A", names, key="au_a")
    b = c2.selectbox(
        "Source B (e.g. the LLM)", names, key="au_b", index=names.index(llm[0]) if llm and llm[0] != names[0] else 1
    )
    weights = c3.selectbox("Weights", ["linear", "quadratic"], key="au_w")
    threshold = c4.number_input("Binarise at ≥", 0, 4, 2 if task == "passage" else 1, key="au_t")
    report = scoreboard.agreement_from_store(database, task, a, b, weights=weights, threshold=threshold)
    shown = {
        "n": "n",
        "agreement": "agreement",
        "kappa_unweighted": "κ",
        f"kappa_{weights}": f"κ {weights}",
        "kappa_binary": f"κ binary (≥ {threshold})",
    }
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
            ui.figure(
                plots.ranking_scatter(
                    view[measure]["a"],
                    view[measure]["b"],
                    view[measure]["kendall_tau"],
                    labels=(f"{measure} under {a}", f"{measure} under {b}"),
                ),
                "audit_rank",
            )
    if task in ("passage", "ptkb"):
        st.subheader("Anchoring after reveal")
        anchoring = prejudgments.anchoring(database, task)
        if anchoring:
            st.dataframe(pd.DataFrame(anchoring), hide_index=True, width="stretch", key="au_anchor")
        else:
            st.caption("No assessor has changed a label after an LLM label was revealed (judging mode 'reveal').")
