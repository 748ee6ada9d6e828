"""Personal tokens of the HTTP API: made, revoked and checked (store: ``store.tokens``).

A token is 32 random bytes (URL-safe base64) printed once; the store keeps its SHA-256 only. A salted slow
hash (as passwords get) buys nothing here: the secret has 256 bits, so its hash cannot be guessed back, and a
fast hash keeps the check of every request to one indexed read.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from assess.errors import AssessError
from assess.tasks import Role
from store import tokens

TOKEN_DAYS = 90
MAX_DAYS = 3660


class TokenRefused(AssessError):
    """A request whose token is missing, unknown, revoked or expired (HTTP 401)."""


class AccountRefused(AssessError):
    """A live token of an account that is disabled or gone now (HTTP 403)."""


@dataclass(frozen=True)
class TokenHolder:
    """The account a live token belongs to, with its role as the store has it now."""

    name: str
    role: Role


def _token_id(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_token(db, name: str, *, days: int = TOKEN_DAYS, by: str | None, at: datetime | None = None) -> str:
    """Make a token of the account ``name`` valid ``days`` days; return the secret (shown once)."""
    if not 1 <= days <= MAX_DAYS:
        raise AssessError(f"--days: expected a number of days from 1 to {MAX_DAYS}, found {days}")
    at = at or datetime.now(UTC)
    secret = secrets.token_urlsafe(32)
    tokens.add(db, _token_id(secret), name, at, at + timedelta(days=days), by=by)
    return secret


def revoke_tokens(db, name: str, *, by: str | None, at: datetime | None = None) -> int:
    """End every live token of ``name``; how many there were."""
    return tokens.revoke(db, name, at or datetime.now(UTC), by=by)


def token_holder(db, secret: str | None, *, at: datetime | None = None) -> TokenHolder:
    """Who holds the token ``secret`` now: :class:`TokenRefused` for no, an unknown, a revoked or an expired
    token; :class:`AccountRefused` when its account is disabled or gone. Read at every request."""
    if not isinstance(secret, str) or not secret or len(secret) > 200:
        raise TokenRefused("no API token: send the header 'Authorization: Bearer TOKEN' (users token NAME makes one)")
    found = tokens.live_token(db, _token_id(secret), at or datetime.now(UTC))
    if found is None:
        raise TokenRefused("unknown, revoked or expired API token")
    if found["disabled"]:
        raise AccountRefused(f"the account {found['name']!r} is disabled: nothing was done")
    return TokenHolder(found["name"], Role(found["role"]))
