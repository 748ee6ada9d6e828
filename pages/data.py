"""Organizers: import files, assign turns to assessors, export labels."""

import streamlit as st

from assess import ui
from assess.errors import AssessError
from assess.services import contents, loading

ui.frame_guard(organizer=True)
database = ui.db()
st.title("Import & export")

st.subheader("Import a file")
kind = st.selectbox("What the file holds", list(loading.IMPORT_KINDS), key="import_kind")
upload = st.file_uploader("File", key="import_file")
c1, c2 = st.columns(2)
source = c1.text_input(
    "Label source (qrels, PTKB qrels, nuggets, NtR labels)",
    value=loading.import_kind(kind).default_source or "",
    key="import_source",
)
depth = c2.number_input("Run: pool depth per turn (0: no pooling)", 0, 1000, 10, key="import_depth")
run_name = c1.text_input("Responses with citations: run name (iKAT topics: topics)", key="import_run")
replace = c2.checkbox("Responses with citations: replace stored responses that differ", key="import_replace")
# Topics of one's own end a demo's open mode: the person makes their own organizer account first.
ready = kind not in loading.TOPIC_KINDS or ui.first_organizer(database, "Importing topics of your own")
demo = None
if ready and loading.demo_in_the_way(database, kind):  # no silent mix of the demo's items and one's own
    demo = st.radio(
        "This store holds the embedded demo. Your topics and the demo's would share the queues: what becomes of it?",
        ["drop", "keep", "new"],
        index=None,
        key="import_demo",
        format_func={
            "drop": "Drop the demo (its topics, passages, runs, labels and everything on them) and import",
            "keep": "Keep the demo beside my topics",
            "new": "Use a new store instead",
        }.get,
    )
    if demo == "new":
        st.info(
            "Start the app on a new store (ASSESS_DB=data/new.db streamlit run app.py) or import there from "
            "the command line (python -m assess import topics FILE --db data/new.db); this store stays as it is."
        )
    ready = demo in ("drop", "keep")
if st.button("Import", disabled=upload is None or not ready, type="primary") and (file_name := ui.upload_name(upload)):
    try:
        summary = loading.load_upload(
            database,
            kind,
            file_name,
            upload.getvalue(),
            source=source or None,
            depth=int(depth),
            by=ui.actor(),
            demo=demo or "ask",
            **(
                {"run": run_name.strip() or None, "replace": replace}
                if "run" in loading.import_kind(kind).options
                else {}
            ),
        )
        st.success(f"Imported {ui.esc(file_name)}: " + ui.esc(", ".join(f"{k} {v}" for k, v in summary.items())))
    except AssessError as exc:
        ui.error("Nothing was imported. ", exc)

st.subheader("Assign turns to an assessor")
convs = contents.conversations(database)
c1, c2, c3 = st.columns(3)
who = c1.text_input("Assessor name", key="assign_who")
chosen = c2.multiselect("Conversations (all their pooled turns)", [c["id"] for c in convs], key="assign_convs")
single = c3.multiselect("and/or single turns", contents.pooled_turns(database), key="assign_turns")
if st.button("Assign", disabled=not (who and (chosen or single))):
    try:
        added = contents.assign_turns(database, who, chosen, single, by=ui.actor())
        st.success(f"Assigned {added} new turns to {ui.esc(who)}")
    except AssessError as exc:
        ui.error("", exc)

st.subheader("Export labels")
task = st.radio(
    "Labels",
    ["passage", "ptkb"],
    horizontal=True,
    key="export_task",
    format_func={"passage": "Passage qrels", "ptkb": "PTKB qrels"}.get,
)
names = contents.task_sources(database, task)
if names:
    pick = st.selectbox("Source", names, key="export_source")
    st.download_button(
        "Download TREC qrels",
        lambda: contents.qrels_text(database, pick, task),  # written on the click: not on every run of the page
        file_name=f"{pick.replace(':', '_')}.{task}.qrels",
        mime="text/plain",
    )
else:
    st.info("No labels of this kind yet.")
