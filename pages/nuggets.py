"""Extract nuggets from a turn's relevant passages: select text with the mouse, press N.

Relevant = graded >= the threshold by the chosen source (your own labels; all pooled passages with text
until you judge the turn; other sources only when the study is not blind). Nuggets can also be typed,
edited, moved to a new span ("Move span"), deleted, and marked V vital or O okay (importance, TREC RAG)."""

import streamlit as st

from assess import ui
from assess.errors import AssessError
from assess.services import contents
from assess.services import nuggets as service
from assess.ui.rag import importance_keys

MOVING = "select its new span in this passage, then press N. Choose “Cancel move” below to keep it where it is."
NOT_SHOWN = "is not in a passage shown here (relevant with text): edit its text instead"
MOVE_HELP = "Select a new span for this nugget in its passage"

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


def save_edit(nid=chosen):
    act(service.edit_nugget, name, nid, st.session_state.get(f"nug_text_{nid}"), st.session_state.get(f"nug_rel_{nid}"))


def move(nid=chosen):
    target = by_id[nid]
    if target["passage_id"] in info:
        st.session_state["nug_move"] = nid
        st.session_state[f"nug_passage_{turn_id}"] = target["passage_id"]  # show its passage in the picker
    else:
        ui.set_flash("error", f"Nugget {target['key']} {NOT_SHOWN}")


edit = st.columns([4, 1, 1, 1, 1])
edit[0].text_input("Text", value=by_id[chosen]["text"], key=f"nug_text_{chosen}")
rel_options = ["none", "1", "2", "3", "4"]
rel = rel_options.index(str(by_id[chosen]["relevance"] or "none"))
edit[1].selectbox("Relevance", rel_options, key=f"nug_rel_{chosen}", index=rel)
edit[2].button("Save", key="nug_save", on_click=ui.saving(save_edit), width="stretch")
edit[3].button(
    "Delete", key="nug_delete", on_click=ui.saving(act), args=(service.delete_nugget, name, chosen), width="stretch"
)
if moving:
    edit[4].button(
        "Cancel move", key="nug_move_cancel", width="stretch", on_click=st.session_state.pop, args=("nug_move", None)
    )
else:
    edit[4].button("Move span", key="nug_move_start", on_click=ui.saving(move), width="stretch", help=MOVE_HELP)
importance_keys(database, name, turn_id, by_id, f"nug_edit_{turn_id}")  # V / O: the chosen nugget's importance
