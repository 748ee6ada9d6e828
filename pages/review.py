"""Organizers: the dashboard of the current assignments (over time, per assessor, per topic), the judging mode; each assessor's active time per judgment;
the versioned guidelines of each task and the labels made under an older version. Disagreements and
adjudication are on the Adjudicate page (pages/adjudicate.py), which adjudicators reach too."""

import streamlit as st

from assess import ui
from assess.services import judging
from assess.ui import consistency
from assess.ui import review as panels

ui.frame_guard(organizer=True)
database = ui.db()
st.title("Review")

st.subheader("Progress of the current assignments")
panels.dashboard(database)

st.subheader("Judging mode")
modes = list(judging.MODES)
mode = st.radio(
    "Other sources' labels are",
    modes,
    index=modes.index(judging.judging_mode(database)),
    horizontal=True,
    key="judging_mode",
    format_func={
        "blind": "never shown (blind)",
        "reveal": "shown after one's own label",
        "shown": "shown before judging",
    }.get,
)
if judging.set_judging_mode(database, mode, by=ui.actor()):
    st.success(f"Judging mode set to {mode}")

st.subheader("Re-shown items: each assessor's self-agreement")
consistency.reshow_control(database, ui.actor())
consistency.self_agreement_panel(database, key="rv")

st.subheader("Planned overlap: items judged by two or three assessors")
consistency.overlap_form(database, ui.actor())

st.subheader("Disagreements")
st.page_link(ui.adjudication_page(), label="Compare two sources and adjudicate their disagreements")

speed, guidelines = st.tabs(["Active time per judgment", "Guidelines"], key="rv_tab", on_change="rerun")
if speed.open:
    with speed:
        panels.speed_panel(database)
if guidelines.open:
    with guidelines:
        panels.guidelines_panel(database, ui.actor())
