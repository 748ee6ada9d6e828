"""The value scales of the label kinds (names and definitions per value) and the consensus of K answers."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from assess.errors import AssessError


@dataclass(frozen=True)
class Scale:
    """An ordered integer scale with a short name (and optionally a definition) for each value.

    The same mapping serves display (key captions, rubric), validation (:meth:`check`), prompts
    and exports. ``missing`` names what a NULL value means, when the task allows one.
    """

    names: Mapping[int, str]
    definitions: Mapping[int, str] = field(default_factory=dict)
    missing: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", MappingProxyType(dict(self.names)))
        object.__setattr__(self, "definitions", MappingProxyType(dict(self.definitions)))

    @property
    def values(self) -> tuple[int, ...]:
        return tuple(sorted(self.names))

    @property
    def low(self) -> int:
        return min(self.names)

    @property
    def high(self) -> int:
        return max(self.names)

    def __contains__(self, value: object) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value in self.names

    def check(self, value: object, *, what: str = "value") -> int | None:
        """Return ``value`` when it is on the scale (or None where the scale allows a missing value); else raise.

        Only true integers pass: ``True``, ``2.0`` and ``"2"`` are refused, never coerced.
        """
        if value is None and self.missing is not None:
            return None
        if value not in self:
            allowed = ", ".join(str(v) for v in self.values)
            extra = f" or none ({self.missing})" if self.missing else ""
            raise AssessError(f"{what} must be one of {allowed}{extra}, not {value!r}")
        return value  # type: ignore[return-value]

    def label(self, value: int | None) -> str:
        """``"3 · Highly meets"``; the missing value's name for None."""
        if value is None:
            return self.missing or "none"
        return f"{value} · {self.names[value]}"


def consensus(values: Sequence[int]) -> int:
    """The label K answers to one input give (an LLM judge asked K times): the most frequent value; on a tie,
    the mean of all K values rounded half up (as the crowd's 'mean' tie rule, CAsT 2022). Every value counts,
    -1 included (on the citation scale it is an answer, "irrelevant", not a missing one)."""
    if not values:
        raise AssessError("a consensus needs at least one value")
    counts = Counter(values)
    top = max(counts.values())
    leaders = [v for v, c in counts.items() if c == top]
    if len(leaders) == 1:
        return leaders[0]
    return math.floor(sum(values) / len(values) + 0.5)


GRADES = Scale(
    names={
        4: "Fully meets",
        3: "Highly meets",
        2: "Moderately meets",
        1: "Slightly meets",
        0: "Fails to meet",
    },
    definitions={
        4: "the passage is about the user's need in this turn and answers it completely; nothing important is missing",
        3: "the passage answers the need well, with a detail missing or a little unrelated material around it",
        2: "the passage answers part of the need, or answers it only with effort or indirectly",
        1: "the passage is on the topic of the turn but does not answer the need; marginal help at best",
        0: "the passage does not help with this turn: off topic, a wrong sense, or empty of content",
    },
    missing="cannot judge",
)
"""The iKAT / CAsT passage relevance scale (names as in the iKAT guidelines, definitions in our words)."""

PTKB_RELEVANCE = Scale(
    names={
        0: "not relevant",
        1: "relevant",
        2: "relevant (graded 2)",
        3: "relevant (graded 3)",
        4: "relevant (graded 4)",
    },
)
"""PTKB statement relevance: assessors give 0 or 1; imported PTKB qrels may carry grades up to 4."""

PTKB_KEYS = Scale(names={0: "not relevant", 1: "relevant"})
"""The two values an assessor gives a PTKB statement by key."""

MATCH = Scale(names={0: "no match", 1: "match"})
"""NtR: the response contains the nugget (1) or not (0)."""

RESPONSE_VALUE = Scale(
    names={-1: "unable to judge", 0: "0", 1: "1", 2: "2", 3: "3", 4: "4"},
)
"""iKAT 2023 response criteria (relevance, completeness, naturalness, conciseness, groundedness); -1 unable to judge."""

NUGGET_RELEVANCE = Scale(names={0: "0", 1: "1", 2: "2", 3: "3", 4: "4"})
"""A gold nugget's relevance grade, when its file gives one."""

SUPPORT = Scale(
    names={2: "support", 1: "partial support", 0: "no support"},
    definitions={
        2: "the response states the nugget's information, fully",
        1: "the response states part of the nugget's information, or states it only vaguely",
        0: "the response does not state the nugget's information",
    },
)
"""Graded NtR (TREC 2024/2025 RAG: support, partial support, no support), stored in ``ntr_support_labels``."""

MATCH_SUPPORT: Mapping[int, int] = MappingProxyType({1: 2, 0: 0})
"""How a yes/no NtR label (:data:`MATCH`) reads on the :data:`SUPPORT` scale: yes = support, no = no support.
Stored yes/no labels are read this way, never rewritten (:func:`store.labels.ntr_support`)."""

IMPORTANCE = Scale(
    names={1: "vital", 0: "okay"},
    definitions={
        1: "a good answer to the turn must contain this nugget",
        0: "a good answer may contain this nugget; it is useful but not required",
    },
)
"""A gold nugget's importance (TREC RAG AutoNuggetizer: vital / okay)."""

CITATION_CONTRADICTS = -2
"""The citation label "contradicts": the cited passage states the opposite of what the sentence states (TREC
BioGen 2025's contradicting citations); stored since the migration in store/schema/citation_contradicts.py."""

CITATION_SUPPORT = Scale(
    names={
        2: "fully supported",
        1: "partially supported",
        0: "not supported",
        -1: "citation irrelevant",
        CITATION_CONTRADICTS: "contradicts",
    },
    definitions={
        2: "the cited passage supports everything the sentence states",
        1: "the cited passage supports part of what the sentence states",
        0: "the cited passage is about the sentence's topic but does not support what it states",
        -1: "the cited passage has nothing to do with the sentence",
        CITATION_CONTRADICTS: "the cited passage states the opposite of what the sentence states",
    },
    missing="cannot judge",
)
"""Citation support of one response sentence by one passage it cites. Codes: 2 fully, 1 partially, 0 not
supported, -1 irrelevant citation, -2 contradicts (below 0 so that "supported" is always ``value >= 1``: a
contradicting citation never supports); None (stored NULL, schema 14): the assessor cannot judge it (e.g. the
passage has no text), left out of every citation measure."""

CITATION_SUPPORT_WITHOUT_CONTRADICTS = Scale(
    names={v: n for v, n in CITATION_SUPPORT.names.items() if v != CITATION_CONTRADICTS},
    definitions={v: d for v, d in CITATION_SUPPORT.definitions.items() if v != CITATION_CONTRADICTS},
    missing=CITATION_SUPPORT.missing,
)
"""The citation scale before "contradicts": the answers the ``citation-support`` prompt offers (its version and
answers unchanged); the ``contradicts`` prompt variant offers all of :data:`CITATION_SUPPORT`."""


BATTLE_OUTCOME = Scale(
    names={1: "A better", 2: "B better", 0: "tie", -1: "both bad"},
    definitions={
        1: "the answer of run A (shown on the left) is the better one",
        2: "the answer of run B (shown on the right) is the better one",
        0: "the two answers are about as good",
        -1: "neither answer is acceptable (left out of the strengths)",
    },
)
"""A battle's outcome, stored as an integer code: 1 A (the left run) better, 2 B (the right run) better,
0 tie, -1 both bad (below 0, as the citation scale's 'irrelevant': never a preference)."""

BATTLE_WINNERS: Mapping[str, int] = MappingProxyType({"a": 1, "b": 2, "tie": 0, "both_bad": -1})
"""The outcome's spelling in battle files and on the command line (``winner``) and its stored code."""

BATTLE_WINNER_NAMES: Mapping[int, str] = MappingProxyType({code: name for name, code in BATTLE_WINNERS.items()})
