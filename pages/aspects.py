"""Organizers: AEPD aspects of a turn's topic, the PTKB statements each relates to, and each system's
content per aspect (select words of the response and press N, or edit the text; lengths are word counts).
Aspects can be pre-filled from an LLM's ``prejudge --task aepd`` answer and then edited. Exports the
``score aepd`` input and shows the P-D scatter. Untrusted text (utterances, responses, aspects) is shown
only through ``ui.inert``, widget options and tables.
"""

import json

import pandas as pd
import streamlit as st

from assess import ui
from assess.errors import AssessError
from assess.services import audit as scoreboard
from assess.ui import plots
from store import conversations
from store import nuggets as store

ui.frame_guard(organizer=True)
database = ui.db()
st.title("Aspects (AEPD)")
turn_id = ui.pick_turn(store.all_turns(database), "asp_turn")
ctx = conversations.turn_context(database, turn_id)
statements = {s["id"]: s["text"] for s in ctx.ptkb}
st.markdown("**Utterance of the turn:**")
ui.inert(ctx.query)
listed = store.aspects(database, turn_id)
by_id = {a["id"]: a for a in listed}
number = {a["id"]: n for n, a in enumerate(listed, start=1)}
runs = [r for r in store.response_runs(database) if store.response_text(database, r, turn_id) is not None]
run = st.selectbox("System (run)", runs, key="asp_run") if runs else None


def act(fn, *args, done="Saved", **kwargs):
    try:
        fn(database, *args, **kwargs)
        ui.set_flash("success", done)
    except AssessError as exc:
        ui.set_flash("error", f"Not saved: {exc}")


def ptkb_label(s):
    return f"{s}. {statements.get(s, '')[:70]}"


def aspect_label(i):
    return f"{number[i]}. {by_id[i]['aspect']}"


with st.expander(f"Aspects of the topic ({len(listed)}): add or edit", expanded=not listed):
    c = st.columns([3, 3, 1])
    c[0].text_input("New aspect", key=f"asp_new_{turn_id}")
    c[1].multiselect(
        "Relates to PTKB statements", list(statements), key=f"asp_new_ptkb_{turn_id}", format_func=ptkb_label
    )
    c[2].button(
        "Add",
        key="asp_add",
        on_click=lambda: act(
            store.save_aspect,
            turn_id,
            st.session_state[f"asp_new_{turn_id}"],
            st.session_state[f"asp_new_ptkb_{turn_id}"],
            done="Aspect added",
        ),
    )
    if listed:
        chosen = st.selectbox("Edit", list(by_id), key=f"asp_edit_{turn_id}", format_func=aspect_label)
        c = st.columns([3, 3, 1, 1])
        c[0].text_input("Aspect", value=by_id[chosen]["aspect"], key=f"asp_text_{chosen}")
        c[1].multiselect(
            "PTKB", list(statements), default=by_id[chosen]["ptkb"], key=f"asp_ptkb_{chosen}", format_func=ptkb_label
        )
        c[2].button(
            "Save",
            key="asp_save",
            on_click=lambda i=chosen: act(
                store.save_aspect,
                turn_id,
                st.session_state[f"asp_text_{i}"],
                st.session_state[f"asp_ptkb_{i}"],
                aspect_id=i,
            ),
        )
        c[3].button("Delete", key="asp_delete", on_click=lambda i=chosen: act(store.delete_aspect, i, done="Deleted"))


def prefill(source):
    try:
        n = store.prefill_aspects(database, source, turn_id, run)
        for a in store.aspects(database, turn_id):
            st.session_state.pop(f"asp_content_{a['id']}_{run}", None)
        ui.set_flash(
            "success",
            f"Pre-filled: {n['added']} aspects added, {n['existing']} already listed, "
            f"content of {n['content']} set for this run; review and edit them below",
        )
    except AssessError as exc:
        ui.set_flash("error", f"Not pre-filled: {exc}")


llm_sources = store.llm_aspect_sources(database, turn_id, run) if run else []
with st.expander(f"Pre-fill from an LLM source ({len(llm_sources)})", expanded=not listed and bool(llm_sources)):
    if not llm_sources:
        st.caption("No LLM aspects for this run and turn: run `python -m assess prejudge --task aepd` first.")
    else:
        source = st.selectbox("LLM source", llm_sources, key="asp_llm_source")
        proposed = store.llm_aspects(database, source, turn_id, run)
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "aspect": a["aspect"],
                        "PTKB": ", ".join(a["ptkb"]),
                        "words": len(a["text"].split()),
                        "content": a["text"],
                    }
                    for a in proposed
                ]
            ),
            hide_index=True,
            width="stretch",
            key="asp_llm_preview",
        )
        st.button("Pre-fill the aspects and this run's content", key="asp_prefill", on_click=prefill, args=(source,))
ui.flash()
if not listed:
    st.info("Add the possible aspects of this turn's topic first (or pre-fill them from an LLM source).")
    st.stop()
if not runs:
    st.info("No system response to this turn.")
    st.stop()
response = store.response_text(database, run, turn_id)
target = st.selectbox("Selection goes to aspect", list(by_id), key=f"asp_target_{turn_id}", format_func=aspect_label)


def assign():
    picked = ui.picked_span("asp_pick")
    if not picked:
        return
    from assess.nuggets import span_from_utf16

    try:
        span = span_from_utf16(response, int(picked["start"]), int(picked["end"]), picked.get("text"))
        aspect = st.session_state[f"asp_target_{turn_id}"]
        old = store.aspects(database, turn_id)
        before = next(a["content"].get(run, "") for a in old if a["id"] == aspect)
        store.set_aspect_content(database, aspect, run, f"{before} {span.text}".strip())
        st.session_state.pop(f"asp_content_{aspect}_{run}", None)
        ui.set_flash("success", f"Added {len(span.text.split())} words to aspect {number.get(aspect, '')}")
    except (AssessError, KeyError, TypeError, ValueError) as exc:
        ui.set_flash("error", f"Not assigned: {exc}")


ui.span_picker(
    f"{run}/{turn_id}",
    response,
    store.content_spans(database, turn_id, run),
    key="asp_pick",
    on_pick=assign,
    button="Add selection to the aspect (N)",
    hint="Select words of the response, then press N. Words already given to an aspect are highlighted.",
)
for a in listed:
    text = a["content"].get(run, "")
    ui.inert(f"{number[a['id']]}. {a['aspect']} · PTKB {', '.join(a['ptkb']) or '—'} · {len(text.split())} words")
    st.text_area(
        f"Content of aspect {number[a['id']]}",
        value=text,
        key=f"asp_content_{a['id']}_{run}",
        height=68,
        label_visibility="collapsed",
    )
st.button(
    "Save the texts",
    key="asp_save_texts",
    on_click=lambda: [
        act(store.set_aspect_content, a["id"], run, st.session_state.get(f"asp_content_{a['id']}_{run}", ""))
        for a in listed
    ],
)

document = store.aepd_export(database)
st.download_button(
    "Download all aspects as a `score aepd` input",
    json.dumps(document, indent=1, ensure_ascii=False),
    file_name="aepd.json",
    mime="application/json",
    key="asp_download",
)
try:
    view = scoreboard.aepd_view(document)
    here = [p for p in view["points"] if str(p["id"]).endswith(f"/{turn_id}")]
    st.dataframe(pd.DataFrame(here), hide_index=True, width="stretch", key="asp_scores")
    ui.figure(plots.aepd_scatter(view["points"], color_by="system"), "aepd_scatter_store")
except AssessError as exc:
    st.error(f"Not scored: {exc}")
