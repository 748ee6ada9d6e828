"""The versioned guidelines the organizers write per task (the review page) and the judging pages show: the store's
functions of the same names (:mod:`store.guidelines`), reached by the front ends through this module."""

from __future__ import annotations

from assess.tasks import LABEL_KINDS
from store import Store, guidelines
from store.schema.active_time import TIMED_TABLES


def timed_tasks() -> list[str]:
    """The tasks whose labels record their active time and guideline version (those a guideline is written for)."""
    return [kind.task.value for kind in LABEL_KINDS.values() if kind.table in TIMED_TABLES]


def current(db: Store, task: str) -> dict | None:
    """The task's guideline in force, or None."""
    return guidelines.current(db, task)


def versions(db: Store, task: str) -> list[dict]:
    return guidelines.versions(db, task)


def add_version(db: Store, task: str, text: str, *, by: str | None) -> int | None:
    """Store ``text`` as the task's next version (an organizer's action); None when unchanged."""
    return guidelines.add_version(db, task, text, by=by)


def labels_under_older(db: Store, *, limit: int = 1000) -> list[dict]:
    """Assessors' labels made under an older guideline version than the one in force."""
    return guidelines.labels_under_older(db, limit=limit)
