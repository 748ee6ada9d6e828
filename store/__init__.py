"""The only package that touches the database (SQLite or PostgreSQL, through SQLAlchemy Core).

Public API: :func:`store.db.open_db` and :func:`store.db.write` (one transaction); ``Store``, the
handle the store's functions take (callers outside the store only pass it on); and the modules
``store.labels`` (every label write, undo and lookup, through :mod:`assess.tasks`),
``store.conversations`` (turns, passages, PTKB, pools, assignments), ``store.queue`` (assessor
queues), ``store.imports``, ``store.exports``, ``store.review``, ``store.compare``, ``store.stats``.
"""

from store.db import Store, open_db, write  # noqa: F401
