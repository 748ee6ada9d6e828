"""Label which PTKB (persona) statements are relevant to each turn.

Keys: 1 relevant, 0 not relevant (both move to the next unlabelled statement), Left/Right
previous/next, U undo. These labels form the assessor's own PTKB source.
"""

import streamlit as st

from assess import ui
from store import prejudgments, queue

ui.frame_guard()
database = ui.db()
name = ui.require_assessor("ptkb")

state = ui.load_queue(database, name, task="ptkb")
if not len(state):
    st.info("No PTKB statements to label in your queue.")
    st.stop()
cursor = ui.Cursor("ptkb", state)
turn_id, statement_id = cursor.turn_id, cursor.item_id
mode = queue.judging_mode(database)


def label(value):
    first = queue.label_of(database, name, "ptkb", turn_id, statement_id) is None
    queue.save_ptkb_label(database, name, turn_id, statement_id, value, mode=mode, via="ui")
    cursor.go(None if mode == "reveal" and first else "next_unjudged")  # reveal: stay to show the LLM


ctx, left, right = ui.context_columns(database, turn_id)
prog = state.progress()
done_turn, total_turn = prog["turns"][turn_id]
with right:
    st.progress(done_turn / total_turn, text=f"Turn {ui.esc(turn_id)}: {done_turn} / {total_turn} statements labelled")
    st.markdown("Is this statement about the user **relevant** to answering the current turn?")
    for row in queue.turn_items(database, name, turn_id, task="ptkb"):
        text = next(s["text"] for s in ctx.ptkb if s["id"] == row[1])
        own = queue.label_of(database, name, "ptkb", turn_id, row[1])
        mark = "·" if own is None else ("✅ relevant" if own["value"] else "✖ not relevant")
        current = row[1] == statement_id
        ui.line(f"▶ {row[1]}." if current else f"{row[1]}.", f"{text} — {mark}", strong=current)
    for other in prejudgments.revealed_with_rationale(database, name, "ptkb", turn_id, statement_id):
        with st.expander(f"{ui.esc(other['source'])} says {'relevant' if other['value'] else 'not relevant'}"):
            ui.inert(other["rationale"] or "(imported label: no rationale stored)")
    cols = st.columns(5)
    cols[0].button("1 · Relevant", key="rel", shortcut="1", on_click=ui.saving(label), args=(1,), width="stretch")
    cols[1].button(
        "0 · Not relevant", key="nonrel", shortcut="0", on_click=ui.saving(label), args=(0,), width="stretch"
    )
    cursor.nav_buttons(cols[2:], lambda: queue.undo(database, name, "ptkb"))
