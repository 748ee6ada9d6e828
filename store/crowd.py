"""Crowd studies in the store: creating a study from stored responses and nuggets, giving batches to
workers, recording answers, progress, and writing the aggregated labels as a label source.

The worker page calls only :func:`get_study`, :func:`bind`, :func:`enter`, :func:`consent`, :func:`screen`
and :func:`answer`; they read the study's own tables plus the task content (turns, responses, gold
nugget texts) and never a label table, so nothing another worker, an assessor or an LLM said can
reach a worker's browser. Known answers are read on that path only inside :func:`enter`'s count
of a batch's slots (which completed assignments QC keeps), which returns a batch id, never them.
Every answer is one transaction, idempotent per (assignment, item): a worker has at most one
assignment per batch and a regular item sits in one batch, so a regular item is answered at most
once per worker.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from assess.crowd.imported import ImportPlan
from assess.crowd.rules import (
    Answer,
    CrowdNtrRow,
    Entry,
    ItemView,
    KnownAnswer,
    StudyConfig,
    aggregate,
    agreement,
    check_study_name,
    completion_code,
    default_guideline,
    demo_config,
    demo_known,
    demo_name,
    make_batches,
    merge_guideline,
    qc_failed,
    screen_assignments,
    worker_report,
)
from assess.errors import AssessError, UnknownItem
from assess.tasks import JudgingMode, Task, label_kind
from store import db as sql
from store import labels as label_store
from store.db import Store, now, write
from store.sources import ensure_source


class Study(NamedTuple):
    name: str
    task: str
    source: str
    config: StudyConfig
    guideline: dict
    status: str


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


class Screen(NamedTuple):
    assignment: Assignment
    answered: int
    total: int
    item: ItemView | None  # None once every item is answered
    completed: bool
    code: str | None


class AnswerResult(NamedTuple):
    new: bool  # False: this (assignment, item) was answered before; nothing changed
    completed: bool
    remaining: int
    code: str | None


# ------------------------------------------------------------------------------------------- studies


def get_study(db: Store, name: str) -> Study:
    """The study ``name`` (settings and guideline); AssessError when there is none."""
    found = sql.row(
        db, "SELECT name, task, source, config, guideline, status FROM crowd_studies WHERE name = :name", {"name": name}
    )
    if found is None:
        raise UnknownItem(f"there is no crowd study {name!r}")
    return Study(
        found["name"],
        found["task"],
        found["source"],
        StudyConfig.from_json(found["config"]),
        json.loads(found["guideline"]),
        found["status"],
    )


def list_studies(db: Store) -> list[dict]:
    """Every study (name, task, status, source, creation time) and whether it is a graded NtR study."""
    return [
        {**r, "graded": StudyConfig.from_json(r.pop("config")).graded}
        for r in sql.rows(
            db, "SELECT name, task, status, source, created_at, config FROM crowd_studies ORDER BY created_at"
        )
    ]


def _candidates(db: Store, task: str, nugget_source: str, criteria: Sequence[str]) -> list[tuple]:
    """Every possible item of the stored data: (turn, run, nugget id, nugget key, criterion), in
    conversation, turn, run, nugget order."""
    responses = [
        (r["turn_id"], r["run"], r["conversation_id"])
        for r in sql.each(
            db,
            "SELECT r.turn_id AS turn_id, r.run AS run, t.conversation_id AS conversation_id FROM responses r "
            "JOIN turns t ON t.id = r.turn_id JOIN conversations c ON c.id = t.conversation_id "
            "ORDER BY c.rowid, t.position, r.run",
        )
    ]
    if task == Task.RESPONSE:
        return [(turn, run_, None, None, c, conv) for turn, run_, conv in responses for c in criteria]
    nuggets = defaultdict(list)
    for n in sql.each(
        db, "SELECT id, turn_id, key FROM nuggets WHERE source = :source ORDER BY id", {"source": nugget_source}
    ):
        nuggets[n["turn_id"]].append((n["id"], n["key"]))
    return [(turn, run_, nid, key, None, conv) for turn, run_, conv in responses for nid, key in nuggets[turn]]


def create_study(
    db: Store,
    name: str,
    config: StudyConfig,
    *,
    runs: Sequence[str] | None = None,
    turns: Sequence[str] | None = None,
    conversations: Sequence[str] | None = None,
    nugget_source: str = "gold",
    known: Iterable[KnownAnswer] = (),
    guideline: dict | None = None,
) -> dict:
    """Create a study from stored data, in one transaction: the items (NtR: each chosen run's response
    x each gold nugget of ``nugget_source`` for that turn; response quality: each response x each
    criterion), the known-answer items as hidden tests (one per batch, seeded), and the batches.

    Known-answer items are used only as tests (they are not regular items of any batch).
    """
    check_study_name(name)
    if sql.row(db, "SELECT 1 AS one FROM crowd_studies WHERE name = :name", {"name": name}):
        raise AssessError(f"a crowd study {name!r} exists already; choose another name")
    known = list(known)
    everything = _candidates(db, config.task, nugget_source, config.criteria)
    if not everything:
        what = f"responses and nuggets of source {nugget_source!r}" if config.task == "ntr" else "responses"
        raise AssessError(f"no items: the store has no {what} (import them first)")
    for label, wanted, position in (("run", runs, 1), ("turn", turns, 0), ("conversation", conversations, 5)):
        present = {c[position] for c in everything}
        missing = sorted(set(wanted or ()) - present)
        if missing:
            raise AssessError(
                f"{label} {missing[0]!r} has no stored items to judge (e.g. {', '.join(sorted(present)[:3])})"
            )
    by_key = {(c[0], c[1], c[3] if config.task == "ntr" else c[4]): c for c in everything}
    tests = {}
    for k in known:
        item = by_key.get((k.turn_id, k.run, k.key))
        where = f"line {k.line}: " if k.line else ""
        if item is None:
            raise AssessError(f"{where}known answer {k.turn_id} {k.run} {k.key}: no such item in the stored data")
        if k.value not in config.scale:
            raise AssessError(
                f"{where}known answer {k.turn_id} {k.run} {k.key}: value {k.value} is not on the "
                f"scale {list(config.scale)}"
            )
        tests[item] = k.value
    if config.qc != "none" and not tests:
        raise AssessError(
            f"the qc rule {config.qc!r} needs known-answer items (--known or --known-file), or choose --qc none"
        )
    if config.qc == "known-bad" and not any(v < config.bad_threshold for v in tests.values()):
        raise AssessError(f"the known-bad rule needs a known answer below {config.bad_threshold}")
    regular = [
        c
        for c in everything
        if c not in tests
        and (not runs or c[1] in runs)
        and (not turns or c[0] in turns)
        and (not conversations or c[5] in conversations)
    ]
    if not regular:
        raise AssessError("no items left to judge after the filters and the known-answer items")
    guide = merge_guideline(config, guideline)
    stamp = now()
    with write(db):
        sql.run(
            db,
            "INSERT INTO crowd_studies (name, task, source, config, guideline, secret, status, created_at) "
            "VALUES (:name, :task, :source, :config, :guideline, :secret, 'open', :at)",
            {
                "name": name,
                "task": config.task,
                "source": f"crowd:{name}",
                "config": config.to_json(),
                "guideline": json.dumps(guide),
                "secret": secrets.token_hex(16),
                "at": stamp,
            },
        )
        ids = {}
        for cand in [*regular, *tests]:
            ids[cand] = sql.returning(
                db,
                "INSERT INTO crowd_items (study, turn_id, run, nugget_id, criterion, known_answer) "
                "VALUES (:study, :turn, :run, :nugget, :criterion, :known) RETURNING id",
                {
                    "study": name,
                    "turn": cand[0],
                    "run": cand[1],
                    "nugget": cand[2],
                    "criterion": cand[4],
                    "known": tests.get(cand),
                },
            )["id"]
        batches = make_batches(
            [ids[x] for x in regular], [ids[x] for x in tests], batch_size=config.batch_size, seed=config.seed
        )
        for number, batch in enumerate(batches, start=1):
            bid = _add_batch(db, name, number, str(number))
            sql.run_many(
                db,
                "INSERT INTO crowd_batch_items (batch_id, position, item_id, is_test) VALUES (:batch, :pos, :item, :test)",
                [
                    {"batch": bid, "pos": pos, "item": item, "test": int(is_test)}
                    for pos, (item, is_test) in enumerate(batch)
                ],
            )
    return {
        "study": name,
        "task": config.task,
        "items": len(regular),
        "tests": len(tests),
        "batches": len(batches),
        "k": config.k,
        "assignments_needed": len(batches) * config.k,
        "source": f"crowd:{name}",
    }


def create_demo_study(db: Store, task: str = "ntr", name: str | None = None, **overrides) -> dict:
    """The demo study on the embedded demo: NtR over all 3 runs x 12 turns x gold nuggets (186 pairs,
    19 batches, 6 obvious known-answer items as tests; ``graded=True``: the same items answered
    support / partial support / no support, study demo-graded), or response quality (relevance and
    completeness of the 36 responses, 3 known-bad tests)."""
    graded = bool(overrides.get("graded"))
    return create_study(
        db,
        name or demo_name(task, graded=graded),
        demo_config(task, **overrides),
        nugget_source="gold",
        known=demo_known(task, graded=graded),
    )


def set_status(db: Store, study: str, status: str) -> None:
    """Open or close a study (a closed study gives no new batches; started ones can be finished)."""
    if status not in ("open", "closed"):
        raise AssessError(f"status is open or closed, not {status!r}")
    get_study(db, study)
    with write(db):
        sql.run(
            db,
            "UPDATE crowd_studies SET status = :status WHERE name = :study AND status != 'imported'",
            {"status": status, "study": study},
        )


def set_decision(db: Store, study: str, worker: str, decision: str | None) -> None:
    """Record the organizer's approve/reject decision (rejected workers' labels are left out)."""
    if decision not in ("approved", "rejected", None):
        raise AssessError(f"decision is approved or rejected, not {decision!r}")
    with write(db):
        changed = sql.run(
            db,
            "UPDATE crowd_workers SET decision = :decision WHERE study = :study AND worker = :worker",
            {"decision": decision, "study": study, "worker": worker},
        )
        if changed == 0:
            raise UnknownItem(f"no worker {worker!r} in study {study!r}")


# ------------------------------------------------------------------------------------------- the worker page

_ASSIGNMENT = (
    "SELECT a.id AS id, a.study AS study, a.worker AS worker, b.label AS batch, a.session AS session, "
    "a.submit_to AS submit_to, a.status AS status, a.consented_at IS NOT NULL AS consented, "
    "a.completion_code AS code FROM crowd_assignments a JOIN crowd_batches b ON b.id = a.batch_id "
)


def _assignment(db: Store, where: str, params: dict) -> Assignment | None:
    found = sql.row(db, _ASSIGNMENT + where, params)
    return None if found is None else Assignment(**{**found, "consented": bool(found["consented"])})


def _add_batch(db: Store, study: str, number: int, label: str) -> int:
    return sql.returning(
        db,
        "INSERT INTO crowd_batches (study, number, label) VALUES (:study, :number, :label) RETURNING id",
        {"study": study, "number": number, "label": label},
    )["id"]


def _current(db: Store, entry: Entry) -> Assignment | None:
    """The assignment this visit continues: the one of this platform session, else the worker's active one."""
    return _assignment(
        db,
        "WHERE a.study = :study AND a.worker = :worker AND a.session = :session ORDER BY a.id DESC LIMIT 1",
        {"study": entry.study, "worker": entry.worker, "session": entry.session},
    ) or _assignment(
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


class _Slots(NamedTuple):
    discarded: str  # SQL: the assignment ``a`` is discarded
    holds: str  # SQL: the assignment ``a`` holds a slot of its batch
    params: dict  # what both need


def _slots(study: Study) -> _Slots:
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
    return _Slots(discarded, _HOLDS_SLOT.format(discarded=discarded), params)


def holding(db: Store, study: str) -> dict[str, int]:
    """Per batch label: the assignments holding one of its k slots (active and not stale, or completed
    and kept), as :func:`enter` counts them; one read, so a consistent snapshot."""
    slots = _slots(get_study(db, study))
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
        slots = _slots(study)
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
    return _assignment(db, "WHERE a.id = :id", {"id": aid})


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def consent(db: Store, assignment_id: int) -> None:
    """Record that the worker gave consent (the first time only)."""
    with write(db):
        sql.run(
            db,
            "UPDATE crowd_assignments SET consented_at = :at WHERE id = :id AND consented_at IS NULL",
            {"at": now(), "id": assignment_id},
        )


def screen(db: Store, assignment_id: int) -> Screen:
    """What the worker sees now: their next unanswered item (in batch order) or the completion code."""
    a = _assignment(db, "WHERE a.id = :id", {"id": assignment_id})
    if a is None:
        raise UnknownItem(f"no assignment {assignment_id}")
    count = sql.row(
        db,
        "SELECT COUNT(*) AS total, COUNT(x.item_id) AS answered FROM crowd_assignments a "
        "JOIN crowd_batch_items bi ON bi.batch_id = a.batch_id "
        "LEFT JOIN crowd_answers x ON x.assignment_id = a.id AND x.item_id = bi.item_id WHERE a.id = :id",
        {"id": assignment_id},
    )
    total, answered = count["total"], count["answered"]
    if a.status == "completed":
        return Screen(a, answered, total, None, True, a.code)
    nxt = sql.row(
        db,
        "SELECT i.id AS item_id, s.task AS task, r.text AS response, n.text AS nugget, i.criterion AS criterion, "
        "i.turn_id AS turn_id FROM crowd_assignments a "
        "JOIN crowd_batch_items bi ON bi.batch_id = a.batch_id JOIN crowd_items i ON i.id = bi.item_id "
        "JOIN crowd_studies s ON s.name = i.study "
        "LEFT JOIN responses r ON r.run = i.run AND r.turn_id = i.turn_id "
        "LEFT JOIN nuggets n ON n.id = i.nugget_id "
        "WHERE a.id = :id AND NOT EXISTS (SELECT 1 FROM crowd_answers x WHERE x.assignment_id = a.id "
        "AND x.item_id = i.id) ORDER BY bi.position LIMIT 1",
        {"id": assignment_id},
    )
    if nxt is None:  # every item answered but not marked (cannot happen through answer())
        return Screen(a, answered, total, None, True, a.code)
    utterance, history = None, ()
    if nxt["task"] == Task.RESPONSE:
        turn = sql.row(
            db, "SELECT conversation_id, position, utterance FROM turns WHERE id = :id", {"id": nxt["turn_id"]}
        )
        utterance = turn["utterance"]
        history = tuple(
            (h["utterance"], h["response"])
            for h in sql.each(
                db,
                "SELECT utterance, response FROM turns WHERE conversation_id = :conversation AND position < :position "
                "ORDER BY position",
                {"conversation": turn["conversation_id"], "position": turn["position"]},
            )
        )
    view = ItemView(
        nxt["item_id"], nxt["task"], nxt["response"] or "", nxt["nugget"], nxt["criterion"], utterance, history
    )
    return Screen(a, answered, total, view, False, None)


def answer(
    db: Store,
    assignment_id: int,
    item_id: int,
    value: int,
    *,
    seconds: float | None = None,
    via: str = "page",
    graded: bool | None = None,
) -> AnswerResult:
    """Record one answer, in its own transaction; a repeated (assignment, item) changes nothing.

    The last answer of a batch completes the assignment and sets its completion code in the same
    transaction. Refuses items outside the worker's batch, values off the study's scale, answers
    before consent and, when the caller says what kind of NtR answer it gives (``graded``: True for
    support / partial support / no support, False for yes/no), an answer of the other kind (a 1
    means partial support on a graded study but yes on a yes/no one, so it is never guessed). The
    checks read before the write lock is taken, so the locked part is two statements (three for the
    last answer of a batch).
    """
    if seconds is not None and not seconds >= 0:
        seconds = None
    a = sql.row(
        db,
        "SELECT a.status AS status, a.batch_id AS batch_id, a.study AS study, a.worker AS worker, "
        "a.consented_at AS consented_at, b.label AS label, s.config AS config, s.secret AS secret, "
        "a.completion_code AS code, EXISTS (SELECT 1 FROM crowd_batch_items bi WHERE bi.batch_id = a.batch_id "
        "AND bi.item_id = :item) AS in_batch FROM crowd_assignments a JOIN crowd_batches b ON b.id = a.batch_id "
        "JOIN crowd_studies s ON s.name = a.study WHERE a.id = :id",
        {"item": item_id, "id": assignment_id},
    )
    if a is None:
        raise UnknownItem(f"no assignment {assignment_id}")
    code = a["code"]
    if a["consented_at"] is None:
        raise AssessError("consent comes first")
    if not a["in_batch"]:
        raise AssessError(f"item {item_id} is not in this worker's batch")
    config = StudyConfig.from_json(a["config"])
    if graded is not None and config.task == "ntr" and graded != config.graded:
        given = "a graded answer (support / partial support / no support)" if graded else "a yes/no answer"
        raise AssessError(f"{given} is refused: this study's answers are {config.answers_named}")
    if value not in config.allowed():
        raise AssessError(f"answer {value!r} is not on this study's scale ({config.answers_named})")
    if a["status"] == "completed":
        return AnswerResult(False, True, 0, code)
    stamp = now()
    with write(db):
        new = (
            sql.run(
                db,
                "INSERT INTO crowd_answers (assignment_id, item_id, value, seconds, via, answered_at) "
                "VALUES (:id, :item, :value, :seconds, :via, :at) ON CONFLICT DO NOTHING",
                {"id": assignment_id, "item": item_id, "value": value, "seconds": seconds, "via": via, "at": stamp},
            )
            == 1
        )
        remaining = sql.value(
            db,
            "SELECT COUNT(*) AS n FROM crowd_batch_items bi WHERE bi.batch_id = :batch AND NOT EXISTS "
            "(SELECT 1 FROM crowd_answers x WHERE x.assignment_id = :id AND x.item_id = bi.item_id)",
            {"batch": a["batch_id"], "id": assignment_id},
        )
        if remaining == 0:
            code = completion_code(a["secret"], a["study"], a["worker"], a["label"])
            sql.run(
                db,
                "UPDATE crowd_assignments SET status = 'completed', completed_at = :at, last_seen = :at, "
                "completion_code = :code WHERE id = :id AND status = 'active'",
                {"at": stamp, "code": code, "id": assignment_id},
            )
        elif new:
            sql.run(
                db, "UPDATE crowd_assignments SET last_seen = :at WHERE id = :id", {"at": stamp, "id": assignment_id}
            )
    return AnswerResult(new, remaining == 0, remaining, code if remaining == 0 else None)


# ------------------------------------------------------------------------------------------- browser binding


class Binding(NamedTuple):
    allowed: bool  # this browser may act as the worker
    secret: str | None  # the secret this browser keeps in its cookie (None when refused)
    new: bool  # the binding was made by this call


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def bind(db: Store, study: str, worker: str, presented: Iterable[str | None] = ()) -> Binding:
    """Bind ``worker`` of ``study`` to the browser that first arrives with that id, or check a later arrival (the
    worker page calls it at the worker's Start; a mere view only checks, :func:`check_binding`).

    The first arrival makes a random secret, stores its SHA-256 and returns it (the worker page puts it in a
    cookie of that browser); the insert is one statement on the (study, worker) key, so of two browsers
    arriving at once exactly one wins and the other is checked against the winner's secret. A later arrival
    is allowed when one of the ``presented`` secrets (the page's session, the browser's cookie) matches the
    stored hash, else refused. Nothing is written for a refused arrival."""
    params = {"study": study, "worker": worker}
    query = "SELECT secret_hash FROM crowd_bindings WHERE study = :study AND worker = :worker"
    stored = sql.value(db, query, params)
    if stored is None:
        get_study(db, study)  # an unknown study is one clear error, not a foreign-key failure
        secret = secrets.token_urlsafe(32)
        with write(db):
            made = sql.run(
                db,
                "INSERT INTO crowd_bindings (study, worker, secret_hash, created_at) "
                "VALUES (:study, :worker, :hash, :at) ON CONFLICT DO NOTHING",
                {**params, "hash": _digest(secret), "at": now()},
            )
        if made:
            return Binding(True, secret, True)
        stored = sql.value(db, query, params)  # another browser was faster
    return _match(stored, presented)


def _match(stored: str, presented: Iterable[str | None]) -> Binding:
    """Allowed with the first of the ``presented`` secrets whose hash is ``stored``, else refused."""
    for candidate in presented:
        if isinstance(candidate, str) and candidate and hmac.compare_digest(_digest(candidate), stored):
            return Binding(True, candidate, False)
    return Binding(False, None, False)


def check_binding(db: Store, study: str, worker: str, presented: Iterable[str | None] = ()) -> Binding:
    """Check a browser arriving as ``worker`` of ``study`` without binding anything (a view of the consent page
    binds nothing; :func:`bind` does, at the worker's explicit start). Allowed with no secret while the id is
    bound to no browser; allowed with the matching secret when one of ``presented`` is the bound browser's;
    refused when another browser holds the id. Writes nothing."""
    stored = sql.value(
        db,
        "SELECT secret_hash FROM crowd_bindings WHERE study = :study AND worker = :worker",
        {"study": study, "worker": worker},
    )
    return Binding(True, None, False) if stored is None else _match(stored, presented)


def release(db: Store, study: str, worker: str) -> None:
    """Forget the browser ``worker`` of ``study`` is bound to (the worker changed browser, or lost its cookie):
    the next browser that arrives with that id is bound afresh. Their batch and answers stay."""
    get_study(db, study)
    with write(db):
        if not sql.run(
            db,
            "DELETE FROM crowd_bindings WHERE study = :study AND worker = :worker",
            {"study": study, "worker": worker},
        ):
            raise UnknownItem(f"worker {worker!r} of study {study!r} is bound to no browser")


# ------------------------------------------------------------------------------------------- organizers


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
    return set(
        sql.column(
            db, "SELECT worker FROM crowd_workers WHERE study = :study AND decision = 'rejected'", {"study": study}
        )
    )


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
    slots = _slots(s)
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
    rows = []
    for a in given:
        it = items[a.item]
        more = extra[(a.assignment, a.item)]
        reason = verdict.get(a.assignment) or ("worker rejected" if a.worker in rejected else None)
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


def write_aggregate(db: Store, study: str) -> dict:
    """Write the study's majority labels as the label source ``crowd:<study>`` (ntr_labels, the
    graded ntr_support_labels of a graded NtR study, or response_labels; mode 'crowd', via
    'majority'), in one transaction; undecided items get no label (a label written by an earlier run
    is removed)."""
    s = get_study(db, study)
    task = s.config.label_task
    decided = [r for r in aggregated_rows(db, study) if r["label"] is not None]
    items = study_items(db, study)
    if task in (Task.NTR, Task.NTR_SUPPORT):
        by_item = {(r["turn_id"], items[r["item_id"]]["nugget_id"], r["run"]): r for r in decided}
    else:
        by_item = {(r["turn_id"], r["run"], r["criterion"]): r for r in decided}
    with write(db):
        ensure_source(
            db,
            s.source,
            "crowd",
            description=f"majority vote of crowd study {study} (qc {s.config.qc}, ties {s.config.tie})",
        )
        for item, r in by_item.items():
            extra = {"batch": r["batch"]} if task is Task.NTR else None  # ntr_support_labels keep no batch
            label_store.save_changed(
                db, task, s.source, item, r["label"], mode=JudgingMode.CROWD, via="majority", extra=extra
            )
        stale = [item for item in _labelled_items(db, task, s.source) if item not in by_item]
        for item in stale:
            label_store.delete(db, task, s.source, item)
    values = defaultdict(int)
    for r in decided:
        values[r["label"]] += 1
    return {"source": s.source, "labels": len(decided), "removed": len(stale), "values": dict(sorted(values.items()))}


def _labelled_items(db: Store, task: Task, source: str) -> list[tuple]:
    """The items ``source`` has labels of, in the order of the table's key."""
    kind = label_kind(task)
    order = ", ".join(c for c in kind.conflict_columns if c != "source")
    return [
        tuple(r.values())
        for r in sql.each(
            db,
            f"SELECT {', '.join(kind.item_columns)} FROM {kind.table} WHERE source = :source ORDER BY {order}",
            {"source": source},
        )
    ]


# ------------------------------------------------------------------------------------------- import


def nugget_ids(db: Store, source: str) -> dict[tuple[str, str], int]:
    """{(turn, nugget key): nugget id} of the nuggets of ``source``."""
    return {
        (n["turn_id"], n["key"]): n["id"]
        for n in sql.each(db, "SELECT id, turn_id, key FROM nuggets WHERE source = :source", {"source": source})
    }


def study_state(db: Store, study: str) -> dict | None:
    """The study's status and config (JSON), or None when there is no such study."""
    return sql.row(db, "SELECT status, config FROM crowd_studies WHERE name = :name", {"name": study})


def write_imported_study(
    db: Store, file: str, study: str, plan: ImportPlan, rows: Sequence[CrowdNtrRow], nuggets: dict, *, replace: bool
) -> tuple[dict, int]:
    """Write a checked crowd NtR file (``plan``: :func:`assess.crowd.imported.plan_ntr_import`) as the imported
    study ``study``, in one transaction (``replace``: the imported study of that name goes first): its items,
    batches and, for a file of worker answers, workers, assignments, answers and their majority labels; for
    an aggregated file, its labels as source ``crowd:<study>``. Returns the label summary and the number of
    items."""
    config, first, raw = plan.config, plan.first, plan.raw
    stamp = now()
    source = f"crowd:{study}"
    with write(db):
        if replace:
            sql.run(db, "DELETE FROM crowd_studies WHERE name = :name", {"name": study})
        sql.run(
            db,
            "INSERT INTO crowd_studies (name, task, source, config, guideline, secret, status, created_at) "
            "VALUES (:name, 'ntr', :source, :config, :guideline, :secret, 'imported', :at)",
            {
                "name": study,
                "source": source,
                "config": config.to_json(),
                "guideline": json.dumps({**default_guideline(config), "file": str(file)}),
                "secret": secrets.token_hex(16),
                "at": stamp,
            },
        )
        sql.run_many(
            db,
            "INSERT INTO runs (name, kind, file, imported_at) VALUES (:name, 'response', :file, :at) "
            "ON CONFLICT (name) DO NOTHING",
            [{"name": run_name, "file": str(file), "at": stamp} for run_name in sorted({r.run for r in rows})],
        )
        item_ids = {}
        for r in rows:
            pair = (r.turn_id, r.run, nuggets[(r.turn_id, r.nugget_key)])
            if pair not in item_ids:
                item_ids[pair] = sql.returning(
                    db,
                    "INSERT INTO crowd_items (study, turn_id, run, nugget_id) VALUES (:study, :turn, :run, :nugget) "
                    "RETURNING id",
                    {"study": study, "turn": pair[0], "run": pair[1], "nugget": pair[2]},
                )["id"]
        batch_ids = {}
        for number, label in enumerate(plan.batches, start=1):
            batch_ids[label] = _add_batch(db, study, number, label)
        placed: dict[str, list[int]] = defaultdict(list)
        for r in rows:
            item = item_ids[(r.turn_id, r.run, nuggets[(r.turn_id, r.nugget_key)])]
            if item not in placed[r.batch]:
                placed[r.batch].append(item)
        sql.run_many(
            db,
            "INSERT INTO crowd_batch_items (batch_id, position, item_id, is_test) VALUES (:batch, :pos, :item, 0)",
            [
                {"batch": batch_ids[b], "pos": pos, "item": item}
                for b, items in placed.items()
                for pos, item in enumerate(items)
            ],
        )
        if raw:
            sql.run_many(
                db,
                "INSERT INTO crowd_workers (study, worker, platform, first_seen) VALUES (:study, :worker, 'import', :at)",
                [{"study": study, "worker": w, "at": stamp} for w in sorted({r.worker for r in rows})],
            )
            assignment = {}
            for b, w in sorted({(r.batch, r.worker) for r in rows}):
                assignment[(b, w)] = sql.returning(
                    db,
                    "INSERT INTO crowd_assignments (study, worker, batch_id, status, started_at, last_seen, "
                    "consented_at, completed_at) VALUES (:study, :worker, :batch, 'completed', :at, :at, :at, :at) "
                    "RETURNING id",
                    {"study": study, "worker": w, "batch": batch_ids[b], "at": stamp},
                )["id"]
            sql.run_many(
                db,
                "INSERT INTO crowd_answers (assignment_id, item_id, value, via, answered_at) "
                "VALUES (:assignment, :item, :value, 'import', :at)",
                [
                    {
                        "assignment": assignment[(r.batch, r.worker)],
                        "item": item_ids[(r.turn_id, r.run, nuggets[(r.turn_id, r.nugget_key)])],
                        "value": r.value,
                        "at": stamp,
                    }
                    for r in first.values()
                ],
            )
            summary = write_aggregate(db, study)
        else:
            ensure_source(db, source, "crowd", description=f"crowd NtR labels imported from {file}")
            for r in first.values():
                label_store.save_changed(
                    db,
                    config.label_task,
                    source,
                    (r.turn_id, nuggets[(r.turn_id, r.nugget_key)], r.run),
                    r.value,
                    mode=JudgingMode.IMPORT,
                    via=None,
                    extra=None if config.graded else {"batch": r.batch},
                )
            summary = {"source": source, "labels": len(first)}
    return summary, len(item_ids)
