"""Crowd worker page: consent, instructions, one item per screen answered by key or click, and a
completion code at the end of the batch.

Reached only by a study link (``/crowd?study=NAME`` plus Prolific's PROLIFIC_PID, STUDY_ID,
SESSION_ID, MTurk's workerId, assignmentId, hitId, turkSubmitTo, or ``worker=NAME`` for a pilot);
app.py then shows this page alone. The worker id is bound to the browser in which the worker pressed
Start (a cookie holding a secret whose hash the store keeps); viewing the consent page binds nothing, so a
worker may preview on one device and start on another. Once bound, another browser with the same id gets a
plain refusal, no batch and no code. The worker sees only their own batch; every answer is stored at once
with the seconds spent on the item, so closing the tab and coming back resumes the batch.
Nothing from other workers, assessors or LLMs is read here.
"""

import time

import streamlit as st

from assess import ui
from assess.crowd import entry as crowd_entry
from assess.errors import AssessError
from assess.services import crowd_work
from assess.ui.crowd import (
    crowd_check,
    crowd_consent,
    crowd_keys,
    crowd_leave_link,
    crowd_mark,
    crowd_question,
    crowd_refused,
    crowd_resume,
)

ui.frame_guard()
database = ui.db()
try:
    entry = crowd_entry.entry_from_params(ui.crowd_query())
    study = crowd_work.study(database, entry.study)
    binding = crowd_check(database, entry)  # binds nothing; None for an MTurk preview (no worker id yet)
except AssessError as exc:
    crowd_mark()
    ui.error("This study link does not work: ", exc)
    st.stop()
if binding is not None and not binding.allowed:  # this worker id is bound to another browser
    crowd_mark()
    crowd_refused()
    st.stop()
guide, config = study.guideline, study.config
st.title(ui.esc(guide.get("title") or "Study"))

if entry.preview:  # MTurk shows the HIT before it is accepted: instructions only, no batch
    crowd_mark()
    ui.crowd_guideline(guide, config)
    st.info("Accept the HIT to start.")
    st.stop()
try:
    assignment = crowd_work.enter(database, entry)
except AssessError as exc:
    crowd_mark(entry, binding)
    ui.error("", exc)
    st.stop()
if assignment is None:
    crowd_mark(entry, binding)
    st.info("There is no more work for you in this study. Thank you for your interest.")
    st.stop()
binding = crowd_resume(database, entry, binding, assignment.consented)  # a released binding: bound here now
if binding is not None and not binding.allowed:  # another browser was faster
    crowd_mark()
    crowd_refused()
    st.stop()
crowd_mark(entry, binding, unfinished=assignment.status != "completed")

if not assignment.consented:
    crowd_consent(database, entry, assignment.id, guide, config)
    st.stop()

view = crowd_work.screen(database, assignment.id)
if view.completed:
    ui.crowd_completion(view.code, config, entry)
    st.stop()


@ui.patiently  # a busy store: "saving…", then NOT SAVED with Retry in the panel (never the error page)
def give(value: int, graded: bool | None) -> None:  # graded: the kind of NtR answer the key gives
    item_id = st.session_state["crowd_item"]  # the item on screen when the key was pressed
    started = st.session_state.get("crowd_shown", {}).get((assignment.id, item_id))
    seconds = round(time.monotonic() - started, 3) if started is not None else None
    try:
        crowd_work.answer(database, assignment.id, item_id, value, seconds=seconds, graded=graded)
    except AssessError as exc:
        if ui.busy(exc):
            raise
        st.session_state["crowd_error"] = str(exc)


@ui.key_panel
def item_panel():  # an answer re-runs only this panel; the end of the batch runs the whole page
    view = crowd_work.screen(database, assignment.id)
    if view.completed:
        st.rerun(scope="app")
    item = view.item
    shown = st.session_state.setdefault("crowd_shown", {})
    shown.setdefault((assignment.id, item.item_id), time.monotonic())  # time per item starts on first display
    if "crowd_error" in st.session_state:
        ui.error("", st.session_state.pop("crowd_error"))
    st.progress(view.answered / view.total, text=f"Item {view.answered + 1} of {view.total}")
    st.session_state["crowd_item"] = item.item_id  # from now on a key press is about this item
    ui.crowd_item(item)
    crowd_keys(item, config, give, asked=asked)


asked = crowd_question(config)  # an NtR study's one question, above the panel (not re-sent at each key press)
item_panel()
with st.expander("Instructions and examples"):
    ui.crowd_guideline(guide, config)
crowd_leave_link()
