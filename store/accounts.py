"""Accounts, roles, failed sign-ins and the history of organizers' actions.

An account is a person: its name is also their label source (kind 'assessor'), so whatever they judge
is stored under their own name. The store keeps only an Argon2 hash of a password (made and checked by
``assess.services.accounts``) and a ``link_version`` that invalidates older sign-in links; no secret in
clear. Every change of an account, and every organizer action that names its author (``by``), is one
row of ``label_history`` whose ``label_table`` is the kind of action (``assess.tasks.ORGANIZER_ACTIONS``)
and whose ``source`` is the person who acted.

Whether the app signs people in by account or lets anyone type a name (open mode) is
:func:`open_sign_in`: $ASSESS_OPEN when set, otherwise open only on a store that holds nothing but the
embedded demo.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from assess.errors import AssessError
from assess.tasks import ORGANIZER_ACTIONS, Role
from store.db import Store, now, row, rows, run, value, write

UNKNOWN_ACTOR = "(unknown)"
"""The ``source`` of an organizer-action history row whose caller named nobody (a library call)."""

DEMO_COLLECTION = "demo"


class AccountError(AssessError):
    """An account that does not exist, exists already, or a role that is not one."""


# ------------------------------------------------------------------------------------------- sign-in mode


def is_demo_store(db: Store) -> bool:
    """True when the store holds the embedded demo and nothing else (or nothing yet: the app loads the demo
    on first start): every conversation is of the collection 'demo', and no account exists."""
    found = row(
        db,
        "SELECT (SELECT COUNT(*) FROM conversations WHERE collection IS DISTINCT FROM :demo) AS others, "
        "(SELECT COUNT(*) FROM accounts) AS accounts",
        {"demo": DEMO_COLLECTION},
    )
    return found["others"] == 0 and found["accounts"] == 0


def open_sign_in(db: Store, setting: bool | None) -> bool:
    """Open mode (anyone signs in by typing a name): ``setting`` ($ASSESS_OPEN) when given, else only on the
    embedded demo (:func:`is_demo_store`). Never the default for a store with data of its own."""
    return setting if setting is not None else is_demo_store(db)


# ------------------------------------------------------------------------------------------- history


def record_action(
    db: Store, by: str | None, kind: str, item: str, old: object = None, new: object = None, *, via: str
) -> None:
    """Append one organizer action to the history (inside the caller's transaction, or its own)."""
    if kind not in ORGANIZER_ACTIONS:
        raise AssessError(f"an organizer action is one of {', '.join(ORGANIZER_ACTIONS)}, not {kind!r}")

    def text(v: object) -> str | None:
        return None if v is None else v if isinstance(v, str) else json.dumps(v, sort_keys=True)

    with write(db):
        run(
            db,
            "INSERT INTO label_history (label_table, source, item, old_value, new_value, mode, via, at) "
            "VALUES (:kind, :source, :item, :old, :new, NULL, :via, :at)",
            {
                "kind": kind,
                "source": by or UNKNOWN_ACTOR,
                "item": item,
                "old": text(old),
                "new": text(new),
                "via": via,
                "at": now(),
            },
        )


def actions(db: Store, kind: str | None = None, item: str | None = None) -> list[dict]:
    """Organizer-action history rows (oldest first): kind, by, item, old, new, via, at."""
    kinds = (kind,) if kind else ORGANIZER_ACTIONS
    params: dict[str, str] = {f"kind{i}": str(k) for i, k in enumerate(kinds)}
    sql = (
        'SELECT label_table AS kind, source AS "by", item, old_value AS old, new_value AS new, via, at '
        f"FROM label_history WHERE label_table IN ({', '.join(':' + name for name in params)})"
    )
    if item is not None:
        sql += " AND item = :item"
        params["item"] = item
    return rows(db, sql + " ORDER BY id", params)


# ------------------------------------------------------------------------------------------- accounts

_PUBLIC = "name, role, email, disabled, link_version, created_by, created_at, changed_by, changed_at"


def role_of(role: str) -> Role:
    try:
        return Role(role)
    except ValueError:
        raise AccountError(f"a role is one of {', '.join(r.value for r in Role)}, not {role!r}") from None


def get(db: Store, name: str) -> dict | None:
    """The account ``name`` with its password hash (for checking only), or None."""
    return row(db, f"SELECT {_PUBLIC}, password_hash FROM accounts WHERE name = :name", {"name": name})


def by_email(db: Store, email: str) -> dict | None:
    """The account whose email is ``email`` (case-insensitive), or None."""
    return row(
        db, f"SELECT {_PUBLIC}, password_hash FROM accounts WHERE lower(email) = lower(:email)", {"email": email}
    )


def accounts(db: Store) -> list[dict]:
    """Every account without its hash (``password`` says whether one is set), by name."""
    return rows(
        db,
        f"SELECT {_PUBLIC}, CASE WHEN password_hash IS NULL THEN 0 ELSE 1 END AS password FROM accounts ORDER BY name",
    )


def _state(account: dict) -> dict:
    return {"role": account["role"], "disabled": bool(account["disabled"])}


def _existing(db: Store, name: str) -> dict:
    found = get(db, name)
    if found is None:
        raise AccountError(f"no account {name!r} (python -m assess users list shows them)")
    return found


def add(db: Store, name: str, role: str, password_hash: str | None, *, by: str | None, email: str | None = None) -> str:
    """Create an account (its name must be a valid assessor name, not yet an account); return the name."""
    from store.queue import sign_in  # the queue module owns assessor names and their label sources

    role = role_of(role)
    with write(db):
        name = sign_in(db, name)
        if get(db, name) is not None:
            raise AccountError(f"an account {name!r} exists already (users reset gives it a new password)")
        if email and by_email(db, email) is not None:
            raise AccountError(f"another account has the email {email!r}")
        at = now()
        run(
            db,
            "INSERT INTO accounts (name, role, password_hash, email, created_by, created_at, changed_by, changed_at) "
            "VALUES (:name, :role, :password_hash, :email, :by, :at, :by, :at)",
            {
                "name": name,
                "role": role.value,
                "password_hash": password_hash,
                "email": email or None,
                "by": by,
                "at": at,
            },
        )
        record_action(db, by, "account", name, None, {"role": role.value, "disabled": False}, via="add")
    return name


def set_disabled(db: Store, name: str, disabled: bool, *, by: str | None) -> bool:
    """Disable (or enable) an account; False when it already was."""
    with write(db):
        found = _existing(db, name)
        if bool(found["disabled"]) == disabled:
            return False
        run(
            db,
            "UPDATE accounts SET disabled = :disabled, changed_by = :by, changed_at = :at WHERE name = :name",
            {"disabled": int(disabled), "by": by, "at": now(), "name": name},
        )
        record_action(
            db,
            by,
            "account",
            name,
            _state(found),
            {**_state(found), "disabled": disabled},
            via="disable" if disabled else "enable",
        )
    return True


def set_role(db: Store, name: str, role: str, *, by: str | None) -> bool:
    """Change an account's role; False when it already had it."""
    role = role_of(role)
    with write(db):
        found = _existing(db, name)
        if found["role"] == role.value:
            return False
        run(
            db,
            "UPDATE accounts SET role = :role, changed_by = :by, changed_at = :at WHERE name = :name",
            {"role": role.value, "by": by, "at": now(), "name": name},
        )
        record_action(db, by, "account", name, _state(found), {**_state(found), "role": role.value}, via="role")
    return True


def reset(db: Store, name: str, password_hash: str | None, *, by: str | None) -> int:
    """Replace the password hash (None: link sign-in only) and invalidate every earlier sign-in link;
    return the new link version."""
    with write(db):
        found = _existing(db, name)
        version = found["link_version"] + 1
        run(
            db,
            "UPDATE accounts SET password_hash = :password_hash, link_version = :version, changed_by = :by, "
            "changed_at = :at WHERE name = :name",
            {"password_hash": password_hash, "version": version, "by": by, "at": now(), "name": name},
        )
        record_action(db, by, "account", name, _state(found), _state(found), via="reset")
    return version


def rehash(db: Store, name: str, password_hash: str) -> None:
    """Store a stronger hash of the same password (Argon2 parameters raised); not an action of anyone."""
    with write(db):
        run(
            db,
            "UPDATE accounts SET password_hash = :password_hash WHERE name = :name",
            {"password_hash": password_hash, "name": name},
        )


# ------------------------------------------------------------------------------------------- failed sign-ins


def _stamp(at: datetime) -> str:
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def failures_since(db: Store, scope: str, since: datetime) -> tuple[int, str | None]:
    """How many failed sign-ins ``scope`` ('account:NAME', 'address:IP') has had since ``since``, and the
    oldest of them (ISO time) or None."""
    found = row(
        db,
        "SELECT COUNT(*) AS n, MIN(at) AS first FROM sign_in_failures WHERE scope = :scope AND at >= :since",
        {"scope": scope, "since": _stamp(since)},
    )
    return found["n"], found["first"]


def record_failure(db: Store, scopes: list[str], at: datetime, *, window: timedelta) -> None:
    """Count one failed sign-in for each scope; forget failures older than the window."""
    with write(db):
        run(db, "DELETE FROM sign_in_failures WHERE at < :before", {"before": _stamp(at - window)})
        for scope in scopes:
            run(db, "INSERT INTO sign_in_failures (scope, at) VALUES (:scope, :at)", {"scope": scope, "at": _stamp(at)})


def clear_failures(db: Store, scope: str) -> None:
    with write(db):
        run(db, "DELETE FROM sign_in_failures WHERE scope = :scope", {"scope": scope})


def count(db: Store) -> int:
    return value(db, "SELECT COUNT(*) AS n FROM accounts")
