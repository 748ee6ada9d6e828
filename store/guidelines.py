"""Versioned guidelines: each task's rubric and instructions, every version kept (``guidelines``, migration 19).

An organizer's edit is a new version (1, 2, ... per task), never a rewrite; every label write records the
version in force then (:mod:`store.labels`, in the write's own statement), so labels made under an older
version can be listed (:func:`labels_under_older`)."""

from __future__ import annotations

from assess.errors import AssessError
from assess.tasks import LABEL_KINDS, label_kind
from store.db import Store, now, row, rows, run, write
from store.rights import check_writer
from store.schema.active_time import TIMED_TABLES

MAX_GUIDELINE_CHARS = 100_000


def current(db: Store, task: str) -> dict | None:
    """The task's guideline in force: {task, version, text, created_by, created_at}, or None (none yet)."""
    kind = label_kind(task)
    return row(
        db,
        "SELECT task, version, text, created_by, created_at FROM guidelines WHERE task = :task "
        "ORDER BY version DESC LIMIT 1",
        {"task": kind.task.value},
    )


def versions(db: Store, task: str) -> list[dict]:
    """Every version of the task's guideline, newest first."""
    kind = label_kind(task)
    return rows(
        db,
        "SELECT task, version, text, created_by, created_at FROM guidelines WHERE task = :task ORDER BY version DESC",
        {"task": kind.task.value},
    )


def add_version(db: Store, task: str, text: str, *, by: str | None) -> int | None:
    """Store ``text`` as the task's next guideline version (an organizer's action, checked in the same
    transaction); return the new version, or None when the text equals the version in force (nothing stored)."""
    kind = label_kind(task)
    if not isinstance(text, str) or not text.strip():
        raise AssessError("a guideline needs some text; found an empty one")
    if len(text) > MAX_GUIDELINE_CHARS:
        raise AssessError(f"a guideline is at most {MAX_GUIDELINE_CHARS} characters; found {len(text)}")
    with write(db):
        check_writer(db, by, action="guideline")
        last = current(db, kind.task.value)
        if last is not None and last["text"] == text:
            return None
        version = 1 if last is None else int(last["version"]) + 1
        run(
            db,
            "INSERT INTO guidelines (task, version, text, created_by, created_at) "
            "VALUES (:task, :version, :text, :by, :at)",
            {"task": kind.task.value, "version": version, "text": text, "by": by, "at": now()},
        )
    return version


def labels_under_older(db: Store, *, limit: int = 1000) -> list[dict]:
    """Assessors' labels made under an older guideline version than the one in force now, by task, assessor
    and time: task, assessor, item columns joined as the history spells them (``item``), value,
    guideline_version, current_version, updated_at (at most ``limit`` rows)."""
    out: list[dict] = []
    for kind in LABEL_KINDS.values():
        if kind.table not in TIMED_TABLES or len(out) >= limit:
            continue
        out += rows(
            db,
            f"SELECT CAST(:task AS TEXT) AS task, l.source AS assessor, {kind.key.sql('l.')} AS item, "
            f"l.{kind.value_column} AS value, l.guideline_version AS guideline_version, "
            "g.version AS current_version, l.updated_at AS updated_at "
            f"FROM {kind.table} l JOIN sources s ON s.name = l.source AND s.kind = 'assessor' "
            "JOIN (SELECT task, MAX(version) AS version FROM guidelines GROUP BY task) g ON g.task = :task "
            "WHERE l.guideline_version IS NOT NULL AND l.guideline_version < g.version "
            "ORDER BY l.source, l.updated_at LIMIT :limit",
            {"task": kind.task.value, "limit": limit - len(out)},
        )
    return out
