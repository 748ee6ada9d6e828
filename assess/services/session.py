"""The store as a whole, for a front end that names it by location (the CLI's ``--db``): opening it, showing where
it is, what its database refused, granting the app's role on it and copying it into another store. The front ends
reach the store only through services, so this is where a command gets its handle."""

from __future__ import annotations

from pathlib import Path

from assess.errors import AssessError
from assess.text import look_alike
from store import Store, open_db
from store.accounts import accounts
from store.db import database_reason, display, exists, is_database_error, is_postgres
from store.roles import grant_app_role
from store.transfer import copy_store


def location(target: str | Path) -> str:
    """Where the store lives, as it may be shown (:func:`store.db.display`: no password)."""
    return display(target)


def open_store(target: str | Path, *, must_exist: bool = True) -> Store:
    """The store at ``target``; with ``must_exist``, a missing one is refused (AssessError naming it and the
    ``init`` command that creates it) instead of being created empty."""
    if must_exist and not exists(target):
        where = display(target)
        raise AssessError(f"{where}: no such database (create it with: python -m assess init --db {where})")
    return open_db(target)


def actor_look_alike(db: Store, by: str) -> str | None:
    """The account that ``by`` (who acts, for the history: ``--by``) may be mistaken for without being it (the
    same letters up to case and look-alikes, :func:`assess.text.look_alike`), or None: a history row must not
    read as another account's action."""
    return look_alike(by, [a["name"] for a in accounts(db)])


def store_exists(target: str | Path) -> bool:
    """Whether a store is there already (:func:`store.db.exists`)."""
    return exists(target)


def has_roles(target: str | Path) -> bool:
    """Whether the store's database has roles to grant (PostgreSQL; a SQLite file has none)."""
    return is_postgres(target)


def grant_role(db: Store, role: str) -> list[str]:
    """Let ``role`` read and write rows of the store, not change its schema; warnings, one line each
    (:func:`store.roles.grant_app_role`)."""
    return grant_app_role(db, role)


def database_error(exc: BaseException) -> str | None:
    """The database's one-line reason when ``exc`` is an error of the database itself, else None."""
    return database_reason(exc) if is_database_error(exc) else None


def copy(source: str | Path, target: str | Path) -> dict[str, int]:
    """Copy every row of the store at ``source`` into the empty store at ``target``: the rows copied per table.
    A row or statement either database refuses is an AssessError naming both stores; nothing is copied then."""
    try:
        with open_db(source) as from_db, open_db(target) as to_db:
            return copy_store(from_db, to_db)
    except AssessError:
        raise
    except Exception as exc:
        reason = database_error(exc)
        if reason is None:
            raise
        raise AssessError(f"{display(source)} -> {display(target)}: {reason}; nothing was copied") from None
