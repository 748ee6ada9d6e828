"""The append-only history (``label_history``): organizers' actions, and the reads of labels' trails.

Every change of an account, assignment, judging mode, import, replaced text or adjudication is one row
whose ``label_table`` is the kind of action (``assess.tasks.ORGANIZER_ACTIONS``) and whose ``source`` is
the person who acted (``by``). Label changes are written by the history triggers; they are read here
(one label's trail, every source's trail of an item, the assessors' changes of a task)."""

from __future__ import annotations

import json

from assess.errors import AssessError
from assess.tasks import LABEL_KINDS, ORGANIZER_ACTIONS, label_kind
from store import labels
from store.db import Store, column, now, rows, run, write
from store.rights import check_writer

UNKNOWN_ACTOR = "(unknown)"
"""The ``source`` of an organizer-action history row whose caller named nobody (a library call)."""


def record_action(
    db: Store,
    by: str | None,
    kind: str,
    item: str,
    old: object = None,
    new: object = None,
    *,
    via: str,
    writer_checked: bool = False,
) -> None:
    """Append one organizer action to the history (inside the caller's transaction, or its own), after
    checking that ``by`` may take it now (:func:`check_writer`; ``writer_checked``: the caller did, before
    its change)."""
    if kind not in ORGANIZER_ACTIONS:
        raise AssessError(f"an organizer action is one of {', '.join(ORGANIZER_ACTIONS)}, not {kind!r}")

    with write(db):
        if not writer_checked:
            check_writer(db, by, action=kind)
        run(
            db,
            "INSERT INTO label_history (label_table, source, item, old_value, new_value, mode, via, at) "
            "VALUES (:kind, :source, :item, :old, :new, NULL, :via, :at)",
            {**action_row(by, kind, item, old, new, via=via), "at": now()},
        )


def action_row(by: str | None, kind: str, item: str, old: object, new: object, *, via: str) -> dict:
    """The parameters of one organizer action's history row (``kind, source, item, old, new, via``), the
    old and new content as JSON text."""

    def text(v: object) -> str | None:
        return None if v is None else v if isinstance(v, str) else json.dumps(v, sort_keys=True)

    return {"kind": kind, "source": by or UNKNOWN_ACTOR, "item": item, "old": text(old), "new": text(new), "via": via}


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


# ------------------------------------------------------------------------------------------- label trails


def item_history(db: Store, source: str, item: str, kind: str = "passage") -> list[dict]:
    """Every change of one label, oldest first: ``at``, ``old``, ``new``, ``mode``, ``via``.

    ``item`` is written as in the history ('turn passage' for passages, 'turn statement' for PTKB,
    'turn key' for nuggets, e.g. '0_8 [3]', whose values are JSON with text, relevance and span).
    A label that arrived with its source's first bulk import has no history row of its own; its first
    entry is rebuilt from the import event (item '*'): the imported value is the old value of the
    item's first later change, or its current value if it never changed.
    """
    changes = rows(
        db,
        "SELECT at, old_value AS old, new_value AS new, mode, via FROM label_history "
        "WHERE source = :source AND label_table = :label_table AND item = :item ORDER BY id",
        {"source": source, "label_table": str(kind), "item": item},
    )
    if kind not in {t.value for t in LABEL_KINDS}:  # nuggets, duplicate decisions, gold responses: never bulk
        return changes
    imports = column(
        db,
        "SELECT at FROM label_history WHERE source = :source AND label_table = :label_table AND item = '*' "
        "AND via = 'bulk' ORDER BY id",
        {"source": source, "label_table": str(kind)},
    )
    if not imports or (changes and changes[0]["old"] is None):
        return changes  # no bulk import, or the item's own first row is its creation
    if changes:
        imported = changes[0]["old"]
    else:
        current = labels.get_by_history_item(db, kind, source, item)
        if current is None:
            return changes
        imported = labels.history_text(kind, current.value)
    event = {"at": imports[0], "old": None, "new": imported, "mode": "import", "via": "bulk"}
    return [event] + changes


def item_history_all(db: Store, item: str, kind: str = "passage") -> list[dict]:
    """Every change of one item's labels by every source, oldest first: :func:`item_history`'s rows, each
    with its ``source``. A source whose bulk import holds the item shows that import as its first row."""
    sources = column(
        db,
        "SELECT DISTINCT source FROM label_history WHERE label_table = :label_table "
        "AND (item = :item OR (item = '*' AND via = 'bulk')) ORDER BY source",
        {"label_table": str(kind), "item": item},
    )
    trail = [{"source": source, **change} for source in sources for change in item_history(db, source, item, kind)]
    trail.sort(key=lambda change: change["at"])  # stable: one source's changes keep their order at a shared time
    return trail


def assessor_history(db: Store, task: str, *, assessor: str | None = None) -> list[dict]:
    """Assessors' label history of ``task`` (one assessor's with ``assessor``), oldest first: source, item
    (as the history spells it), old, new, mode, active_ms."""
    kind = label_kind(task)
    sql = (
        "SELECT h.source AS source, h.item AS item, h.old_value AS old, h.new_value AS new, h.mode AS mode, "
        "h.active_ms AS active_ms FROM label_history h JOIN sources s ON s.name = h.source AND s.kind = 'assessor' "
        "WHERE h.label_table = :label_table"
    )
    params = {"label_table": kind.task.value}
    if assessor:
        sql, params = sql + " AND h.source = :assessor", params | {"assessor": assessor}
    return rows(db, sql + " ORDER BY h.id", params)
