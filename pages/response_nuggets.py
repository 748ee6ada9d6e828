"""Organizers: mark relevant nuggets in a system's conversation for GFRC2 (level and group memberships).

Choose the level and a group of every attribute set of the study, select words of a system response
with the mouse and press N (or give the word numbers). Positions are whitespace words over the whole
conversation U1 S1 U2 S2 …; the export is the ``score gfrc2`` input and the curves show what was marked.
"""

import pandas as pd
import streamlit as st

from assess import ui
from assess.errors import AssessError
from assess.nuggets import documents
from assess.services import contents
from assess.services import nuggets as service
from assess.ui import plots

MARK = "Mark selection as a nugget (N)"
ATTRIBUTES_HELP = "Attribute sets (JSON; target defaults to uniform, divergence to JSD nominal / RNOD ordinal)"

ui.frame_guard(organizer=True)
database = ui.db()
st.title("Response nuggets (GFRC2)")
names = service.studies(database)


def save_study():
    state = st.session_state
    try:
        limits = {"max_level": int(state["rn_max_level"]), "L": int(state["rn_L"])}
        state["rn_study"] = service.save_study(database, state["rn_new_name"], state["rn_attributes"], **limits)
        ui.set_flash("success", "Study saved")
    except AssessError as exc:
        ui.set_flash("error", f"Study not saved: {exc}")


with st.expander("Create or update a study (attribute sets, kinds, groups, targets)", expanded=not names):
    st.text_input("Study name", value=names[0] if names else "gfrc2", key="rn_new_name")
    example = documents.EXAMPLE_ATTRIBUTES_JSON
    st.text_area(ATTRIBUTES_HELP, value=example, height=220, key="rn_attributes")
    c = st.columns(3)
    c[0].number_input("Levels 1..", 1, 10, 2, key="rn_max_level")
    c[1].number_input("L (words read)", 1, 100000, 1000, key="rn_L")
    c[2].button("Save study", key="rn_save_study", on_click=ui.saving(save_study))
ui.flash()
if not names:
    st.stop()
top = st.columns(3)
study_name = top[0].selectbox("Study", names, key="rn_study")
config = service.study(database, study_name)
run = top[1].selectbox("System (run)", service.response_runs(database), key="rn_run")
conv = top[2].selectbox("Conversation", contents.conversation_ids(database), key="rn_conv")
if run is None or conv is None:
    st.info("Import system responses first.")
    st.stop()

st.markdown("**Marking with**")
c = st.columns(1 + len(config["attributes"]))
c[0].selectbox("Level", list(range(1, config["max_level"] + 1)), index=config["max_level"] - 1, key="rn_level")
for col, a in zip(c[1:], config["attributes"]):
    col.selectbox(ui.esc(f"{a['name']} ({a['kind']})"), a["groups"], key=f"rn_group_{study_name}_{a['name']}")


def mark(turn_id=None):  # a turn's span picker, or (no turn) the word numbers typed below
    state = st.session_state
    groups = {a["name"]: state[f"rn_group_{study_name}_{a['name']}"] for a in config["attributes"]}
    words = None if turn_id else (state["rn_w_start"], state["rn_w_end"])
    turn_id = turn_id or state["rn_w_turn"]
    picked = None if words else ui.picked_span(f"rn_pick_{turn_id}")
    if not (words or picked):
        return
    try:
        level = int(state["rn_level"])
        start, end = service.mark_words(database, study_name, run, turn_id, level, groups, picked=picked, words=words)
        ui.set_flash("success", f"Marked words {start}-{end} of the response to {turn_id}")
    except (AssessError, KeyError, TypeError, ValueError) as exc:
        ui.set_flash("error", f"Not marked: {exc}")


turns = service.system_conversation(database, run, conv)
offsets = documents.response_offsets(turns)
marks = service.response_marks(database, study_name, run, conv)
for t in turns:
    ui.line(f"U{t.number} ({t.turn_id}):", t.utterance or "")
    if not t.response:
        st.caption(f"S{t.number}: no response of {ui.esc(run)} to this turn.")
        continue
    before, n = offsets[t.turn_id]
    st.caption(f"S{t.number}: words {before + 1}-{before + n} of the conversation")
    on_pick, marked = (lambda turn=t.turn_id: mark(turn)), documents.turn_mark_spans(t, marks)
    key, hint = f"rn_pick_{t.turn_id}", "Select words of this response, then press N."
    ui.span_picker(f"{run}/{t.turn_id}", t.response, marked, key=key, on_pick=on_pick, button=MARK, hint=hint)

with st.expander("Mark by word numbers (inside one response)"):
    c = st.columns(4)
    c[0].selectbox("Turn", [t.turn_id for t in turns if t.response], key="rn_w_turn")
    c[1].number_input("First word", 1, 10000, 1, key="rn_w_start")
    c[2].number_input("Last word", 1, 10000, 1, key="rn_w_end")
    c[3].button("Mark", key="rn_w_mark", on_click=ui.saving(mark))

if marks:
    table = documents.mark_table(marks, offsets)
    where = {r["id"]: f"{r['turn']} words {r['words']}" for r in table}
    st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch", key="rn_marks")
    c = st.columns([3, 1])
    c[0].selectbox("Delete a mark", list(where), key="rn_delete_id", format_func=where.get)
    delete = lambda: service.delete_mark(database, st.session_state["rn_delete_id"])  # noqa: E731
    c[1].button("Delete", key="rn_delete", on_click=ui.saving(delete))

file_name, text, document = service.gfrc2_file(database, study_name)
st.download_button(
    "Download the study as a `score gfrc2` input", text, file_name=file_name, mime="application/json", key="rn_download"
)
try:
    line, curves = service.gfrc2_scores(document, run, conv)
    st.markdown(line)  # markdown of our own; its run and conversation names come escaped
    ui.figure(plots.gfrc2_curves(curves), f"gfrc2_{study_name}_{conv}")
except AssessError as exc:
    ui.error("Not scored: ", exc)
