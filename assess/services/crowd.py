"""Crowd studies beside other label sources: the store's answers and labels combined with the agreement measures."""

from __future__ import annotations

from collections.abc import Sequence

from assess.crowd import crowdkit
from assess.crowd.crowdkit import METHODS
from assess.crowd.files import CrowdNtrRow, support_word
from assess.crowd.imported import answered, plan_ntr_import
from assess.crowd.rules import UNABLE, StudyConfig, check_study_name, ntr_id
from assess.errors import AssessError
from assess.measures.agreement import agreement_report
from assess.services.audit import agreement_from_store
from store import conversations, crowd_methods, labels
from store import crowd as store_crowd


def compare(db, study: str, other: str) -> dict:
    """Accuracy and Cohen's kappa of the study's current majority labels against the NtR label source
    ``other``, as ``agreement --task ntr --a crowd:NAME --b OTHER`` gives them after ``aggregate``
    (items matched on turn, nugget text and run; undecided items left out), computed from the
    answers now, so nothing needs to be written first and nothing is written. A study imported
    with labels only (no worker answers) is compared through its stored labels."""
    s = store_crowd.get_study(db, study)
    if s.task != "ntr":
        raise AssessError("--compare works for NtR studies (agreement --task ntr)")
    if s.config.graded:  # its answers are on the 0-2 support scale, not yes/no
        raise AssessError(
            f"study {study!r} is graded (support / partial / no support): after aggregate, compare it with "
            "audit agreement --task ntr-support"
        )
    sources = labels.sources(db, "ntr")
    if other not in sources:
        raise AssessError(
            f"source {other!r} has no ntr labels; sources with ntr labels: {', '.join(sorted(sources)) or 'none'}"
        )
    if s.status == "imported" and not store_crowd.has_assignments(db, study):
        rep = agreement_from_store(db, "ntr", s.source, other, weights=None, threshold=None)
        return {"n": rep["n"], "accuracy": rep["agreement"], "kappa": rep["kappa"], "from": "stored labels"}
    theirs = store_crowd.ntr_labels_by_text(db, other)
    items = store_crowd.study_items(db, study)
    mine, other_labels = [], []
    for r in store_crowd.aggregated_rows(db, study):
        if r["label"] is None:
            continue
        for value in theirs.get((r["turn_id"], items[r["item_id"]]["nugget"], r["run"]), ()):
            mine.append(r["label"])
            other_labels.append(value)
    rep = agreement_report(mine, other_labels, scale=(0, 1), ci=False)
    return {"n": rep["n"], "accuracy": rep["agreement"], "kappa": rep["kappa"], "from": "current majority"}


def report(db, study: str, compare_with: list[str]) -> dict:
    """The study's report (:func:`store.crowd.report`) with ``compare``: :func:`compare` against each source of
    ``compare_with``; a graded study is refused there (its labels are compared with ``audit agreement``)."""
    if compare_with and store_crowd.get_study(db, study).config.graded:
        raise AssessError(
            f"--compare reads yes/no NtR labels; compare the graded study {study!r} after `crowd aggregate` "
            f"with `audit agreement --task ntr-support --source crowd:{study} --source OTHER`"
        )
    result = store_crowd.report(db, study)
    result["compare"] = {other: compare(db, study, other) for other in compare_with}
    return result


def export_rows(db, study: str, what: str, *, kept: bool = False) -> tuple:
    """The study and the rows of its export: every raw answer (``what`` raw; with ``kept`` only those kept
    after quality control) or the aggregated labels (``what`` labels)."""
    s = store_crowd.get_study(db, study)
    if what == "raw":
        rows = store_crowd.raw_rows(db, study)
        return s, [r for r in rows if r["kept"]] if kept else rows
    return s, store_crowd.aggregated_rows(db, study)


def label_lines(s, what: str, rows: list[dict]):
    """The export rows as label lines: the NtR id (or turn, run and criterion), the value (a graded study's as
    its word, never yes/no) and, for raw answers, the worker, tab-separated; test items, answers of unfinished
    batches and undecided labels are left out."""

    for r in rows:
        if what == "raw" and (r["is_test"] or r["discarded_because"] == "batch not finished"):
            continue
        value = r["value"] if what == "raw" else r["label"]
        if value is None:
            continue  # undecided
        if s.config.graded:
            value = support_word(value)  # a graded file never reads as yes/no
        head = (
            ntr_id(r["batch"], r["turn_id"], r["nugget_key"], r["run"])
            if s.task == "ntr"
            else f"{r['turn_id']}\t{r['run']}\t{r['criterion']}"
        )
        tail = f"\t{r['worker']}" if what == "raw" else ""
        yield f"{head}\t{value}{tail}\n"


def import_ntr_study(
    db, file: str, rows: Sequence[CrowdNtrRow], *, study: str = "mturk", nugget_source: str = "human"
) -> dict:
    """Import a crowd NtR file as an imported study ``study`` keeping its batches (and workers when the
    file names them), in one transaction.

    Two columns (the public CONE-RAG file): one label per (batch, turn, nugget, run), already
    aggregated, written as source ``crowd:<study>`` with its batch. Three columns (one row per
    worker answer): every answer is stored under its worker's assignment of that batch and the
    majority vote is written as ``crowd:<study>``. Re-importing replaces an imported study.
    """
    check_study_name(study)
    nuggets = store_crowd.nugget_ids(db, nugget_source)
    plan = plan_ntr_import(file, rows, set(conversations.all_turns(db)), nuggets, nugget_source)
    existing = store_crowd.study_state(db, study)
    if existing and existing["status"] != "imported":
        raise AssessError(f"crowd study {study!r} exists and was not imported; choose another --study")
    if existing and StudyConfig.from_json(existing["config"]).graded != rows[0].graded:
        was = "graded" if not rows[0].graded else "yes/no"
        raise AssessError(
            f"crowd study {study!r} was imported {was}, this file is not: its labels would sit beside the "
            "other kind's; choose another --study"
        )
    summary, items = store_crowd.write_imported_study(db, file, study, plan, rows, nuggets, replace=bool(existing))
    return {
        "study": study,
        "rows": len(rows),
        "batches": len(plan.batches),
        "items": items,
        "workers": len({r.worker for r in rows}) if plan.raw else None,
        **answered(plan),
        **{f"source_{k}": v for k, v in summary.items()},
    }


def aggregate(db, study: str, method: str = "majority") -> dict:
    """Write the study's aggregated labels as ``crowd:<study>``: our majority vote with the study's tie rule
    (:func:`store.crowd.write_aggregate`), or crowd-kit's ``method`` fitted on the answers quality control
    keeps (test items, discarded batches, unfinished batches and rejected workers left out, as the majority
    leaves them). A crowd-kit method adds its figures: ``workers`` (each worker's accuracy on the aggregated
    labels) and ``consistency`` per criterion. 'Unable to judge' (-1) answers are not given to crowd-kit;
    an item with only such answers gets -1, as under majority vote."""

    if method not in METHODS:
        raise AssessError(f"--method is one of {', '.join(METHODS)}, not {method!r}")
    if method == "majority":
        return {**store_crowd.write_aggregate(db, study), "method": method}

    kept = [r for r in store_crowd.raw_rows(db, study) if r["kept"]]
    if not kept:
        raise AssessError(f"crowd study {study!r} has no kept worker answers to aggregate with {method}")
    given = [
        crowdkit.Given(r["item_id"], r["worker"], r["value"], r["criterion"] or "match")
        for r in kept
        if r["value"] != UNABLE
    ]
    fitted = crowdkit.aggregate(given, method)
    labels = {r["item_id"]: UNABLE for r in kept} | fitted["labels"]
    summary = crowd_methods.write_labels(db, study, labels, method=method)
    summary["machines_left_out"] = sorted(store_crowd.machine_workers(db, study))  # kept: never a machine's
    return {**summary, "method": method, "workers": fitted["workers"], "consistency": fitted["consistency"]}
