"""Judge passages 0-4 for a turn, with the conversation, the resolved utterance and the PTKB beside them.

Keys: 0-4 grade and move to the next unjudged passage, X cannot judge, Left/Right previous/next,
S skip, U undo. Every key press is stored at once. A key press re-runs only the item panel (a
fragment); the whole page runs again when the next item belongs to another turn. A re-shown item
(docs/judging.md) is drawn as a fresh one in place of the next unjudged passage.
"""

import streamlit as st

from assess import ui
from assess.services import judging
from assess.services.judging import item_screen, read_passage
from assess.tasks import GRADES
from assess.text import query_terms
from store import queue

ui.frame_guard()
database = ui.db()
name = ui.require_assessor("judge")
ui.keyboard_preference(database, name)

order = ui.queue_order(database, name)
load_passage = lambda passage_id: read_passage(database, passage_id)  # noqa: E731
desk = ui.KeyQueue("judge", database, name, "passage", order, lambda: queue.labelled(database, name))
if not len(desk.order.items):
    st.info("Your queue is empty: ask an organizer to assign you a topic.")
    st.stop()
if "turn" in st.query_params and "passage" in st.query_params:  # a deep link to one item, used once
    st.session_state["judge_key"] = (st.query_params.pop("turn"), st.query_params.pop("passage"))
due = lambda complete, held: judging.due_reshow(database, name, "passage", complete=complete, held=held)  # noqa: E731
shown_turn = desk.cursor(due=due).screen_turn
ctx, left, right = ui.context_columns(database, shown_turn)
with left:
    with st.expander("Persona (PTKB statements)", expanded=True):
        ui.ptkb(ctx)
    with st.expander("Grade rubric", expanded=True):
        ui.rubric()
    ui.guideline(database, "passage")


@ui.key_panel
def item_panel():
    cursor = desk.cursor(shown_turn, due=due)  # another turn: the whole page runs again
    state, again = cursor.state, cursor.reshow
    pos, (turn_id, passage_id) = cursor.position, again or cursor.key()
    undo = lambda: queue.undo(database, name, "passage")  # noqa: E731
    if cursor.finished and not again:
        cursor.end_screen("passages of your queue judged", undo)
        return
    prepared = lambda pid: desk.prepared(pid, load_passage)  # noqa: E731
    if again:  # drawn as a fresh item: no earlier label, nothing revealed
        screen = judging.reshow_screen(database, "passage", passage_id, passage=prepared)
    else:
        screen = item_screen(database, name, "passage", turn_id, passage_id, passage=prepared)
    own = screen.own

    def grade(value):
        turn, passage = cursor.on_screen()
        reshown = cursor.on_screen_reshow()
        note = None if reshown else st.session_state.get(f"note_{turn}_{passage}") or None  # typed before grading
        first = screen.mode == "reveal" and queue.label_of(database, name, "passage", turn, passage) is None
        judging.save_grade(
            database,
            name,
            turn,
            passage,
            value,
            reshow=reshown,
            note=note,
            mode=screen.mode,
            active_ms=cursor.active_ms(),
        )
        if not reshown:
            desk.mark((turn, passage))
        # blind-then-reveal: stay to show the LLM's label; after a re-show the cursor's own item comes
        cursor.go(None if first or reshown else "next_unjudged")

    prog = state.progress()
    done_turn, total_turn = prog["turns"][turn_id]
    done_turn -= bool(again)  # a re-shown item counts as still to judge
    st.progress(
        done_turn / total_turn,
        text=f"Turn {ui.esc(turn_id)}: {done_turn} / {total_turn} judged · all: {prog['judged']} / {prog['total']}",
    )
    st.markdown(f"Passage {ui.code(passage_id)} ({pos + 1} of {len(state)})")
    cursor.shown(timed={f"g{g}": ui.keys(str(g)) for g in GRADES.values} | {"cannot": ui.keys("X")})
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
    passing = (lambda: judging.postpone_reshow(database, name, turn_id, passage_id)) if again else None
    cursor.nav_buttons(nav, undo, skip=True, passing=passing)
    nav.button(
        "Cannot judge", key="cannot", shortcut=ui.keys("X"), on_click=ui.saving(grade), args=(None,), width="stretch"
    )
    note_key = f"note_{'r_' if again else ''}{turn_id}_{passage_id}"
    st.text_input(
        "Note (optional; Enter or Esc returns to the keys)",
        key=note_key,
        value=(own.note if own else None) or "",
        on_change=None  # a re-shown item's answer keeps no note
        if again
        else ui.saving(
            lambda: queue.save_note(database, name, "passage", turn_id, passage_id, st.session_state[note_key])
        ),
    )
    ui.queue_overview(state, turn_id)
    upcoming = state.next_unjudged(pos)  # the next grade key most likely shows it: read its text now
    desk.prepare(None if upcoming is None else state.item(upcoming)[1], load_passage)


with right:
    item_panel()
ui.release_keys_from_inputs()  # once per page: Enter or Esc in the note field gives the keys back
