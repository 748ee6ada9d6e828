"""Organizers: AEPD aspects of a turn's topic, their PTKB statements, and each system's content per aspect
(select words of the response and press N, or edit the text), pre-filled from an LLM's ``prejudge --task
aepd`` answer if wished. Exports the ``score aepd`` input; shows the P-D scatter. Untrusted text is shown
only through ``ui.inert``, widget options and tables."""

import pandas as pd
import streamlit as st

from assess import ui
from assess.errors import AssessError
from assess.nuggets.documents import word_count
from assess.services import contents
from assess.services import nuggets as service
from assess.ui import nuggets as aspect_ui
from assess.ui import plots

DOWNLOAD = "Download all aspects as a `score aepd` input"
DELETED = {"done": "Deleted"}
NO_ASPECTS = "Add the possible aspects of this turn's topic first (or pre-fill them from an LLM source)."
BUTTON = "Add selection to the aspect (N)"
HINT = "Select words of the response, then press N. Words already given to an aspect are highlighted."

ui.frame_guard(organizer=True)
database = ui.db()
state = st.session_state
st.title("Aspects (AEPD)")
turn_id = ui.pick_turn(contents.all_turns(database), "asp_turn")
ctx = contents.turn_context(database, turn_id)
statements = {s["id"]: s["text"] for s in ctx.ptkb}
st.markdown("**Utterance of the turn:**")
ui.inert(ctx.query)
listed = service.turn_aspects(database, turn_id)
by_id = {a["id"]: a for a in listed}
number = {a["id"]: n for n, a in enumerate(listed, start=1)}
runs = service.turn_runs(database, turn_id)
run = st.selectbox("System (run)", runs, key="asp_run") if runs else None


def act(fn, *args, failed="Not saved", done="Saved", fresh=False, **kwargs):
    try:
        result = fn(database, *args, **kwargs)
    except (AssessError, KeyError, TypeError, ValueError) as exc:
        return ui.set_flash("error", f"{failed}: {exc}")
    for key in [k for k in state if fresh and k.startswith("asp_content_") and k.endswith(f"_{run}")]:
        state.pop(key)  # the text areas show the content just stored, not what they held
    ui.set_flash("success", result if isinstance(result, str) else done)


ptkb_label = lambda s: f"{s}. {statements.get(s, '')[:70]}"  # noqa: E731
aspect_label = lambda i: f"{number[i]}. {by_id[i]['aspect']}"  # noqa: E731


def save(i=None):  # the new aspect, or aspect i as edited
    text, ptkb = (f"asp_new_{turn_id}", f"asp_new_ptkb_{turn_id}") if i is None else (f"asp_text_{i}", f"asp_ptkb_{i}")
    act(service.save_aspect, turn_id, state[text], state[ptkb], aspect_id=i, done="Saved" if i else "Aspect added")


with st.expander(f"Aspects of the topic ({len(listed)}): add or edit", expanded=not listed):
    c = st.columns([3, 3, 1])
    c[0].text_input("New aspect", key=f"asp_new_{turn_id}")
    c[1].multiselect(
        "Relates to PTKB statements", list(statements), key=f"asp_new_ptkb_{turn_id}", format_func=ptkb_label
    )
    c[2].button("Add", key="asp_add", on_click=ui.saving(save))
    if listed:
        chosen = st.selectbox("Edit", list(by_id), key=f"asp_edit_{turn_id}", format_func=aspect_label)
        c = st.columns([3, 3, 1, 1])
        c[0].text_input("Aspect", value=by_id[chosen]["aspect"], key=f"asp_text_{chosen}")
        links = by_id[chosen]["ptkb"]
        c[1].multiselect("PTKB", list(statements), default=links, key=f"asp_ptkb_{chosen}", format_func=ptkb_label)
        c[2].button("Save", key="asp_save", on_click=ui.saving(save), args=(chosen,))
        c[3].button(
            "Delete", key="asp_delete", on_click=ui.saving(act), args=(service.delete_aspect, chosen), kwargs=DELETED
        )

aspect_ui.llm_prefill(database, turn_id, run, listed, act)
ui.flash()
if not listed or not runs:
    st.info("No system response to this turn." if listed else NO_ASPECTS)
    st.stop()
target = st.selectbox("Selection goes to aspect", list(by_id), key=f"asp_target_{turn_id}", format_func=aspect_label)


def assign():
    if picked := ui.picked_span("asp_pick"):
        aspect = state.get(f"asp_target_{turn_id}")
        act(service.add_selection_to_aspect, aspect, run, turn_id, picked, failed="Not assigned", fresh=True)


response, marked = service.response_text(database, run, turn_id), service.content_spans(database, turn_id, run)
ui.span_picker(f"{run}/{turn_id}", response, marked, key="asp_pick", on_pick=assign, button=BUTTON, hint=HINT)
for a in listed:
    text = a["content"].get(run, "")
    ui.inert(f"{number[a['id']]}. {a['aspect']} · PTKB {', '.join(a['ptkb']) or '—'} · {word_count(text)} words")
    key = f"asp_content_{a['id']}_{run}"
    st.text_area(f"Content of aspect {number[a['id']]}", value=text, key=key, height=68, label_visibility="collapsed")


texts = lambda: {a["id"]: state.get(f"asp_content_{a['id']}_{run}", "") for a in listed}  # noqa: E731
st.button("Save the texts", key="asp_save_texts", on_click=ui.saving(lambda: act(service.save_contents, run, texts())))
text, document = service.aepd_file(database)
st.download_button(DOWNLOAD, text, file_name="aepd.json", mime="application/json", key="asp_download")
try:
    here, points = service.aepd_scores(document, turn_id)
    st.dataframe(pd.DataFrame(here), hide_index=True, width="stretch", key="asp_scores")
    ui.figure(plots.aepd_scatter(points, color_by="system"), "aepd_scatter_store")
except AssessError as exc:
    ui.error("Not scored: ", exc)
