"""Widgets of the nugget pages: /nuggets' editing row (the chosen nugget's text and relevance, Save, Delete, and
Move span, or Cancel move while one is moving) and /aspects' pre-fill from an LLM source."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from assess.services import nuggets as service
from assess.ui.frame import saving
from assess.ui.widgets import set_flash

NOT_SHOWN = "is not in a passage shown here (relevant with text): edit its text instead"
MOVE_HELP = "Select a new span for this nugget in its passage"
PREFILL = "Pre-fill the aspects and this run's content"


def edit_row(database, name: str, turn_id: str, by_id: dict, chosen: int, info: dict, moving, act) -> None:
    """Edit ``by_id[chosen]`` (``name``'s nugget of ``turn_id``); Move span only to the passages of ``info``.
    ``act(action, *args)`` runs a service action and flashes its outcome (the page's)."""

    def save_edit(nid=chosen):
        act(
            service.edit_nugget,
            name,
            nid,
            st.session_state.get(f"nug_text_{nid}"),
            st.session_state.get(f"nug_rel_{nid}"),
        )

    def move(nid=chosen):
        target = by_id[nid]
        if target["passage_id"] in info:
            st.session_state["nug_move"] = nid
            st.session_state[f"nug_passage_{turn_id}"] = target["passage_id"]  # show its passage in the picker
        else:
            set_flash("error", f"Nugget {target['key']} {NOT_SHOWN}")

    edit = st.columns([4, 1, 1, 1, 1])
    edit[0].text_input("Text", value=by_id[chosen]["text"], key=f"nug_text_{chosen}")
    rel_options = ["none", "1", "2", "3", "4"]
    rel = rel_options.index(str(by_id[chosen]["relevance"] or "none"))
    edit[1].selectbox("Relevance", rel_options, key=f"nug_rel_{chosen}", index=rel)
    edit[2].button("Save", key="nug_save", on_click=saving(save_edit), width="stretch")
    edit[3].button(
        "Delete", key="nug_delete", on_click=saving(act), args=(service.delete_nugget, name, chosen), width="stretch"
    )
    if moving:
        edit[4].button(
            "Cancel move",
            key="nug_move_cancel",
            width="stretch",
            on_click=st.session_state.pop,
            args=("nug_move", None),
        )
    else:
        edit[4].button("Move span", key="nug_move_start", on_click=saving(move), width="stretch", help=MOVE_HELP)


def llm_prefill(database, turn_id: str, run: str | None, listed: list, act) -> None:
    """The LLM sources' aspects of the turn and run, a preview, and the button that copies them (``act``, the page's
    action runner)."""
    llm_sources = service.llm_aspect_sources(database, turn_id, run) if run else []
    with st.expander(f"Pre-fill from an LLM source ({len(llm_sources)})", expanded=not listed and bool(llm_sources)):
        if not llm_sources:
            st.caption("No LLM aspects for this run and turn: run `python -m assess prejudge --task aepd` first.")
        else:
            source = st.selectbox("LLM source", llm_sources, key="asp_llm_source")
            preview = service.aspect_preview(database, source, turn_id, run)
            st.dataframe(pd.DataFrame(preview), hide_index=True, width="stretch", key="asp_llm_preview")
            prefill = (service.prefill_aspects, source, turn_id, run)
            st.button(
                PREFILL,
                key="asp_prefill",
                on_click=saving(act),
                args=prefill,
                kwargs={"failed": "Not pre-filled", "fresh": True},
            )
