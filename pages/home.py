"""Home: what is in the store and the signed-in assessor's own progress; organizers also see the
label sources (with their assessors' names) and where the store lives. A visitor who has not signed in to
a store with accounts sees the counts only, not the conversations' titles."""

import pandas as pd
import streamlit as st

from assess import settings, ui
from assess.services import contents

ui.frame_guard()
database = ui.db()
organizer = ui.is_organizer()  # least disclosure: nothing about other sources for anyone else
summary = contents.counts(database)

st.title("Assessment workbench")
if organizer:
    st.caption(f"Store: {ui.esc(contents.location(settings.db_target()))}")
cols = st.columns(5)
for col, (label, key) in zip(
    cols,
    [
        ("Conversations", "conversations"),
        ("Turns", "turns"),
        ("Passages", "passages"),
        ("With text", "passages_with_text"),
        ("Pooled pairs", "pooled_pairs"),
    ],
):
    col.metric(label, f"{summary[key]:,}")

if organizer:
    st.subheader("Label sources")
    sources = pd.DataFrame(contents.source_stats(database))
    if sources.empty:
        st.info("No labels yet. Import qrels on the Import page or start judging.")
    else:
        st.dataframe(sources, hide_index=True, width="stretch")

name = ui.assessor()
if name or organizer or ui.open_sign_in():  # with accounts, nobody unknown reads the conversations' titles
    st.subheader("Conversations")
    st.dataframe(pd.DataFrame(contents.conversations(database)), hide_index=True, width="stretch")

if name:
    st.subheader(f"Your progress, {ui.esc(name)}")
    prog = ui.load_queue(database, name).progress()
    st.progress(
        prog["judged"] / prog["total"] if prog["total"] else 0.0,
        text=f"{prog['judged']} of {prog['total']} passages judged",
    )
    st.page_link("pages/judge.py", label="Continue judging", icon=":material/grading:")
elif ui.open_sign_in():
    st.info("Sign in with your assessor name in the sidebar (or open /judge?assessor=NAME) to start judging.")
else:
    st.info("Sign in with your account in the sidebar (or open your personal sign-in link) to start judging.")
