"""Defusing tag look-alikes in untrusted text: what could read as one of the enclosure's tags, or as the fences of
earlier prompt versions, loses its brackets (single guillemets instead)."""

from __future__ import annotations

import re
import unicodedata

from assess.text import skeleton

# Anything a model could read as the start of one of our tags: an opening bracket (ASCII, fullwidth, small,
# the angle brackets, the modifier-letter arrowhead, the Canadian syllabics and ornament look-alikes, or HTML's
# &lt; spelled out), then any spaces, slashes (or their look-alikes, or a backslash) and invisible characters,
# then the word "data" in any case or in look-alike letters (fullwidth, Cyrillic, Greek, mathematical ...),
# with spaces or invisible characters anywhere inside it. Also the fences of earlier prompt versions.
_OPENER = re.compile(r"[<\uff1c\ufe64\u2329\u27e8\u3008\u02c2\u1438\u276e\u276c\u2770]|&(?:lt|#0*60|#x0*3c);?", re.I)
_SLASHES = frozenset("/\\\uff0f\u2215\u2044\u29f8\u2571\u27cb\u3033\u2f03\u30ce\u1735\u2cc6\ufe68\uff3c\u29f5\u2216")
_FENCE_LIKE = re.compile(r"[<\uff1c\ufe64]{3,}|[>\uff1e\ufe65]{3,}")
_BRACKETS = re.compile(r"[<>&\uff1c\uff1e\ufe64\ufe65\u2329\u27e8\u3008\u02c2\u1438\u276e\u276c\u2770]")
_NEUTRAL = str.maketrans(dict.fromkeys("<\uff1c\ufe64", "\u2039") | dict.fromkeys(">\uff1e\ufe65", "\u203a"))
_TAG_WORD = "data"


def _invisible(c: str) -> bool:
    return unicodedata.category(c) in ("Cf", "Mn", "Me", "Cc") and c not in "\n"


def _starts_tag(text: str, at: int) -> bool:
    """Whether what follows position ``at`` (just after an opening bracket) reads as our tag's name."""
    shape = ""
    for c in text[at : at + 64]:
        if _invisible(c) or c.isspace() or (not shape and c in _SLASHES):
            continue
        shape += skeleton(c)
        if len(shape) >= len(_TAG_WORD):
            break
    return shape.startswith(_TAG_WORD)


def neutralise(text: str) -> str:
    """``text`` with every tag look-alike (``</data-…``, ``< DATA``, ``＜/data``, ``&lt;/dａta``, ``<∕d\u200bata``,
    Cyrillic or Greek letters in ``data``) and every ``<<<`` / ``>>>`` run defused: their brackets become
    single guillemets (‹ ›); nothing else changes."""

    if not _BRACKETS.search(text):
        return text
    text = _OPENER.sub(lambda m: "\u2039" if _starts_tag(m.string, m.end()) else m.group(0), text)
    return _FENCE_LIKE.sub(lambda m: m.group(0).translate(_NEUTRAL), text)
