"""The /adjudicate page's two forms: the organizers' settings (sources compared, blindness) in the sidebar, and
the reason typed beside an adjudicated grade."""

from __future__ import annotations

import streamlit as st

from assess.services import judging
from assess.ui.frame import saving


def settings(database, sources: list[str], blind: bool, who: str) -> None:
    """The sources the queue compares and whether adjudicators see their names (an organizer action on Save)."""
    with st.sidebar.expander("Adjudication settings (organizers)", expanded=len(sources) < 2):
        every = judging.adjudication_candidates(database)
        with st.form("adjudication_settings", border=False):
            chosen = st.multiselect("Sources compared", every, default=[s for s in sources if s in every])
            hide = st.toggle("Blind: adjudicators see letters, not the sources' names", value=blind)
            if st.form_submit_button("Save"):
                judging.set_adjudication_settings(database, chosen, hide, by=who)
                st.rerun()


def reason_input(database, turn_id: str, passage_id: str, own, who: str) -> None:
    """The reason of the item's adjudicated label (``own``, or None), stored as it is typed."""
    note_key = f"adj_note_{turn_id}_{passage_id}"
    st.text_input(
        "Reason (optional; stored with the grade; Enter or Esc returns to the keys)",
        key=note_key,
        value=judging.adjudication_reason(own.note if own else None, who),
        on_change=saving(
            lambda: judging.set_adjudication_reason(database, turn_id, passage_id, st.session_state[note_key], by=who)
        ),
    )
