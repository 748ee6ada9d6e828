"""Judge passages 0-4 for a turn, with the conversation, the resolved utterance and the PTKB beside them.

Keys: 0-4 grade and move to the next unjudged passage, X cannot judge, Left/Right previous/next,
S skip, U undo. Every key press is stored at once. A key press re-runs only the item panel (a
fragment); the whole page runs again when the next item belongs to another turn.
"""

import streamlit as st

from assess import ui
from assess.services.judging import item_screen, passage_text
from assess.tasks import GRADES
from assess.text import query_terms
from store import queue

ui.frame_guard()
database = ui.db()
name = ui.require_assessor("judge")
ui.keyboard_preference(database, name)

order = ui.queue_order(database, name)
read_text = lambda passage_id: passage_text(database, passage_id)  # noqa: E731
desk = ui.KeyQueue("judge", database, name, "passage", order, lambda: queue.labelled(database, name))
if not len(desk.order.items):
    st.info("Your queue is empty: ask an organizer to assign you a topic.")
    st.stop()
if "turn" in st.query_params and "passage" in st.query_params:  # a deep link to one item, used once
    st.session_state["judge_key"] = (st.query_params.pop("turn"), st.query_params.pop("passage"))
shown_turn = desk.cursor().turn_id
ctx, left, right = ui.context_columns(database, shown_turn)
with left:
    with st.expander("Persona (PTKB statements)", expanded=True):
        ui.ptkb(ctx)
    with st.expander("Grade rubric", expanded=True):
        ui.rubric()
    ui.guideline(database, "passage")


@ui.key_panel
def item_panel():
    cursor = desk.cursor(shown_turn)  # another turn: the whole page runs again
    state = cursor.state
    pos, turn_id, passage_id = cursor.position, cursor.turn_id, cursor.item_id
    undo = lambda: queue.undo(database, name, "passage")  # noqa: E731
    if cursor.finished:
        cursor.end_screen("passages of your queue judged", undo)
        return
    screen = item_screen(database, name, "passage", turn_id, passage_id, text=lambda pid: desk.prepared(pid, read_text))
    own = screen.own

    def grade(value):
        turn, passage = cursor.on_screen()
        note = st.session_state.get(f"note_{turn}_{passage}") or None  # a note typed before grading
        first = screen.mode == "reveal" and queue.label_of(database, name, "passage", turn, passage) is None
        queue.save_passage_label(
            database, name, turn, passage, value, note=note, mode=screen.mode, via="ui", active_ms=cursor.active_ms()
        )
        desk.mark((turn, passage))
        cursor.go(None if first else "next_unjudged")  # blind-then-reveal: stay to show the LLM's label

    prog = state.progress()
    done_turn, total_turn = prog["turns"][turn_id]
    st.progress(
        done_turn / total_turn,
        text=f"Turn {ui.esc(turn_id)}: {done_turn} / {total_turn} judged · all: {prog['judged']} / {prog['total']}",
    )
    st.markdown(f"Passage {ui.code(passage_id)} ({pos + 1} of {len(state)})")
    cursor.shown(timed={f"g{g}": ui.keys(str(g)) for g in GRADES.values} | {"cannot": ui.keys("X")})
    ui.show_passage(screen.text, query_terms(ctx.query))
    if own:
        shown = GRADES.missing if own["value"] is None else f"{own['value']} ({GRADES.names[own['value']]})"
        st.success(f"Your label: {shown}")
    for other in screen.revealed:
        with st.expander(f"{ui.esc(other['source'])} says {other['value']}"):
            ui.inert(other["rationale"] or "(imported label: no rationale stored)")
    grades = st.container(horizontal=True, gap="small")
    for g in GRADES.values:
        grades.button(
            GRADES.label(g),
            key=f"g{g}",
            shortcut=ui.keys(str(g)),
            on_click=ui.saving(grade),
            args=(g,),
            type="primary" if own and own["value"] == g else "secondary",
            width="stretch",
        )
    nav = st.container(horizontal=True, gap="small")
    cursor.nav_buttons(nav, undo, skip=True)
    nav.button(
        "Cannot judge", key="cannot", shortcut=ui.keys("X"), on_click=ui.saving(grade), args=(None,), width="stretch"
    )
    note_key = f"note_{turn_id}_{passage_id}"
    st.text_input(
        "Note (optional; Enter or Esc returns to the keys)",
        key=note_key,
        value=(own or {}).get("note") or "",
        on_change=ui.saving(
            lambda: queue.save_note(database, name, "passage", turn_id, passage_id, st.session_state[note_key])
        ),
    )
    ui.queue_overview(state, turn_id)
    upcoming = state.next_unjudged(pos)  # the next grade key most likely shows it: read its text now
    desk.prepare(None if upcoming is None else state.item(upcoming)[1], read_text)


with right:
    item_panel()
ui.release_keys_from_inputs()  # once per page: Enter or Esc in the note field gives the keys back
