"""The SQLAlchemy engine of each database, one per process, and the SQLite connection's setup (pragmas, WAL,
the two functions PostgreSQL has built in: ``string_agg`` and ``int_prefix``)."""

from __future__ import annotations

import re
import sqlite3
import threading
import time

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.pool import NullPool

BUSY_TIMEOUT_MS = 30_000

_ENGINES: dict[str, sa.Engine] = {}
_ENGINES_LOCK = threading.Lock()


def engine_for(url: sa.URL) -> sa.Engine:
    key = url.render_as_string(hide_password=False)
    with _ENGINES_LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            if url.get_backend_name() == "sqlite":
                # A connection per open store, closed with it (as sqlite3 itself): nothing pooled.
                engine = sa.create_engine(
                    url,
                    isolation_level="AUTOCOMMIT",
                    poolclass=NullPool,
                    # Prepared statements kept per connection: the app's statements, each compiled once (sqlite3
                    # keeps 128 by default, fewer than the app runs).
                    connect_args={
                        "timeout": BUSY_TIMEOUT_MS / 1000,
                        "check_same_thread": False,
                        "cached_statements": 1024,
                    },
                )
                event.listen(engine, "connect", _prepare_sqlite)
            else:
                engine = sa.create_engine(
                    url,
                    isolation_level="AUTOCOMMIT",  # transactions are begun explicitly by write()
                    # No ping per checkout: a connection the server closed (a restart) fails its first
                    # statement, which store.db repeats on a new one when nothing can have been written.
                    pool_size=5,
                    max_overflow=15,
                    pool_timeout=30,
                    connect_args={"connect_timeout": 10, "application_name": "assess"},
                )
            _ENGINES[key] = engine
        return engine


def _int_prefix(value) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    match = re.match(r"\s*([+-]?\d{1,18})", str(value))
    return int(match.group(1)) if match else 0


class _StringAgg:
    def __init__(self):
        self.parts: list[str] = []
        self.sep = ","

    def step(self, value, sep):
        if value is not None:
            self.parts.append(str(value))
            self.sep = sep

    def finalize(self):
        return self.sep.join(self.parts) if self.parts else None


def _prepare_sqlite(dbapi_conn, _record) -> None:
    dbapi_conn.isolation_level = None  # autocommit: write() issues BEGIN IMMEDIATE itself
    for pragma in (
        f"busy_timeout = {BUSY_TIMEOUT_MS}",
        "foreign_keys = ON",
        "synchronous = NORMAL",
        "cache_size = -65536",  # 64 MiB: bulk imports touch several B-trees at once
        "temp_store = MEMORY",
    ):
        dbapi_conn.execute(f"PRAGMA {pragma}")
    if dbapi_conn.execute("PRAGMA database_list").fetchone()[2]:  # a file, not :memory:
        _enter_wal(dbapi_conn)
    dbapi_conn.create_function("int_prefix", 1, _int_prefix, deterministic=True)
    dbapi_conn.create_aggregate("string_agg", 2, _StringAgg)


def _enter_wal(dbapi_conn) -> None:
    """Switch the file to write-ahead logging, waiting for other processes as every other statement does.

    Switching needs the file to itself for a moment, and SQLite answers "database is locked" at once
    (without the busy handler) when another process holds it: several processes opening one new
    store at the same moment hit this. So the switch is tried again until the busy timeout.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    pause = 0.005
    while True:
        try:
            dbapi_conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)
