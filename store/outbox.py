"""The outbox of webhook events that are not label changes (table ``webhook_events``: store/schema/webhook_events.py).

:func:`emit` runs inside the transaction of the write it reports, so the event commits or rolls back with it;
it writes a row only while a live webhook of the event exists (a store without webhooks pays one indexed
read). The deliverer (``assess.services.webhooks``) reads committed rows after the commit.
"""

from __future__ import annotations

import json
from pathlib import Path

from store.db import Store, now, rows, run

OUTBOX_EVENTS = ("job.finished", "import.finished", "assignment.done")


def emit(db: Store, event: str, subject: str, payload: dict, *, at: str | None = None) -> None:
    """Inside the caller's write transaction: the event ``event`` about ``subject`` with ``payload``."""
    run(
        db,
        "INSERT INTO webhook_events (event, subject, payload, at) SELECT :event, :subject, :payload, :at "
        "WHERE EXISTS (SELECT 1 FROM webhooks WHERE event = :event AND removed_at IS NULL)",
        {
            "event": event,
            "subject": str(subject),
            "payload": json.dumps(payload, ensure_ascii=False, sort_keys=True, default=str),
            "at": at or now(),
        },
    )


def import_finished(db: Store, kind: str, file: str, **counts) -> None:
    """Inside an import's write transaction (its switch): its ``import.finished`` event."""
    emit(db, "import.finished", f"{kind} {file}", {"kind": kind, "file": Path(str(file)).name, **counts})


def pending(db: Store, hook: dict, limit: int) -> list[dict]:
    """The hook's event rows committed after its ``delivered_through``, oldest first."""
    return rows(
        db,
        "SELECT id, event, subject, payload, at FROM webhook_events WHERE id > :after AND event = :event "
        "ORDER BY id LIMIT :limit",
        {"after": hook["delivered_through"], "event": hook["event"], "limit": limit},
    )


def assignment_done(db: Store, assessor: str, turn_id: str, *, at: str | None = None) -> None:
    """Inside a passage label's write transaction: ``assignment.done`` when the label completes an assigned turn
    (every pooled passage of ``turn_id`` labelled by ``assessor``, 'cannot judge' included), once per assessor
    and turn. One statement; with no live webhook of the event its first condition ends it."""
    subject = f"{assessor} {turn_id}"
    run(
        db,
        "INSERT INTO webhook_events (event, subject, payload, at) SELECT 'assignment.done', :subject, :payload, :at "
        "WHERE EXISTS (SELECT 1 FROM webhooks WHERE event = 'assignment.done' AND removed_at IS NULL) "
        "AND EXISTS (SELECT 1 FROM assignments WHERE assessor = :assessor AND turn_id = :turn_id) "
        "AND NOT EXISTS (SELECT 1 FROM pool p WHERE p.turn_id = :turn_id AND NOT EXISTS (SELECT 1 FROM "
        "passage_labels l WHERE l.source = :assessor AND l.turn_id = :turn_id AND l.passage_id = p.passage_id)) "
        "AND NOT EXISTS (SELECT 1 FROM webhook_events WHERE event = 'assignment.done' AND subject = :subject)",
        {
            "subject": subject,
            "assessor": assessor,
            "turn_id": turn_id,
            "payload": json.dumps({"assessor": assessor, "turn": turn_id, "task": "passage"}, ensure_ascii=False),
            "at": at or now(),
        },
    )
