"""Webhooks: signed JSON bodies of label, job, import and assignment events, delivered after the commit, at least
once, with back-off.

:func:`deliver_once` reads each live webhook's committed events (``store.webhooks.pending``: the label history is
the outbox of label events, ``webhook_events`` (``store.outbox``) that of the others) and POSTs them in order, one at a time: a body signed ``X-Assess-Signature: sha256=<hex HMAC-SHA256 of
the body with the hook's secret>``. A 2xx answer delivers the event; anything else is retried after 1, 2, 4 ...
``backoff`` seconds (at most an hour), and given up after :data:`MAX_ATTEMPTS`; the hook's later events wait
behind a retried one, so a receiver hears of the changes in their order. Every attempt is logged. A crash between
a delivery and its log entry sends the event again: receivers de-duplicate on ``X-Assess-Delivery``.

Destinations follow the endpoint rule of the LLM calls (``assess.llm.guard.check_destination``): no link-local
or cloud metadata address, by name or by what the name resolves to, checked when the hook is added and before
every delivery (a name may resolve elsewhere later); redirects are not followed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

from assess import lazylibs
from assess.errors import AssessError
from assess.llm.guard import check_destination, redact
from store import webhooks
from store.outbox import OUTBOX_EVENTS

LABEL_EVENTS = ("label.saved", "label.undone")
EVENTS = (*LABEL_EVENTS, *OUTBOX_EVENTS)
MAX_ATTEMPTS = 8
MIN_SECRET = 16
TIMEOUT_S = 10.0


def _stamp(at: datetime) -> str:
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def add_webhook(db, url: str, event: str, secret: str, *, by: str | None, at: datetime | None = None) -> int:
    """Check and store a webhook; its id."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AssessError(f"URL: expected an http:// or https:// address with a host, found {redact(url)!r}")
    if event not in EVENTS:
        raise AssessError(f"--event: expected one of {', '.join(EVENTS)}, found {event!r}")
    if len(secret) < MIN_SECRET:
        raise AssessError(f"--secret-stdin: expected a secret of at least {MIN_SECRET} characters, found {len(secret)}")
    check_destination(url, allowed=())
    return webhooks.add(db, url.strip(), event, secret, _stamp(at or datetime.now(UTC)), by=by)


def remove_webhook(db, hook: int, *, by: str | None) -> bool:
    return webhooks.remove(db, hook, _stamp(datetime.now(UTC)), by=by)


def list_webhooks(db) -> list[dict]:
    """The live webhooks, without their secrets."""
    return [{k: v for k, v in h.items() if k != "secret"} for h in webhooks.hooks(db)]


def delivery_log(db, hook: int | None = None, limit: int = 100) -> list[dict]:
    return webhooks.log(db, hook, limit)


def body(hook: dict, event: dict) -> bytes:
    """The JSON body of one event row for its hook: a history row (label events) or an outbox row, whose
    stored payload gives the fields beside ``event``, ``id`` and ``at``."""
    if hook["event"] not in LABEL_EVENTS:
        payload = {**json.loads(event["payload"]), "event": hook["event"], "id": event["id"], "at": event["at"]}
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode("utf-8")
    payload = {
        "event": hook["event"],
        "id": event["id"],
        "task": event["label_table"],
        "source": event["source"],
        "item": event["item"],
        "value": event["new_value"],
        "previous": event["old_value"],
        "mode": event["mode"],
        "via": event["via"],
        "at": event["at"],
    }
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode("utf-8")


def signature(secret: str, data: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode("utf-8"), data, hashlib.sha256).hexdigest()


def _post(url: str, data: bytes, headers: dict) -> tuple[int | None, str | None]:
    httpx = lazylibs.httpx()

    try:
        check_destination(url, allowed=())
        answer = httpx.post(url, content=data, headers=headers, timeout=TIMEOUT_S, follow_redirects=False)
    except (httpx.HTTPError, AssessError) as exc:
        return None, redact(f"{type(exc).__name__}: {exc}")[:300]
    if 200 <= answer.status_code < 300:
        return answer.status_code, None
    return answer.status_code, redact(answer.text[:300])


def deliver_once(db, *, at: datetime | None = None, backoff: float = 1.0, limit: int = 100, post=_post) -> dict:
    """One round over every live webhook: deliver what is due, in order. Counts of delivered, retried and given-up
    events."""
    counts = {"delivered": 0, "retry": 0, "gave-up": 0}
    for hook in webhooks.hooks(db):
        for event in webhooks.pending(db, hook, limit):
            now = at or datetime.now(UTC)
            last = webhooks.last_attempt(db, hook["id"], event["id"])
            if last is not None and last["outcome"] == "retry" and last["next_at"] > _stamp(now):
                break  # not due yet: the hook's later events wait behind it
            attempt = 1 if last is None else last["attempt"] + 1
            data = body(hook, event)
            headers = {
                "Content-Type": "application/json",
                "X-Assess-Event": hook["event"],
                "X-Assess-Delivery": f"{hook['id']}-{event['id']}",
                "X-Assess-Signature": signature(hook["secret"], data),
            }
            status, error = post(hook["url"], data, headers)
            if error is None:
                outcome, next_at = "delivered", None
            elif attempt >= MAX_ATTEMPTS:
                outcome, next_at = "gave-up", None
            else:
                outcome = "retry"
                next_at = _stamp(now + timedelta(seconds=min(3600.0, backoff * 2 ** (attempt - 1))))
            webhooks.record(
                db,
                hook["id"],
                event["id"],
                attempt,
                status=status,
                error=error,
                outcome=outcome,
                at=_stamp(now),
                next_at=next_at,
            )
            counts[outcome] += 1
            if outcome == "retry":
                break
    return counts


def deliver_forever(db, *, interval: float = 1.0, backoff: float = 1.0, rounds: int | None = None) -> None:
    """:func:`deliver_once` every ``interval`` seconds (``rounds`` times, or until stopped)."""
    done = 0
    while rounds is None or done < rounds:
        deliver_once(db, backoff=backoff)
        done += 1
        time.sleep(interval)
