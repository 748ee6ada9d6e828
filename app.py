"""The workbench frame: page config, store start-up, sign-in and navigation. No business logic."""

import streamlit as st

# Users never see a traceback, an exception's text or a server path: Streamlit shows its generic
# "the app has encountered an error" and logs the exception with its traceback on the server.
st.set_option("client.showErrorDetails", "none")

from assess import ui  # noqa: E402  (after the option: an error while importing is redacted too)

if ui.legacy_run():  # a cold start's first run, in Streamlit's legacy pages mode: run again as the frame
    ui.leave_legacy_run()
st.set_page_config(page_title="Assessment workbench", page_icon=":material/fact_check:", layout="wide")
ui.server_log()

ui.ensure_started()
st.session_state["_frame"] = True  # pages check this (ui.frame_guard)
database = ui.db()
ui.crowd_frame()  # a crowd study link (?study=…): only pages/crowd.py, no sign-in, no other page
ui.sign_in_from_query(database)
ui.sidebar_sign_in(database)

assess_pages = [
    st.Page("pages/home.py", title="Home", icon=":material/home:", url_path="home", default=True),
    st.Page("pages/judge.py", title="Judge passages", icon=":material/grading:", url_path="judge"),
    st.Page("pages/ptkb.py", title="PTKB relevance", icon=":material/person:", url_path="ptkb"),
    st.Page("pages/nuggets.py", title="Passage nuggets", icon=":material/format_quote:", url_path="nuggets"),
    st.Page("pages/ntr.py", title="Nugget matching (NtR)", icon=":material/rule:", url_path="ntr"),
    st.Page("pages/duplicates.py", title="Duplicate nuggets", icon=":material/join:", url_path="duplicates"),
    st.Page("pages/gold_response.py", title="Gold responses", icon=":material/edit_note:", url_path="gold-response"),
]
organizer_pages = [
    st.Page("pages/data.py", title="Import & export", icon=":material/upload_file:", url_path="data"),
    st.Page("pages/review.py", title="Review", icon=":material/monitoring:", url_path="review"),
    st.Page("pages/scores.py", title="Scores", icon=":material/insights:", url_path="scores"),
    st.Page("pages/audit.py", title="Judge audit", icon=":material/smart_toy:", url_path="audit"),
    st.Page("pages/llm.py", title="LLM pre-judging", icon=":material/robot_2:", url_path="llm"),
    st.Page(
        "pages/response_nuggets.py",
        title="Response nuggets (GFRC2)",
        icon=":material/highlight:",
        url_path="response-nuggets",
    ),
    st.Page("pages/aspects.py", title="Aspects (AEPD)", icon=":material/category:", url_path="aspects"),
]
pages = {"Assess": assess_pages}
if ui.is_organizer():
    pages["Organize"] = organizer_pages
st.navigation(pages).run()
