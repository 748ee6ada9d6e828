"""Moving a whole store between engines (SQLite ↔ PostgreSQL, or a file to another file).

Every table is copied row by row with its own keys, the history included (its ids and timestamps
unchanged), in one write transaction on the target: a failure leaves the target as it was. The
target must be empty (freshly initialised): a copy never merges into existing labels. Triggers
that would write history for the copied rows are switched off for the copy on the target (the
history is copied as it is), and foreign keys are checked at commit, not row by row (turns refer
to their parent turns, which may come later).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import sqlalchemy as sa

from assess.errors import AssessError
from store.db import Store, column, each, run, run_many, snapshot, value, write

# Tables the copy leaves out: each engine keeps its own record of the migrations it applied.
_OWN_TABLES = {"assess_schema", "sqlite_sequence", "sqlite_stat1"}


def _tables(db: Store) -> list[sa.Table]:
    """The store's tables, parents before children (foreign keys), as SQLAlchemy reflects them."""
    meta = sa.MetaData()
    with warnings.catch_warnings():  # expression indexes are not reflected; only columns and keys are used
        warnings.simplefilter("ignore", sa.exc.SAWarning)
        meta.reflect(bind=db.sa)
    return [t for t in meta.sorted_tables if t.name not in _OWN_TABLES]


def counts(db: Store) -> dict[str, int]:
    """Rows per table (the tables both engines have)."""
    return {t.name: value(db, f'SELECT COUNT(*) AS n FROM "{t.name}"') for t in _tables(db)}


def _columns(db: Store, table: sa.Table) -> list[str]:
    names = [c.name for c in table.columns]
    if table.name == "conversations" and "rowid" not in names:
        names.insert(0, "rowid")  # SQLite's implicit one: the order conversations were imported in
    return names


def _order(table: sa.Table, names: list[str]) -> str:
    keys = [c.name for c in table.primary_key.columns] or names
    if table.name == "conversations":
        keys = ["rowid"]
    return ", ".join(f'"{k}"' for k in keys)


def copy_store(source: Store, target: Store) -> dict[str, int]:
    """Copy every row of ``source`` into the empty store ``target``; return the rows copied per table."""
    if source.target == target.target:
        raise AssessError(f"{target.location}: the source and the target are the same store")
    target_tables = {t.name: t for t in _tables(target)}
    copied: dict[str, int] = {}
    with snapshot(source), write(target, references_checked=True):
        _refuse_busy(target)  # under the target's write lock: nobody fills it meanwhile
        with _history_triggers_off(target):
            if not target.sqlite:
                run(target, "SET CONSTRAINTS ALL DEFERRED")
            for table in _tables(source):
                if table.name not in target_tables:
                    raise AssessError(f"{target.location}: has no table {table.name}; is it an older version?")
                names = _columns(source, table)
                wanted = [c.name for c in target_tables[table.name].columns]
                if table.name == "conversations" and target.sqlite:
                    wanted = ["rowid", *wanted]
                missing = [n for n in names if n not in wanted]
                if missing:
                    raise AssessError(f"{target.location}: table {table.name} has no column {', '.join(missing)}")
                listed = ", ".join(f'"{n}"' for n in names)
                placeholders = ", ".join(f":c{i}" for i in range(len(names)))
                insert = f'INSERT INTO "{table.name}" ({listed}) VALUES ({placeholders})'
                select = f'SELECT {listed} FROM "{table.name}" ORDER BY {_order(table, names)}'
                counter = _Counter()
                run_many(
                    target,
                    insert,
                    counter.count({f"c{i}": r[n] for i, n in enumerate(names)} for r in each(source, select)),
                )
                copied[table.name] = counter.n
        if not target.sqlite:
            _advance_identities(target)
    return copied


def _refuse_busy(target: Store) -> None:
    busy = {name: n for name, n in counts(target).items() if n}
    if busy:
        listed = ", ".join(f"{name}: {n} rows" for name, n in sorted(busy.items())[:3])
        if len(busy) > 3:
            listed += f", and {len(busy) - 3} more tables"
        raise AssessError(
            f"{target.location}: the target store is not empty ({listed}); copy only into a new, empty store"
        )


class _Counter:
    def __init__(self):
        self.n = 0

    def count(self, items: Iterator) -> Iterator:
        for item in items:
            self.n += 1
            yield item


class _history_triggers_off:
    """Within the target's transaction: no trigger fires for the copied rows (the history is copied)."""

    def __init__(self, db: Store):
        self.db = db
        self.saved: list[str] = []

    def __enter__(self):
        if self.db.sqlite:
            for name, sql in (
                (r["name"], r["sql"])
                for r in each(self.db, "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name")
            ):
                self.saved.append(sql)
                self.db.raw.execute(f'DROP TRIGGER "{name}"')
        else:
            for table in column(
                self.db,
                "SELECT DISTINCT c.relname AS t FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid "
                "WHERE NOT g.tgisinternal AND c.relnamespace = to_regnamespace(current_schema()) ORDER BY t",
            ):
                self.saved.append(table)
                run(self.db, f'ALTER TABLE "{table}" DISABLE TRIGGER USER')
        return self

    def __exit__(self, *exc):
        if exc[0] is not None:
            return False  # the transaction rolls back, which restores them
        if not self.db.sqlite:
            run(self.db, "SET CONSTRAINTS ALL IMMEDIATE")  # check the copied references now (none may pend)
        for item in self.saved:
            if self.db.sqlite:
                self.db.raw.execute(item)
            else:
                run(self.db, f'ALTER TABLE "{item}" ENABLE TRIGGER USER')
        return False


def _advance_identities(db: Store) -> None:
    """PostgreSQL: identity columns continue after the highest copied id (explicit ids do not move them)."""
    for r in list(
        each(
            db,
            "SELECT table_name AS t, column_name AS c FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND is_identity = 'YES' ORDER BY table_name",
        )
    ):
        top = value(db, f'SELECT MAX("{r["c"]}") AS m FROM "{r["t"]}"')
        if top is not None:
            run(
                db,
                "SELECT setval(pg_get_serial_sequence(:t, :c), :top)",
                {"t": f'"{r["t"]}"', "c": r["c"], "top": top},
            )
