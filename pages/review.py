"""Organizers: progress per topic and assessor, judging speed, grade distributions, disagreements
between two sources, and adjudication (its own label source)."""

import pandas as pd
import streamlit as st

from assess import settings, ui
from assess.errors import AssessError
from assess.tasks import GRADES
from store import exports, queue, review

ui.frame_guard(organizer=True)
database = ui.db()
st.title("Review")

st.subheader("Assessors")
summary = pd.DataFrame(review.assessor_summary(database, open_mode=settings.open_mode()))
if summary.empty:
    st.info("No assessor has judged anything yet.")
else:
    st.dataframe(summary, hide_index=True, width="stretch")

st.subheader("Progress per topic (any assessor)")
st.dataframe(pd.DataFrame(review.topic_progress(database)), hide_index=True, width="stretch")

st.subheader("Judging mode")
modes = list(queue.MODES)
mode = st.radio(
    "Other sources' labels are",
    modes,
    index=modes.index(queue.judging_mode(database)),
    horizontal=True,
    key="judging_mode",
    format_func={
        "blind": "never shown (blind)",
        "reveal": "shown after one's own label",
        "shown": "shown before judging",
    }.get,
)
if queue.set_judging_mode(database, mode, by=ui.actor()):
    st.success(f"Judging mode set to {mode}")

st.subheader("Disagreements")
names = exports.label_sources(database)
if len(names) < 2:
    st.info("Two label sources are needed to compare.")
    st.stop()
c1, c2 = st.columns(2)
a = c1.selectbox("Source A", names, key="dis_a")
b = c2.selectbox("Source B", names, index=1, key="dis_b")
rows = pd.DataFrame(review.disagreements(database, a, b))
st.caption(f"{len(rows)} items with different grades (at most 500 shown)")
if not rows.empty:
    st.dataframe(rows, hide_index=True, width="stretch")
    with st.form("adjudicate"):
        item = st.selectbox(
            "Re-open an item for adjudication",
            rows.index,
            format_func=lambda i: f"{rows.turn_id[i]} {rows.passage_id[i]}",
        )
        grade = st.radio(
            "Adjudicated grade", list(GRADES.names), horizontal=True, format_func=lambda g: f"{g} {GRADES.names[g]}"
        )
        if st.form_submit_button("Save adjudicated label"):
            try:
                review.adjudicate(
                    database, rows.turn_id[item], rows.passage_id[item], grade, by=ui.actor() or "organizer"
                )
                st.toast("Saved under the source 'adjudication'")
                st.rerun()  # the table above shows the adjudicated grade at once
            except AssessError as exc:
                ui.error("", exc)
