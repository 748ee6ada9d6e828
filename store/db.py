"""Opening the database, migrations and the one write-transaction helper.

Every write in the workbench goes through :func:`write`, which takes SQLite's write lock up
front (``BEGIN IMMEDIATE``) so that two processes never deadlock on a lock upgrade, commits on
success and rolls everything back on any exception: a refused input or a crash leaves the
store as it was.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from assess.errors import AssessError
from store.schema import MIGRATIONS

BUSY_TIMEOUT_MS = 30_000


def now() -> str:
    """UTC time with milliseconds, the timestamp format used in every table."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def open_db(path: str | Path, *, migrate: bool = True) -> Database:
    """Open (creating if needed) the store at ``path``: WAL, foreign keys, busy timeout, schema up to date."""
    path = Path(path)
    if str(path) != ":memory:":
        path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    if str(path) != ":memory:":
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA cache_size = -65536")  # 64 MiB: bulk imports touch several B-trees at once
    conn.execute("PRAGMA temp_store = MEMORY")
    db = Database(conn, execute_plugins=False)
    if migrate:
        migrate_db(db)
    return db


def schema_version(db: Database) -> int:
    return value(db, "PRAGMA user_version")


def migrate_db(db: Database) -> int:
    """Apply the migrations the file has not seen yet, each in its own transaction; return the version."""
    current = schema_version(db)
    if current > len(MIGRATIONS):
        raise AssessError(
            f"{_file_of(db)}: the store has schema version {current}, written by a newer version "
            f"of the workbench (this one knows up to {len(MIGRATIONS)}); update the code"
        )
    if current == len(MIGRATIONS):
        return current
    with write(db):
        # Re-read under the write lock: another process may have migrated meanwhile.
        current = schema_version(db)
        for number, script in enumerate(MIGRATIONS[current:], start=current + 1):
            for statement in _statements(script):
                run(db, statement)
            run(db, f"PRAGMA user_version = {number}")  # a pragma takes no parameters
    return schema_version(db)


def _file_of(db: Database) -> str:
    return row(db, "PRAGMA database_list")["file"] or ":memory:"


def _statements(script: str) -> Iterator[str]:
    """Split a migration script into statements (triggers contain ';' so use sqlite3.complete_statement)."""
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                yield buffer
            buffer = ""
    if buffer.strip():
        yield buffer


@contextlib.contextmanager
def write(db: Database, *, references_checked: bool = False) -> Iterator[Database]:
    """Run the block as one write transaction (BEGIN IMMEDIATE … COMMIT, ROLLBACK on any error).

    Nested use joins the outer transaction through a savepoint.

    ``references_checked=True`` is for bulk importers that verify, inside this same transaction
    (so under the write lock), that every row they insert refers to existing rows: SQLite's
    per-row foreign-key lookups are then switched off for the transaction, which roughly halves
    the cost of a 50,000-row import. It has no effect when nested (SQLite ignores the pragma
    inside a transaction), so the checks then simply stay on.
    """
    conn = db.conn
    if conn.in_transaction:
        with db.atomic():
            yield db
        return
    if references_checked:
        conn.execute("PRAGMA foreign_keys = OFF")
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        else:
            conn.execute("COMMIT")
    finally:
        if references_checked:
            if conn.in_transaction:  # a failed COMMIT: the pragma below would be ignored otherwise
                conn.execute("ROLLBACK")
            conn.execute("PRAGMA foreign_keys = ON")


# ------------------------------------------------------------------------------------------- queries
# The one way the store reads rows: by column name. Every query is parameterised (``?`` marks), so
# the SQL carries no data and stays portable to a second engine.


def rows(db: Database, sql: str, params: Sequence | Mapping = ()) -> list[dict]:
    """Every row of ``sql`` as a dict keyed by column name."""
    return list(db.query(sql, params))


def each(db: Database, sql: str, params: Sequence | Mapping = ()) -> Iterator[dict]:
    """The rows of ``sql`` one at a time (for large results), each a dict keyed by column name."""
    return db.query(sql, params)


def row(db: Database, sql: str, params: Sequence | Mapping = ()) -> dict | None:
    """The first row of ``sql`` as a dict, or None when there is none."""
    return next(iter(db.query(sql, params)), None)


def value(db: Database, sql: str, params: Sequence | Mapping = (), default: Any = None) -> Any:
    """The single column of the first row of ``sql`` (``SELECT COUNT(*) AS n ...``); ``default`` when no row."""
    first = row(db, sql, params)
    if first is None:
        return default
    if len(first) != 1:
        raise ValueError(f"value() needs a query with one column, got {', '.join(first)}")
    return next(iter(first.values()))


def column(db: Database, sql: str, params: Sequence | Mapping = ()) -> list:
    """The single column of every row of ``sql``, as a list."""
    out = []
    for r in db.query(sql, params):
        if len(r) != 1:
            raise ValueError(f"column() needs a query with one column, got {', '.join(r)}")
        out.append(next(iter(r.values())))
    return out


def frame(db: Database, sql: str, params: Sequence | Mapping = ()):
    """The rows of ``sql`` as a pandas DataFrame (columns as the query names them, even with no rows)."""
    import pandas as pd

    return pd.read_sql_query(sql, db.conn, params=params)


def run(db: Database, sql: str, params: Sequence | Mapping = ()) -> int:
    """Execute one writing statement; return the number of rows it changed."""
    return db.execute(sql, params).rowcount


def run_many(db: Database, sql: str, seq: Iterable[Sequence | Mapping]) -> None:
    """Execute one writing statement for every parameter tuple of ``seq``."""
    db.conn.executemany(sql, seq)


def is_database_error(exc: BaseException) -> bool:
    """True for SQLite's own errors (a file that is not a database, a corrupt or locked one)."""
    return isinstance(exc, sqlite3.DatabaseError)


def file_of(db: Database) -> str | None:
    """The path of the file the store lives in; None for an in-memory store."""
    return row(db, "PRAGMA database_list")["file"] or None
