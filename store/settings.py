"""The settings table: small named values of the store (judging mode, adjudication choices, versions,
each person's shortcuts), read and written by key. The one reader and writer of that table."""

from __future__ import annotations

from store.db import Store, row, run, write


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
