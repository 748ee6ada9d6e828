"""Nugget banks (TREC RAGTIME): write and post-edit a topic's questions and answers with their supporting
documents, and mark which answers a run's response contains, with the sentences that state them.

A bank's questions and answers are the organizers' curated set: only an organizer writes and post-edits them
(origin ``post-edit``, the history keeps the old text and names who); an assessor reads them here. A match is
the signed-in assessor's ``bank-match`` label. Banks come from ``python -m assess nuggets bank import``."""

import streamlit as st

from assess import ui
from assess.errors import AssessError
from assess.services import banks as service

ui.frame_guard()
database = ui.db()
name = ui.require_assessor("banks")

topics = service.bank_topics(database)
if not topics:
    st.info("No nugget banks yet: an organizer imports them (python -m assess nuggets bank import FILE).")
    st.stop()
topic = ui.pick(topics, "bank_topic", "Topic", param="topic")


def act(action, *args):
    try:
        ui.set_flash("success", action(database, name, *args))
    except AssessError as exc:
        ui.set_flash("error", f"Not saved: {exc}")


ui.flash()
st.dataframe(service.bank_rows(database, topic), hide_index=True, width="stretch")

edit, match = st.tabs(["Write and post-edit", "Match a response"])
with edit:
    if not ui.is_organizer():
        st.info("The bank's questions and answers are curated by the organizers: you can read them above.")
    else:
        with st.form("bank_question", clear_on_submit=True):
            st.markdown("**Question** (leave the number empty for a new one)")
            cols = st.columns([1, 4, 1, 1])
            number = cols[0].number_input("Nugget", min_value=1, step=1, value=None, key="bank_q_n")
            question = cols[1].text_input("Question", key="bank_q_text")
            aggregator = cols[2].selectbox(
                "Answers", ["OR", "AND"], key="bank_q_agg", help="OR: any one answer; AND: all"
            )
            importance = cols[3].text_input("Importance", key="bank_q_imp")
            if st.form_submit_button("Save question"):
                act(service.edit_question, topic, number, question, aggregator, importance)
                st.rerun()
        with st.form("bank_answer", clear_on_submit=True):
            st.markdown("**Answer** (leave the answer number empty for a new one)")
            cols = st.columns([1, 1, 4, 3])
            nugget = cols[0].number_input("Nugget", min_value=1, step=1, value=None, key="bank_a_n")
            answer = cols[1].number_input("Answer", min_value=1, step=1, value=None, key="bank_a_k")
            text = cols[2].text_input("Answer text", key="bank_a_text")
            refs = cols[3].text_input("Supporting documents", key="bank_a_refs", help="document ids, comma-separated")
            if st.form_submit_button("Save answer"):
                if nugget is None:
                    ui.set_flash("error", "Not saved: choose the nugget the answer belongs to.")
                else:
                    act(service.edit_answer, topic, int(nugget), answer, text, refs)
                st.rerun()

with match:
    runs = service.runs_for(database, topic)
    if not runs:
        st.info("No stored response to this topic: import the runs' answers first.")
        st.stop()
    run = ui.pick(runs, f"bank_run_{topic}", "Response of run", param="run")
    screen = service.match_screen(database, name, topic, run)
    numbers = list(range(1, len(screen["sentences"]) + 1))
    for n, sentence in zip(numbers, screen["sentences"]):
        ui.line(f"{n}.", sentence)
    # What each checkbox showed when it was first drawn (its own state keeps the person's edits after that):
    # sent with the decisions, so a match saved meanwhile in another tab is not replaced silently. After such a
    # refusal the form is drawn afresh (new widget keys) from what is stored, and saving again replaces it.
    round_key, shown_key = f"bank_round_{topic}_{run}", f"bank_shown_{topic}_{run}"
    fresh = st.session_state.get(round_key, 0)
    suffix = f"_r{fresh}" if fresh else ""
    shown = st.session_state.setdefault(shown_key, {})
    now_stored = service.shown_matches(screen)
    with st.form(f"bank_match_{topic}_{run}{suffix}"):
        decisions = {}
        for a in screen["answers"]:
            key = f"{topic}_{run}_{a['nugget']}_{a['answer']}{suffix}"
            if f"bm_c_{key}" not in st.session_state:  # drawn now from the store
                shown[(a["nugget"], a["answer"])] = now_stored[(a["nugget"], a["answer"])]
            st.markdown(
                f"**{a['nugget']}.{a['answer']}** ({a['aggregator']}) {ui.esc(a['question'])} → {ui.esc(a['text'])}"
            )
            cols = st.columns([1, 3])
            contains = cols[0].checkbox("contained", value=a["contains"], key=f"bm_c_{key}")
            cited = cols[1].multiselect(
                "stated in sentences", numbers, default=[s for s in a["sentences"] if s in numbers], key=f"bm_s_{key}"
            )
            decisions[(a["nugget"], a["answer"])] = (contains, cited)
        if st.form_submit_button("Save matches"):
            try:
                ui.set_flash("success", service.save_matches(database, name, topic, run, decisions, shown))
                shown.update(service.shown_decisions(decisions))  # what the form shows now is what is stored
            except service.StaleLabel as exc:
                ui.set_flash("error", f"Not saved: {exc}")
                st.session_state[round_key] = fresh + 1
            except AssessError as exc:
                ui.set_flash("error", f"Not saved: {exc}")
            st.rerun()
