"""Adjudicators and organizers: the items two label sources grade differently, and an adjudicated grade for
any of them (a label of its own source, 'adjudication', recorded in the history with who decided)."""

import pandas as pd
import streamlit as st

from assess import ui
from assess.errors import AssessError
from assess.tasks import GRADES
from store import exports, review

ui.frame_guard(adjudicator=True)
database = ui.db()
st.title("Adjudicate")

names = exports.label_sources(database)
if len(names) < 2:
    st.info("Two label sources are needed to compare.")
    st.stop()
c1, c2 = st.columns(2)
a = c1.selectbox("Source A", names, key="dis_a")
b = c2.selectbox("Source B", names, index=1, key="dis_b")
rows = pd.DataFrame(review.disagreements(database, a, b))
st.caption(f"{len(rows)} items with different grades (at most 500 shown)")
if rows.empty:
    st.stop()
st.dataframe(rows, hide_index=True, width="stretch")
with st.form("adjudicate"):
    item = st.selectbox(
        "Item to adjudicate",
        rows.index,
        format_func=lambda i: f"{rows.turn_id[i]} {rows.passage_id[i]}",
    )
    grade = st.radio(
        "Adjudicated grade", list(GRADES.names), horizontal=True, format_func=lambda g: f"{g} {GRADES.names[g]}"
    )
    if st.form_submit_button("Save adjudicated label"):
        try:
            review.adjudicate(database, rows.turn_id[item], rows.passage_id[item], grade, by=ui.actor() or "organizer")
            st.toast("Saved under the source 'adjudication'")
            st.rerun()  # the table above shows the adjudicated grade at once
        except AssessError as exc:
            ui.error("", exc)
