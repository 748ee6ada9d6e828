"""The history of organizers' actions: every change of an account, assignment, judging mode, import,
replaced text or adjudication is one row of ``label_history`` whose ``label_table`` is the kind of
action (``assess.tasks.ORGANIZER_ACTIONS``) and whose ``source`` is the person who acted (``by``)."""

from __future__ import annotations

import json

from assess.errors import AssessError
from assess.tasks import ORGANIZER_ACTIONS
from store.db import Store, now, rows, run, write
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

    def text(v: object) -> str | None:
        return None if v is None else v if isinstance(v, str) else json.dumps(v, sort_keys=True)

    with write(db):
        if not writer_checked:
            check_writer(db, by, action=kind)
        run(
            db,
            "INSERT INTO label_history (label_table, source, item, old_value, new_value, mode, via, at) "
            "VALUES (:kind, :source, :item, :old, :new, NULL, :via, :at)",
            {
                "kind": kind,
                "source": by or UNKNOWN_ACTOR,
                "item": item,
                "old": text(old),
                "new": text(new),
                "via": via,
                "at": now(),
            },
        )


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
