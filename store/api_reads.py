"""Reads of the HTTP API that no page makes: a page of one task's labels, the assignments as rows, the turn
ids that exist among some. Read-only; the API reaches them through ``assess.services.api_campaign``."""

from __future__ import annotations

from collections.abc import Sequence

from assess.tasks import label_kind
from store.db import Store, column, rows


def label_page(db: Store, task: str, *, source: str | None, turn_id: str | None, offset: int, limit: int) -> list[dict]:
    """Up to ``limit`` labels of ``task`` from ``offset`` on, in key order (source, then the item columns),
    of one source and one turn when given: the item columns, the value, mode, via and when."""
    kind = label_kind(task)
    where, params = [], {"limit": limit, "offset": offset}
    if source is not None:
        where.append("source = :source")
        params["source"] = source
    if turn_id is not None:
        where.append("turn_id = :turn_id")
        params["turn_id"] = turn_id
    cols = ", ".join(kind.item_columns)
    return rows(
        db,
        f"SELECT source, {cols}, {kind.value_column} AS value, mode, via, updated_at FROM {kind.table} "
        f"{'WHERE ' + ' AND '.join(where) if where else ''} ORDER BY source, {cols} LIMIT :limit OFFSET :offset",
        params,
    )


def assignment_rows(db: Store, assessor: str | None = None) -> list[dict]:
    """The assignments (of one assessor), by assessor, then conversation import order and turn position."""
    where, params = ("WHERE a.assessor = :assessor ", {"assessor": assessor}) if assessor is not None else ("", {})
    return rows(
        db,
        "SELECT a.assessor, a.turn_id, t.conversation_id, a.assigned_at FROM assignments a "
        f"JOIN turns t ON t.id = a.turn_id JOIN conversations c ON c.id = t.conversation_id {where}"
        "ORDER BY a.assessor, c.rowid, t.position",
        params,
    )


def known_turns(db: Store, turn_ids: Sequence[str]) -> set[str]:
    """Which of ``turn_ids`` the store holds."""
    listed = list(dict.fromkeys(turn_ids))
    if not listed:
        return set()
    params = {f"t{i}": t for i, t in enumerate(listed)}
    return set(column(db, f"SELECT id FROM turns WHERE id IN ({', '.join(':' + k for k in params)})", params))


def conversation_turns(db: Store, conversation_id: str) -> list[dict] | None:
    """A conversation's turns in position order (id, utterance, resolved utterance), or None when there is no
    such conversation."""
    if not column(db, "SELECT id FROM conversations WHERE id = :c", {"c": conversation_id}):
        return None
    return rows(
        db,
        "SELECT id, position, utterance, resolved_utterance AS resolved FROM turns WHERE conversation_id = :c "
        "ORDER BY position",
        {"c": conversation_id},
    )
