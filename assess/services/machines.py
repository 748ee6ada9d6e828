"""Machine annotators: the roster of LLM sources (model, prompt version, engine, date) and their declaration
(store/roster.py), what the command line's ``sources`` group and the pages read."""

from __future__ import annotations

from store import roster as store_roster
from store.db import Store


def roster(db: Store) -> list[dict]:
    """Every machine source with its model, prompt version, engine and date, where each comes from, and what is
    missing (:func:`store.roster.roster`)."""
    return store_roster.roster(db)


def declare(db: Store, source: str, *, model: str, prompt_version: str, engine: str, date: str, by: str | None) -> dict:
    """Declare ``source`` a machine annotator with these fields (an organizer action,
    :func:`store.roster.declare`)."""
    return store_roster.declare(db, source, model=model, prompt_version=prompt_version, engine=engine, date=date, by=by)
