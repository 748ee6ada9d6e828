"""The embedded demo in a store: whether a store holds it beside other data, and removing it before real data
comes in (``import --drop-demo``, the /data page).

What the demo seeded is its conversations (collection ``demo``), their turns and everything that hangs on them
(pool, rankings, responses, labels of every source, nuggets, assignments, crowd items, ...), and the runs,
passages and label sources its files name. Rows that hang on a demo conversation are found through the
schema's foreign keys (reflected, so a table added later is covered), plus the ``turn_id`` columns that
have none; the named runs, passages and sources go only when nothing else refers to them any more.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence

import sqlalchemy as sa

from assess.errors import AssessError
from store.accounts import DEMO_COLLECTION
from store.db import Store, column, row, run, write
from store.history import record_action
from store.rights import check_writer
from store.screens import bump_topics_version

_HISTORY = "label_history"  # append-only: a label removed here leaves its trail (the delete triggers add to it)


def _tables(db: Store) -> list[sa.Table]:
    """The store's tables as SQLAlchemy reflects them, parents before children (foreign keys)."""
    meta = sa.MetaData()
    with warnings.catch_warnings():  # expression indexes are not reflected; only columns and keys are used
        warnings.simplefilter("ignore", sa.exc.SAWarning)
        meta.reflect(bind=db.sa)
    return [t for t in meta.sorted_tables if t.name not in ("assess_schema", "sqlite_sequence", "sqlite_stat1")]


def holdings(db: Store) -> dict[str, int]:
    """How many conversations of the demo and of anything else the store holds: ``{demo, others}``."""
    found = row(
        db,
        "SELECT COUNT(*) FILTER (WHERE collection = :demo) AS demo, "
        "COUNT(*) FILTER (WHERE collection IS DISTINCT FROM :demo) AS others FROM conversations",
        {"demo": DEMO_COLLECTION},
    )
    return {"demo": found["demo"], "others": found["others"]}


def demo_turns(db: Store) -> set[str]:
    """The turn ids of the demo's conversations."""
    return set(
        column(
            db,
            "SELECT t.id FROM turns t JOIN conversations c ON c.id = t.conversation_id WHERE c.collection = :demo",
            {"demo": DEMO_COLLECTION},
        )
    )


def _in(name: str, values: Sequence[str], params: dict) -> str:
    """``IN (:name0, :name1, ...)`` with the values added to ``params`` (``IN (NULL)`` when empty)."""
    keys = [f"{name}{i}" for i in range(len(values))]
    params.update(zip(keys, values))
    return "IN (" + (", ".join(f":{k}" for k in keys) or "NULL") + ")"


class _Doomed:
    """The SQL condition, per table, for rows that hang on a demo conversation: the conversation itself, a
    ``turn_id`` or ``conversation_id`` of the demo, or a foreign key to a doomed row of another table. Rows
    are removed children first, so each condition reads its parents before they go."""

    def __init__(self, tables: list[sa.Table], conversations: Sequence[str], turns: Sequence[str]):
        self.by_name = {t.name: t for t in tables}
        self.params: dict = {}
        self.convs = _in("c", conversations, self.params)
        self.turns = _in("t", turns, self.params)
        self.aliases = 0

    def of(self, table: sa.Table, alias: str, depth: int = 0) -> str | None:
        names = {c.name for c in table.columns}
        parts = []
        if table.name == "conversations":
            parts.append(f'{alias}."id" {self.convs}')
        if "turn_id" in names:
            parts.append(f'{alias}."turn_id" {self.turns}')
        if table.name == "turns":
            parts.append(f'{alias}."id" {self.turns}')
        if "conversation_id" in names:
            parts.append(f'{alias}."conversation_id" {self.convs}')
        if depth < 4:
            for fk in table.foreign_key_constraints:
                parent = self.by_name.get(fk.referred_table.name)
                if parent is None or parent.name == table.name:  # self-references: the rows are doomed anyway
                    continue
                self.aliases += 1
                p = f"p{self.aliases}"
                inner = self.of(parent, p, depth + 1)
                if inner is None:
                    continue
                match = " AND ".join(f'{p}."{e.column.name}" = {alias}."{e.parent.name}"' for e in fk.elements)
                parts.append(f'EXISTS (SELECT 1 FROM "{parent.name}" {p} WHERE {match} AND ({inner}))')
        return " OR ".join(parts) if parts else None


def _unreferenced(tables: list[sa.Table], parent: str, key: str, alias: str) -> str:
    """The condition that no row of any table refers to ``alias``'s row of ``parent`` (foreign keys)."""
    checks = []
    for t in tables:
        for fk in t.foreign_key_constraints:
            if fk.referred_table.name == parent and len(fk.elements) == 1 and fk.elements[0].column.name == key:
                checks.append(
                    f'NOT EXISTS (SELECT 1 FROM "{t.name}" r WHERE r."{fk.elements[0].parent.name}" = {alias}."{key}")'
                )
    return " AND ".join(checks) or "1 = 1"


def drop(
    db: Store, *, runs: Iterable[str], passages: Iterable[str], sources: Iterable[str], by: str | None
) -> dict[str, int]:
    """Remove the demo (see the module) in one transaction, with one history row (``drop-demo``, by ``by``) that
    holds how many rows went per table; ``runs``, ``passages``, ``sources``: those the demo's files name. The
    rows removed per table; nothing when the store holds no demo conversation."""
    with write(db):
        check_writer(db, by, action="drop-demo")
        conversations = column(
            db, "SELECT id FROM conversations WHERE collection = :demo ORDER BY id", {"demo": DEMO_COLLECTION}
        )
        if not conversations:
            return {}
        tables = [t for t in _tables(db) if t.name != _HISTORY]
        doomed = _Doomed(tables, conversations, sorted(demo_turns(db)))
        removed: dict[str, int] = {}
        for table in reversed(tables):  # children first
            condition = doomed.of(table, "d")
            if condition is not None:
                n = run(db, f'DELETE FROM "{table.name}" AS d WHERE {condition}', doomed.params)
                if n:
                    removed[table.name] = n
        for parent, key, names in (("runs", "name", runs), ("passages", "id", passages), ("sources", "name", sources)):
            params: dict = {}
            listed = _in("k", sorted(set(names)), params)
            n = run(
                db,
                f'DELETE FROM "{parent}" AS d WHERE d."{key}" {listed} AND {_unreferenced(tables, parent, key, "d")}',
                params,
            )
            if n:
                removed[parent] = removed.get(parent, 0) + n
        bump_topics_version(db)
        record_action(db, by, "drop-demo", "demo", None, removed, via="demo", writer_checked=True)
    return removed


class DemoInStore(AssessError):
    """An import of real data into a store that holds the demo, with no choice made (drop it, keep it, or use
    a new store): nothing was imported."""
