"""Extract nuggets from the relevant passages of a turn: select text with the mouse, press N.

Each nugget is stored with its passage id, code-point offsets and the exact text there. Relevant =
graded >= the threshold by the chosen source (default: your own labels >= 2; all pooled passages
with text when you have not judged the turn; other sources' labels only when the study is not blind).
Nuggets can be typed too, edited, moved to a newly selected span ("Move span") and deleted.
"""

import streamlit as st

from assess import nuggets as pure
from assess import ui
from assess.errors import AssessError
from store import conversations, queue
from store import nuggets as store

ui.frame_guard()
database = ui.db()
name = ui.require_assessor("nuggets")

top = st.columns([2, 2, 1])
with top[0]:
    turn_id = ui.pick_turn(store.pooled_turns(database), "nug_turn")
own = store.has_labels(database, name, turn_id)
blind = queue.judging_mode(database) == "blind"  # blind: no other source's labels, not even as a filter
others = [] if blind else [s for s in store.label_sources(database, turn_id) if s != name]
options = [name] + others + [""]
labels = {name: f"your labels ({name})", "": "all pooled passages with text"}
relevance_source = top[1].selectbox(
    "Relevant passages by",
    options,
    index=0 if own else len(options) - 1,
    format_func=lambda s: labels.get(s, s),
    key=f"nug_source_{turn_id}",
)
threshold = top[2].selectbox("Grade at least", [1, 2, 3, 4], index=1, key="nug_threshold")
passages = store.relevant_passages(database, turn_id, source=relevance_source or None, threshold=threshold)

ctx = conversations.turn_context(database, turn_id)
with st.expander(f"Conversation: {ctx.title or ctx.conversation_id}", expanded=False):
    ui.conversation(ctx)
    ui.ptkb(ctx)
ui.line(f"Turn {turn_id}:", ctx.query)
missing = store.passages_without_text(database, turn_id)
if missing:
    st.caption(f"{missing} pooled passage(s) of this turn have no text (licensed ClueWeb22): not listed.")
if not passages:
    st.info("No passage of this turn meets the threshold for that source: lower it or choose another source.")
    st.stop()

ids = [p["passage_id"] for p in passages]
info = {p["passage_id"]: p for p in passages}
passage_id = ui.pick(
    ids,
    f"nug_passage_{turn_id}",
    f"Passage ({len(ids)} relevant)",
    param="passage",
    format_func=lambda p: (
        f"{p} · {info[p]['words']} words" + (f" · grade {info[p]['grade']}" if relevance_source == name else "")
    ),
)
text = store.passage_text(database, passage_id)


# "Move span" on a nugget below: the next selection moves that nugget instead of adding one.
moving = store.movable_nugget(database, name, st.session_state.get("nug_move"), turn_id)


def add_selection():
    picked = ui.picked_span("span_picker")
    if not picked:
        return
    try:
        body = store.passage_text(database, picked["id"])
        span = pure.span_from_utf16(body or "", int(picked["start"]), int(picked["end"]), picked.get("text"))
        if moving:
            row = store.set_nugget_span(
                database, name, moving["id"], span.start, span.end, span.text, passage_id=picked["id"]
            )
            st.session_state.pop("nug_move", None)
            ui.set_flash(
                "success", f"Nugget {row['key']} moved: “{span.text}” ({picked['id']} {span.start}–{span.end})"
            )
        else:
            store.add_span_nugget(database, name, turn_id, picked["id"], span.start, span.end, span.text)
            ui.set_flash("success", f"Nugget added: “{span.text}” ({picked['id']} {span.start}–{span.end})")
    except (AssessError, KeyError, TypeError, ValueError) as exc:
        ui.set_flash("error", f"Not stored: {exc}")


ui.flash()
if moving:
    st.info(
        f"Moving nugget {moving['key']}: select its new span in this passage, then press N. "
        "Choose “Cancel move” below to keep it where it is."
    )
ui.span_picker(
    passage_id,
    text,
    store.passage_spans(database, name, turn_id, passage_id),
    key="span_picker",
    on_pick=add_selection,
    button=f"Move nugget {moving['key']} to the selection (N)" if moving else "Add selection as nugget (N)",
)


def add_typed():
    typed = st.session_state.get("nug_typed", "")
    try:
        nid = store.add_text_nugget(database, name, turn_id, typed, passage_id=passage_id)
        row = store.nugget(database, nid)
        where = (
            f"found at {row['start_char']}–{row['end_char']}"
            if row["start_char"] is not None
            else "not found in the passage: stored as free text"
        )
        ui.set_flash("success", f"Nugget {row['key']} added ({where})")
        st.session_state["nug_typed"] = ""
    except AssessError as exc:
        ui.set_flash("error", str(exc))


with st.expander("Type or paste a nugget instead"):
    st.text_input("Nugget text (looked up in this passage: exact, then ignoring case and spacing)", key="nug_typed")
    st.button("Add typed nugget", key="nug_add_typed", on_click=add_typed)

rows = store.turn_nuggets(database, name, turn_id)
st.subheader(f"Your nuggets for turn {turn_id} ({len(rows)})")
ui.nugget_table(rows, key="nug_table")
if rows:
    by_id = {r["id"]: r for r in rows}
    chosen = st.selectbox(
        "Edit or delete",
        list(by_id),
        key=f"nug_edit_{turn_id}",
        format_func=lambda i: f"{by_id[i]['key']} {by_id[i]['text'][:80]}",
    )

    def save_edit(nid=chosen):
        try:
            rel = st.session_state.get(f"nug_rel_{nid}")
            row = store.update_nugget(
                database,
                name,
                nid,
                text=st.session_state.get(f"nug_text_{nid}"),
                relevance=None if rel == "none" else int(rel),
            )
            kind = "span kept" if row["start_char"] is not None else "free text (not found in its passage)"
            ui.set_flash("success", f"Nugget {row['key']} saved: {kind}")
        except AssessError as exc:
            ui.set_flash("error", str(exc))

    def delete(nid=chosen):
        try:
            store.delete_nugget(database, name, nid)
            ui.set_flash("success", "Nugget deleted")
        except AssessError as exc:
            ui.set_flash("error", str(exc))

    def move(nid=chosen):
        row = by_id[nid]
        if row["passage_id"] not in ids:
            ui.set_flash(
                "error",
                f"Nugget {row['key']} is not in a passage shown here (relevant with text): edit its text instead",
            )
            return
        st.session_state["nug_move"] = nid
        st.session_state[f"nug_passage_{turn_id}"] = row["passage_id"]  # show its passage in the picker

    current = by_id[chosen]
    edit = st.columns([4, 1, 1, 1, 1])
    edit[0].text_input("Text", value=current["text"], key=f"nug_text_{chosen}")
    rel_options = ["none", "1", "2", "3", "4"]
    edit[1].selectbox(
        "Relevance",
        rel_options,
        key=f"nug_rel_{chosen}",
        index=rel_options.index(str(current["relevance"]) if current["relevance"] else "none"),
    )
    edit[2].button("Save", key="nug_save", on_click=save_edit, width="stretch")
    edit[3].button("Delete", key="nug_delete", on_click=delete, width="stretch")
    if moving:
        edit[4].button(
            "Cancel move",
            key="nug_move_cancel",
            width="stretch",
            on_click=lambda: st.session_state.pop("nug_move", None),
        )
    else:
        edit[4].button(
            "Move span",
            key="nug_move_start",
            on_click=move,
            width="stretch",
            help="Select a new span for this nugget in its passage",
        )
