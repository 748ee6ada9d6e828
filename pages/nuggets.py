"""Extract nuggets from a turn's relevant passages: select text with the mouse, press N.

Relevant = graded >= the threshold by the chosen source (your own labels; all pooled passages with text
until you judge the turn; other sources only when the study is not blind). Nuggets can also be typed,
edited, moved to a new span ("Move span"), deleted, and marked V vital or O okay (importance, TREC RAG)."""

import streamlit as st

from assess import ui
from assess.errors import AssessError
from assess.services import contents
from assess.services import nuggets as service
from assess.ui import nuggets as nugget_ui
from assess.ui.rag import importance_keys

MOVING = "select its new span in this passage, then press N. Choose “Cancel move” below to keep it where it is."

ui.frame_guard()
database = ui.db()
name = ui.require_assessor("nuggets")

top = st.columns([2, 2, 1])
with top[0]:
    turn_id = ui.pick_turn(contents.pooled_turns(database), "nug_turn")
options, first, labels = service.relevance_sources(database, name, turn_id)
relevance_source = top[1].selectbox(
    "Relevant passages by", options, index=first, format_func=lambda s: labels.get(s, s), key=f"nug_source_{turn_id}"
)
threshold = top[2].selectbox("Grade at least", [1, 2, 3, 4], index=1, key="nug_threshold")
passages = service.relevant_passages(database, turn_id, source=relevance_source or None, threshold=threshold)
ctx = contents.turn_context(database, turn_id)
with st.expander(f"Conversation: {ui.esc(ctx.title or ctx.conversation_id)}", expanded=False):
    ui.conversation(ctx)
    ui.ptkb(ctx)
ui.line(f"Turn {turn_id}:", ctx.query)
if missing := service.passages_without_text(database, turn_id):
    st.caption(f"{missing} pooled passage(s) of this turn have no text (licensed ClueWeb22): not listed.")
if not passages:
    st.info("No passage of this turn meets the threshold for that source: lower it or choose another source.")
    st.stop()
info = {p["passage_id"]: p for p in passages}
graded = relevance_source == name
describe = lambda p: f"{p} · {info[p]['words']} words" + (f" · grade {info[p]['grade']}" if graded else "")  # noqa: E731
passage_id = ui.pick(
    list(info), f"nug_passage_{turn_id}", f"Passage ({len(info)} relevant)", param="passage", format_func=describe
)
# "Move span" on a nugget below: the next selection moves that nugget instead of adding one.
moving = service.movable_nugget(database, name, st.session_state.get("nug_move"), turn_id)


def act(action, *args, error=""):
    try:
        ui.set_flash("success", action(database, *args))
        return True
    except (AssessError, KeyError, TypeError, ValueError) as exc:
        ui.set_flash("error", f"{error}{exc}")


def add_selection():
    picked = ui.picked_span("span_picker")
    if picked and act(service.store_selection, name, turn_id, picked, moving, error="Not stored: ") and moving:
        st.session_state.pop("nug_move", None)


ui.flash()
if moving:
    st.info(f"Moving nugget {ui.esc(moving['key'])}: {MOVING}")
button = f"Move nugget {moving['key']} to the selection (N)" if moving else "Add selection as nugget (N)"
text, marked = contents.passage_text(database, passage_id), service.passage_spans(database, name, turn_id, passage_id)
ui.span_picker(passage_id, text, marked, key="span_picker", on_pick=add_selection, button=button)


def add_typed():
    if act(service.add_typed, name, turn_id, st.session_state.get("nug_typed", ""), passage_id):
        st.session_state["nug_typed"] = ""


with st.expander("Type or paste a nugget instead"):
    st.text_input("Nugget text (looked up in this passage: exact, then ignoring case and spacing)", key="nug_typed")
    st.button("Add typed nugget", key="nug_add_typed", on_click=ui.saving(add_typed))

rows = service.turn_nuggets(database, name, turn_id)
st.subheader(f"Your nuggets for turn {ui.esc(turn_id)} ({len(rows)})")
ui.nugget_table(rows, key="nug_table")
if not rows:
    st.stop()
by_id = {r["id"]: r for r in rows}
short = lambda i: f"{by_id[i]['key']} {by_id[i]['text'][:80]}"  # noqa: E731
chosen = st.selectbox("Edit or delete", list(by_id), key=f"nug_edit_{turn_id}", format_func=short)


nugget_ui.edit_row(database, name, turn_id, by_id, chosen, info, moving, act)
importance_keys(database, name, turn_id, by_id, f"nug_edit_{turn_id}")  # V / O: the chosen nugget's importance
