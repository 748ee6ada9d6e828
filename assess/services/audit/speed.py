"""How assessors work: anchoring after an LLM's label is revealed, active time per judgment, and
rubber-stamping of shown LLM labels."""

from __future__ import annotations

from typing import Any

from assess.errors import AssessError
from assess.formats.inert_csv import dicts_csv
from assess.measures import speed as speed_measures
from assess.measures.anchoring import anchoring as anchored
from assess.tasks import JudgingMode, label_kind
from store.history import assessor_history
from store.labels import CANNOT_JUDGE
from store.prejudgments import llm_values
from store.review import timed_events, timed_version

ANCHORING_TASKS = ("passage", "ptkb")


def anchoring(db, task: str = "passage", *, assessor: str | None = None) -> list[dict]:
    """Did assessors move toward the LLM after a reveal? :func:`assess.measures.anchoring.anchoring` over the
    assessors' label history of ``task`` (passage or PTKB labels; one assessor's with ``assessor``) and the
    LLM sources' labels."""
    kind = label_kind(task)
    if kind.task not in ANCHORING_TASKS:
        raise AssessError(f"anchoring is measured for {' and '.join(ANCHORING_TASKS)} labels, not {task!r}")
    history = assessor_history(db, kind.task, assessor=assessor)
    return anchored(
        history,
        llm_values(db, kind.task),
        reveal_mode=JudgingMode.REVEAL,
        cannot_judge=CANNOT_JUDGE,
        decode=kind.key.decode,
    )


# ------------------------------------------------------------------------------------------- active time


def speed(db, *, assessor: str | None = None) -> dict[str, Any]:
    """Each assessor's active time per judgment (:func:`assess.measures.speed.speed_report` over the timed
    label events of the history; one assessor's with ``assessor``) with its rules: {rules, rows, flags}."""
    report = speed_measures.speed_report(timed_events(db, assessor=assessor))
    rules = {
        "idle_limit_ms": speed_measures.IDLE_LIMIT_MS,
        "fast_median_ms": speed_measures.FAST_MEDIAN_MS,
        "fast_min_labels": speed_measures.FAST_MIN_LABELS,
    }
    return {"rules": rules, "rows": report, "flags": speed_measures.speed_flags(report)}


def speed_version(db) -> tuple:
    """Changes whenever :func:`speed` may answer differently (``store.review.timed_version``)."""

    return timed_version(db)


TIMED_LABEL_COLUMNS = ("assessor", "task", "item", "value", "mode", "active_ms", "guideline_version", "at", "length")
"""The columns of the timed label events' CSV (`audit speed --labels`, the review page's download)."""


def timed_labels_csv(db, *, assessor: str | None = None) -> str:
    """Every timed label event (one assessor's with ``assessor``) as CSV, one row each, oldest first; cells
    inert (an item or a name never starts a formula)."""

    return dicts_csv(TIMED_LABEL_COLUMNS, timed_events(db, assessor=assessor), lineterminator="\n")


def rubber_stamping(db, task: str = "passage", *, assessor: str | None = None) -> dict[str, Any]:
    """Rubber-stamping of shown LLM labels (:func:`assess.measures.speed.rubber_stamp` over the events written
    with an LLM's label on screen: 'shown' mode, and changes after a reveal) and the anchoring report with the
    active time of the changes after a reveal: {rules, rows, anchoring}."""
    kind = label_kind(task)
    if kind.task not in ANCHORING_TASKS:
        raise AssessError(f"rubber-stamping is measured for {' and '.join(ANCHORING_TASKS)} labels, not {task!r}")
    history = assessor_history(db, kind.task, assessor=assessor)
    llm = llm_values(db, kind.task)
    events = speed_measures.shown_events(history, shown_mode=JudgingMode.SHOWN, reveal_mode=JudgingMode.REVEAL)
    rows = speed_measures.rubber_stamp(events, llm, cannot_judge=CANNOT_JUDGE, decode=kind.key.decode)
    times = speed_measures.anchoring_times(history, reveal_mode=JudgingMode.REVEAL, cannot_judge=CANNOT_JUDGE)
    anchoring_rows = []
    for r in anchored(history, llm, reveal_mode=JudgingMode.REVEAL, cannot_judge=CANNOT_JUDGE, decode=kind.key.decode):
        t = times.get(r["assessor"], speed_measures.spread([]))
        anchoring_rows.append(
            {
                **r,
                "timed_changes": t["n"],
                "change_median_ms": t["median"],
                "change_q1_ms": t["q1"],
                "change_q3_ms": t["q3"],
            }
        )
    rules = {
        "min_accepted": speed_measures.STAMP_MIN_ACCEPTED,
        "median_ms_below": speed_measures.STAMP_MEDIAN_MS,
        "max_corrected_share": speed_measures.STAMP_MAX_CORRECTED,
        "source": "Potato, docs/advanced/annotation_telemetry.md (Screening flags: rubber_stamping)",
    }
    return {"rules": rules, "rows": rows, "anchoring": anchoring_rows}
