"""Organizers: AEPD aspects of a turn's topic, the PTKB statements each relates to, and each system's
content per aspect (select words of the response and press N, or edit the text; lengths are word counts).
Exports the ``score aepd`` input and shows the P-D scatter.
"""
import json

import pandas as pd
import streamlit as st

from assess import plots, scoreboard, ui
from assess.errors import AssessError
from store import nuggets as store
from store import queue

ui.frame_guard(organizer=True)
database = ui.db()
st.title("Aspects (AEPD)")
turn_id = ui.pick_turn(store.all_turns(database), "asp_turn")
ctx = queue.turn_context(database, turn_id)
statements = {s["id"]: s["text"] for s in ctx["ptkb"]}
st.markdown(f"**Turn {ui.plain(turn_id)}:** {ui.plain(ctx['resolved_utterance'] or ctx['utterance'] or '')}")
listed = store.aspects(database, turn_id)
by_id = {a["id"]: a for a in listed}


def act(fn, *args, done="Saved", **kwargs):
    try:
        fn(database, *args, **kwargs)
        ui.set_flash("success", done)
    except AssessError as exc:
        ui.set_flash("error", f"Not saved: {exc}")


def ptkb_label(s):
    return f"{s}. {statements.get(s, '')[:70]}"


with st.expander(f"Aspects of the topic ({len(listed)}): add or edit", expanded=not listed):
    c = st.columns([3, 3, 1])
    c[0].text_input("New aspect", key=f"asp_new_{turn_id}")
    c[1].multiselect("Relates to PTKB statements", list(statements), key=f"asp_new_ptkb_{turn_id}",
                     format_func=ptkb_label)
    c[2].button("Add", key="asp_add", on_click=lambda: act(
        store.save_aspect, turn_id, st.session_state[f"asp_new_{turn_id}"],
        st.session_state[f"asp_new_ptkb_{turn_id}"], done="Aspect added"))
    if listed:
        chosen = st.selectbox("Edit", list(by_id), key=f"asp_edit_{turn_id}", format_func=lambda i: by_id[i]["aspect"])
        c = st.columns([3, 3, 1, 1])
        c[0].text_input("Aspect", value=by_id[chosen]["aspect"], key=f"asp_text_{chosen}")
        c[1].multiselect("PTKB", list(statements), default=by_id[chosen]["ptkb"], key=f"asp_ptkb_{chosen}",
                         format_func=ptkb_label)
        c[2].button("Save", key="asp_save", on_click=lambda i=chosen: act(
            store.save_aspect, turn_id, st.session_state[f"asp_text_{i}"], st.session_state[f"asp_ptkb_{i}"],
            aspect_id=i))
        c[3].button("Delete", key="asp_delete", on_click=lambda i=chosen: act(store.delete_aspect, i, done="Deleted"))
ui.flash()
if not listed:
    st.info("Add the possible aspects of this turn's topic first.")
    st.stop()

runs = [r for r in store.response_runs(database) if store.response_text(database, r, turn_id) is not None]
if not runs:
    st.info("No system response to this turn.")
    st.stop()
run = st.selectbox("System (run)", runs, key="asp_run")
response = store.response_text(database, run, turn_id)
target = st.selectbox("Selection goes to aspect", list(by_id), key=f"asp_target_{turn_id}",
                      format_func=lambda i: by_id[i]["aspect"])


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
        ui.set_flash("success", f"Added {len(span.text.split())} words to “{by_id[aspect]['aspect']}”")
    except (AssessError, KeyError, TypeError, ValueError) as exc:
        ui.set_flash("error", f"Not assigned: {exc}")


ui.span_picker(f"{run}/{turn_id}", response, [], key="asp_pick", on_pick=assign,
               button="Add selection to the aspect (N)", hint="Select words of the response, then press N.")
for a in listed:
    text = a["content"].get(run, "")
    st.text_area(f"{a['aspect']} · PTKB {', '.join(a['ptkb']) or '—'} · {len(text.split())} words",
                 value=text, key=f"asp_content_{a['id']}_{run}", height=68)
st.button("Save the texts", key="asp_save_texts", on_click=lambda: [
    act(store.set_aspect_content, a["id"], run, st.session_state.get(f"asp_content_{a['id']}_{run}", ""))
    for a in listed])

document = store.aepd_export(database)
st.download_button("Download all aspects as a `score aepd` input", json.dumps(document, indent=1, ensure_ascii=False),
                   file_name="aepd.json", mime="application/json", key="asp_download")
try:
    view = scoreboard.aepd_view(document)
    here = [p for p in view["points"] if str(p["id"]).endswith(f"/{turn_id}")]
    st.dataframe(pd.DataFrame(here), hide_index=True, width="stretch", key="asp_scores")
    ui.figure(plots.aepd_scatter(view["points"], color_by="system"), "aepd_scatter_store")
except AssessError as exc:
    st.error(f"Not scored: {exc}")
