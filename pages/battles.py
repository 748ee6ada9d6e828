"""Side-by-side battles: two runs' answers to one topic, identities hidden; which is better?

Keys: ArrowLeft or A the left answer is better, ArrowRight or L the right one, T a tie, N neither is good (both
bad); each stores the verdict at once (the run shown on the left as ``run_a``: the order shown is stored) and draws the next
battle of the chosen plan. U undoes the last verdict. The order of the battles and which answer is on the left
are drawn per person; a share of the battles comes again at the end in swapped order. A key press re-runs
only the battle panel (a fragment). The question and both answers come first (each answer in a box that
scrolls inside, so both fit a 1280x800 window), the conversation so far and the PTKB collapsed below the keys.
"""

import time

import streamlit as st

from assess import ui
from assess.errors import UnknownItem
from assess.services import battles
from assess.ui import battles as battle_ui
from assess.ui import rag as rag_ui

ui.frame_guard()
database = ui.db()
name = ui.require_assessor("battles")
ui.keyboard_preference(database, name)

plans = battles.plan_names(database)
if not plans:
    st.info("No battle plans yet: an organizer makes one (`python -m assess battles plan`).")
    st.stop()
plan = st.sidebar.selectbox("Battle plan", plans, index=len(plans) - 1, key="battle_plan")
if ui.is_organizer() and (exposed := battles.exposure_warning(database, plan, judges_only=True)):
    st.warning(ui.esc(exposed))  # the organizer's warning: people in battles who saw the runs' names elsewhere


@ui.key_panel
def battle_panel():
    rag_ui.messages()
    pending, total = battles.pending(database, plan, name)
    top = st.container(horizontal=True, gap="small", vertical_alignment="center")
    if pending:
        done = total - len(pending)
        top.progress(done / total, text=f"Battle {done + 1} of {total} · {done} / {total} battles judged")
    top.button(
        "Undo", key="battle_undo", shortcut=ui.keys("U"), on_click=ui.saving(battles.undo), args=(database, name)
    )
    if not pending:
        st.success(f"All {total} battles of this plan judged. Thank you!")
        return
    item = pending[0]
    try:
        screen = battles.screen(database, item)
    except UnknownItem as exc:
        st.warning(f"This battle's answers are no longer stored ({ui.esc(exc)}): reload the page.")
        return
    st.session_state["battle_on_screen"] = (item, time.monotonic())

    def decide(winner):
        shown, since = st.session_state["battle_on_screen"]
        active_ms = int((time.monotonic() - since) * 1000)
        battles.save(database, name, shown, winner, active_ms=active_ms, fresh=True)  # drawn unjudged

    battle_ui.question(screen)
    left, right = st.columns(2, gap="small")
    shown = total - len(pending)  # one box per battle: each opens scrolled to its top
    battle_ui.answer(left, "Left answer", screen.left, key=f"battle_box_left_{shown}")
    battle_ui.answer(right, "Right answer", screen.right, key=f"battle_box_right_{shown}")
    battle_ui.verdict_buttons(decide)
    battle_ui.context(screen)


battle_panel()
