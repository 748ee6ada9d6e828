"""Agreement between two assessors' nugget spans: exact and overlap span F1, unit-level Cohen's kappa.

Compared: the turns where both assessors marked at least one span (both worked on the turn), and in them
every passage where either marked one. A passage one of them left unmarked counts as "nothing marked"
there, which is a disagreement about the passage, not missing data. docs/nuggets.md#span-agreement.

- exact F1: a span matches when the other marked the same passage, start and end;
  F1 = 2 |A ∩ B| / (|A| + |B|).
- overlap F1: a span of A is found when it shares a character with some span of B (and the other way
  round); P = found A / |A|, R = found B / |B|, F1 = 2PR / (P + R).
- kappa: every unit (a character, or a word: a run of non-space characters) of the compared passages is
  labelled 1 when one of the assessor's spans covers it (a word: any of its characters), else 0; Cohen's
  kappa of the two label sequences (sklearn's ``cohen_kappa_score`` is the peer, tests/unit/test_span_agreement.py).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import NamedTuple

UNITS = ("char", "word")
_WORD = re.compile(r"\S+")


class Mark(NamedTuple):
    source: str
    turn_id: str
    passage_id: str
    start: int
    end: int


def _covered(length: int, spans: Iterable[tuple[int, int]]) -> list[int]:
    labels = [0] * length
    for start, end in spans:
        labels[start:end] = [1] * (end - start)
    return labels


def unit_labels(text: str, spans: Iterable[tuple[int, int]], unit: str) -> list[int]:
    """0/1 per unit of ``text``: covered by one of ``spans`` or not."""
    chars = _covered(len(text), spans)
    if unit == "char":
        return chars
    return [int(any(chars[m.start() : m.end()])) for m in _WORD.finditer(text)]


def cohen_kappa(a: list[int], b: list[int]) -> float | None:
    """Cohen's kappa of two 0/1 sequences; None when chance agreement is 1 (both constant and equal)."""
    n = len(a)
    if n == 0:
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pa, pb = sum(a) / n, sum(b) / n
    chance = pa * pb + (1 - pa) * (1 - pb)
    return None if chance == 1 else (observed - chance) / (1 - chance)


def _overlaps(span: tuple[int, int], others: Iterable[tuple[int, int]]) -> bool:
    return any(span[0] < end and start < span[1] for start, end in others)


def pair_agreement(marks: Iterable[Mark], a: str, b: str, texts: Mapping[str, str], unit: str = "char") -> dict:
    """Span agreement of sources ``a`` and ``b`` over the turns both marked (see the module's note)."""
    spans: dict[str, dict[tuple[str, str], set[tuple[int, int]]]] = {a: defaultdict(set), b: defaultdict(set)}
    for m in marks:
        if m.source in spans:
            spans[m.source][(m.turn_id, m.passage_id)].add((m.start, m.end))
    turns = {t for t, _ in spans[a]} & {t for t, _ in spans[b]}
    places = sorted(k for k in set(spans[a]) | set(spans[b]) if k[0] in turns)
    n_a = sum(len(spans[a].get(k, ())) for k in places)
    n_b = sum(len(spans[b].get(k, ())) for k in places)
    exact = found_a = found_b = 0
    labels_a: list[int] = []
    labels_b: list[int] = []
    for k in places:
        mine, theirs = spans[a].get(k, set()), spans[b].get(k, set())
        exact += len(mine & theirs)
        found_a += sum(_overlaps(s, theirs) for s in mine)
        found_b += sum(_overlaps(s, mine) for s in theirs)
        labels_a += unit_labels(texts[k[1]], mine, unit)
        labels_b += unit_labels(texts[k[1]], theirs, unit)
    p, r = (found_a / n_a, found_b / n_b) if n_a and n_b else (0.0, 0.0)
    return {
        "a": a,
        "b": b,
        "turns": len(turns),
        "passages": len(places),
        "spans_a": n_a,
        "spans_b": n_b,
        "exact_f1": 2 * exact / (n_a + n_b) if places else None,
        "overlap_f1": (2 * p * r / (p + r) if p + r else 0.0) if places else None,
        "unit": unit,
        "units": len(labels_a),
        "kappa": cohen_kappa(labels_a, labels_b),
    }


def span_agreement(marks: Iterable[Mark], texts: Mapping[str, str], unit: str = "char") -> list[dict]:
    """:func:`pair_agreement` of every pair of sources that marked spans in at least one common turn."""
    marks = list(marks)
    turns: dict[str, set[str]] = defaultdict(set)
    for m in marks:
        turns[m.source].add(m.turn_id)
    names = sorted(turns)
    return [
        pair_agreement(marks, a, b, texts, unit)
        for i, a in enumerate(names)
        for b in names[i + 1 :]
        if turns[a] & turns[b]
    ]
