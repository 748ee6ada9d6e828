"""Judge passages 0-4 for a turn, with the conversation, the resolved utterance and the PTKB beside them.

Keys: 0-4 grade and move to the next unjudged passage, X cannot judge, Left/Right previous/next,
S skip, U undo. Every key press is stored at once.
"""

import streamlit as st

from assess import ui
from assess.tasks import GRADES
from assess.text import query_terms
from store import conversations, prejudgments, queue

ui.frame_guard()
database = ui.db()
name = ui.require_assessor("judge")

state = ui.load_queue(database, name)
if not len(state):
    st.info("Your queue is empty: ask an organizer to assign you a topic.")
    st.stop()
if "turn" in st.query_params and "passage" in st.query_params:  # a deep link to one item, used once
    st.session_state["judge_key"] = (st.query_params.pop("turn"), st.query_params.pop("passage"))
cursor = ui.Cursor("judge", state)
pos, turn_id, passage_id = cursor.position, cursor.turn_id, cursor.item_id
mode = queue.judging_mode(database)


def grade(value):
    note = st.session_state.get(f"note_{turn_id}_{passage_id}") or None  # a note typed before grading
    first = queue.label_of(database, name, "passage", turn_id, passage_id) is None
    queue.save_passage_label(database, name, turn_id, passage_id, value, note=note, mode=mode, via="ui")
    # blind-then-reveal: stay to show the LLM's label; the next key (a grade or Right) moves on
    cursor.go(None if mode == "reveal" and first else "next_unjudged")


ctx, left, right = ui.context_columns(database, turn_id)
prog = state.progress()
done_turn, total_turn = prog["turns"][turn_id]
with left:
    with st.expander("Persona (PTKB statements)", expanded=True):
        ui.ptkb(ctx)
    with st.expander("Grade rubric", expanded=True):
        ui.rubric()
    ui.queue_overview(prog, turn_id)
with right:
    st.progress(
        done_turn / total_turn,
        text=f"Turn {ui.esc(turn_id)}: {done_turn} / {total_turn} judged · all: {prog['judged']} / {prog['total']}",
    )
    st.markdown(f"Passage {ui.code(passage_id)} ({pos + 1} of {len(state)})")
    text = conversations.passage_text(database, passage_id)
    ui.show_passage(text, query_terms(ctx.query))
    own = queue.label_of(database, name, "passage", turn_id, passage_id)
    if own:
        shown = GRADES.missing if own["value"] is None else f"{own['value']} ({GRADES.names[own['value']]})"
        st.success(f"Your label: {shown}")
    for other in prejudgments.revealed_with_rationale(database, name, "passage", turn_id, passage_id):
        with st.expander(f"{ui.esc(other['source'])} says {other['value']}"):
            ui.inert(other["rationale"] or "(imported label: no rationale stored)")
    cols = st.columns(5)
    for g in GRADES.values:
        cols[g].button(
            GRADES.label(g),
            key=f"g{g}",
            shortcut=str(g),
            on_click=ui.saving(grade),
            args=(g,),
            type="primary" if own and own["value"] == g else "secondary",
            width="stretch",
        )
    nav = st.columns(5)
    cursor.nav_buttons(nav, lambda: queue.undo(database, name, "passage"), skip=True)
    nav[4].button("Cannot judge", key="cannot", shortcut="X", on_click=ui.saving(grade), args=(None,), width="stretch")
    ui.release_keys_from_inputs()
    note_key = f"note_{turn_id}_{passage_id}"
    st.text_input(
        "Note (optional; Enter or Esc returns to the keys)",
        key=note_key,
        value=(own or {}).get("note") or "",
        on_change=ui.saving(
            lambda: queue.save_note(database, name, "passage", turn_id, passage_id, st.session_state[note_key])
        ),
    )
