"""Many rows at once: reading by many keys in a few queries, inserting many records per statement."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence

from store.db import Store, run, run_many

# -------------------------------------------------------------------------------------- many keys at once

KEYS_PER_QUERY = 100
"""Keys one query of :func:`by_keys` matches (4 columns each: 400 parameters)."""


def by_keys(columns: Sequence[str], keys: Sequence[Sequence]) -> Iterator[tuple[str, dict]]:
    """For reading many rows by their key in a few queries: per :data:`KEYS_PER_QUERY` keys, a condition true for
    a row whose ``columns`` equal one of them, ``((a = :k0_0 AND b = :k0_1) OR (...))``, and its parameters."""
    for first in range(0, len(keys), KEYS_PER_QUERY):
        terms, params = [], {}
        for i, key in enumerate(keys[first : first + KEYS_PER_QUERY]):
            terms.append("(" + " AND ".join(f"{c} = :k{i}_{j}" for j, c in enumerate(columns)) + ")")
            params |= {f"k{i}_{j}": v for j, v in enumerate(key)}
        yield f"({' OR '.join(terms)})", params


# -------------------------------------------------------------------------------------- bulk inserts

ROWS_PER_INSERT = 50  # records per INSERT statement of the bulk imports
_STATEMENTS_PER_CALL = 100  # statements per run_many call: 5,000 records in memory as parameters


def insert_rows(
    db: Store, head: str, cells: Sequence[str], tail: str, records: Iterable[Sequence], shared: dict | None = None
) -> None:
    """``head VALUES (cells), (cells), ... tail`` for the records, :data:`ROWS_PER_INSERT` of them per statement.

    ``cells`` gives each column's SQL: an entry ``'?'`` takes the record's next field, any other is
    written as it is (a literal, or a ``:name`` of ``shared``, the parameters every row uses, bound
    once per statement). Records have exactly as many fields as ``cells`` has '?'. Bound per row,
    parameters cost the store layer a few microseconds each call; many rows per statement make a
    50,000-line import about twice as fast, and the rows still go in in the order given. The
    records must not repeat a key when ``tail`` is an ON CONFLICT DO UPDATE (PostgreSQL refuses to
    update a row twice in one statement).
    """
    fields = cells.count("?")
    shared = shared or {}

    def statement(n: int) -> str:
        values = []
        for i in range(n):
            field = iter(range(fields))
            values.append("(" + ", ".join(f":v{i}_{next(field)}" if c == "?" else c for c in cells) + ")")
        return f"{head} VALUES {', '.join(values)}{tail}"

    names = [f"v{i}_{k}" for i in range(ROWS_PER_INSERT) for k in range(fields)]
    full = statement(ROWS_PER_INSERT)
    records = iter(records)
    batch: list[dict] = []
    while group := list(itertools.islice(records, ROWS_PER_INSERT)):
        params = dict(zip(names, itertools.chain.from_iterable(group)))
        params.update(shared)
        if len(group) < ROWS_PER_INSERT:  # the last records: a shorter statement, after the others
            if batch:
                run_many(db, full, batch)
                batch = []
            run(db, statement(len(group)), params)
            break
        batch.append(params)
        if len(batch) >= _STATEMENTS_PER_CALL:
            run_many(db, full, batch)
            batch = []
    if batch:
        run_many(db, full, batch)
