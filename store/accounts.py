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

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from assess.errors import AssessError
from assess.tasks import Role
from assess.text import email_problem
from store.db import Store, now, returning, row, rows, run, value, write
from store.history import UNKNOWN_ACTOR, record_action
from store.rights import check_writer
from store.sources import sign_in

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
    role = role_of(role)
    if email is not None and (problem := email_problem(email)):
        raise AccountError(f"the e-mail address is refused: expected {problem}")
    with write(db):
        check_writer(db, by, action="account")  # before the change: an organizer demoted meanwhile changes nothing
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
        record_action(
            db, by, "account", name, None, {"role": role.value, "disabled": False}, via="add", writer_checked=True
        )
    return name


def set_disabled(db: Store, name: str, disabled: bool, *, by: str | None) -> bool:
    """Disable (or enable) an account; False when it already was."""
    with write(db):
        check_writer(db, by, action="account")  # before the change: an organizer demoted meanwhile changes nothing
        if disabled and by == name:
            raise AccountError(f"{name!r} cannot disable their own account (another organizer can)")
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
            writer_checked=True,
        )
        if disabled:  # every open browser session of the account ends with it
            end_sessions(db, name, datetime.now(UTC), by=by)
    return True


def set_role(db: Store, name: str, role: str, *, by: str | None) -> bool:
    """Change an account's role; False when it already had it."""
    role = role_of(role)
    with write(db):
        check_writer(db, by, action="account")  # before the change: an organizer demoted meanwhile changes nothing
        if by == name and role is not Role.ORGANIZER and get(db, name) and get(db, name)["role"] == "organizer":
            raise AccountError(
                f"{name!r} cannot take the organizer role from their own account (another organizer can)"
            )
        found = _existing(db, name)
        if found["role"] == role.value:
            return False
        run(
            db,
            "UPDATE accounts SET role = :role, changed_by = :by, changed_at = :at WHERE name = :name",
            {"role": role.value, "by": by, "at": now(), "name": name},
        )
        record_action(
            db,
            by,
            "account",
            name,
            _state(found),
            {**_state(found), "role": role.value},
            via="role",
            writer_checked=True,
        )
    return True


def reset(db: Store, name: str, password_hash: str | None, *, by: str | None) -> int:
    """Replace the password hash (None: link sign-in only), invalidate every earlier sign-in link and clear
    the account's sign-in back-off; return the new link version."""
    with write(db):
        check_writer(db, by, action="account")  # before the change: an organizer demoted meanwhile changes nothing
        found = _existing(db, name)
        version = found["link_version"] + 1
        run(
            db,
            "UPDATE accounts SET password_hash = :password_hash, link_version = :version, changed_by = :by, "
            "changed_at = :at WHERE name = :name",
            {"password_hash": password_hash, "version": version, "by": by, "at": now(), "name": name},
        )
        record_action(db, by, "account", name, _state(found), _state(found), via="reset", writer_checked=True)
        end_sessions(db, name, datetime.now(UTC), by=by)  # a reset signs the account out everywhere
        # The person locked out by their own mistakes gets a new password to use now, not in an hour; the
        # addresses' failures stay (an attacker's address is not the account's to forgive).
        run(db, "DELETE FROM sign_in_failures WHERE scope = :scope", {"scope": account_scope(name)})
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


def account_scope(name: str) -> str:
    """The scope of an account's sign-in limit (:class:`Limit`)."""
    return f"account:{name}"


def _stamp(at: datetime) -> str:
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


PENDING_STALE = timedelta(minutes=1)
"""An attempt still pending after this long belongs to a process that died while checking: it counts as a failure."""


def failures_since(db: Store, scope: str, since: datetime, *, at: datetime | None = None) -> tuple[int, str | None]:
    """How many failed sign-ins ``scope`` ('account:NAME', 'address:IP') has had since ``since``, and the
    oldest of them (ISO time) or None. Attempts still being checked are no failures, unless they have been
    pending for :data:`PENDING_STALE` before ``at`` (now when None)."""
    stale = _stamp((at or datetime.now(UTC)) - PENDING_STALE)
    found = row(
        db,
        "SELECT COUNT(*) AS n, MIN(at) AS first FROM sign_in_failures WHERE scope = :scope AND at >= :since "
        "AND (pending = 0 OR at < :stale)",
        {"scope": scope, "since": _stamp(since), "stale": stale},
    )
    return found["n"], found["first"]


def count(db: Store) -> int:
    return value(db, "SELECT COUNT(*) AS n FROM accounts")


FORGET_AFTER = timedelta(days=1)
"""Failed sign-ins older than this are deleted: no limit looks further back."""


@dataclass(frozen=True)
class Limit:
    """One scope's limit on sign-in attempts ('account:NAME', 'address:IP').

    ``failures`` failures within ``window`` are allowed. Past them the scope is refused until the oldest of
    them leaves the window; or, with ``backoff`` (first wait, longest wait), until the latest failure is one
    wait old, a wait that doubles with every further failure up to the longest: then one attempt at a time
    is checked. ``in_flight``: how many attempts may be checked at once; None: as many as make failures and
    attempts in flight together ``failures`` (an account: never more checks than the limit allows)."""

    scope: str
    failures: int
    window: timedelta
    in_flight: int | None = None
    backoff: tuple[timedelta, timedelta] | None = None

    def wait(self, failed: int) -> timedelta:
        """The back-off after ``failed`` failures (at least ``failures`` of them)."""
        first, longest = self.backoff
        doublings = min(failed - self.failures, 32)  # the cap is reached long before; keeps the power small
        return min(first * (2**doublings), longest)


@dataclass(frozen=True)
class Reservation:
    """What :func:`reserve_attempt` decided: the attempt's pending rows (``ids``, one per scope), or the scope
    that refused it and why ('failures': the limit of failures is reached, until ``retry_at``; 'in_flight':
    too many of its attempts are being checked right now)."""

    ids: tuple[int, ...] = ()
    scopes: tuple[str, ...] = ()
    refused_by: str | None = None
    reason: str | None = None
    retry_at: datetime | None = None


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def reserve_attempt(db: Store, limits: list[Limit], at: datetime) -> Reservation:
    """Count one sign-in attempt for each limit's scope before its password is checked, atomically (under the
    store's write lock): refuse it, writing nothing, when a scope is past its failures (:class:`Limit`) or has
    too many attempts of its own being checked (pending); otherwise insert a pending row per scope.
    The caller then ends the attempt: :func:`attempt_failed` (a wrong password: the pending rows become
    failures) or :func:`attempt_succeeded` (the pending rows go). Pending attempts are no failures, so people
    who sign in at the same moment from one address do not lock it; the in-flight bound keeps concurrent
    attempts from getting more checks than the limit allows."""
    stale = _stamp(at - PENDING_STALE)
    with write(db):
        run(db, "DELETE FROM sign_in_failures WHERE at < :before", {"before": _stamp(at - FORGET_AFTER)})
        for limit in limits:
            counts = row(
                db,
                "SELECT COUNT(*) FILTER (WHERE pending = 0 OR at < :stale) AS failed, "
                "COUNT(*) FILTER (WHERE pending = 1 AND at >= :stale) AS flying, "
                "MIN(at) FILTER (WHERE pending = 0 OR at < :stale) AS first, "
                "MAX(at) FILTER (WHERE pending = 0 OR at < :stale) AS last "
                "FROM sign_in_failures WHERE scope = :scope AND at >= :since",
                {"scope": limit.scope, "stale": stale, "since": _stamp(at - limit.window)},
            )
            failed, most = counts["failed"], limit.in_flight
            if failed >= limit.failures:
                if limit.backoff is None:
                    return Reservation(
                        refused_by=limit.scope, reason="failures", retry_at=_time(counts["first"]) + limit.window
                    )
                retry = _time(counts["last"]) + limit.wait(failed)
                if at < retry:
                    return Reservation(refused_by=limit.scope, reason="failures", retry_at=retry)
                most = 1 if most is None else most  # the wait is over: one check, whose failure doubles it
            elif most is None:
                most = limit.failures - failed
            if counts["flying"] >= most:
                return Reservation(refused_by=limit.scope, reason="in_flight")
        ids = [
            returning(
                db,
                "INSERT INTO sign_in_failures (scope, at, pending) VALUES (:scope, :at, 1) RETURNING id",
                {"scope": limit.scope, "at": _stamp(at)},
            )["id"]
            for limit in limits
        ]
        return Reservation(ids=tuple(ids), scopes=tuple(limit.scope for limit in limits))


def attempt_failed(db: Store, attempt: Reservation, at: datetime) -> None:
    """A wrong password: the attempt's pending rows become failures (at the attempt's time)."""
    with write(db):
        for found, scope in zip(attempt.ids, attempt.scopes, strict=True):
            if run(db, "DELETE FROM sign_in_failures WHERE id = :id AND pending = 1", {"id": found}):
                run(
                    db,
                    "INSERT INTO sign_in_failures (scope, at, pending) VALUES (:scope, :at, 0)",
                    {"scope": scope, "at": _stamp(at)},
                )


def attempt_succeeded(db: Store, account_scope: str, attempt: Reservation) -> None:
    """A right password: forget this attempt's rows and the account's earlier failures (the address keeps
    its other failures)."""
    with write(db):
        for found in attempt.ids:
            run(db, "DELETE FROM sign_in_failures WHERE id = :id", {"id": found})
        run(db, "DELETE FROM sign_in_failures WHERE scope = :scope", {"scope": account_scope})


# ------------------------------------------------------------------------------------------- sessions


def start_session(db: Store, session_id: str, name: str, kind: str, via: str, at: datetime, expires: datetime) -> None:
    """Record a browser session (``session_id``: the hash of the cookie's secret)."""
    with write(db):
        if kind == "account":
            found = get(db, name)
            if found is None or found["disabled"]:
                raise AccountError(f"the account {name!r} is disabled or gone: no session started")
        run(
            db,
            "INSERT INTO sign_in_sessions (id, name, kind, via, created_at, expires_at) "
            "VALUES (:id, :name, :kind, :via, :at, :expires)",
            {"id": session_id, "name": name, "kind": kind, "via": via, "at": _stamp(at), "expires": _stamp(expires)},
        )


def live_session(db: Store, session_id: str, at: datetime) -> dict | None:
    """The session ``session_id`` when it has neither ended nor expired, with the account's current role and
    state: ``disabled`` is 1 for a disabled or deleted account, and for an open-mode name that an account
    has taken since (its holder never acts under the account's name)."""
    found = row(
        db,
        "SELECT s.name, s.kind, s.via, s.expires_at, a.role, "
        "CASE WHEN a.name IS NULL THEN (CASE WHEN s.kind = 'open' THEN 0 ELSE 1 END) "
        "WHEN s.kind = 'open' THEN 1 ELSE a.disabled END AS disabled "
        "FROM sign_in_sessions s LEFT JOIN accounts a ON a.name = s.name "
        "WHERE s.id = :id AND s.ended_at IS NULL AND s.expires_at > :at",
        {"id": session_id, "at": _stamp(at)},
    )
    return found


def end_sessions(db: Store, name: str, at: datetime, *, by: str | None, session_id: str | None = None) -> int:
    """End every open session of ``name`` (or only ``session_id``); return how many ended."""
    with write(db):
        sql = "UPDATE sign_in_sessions SET ended_at = :at, ended_by = :by WHERE name = :name AND ended_at IS NULL"
        params = {"at": _stamp(at), "by": by or UNKNOWN_ACTOR, "name": name}
        if session_id is not None:
            sql += " AND id = :id"
            params["id"] = session_id
        before = value(
            db, "SELECT COUNT(*) AS n FROM sign_in_sessions WHERE name = :name AND ended_at IS NULL", {"name": name}
        )
        run(db, sql, params)
        after = value(
            db, "SELECT COUNT(*) AS n FROM sign_in_sessions WHERE name = :name AND ended_at IS NULL", {"name": name}
        )
        return before - after


def sessions_ended_at(db: Store, name: str) -> datetime | None:
    """When a session of ``name`` last ended (a sign-out, a reset or a disabling ends them all at once), or None:
    an identity provider's sign-in from before then no longer opens the account."""
    last = value(db, "SELECT MAX(ended_at) AS at FROM sign_in_sessions WHERE name = :name", {"name": name})
    return datetime.fromisoformat(last.replace("Z", "+00:00")) if last else None


def link_used(db: Store, nonce: str) -> bool:
    """Whether a sign-in link's nonce was used (read only: :func:`use_link` is the one that decides)."""
    return row(db, "SELECT 1 AS used FROM sign_in_links_used WHERE nonce = :nonce", {"nonce": nonce}) is not None


def use_link(db: Store, nonce: str, name: str, at: datetime, expires: datetime) -> bool:
    """Mark a sign-in link's nonce used; False when it was used before (the link signs in once). Nonces of
    links that have expired anyway are forgotten."""
    with write(db):
        run(db, "DELETE FROM sign_in_links_used WHERE expires_at < :at", {"at": _stamp(at)})
        if row(db, "SELECT 1 AS used FROM sign_in_links_used WHERE nonce = :nonce", {"nonce": nonce}):
            return False
        run(
            db,
            "INSERT INTO sign_in_links_used (nonce, name, used_at, expires_at) VALUES (:nonce, :name, :at, :expires)",
            {"nonce": nonce, "name": name, "at": _stamp(at), "expires": _stamp(expires)},
        )
        return True


# ------------------------------------------------------------------------------------------- writers
