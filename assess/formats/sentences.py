"""The sentence rule of cited responses: a response's text split into sentences (ends of sentences, common
abbreviations and initials kept inside), and sentences joined back into one text with their spans. Pure."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Sentence:
    """One sentence of a response: ``text == response.text[start:end]``, with the passages it cites."""

    text: str
    start: int
    end: int
    citations: tuple[str, ...] = ()  # passage ids in the order given (repeats kept)


# A sentence ends after . ! ? or … (a run of them), closing quotes or brackets included, where
# whitespace and then more text follow; a line break always ends one.
_END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s+\S)")


_NEXT = re.compile(r"\s+")


_LAST_WORD = re.compile(r"(\S+)$")


_INITIAL = re.compile(r"[A-Za-z]")


ABBREVIATIONS = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "e.g", "i.e", "cf", "approx", "fig", "vol"}
    | {"al", "inc", "ltd", "corp", "dept", "u.s", "u.k", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep"}
    | {"sept", "oct", "nov", "dec"}
)


def split_sentences(text: str) -> list[tuple[int, int]]:
    """The (start, end) character offsets of the sentences of ``text``, without surrounding whitespace.

    The rule: a line break ends a sentence; within a line, a sentence ends after a run of ``.``, ``!``,
    ``?`` or ``…`` (closing quotes and brackets kept with it) that is followed by whitespace and then a
    character that is not a lowercase letter; a single ``.`` does not end one after a listed
    abbreviation (:data:`ABBREVIATIONS`, case-insensitive: "Dr.", "e.g.", "U.S."), after a single
    letter (an initial: "J. K. Rowling"), or inside a number ("3.5": no whitespace follows).
    Text that is only whitespace has no sentences.
    """
    spans: list[tuple[int, int]] = []
    position = 0
    for line in text.splitlines(keepends=True):
        base = position
        position += len(line)
        body = line.rstrip("\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
        start = 0
        for match in _END.finditer(body):
            after = _NEXT.match(body, match.end())
            following = body[after.end()] if after and after.end() < len(body) else ""
            if following.islower():
                continue
            if match.group() == ".":
                word = _LAST_WORD.search(body, 0, match.start())
                token = word.group(1).lower().lstrip("(\"'“‘[") if word else ""
                if token in ABBREVIATIONS or _INITIAL.fullmatch(token):
                    continue
            _add_span(spans, body, base, start, match.end())
            start = match.end()
        _add_span(spans, body, base, start, len(body))
    return spans


def _add_span(spans: list, body: str, base: int, start: int, end: int) -> None:
    piece = body[start:end]
    stripped = piece.strip()
    if stripped:
        lead = len(piece) - len(piece.lstrip())
        spans.append((base + start + lead, base + start + lead + len(stripped)))


def sentences_of(text: str) -> tuple[Sentence, ...]:
    """The sentences of free text by :func:`split_sentences`, citing nothing."""
    return tuple(Sentence(text[a:b], a, b) for a, b in split_sentences(text))


def joined(sentences: Sequence[tuple[str, tuple[str, ...]]]) -> tuple[str, tuple[Sentence, ...]]:
    """The response text (sentences joined by one space) and the sentences with their offsets."""
    out, position = [], 0
    for text, citations in sentences:
        out.append(Sentence(text, position, position + len(text), citations))
        position += len(text) + 1
    return " ".join(text for text, _ in sentences), tuple(out)
