"""Write a gold response for a turn from its nuggets and relevant passages, and mark the nuggets it uses.

Stored in ``gold_responses`` under your name (source = assessor) with the ids of the nuggets used.
"""

import streamlit as st

from assess import ui
from assess.errors import AssessError
from assess.services import contents
from assess.services import nuggets as service

ui.frame_guard()
database = ui.db()
name = ui.require_assessor("gold-response")

top = st.columns([1, 3])
with top[0]:
    turn_id = ui.pick_turn(contents.all_turns(database), "gold_turn")
sources = service.nugget_sources(database, viewer=None if ui.is_organizer() else name)
default = [s for s in (name, "gold", "human") if s in sources] or sources[:1]
with top[1]:
    chosen_sources = st.multiselect("Nuggets from", sources, default=default, key="gold_sources")
ctx = contents.turn_context(database, turn_id)
ui.line(f"Turn {turn_id}:", ctx.utterance or "")
if ctx.resolved:
    ui.line("Resolved:", ctx.resolved, resolved=True)
with st.expander("Conversation so far and persona (PTKB)"):
    ui.conversation(ctx)
    ui.ptkb(ctx)

left, right = st.columns([3, 2], gap="large")
nuggets = service.turn_nugget_choices(database, turn_id, chosen_sources) if chosen_sources else []
by_id = {n["id"]: n for n in nuggets}
saved = service.gold_response(database, name, turn_id)
with right:
    st.subheader(f"Nuggets ({len(nuggets)})")
    for n in nuggets:
        where = f" · {n['passage_id']}" if n["passage_id"] else ""
        ui.line(f"{n['source']} {n['key']}{where}:", n["text"])
    own = service.has_grades(database, name, turn_id)
    passages = service.relevant_passages(database, turn_id, source=name if own else None, threshold=2)
    st.subheader(f"Relevant passages ({len(passages)})")
    st.caption("Graded 2 or more by you." if own else "All pooled passages with text (you have not judged this turn).")
    for p in passages:
        with st.expander(f"{ui.esc(p['passage_id'])} · {p['words']} words"):
            ui.show_passage(contents.passage_text(database, p["passage_id"]))


def save():
    try:
        service.save_gold_response(
            database,
            name,
            turn_id,
            st.session_state.get(f"gold_text_{turn_id}", ""),
            st.session_state.get(f"gold_used_{turn_id}", []),
        )
        ui.set_flash("success", "Gold response saved")
    except AssessError as exc:
        ui.set_flash("error", f"Not saved: {exc}")


with left:
    st.subheader("Your gold response")
    ui.flash()
    if saved:
        st.caption(f"Saved {ui.esc(saved['updated_at'])} · uses {len(saved['nuggets_used'])} nugget(s)")
    st.text_area("Response", value=saved["text"] if saved else "", height=260, key=f"gold_text_{turn_id}")
    used_default = [i for i in (saved["nuggets_used"] if saved else []) if i in by_id]
    st.multiselect(
        "Nuggets the response uses",
        list(by_id),
        default=used_default,
        key=f"gold_used_{turn_id}",
        format_func=lambda i: f"{by_id[i]['source']} {by_id[i]['key']} {by_id[i]['text'][:90]}",
    )
    st.button("Save gold response", key="gold_save", type="primary", on_click=ui.saving(save))
