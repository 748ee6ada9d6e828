"""Personal tokens of the HTTP API (table ``api_tokens``, store/schema/http_api.py).

The store keeps a token's SHA-256 only (made and checked by ``assess.services.tokens``). A token names an
account, never a role: :func:`live_token` reads the account's current role and state with the token, so a
role changed or an account disabled after the token was made takes effect at the next request.
"""

from __future__ import annotations

from datetime import datetime

from store.accounts import AccountError
from store.db import Store, row, run, write
from store.history import record_action
from store.rights import check_writer


def _stamp(at: datetime) -> str:
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def add(db: Store, token_id: str, name: str, at: datetime, expires: datetime, *, by: str | None) -> None:
    """Store a new token of the account ``name`` (recorded in the history as ``by``'s account action)."""
    with write(db):
        check_writer(db, by, action="account")
        if row(db, "SELECT 1 AS found FROM accounts WHERE name = :name", {"name": name}) is None:
            raise AccountError(f"no account named {name!r} (python -m assess users list shows them)")
        run(
            db,
            "INSERT INTO api_tokens (id, name, created_by, created_at, expires_at) "
            "VALUES (:id, :name, :by, :at, :expires)",
            {"id": token_id, "name": name, "by": by, "at": _stamp(at), "expires": _stamp(expires)},
        )
        record_action(
            db, by, "account", name, None, f"api token until {_stamp(expires)}", via="token", writer_checked=True
        )


def revoke(db: Store, name: str, at: datetime, *, by: str | None) -> int:
    """End every live token of ``name``; how many were live."""
    with write(db):
        check_writer(db, by, action="account")
        if row(db, "SELECT 1 AS found FROM accounts WHERE name = :name", {"name": name}) is None:
            raise AccountError(f"no account named {name!r} (python -m assess users list shows them)")
        ended = run(
            db,
            "UPDATE api_tokens SET revoked_at = :at, revoked_by = :by "
            "WHERE name = :name AND revoked_at IS NULL AND expires_at > :at",
            {"name": name, "at": _stamp(at), "by": by},
        )
        if ended:
            record_action(
                db, by, "account", name, None, f"api tokens revoked: {ended}", via="token", writer_checked=True
            )
    return ended


def live_token(db: Store, token_id: str, at: datetime) -> dict | None:
    """The token ``token_id`` when neither revoked nor expired, with its account's current ``role`` and
    ``disabled`` (1 for a disabled or deleted account)."""
    return row(
        db,
        "SELECT t.name, t.expires_at, a.role, COALESCE(a.disabled, 1) AS disabled "
        "FROM api_tokens t LEFT JOIN accounts a ON a.name = t.name "
        "WHERE t.id = :id AND t.revoked_at IS NULL AND t.expires_at > :at",
        {"id": token_id, "at": _stamp(at)},
    )
