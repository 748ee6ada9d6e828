"""The worker page's answers: consent, the next item's screen and one answer (idempotent per assignment and
item; the last one completes the assignment)."""

from __future__ import annotations

from typing import NamedTuple

from assess.crowd.entry import completion_code
from assess.crowd.rules import ItemView, StudyConfig
from assess.errors import AssessError, UnknownItem
from assess.tasks import Task
from store import db as sql
from store.crowd.batches import Assignment, assignment
from store.db import Store, now, write


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
    a = assignment(db, "WHERE a.id = :id", {"id": assignment_id})
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
