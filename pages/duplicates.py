"""Duplicate nuggets of a turn: the suggester proposes pairs, the assessor confirms or rejects them.

Keys on the current pair: S same information, A "A covers B", B "B covers A", D not duplicates.
The de-duplicated set keeps every nugget no other kept nugget entails (CONE-RAG Section 4.3); it is
updated at once and exported with ``python -m assess export nuggets --source S --dedup``.

An assessor decides pairs of their own set only; another set (``gold``, an imported or adjudicated one) is the
organizers' curated set, shown read-only (the store refuses such a write too: ``store.rights``, ``curation``).
"""

import streamlit as st

from assess import ui
from assess.errors import AssessError
from assess.llm.entailment import nli_model_from_env
from assess.nuggets.dedup import DECISION_KEYS, DECISIONS, decision_label, default_threshold, judge_name, pair_table
from assess.services import nuggets as service

ui.frame_guard()
database = ui.db()
name = ui.require_assessor("duplicates")

sources = service.nugget_sources(database, viewer=None if ui.is_organizer() else name)
if not sources:
    st.info("No nuggets yet: extract some on the Passage nuggets page or import a nugget file.")
    st.stop()
default = next((s for s in (name, "gold", "human") if s in sources), sources[0])
top = st.columns([2, 2, 1])
source = top[0].selectbox("Nugget set", sources, index=sources.index(default), key="dup_source")
turns = service.nugget_turns(database, source)
with top[1]:
    turn_id = ui.pick_turn(turns, f"dup_turn_{source}")
nuggets = service.turn_nuggets(database, source, turn_id)
by_id = {n["id"]: n for n in nuggets}
judge = ui.entailment_judge(nli_model_from_env())
editable = source == name or ui.is_organizer()
threshold = top[2].number_input("Suggest at", 0.0, 1.0, default_threshold(judge), 0.05, key="dup_threshold")


def suggest():
    try:
        found = service.suggest_turn_duplicates(database, source, turn_id, judge, threshold=threshold, by=name)
        ui.set_flash("success", f"{found} pair(s) suggested by {judge_name(judge)}")
    except AssessError as exc:
        ui.set_flash("error", f"No suggestions: {exc}")


def decide(a, b, decision):
    try:
        service.decide_duplicate(database, a, b, decision, by=name)
    except AssessError as exc:
        ui.set_flash("error", str(exc))


counts = service.dedup_counts(database, source, turn_id)
st.caption(
    f"{counts['nuggets']} nuggets · {counts['kept']} kept in the de-duplicated set · "
    f"{counts['unknown']} unknown · {counts['open_pairs']} open pair(s) · suggester: {ui.esc(judge_name(judge))}"
)
if not editable:
    st.info(
        f"The nugget set {ui.esc(source)} is curated by the organizers: you can read its pairs here, "
        "and only an organizer decides them."
    )
st.button("Suggest duplicate pairs", key="dup_suggest", on_click=ui.saving(suggest), disabled=not editable)
ui.flash()

pairs = service.duplicate_pairs(database, source, turn_id)
open_pairs = [p for p in pairs if p["decision"] is None]
if open_pairs:
    p = open_pairs[0]
    st.subheader(f"Pair 1 of {len(open_pairs)} open")
    cols = st.columns(2)
    ui.line(f"A {p['key_a']}:", p["text_a"], container=cols[0])
    ui.line(f"B {p['key_b']}:", p["text_b"], container=cols[1])
    st.caption(f"{ui.esc(p['suggested_by'])}: P(A ⊨ B) = {p['score_ab']:.2f}, P(B ⊨ A) = {p['score_ba']:.2f}")
    for col, (decision, key) in zip(st.columns(4) if editable else (), DECISION_KEYS.items()):
        col.button(
            f"{key} · {DECISIONS[decision]}",
            key=f"dup_{decision}",
            shortcut=ui.keys(key),
            on_click=ui.saving(decide),
            args=(p["a"], p["b"], decision),
            width="stretch",
        )
elif pairs:
    st.success("Every suggested pair of this turn is decided.")


def decide_manual():  # read at click time, not render time
    chosen = st.session_state[f"dup_manual_decision_{turn_id}"]
    a, b = st.session_state[f"dup_manual_a_{turn_id}"], st.session_state[f"dup_manual_b_{turn_id}"]
    decide(a, b, None if chosen == "open" else chosen)


if editable:
    with st.expander("Mark or change a pair yourself"):
        if len(nuggets) >= 2:
            ids = list(by_id)
            label = lambda i: f"{by_id[i]['key']} {by_id[i]['text'][:70]}"  # noqa: E731
            c = st.columns([3, 3, 2, 1])
            c[0].selectbox("A", ids, format_func=label, key=f"dup_manual_a_{turn_id}")
            c[1].selectbox("B", ids, index=1, format_func=label, key=f"dup_manual_b_{turn_id}")
            options = [*DECISIONS, "open"]
            c[2].selectbox("Decision", options, key=f"dup_manual_decision_{turn_id}", format_func=decision_label)
            c[3].button("Save", key="dup_manual_save", on_click=ui.saving(decide_manual))

if pairs:
    st.dataframe(pair_table(pairs), hide_index=True, key="dup_pairs")
st.subheader("Nuggets of the turn")
ui.nugget_table(nuggets, key="dup_nuggets")
for col, (what, (label, file_name, write)) in zip(st.columns(2), service.nugget_files(database, source).items()):
    col.download_button(label, write, file_name=file_name, mime="application/json", key=f"dup_dl_{what}")
