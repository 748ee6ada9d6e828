"""Organizers: mark relevant nuggets in a system's conversation for GFRC2 (level and group memberships).

Choose the level and a group of every attribute set of the study, select words of a system response
with the mouse and press N (or give the word numbers). Positions are whitespace words over the whole
conversation U1 S1 U2 S2 …; the export is the ``score gfrc2`` input and the curves show what was marked.
"""

import json

import pandas as pd
import streamlit as st

from assess import nuggets as pure
from assess import ui
from assess.errors import AssessError
from assess.services import audit as scoreboard
from assess.ui import plots
from store import nuggets as store

ui.frame_guard(organizer=True)
database = ui.db()
st.title("Response nuggets (GFRC2)")
names = store.studies(database)


def save_study():
    try:
        attributes = json.loads(st.session_state["rn_attributes"])
        store.save_study(
            database,
            st.session_state["rn_new_name"],
            attributes,
            max_level=int(st.session_state["rn_max_level"]),
            L=int(st.session_state["rn_L"]),
        )
        st.session_state["rn_study"] = st.session_state["rn_new_name"].strip()
        ui.set_flash("success", "Study saved")
    except (AssessError, json.JSONDecodeError) as exc:
        ui.set_flash("error", f"Study not saved: {exc}")


with st.expander("Create or update a study (attribute sets, kinds, groups, targets)", expanded=not names):
    st.text_input("Study name", value=names[0] if names else "gfrc2", key="rn_new_name")
    st.text_area(
        "Attribute sets (JSON; target defaults to uniform, divergence to JSD nominal / RNOD ordinal)",
        value=json.dumps(pure.EXAMPLE_ATTRIBUTES, indent=1),
        height=220,
        key="rn_attributes",
    )
    c = st.columns(3)
    c[0].number_input("Levels 1..", 1, 10, 2, key="rn_max_level")
    c[1].number_input("L (words read)", 1, 100000, 1000, key="rn_L")
    c[2].button("Save study", key="rn_save_study", on_click=save_study)
ui.flash()
if not names:
    st.stop()
top = st.columns(3)
study_name = top[0].selectbox("Study", names, key="rn_study")
config = store.study(database, study_name)
run = top[1].selectbox("System (run)", store.response_runs(database), key="rn_run")
conv = top[2].selectbox("Conversation", store.conversations(database), key="rn_conv")
if run is None or conv is None:
    st.info("Import system responses first.")
    st.stop()

st.markdown("**Marking with**")
c = st.columns(1 + len(config["attributes"]))
c[0].selectbox("Level", list(range(1, config["max_level"] + 1)), index=config["max_level"] - 1, key="rn_level")
for col, a in zip(c[1:], config["attributes"]):
    col.selectbox(f"{a['name']} ({a['kind']})", a["groups"], key=f"rn_group_{study_name}_{a['name']}")


def mark(turn_id, start_word=None, end_word=None):
    groups = {a["name"]: st.session_state[f"rn_group_{study_name}_{a['name']}"] for a in config["attributes"]}
    try:
        if start_word is None:
            picked = ui.picked_span(f"rn_pick_{turn_id}")
            if not picked:
                return
            text = store.response_text(database, run, turn_id) or ""
            span = pure.span_from_utf16(text, int(picked["start"]), int(picked["end"]), picked.get("text"))
            start_word, end_word = pure.words_in_span(text, span.start, span.end)
        store.mark_response_nugget(
            database,
            study_name,
            run,
            turn_id,
            int(start_word),
            int(end_word),
            int(st.session_state["rn_level"]),
            groups,
        )
        ui.set_flash("success", f"Marked words {start_word}-{end_word} of the response to {turn_id}")
    except (AssessError, KeyError, TypeError, ValueError) as exc:
        ui.set_flash("error", f"Not marked: {exc}")


turns = store.system_conversation(database, run, conv)
offsets = pure.response_offsets(turns)
marks = store.response_marks(database, study_name, run, conv)
for t in turns:
    ui.line(f"U{t.number} ({t.turn_id}):", t.utterance or "")
    if not t.response:
        st.caption(f"S{t.number}: no response of {run} to this turn.")
        continue
    before, n = offsets[t.turn_id]
    st.caption(f"S{t.number}: words {before + 1}-{before + n} of the conversation")
    spans = pure.mark_spans(t.response, [(m["start_word"], m["end_word"]) for m in marks if m["turn_id"] == t.turn_id])
    ui.span_picker(
        f"{run}/{t.turn_id}",
        t.response,
        spans,
        key=f"rn_pick_{t.turn_id}",
        on_pick=lambda turn=t.turn_id: mark(turn),
        button="Mark selection as a nugget (N)",
        hint="Select words of this response, then press N.",
    )

with st.expander("Mark by word numbers (inside one response)"):
    c = st.columns(4)
    ids = [t.turn_id for t in turns if t.response]
    c[0].selectbox("Turn", ids, key="rn_w_turn")
    c[1].number_input("First word", 1, 10000, 1, key="rn_w_start")
    c[2].number_input("Last word", 1, 10000, 1, key="rn_w_end")
    c[3].button(
        "Mark",
        key="rn_w_mark",
        on_click=lambda: mark(
            st.session_state["rn_w_turn"], st.session_state["rn_w_start"], st.session_state["rn_w_end"]
        ),
    )

if marks:
    table = [
        {
            "id": m["id"],
            "turn": m["turn_id"],
            "words": f"{offsets[m['turn_id']][0] + m['start_word']}-{offsets[m['turn_id']][0] + m['end_word']}",
            "level": m["level"],
            **m["groups"],
            "text": m["text"],
        }
        for m in marks
    ]
    st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch", key="rn_marks")
    c = st.columns([3, 1])
    doomed = c[0].selectbox(
        "Delete a mark",
        [m["id"] for m in marks],
        key="rn_delete_id",
        format_func=lambda i: next(f"{r['turn']} words {r['words']}" for r in table if r["id"] == i),
    )
    c[1].button(
        "Delete", key="rn_delete", on_click=lambda: store.delete_mark(database, st.session_state["rn_delete_id"])
    )

document = store.gfrc2_export(database, study_name)
st.download_button(
    "Download the study as a `score gfrc2` input",
    json.dumps(document, indent=1, ensure_ascii=False),
    file_name=f"gfrc2_{study_name}.json",
    mime="application/json",
    key="rn_download",
)
try:
    view = scoreboard.gfrc2_view(document)
    row = next(r for r in view["table"] if r["run"] == run and r["conversation"] == conv)
    st.markdown(
        f"**{run} on {conv}:** GFRC2 {row['GFRC2']:.6f} · EGNP {row['EGNP']:.6f} · "
        + " · ".join(f"{k} {v:.6f}" for k, v in row.items() if k.startswith("EGF"))
    )
    ui.figure(plots.gfrc2_curves(view["by_conversation"][conv]), f"gfrc2_{study_name}_{conv}")
except AssessError as exc:
    st.error(f"Not scored: {exc}")
