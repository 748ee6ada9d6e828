"""Assessors' gold responses for a turn, with the ids of the nuggets each uses."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from sqlite_utils import Database

from assess.errors import AssessError, UnknownItem
from store.db import column, now, row, rows, run, write
from store.nuggets.gold import NUGGET_COLUMNS, check_turn, ensure_author, in_key_order


def gold_response(db: Database, source: str, turn_id: str) -> dict | None:
    found = row(
        db,
        "SELECT text, nuggets_used, updated_at FROM gold_responses WHERE source = ? AND turn_id = ?",
        (source, turn_id),
    )
    if found is None:
        return None
    found["nuggets_used"] = json.loads(found["nuggets_used"]) if found["nuggets_used"] else []
    return found


def turn_nugget_choices(db: Database, turn_id: str, sources: Sequence[str] | None = None) -> list[dict]:
    """All nuggets of a turn (of the given sources), for composing a gold response: by source, then key."""
    sql = f"SELECT {NUGGET_COLUMNS} FROM nuggets WHERE turn_id = ?"
    params: list = [turn_id]
    if sources:
        sql += f" AND source IN ({','.join('?' * len(sources))})"
        params += list(sources)
    return sorted(in_key_order(rows(db, sql, params)), key=lambda r: r["source"])


def save_gold_response(db: Database, source: str, turn_id: str, text: str, nugget_ids: Iterable[int]) -> None:
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
                    f"SELECT id FROM nuggets WHERE turn_id = ? AND id IN ({','.join('?' * len(ids))})",
                    (turn_id, *ids),
                )
            )
            missing = [i for i in ids if i not in found]
            if missing:
                raise UnknownItem(f"nugget {missing[0]} is not a nugget of turn {turn_id}")
        ensure_author(db, source)
        run(
            db,
            "INSERT INTO gold_responses (source, turn_id, text, nuggets_used, updated_at) VALUES (?,?,?,?,?) "
            "ON CONFLICT(source, turn_id) DO UPDATE SET text = excluded.text, nuggets_used = excluded.nuggets_used, "
            "updated_at = excluded.updated_at",
            (source, turn_id, text, json.dumps(ids), now()),
        )
