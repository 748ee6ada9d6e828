"""Signing in: Argon2 passwords, signed expiring sign-in links, the rate limit on failed attempts.

The store holds accounts (``store.accounts``); this module holds the secrets' side: it hashes a password
with Argon2id (argon2-cffi) and never keeps the password, and it signs sign-in links with itsdangerous
using a key from $ASSESS_SECRET_KEY or from a key file beside the SQLite store (0600, made once). A link
carries the account's name, its ``link_version`` and an expiry time; a reset raises the version, so
older links stop working. Nothing here logs a password, a hash, a link or the key.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote, urlsplit

from assess import settings
from assess.errors import AssessError
from assess.tasks import Role
from assess.text import name_problem, normal_name
from store import Store, accounts, rights, sources
from store.db import file_of

MAX_FAILURES = 5
"""Failed sign-ins allowed per account (before its back-off) and per client address within :data:`WINDOW`."""
WINDOW = timedelta(minutes=15)
BACKOFF_FIRST = timedelta(minutes=1)
BACKOFF_LONGEST = timedelta(hours=1)
"""An account past :data:`MAX_FAILURES` failures waits :data:`BACKOFF_FIRST` after the last one, twice as long
after each further failure, at most this long: a colleague who mistyped waits a minute, a guesser gets one
guess an hour. A success clears the account's failures; failures older than :data:`ACCOUNT_MEMORY` are forgotten."""
ACCOUNT_MEMORY = timedelta(days=1)
ADDRESS_IN_FLIGHT = 64
"""Sign-ins from one client address being checked at the same moment (a class behind one NAT address signs in
together); more wait a moment. Failures, not attempts in flight, count towards :data:`MAX_FAILURES`."""
LINK_MINUTES = 24 * 60
LINK_SALT = "assess-sign-in"
MIN_PASSWORD = 10


class SignInRefused(AssessError):
    """A sign-in that did not succeed; the message says why in one line, with no secret in it."""


@dataclass(frozen=True)
class Person:
    """Someone signed in: their account name (also their label source) and role."""

    name: str
    role: Role

    @property
    def organizer(self) -> bool:
        return self.role is Role.ORGANIZER

    @property
    def adjudicator(self) -> bool:
        return self.role in (Role.ADJUDICATOR, Role.ORGANIZER)


def _hasher():
    from argon2 import PasswordHasher

    return PasswordHasher()  # Argon2id with argon2-cffi's current recommended parameters


def hash_password(password: str) -> str:
    if len(password) < MIN_PASSWORD:
        raise AssessError(f"a password has at least {MIN_PASSWORD} characters, found {len(password)}")
    return _hasher().hash(password)


def new_password() -> str:
    """A strong random password (20 URL-safe characters, 120 bits)."""
    return secrets.token_urlsafe(15)


def _clock(at: datetime | None) -> datetime:
    return at or datetime.now(UTC)


# ------------------------------------------------------------------------------------------- accounts


def add_account(
    db: Store,
    name: str,
    role: str,
    *,
    password: str | None = None,
    by: str | None,
    email: str | None = None,
    generate: bool = True,
) -> str | None:
    """Create an account with ``password``, or with a generated one when none is given and ``generate``
    (returned, to be shown once), or with none (link sign-in only). Returns the generated password."""
    made = new_password() if password is None and generate else None
    chosen = password if password is not None else made
    accounts.add(db, name, role, hash_password(chosen) if chosen else None, by=by, email=email)
    return made


def reset_account(
    db: Store, name: str, *, password: str | None = None, by: str | None, generate: bool = True
) -> str | None:
    """New password (given, generated and returned, or none) and every earlier sign-in link invalidated."""
    made = new_password() if password is None and generate else None
    chosen = password if password is not None else made
    accounts.reset(db, name, hash_password(chosen) if chosen else None, by=by)
    return made


NotAllowed = rights.NotAllowed  # a write past the person's rights (the pages say NOT SAVED)


def register_assessor(db: Store, name: str, *, guest: bool = False) -> str:
    """Register ``name`` as an assessor source and return it as kept; ``guest``: a name typed in open mode,
    refused when it belongs to an account (:func:`store.sources.sign_in`)."""
    return sources.sign_in(db, name, guest=guest)


def open_sign_in(db: Store, setting: bool | None) -> bool:
    """Whether anyone signs in by typing a name: ``setting`` ($ASSESS_OPEN) when given, else only on the demo
    store (:func:`store.accounts.open_sign_in`)."""
    return accounts.open_sign_in(db, setting)


def account_list(db: Store) -> list[dict]:
    """Every account without its hash, by name (:func:`store.accounts.accounts`)."""
    return accounts.accounts(db)


def set_disabled(db: Store, name: str, disabled: bool, *, by: str | None) -> bool:
    """Disable (or enable) an account, an organizer's action; False when it already was."""
    return accounts.set_disabled(db, name, disabled, by=by)


def set_role(db: Store, name: str, role: str, *, by: str | None) -> bool:
    """Change an account's role, an organizer's action; False when it already had it."""
    return accounts.set_role(db, name, role, by=by)


def _person(account: dict) -> Person:
    if account["disabled"]:
        raise SignInRefused(f"the account {account['name']!r} is disabled; ask an organizer to enable it")
    return Person(account["name"], Role(account["role"]))


# ------------------------------------------------------------------------------------------- passwords


ORGANIZER_PASSWORD_SCOPE = "organizer-password"


def check_organizer_password(
    db: Store, entered: str, expected: str, *, address: str | None = None, at: datetime | None = None
) -> bool:
    """Open mode's legacy organizer password ($ASSESS_ORGANIZER_PASSWORD): whether ``entered`` is it, compared
    as UTF-8 bytes in constant time (any text, non-ASCII included). Failures count per client address under the
    accounts' limits (:data:`MAX_FAILURES` within :data:`WINDOW`, scope ``organizer-password:ADDRESS``); past
    them every attempt is refused with :class:`SignInRefused`, right or wrong, until the window passes."""
    at = _clock(at)
    scope = f"{ORGANIZER_PASSWORD_SCOPE}:{address or 'local'}"
    limit = accounts.Limit(scope, MAX_FAILURES, WINDOW, ADDRESS_IN_FLIGHT)
    attempt = accounts.reserve_attempt(db, [limit], at)
    if attempt.refused_by is not None:
        if attempt.reason == "in_flight":
            raise SignInRefused("other organizer-password attempts from this address are being checked: try again")
        raise SignInRefused(f"too many wrong organizer passwords from this address: {retry_in(attempt.retry_at, at)}")
    ok = hmac.compare_digest(entered.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass"))
    if not ok:
        accounts.attempt_failed(db, attempt, at)
        return False
    accounts.attempt_succeeded(db, scope, attempt)
    return True


def retry_in(retry_at: datetime, at: datetime) -> str:
    """When a refused sign-in may be tried again, in words: seconds under two minutes, else whole minutes
    (rounded up), with the time of day in UTC from five minutes on."""
    seconds = max(1, int((retry_at - at).total_seconds() + 0.999))
    if seconds < 120:
        return f"try again in {seconds} second{'' if seconds == 1 else 's'}"
    when = f"try again in {(seconds + 59) // 60} minutes"
    return when if seconds < 300 else f"{when} (at {retry_at.astimezone(UTC):%H:%M} UTC)"


_DUMMY_HASH: list[str] = []


def _dummy_hash() -> str:
    """A hash of a random password, made once per process with the same parameters as real ones: an unknown
    name is verified against it, so it costs the same time as a known name with a wrong password."""
    if not _DUMMY_HASH:
        _DUMMY_HASH.append(_hasher().hash(secrets.token_urlsafe(16)))
    return _DUMMY_HASH[0]


def check_password(
    db: Store, name: str, password: str, *, address: str | None = None, at: datetime | None = None
) -> Person:
    """The person whose name and password these are, or :class:`SignInRefused`. An account past
    :data:`MAX_FAILURES` failures backs off (:data:`BACKOFF_FIRST`, doubling up to :data:`BACKOFF_LONGEST`); a
    client address past :data:`MAX_FAILURES` failures within :data:`WINDOW` is refused until the oldest of them
    leaves the window. A refusal says when to try again; while refused, every attempt is (correct or not).

    A failure counts once its check has failed: attempts still being checked are no failures, so a class
    signing in at the same moment from one address (a lab behind NAT, everyone behind a proxy) is not locked
    out. Yet concurrent attempts cannot get more checks than the limit allows: the attempt is recorded as
    pending before the password is checked, in one transaction under the store's write lock, and an account
    has at most :data:`MAX_FAILURES` checks in flight and failed together, one once it backs off (an address
    at most :data:`ADDRESS_IN_FLIGHT` in flight). A name without an account (or without a password) is checked
    against a dummy hash, so it takes as long as a wrong password for a real account."""
    at = _clock(at)
    name = normal_name(name)
    if name_problem(name):  # no account can have it; counted under one scope (a NUL never reaches the store)
        name = ""
    limits = [
        accounts.Limit(
            accounts.account_scope(name or "(not a name)"),
            MAX_FAILURES,
            ACCOUNT_MEMORY,
            backoff=(BACKOFF_FIRST, BACKOFF_LONGEST),
        )
    ]
    if address:
        limits.append(accounts.Limit(f"address:{address}", MAX_FAILURES, WINDOW, ADDRESS_IN_FLIGHT))
    attempt = accounts.reserve_attempt(db, limits, at)
    if attempt.refused_by is not None:
        what = "this account" if attempt.refused_by.startswith("account:") else "this address"
        if attempt.reason == "in_flight":
            raise SignInRefused(f"other sign-ins for {what} are being checked: try again in a moment")
        raise SignInRefused(f"too many failed sign-ins for {what}: {retry_in(attempt.retry_at, at)}")
    found = accounts.get(db, name) if name else None
    stored = found["password_hash"] if found is not None and found["password_hash"] else None
    from argon2.exceptions import InvalidHashError, VerificationError

    try:
        ok = _hasher().verify(stored or _dummy_hash(), password or "") and stored is not None
    except (VerificationError, InvalidHashError):
        ok = False
    except BaseException:  # anything else (an interrupt): the attempt is a failure, as a wrong password
        accounts.attempt_failed(db, attempt, at)
        raise
    if not ok:
        accounts.attempt_failed(db, attempt, at)
        raise SignInRefused("wrong name or password")
    person = _person(found)
    accounts.attempt_succeeded(db, limits[0].scope, attempt)
    if _hasher().check_needs_rehash(stored):
        accounts.rehash(db, name, _hasher().hash(password))
    return person


# ------------------------------------------------------------------------------------------- links


def key_file(db: Store) -> Path | None:
    """Where the link-signing key lives when $ASSESS_SECRET_KEY is unset: beside the SQLite file."""
    where = file_of(db)
    return Path(where + ".secret") if where else None


def signing_key(db: Store) -> str:
    """$ASSESS_SECRET_KEY, else the key file beside the store (created once with mode 0600)."""
    given = settings.secret_key()
    if given:
        return given
    path = key_file(db)
    if path is None:
        raise AssessError("set ASSESS_SECRET_KEY: sign-in links need a key and this store has no file beside it")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text(encoding="ascii").strip()
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(secrets.token_urlsafe(48))
    return path.read_text(encoding="ascii").strip()


def _serializer(db: Store):
    from itsdangerous import URLSafeSerializer

    return URLSafeSerializer(signing_key(db), salt=LINK_SALT)


def make_link(db: Store, name: str, base_url: str, *, minutes: int = LINK_MINUTES, at: datetime | None = None) -> str:
    """A personal sign-in link ``BASE/#signin=TOKEN``, valid once, for ``minutes`` (and until the account is
    reset). The token is in the address's fragment, which browsers never send to a server: no request line,
    referrer or proxy log holds it; the page reads it, signs in and removes it from the address bar."""
    parts = urlsplit(base_url or "")
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise AssessError(
            f"--base-url: expected the app's address such as https://assess.example.org, found {base_url!r}"
        )
    if minutes <= 0 or minutes > 366 * 24 * 60:
        raise AssessError(f"--minutes: expected 1 to {366 * 24 * 60}, found {minutes}")
    found = accounts.get(db, name)
    if found is None:
        raise accounts.AccountError(f"no account {name!r} (python -m assess users list shows them)")
    _person(found)
    expires = int((_clock(at) + timedelta(minutes=minutes)).timestamp())
    nonce = secrets.token_urlsafe(12)
    token = _serializer(db).dumps({"n": found["name"], "v": found["link_version"], "x": expires, "j": nonce})
    return f"{base_url.rstrip('/')}/#signin={quote(token)}"


USED_LINK = "this sign-in link was used already (a link signs in once); ask an organizer for a new one"


def _link(db: Store, token: str, at: datetime) -> tuple[Person, str, datetime]:
    from itsdangerous import BadSignature

    try:
        data = _serializer(db).loads(token or "")
        name, version, expires, nonce = data["n"], int(data["v"]), int(data["x"]), str(data["j"])
    except (BadSignature, KeyError, TypeError, ValueError):
        raise SignInRefused("this sign-in link is not valid (damaged, or not made by this workbench)") from None
    if at.timestamp() > expires:
        when = datetime.fromtimestamp(expires, UTC).strftime("%Y-%m-%d %H:%M UTC")
        raise SignInRefused(f"this sign-in link expired on {when}; ask an organizer for a new one")
    found = accounts.get(db, name)
    if found is None:
        raise SignInRefused("this sign-in link's account no longer exists")
    if found["link_version"] != version:
        raise SignInRefused("this sign-in link was replaced (the account was reset); ask an organizer for a new one")
    return _person(found), nonce, datetime.fromtimestamp(expires, UTC)


def link_person(db: Store, token: str, *, at: datetime | None = None) -> Person:
    """Whom a sign-in link's token would sign in, without using it: the app asks before it switches a
    browser signed in as someone else (a link sent to a victim must not silently sign them in as the
    sender). Refused as :func:`check_link` would (a link used meanwhile is refused when it is used)."""
    person, nonce, _expires = _link(db, token, _clock(at))
    if accounts.link_used(db, nonce):
        raise SignInRefused(USED_LINK)
    return person


def check_link(db: Store, token: str, *, at: datetime | None = None) -> Person:
    """The person a sign-in link's token names, or :class:`SignInRefused` (damaged, expired, used before,
    replaced by a reset, disabled or deleted account). A link signs in once: its nonce is recorded on first
    use (until it would have expired)."""
    now_at = _clock(at)
    person, nonce, expires = _link(db, token, now_at)
    if not accounts.use_link(db, nonce, person.name, now_at, expires):
        raise SignInRefused(USED_LINK)
    return person


# ------------------------------------------------------------------------------------------- sessions


SESSION_COOKIE = "assess_session"


@dataclass(frozen=True)
class Holder:
    """Whoever a browser session belongs to now: an account with its current role, or (``role`` None) a
    name typed in open mode."""

    name: str
    role: Role | None
    session: str


def _session_id(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def start_session(db: Store, name: str, *, kind: str, via: str, at: datetime | None = None) -> str:
    """Start a browser session for ``name`` (an account, or an open-mode name) lasting
    :func:`assess.settings.session_hours`; return the secret for the cookie (only its hash is stored)."""
    at = _clock(at)
    secret = secrets.token_urlsafe(32)
    try:
        expires = at + timedelta(hours=settings.session_hours())
    except ValueError as exc:
        raise AssessError(str(exc)) from None
    accounts.start_session(db, _session_id(secret), name, kind, via, at, expires)
    return secret


def session_holder(db: Store, secret: str | None, *, at: datetime | None = None) -> Holder | None:
    """The holder of the session whose cookie secret is ``secret``, as the store has them now: None when the
    session ended or expired, or its account is disabled or gone. Read at every script and fragment run."""
    if not isinstance(secret, str) or not secret or len(secret) > 200:
        return None
    session = _session_id(secret)
    found = accounts.live_session(db, session, _clock(at))
    if found is None or found["disabled"]:
        return None
    if found["kind"] == "open":
        return Holder(found["name"], None, session)
    return Holder(found["name"], Role(found["role"]), session)


def end_session(db: Store, secret: str | None, *, everywhere: bool = True, at: datetime | None = None) -> int:
    """Sign out: end this session, and (``everywhere``) every other open session of the same person."""
    if not secret:
        return 0
    session = _session_id(secret)
    found = accounts.live_session(db, session, _clock(at))
    if found is None:
        return 0
    return accounts.end_sessions(
        db, found["name"], _clock(at), by=found["name"], session_id=None if everywhere else session
    )


# ------------------------------------------------------------------------------------------- OpenID Connect


OPENID_STALE = (
    "your sign-in at the identity provider is older than this account's last sign-out or reset, so it no longer "
    "opens the account; sign in with your organization's account again"
)


def openid_email(claims: Mapping) -> str | None:
    """The address of a provider's identity that may match an account: the ``email`` claim when it is one string
    and ``email_verified`` is the JSON value ``true``; None when the address is absent or not verified (absent,
    ``false``, ``"true"``, ``0`` and ``1`` alike). A claim of the wrong type (a list, a number or an object for
    the address) is refused with one line (:class:`SignInRefused`): no account matches it."""
    email = claims.get("email")
    if email is not None and not isinstance(email, str):
        raise SignInRefused(
            f"the identity provider reported an e-mail address that is not one text (a {type(email).__name__}); no "
            "account matches it: ask the provider's administrator, or sign in with a password"
        )
    if claims.get("email_verified") is not True:
        return None
    email = (email or "").strip()
    return email if email and len(email) <= 320 and "\n" not in email else None


def openid_sign_in(db: Store, claims: Mapping, *, at: datetime | None = None) -> Person:
    """The account a provider's identity (the claims of ``st.user``) opens: matched by its verified address only
    (:func:`openid_email`, :func:`openid_person`), and refused when the provider's sign-in (its ID token's ``iat``)
    is older than the account's last sign-out or reset (:data:`OPENID_STALE`): signing out, ``users reset`` and
    disabling end OpenID sessions in every browser too."""
    person = openid_person(db, openid_email(claims))
    issued = claims.get("iat")
    if isinstance(issued, bool) or not isinstance(issued, int | float):
        raise SignInRefused("the identity provider did not say when it signed you in (no iat claim); sign in again")
    ended = accounts.sessions_ended_at(db, person.name)
    if ended is not None:
        try:
            signed_in = datetime.fromtimestamp(float(issued), UTC)
        except (OverflowError, OSError, ValueError):
            raise SignInRefused(OPENID_STALE) from None
        if signed_in < ended.replace(microsecond=0):  # iat has whole seconds: a sign-in that second counts
            raise SignInRefused(OPENID_STALE)
    return person


def openid_person(db: Store, email: str | None) -> Person:
    """The account of someone signed in by the deployment's identity provider (st.login), matched by the
    verified email the provider gives, and only by it (a display name is the user's own choice at the
    provider, so it never picks an account); an unknown identity is refused (an organizer creates the account
    first, with ``--email``)."""
    found = accounts.by_email(db, email) if email else None
    if found is None:
        raise SignInRefused(
            f"{email or 'this identity'} has no account here (or the provider did not verify the address); ask an "
            "organizer to add one (python -m assess users add NAME --email ADDRESS)"
        )
    return _person(found)
