"""Nugget-to-response matching (CONE-RAG NtR): is this gold nugget covered by the system's response?

Keys: Y yes (covered), N no, Left/Right previous/next, S skip, U undo. With "Graded support" on in the
sidebar (off by default) the keys are 2 support, 1 partial support, 0 no support (TREC RAG), stored as
graded labels (task ntr-support) beside the yes/no ones; each mode has its own progress. Each answer is
stored at once as the assessor's own label (blind: no other source's answer is shown); reloading resumes
at the first unanswered item. A key press re-runs only the item panel (a fragment). These labels feed ``python -m assess agreement --task ntr``.
"""

import streamlit as st

from assess import ui
from assess.services import judging, rag
from assess.services import nuggets as nugget_service
from assess.services.judging import ntr_done
from assess.tasks import SUPPORT, Shown
from assess.ui import rag as rag_ui

ui.frame_guard()
database = ui.db()
name = ui.require_assessor("ntr")
ui.keyboard_preference(database, name)

sources = nugget_service.nugget_sources(database, viewer=None if ui.is_organizer() else name)
if not sources:
    st.info("No gold nuggets in the store yet: import them (Import & export page) first.")
    st.stop()
default = next((s for s in ("gold", "human") if s in sources), sources[0])
nugget_source = st.sidebar.selectbox("Gold nuggets", sources, index=sources.index(default), key="ntr_source")
order = ui.ntr_order(database, name, nugget_source)
graded = ui.person_switch(
    database, name, "ntr-graded", "Graded support (2 / 1 / 0)", help="Off: yes / no (Y / N). Kept for you."
)
read_done = (lambda: rag.ntr_support_done(database, name)) if graded else (lambda: ntr_done(database, name))
desk = ui.KeyQueue("ntr", database, name, "ntr-support" if graded else "ntr", order, read_done)
if not len(order.items):
    st.info("Nothing to match: no turn has both nuggets of this set and system responses.")
    st.stop()
shown_turn = desk.cursor().turn_id
ctx, left, right = ui.context_columns(database, shown_turn)
with left:
    ui.guideline(database, "ntr-support" if graded else "ntr")


@ui.key_panel
def match_panel():
    cursor = desk.cursor(shown_turn)  # another turn: the whole page runs again
    state = cursor.state
    pos, turn_id, item = cursor.position, cursor.turn_id, cursor.item_id
    rag_ui.messages()
    undo = (lambda: rag.undo_ntr_support(database, name)) if graded else (lambda: rag.undo_ntr_label(database, name))
    if cursor.finished:
        cursor.end_screen("nugget matches of this set answered", undo, key_prefix="ntr_")
        return
    current = rag.ntr_item(database, item)
    own = (rag.ntr_support_of if graded else rag.ntr_label_of)(database, name, current["nugget_id"], current["run"])
    mode = judging.judging_mode(database)

    def answer(value):
        turn, shown = cursor.on_screen()
        active_ms, expected = cursor.active_ms(), cursor.expected()
        if graded:
            rag.save_ntr_support(database, name, shown, value, mode=mode, active_ms=active_ms, expected=expected)
        else:
            rag.save_ntr_label(database, name, shown, value, mode=mode, active_ms=active_ms, expected=expected)
        desk.answered(cursor, stay=False, value=value)

    rag_ui.turn_progress(state, turn_id, "answered")
    st.markdown(f"Item {pos + 1} of {len(state)} · response of system {ui.code(current['run'])}")
    seen = Shown(own is not None, own)  # NtR labels have no "cannot judge": None is no label
    if graded:
        cursor.shown(timed=rag_ui.timed_keys([(v, str(v)) for v, _ in rag_ui.SUPPORT_KEYS], "ntr_g"), own=seen)
    else:
        cursor.shown(timed={"ntr_yes": ui.keys("Y"), "ntr_no": ui.keys("N")}, own=seen)
    ui.show_passage(current["response"])
    ui.line(f"Gold nugget {current['key']}:", current["nugget"])
    if graded:
        st.markdown("**How far does the response support the gold nugget of information?**")
        if own is not None:
            st.success(f"Your answer: {SUPPORT.label(own)}")
        rag_ui.key_row([(v, c, str(v)) for v, c in rag_ui.SUPPORT_KEYS], answer, own, key_prefix="ntr_g")
    else:
        st.markdown("**Is the gold nugget of information covered in the response?**")
        if own is not None:
            st.success(f"Your answer: {'yes' if own else 'no'}")
        keys = st.container(horizontal=True, gap="small")
        for value, label, key in ((1, "Y · Yes, covered", "Y"), (0, "N · No", "N")):
            keys.button(
                label,
                key=f"ntr_{'yes' if value else 'no'}",
                shortcut=ui.keys(key),
                on_click=ui.saving(answer),
                args=(value,),
                width="stretch",
                type="primary" if own == value else "secondary",
            )
    cursor.nav_buttons(st.container(horizontal=True, gap="small"), undo, key_prefix="ntr_", skip=True)


with right:
    match_panel()
