"""Nuggets in the store, one module per concern (the pure rules live in :mod:`assess.nuggets`):

- :mod:`store.nuggets.gold`: gold nuggets of a turn, their passages and spans, locating imported nuggets;
- :mod:`store.nuggets.duplicates`: suggested duplicate pairs and assessors' decisions;
- :mod:`store.nuggets.gold_responses`: assessors' gold responses;
- :mod:`store.nuggets.ntr`: the NtR judging queue and NtR recall's input (labels via :mod:`store.labels`);
- :mod:`store.nuggets.responses`: GFRC2 studies and nuggets marked in systems' responses;
- :mod:`store.nuggets.aspects`: AEPD aspects, their PTKB links and content.

Every write is one transaction (:func:`store.db.write`). The package exports its modules only:
``from store.nuggets import gold``.
"""

from store.nuggets import aspects, duplicates, gold, gold_responses, ntr, responses

__all__ = ["aspects", "duplicates", "gold", "gold_responses", "ntr", "responses"]
