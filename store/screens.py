"""Cheap reads that let a keyboard page keep what it showed across key presses: whether the topics or a
source's labels changed since it last read them.

A judging page re-reads its turn's conversation only when the topics change, and its set of judged
items only when the assessor's labels change (another tab, an undo elsewhere, an import): each check
is one indexed query.
"""

from __future__ import annotations

from assess.tasks import label_kind
from store.db import Store, now, row
from store.settings import get_setting, set_setting

TOPICS_VERSION = "topics_version"


def topics_version(db: Store) -> str:
    """Changes whenever topics are imported (conversations, turns or PTKB statements written)."""
    return get_setting(db, TOPICS_VERSION, "")


def bump_topics_version(db: Store) -> None:
    """Called by every write of conversations, turns or PTKB statements (inside its transaction)."""
    set_setting(db, TOPICS_VERSION, now())


def labels_version(db: Store, task: str, source: str) -> tuple:
    """Changes whenever the source's labels of ``task`` are added, removed or rewritten: their number and
    the latest write time (a removal lowers the number; an addition or a rewrite moves the time)."""
    kind = label_kind(task)
    found = row(
        db,
        f"SELECT COUNT(*) AS n, MAX(updated_at) AS latest FROM {kind.table} WHERE source = :source",
        {"source": source},
    )
    return (found["n"], found["latest"])


def person_setting(db: Store, name: str, person: str) -> str | None:
    """One person's stored choice ``name`` (the setting ``NAME:PERSON``), or None when they never chose."""
    return get_setting(db, f"{name}:{person}", None)


def set_person_setting(db: Store, name: str, person: str, value: str) -> None:
    """Keep one person's choice ``name`` (a setting of the store: it holds in every browser and session)."""
    set_setting(db, f"{name}:{person}", value)
