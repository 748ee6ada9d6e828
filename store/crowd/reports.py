"""What organizers read of a study: its answers, items, progress, report, aggregated and raw rows."""

from __future__ import annotations

import json
from collections import defaultdict

from assess.crowd.rules import (
    Answer,
    aggregate,
    agreement,
    screen_assignments,
    worker_report,
)
from assess.tasks import NLI_SOURCE_PREFIXES
from store import db as sql
from store.crowd.batches import slot_rule
from store.crowd.studies import get_study
from store.db import Store
from store.roster import machine_names


def answers(db: Store, study: str, *, completed_only: bool = True) -> list[Answer]:
    """Every answer of the study (by default of completed assignments only: an abandoned batch counts
    for nothing, as an unsubmitted HIT), with test flags and known answers, in assignment order."""
    where = " AND a.status = 'completed'" if completed_only else ""
    return [
        Answer(**{**r, "is_test": bool(r["is_test"])})
        for r in sql.each(
            db,
            "SELECT a.worker AS worker, a.id AS assignment, b.label AS batch, x.item_id AS item, x.value AS value, "
            "x.seconds AS seconds, bi.is_test AS is_test, i.known_answer AS known, i.criterion AS criterion "
            "FROM crowd_answers x JOIN crowd_assignments a ON a.id = x.assignment_id "
            "JOIN crowd_batches b ON b.id = a.batch_id "
            "JOIN crowd_batch_items bi ON bi.batch_id = a.batch_id AND bi.item_id = x.item_id "
            f"JOIN crowd_items i ON i.id = x.item_id WHERE a.study = :study{where} ORDER BY a.id, bi.position",
            {"study": study},
        )
    ]


def _rejected(db: Store, study: str) -> set[str]:
    """The workers whose answers no aggregate counts: rejected by the organizer, and machines."""
    return set(
        sql.column(
            db, "SELECT worker FROM crowd_workers WHERE study = :study AND decision = 'rejected'", {"study": study}
        )
    ) | machine_workers(db, study)


MACHINE_PREFIXES = ("llm:", *NLI_SOURCE_PREFIXES)


def machine_workers(db: Store, study: str) -> set[str]:
    """The study's workers that are machines: named as a machine source of the roster (kind llm, e.g. an
    imported file declared with ``sources declare``) or spelled as one (``llm:…``, ``nli:…``). A crowd vote
    is people's: their answers are left out of every aggregate and its agreement, as a rejected worker's."""
    machines = machine_names(db)
    return {
        w
        for w in sql.column(db, "SELECT worker FROM crowd_workers WHERE study = :study", {"study": study})
        if w in machines or w.startswith(MACHINE_PREFIXES)
    }


def study_items(db: Store, study: str) -> dict[int, dict]:
    """Every item of the study with its content keys and (regular items) its batch label."""
    found = sql.each(
        db,
        "SELECT i.id AS item_id, i.turn_id AS turn_id, i.run AS run, i.nugget_id AS nugget_id, n.key AS nugget_key, "
        "n.text AS nugget, i.criterion AS criterion, i.known_answer AS known_answer, "
        "(SELECT b.label FROM crowd_batch_items bi JOIN crowd_batches b ON b.id = bi.batch_id "
        " WHERE bi.item_id = i.id AND bi.is_test = 0 ORDER BY b.number LIMIT 1) AS batch "
        "FROM crowd_items i LEFT JOIN nuggets n ON n.id = i.nugget_id WHERE i.study = :study ORDER BY i.id",
        {"study": study},
    )
    return {r["item_id"]: r for r in found}


def progress(db: Store, study: str) -> dict:
    """Progress per batch (workers completed, of them kept and discarded by QC or rejection, active,
    stale; k) and per worker (batches, answers, seconds, codes). A batch is complete with k kept
    assignments; ``assignments_done`` counts kept ones (at most k per batch)."""
    s = get_study(db, study)
    slots = slot_rule(s)
    batches: dict[str, dict] = {}
    names: dict[str, list[str]] = defaultdict(list)
    # One row per assignment (one with NULLs for a batch nobody took), counted here.
    for r in sql.each(
        db,
        "SELECT b.label AS batch, (SELECT COUNT(*) FROM crowd_batch_items bi WHERE bi.batch_id = b.id) AS items, "
        f"a.worker AS worker, a.status AS status, a.last_seen >= :cutoff AS fresh, {slots.discarded} AS discarded "
        "FROM crowd_batches b LEFT JOIN crowd_assignments a ON a.batch_id = b.id WHERE b.study = :study "
        "ORDER BY b.number",
        {**slots.params, "study": study},
    ):
        b = batches.get(r["batch"])
        if b is None:
            b = batches[r["batch"]] = {"batch": r["batch"], "items": r["items"]}
            b.update(dict.fromkeys(("completed", "kept", "discarded", "active", "stale"), 0), k=s.config.k)
        if r["worker"] is None:
            continue
        names[r["batch"]].append(r["worker"])
        if r["status"] == "completed":
            b["completed"] += 1
            b["discarded" if r["discarded"] else "kept"] += 1
        else:
            b["active" if r["fresh"] else "stale"] += 1
    for label, b in batches.items():
        b["workers"] = " ".join(sorted(names[label]))  # by code point, as the key (batch, worker) orders them
    batches = list(batches.values())
    codes: dict[str, list[str]] = defaultdict(list)
    for r in sql.each(
        db,
        "SELECT worker, completion_code AS code FROM crowd_assignments WHERE study = :study "
        "AND completion_code IS NOT NULL ORDER BY id",
        {"study": study},
    ):
        codes[r["worker"]].append(r["code"])
    workers = [
        {**r, "codes": " ".join(codes[r["worker"]])}
        for r in sql.each(
            db,
            "SELECT w.worker AS worker, w.platform AS platform, w.decision AS decision, "
            "(SELECT COUNT(*) FROM crowd_assignments a WHERE a.study = w.study AND a.worker = w.worker "
            " AND a.status = 'completed') AS completed, "
            "(SELECT COUNT(*) FROM crowd_assignments a WHERE a.study = w.study AND a.worker = w.worker "
            " AND a.status = 'active') AS active, "
            "(SELECT COUNT(*) FROM crowd_answers x JOIN crowd_assignments a ON a.id = x.assignment_id "
            " WHERE a.study = w.study AND a.worker = w.worker) AS answers, "
            # rounded as a decimal on both engines (PostgreSQL rounds no floating-point value to places)
            "(SELECT ROUND(CAST(SUM(x.seconds) AS NUMERIC), 1) FROM crowd_answers x "
            " JOIN crowd_assignments a ON a.id = x.assignment_id "
            " WHERE a.study = w.study AND a.worker = w.worker) AS seconds "
            "FROM crowd_workers w WHERE w.study = :study ORDER BY w.first_seen, w.worker",
            {"study": study},
        )
    ]
    done = sum(min(b["kept"], b["k"]) for b in batches)
    return {
        "study": study,
        "task": s.task,
        "graded": s.config.graded,
        "status": s.status,
        "batches": batches,
        "workers": workers,
        "assignments_done": done,
        "assignments_needed": len(batches) * s.config.k,
        "assignments_discarded": sum(b["discarded"] for b in batches),
        "complete_batches": sum(b["kept"] >= b["k"] for b in batches),
    }


def report(db: Store, study: str) -> dict:
    """Quality control for approve/reject decisions: per-worker rows, the discarded assignments, and
    Fleiss' kappa / Krippendorff's alpha over the raw labels (all completed, and kept after QC)."""
    s = get_study(db, study)
    given = answers(db, study)
    rejected = _rejected(db, study)
    decisions = {
        r["worker"]: r["decision"]
        for r in sql.each(db, "SELECT worker, decision FROM crowd_workers WHERE study = :study", {"study": study})
    }
    verdict = screen_assignments(given, s.config.qc, s.config.bad_threshold)
    votes = aggregate(given, s.config, rejected=rejected)
    return {
        "study": study,
        "qc": s.config.qc,
        "tie": s.config.tie,
        "workers": worker_report(given, s.config, decisions=decisions, rejected=rejected),
        "discarded": {aid: why for aid, why in verdict.items() if why},
        "agreement_all": agreement(given, s.config, kept_only=False),
        "agreement_kept": agreement(given, s.config, kept_only=True, rejected=rejected),
        "items_labelled": len(votes),
        "items_decided": sum(v.label is not None for v in votes.values()),
        "ties": sum(v.tie for v in votes.values()),
    }


def aggregated_rows(db: Store, study: str) -> list[dict]:
    """The aggregated label of every regular item with answers: votes, mean, tie, label (None: undecided)."""
    s = get_study(db, study)
    votes = aggregate(answers(db, study), s.config, rejected=_rejected(db, study))
    items = study_items(db, study)
    rows = []
    for item, vote in votes.items():
        it = items[item]
        rows.append(
            {
                "item_id": item,
                "batch": it["batch"],
                "turn_id": it["turn_id"],
                "run": it["run"],
                "nugget_key": it["nugget_key"],
                "criterion": it["criterion"],
                "n": vote.n,
                "counts": json.dumps(vote.counts),
                "mean": vote.mean,
                "tie": vote.tie,
                "label": vote.label,
            }
        )
    return rows


def has_assignments(db: Store, study: str) -> bool:
    """Did any worker take a batch of the study (an imported study with labels only has none)?"""
    return (
        sql.row(db, "SELECT 1 AS one FROM crowd_assignments WHERE study = :study LIMIT 1", {"study": study}) is not None
    )


def ntr_labels_by_text(db: Store, source: str) -> dict[tuple[str, str, str], list[int]]:
    """The NtR labels of ``source`` keyed by (turn, nugget text, run), as crowd studies match them."""
    theirs = defaultdict(list)
    for r in sql.each(
        db,
        "SELECT l.turn_id AS turn_id, n.text AS text, l.run AS run, l.match AS match FROM ntr_labels l "
        "JOIN nuggets n ON n.id = l.nugget_id WHERE l.source = :source",
        {"source": source},
    ):
        theirs[(r["turn_id"], r["text"], r["run"])].append(r["match"])
    return theirs


def raw_rows(db: Store, study: str) -> list[dict]:
    """Every answer (completed and unfinished assignments), with worker, batch, test flag, known answer,
    time, and whether QC keeps it."""
    s = get_study(db, study)
    items = study_items(db, study)
    given = answers(db, study, completed_only=False)
    verdict = screen_assignments(given, s.config.qc, s.config.bad_threshold)
    extra = {
        (r["assignment"], r["item"]): r
        for r in sql.each(
            db,
            "SELECT a.id AS assignment, x.item_id AS item, w.platform AS platform, a.status AS status, "
            "x.answered_at AS answered_at, bi.position AS position FROM crowd_answers x "
            "JOIN crowd_assignments a ON a.id = x.assignment_id JOIN crowd_workers w ON w.study = a.study "
            "AND w.worker = a.worker JOIN crowd_batch_items bi ON bi.batch_id = a.batch_id AND bi.item_id = x.item_id "
            "WHERE a.study = :study",
            {"study": study},
        )
    }
    rejected = _rejected(db, study)
    machines = machine_workers(db, study)
    rows = []
    for a in given:
        it = items[a.item]
        more = extra[(a.assignment, a.item)]
        reason = verdict.get(a.assignment) or (
            ("machine annotator" if a.worker in machines else "worker rejected") if a.worker in rejected else None
        )
        if more["status"] != "completed":
            reason = "batch not finished"
        rows.append(
            {
                "study": study,
                "batch": a.batch,
                "worker": a.worker,
                "platform": more["platform"],
                "assignment": a.assignment,
                "position": more["position"],
                "item_id": a.item,
                "is_test": a.is_test,
                "known_answer": a.known,
                "turn_id": it["turn_id"],
                "run": it["run"],
                "nugget_key": it["nugget_key"],
                "criterion": it["criterion"],
                "value": a.value,
                "seconds": a.seconds,
                "answered_at": more["answered_at"],
                "kept": reason is None and not a.is_test,
                "discarded_because": reason,
            }
        )
    return rows
