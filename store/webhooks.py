"""Webhooks and their delivery log (tables ``webhooks``, ``webhook_deliveries``: store/schema/http_api.py).

The outbox of label events is ``label_history`` itself: its rows are written by the label tables' triggers in
the label's own transaction, so only committed changes are ever read here, and a delivery (an HTTP request, made
by ``assess.services.webhooks``) never runs inside a write's transaction.
"""

from __future__ import annotations

from store import outbox
from store.db import Store, returning, row, rows, run, value, write
from store.rights import check_writer
from store.schema import HISTORY_TABLES

# label_history.label_table holds the history kind of a label table ('passage', 'ptkb', ...), never an organizer
# action's ('account', 'assignment', ...)
LABEL_KINDS = tuple(sorted({kind for kind, *_ in HISTORY_TABLES.values()}))
_TABLES = ", ".join(f":t{i}" for i in range(len(LABEL_KINDS)))
_TABLE_PARAMS = {f"t{i}": t for i, t in enumerate(LABEL_KINDS)}
_WHICH = {"label.saved": "h.via IS DISTINCT FROM 'undo'", "label.undone": "h.via = 'undo'"}


def add(db: Store, url: str, event: str, secret: str, at: str, *, by: str | None) -> int:
    """A new webhook of ``event``; it hears of the changes committed from now on. Returns its id."""
    with write(db):
        check_writer(db, by, action="account")
        table = "label_history" if event in _WHICH else "webhook_events"  # the event's outbox
        last = value(db, f"SELECT COALESCE(MAX(id), 0) AS last FROM {table}") or 0
        made = returning(
            db,
            "INSERT INTO webhooks (url, event, secret, delivered_through, created_by, created_at) "
            "VALUES (:url, :event, :secret, :last, :by, :at) RETURNING id",
            {"url": url, "event": event, "secret": secret, "last": last, "by": by, "at": at},
        )
    return int(made["id"])


def remove(db: Store, hook: int, at: str, *, by: str | None) -> bool:
    """Stop a webhook (its log stays); False when there is no such live webhook."""
    with write(db):
        check_writer(db, by, action="account")
        return bool(
            run(
                db, "UPDATE webhooks SET removed_at = :at WHERE id = :id AND removed_at IS NULL", {"id": hook, "at": at}
            )
        )


def hooks(db: Store, *, live: bool = True) -> list[dict]:
    """The webhooks (with their secret: for the deliverer only), oldest first."""
    where = "WHERE removed_at IS NULL " if live else ""
    return rows(
        db,
        f"SELECT id, url, event, secret, delivered_through, created_by, created_at, removed_at FROM webhooks {where}"
        "ORDER BY id",
    )


def pending(db: Store, hook: dict, limit: int) -> list[dict]:
    """The label changes of the hook's event committed after ``delivered_through``, oldest first (the other
    events: :func:`store.outbox.pending`)."""
    if hook["event"] not in _WHICH:
        return outbox.pending(db, hook, limit)
    return rows(
        db,
        "SELECT h.id, h.label_table, h.source, h.item, h.old_value, h.new_value, h.mode, h.via, h.at "
        f"FROM label_history h WHERE h.id > :after AND h.label_table IN ({_TABLES}) AND {_WHICH[hook['event']]} "
        "ORDER BY h.id LIMIT :limit",
        {"after": hook["delivered_through"], "limit": limit, **_TABLE_PARAMS},
    )


def last_attempt(db: Store, hook: int, history_id: int) -> dict | None:
    """The latest attempt at delivering one event to one webhook, or None."""
    return row(
        db,
        "SELECT attempt, outcome, next_at FROM webhook_deliveries WHERE hook = :hook AND history_id = :history_id "
        "ORDER BY attempt DESC LIMIT 1",
        {"hook": hook, "history_id": history_id},
    )


def record(
    db: Store, hook: int, history_id: int, attempt: int, *, status, error, outcome: str, at: str, next_at=None
) -> None:
    """Log one attempt; a delivered or given-up event moves the hook's ``delivered_through`` past it."""
    with write(db):
        run(
            db,
            "INSERT INTO webhook_deliveries (hook, history_id, attempt, status, error, at, outcome, next_at) "
            "VALUES (:hook, :history_id, :attempt, :status, :error, :at, :outcome, :next_at)",
            {
                "hook": hook,
                "history_id": history_id,
                "attempt": attempt,
                "status": status,
                "error": error,
                "at": at,
                "outcome": outcome,
                "next_at": next_at,
            },
        )
        if outcome != "retry":
            run(
                db,
                "UPDATE webhooks SET delivered_through = :history_id WHERE id = :hook AND delivered_through < :history_id",
                {"hook": hook, "history_id": history_id},
            )


def log(db: Store, hook: int | None = None, limit: int = 100) -> list[dict]:
    """The latest delivery attempts (of one webhook), newest first."""
    where = "WHERE hook = :hook " if hook is not None else ""
    return rows(
        db,
        "SELECT hook, history_id, attempt, status, error, at, outcome, next_at FROM webhook_deliveries "
        f"{where}ORDER BY at DESC, attempt DESC LIMIT :limit",
        {"hook": hook, "limit": limit},
    )
