"""The settings table: small named values of the store (judging mode, adjudication choices, versions,
each person's shortcuts), read and written by key. The one reader and writer of that table."""

from __future__ import annotations

import secrets

from store.db import Store, row, run, write

SECRET_PREFIX = "secret:"
"""Settings whose key starts so hold a store's own secrets: read only by :func:`store_secret`, never shown,
printed or written to an export (``copy`` to another store takes them along, so the copy keeps its blinding)."""


def get_setting(db: Store, key: str, default: str) -> str:
    """The value stored under ``key``, or ``default`` when there is none."""
    found = row(db, "SELECT value FROM settings WHERE key = :key", {"key": key})
    return default if found is None else found["value"]


def set_setting(db: Store, key: str, value: str) -> None:
    """Store ``value`` under ``key`` (in the caller's transaction, or its own)."""
    with write(db):
        run(
            db,
            "INSERT INTO settings (key, value) VALUES (:key, :value) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            {"key": key, "value": value},
        )


def store_secret(db: Store, name: str) -> bytes:
    """The store's secret ``name`` (32 random bytes, ``secrets.token_bytes``), created on first use. Concurrent
    first uses agree: the first insert wins and every caller reads what was stored."""
    key = SECRET_PREFIX + name
    found = row(db, "SELECT value FROM settings WHERE key = :key", {"key": key})
    if found is None:
        with write(db):
            run(
                db,
                "INSERT INTO settings (key, value) VALUES (:key, :value) ON CONFLICT(key) DO NOTHING",
                {"key": key, "value": secrets.token_bytes(32).hex()},
            )
            found = row(db, "SELECT value FROM settings WHERE key = :key", {"key": key})
    return bytes.fromhex(found["value"])
