"""Adjudicators and organizers: the passages the compared label sources grade differently, one at a time as a
keyboard queue, with the conversation, the resolved utterance, the PTKB, the passage and every source's grade,
note and rationale side by side.

Keys: 0-4 record the adjudicated grade and go to the next disagreement not yet adjudicated, X cannot judge,
Left/Right previous/next, S skip, U undo (the adjudicator's own last change). The reason typed in the note
field is stored with the grade. Adjudicated labels are a source of their own, 'adjudication', whose note
names who decided; each one is also an organizer action in the history. Organizers choose the sources
compared and whether adjudicators see their names or only letters (drawn per item).
"""

import streamlit as st

from assess import ui
from assess.errors import AssessError
from assess.services import judging
from assess.services.judging import adjudication_screen, adjudication_sources, read_passage
from assess.tasks import GRADES, Shown
from assess.text import query_terms
from assess.ui import adjudication as adjudication_ui

ui.frame_guard(adjudicator=True)
database = ui.db()
who = ui.actor() or "organizer"
if ui.assessor():
    ui.keyboard_preference(database, ui.assessor())

sources, blind = adjudication_sources(database)
if ui.is_organizer():
    adjudication_ui.settings(database, sources, blind, who)
if len(sources) < 2:
    st.title("Adjudicate")
    st.info("Two label sources are needed to compare (an organizer chooses them in the sidebar).")
    st.stop()

order = ui.adjudication_order(database, sources)
load_passage = lambda passage_id: read_passage(database, passage_id)  # noqa: E731
desk = ui.KeyQueue("adj", database, judging.ADJUDICATION, "passage", order, lambda: judging.adjudicated(database))
if not len(order.items):
    st.title("Adjudicate")
    st.success("No disagreements: the compared sources agree on every passage they share.")
    st.stop()
shown_turn = desk.cursor().turn_id
ctx, left, right = ui.context_columns(database, shown_turn)
with left:
    with st.expander("Persona (PTKB statements)", expanded=True):
        ui.ptkb(ctx)
    with st.expander("Grade rubric"):
        ui.rubric()


@ui.key_panel
def adjudication_panel():
    cursor = desk.cursor(shown_turn)  # another turn: the whole page runs again
    state = cursor.state
    pos, turn_id, passage_id = cursor.position, cursor.turn_id, cursor.item_id
    undo = lambda: judging.undo_adjudication(database, who)  # noqa: E731
    if cursor.finished:
        cursor.end_screen("disagreements adjudicated", undo, key_prefix="adj_")
        return
    screen = adjudication_screen(
        database, turn_id, passage_id, sources, blind=blind, passage=lambda pid: desk.prepared(pid, load_passage)
    )

    def decide(value):
        turn, passage = cursor.on_screen()
        reason = st.session_state.get(f"adj_note_{turn}_{passage}") or None
        try:
            judging.adjudicate(database, turn, passage, value, by=who, reason=reason, expected=cursor.expected())
        except judging.StaleLabel:  # another adjudicator or tab decided it meanwhile: said as on every keyboard page
            raise
        except AssessError as exc:
            ui.set_flash("error", f"Not saved: {exc}", slot="adj_flash")
            return
        desk.answered(cursor, stay=False, value=value)

    ui.flash("adj_flash")
    prog = state.progress()
    st.progress(prog["judged"] / prog["total"], text=f"{prog['judged']} / {prog['total']} disagreements adjudicated")
    st.markdown(f"Passage {ui.code(passage_id)} of turn {ui.code(turn_id)} ({pos + 1} of {len(state)})")
    cursor.shown(own=Shown.of(screen.own))
    ui.show_passage(screen.passage.text, query_terms(ctx.query))
    if screen.own:
        st.success(f"Adjudicated: {ui.grade_text(screen.own.value)}")
    st.markdown("**What the sources say**")
    ui.source_cards(screen.labels)
    grades = st.container(horizontal=True, gap="small")
    own = screen.own.value if screen.own else "none"
    for g in GRADES.values:
        grades.button(
            GRADES.label(g),
            key=f"adj_g{g}",
            shortcut=ui.keys(str(g)),
            on_click=ui.saving(decide),
            args=(g,),
            type="primary" if own == g else "secondary",
            width="stretch",
        )
    nav = st.container(horizontal=True, gap="small")
    cursor.nav_buttons(nav, undo, key_prefix="adj_", skip=True)
    nav.button(
        "Cannot judge",
        key="adj_cannot",
        shortcut=ui.keys("X"),
        on_click=ui.saving(decide),
        args=(None,),
        type="primary" if own is None else "secondary",
        width="stretch",
    )
    adjudication_ui.reason_input(database, turn_id, passage_id, screen.own, who)
    upcoming = state.next_unjudged(pos)
    desk.prepare(None if upcoming is None else state.item(upcoming)[1], load_passage)


with right:
    adjudication_panel()
