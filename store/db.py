"""Opening the store on either engine, migrations, and the one write-transaction helper.

A store lives in an embedded SQLite file (the default: a path, or ``sqlite:///path``) or in a
PostgreSQL database (``postgresql://user@host:port/name``). Both are reached through SQLAlchemy
Core, and every query of the store is one SQL text both engines accept, with named parameters
(``:name``) that SQLAlchemy passes to each driver in its own style. Engine differences live only
here and in :mod:`store.schema` (the DDL of each engine):

- SQLite gets the two functions PostgreSQL has built in or in its schema: ``string_agg(x, sep)``
  (SQLite 3.40 has only ``group_concat``) and ``int_prefix(text)`` (the leading integer of a text,
  0 when there is none, the value SQLite's ``CAST(x AS INTEGER)`` gives, used to sort ids such
  as '9-1' < '10-1' numerically).
- Results are plain Python values on both: PostgreSQL's ``numeric`` (``AVG``, ``SUM`` of integers)
  comes back as float, its booleans (``x IS NULL AS flag``) as 0/1, as SQLite returns them.

Every write goes through :func:`write`: one transaction that holds the store's single write lock
(SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: a transaction-scoped advisory lock), so writers never
interleave their read-check-write steps on either engine, and commits on success or rolls back on
any exception: a refused input or a crash leaves the store as it was. A large import stages its rows
without the lock and holds it only for its switch (:func:`store.staging.staging`; on PostgreSQL only for the switch's
commit); a key press bounds its wait with :func:`lock_wait`.
"""

from __future__ import annotations

import contextlib
import functools
import re
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import exc as sa_exc

from assess import lazylibs
from assess.errors import AssessError
from store.engines import BUSY_TIMEOUT_MS, engine_for
from store.locations import display, url_problem
from store.schema import MIGRATIONS
from store.schema.postgres import migrations_from
from store.schema.roles import APP_DELETES, APP_UPDATES, READ_ONLY

WRITE_LOCK_KEY = 0x41535345  # 'ASSE': the advisory lock every PostgreSQL write transaction holds
CHUNK = 5_000  # rows per executemany call of run_many (imports stream; a chunk bounds the memory)

# Raised by both engines (SQLAlchemy wraps the driver's error): a constraint refused the write.
IntegrityError = sa_exc.IntegrityError


class StoreUnavailable(AssessError):
    """The database could not be reached, or the connection broke in the middle of a write."""

    def __init__(self, message: str, reason: str = ""):
        super().__init__(message)
        self.reason = reason


class StoreBusy(StoreUnavailable):
    """A write gave up waiting for the store's write lock (another write held it past the wait asked with
    :func:`lock_wait`); nothing was written."""


def now() -> str:
    """UTC time with milliseconds, the timestamp format used in every table."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# ------------------------------------------------------------------------------------------- targets


def is_postgres(target: str | Path) -> bool:
    scheme = str(target).split("://", 1)[0].lower() if "://" in str(target) else ""
    return scheme in ("postgresql", "postgres") or scheme.startswith("postgresql+")


def _url(target: str | Path) -> sa.URL:
    text = str(target)
    if is_postgres(text):
        # StoreUnavailable: a page says the store cannot be reached (the line, password hidden, goes to its log)
        if problem := url_problem(text):
            where = display(text)
            where = where if len(where) <= 200 else where[:199] + "…"  # a 3,000-character host, not all of it
            raise StoreUnavailable(f"{where}: not a valid postgresql:// URL: {problem}", problem)
        url = sa.make_url(text).set(drivername="postgresql+psycopg")
        try:  # the hosts and ports a query may list (?host=…&port=…) are read only when connecting
            url.get_dialect()().create_connect_args(url)
        except (sa_exc.ArgumentError, ValueError, TypeError):
            problem = "a host or port cannot be read"
            raise StoreUnavailable(f"{display(text)}: not a valid postgresql:// URL: {problem}", problem) from None
        return url
    if text.startswith("sqlite:///"):
        text = text.removeprefix("sqlite:///")
    elif re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", text):
        # Not a file path: a URL of an engine the store does not speak (never created as a folder).
        problem = "a store is a SQLite file (or sqlite:///FILE) or a postgresql:// URL"
        raise StoreUnavailable(f"{display(text)}: {problem}", problem)
    if text != ":memory:":
        Path(text).parent.mkdir(parents=True, exist_ok=True)
    return sa.URL.create("sqlite", database=text)


_UNKNOWN = object()

# --------------------------------------------------------------------------------------------- store


_OPEN_STORES: weakref.WeakSet = weakref.WeakSet()  # every Store of this process, for interrupt_all()
_OPEN_LOCK = threading.Lock()


def interrupt_all() -> int:
    """Stop the statement each open store of this process is running now (:func:`interrupt`). For a server that
    is shutting down: a query that would run for minutes ends at once with an error in the thread that ran it.
    Returns how many connections were asked (a store between statements is asked too: there is nothing to stop)."""
    with _OPEN_LOCK:
        stores = list(_OPEN_STORES)
    return sum(interrupt(db) for db in stores)


def interrupt(db: Store, *, reads_only: bool = False) -> bool:
    """Stop the statement ``db`` is running now: SQLite's ``Connection.interrupt()``, a cancel request to PostgreSQL
    (both safe from another thread; between statements neither stops anything). ``reads_only``: leave a store
    inside a write transaction alone (its change would be lost, not merely late). True when the connection was
    asked."""
    if reads_only and db.writing:
        return False
    conn = db._held[0]
    if conn is None or conn.closed:
        return False
    try:
        driver = conn.connection.driver_connection
        if db.sqlite:
            driver.interrupt()
        else:
            driver.cancel()
    except Exception:  # closed or broken meanwhile: nothing runs there
        return False
    return True


class Store:
    """An open store on SQLite or PostgreSQL, the handle every store function takes.

    On SQLite the store keeps its one connection to the file. On PostgreSQL it takes a connection
    from the process's pool for each unit of work (a statement and its rows, or a whole write
    transaction) and gives it back at once, so an app process serving hundreds of browser sessions
    needs only a handful of server connections.

    ``engine`` is 'sqlite' or 'postgresql'; ``location`` is the file path or the URL without its
    password (safe to show). ``raw`` is the driver's own connection, for the few engine-specific
    statements (pragmas, DDL scripts) and for tests that inspect one engine.
    """

    def __init__(self, target: str | Path):
        if not isinstance(target, str | Path):  # e.g. an open Store: its repr is no place to create a file
            raise TypeError(f"a store is opened from a path or a URL, not {type(target).__name__}")
        self.target = str(target)
        self.url = _url(target)
        self.engine = self.url.get_backend_name()
        self.location = display(target)
        self._sa_engine = engine_for(self.url)
        self.depth = 0  # nesting of write() / snapshot(): 0 outside any transaction
        self.writing = False  # inside write(): interrupt(reads_only=True) leaves it alone
        self._file: str | None | object = _UNKNOWN  # SQLite: the file written (None: in memory), once asked
        self.busy = 0  # result sets still being read (each()), or a staging import holding its session
        self.staging = False  # inside stage_block(): no write lock is held
        self._held: list[sa.Connection | None] = [None]
        self._finalizer = weakref.finalize(self, _close_held, self._held)
        with _OPEN_LOCK:
            _OPEN_STORES.add(self)
        self.ensure_open()  # an unreachable database or a bad file is reported when the store is opened
        self.release()

    def _connect(self) -> sa.Connection:
        try:
            return self._sa_engine.connect()
        except sa_exc.DBAPIError as exc:
            reason = database_reason(exc)
            raise StoreUnavailable(f"{self.location}: cannot open the store: {reason}", reason) from None

    @property
    def sa(self) -> sa.Connection:
        """The connection for the current unit of work (taken from the pool, or opened, when needed)."""
        conn = self._held[0]
        if conn is None or conn.closed:
            conn = self._held[0] = self._connect()
        return conn

    @property
    def raw(self):
        return self.sa.connection.driver_connection

    @property
    def sqlite(self) -> bool:
        return self.engine == "sqlite"

    def release(self) -> None:
        """PostgreSQL, between units of work: give the connection back to the pool."""
        if not self.sqlite and not self.depth and not self.busy and self._held[0] is not None:
            _close_quietly(self._held[0])
            self._held[0] = None

    def reconnect(self) -> None:
        """Drop a broken connection and open a new one (nothing may be pending: only outside write()).
        If the database cannot be reached the store stays without a connection, and its next use
        tries again."""
        conn, self._held[0] = self._held[0], None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.invalidate()
            _close_quietly(conn)
        self.depth = self.busy = 0
        self.ensure_open()

    def ensure_open(self) -> None:
        self.sa  # noqa: B018  (connects when there is no live connection)

    def close(self) -> None:
        self._finalizer()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Store {self.engine} {self.location}>"


def _close_held(held: list) -> None:
    if held[0] is not None:
        _close_quietly(held[0])
        held[0] = None


def _close_quietly(conn: sa.Connection) -> None:
    with contextlib.suppress(Exception):
        conn.close()


def database_reason(exc: BaseException) -> str:
    """The driver's one-line message of a database error (never a password: URLs are not part of it)."""
    inner = getattr(exc, "orig", None) or exc
    text = str(inner).strip().splitlines()
    return text[0] if text else type(inner).__name__


def open_db(target: str | Path, *, migrate: bool = True) -> Store:
    """Open (creating if needed) the store at ``target`` (a file path, ``sqlite:///path`` or a
    ``postgresql://`` URL), with its schema brought up to date."""
    db = Store(target)
    if migrate:
        try:
            migrate_db(db)
        except BaseException:
            db.close()
            raise
    return db


def exists(target: str | Path) -> bool:
    """Whether a store is already there: the SQLite file exists, or the PostgreSQL database has the
    store's schema (the database itself is created by its administrator, the schema by ``init``)."""
    if not is_postgres(target):
        text = str(target).removeprefix("sqlite:///")
        return text == ":memory:" or Path(text).exists()
    with Store(target) as db:
        return schema_version(db) > 0


# ---------------------------------------------------------------------------------------- migrations


def schema_version(db: Store) -> int:
    if db.sqlite:
        return value(db, "PRAGMA user_version")
    if value(db, "SELECT to_regclass('assess_schema') IS NOT NULL AS present") != 1:
        return 0
    return value(db, "SELECT MAX(version) AS v FROM assess_schema", default=0) or 0


def migrate_db(db: Store) -> int:
    """Apply the migrations the store has not seen yet (all in one transaction); return the version."""
    current = schema_version(db)
    if current > len(MIGRATIONS):
        raise AssessError(
            f"{db.location}: the store has schema version {current}, written by a newer version "
            f"of the workbench (this one knows up to {len(MIGRATIONS)}); update the code"
        )
    if current == len(MIGRATIONS):
        return current
    if not db.sqlite and not owns_store(db):
        raise AssessError(
            f"{db.location}: the store's schema is at version {current} and this workbench needs "
            f"{len(MIGRATIONS)}, but the role {current_role(db)} does not own the store and cannot migrate it: run "
            "python -m assess init --db OWNER_URL with the owner role's URL (docs/deploy.md)"
        )
    with write(db):
        # Re-read under the write lock: another process may have migrated meanwhile.
        current = schema_version(db)
        if db.sqlite:
            for number, script in enumerate(MIGRATIONS[current:], start=current + 1):
                for statement in _statements(script):
                    db.raw.execute(statement)
                db.raw.execute(f"PRAGMA user_version = {number}")  # a pragma takes no parameters
        else:
            steps = migrations_from(current)
            for number, script in steps:
                db.raw.execute(script)  # a script without parameters: several statements at once
                run(db, "INSERT INTO assess_schema (version, applied_at) VALUES (:v, :at)", {"v": number, "at": now()})
            for role in app_roles(db) if steps else ():  # tables a migration added reach the app roles too
                grant_privileges(db, role)
    return schema_version(db)


# ----------------------------------------------------------------------------------- PostgreSQL roles
# The owner and the app role: store/roles.py grants the app role its privileges.


def app_roles(db: Store) -> list[str]:
    """The roles :func:`store.roles.grant_app_role` has given the app's privileges on this PostgreSQL store."""
    return column(
        db,
        "SELECT r.rolname AS name FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) AS a "
        "JOIN pg_roles r ON r.oid = a.grantee "
        "WHERE c.oid = to_regclass('assess_schema') AND a.privilege_type = 'SELECT' AND a.grantee <> c.relowner "
        "ORDER BY r.rolname",
    )


def grant_privileges(db: Store, role: str) -> None:
    """Inside a write transaction: set ``role``'s privileges on every table and sequence of the store."""

    who = quoted_identifier(role)
    tables = column(
        db,
        "SELECT c.relname AS name FROM pg_class c WHERE c.relnamespace = CAST(current_schema() AS regnamespace) "
        "AND c.relkind IN ('r', 'p') ORDER BY c.relname",
    )
    driver_sql(db, f"GRANT USAGE ON SCHEMA {quoted_identifier(value(db, 'SELECT current_schema() AS s'))} TO {who}")
    for table in tables:
        privileges = ["SELECT"]
        if table not in READ_ONLY:
            privileges.append("INSERT")
        if table in APP_UPDATES:
            privileges.append("UPDATE")
        if table in APP_DELETES:
            privileges.append("DELETE")
        driver_sql(db, f"REVOKE ALL ON TABLE {quoted_identifier(table)} FROM {who}")
        driver_sql(db, f"GRANT {', '.join(privileges)} ON TABLE {quoted_identifier(table)} TO {who}")
    driver_sql(
        db,
        f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA {quoted_identifier(value(db, 'SELECT current_schema() AS s'))} TO {who}",
    )


def quoted_identifier(name: str) -> str:
    """A PostgreSQL identifier, quoted (any name is safe inside double quotes once its own are doubled)."""
    return '"' + name.replace('"', '""') + '"'


def current_role(db: Store) -> str:
    return value(db, "SELECT current_user AS r")


def owns_store(db: Store) -> bool:
    """Whether the connected role may change the store's schema: on PostgreSQL, it has the privileges of
    the role owning the store's tables (their owner, a member of it or a superuser), or, in a database
    without the schema yet, it may create tables. Always true on SQLite, which has no roles. Such a role
    could also rewrite the label history."""
    if db.sqlite:
        return True
    owner = value(
        db,
        "SELECT pg_has_role(current_user, c.relowner, 'USAGE') AS owner FROM pg_class c "
        "WHERE c.oid = to_regclass('assess_schema')",
    )
    if owner is None:  # no schema yet
        return value(db, "SELECT has_schema_privilege(current_schema(), 'CREATE') AS may") == 1
    return owner == 1


def _statements(script: str) -> Iterator[str]:
    """Split a SQLite migration script into statements (triggers contain ';': sqlite3.complete_statement)."""
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                yield buffer
            buffer = ""
    if buffer.strip():
        yield buffer


# -------------------------------------------------------------------------------------- transactions

_WRITERS: dict[str, threading.Lock] = {}
_WRITERS_LOCK = threading.Lock()
_LOCK_WAIT = threading.local()  # seconds a write waits for the lock (lock_wait); unset: the busy timeout


@contextlib.contextmanager
def lock_wait(seconds: float) -> Iterator[None]:
    """Within the block, a write of this thread waits at most ``seconds`` for the store's write lock, then
    raises :class:`StoreBusy` with nothing written. For a key press: better a plain "not saved" the page can
    offer to retry than a press hanging for the busy timeout and ending in an error page."""
    before = getattr(_LOCK_WAIT, "seconds", None)
    _LOCK_WAIT.seconds = seconds
    try:
        yield
    finally:
        _LOCK_WAIT.seconds = before


def _busy(db: Store, waited: float) -> StoreBusy:
    return StoreBusy(f"{db.location}: another write held the store for {waited:.1f} s; nothing was saved", "busy")


@contextlib.contextmanager
def _in_turn(db: Store) -> Iterator[None]:
    """Queue this process's writers to one SQLite file on a Python lock before SQLite's write lock.

    Streamlit runs every session's script in a thread of one process. Threads that meet SQLite's
    lock wait in its busy handler, which sleeps up to 100 ms between tries, so under a burst of
    writes (crowd answers) the unlucky ones wait seconds; a lock handed over in order avoids that.
    Other processes are still kept apart by SQLite itself (BEGIN IMMEDIATE, busy timeout), and a
    writer that waits here longer than the busy timeout goes on to SQLite's lock as before.

    PostgreSQL queues the waiters of its advisory write lock itself and wakes them in turn, so it
    needs no such lock; nor does an in-memory store, which no other connection can write.
    """
    if not db.sqlite:
        yield
        return
    if db._file is _UNKNOWN:
        db._file = file_of(db)
    name = db._file
    if name is None:
        yield
        return
    with _WRITERS_LOCK:
        lock = _WRITERS.setdefault(name, threading.Lock())
    wait = getattr(_LOCK_WAIT, "seconds", None)
    queued = lock.acquire(timeout=BUSY_TIMEOUT_MS / 1000 if wait is None else wait)
    if not queued and wait is not None:
        raise _busy(db, wait)
    try:
        yield
    finally:
        if queued:
            lock.release()


@contextlib.contextmanager
def write(db: Store, *, references_checked: bool = False, lock_to_commit: bool = False) -> Iterator[Store]:
    """Run the block as one write transaction holding the store's write lock; ROLLBACK on any error.

    Nested use joins the outer transaction through a savepoint.

    ``references_checked=True`` is for bulk importers that verify, inside this same transaction
    (so under the write lock), that every row they insert refers to existing rows: SQLite's
    per-row foreign-key lookups are then switched off for the transaction, which roughly halves
    the cost of a 50,000-row import (PostgreSQL keeps its checks: they are cheap there). It has no
    effect when nested, so the checks then simply stay on.

    ``lock_to_commit=True`` is for an import's switch (``store.responses.switch_responses``): on PostgreSQL the
    transaction runs without the write lock and takes it only to commit. Its rows are invisible to every other
    session until that commit (MVCC), so writers go on meanwhile; a row another write changes meanwhile waits
    on PostgreSQL's row locks as any concurrent transaction would. SQLite has a single writer: there the whole
    transaction holds the lock as every other write does.
    """
    if db.staging:
        raise RuntimeError("a write inside a staging block would take no lock: write after the staging")
    if db.depth:
        name = f"assess_sp{db.depth}"
        driver_sql(db, f"SAVEPOINT {name}")
        db.depth += 1
        try:
            yield db
        except BaseException:
            with contextlib.suppress(Exception):
                driver_sql(db, f"ROLLBACK TO SAVEPOINT {name}")
                driver_sql(db, f"RELEASE SAVEPOINT {name}")
            raise
        else:
            driver_sql(db, f"RELEASE SAVEPOINT {name}")
        finally:
            db.depth -= 1
        return
    started = time.monotonic()
    with _in_turn(db):
        checks_off = references_checked and db.sqlite
        if checks_off:
            driver_sql(db, "PRAGMA foreign_keys = OFF")
        try:
            late = lock_to_commit and not db.sqlite
            db.writing = True
            _begin(db, started, late=late)
            db.depth = 1
            try:
                yield db
                if late:
                    driver_sql(db, f"SELECT pg_advisory_xact_lock({WRITE_LOCK_KEY})")
            except BaseException:
                rollback(db)
                raise
            else:
                try:
                    driver_sql(db, "COMMIT")
                except sa_exc.DBAPIError as exc:
                    rollback(db)
                    if _connection_lost(exc):
                        raise StoreUnavailable(
                            f"{db.location}: the connection to the database broke while committing; this change "
                            f"may not have been saved: look before repeating it ({database_reason(exc)})"
                        ) from None
                    raise
            finally:
                db.depth = 0
        finally:
            db.writing = False
            if checks_off:
                driver_sql(db, "PRAGMA foreign_keys = ON")
            db.release()


def _begin(db: Store, started: float, *, late: bool = False) -> None:
    wait = getattr(_LOCK_WAIT, "seconds", None)
    statements = ["BEGIN IMMEDIATE"] if db.sqlite else ["BEGIN", f"SELECT pg_advisory_xact_lock({WRITE_LOCK_KEY})"]
    if late:  # PostgreSQL's lock taken just before COMMIT (write(lock_to_commit=True))
        wait, statements = None, ["BEGIN"]
    if wait is not None:  # what is left of the wait after this process's own queue (_in_turn)
        left_ms = max(1, int((wait - (time.monotonic() - started)) * 1000))
        if db.sqlite:
            driver_sql(db, f"PRAGMA busy_timeout = {left_ms}")
        else:
            statements = ["BEGIN", f"SET LOCAL lock_timeout = {left_ms}", statements[1], "SET LOCAL lock_timeout = 0"]
    try:
        _locked(db, statements)
    except sa_exc.OperationalError as exc:
        if wait is None or not _lock_refused(exc):
            raise
        raise _busy(db, time.monotonic() - started) from None
    finally:
        if wait is not None and db.sqlite:
            driver_sql(db, f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


def _lock_refused(exc: sa_exc.DBAPIError) -> bool:
    """SQLite's "database is locked" after its busy timeout; PostgreSQL's lock_timeout (55P03)."""
    orig = getattr(exc, "orig", None)
    if isinstance(orig, sqlite3.Error):
        return "locked" in str(orig) or "busy" in str(orig)
    return getattr(orig, "sqlstate", None) == "55P03"


def _locked(db: Store, statements: list[str]) -> None:
    for attempt in (1, 2):
        begun = False
        try:
            db.ensure_open()
            for statement in statements:
                driver_sql(db, statement)
                begun = True
            return
        except StoreUnavailable as down:
            raise _unreachable(db, down.reason) from None
        except sa_exc.DBAPIError as exc:
            if begun:  # BEGIN went through but the lock did not (a timeout, a cancel): end that transaction
                rollback(db)
            # Nothing has been written yet: a connection that broke since its last use (a database
            # restart) is replaced once; a second failure is reported.
            if attempt == 1 and _connection_lost(exc):
                try:
                    db.reconnect()
                except StoreUnavailable as down:
                    raise _unreachable(db, down.reason) from None
                continue
            if _lock_refused(exc) and getattr(_LOCK_WAIT, "seconds", None) is not None:
                raise
            if _connection_lost(exc) or isinstance(exc, sa_exc.OperationalError) and not db.sqlite:
                raise _unreachable(db, database_reason(exc)) from None
            raise


def _unreachable(db: Store, reason: str) -> StoreUnavailable:
    return StoreUnavailable(f"{db.location}: the database cannot be reached; nothing was saved ({reason})", reason)


def rollback(db: Store) -> None:
    try:
        driver_sql(db, "ROLLBACK")
    except (sa_exc.DBAPIError, sa_exc.PendingRollbackError):  # the latter: the connection broke mid-transaction
        if not db.sqlite:
            db.reconnect()  # the server ended the transaction (and the connection) itself


def driver_sql(db: Store, statement: str) -> None:
    """A statement without parameters, straight to the driver (transaction control, pragmas)."""
    db.sa.exec_driver_sql(statement)


def _connection_lost(exc: sa_exc.DBAPIError) -> bool:
    if exc.connection_invalidated:
        return True
    orig = getattr(exc, "orig", None)
    if orig is None or isinstance(orig, sqlite3.Error):
        return False
    import psycopg

    return isinstance(orig, psycopg.OperationalError | psycopg.InterfaceError) and bool(
        getattr(orig, "sqlstate", None) in (None, "57P01", "57P02", "57P03", "08000", "08003", "08006")
    )


@contextlib.contextmanager
def snapshot(db: Store) -> Iterator[Store]:
    """Read the block's queries from one consistent state of the store (a read-only transaction: SQLite's
    WAL snapshot, PostgreSQL's REPEATABLE READ), while other processes go on writing."""
    if db.depth:
        yield db
        return
    driver_sql(db, "BEGIN" if db.sqlite else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    db.depth = 1
    try:
        if db.sqlite:
            driver_sql(db, "SELECT 1 FROM sqlite_master LIMIT 1")  # SQLite takes its snapshot at the first read
        yield db
    finally:
        db.depth = 0
        rollback(db)
        db.release()


def in_transaction(db: Store) -> bool:
    return db.depth > 0


# ------------------------------------------------------------------------------------------- queries
# The one way the store reads and writes rows: SQL both engines accept, with named parameters
# (``:name``, a dict). A literal colon followed by a word character inside the SQL text (a time
# '00:00' in a string literal) must be written ``\:``; PostgreSQL casts (``x::text``) are not used.


@functools.lru_cache(maxsize=4096)
def _text(sql: str) -> sa.TextClause:
    return sa.text(sql)


def _execute(db: Store, sql: str, params: Mapping | None, *, read: bool) -> sa.CursorResult:
    if params is not None and not isinstance(params, Mapping):
        raise TypeError(f"store queries take named parameters (a dict), got {type(params).__name__}: {sql[:80]}")
    try:
        db.ensure_open()
        return db.sa.execute(_text(sql), dict(params or {}))
    except StoreUnavailable as down:
        raise _unreachable(db, down.reason) from None
    except sa_exc.DBAPIError as exc:
        if read and not db.depth and _connection_lost(exc):
            # A read outside any transaction is safe to repeat on a new connection.
            try:
                db.reconnect()
                return db.sa.execute(_text(sql), dict(params or {}))
            except StoreUnavailable as down:
                raise _unreachable(db, down.reason) from None
            except sa_exc.DBAPIError as again:
                if _connection_lost(again):
                    raise _unreachable(db, database_reason(again)) from None
                raise
        if _connection_lost(exc):
            raise StoreUnavailable(
                f"{db.location}: the connection to the database broke; this change was NOT saved ({database_reason(exc)})"
            ) from None
        raise


_TRACERS: list[Callable[[str], None]] = []


@contextlib.contextmanager
def traced(callback: Callable[[str], None]) -> Iterator[None]:
    """Within the block, call ``callback(sql)`` with every statement any store of this process runs, on either
    engine and on either path (SQLAlchemy's, or SQLite's own cursor): for tests and diagnostics that must see
    what a code path reads."""

    def on_execute(_conn, _cursor, statement, *_args) -> None:
        callback(statement)

    event.listen(sa.engine.Engine, "before_cursor_execute", on_execute)
    _TRACERS.append(callback)
    try:
        yield
    finally:
        _TRACERS.remove(callback)
        event.remove(sa.engine.Engine, "before_cursor_execute", on_execute)


def _sqlite_cursor(db: Store, sql: str, params: Mapping | None) -> sqlite3.Cursor | None:
    """SQLite: run ``sql`` on the driver's own connection (sqlite3 reads the same ``:name`` parameters), or
    None where SQLAlchemy must (PostgreSQL; a statement with an escaped ``\\:``). The store's connection is in
    autocommit mode with transactions begun by :func:`write` on this same connection, so both paths see and
    join the same transaction. SQLAlchemy's per-statement work (execution context, result metadata, row
    mappings) was most of a statement's cost on a key press: about 10% of an app process's CPU under load
    (tests/benchmarks/bench_load.py). Errors are raised as SQLAlchemy's, as for every other statement."""
    if not db.sqlite or "\\:" in sql:
        return None
    if params is not None and not isinstance(params, Mapping):
        raise TypeError(f"store queries take named parameters (a dict), got {type(params).__name__}: {sql[:80]}")
    for tracer in _TRACERS:
        tracer(sql)
    try:
        return db.raw.execute(sql, params if params is not None else {})
    except sqlite3.Error as exc:
        raise _wrapped(sql, exc) from exc


def _sqlite_dicts(cursor: sqlite3.Cursor) -> Iterator[dict]:
    names = [d[0] for d in cursor.description or ()]
    for found in cursor:
        yield dict(zip(names, found, strict=True))


def _plain(db: Store, mapping) -> dict:
    out = dict(mapping)
    if not db.sqlite:
        for key, item in out.items():
            if isinstance(item, bool):
                out[key] = int(item)
            elif isinstance(item, Decimal):
                out[key] = (
                    int(item) if item == item.to_integral_value() and item.as_tuple().exponent >= 0 else float(item)
                )
    return out


def rows(db: Store, sql: str, params: Mapping | None = None) -> list[dict]:
    """Every row of ``sql`` as a dict keyed by column name."""
    cursor = _sqlite_cursor(db, sql, params)
    if cursor is not None:
        return list(_sqlite_dicts(cursor))
    try:
        return [_plain(db, m) for m in _execute(db, sql, params, read=True).mappings()]
    finally:
        db.release()


def each(db: Store, sql: str, params: Mapping | None = None) -> Iterator[dict]:
    """The rows of ``sql`` one at a time (for large results), each a dict keyed by column name."""
    cursor = _sqlite_cursor(db, sql, params)
    if cursor is not None:
        yield from _sqlite_dicts(cursor)
        return
    db.busy += 1
    try:
        for m in _execute(db, sql, params, read=True).mappings():
            yield _plain(db, m)
    finally:
        db.busy = max(0, db.busy - 1)
        db.release()


def each_tuple(db: Store, sql: str, params: Mapping | None = None) -> Iterator[tuple]:
    """:func:`each` as plain tuples in the SELECT's column order, without a dict per row: for reads of a million rows
    (a campaign's rankings), where building the dicts cost more than SQLite's reading them."""
    cursor = _sqlite_cursor(db, sql, params)
    if cursor is not None:
        yield from cursor
        return
    for found in each(db, sql, params):
        yield tuple(found.values())


def stream(db: Store, sql: str, params: Mapping | None = None, *, size: int = 2000) -> Iterator[dict]:
    """:func:`each` whose rows never all sit in memory on PostgreSQL either: psycopg's ``Cursor.stream`` takes
    them from the server in chunks of ``size`` (libpq's chunked or single-row mode; it needs no transaction,
    unlike a server-side cursor, which this store's autocommit connection would refuse). On SQLite
    :func:`each` already reads row by row."""
    if db.sqlite:
        yield from each(db, sql, params)
        return
    if params is not None and not isinstance(params, Mapping):
        raise TypeError(f"store queries take named parameters (a dict), got {type(params).__name__}: {sql[:80]}")
    import psycopg

    db.ensure_open()
    compiled = _text(sql).compile(dialect=db.sa.dialect)
    for tracer in _TRACERS:
        tracer(sql)
    db.busy += 1
    try:
        cursor = db.raw.cursor()
        try:
            names = None
            for record in cursor.stream(str(compiled), compiled.construct_params(dict(params or {})), size=size):
                names = names or [d.name for d in cursor.description]
                yield _plain(db, dict(zip(names, record, strict=True)))
        finally:
            cursor.close()
    except psycopg.Error as exc:  # raised as SQLAlchemy's, as for every other statement
        raise sa_exc.DBAPIError(sql, dict(params or {}), exc) from exc
    finally:
        db.busy = max(0, db.busy - 1)
        db.release()


def tuples(db: Store, sql: str, params: Mapping | None = None) -> tuple[list[str], list[tuple]]:
    """A bulk read: the column names of ``sql`` and its rows as plain tuples, without a dict per row. On
    SQLite the driver's own cursor runs it (sqlite3 reads the same ``:name`` parameters): reading
    500,000 labels this way costs about a third of :func:`each`."""
    cursor = _sqlite_cursor(db, sql, params)
    if cursor is not None:
        try:
            return [d[0] for d in cursor.description], cursor.fetchall()
        except sqlite3.Error as exc:
            raise _wrapped(sql, exc) from exc
    try:
        result = _execute(db, sql, params, read=True)
        return list(result.keys()), [tuple(_plain(db, m).values()) for m in result.mappings()]
    finally:
        db.release()


def columns(db: Store, sql: str, params: Mapping | None = None) -> dict[str, tuple]:
    """A bulk read (:func:`tuples`) laid out as columns keyed by column name, ``{name: (values in row order)}``."""
    names, data = tuples(db, sql, params)
    if not data:
        return dict.fromkeys(names, ())
    return dict(zip(names, zip(*data), strict=True))


def row(db: Store, sql: str, params: Mapping | None = None) -> dict | None:
    """The first row of ``sql`` as a dict, or None when there is none."""
    cursor = _sqlite_cursor(db, sql, params)
    if cursor is not None:
        return _sqlite_first(cursor)
    try:
        first = _execute(db, sql, params, read=True).mappings().first()
    finally:
        db.release()
    return None if first is None else _plain(db, first)


def _sqlite_first(cursor: sqlite3.Cursor) -> dict | None:
    """The first row of a SQLite cursor as a dict (None when there is none); the cursor is closed after it, so a
    RETURNING statement's other rows, like a read's, are neither fetched nor kept."""
    try:
        found = cursor.fetchone()
        if found is None:
            return None
        return dict(zip([d[0] for d in cursor.description], found, strict=True))
    finally:
        cursor.close()


def value(db: Store, sql: str, params: Mapping | None = None, default: Any = None) -> Any:
    """The single column of the first row of ``sql`` (``SELECT COUNT(*) AS n ...``); ``default`` when no row."""
    first = row(db, sql, params)
    if first is None:
        return default
    if len(first) != 1:
        raise ValueError(f"value() needs a query with one column, got {', '.join(first)}")
    return next(iter(first.values()))


def column(db: Store, sql: str, params: Mapping | None = None) -> list:
    """The single column of every row of ``sql``, as a list."""
    out = []
    for r in rows(db, sql, params):
        if len(r) != 1:
            raise ValueError(f"column() needs a query with one column, got {', '.join(r)}")
        out.append(next(iter(r.values())))
    return out


def frame(db: Store, sql: str, params: Mapping | None = None):
    """The rows of ``sql`` as a pandas DataFrame (columns as the query names them, even with no rows)."""
    pd = lazylibs.pandas()

    try:
        result = _execute(db, sql, params, read=True)
        return pd.DataFrame([_plain(db, m) for m in result.mappings()], columns=list(result.keys()))
    finally:
        db.release()


def run(db: Store, sql: str, params: Mapping | None = None) -> int:
    """Execute one writing statement; return the number of rows it changed."""
    cursor = _sqlite_cursor(db, sql, params)
    if cursor is not None:
        return cursor.rowcount
    try:
        return _execute(db, sql, params, read=False).rowcount
    finally:
        db.release()


def returning(db: Store, sql: str, params: Mapping | None = None) -> dict | None:
    """Execute one writing statement with a RETURNING clause; its first returned row (None if none)."""
    cursor = _sqlite_cursor(db, sql, params)
    if cursor is not None:
        return _sqlite_first(cursor)
    try:
        first = _execute(db, sql, params, read=False).mappings().first()
    finally:
        db.release()
    return None if first is None else _plain(db, first)


def run_many(db: Store, sql: str, seq: Iterable[Mapping]) -> None:
    """Execute one writing statement for every parameter dict of ``seq`` (streamed in chunks)."""
    chunk: list[dict] = []
    seq = iter(seq)
    for params in seq:
        if not isinstance(params, Mapping):
            raise TypeError(f"run_many takes named parameters (dicts), got {type(params).__name__}")
        chunk.append(params)
        if len(chunk) >= CHUNK:
            _execute_many(db, sql, chunk)
            chunk = []
    if chunk:
        _execute_many(db, sql, chunk)
    db.release()


def _execute_many(db: Store, sql: str, chunk: list[dict]) -> None:
    if db.sqlite and "\\:" not in sql:
        # sqlite3 reads the same ``:name`` parameters from dicts itself: the driver's executemany skips
        # SQLAlchemy's per-parameter work, which made bulk imports about 1.5x slower. Its errors are
        # raised as SQLAlchemy's, as for every other statement.
        for tracer in _TRACERS:
            tracer(sql)
        try:
            db.raw.executemany(sql, chunk)
        except sqlite3.Error as exc:
            raise _wrapped(sql, exc) from exc
        return
    try:
        db.sa.execute(_text(sql), chunk)
    except sa_exc.DBAPIError as exc:
        if _connection_lost(exc):
            raise StoreUnavailable(
                f"{db.location}: the connection to the database broke; this change was NOT saved ({database_reason(exc)})"
            ) from None
        raise


def _wrapped(sql: str, exc: sqlite3.Error) -> sa_exc.DBAPIError:
    kind = {
        sqlite3.IntegrityError: sa_exc.IntegrityError,
        sqlite3.OperationalError: sa_exc.OperationalError,
        sqlite3.ProgrammingError: sa_exc.ProgrammingError,
    }.get(type(exc), sa_exc.DatabaseError)
    return kind(sql, None, exc)


def is_database_error(exc: BaseException) -> bool:
    """True for an error of the database itself (a file that is not a database, a corrupt or locked one,
    a refused statement), on either engine."""
    return isinstance(exc, sa_exc.DBAPIError | sqlite3.DatabaseError | StoreUnavailable)


def file_of(db: Store) -> str | None:
    """The path of the SQLite file the store lives in; None for an in-memory or a PostgreSQL store."""
    if not db.sqlite:
        return None
    return db.raw.execute("PRAGMA database_list").fetchone()[2] or None


_DB_CLOCK_SQLITE = "SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now', :offset) AS t"
_DB_CLOCK_POSTGRES = (
    "SELECT to_char((clock_timestamp() + make_interval(secs => :seconds)) AT TIME ZONE 'UTC', "
    '\'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"\') AS t'
)


def db_clock(db: Store, seconds_from_now: float = 0.0) -> str:
    """The database's clock (not this process's), ``seconds_from_now`` ahead, in the store's timestamp format
    (:func:`now`): what every process sharing the store agrees on, whatever its own clock says. Shared jobs'
    leases and heartbeats are judged by it (store/jobs.py). SQLite's is the clock of the machine holding the
    file (its ``strftime('now')``), PostgreSQL's the server's ``clock_timestamp()``."""
    seconds = float(seconds_from_now)
    if db.sqlite:
        return value(db, _DB_CLOCK_SQLITE, {"offset": f"{seconds:+.3f} seconds"})
    return value(db, _DB_CLOCK_POSTGRES, {"seconds": seconds})
