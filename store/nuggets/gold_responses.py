"""Assessors' gold responses for a turn, with the ids of the nuggets each uses."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from assess.errors import AssessError, UnknownItem
from store.db import Store, column, now, row, rows, run, write
from store.nuggets.gold import NUGGET_COLUMNS, check_turn, ensure_author, in_key_order


def gold_response(db: Store, source: str, turn_id: str) -> dict | None:
    found = row(
        db,
        "SELECT text, nuggets_used, updated_at FROM gold_responses WHERE source = :source AND turn_id = :turn_id",
        {"source": source, "turn_id": turn_id},
    )
    if found is None:
        return None
    found["nuggets_used"] = json.loads(found["nuggets_used"]) if found["nuggets_used"] else []
    return found


def turn_nugget_choices(db: Store, turn_id: str, sources: Sequence[str] | None = None) -> list[dict]:
    """All nuggets of a turn (of the given sources), for composing a gold response: by source, then key."""
    sql = f"SELECT {NUGGET_COLUMNS} FROM nuggets WHERE turn_id = :turn_id"
    params: dict = {"turn_id": turn_id}
    if sources:
        names = {f"source{i}": s for i, s in enumerate(sources)}
        sql += f" AND source IN ({', '.join(':' + n for n in names)})"
        params.update(names)
    return sorted(in_key_order(rows(db, sql, params)), key=lambda r: r["source"])


def save_gold_response(db: Store, source: str, turn_id: str, text: str, nugget_ids: Iterable[int]) -> None:
    """Store an assessor's gold response for a turn and the ids of the nuggets it uses."""
    text = (text or "").strip()
    if not text:
        raise AssessError("a gold response needs some text")
    ids = sorted({int(i) for i in nugget_ids})
    with write(db):
        check_turn(db, turn_id)
        if ids:
            found = set(
                column(
                    db,
                    f"SELECT id FROM nuggets WHERE turn_id = :turn_id AND id IN "
                    f"({', '.join(f':id{n}' for n in range(len(ids)))})",
                    {"turn_id": turn_id, **{f"id{n}": i for n, i in enumerate(ids)}},
                )
            )
            missing = [i for i in ids if i not in found]
            if missing:
                raise UnknownItem(f"nugget {missing[0]} is not a nugget of turn {turn_id}")
        ensure_author(db, source)
        run(
            db,
            "INSERT INTO gold_responses (source, turn_id, text, nuggets_used, updated_at) "
            "VALUES (:source, :turn_id, :text, :nuggets_used, :updated_at) "
            "ON CONFLICT(source, turn_id) DO UPDATE SET text = excluded.text, nuggets_used = excluded.nuggets_used, "
            "updated_at = excluded.updated_at",
            {"source": source, "turn_id": turn_id, "text": text, "nuggets_used": json.dumps(ids), "updated_at": now()},
        )
