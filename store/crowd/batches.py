"""Which batch a worker gets: the assignments, the slot count (kept, active and discarded assignments under the
study's QC rule) and entering a study."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from assess.crowd.entry import Entry
from assess.crowd.rules import qc_failed
from assess.errors import AssessError
from store import db as sql
from store.crowd.studies import Study, get_study
from store.db import Store, now, write


class Assignment(NamedTuple):
    id: int
    study: str
    worker: str
    batch: str  # the batch label
    session: str
    submit_to: str | None
    status: str  # active | completed
    consented: bool
    code: str | None  # completion code, once completed


_ASSIGNMENT = (
    "SELECT a.id AS id, a.study AS study, a.worker AS worker, b.label AS batch, a.session AS session, "
    "a.submit_to AS submit_to, a.status AS status, a.consented_at IS NOT NULL AS consented, "
    "a.completion_code AS code FROM crowd_assignments a JOIN crowd_batches b ON b.id = a.batch_id "
)


def assignment(db: Store, where: str, params: dict) -> Assignment | None:
    """The assignment a ``WHERE`` clause over ``a`` (crowd_assignments) and ``b`` (its batch) finds, or None."""
    found = sql.row(db, _ASSIGNMENT + where, params)
    return None if found is None else Assignment(**{**found, "consented": bool(found["consented"])})


def _current(db: Store, entry: Entry) -> Assignment | None:
    """The assignment this visit continues: the one of this platform session, else the worker's active one."""
    return assignment(
        db,
        "WHERE a.study = :study AND a.worker = :worker AND a.session = :session ORDER BY a.id DESC LIMIT 1",
        {"study": entry.study, "worker": entry.worker, "session": entry.session},
    ) or assignment(
        db,
        "WHERE a.study = :study AND a.worker = :worker AND a.status = 'active'",
        {"study": entry.study, "worker": entry.worker},
    )


# Every value crowd_answers.value may hold (its CHECK): the QC rule is listed over these pairs.
_VALUES = range(-1, 5)

# A completed assignment is discarded when one of its test answers fails the study's QC rule (the
# pairs (answer, known answer) assess.crowd.rules.qc_failed refuses, listed into the SQL) or the
# organizer rejected its worker; otherwise kept.
_DISCARDED = """(EXISTS (SELECT 1 FROM crowd_batch_items t
                 JOIN crowd_answers x ON x.assignment_id = a.id AND x.item_id = t.item_id
                 JOIN crowd_items i ON i.id = t.item_id
                 WHERE t.batch_id = a.batch_id AND t.is_test = 1 AND {fails})
        OR EXISTS (SELECT 1 FROM crowd_workers w WHERE w.study = a.study AND w.worker = a.worker
                   AND w.decision = 'rejected'))"""
# An assignment holds one of its batch's k slots while it is active and not stale, or completed and kept.
_HOLDS_SLOT = "(CASE WHEN a.status = 'active' THEN a.last_seen >= :cutoff ELSE NOT {discarded} END)"


class SlotRule(NamedTuple):
    discarded: str  # SQL: the assignment ``a`` is discarded
    holds: str  # SQL: the assignment ``a`` holds a slot of its batch
    params: dict  # what both need


def slot_rule(study: Study) -> SlotRule:
    """The SQL of a study's slot count (its QC rule written out as the failing answer pairs) and its parameters."""
    config = study.config
    failing = [(v, k) for k in _VALUES for v in _VALUES if qc_failed(v, k, config.qc, config.bad_threshold)]
    params = {"cutoff": _iso(datetime.now(UTC) - timedelta(minutes=config.stale_minutes))}
    if failing:
        fails = "(x.value, i.known_answer) IN (VALUES {})".format(
            ", ".join(f"(:qc_v{n}, :qc_k{n})" for n in range(len(failing)))
        )
        for n, (v, k) in enumerate(failing):
            params[f"qc_v{n}"], params[f"qc_k{n}"] = v, k
    else:
        fails = "1 = 0"
    discarded = _DISCARDED.format(fails=fails)
    return SlotRule(discarded, _HOLDS_SLOT.format(discarded=discarded), params)


def holding(db: Store, study: str) -> dict[str, int]:
    """Per batch label: the assignments holding one of its k slots (active and not stale, or completed
    and kept), as :func:`enter` counts them; one read, so a consistent snapshot."""
    slots = slot_rule(get_study(db, study))
    return {
        r["label"]: r["holding"]
        for r in sql.each(
            db,
            f"SELECT b.label AS label, (SELECT COUNT(*) FROM crowd_assignments a WHERE a.batch_id = b.id "
            f"AND {slots.holds}) AS holding FROM crowd_batches b WHERE b.study = :study ORDER BY b.number",
            {**slots.params, "study": study},
        )
    }


def enter(db: Store, entry: Entry) -> Assignment | None:
    """The worker's batch: the assignment of this session (resumed), else their unfinished one, else a
    new batch (one transaction, so two workers never take the last slot of a batch). None: no batch
    is left for this worker.

    A new batch is one the worker never had, with fewer than k assignments holding a slot: active
    within ``stale_minutes``, or completed and kept. A completed assignment discarded by the QC rule
    (or of a worker the organizer rejected) frees its slot, so the batch goes to another worker
    until k kept workers completed it; the discarded answers stay stored. Batches whose test item
    the worker has not seen come first, then the fullest (so batches complete early), then batch
    order. The count and the insert run in one write transaction, so a batch never has more than k
    assignments holding a slot (a stale worker who comes back and finishes may still add one).
    """
    if not entry.worker:
        raise AssessError("this link has no worker id (PROLIFIC_PID, workerId or worker)")
    study = get_study(db, entry.study)
    found = _current(db, entry)
    if found:
        return found
    if study.config.platform not in ("any", entry.platform) and entry.platform != "direct":
        raise AssessError(f"this study runs on {study.config.platform}, not {entry.platform}")
    if study.status != "open":
        raise AssessError("this study is closed: it takes no new work")
    stamp = now()
    with write(db):
        slots = slot_rule(study)
        found = _current(db, entry)  # again under the write lock: another tab may have been faster
        if found:
            return found
        limit = study.config.max_batches_per_worker
        if (
            limit
            and sql.value(
                db,
                "SELECT COUNT(*) AS n FROM crowd_assignments WHERE study = :study AND worker = :worker",
                {"study": entry.study, "worker": entry.worker},
            )
            >= limit
        ):
            return None
        batch = sql.row(
            db,
            f"""
            SELECT id FROM (  -- a test pins this statement's start
                SELECT b.id AS id, b.number AS number,
                       (SELECT COUNT(*) FROM crowd_assignments a WHERE a.batch_id = b.id AND {slots.holds}) AS taken,
                       EXISTS (SELECT 1 FROM crowd_batch_items t
                               JOIN crowd_batch_items seen ON seen.item_id = t.item_id AND seen.is_test = 1
                               JOIN crowd_assignments mine ON mine.batch_id = seen.batch_id AND mine.worker = :worker
                               WHERE t.batch_id = b.id AND t.is_test = 1) AS seen_test
                FROM crowd_batches b
                WHERE b.study = :study
                  AND NOT EXISTS (SELECT 1 FROM crowd_assignments a WHERE a.batch_id = b.id AND a.worker = :worker)
            ) free
            WHERE taken < :k
            ORDER BY seen_test, taken DESC, number LIMIT 1""",
            {**slots.params, "worker": entry.worker, "study": entry.study, "k": study.config.k},
        )
        if batch is None:
            return None
        sql.run(
            db,
            "INSERT INTO crowd_workers (study, worker, platform, first_seen) "
            "VALUES (:study, :worker, :platform, :at) ON CONFLICT DO NOTHING",
            {"study": entry.study, "worker": entry.worker, "platform": entry.platform, "at": stamp},
        )
        aid = sql.returning(
            db,
            "INSERT INTO crowd_assignments (study, worker, batch_id, session, hit, submit_to, status, "
            "started_at, last_seen) VALUES (:study, :worker, :batch, :session, :hit, :submit_to, 'active', :at, :at) "
            "RETURNING id",
            {
                "study": entry.study,
                "worker": entry.worker,
                "batch": batch["id"],
                "session": entry.session,
                "hit": entry.hit,
                "submit_to": entry.submit_to,
                "at": stamp,
            },
        )["id"]
    return assignment(db, "WHERE a.id = :id", {"id": aid})


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
