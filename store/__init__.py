"""The only package that touches SQLite (through sqlite-utils).

Public API: :func:`store.db.open_db` and :func:`store.db.write` (one transaction); ``Database``, the
handle the store's functions take (callers outside the store only pass it on); and the modules
``store.labels`` (every label write, undo and lookup, through :mod:`assess.tasks`),
``store.conversations`` (turns, passages, PTKB, pools, assignments), ``store.queue`` (assessor
queues), ``store.imports``, ``store.exports``, ``store.review``, ``store.compare``, ``store.stats``.
"""

from sqlite_utils import Database  # noqa: F401

from store.db import open_db, write  # noqa: F401
