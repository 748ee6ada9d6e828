"""The workbench frame: page config, store start-up, sign-in and navigation. No business logic."""

import streamlit as st

# Users never see a traceback, an exception's text or a server path: Streamlit shows its generic
# "the app has encountered an error" and logs the exception with its traceback on the server.
st.set_option("client.showErrorDetails", "none")
# No CSV download in tables' toolbars (it writes live formulas): our downloads go through the inert writer.
st.set_option("client.disableDataExport", True)
# .streamlit/config.toml hides the legacy pages/-folder menu a fresh server's first session would draw
# before this script runs; the frame's own menu (st.navigation below) is shown.
st.set_option("client.showSidebarNavigation", True)

from assess import ui  # noqa: E402  (after the option: an error while importing is redacted too)

if ui.legacy_run():  # a cold start's first run, in Streamlit's legacy pages mode: show the frame's pages
    ui.leave_legacy_run(rerun=False)
st.set_page_config(page_title="Assessment workbench", page_icon="📋", layout="wide")
ui.server_log()
ui.styles()  # the inert-text styles, once per run of the frame

ui.ensure_started()
st.session_state["_frame"] = True  # pages check this (ui.frame_guard)
database = ui.db()
ui.run_frame(database)  # a crowd study link, or sign-in, the menu and the page asked for
