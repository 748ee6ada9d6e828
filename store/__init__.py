"""The only package that touches SQLite (through sqlite-utils).

Public API: :func:`store.db.open_db` and :func:`store.db.write` (one transaction), plus the
functions in ``store.imports``, ``store.labels``, ``store.stats``, ``store.queue``.
"""

from store.db import open_db, write  # noqa: F401
