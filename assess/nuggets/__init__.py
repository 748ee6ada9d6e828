"""Nuggets as plain values, one module per concern (no Streamlit, no SQL: ``store.nuggets`` stores them).

- :mod:`assess.nuggets.spans`: offsets (code points and the browser's UTF-16), checking, locating a
  nugget's text in passages, highlighting segments, nugget keys;
- :mod:`assess.nuggets.dedup`: the entailment protocol, the lexical suggester, suggested pairs and
  the de-duplication rule (CONE-RAG Section 4.3);
- :mod:`assess.nuggets.documents`: whitespace words, GFRC2 and AEPD documents for the scorers.

The package exports its modules only: ``from assess.nuggets import spans``.
"""

from assess.nuggets import dedup, documents, spans

__all__ = ["dedup", "documents", "spans"]
