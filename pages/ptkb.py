"""Label which PTKB (persona) statements are relevant to each turn.

Keys: 1 relevant, 0 not relevant (both move to the next unlabelled statement), Left/Right
previous/next, U undo. These labels form the assessor's own PTKB source. A key press re-runs only the
statement panel (a fragment); the whole page runs again when the next statement belongs to another turn.
"""

import streamlit as st

from assess import ui
from assess.services import judging
from assess.services.judging import item_screen, save_ptkb, turn_labels
from assess.tasks import Shown

ui.frame_guard()
database = ui.db()
name = ui.require_assessor("ptkb")
ui.keyboard_preference(database, name)

order = ui.queue_order(database, name, task="ptkb")
desk = ui.KeyQueue("ptkb", database, name, "ptkb", order, lambda: judging.labelled(database, name, "ptkb"))
if not len(order.items):
    st.info("No PTKB statements to label in your queue.")
    st.stop()
ui.mixed_queue_warning(database, order.turn_totals)  # on every full run: a mix is never silent
shown_turn = desk.cursor().turn_id
ctx, left, right = ui.context_columns(database, shown_turn)
statements = {s["id"]: s["text"] for s in ctx.ptkb}
in_turn = [item for turn, item in order.items if turn == shown_turn]
with left:
    ui.guideline(database, "ptkb")


@ui.key_panel
def statement_panel():
    cursor = desk.cursor(shown_turn)  # another turn: the whole page runs again
    state = cursor.state
    turn_id, statement_id = cursor.turn_id, cursor.item_id
    undo = lambda: judging.undo(database, name, "ptkb")  # noqa: E731
    if cursor.finished:
        cursor.end_screen("PTKB statements of your queue labelled", undo)
        return
    screen = item_screen(database, name, "ptkb", turn_id, statement_id)

    def label(value):
        turn, statement = cursor.on_screen()
        first = save_ptkb(
            database,
            name,
            turn,
            statement,
            value,
            mode=screen.mode,
            active_ms=cursor.active_ms(),
            expected=cursor.expected(),
        )
        desk.answered(cursor, stay=first, value=value)  # blind-then-reveal: stay to show the LLM's label

    done_turn, total_turn = state.progress()["turns"][turn_id]
    st.progress(done_turn / total_turn, text=f"Turn {ui.esc(turn_id)}: {done_turn} / {total_turn} statements labelled")
    st.markdown("Is this statement about the user **relevant** to answering the current turn?")
    own_labels = turn_labels(database, name, "ptkb", turn_id)
    for item in in_turn:
        own = own_labels.get(item, "unlabelled")
        mark = "·" if own == "unlabelled" else ("✅ relevant" if own else "✖ not relevant")
        current = item == statement_id
        ui.line(f"▶ {item}." if current else f"{item}.", f"{statements[item]} — {mark}", strong=current)
    cursor.shown(timed={"rel": ui.keys("1"), "nonrel": ui.keys("0")}, own=Shown.of(screen.own))
    for other in screen.revealed:
        with st.expander(f"{ui.esc(other.source)} says {'relevant' if other.value else 'not relevant'}"):
            ui.inert(other.rationale or "(imported label: no rationale stored)")
    keys = st.container(horizontal=True, gap="small")
    keys.button("1 · Relevant", key="rel", shortcut=ui.keys("1"), on_click=ui.saving(label), args=(1,), width="stretch")
    keys.button(
        "0 · Not relevant", key="nonrel", shortcut=ui.keys("0"), on_click=ui.saving(label), args=(0,), width="stretch"
    )
    cursor.nav_buttons(keys, undo)


with right:
    statement_panel()
