"""Nugget-to-response matching (CONE-RAG NtR): is this gold nugget covered by the system's response?

Keys: Y yes (covered), N no, Left/Right previous/next, S skip, U undo. Each answer is stored at once
as the assessor's own NtR label (blind: no other source's answer is shown); reloading resumes at the
first unanswered item. These labels feed ``python -m assess agreement --task ntr``.
"""

import streamlit as st

from assess import settings, ui
from store import queue
from store.nuggets import gold, ntr

ui.frame_guard()
database = ui.db()
name = ui.require_assessor("ntr")

sources = gold.nugget_sources(database, viewer=None if ui.is_organizer() else name)
if not sources:
    st.info("No gold nuggets in the store yet: import them (Import & export page) first.")
    st.stop()
default = next((s for s in ("gold", "human") if s in sources), sources[0])
nugget_source = st.sidebar.selectbox("Gold nuggets", sources, index=sources.index(default), key="ntr_source")
state = ntr.ntr_queue(database, name, nugget_source, open_mode=settings.open_mode())
if not len(state):
    st.info("Nothing to match: no turn has both nuggets of this set and system responses.")
    st.stop()
cursor = ui.Cursor("ntr", state)
pos, turn_id, item = cursor.position, cursor.turn_id, cursor.item_id
current = ntr.ntr_item(database, item)
mode = queue.judging_mode(database)


def answer(value):
    ntr.save_label(database, name, current["nugget_id"], current["run"], value, mode=mode, via="ui")
    cursor.go("next_unjudged")


ctx, left, right = ui.context_columns(database, turn_id)
prog = state.progress()
done_turn, total_turn = prog["turns"][turn_id]
with right:
    st.progress(
        done_turn / total_turn,
        text=f"Turn {ui.esc(turn_id)}: {done_turn} / {total_turn} answered · all: {prog['judged']} / {prog['total']}",
    )
    st.markdown(f"Item {pos + 1} of {len(state)} · response of system {ui.code(current['run'])}")
    ui.show_passage(current["response"])
    ui.line(f"Gold nugget {current['key']}:", current["nugget"])
    st.markdown("**Is the gold nugget of information covered in the response?**")
    own = ntr.label_of(database, name, current["nugget_id"], current["run"])
    if own is not None:
        st.success(f"Your answer: {'yes' if own else 'no'}")
    for col, (value, label, key) in zip(st.columns(2), ((1, "Y · Yes, covered", "Y"), (0, "N · No", "N"))):
        col.button(
            label,
            key=f"ntr_{'yes' if value else 'no'}",
            shortcut=key,
            on_click=ui.saving(answer),
            args=(value,),
            width="stretch",
            type="primary" if own == value else "secondary",
        )
    cursor.nav_buttons(st.columns(4), lambda: ntr.undo(database, name), key_prefix="ntr_", skip=True)
