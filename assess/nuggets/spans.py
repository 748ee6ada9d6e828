"""Nugget spans in a text: code-point offsets, the browser's UTF-16 offsets, locating a nugget's text.

A span is stored as Python ``str`` indices (Unicode code points) with
``0 <= start < end <= len(text)`` and ``text[start:end]`` equal to the span's text. A browser reports
selection offsets in UTF-16 code units (an astral character such as 🏃 counts 2 there, 1 here);
:func:`span_from_utf16` converts them exactly and refuses an offset inside a surrogate pair.
Combining accents are separate code points in both worlds, so a span may start or end between a
letter and its accent: nothing is normalised.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Literal, NamedTuple

from assess.errors import InvalidSpan
from assess.tasks import NuggetSpan

# ------------------------------------------------------------------------------------------- offsets


def utf16_length(text: str) -> int:
    """Length of ``text`` in UTF-16 code units (what JavaScript's ``String.length`` counts)."""
    return len(text.encode("utf-16-le")) // 2


def index_to_utf16(text: str, index: int) -> int:
    """The UTF-16 offset of code-point index ``index`` of ``text``."""
    if not 0 <= index <= len(text):
        raise InvalidSpan(f"index {index} is outside a text of {len(text)} characters")
    return utf16_length(text[:index])


def utf16_to_index(text: str, offset: int) -> int:
    """The code-point index of UTF-16 offset ``offset`` of ``text``; refuses an offset inside a surrogate pair."""
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise InvalidSpan(f"a UTF-16 offset is an integer, not {offset!r}")
    units = text.encode("utf-16-le")
    if not 0 <= offset <= len(units) // 2:
        raise InvalidSpan(f"UTF-16 offset {offset} is outside a text of {len(units) // 2} code units")
    try:
        return len(units[: 2 * offset].decode("utf-16-le"))
    except UnicodeDecodeError:
        raise InvalidSpan(
            f"UTF-16 offset {offset} falls inside a surrogate pair (between the two halves of one character)"
        ) from None


def validate_span(passage: str, start: int, end: int, text: str | None = None) -> NuggetSpan:
    """Check ``0 <= start < end <= len(passage)`` and, when given, ``text == passage[start:end]``."""
    for name, value in (("start", start), ("end", end)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidSpan(f"{name} is an integer, not {value!r}")
    if not 0 <= start < end <= len(passage):
        raise InvalidSpan(f"a span needs 0 <= start < end <= {len(passage)}, found {start}..{end}")
    found = passage[start:end]
    if text is not None and text != found:
        raise InvalidSpan(
            f"the text {_short(text)!r} is not the passage's text at {start}..{end} "
            f"({_short(found)!r}); the passage may have changed since it was shown"
        )
    return NuggetSpan(start, end, found)


def trim_span(passage: str, start: int, end: int) -> tuple[int, int]:
    """Drop whitespace at both ends of ``passage[start:end]`` (a double-click often selects a trailing space)."""
    while start < end and passage[start].isspace():
        start += 1
    while end > start and passage[end - 1].isspace():
        end -= 1
    return start, end


def span_from_utf16(
    passage: str, start16: int, end16: int, text: str | None = None, *, trim: bool = True
) -> NuggetSpan:
    """Convert a browser selection (UTF-16 offsets into the rendered passage) to a checked code-point span.

    ``text`` is the selected text as the browser saw it; it must equal the passage's text there, so a
    passage that changed since it was rendered is refused rather than stored with wrong offsets.
    With ``trim`` the span is narrowed to exclude surrounding whitespace.
    """
    if start16 > end16:
        start16, end16 = end16, start16
    start, end = utf16_to_index(passage, start16), utf16_to_index(passage, end16)
    if text is not None and passage[start:end] != text:
        raise InvalidSpan(
            f"the selection {_short(text)!r} is not the passage's text at UTF-16 "
            f"{start16}..{end16} ({_short(passage[start:end])!r})"
        )
    if trim:
        start, end = trim_span(passage, start, end)
    if start >= end:
        raise InvalidSpan("the selection is empty (or only whitespace): select some passage text first")
    return validate_span(passage, start, end)


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ------------------------------------------------------------------------------------------- locating

LocateMethod = Literal["exact", "normalised"]


class Located(NamedTuple):
    """Where a nugget text was found: passage, span and how (exact, or under the folding rule :func:`fold`)."""

    passage_id: str
    span: NuggetSpan
    method: LocateMethod


# The one folding rule a nugget's text is matched under, whoever wrote it (an assessor, an imported file, a model):
# each character NFKC-normalised, typographic quotes and dashes written as ASCII, case-folded (ß -> ss); runs of
# white space as one space, none at either end.
_FOLD = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u2033": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2212": "-",
        "\u00a0": " ",
    }
)


def fold(text: str) -> tuple[str, list[int]]:
    """``text`` folded for matching (see :data:`_FOLD`'s rule), and the index in ``text`` of the character that
    produced each folded character (one character may produce several, e.g. ß -> ss)."""
    out: list[str] = []
    starts: list[int] = []
    previous_space = True  # no space at the start
    for i, ch in enumerate(text):
        for c in unicodedata.normalize("NFKC", ch).translate(_FOLD).casefold():
            if c.isspace():
                if previous_space:
                    continue
                c = " "
                previous_space = True
            else:
                previous_space = False
            out.append(c)
            starts.append(i)
    while out and out[-1] == " ":  # none at the end
        out.pop()
        starts.pop()
    return "".join(out), starts


_EDGE = re.compile(r"^[\s\"'“”‘’«»]+|[\s\"'“”‘’«».;:,!?]+$")


def locate(passage: str, text: str) -> tuple[NuggetSpan, LocateMethod] | None:
    """Find nugget ``text`` in ``passage``: exact first, then under the folding rule (:func:`fold`).

    The normalised match also ignores quotes and final punctuation around the nugget. Returns the
    span of the passage's own characters (so ``span.text`` may differ from ``text`` in case and
    spacing) and the method, or None when the text is not there.
    """
    if not text or not text.strip() or not passage:
        return None
    at = passage.find(text)
    if at >= 0:
        return validate_span(passage, at, at + len(text)), "exact"
    needle, _ = fold(_EDGE.sub("", text))
    if not needle:
        return None
    hay, starts = fold(passage)
    at = hay.find(needle)
    if at < 0:
        return None
    start = starts[at]
    last = starts[at + len(needle) - 1]
    end = last + 1
    start, end = trim_span(passage, start, end)
    return validate_span(passage, start, end), "normalised"


def locate_in_passages(text: str, passages: Iterable[tuple[str, str | None]]) -> Located | None:
    """Locate ``text`` in the first passage (in the order given) that holds it; an exact match anywhere wins."""
    candidates = [(pid, body) for pid, body in passages if body]
    for pid, body in candidates:
        at = body.find(text) if text else -1
        if at >= 0:
            return Located(pid, validate_span(body, at, at + len(text)), "exact")
    for pid, body in candidates:
        found = locate(body, text)
        if found:
            return Located(pid, found[0], found[1])
    return None


def locate_pieces(text: str, content: str) -> list[NuggetSpan]:
    """Spans of ``text`` holding ``content``, which may be several pieces of ``text`` joined by spaces.

    The AEPD content of an aspect is stored as words only (selections appended with a space, or
    typed). Greedily, from the first word: the longest run of the content's words found in ``text``
    (folded, as :func:`locate`) is one piece, searched after the
    previous piece first, then anywhere; a word found nowhere is skipped. Pieces come back in
    content order; an empty list when nothing is found.
    """
    tokens = [t for t in (fold(w)[0] for w in (content or "").split()) if t]
    if not tokens or not text:
        return []
    hay, starts = fold(text)

    def find(needle: str, after: int) -> int:
        at = hay.find(needle, after)
        return at if at >= 0 else hay.find(needle)

    out: list[NuggetSpan] = []
    i, after = 0, 0
    while i < len(tokens):
        needle, at = tokens[i], find(tokens[i], after)
        j = i + 1
        while at >= 0 and j < len(tokens):
            longer = f"{needle} {tokens[j]}"
            found = find(longer, after if at >= after else 0)
            if found < 0:
                break
            needle, at, j = longer, found, j + 1
        if at >= 0:
            start, end = trim_span(text, starts[at], starts[at + len(needle) - 1] + 1)
            if start < end:
                out.append(validate_span(text, start, end))
                after = at + len(needle)
        i = j
    return out


# ------------------------------------------------------------------------------------------- a model's copies


def _occurrences(haystack: str, needle: str) -> list[int]:
    found, i = [], haystack.find(needle)
    while i >= 0:
        found.append(i)
        i = haystack.find(needle, i + 1)
    return found


def _clean_candidate(text: str) -> str:
    text = text.strip()
    text = re.sub(r"^(?:[-*\u2022]|\d+[.)])\s+", "", text)  # list markers
    if len(text) >= 2 and text[0] in "\"'\u201c\u2018" and text[-1] in "\"'\u201d\u2019":
        text = text[1:-1].strip()
    return text


def locate_span(candidate: str, source: str, taken: Sequence[tuple[int, int]] = ()) -> tuple[NuggetSpan | None, str]:
    """Find ``candidate`` in ``source``: (span, how) where how is 'exact', a repair kind, or why it was rejected.

    Exact copies are kept (the first occurrence not already taken). Otherwise the copy is repaired when
    it matches exactly one place of the text after folding case, quotes, dashes and white space, or
    when its parts around an ellipsis match one place each, in order; anything else is rejected.
    """
    if not candidate.strip():
        return None, "rejected: empty"
    for copy in dict.fromkeys((candidate, _clean_candidate(candidate))):  # as given, then without list marks/quotes
        if copy and copy in source:
            starts = _occurrences(source, copy)
            start = next((s for s in starts if not any(s == t for t, _ in taken)), starts[0])
            return NuggetSpan.of(source, start, start + len(copy)), "exact"
    folded, index = fold(source)
    want, _ = fold(_clean_candidate(candidate))
    if not want:
        return None, "rejected: empty"
    hits = _occurrences(folded, want)
    if len(hits) == 1:
        start, end = index[hits[0]], index[hits[0] + len(want) - 1] + 1
        return NuggetSpan.of(source, start, end), "repaired: case/quotes/white space"
    if len(hits) > 1:
        return None, f"rejected: ambiguous ({len(hits)} places match)"
    trimmed = want.rstrip(".,;:!? ")
    if trimmed != want and trimmed:
        hits = _occurrences(folded, trimmed)
        if len(hits) == 1:
            start, end = index[hits[0]], index[hits[0] + len(trimmed) - 1] + 1
            return NuggetSpan.of(source, start, end), "repaired: end punctuation dropped"
    parts = [p for p in (fold(p)[0] for p in re.split(r"\.\.\.|\u2026", _clean_candidate(candidate))) if p.strip(" .")]
    if len(parts) > 1:
        places = [_occurrences(folded, p.strip()) for p in parts]
        if all(len(p) == 1 for p in places) and all(a[0] < b[0] for a, b in zip(places, places[1:])):
            start = index[places[0][0]]
            last = parts[-1].strip()
            end = index[places[-1][0] + len(last) - 1] + 1
            return NuggetSpan.of(source, start, end), "repaired: ellipsis bridged"
    return None, "rejected: not found in the text"


def segments(text: str, spans: Iterable[tuple[int, int]]) -> list[tuple[str, bool]]:
    """Cut ``text`` at span boundaries into (piece, covered by some span) pairs, for highlighting.

    Overlapping spans merge; the pieces concatenate to ``text`` exactly.
    """
    cover = sorted((max(0, s), min(len(text), e)) for s, e in spans if e > s)
    merged: list[list[int]] = []
    for s, e in cover:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    out: list[tuple[str, bool]] = []
    pos = 0
    for s, e in merged:
        if s > pos:
            out.append((text[pos:s], False))
        if e > s:
            out.append((text[s:e], True))
        pos = e
    if pos < len(text) or not out:
        out.append((text[pos:], False))
    return out


def next_key(keys: Iterable[str]) -> str:
    """The next free CONE-RAG nugget key '[k]' after the numeric keys in use."""
    numbers = [int(m.group(1)) for k in keys if (m := re.fullmatch(r"\[(\d+)\]", k or ""))]
    return f"[{max(numbers, default=0) + 1}]"


def key_order(key: str) -> tuple:
    """Sort key of a nugget key: '[2]' before '[10]', non-numeric keys after the numeric ones."""
    digits = key.strip("[]")
    return (0, int(digits), key) if digits.isdigit() else (1, 0, key)
