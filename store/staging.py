"""Staged imports: temporary tables filled block by block, then one short switch.

A large import writes its rows into temporary tables of its own connection, block by block and without
the write lock (a temporary table is private to its session: SQLite writes it in a file of its own,
PostgreSQL keeps it out of every other session), then copies them into the store's tables in one short
write transaction (the switch). Until then no other connection sees a row of it; a failed import drops
the tables, a killed one loses them with its connection. docs/architecture.md, "Large imports".
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping

from sqlalchemy import exc as sa_exc

from store.db import Store, driver_sql, rollback, value, write


@contextlib.contextmanager
def staging(db: Store, tables: Mapping[str, str], *, clustered: Iterable[str] = ()) -> Iterator[None]:
    """Temporary tables ``{name: column definitions}`` for the block, on the store's one connection (a
    PostgreSQL store keeps its pooled connection until the end), dropped after it. SQLite keeps them in a
    temporary file (the store runs with ``temp_store = MEMORY``, and a 70 MB file must not be held in memory),
    except inside an outer transaction, where the setting cannot change (the demo: small).

    ``clustered``: tables of short rows whose rows SQLite keeps in their primary key's B-tree (WITHOUT ROWID),
    so that the switch reads them in key order from one B-tree instead of looking each row up from its key's
    index (a third of a qrels switch)."""
    db.busy += 1
    memory = None
    try:
        if db.sqlite and not db.depth:
            memory = int(value(db, "PRAGMA temp_store"))
            driver_sql(db, "PRAGMA temp_store = FILE")  # (this drops the connection's temporary tables: there are none)
        elif not db.sqlite and not db.depth:
            # the switch sorts the staged rows into key order: in memory rather than in spill files
            driver_sql(db, "SET work_mem = '64MB'")
            with contextlib.suppress(sa_exc.DBAPIError):  # refused once the session has used temporary tables
                driver_sql(db, "SET temp_buffers = '64MB'")
        for name, definition in tables.items():
            driver_sql(db, f"DROP TABLE IF EXISTS {_temporary(db, name)}")
            rowid = " WITHOUT ROWID" if db.sqlite and name in clustered else ""
            driver_sql(db, f"CREATE TEMPORARY TABLE {name} ({definition}){rowid}")
        yield
    finally:
        for name in tables:
            with contextlib.suppress(Exception):  # a broken connection took them with it
                driver_sql(db, f"DROP TABLE IF EXISTS {_temporary(db, name)}")
        if memory is not None:
            with contextlib.suppress(Exception):
                driver_sql(db, f"PRAGMA temp_store = {memory}")
        elif not db.sqlite and not db.depth:
            with contextlib.suppress(Exception):
                driver_sql(db, "RESET work_mem")
        db.busy -= 1
        db.release()


def _temporary(db: Store, name: str) -> str:
    """The name of a temporary table, qualified so that a DROP can never reach a store table of that name."""
    return f"temp.{name}" if db.sqlite else f"pg_temp.{name}"


@contextlib.contextmanager
def stage_block(db: Store) -> Iterator[Store]:
    """One block of a staged import: a transaction of its own without the write lock (its reads see one
    state of the store; its writes go to the staging tables only: :func:`write` is refused inside). Inside
    an outer transaction it joins it through a savepoint (a refused statement, such as a run's repeated line
    meeting a staging table's key, then leaves PostgreSQL's transaction usable)."""
    if db.depth:
        with write(db):
            yield db
        return
    driver_sql(db, "BEGIN")
    db.depth, db.staging = 1, True
    try:
        yield db
    except BaseException:
        db.depth, db.staging = 0, False
        rollback(db)
        raise
    db.depth, db.staging = 0, False
    driver_sql(db, "COMMIT")
