"""Judge passages 0-4 for a turn, with the conversation, the resolved utterance and the PTKB beside them.

Keys: 0-4 grade and move to the next unjudged passage, X cannot judge, Left/Right previous/next,
S skip, U undo. Every key press is stored at once. A key press re-runs only the item panel (a
fragment); the whole page runs again when the next item belongs to another turn. A re-shown item
(docs/judging.md) is drawn as a fresh one in place of the next unjudged passage.
"""

import streamlit as st

from assess import ui
from assess.services import judging
from assess.services.judging import read_passage
from assess.tasks import GRADES, Shown
from assess.text import query_terms

ui.frame_guard()
database = ui.db()
name = ui.require_assessor("judge")
ui.keyboard_preference(database, name)

order = ui.queue_order(database, name)
load_passage = lambda passage_id: read_passage(database, passage_id)  # noqa: E731
read_done = lambda: judging.labelled(database, name)  # noqa: E731
desk = ui.KeyQueue("judge", database, name, "passage", order, read_done, reshows=True)
if not len(desk.order.items):
    st.info("Your queue is empty: ask an organizer to assign you a topic.")
    st.stop()
ui.mixed_queue_warning(database, desk.order.turn_totals)  # on every full run: a mix is never silent
if "turn" in st.query_params and "passage" in st.query_params:  # a deep link to one item, used once
    st.session_state["judge_key"] = (st.query_params.pop("turn"), st.query_params.pop("passage"))
shown_turn = desk.cursor().screen_turn
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
    state, (turn_id, passage_id) = cursor.state, cursor.drawn
    undo = lambda: judging.undo(database, name, "passage")  # noqa: E731
    if cursor.ended:
        cursor.end_screen("passages of your queue judged", undo)
        return
    prepared = lambda pid: desk.prepared(pid, load_passage)  # noqa: E731
    screen = judging.passage_screen(database, name, turn_id, passage_id, reshow=bool(cursor.reshow), passage=prepared)
    own = screen.own

    def grade(value):
        turn, passage = cursor.on_screen()
        note = cursor.typed_note()  # typed before grading
        reshown, active_ms = cursor.on_screen_reshow(), cursor.active_ms()
        first = judging.save_grade(
            database,
            name,
            turn,
            passage,
            value,
            reshow=reshown,
            note=note,
            mode=screen.mode,
            active_ms=active_ms,
            expected=cursor.expected(),  # what the page showed: a label stored meanwhile elsewhere is not replaced
        )
        desk.answered(cursor, stay=first, value=value)  # blind-then-reveal: stay to show the LLM's label

    prog = cursor.progress()
    done_turn, total_turn = prog["turn"]
    st.progress(
        done_turn / total_turn,
        text=f"Turn {ui.esc(turn_id)}: {done_turn} / {total_turn} judged · all: {prog['judged']} / {prog['total']}",
    )
    st.markdown(f"Passage {ui.code(passage_id)} ({cursor.position + 1} of {len(state)})")
    timed = {f"g{g}": ui.keys(str(g)) for g in GRADES.values} | {"cannot": ui.keys("X")}
    cursor.shown(timed=timed, own=Shown.of(own))
    ui.show_passage(screen.passage.text, query_terms(ctx.query))
    if own:
        shown = GRADES.missing if own.missing else f"{own.value} ({GRADES.names[own.value]})"
        st.success(f"Your label: {shown}")
    for other in screen.revealed:
        with st.expander(f"{ui.esc(other.source)} says {other.value}"):
            ui.inert(other.rationale or "(imported label: no rationale stored)")
    grades = st.container(horizontal=True, gap="small")
    for g in GRADES.values:
        grades.button(
            GRADES.label(g),
            key=f"g{g}",
            shortcut=ui.keys(str(g)),
            on_click=ui.saving(grade),
            args=(g,),
            type="primary" if own and own.value == g else "secondary",
            width="stretch",
        )
    nav = st.container(horizontal=True, gap="small")
    cursor.nav_buttons(nav, undo, skip=True)  # on a re-shown item, Next and Skip pass it over
    nav.button(
        "Cannot judge", key="cannot", shortcut=ui.keys("X"), on_click=ui.saving(grade), args=(None,), width="stretch"
    )
    save_note = lambda text: judging.save_note(database, name, "passage", turn_id, passage_id, text)  # noqa: E731
    cursor.note_input("Note (optional; Enter or Esc returns to the keys)", (own.note if own else None) or "", save_note)
    ui.queue_overview(state, turn_id)
    upcoming = state.next_unjudged(cursor.position)  # the next grade key most likely shows it: read its text now
    desk.prepare(None if upcoming is None else state.item(upcoming)[1], load_passage)


with right:
    item_panel()
