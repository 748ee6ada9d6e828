"""Citation support: each sentence of a generated response beside a passage it cites; does the passage support it?

Keys: 2 fully supported, 1 partially, 0 not supported, I the citation is irrelevant, O the passage contradicts
the sentence (states the opposite; counts as not supported, its share is the contradiction rate), X cannot judge (as on
/judge: stored as the assessor's label without a support value, left out of the citation scores); each stores
the label at once and moves to the next unlabelled citation. Left/Right previous/next, S skip, U undo.
Citations of a response as a whole (the iKAT 2025 topics name no sentence) are shown as such.
Blind: no other source's label is ever shown. Reloading resumes at the first unlabelled citation. A key
press re-runs only the item panel (a fragment); the whole page runs again when the turn changes.
"""

import streamlit as st

from assess import ui
from assess.errors import UnknownItem
from assess.services import rag
from assess.tasks import Shown
from assess.ui import rag as rag_ui

ui.frame_guard()
database = ui.db()
name = ui.require_assessor("citations")
ui.keyboard_preference(database, name)

order = rag_ui.citation_order(database)
desk = ui.KeyQueue("cite", database, name, "citation", order, lambda: rag.citation_done(database, name))
if not len(order.items):
    st.info("No cited responses yet: an organizer imports responses with citations (Import & export page).")
    st.stop()
shown_turn = desk.cursor().turn_id
ctx, left, right = ui.context_columns(database, shown_turn)
with left, st.expander("Labels", expanded=True):
    rag_ui.citation_rubric()
with left:
    ui.guideline(database, "citation")


@ui.key_panel
def citation_panel():
    cursor = desk.cursor(shown_turn)  # another turn: the whole page runs again
    state = cursor.state
    pos, turn_id, item = cursor.position, cursor.turn_id, cursor.item_id
    rag_ui.messages()
    undo = lambda: rag.undo_citation(database, name)  # noqa: E731
    if cursor.finished:
        cursor.end_screen("citations labelled", undo, key_prefix="cite_")
        return
    try:
        screen = rag.citation_screen(database, name, turn_id, item)
    except UnknownItem as exc:
        rag_ui.stale_citation(exc)
        return

    def label(value):
        turn, shown = cursor.on_screen()
        rag.save_citation(database, name, turn, shown, value, active_ms=cursor.active_ms(), expected=cursor.expected())
        desk.answered(cursor, stay=False, value=value)

    rag_ui.turn_progress(state, turn_id, "labelled")
    st.markdown(f"Citation {pos + 1} of {len(state)} · response of system {ui.code(screen.run)}")
    timed = rag_ui.timed_keys(rag_ui.CITATION_KEYS, "cite_") | {"cite_cannot": ui.keys("X")}
    cursor.shown(timed=timed, own=Shown(screen.labelled, screen.own))
    rag_ui.citation_view(screen)
    st.markdown("**Does the cited passage support the sentence?**")
    rag_ui.citation_buttons(label, screen.own)
    nav = st.container(horizontal=True, gap="small")
    cursor.nav_buttons(nav, undo, key_prefix="cite_", skip=True)
    nav.button(
        "Cannot judge",
        key="cite_cannot",
        shortcut=ui.keys("X"),
        on_click=ui.saving(rag_ui.refused(label)),
        args=(None,),
        type="primary" if screen.labelled and screen.own is None else "secondary",
        width="stretch",
    )


with right:
    citation_panel()
