"""The review page's panels of assessor quality: active time per judgment, and the versioned guidelines."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from assess.errors import AssessError
from assess.services import audit as service
from assess.services import guidelines
from assess.services.contents import progress_version
from assess.services.review import dashboard as review_dashboard
from assess.ui.audit import table
from assess.ui.plots import assignment_progress
from assess.ui.widgets import error, esc, figure


@st.cache_data(max_entries=16, show_spinner=False)
def _progress_tables(_database, target: str, version: tuple) -> dict:
    return review_dashboard(_database)


def progress_tables(database) -> dict:
    """The review dashboard's figures (``assess.services.review.dashboard``), kept until one of their inputs
    changes (``store.review.progress_version``): a rerun of the page (a tab, the judging mode) reads them once."""

    return _progress_tables(database, database.target, progress_version(database))


def _share(judged: int, assigned: int) -> float:
    return judged / assigned if assigned else 0.0


def dashboard(database) -> None:
    """Progress of the current assignments over time, per assessor and per topic. Tables are kept narrow (grades
    as one bar column, progress as one bar) so that the page fits a 1280 px window without a horizontal cut."""

    figures = progress_tables(database)
    assessors, topics, timeline = figures["assessors"], figures["topics"], figures["timeline"]
    judged = sum(r["judged"] for r in assessors)
    st.caption(
        "Assessors: accounts with the assessor role and names given turns without an account (organizers, "
        "adjudicators and open-mode visitors are not listed). Progress counts only each assessor's labels of the "
        "items of their assigned turns."
    )
    if not assessors:
        st.info("No assessor is listed yet: add assessor accounts and assign them turns (Users page, `assign`).")
        return
    st.markdown(
        f"**{judged} of {timeline['assigned']} assigned items judged** ({_share(judged, timeline['assigned']):.0%})"
    )
    if timeline["points"]:
        figure(assignment_progress(timeline), "assignment_progress")
    st.subheader("Assessors")
    frame = pd.DataFrame(
        {
            "assessor": [r["assessor"] for r in assessors],
            "progress": [_share(r["judged"], r["assigned"]) for r in assessors],
            "judged": [r["judged"] for r in assessors],
            "assigned": [r["assigned"] for r in assessors],
            "labels": [r["labels"] for r in assessors],
            "grades 0-4": [r["grades"] for r in assessors],
            "cannot": [r["cannot_judge"] for r in assessors],
            "active min": [r["active_minutes"] for r in assessors],
        }
    )
    st.dataframe(
        frame,
        hide_index=True,
        width="stretch",
        key="rv_assessors",
        column_config={
            "progress": st.column_config.ProgressColumn(format="percent", min_value=0, max_value=1),
            "grades 0-4": st.column_config.BarChartColumn(y_min=0),
        },
    )
    for r in assessors:  # below the table, not a column of it: a flag's words would widen it past the window
        for flag in r["flags"]:
            st.warning(f"{esc(r['assessor'])}, {esc(flag)}")
    st.subheader("Progress per topic (current assignments)")
    st.dataframe(
        pd.DataFrame(
            {
                "conversation": [r["conversation"] for r in topics],
                "progress": [_share(r["judged"], r["assigned"]) for r in topics],
                "judged": [r["judged"] for r in topics],
                "assigned": [r["assigned"] for r in topics],
            }
        ),
        hide_index=True,
        width="stretch",
        key="rv_topics",
        column_config={
            "progress": st.column_config.ProgressColumn("progress", format="percent", min_value=0, max_value=1)
        },
    )


@st.cache_data(max_entries=8, show_spinner=False)
def _speed(_database, target: str, version: tuple) -> dict:
    return service.speed(_database)


def speed_panel(database) -> None:
    """Each assessor's active time per judgment (median and quartiles by task, passage length and hour), the
    implausible-speed flags, and the timed label events as CSV. Organizers only: assessors never see it. The
    figures are kept until a label event changes them (``service.speed_version``): each run read every timed
    event (0.2 s at ten times iKAT 2024)."""
    report = _speed(database, database.target, service.speed_version(database))
    rules = report["rules"]
    st.caption(
        f"Measured in the browser: the time an item was on screen with the tab visible and focused, idle stretches "
        f"over {rules['idle_limit_ms'] // 1000} s without input cut. Flag: a task's median under "
        f"{rules['fast_median_ms']} ms over {rules['fast_min_labels']} or more labels. Hours are UTC."
    )
    if not report["rows"]:
        st.info("No timed label yet: labels typed on the keyboard pages carry their active time.")
        return
    for r in report["flags"]:
        st.warning(f"{esc(r['assessor'])} ({esc(r['group'])}): {esc(r['flag'])}")
    table(pd.DataFrame(report["rows"]), "active_time", key="rv_speed")
    st.download_button(
        "Download the timed labels (CSV)",
        lambda: service.timed_labels_csv(database).encode("utf-8"),
        file_name="timed_labels.csv",
        mime="text/csv",
        key="rv_timed_csv",
    )


def guidelines_panel(database, by: str | None) -> None:
    """Edit a task's guideline (each save is a new version), its versions, and the labels made under an older
    version than the one in force."""

    tasks = guidelines.timed_tasks()  # labels record the version in force
    task = st.selectbox("Task", tasks, key="rv_guideline_task")
    now = guidelines.current(database, task)
    st.caption(
        "No guideline yet for this task."
        if now is None
        else f"In force: version {now['version']} ({now['created_at']})."
    )
    text = st.text_area("Guideline (rubric and instructions)", value=(now or {}).get("text", ""), key=f"rv_g_{task}")
    if st.button("Save as a new version", key="rv_guideline_save"):
        try:
            version = guidelines.add_version(database, task, text, by=by)
        except AssessError as exc:
            error("Not saved: ", exc)
        else:
            st.success("Unchanged: no new version." if version is None else f"Saved as version {version}.")
    versions = guidelines.versions(database, task)
    if versions:
        st.dataframe(pd.DataFrame(versions), hide_index=True, width="stretch", key="rv_versions")
    older = guidelines.labels_under_older(database)
    st.markdown(f"**Labels made under an older guideline version** ({len(older)}, at most 1000 listed)")
    if older:
        table(pd.DataFrame(older), "labels_under_older_guidelines", key="rv_older")
