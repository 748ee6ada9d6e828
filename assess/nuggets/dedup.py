"""Duplicate nuggets (CONE-RAG Section 4.3): suggesting pairs and the de-duplication rule.

Nugget b is redundant when another nugget a of the same set entails it; the de-duplicated set keeps
the nuggets not entailed by another kept nugget (:func:`dedup_keep`). Entailment comes from any
:class:`Entailment` (the NLI judge of :mod:`assess.llm.entailment` fits) or, by default,
:class:`LexicalEntailment`, a cheap token-containment suggester. Suggestions are only suggestions:
the assessor confirms or rejects them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from assess.errors import AssessError
from assess.tasks import DuplicateDecision
from assess.text import STOPWORDS


class Entailment(Protocol):
    """Anything that scores P(premise entails hypothesis) for many pairs at once (NliClient fits)."""

    def entailment(self, pairs: Sequence[tuple[str, str]]) -> list[float]: ...


_TOKEN = re.compile(r"\w+", re.UNICODE)


def content_tokens(text: str) -> frozenset[str]:
    """Lower-cased word tokens of ``text`` without stopwords (all tokens when every one is a stopword)."""
    words = [w.casefold() for w in _TOKEN.findall(text or "")]
    content = frozenset(w for w in words if w not in STOPWORDS)
    return content or frozenset(words)


@dataclass(frozen=True)
class LexicalEntailment:
    """A cheap stand-in for NLI: P(premise ⊨ hypothesis) ≈ share of the hypothesis's content words in the premise.

    containment(p, h) = |T(p) ∩ T(h)| / |T(h)| with T = lower-cased word tokens minus stopwords;
    0 when the hypothesis has no token. Symmetric duplicates score high both ways.
    """

    name: str = "lexical"

    def entailment(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        cache: dict[str, frozenset[str]] = {}

        def tokens(t: str) -> frozenset[str]:
            if t not in cache:
                cache[t] = content_tokens(t)
            return cache[t]

        out = []
        for premise, hypothesis in pairs:
            h = tokens(hypothesis)
            out.append(len(tokens(premise) & h) / len(h) if h else 0.0)
        return out


@dataclass(frozen=True)
class FunctionEntailment:
    """Wrap a plain ``entails(premise, hypothesis) -> float`` function as an :class:`Entailment`."""

    function: Callable[[str, str], float]
    name: str = "function"

    def entailment(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return [float(self.function(p, h)) for p, h in pairs]


def as_entailment(judge: Entailment | Callable[[str, str], float] | None) -> Entailment:
    """An :class:`Entailment` from a judge object, a plain function, or None (the lexical suggester)."""
    if judge is None:
        return LexicalEntailment()
    if hasattr(judge, "entailment"):
        return judge  # type: ignore[return-value]
    if callable(judge):
        return FunctionEntailment(judge)
    raise AssessError(f"an entailment judge has an entailment(pairs) method or is a function, not {judge!r}")


def judge_name(judge: Entailment) -> str:
    """A short name for a judge, recorded with its suggestions ('lexical', 'nli:MODEL', ...)."""
    if getattr(judge, "name", None):
        return str(judge.name)
    model = getattr(judge, "model", None)
    return f"nli:{model}" if model else type(judge).__name__


def default_threshold(judge: Entailment) -> float:
    """Suggestion threshold: P >= 0.5 for an NLI judge (CONE-RAG's match rule) and for token containment.

    For containment, 0.5 was chosen on the CONE-RAG human nuggets (2,279 in 78 turns): taking every
    suggestion as confirmed would drop 49% of the nuggets the human de-duplicated set drops, 72% of
    its drops being right (0.6: 39% / 78%); suggestions favour recall since the assessor decides.
    """
    return 0.5


class DuplicateSuggestion(NamedTuple):
    """A pair of nuggets (a before b) with P(a ⊨ b) and P(b ⊨ a) from the suggester."""

    a: Any
    b: Any
    score_ab: float
    score_ba: float


def suggest_duplicates(
    nuggets: Sequence[tuple[Any, str]], judge: Entailment | None = None, *, threshold: float = 0.5
) -> list[DuplicateSuggestion]:
    """Pairs of nuggets where either entails the other with score >= ``threshold``, most mutual first.

    ``nuggets`` are (id, text) in set order; every unordered pair is scored both ways in one batch.
    """
    judge = as_entailment(judge)
    index = [(i, j) for i in range(len(nuggets)) for j in range(i + 1, len(nuggets))]
    if not index:
        return []
    pairs = []
    for i, j in index:
        pairs += [(nuggets[i][1], nuggets[j][1]), (nuggets[j][1], nuggets[i][1])]
    scores = judge.entailment(pairs)
    if len(scores) != len(pairs):
        raise AssessError(f"the entailment judge returned {len(scores)} scores for {len(pairs)} pairs")
    out = []
    for n, (i, j) in enumerate(index):
        ab, ba = float(scores[2 * n]), float(scores[2 * n + 1])
        if max(ab, ba) >= threshold:
            out.append(DuplicateSuggestion(nuggets[i][0], nuggets[j][0], ab, ba))
    out.sort(key=lambda s: (-min(s.score_ab, s.score_ba), -max(s.score_ab, s.score_ba)))
    return out


DECISIONS: dict[str, str] = {
    DuplicateDecision.SAME: "same information (keep the earlier)",
    DuplicateDecision.A_COVERS_B: "A covers B (drop B)",
    DuplicateDecision.B_COVERS_A: "B covers A (drop A)",
    DuplicateDecision.DISTINCT: "not duplicates",
}
"""What each decision (:class:`assess.tasks.DuplicateDecision`) means, in the order the page offers them."""

_FLIP = {
    DuplicateDecision.A_COVERS_B: DuplicateDecision.B_COVERS_A.value,
    DuplicateDecision.B_COVERS_A: DuplicateDecision.A_COVERS_B.value,
}


DECISION_KEYS: dict[str, str] = {
    DuplicateDecision.SAME: "S",
    DuplicateDecision.A_COVERS_B: "A",
    DuplicateDecision.B_COVERS_A: "B",
    DuplicateDecision.DISTINCT: "D",
}
"""The key that gives each decision on the Duplicates page."""


def decision_label(decision: str | None) -> str:
    """How a decision reads on the page; 'open' (or None) is an undecided pair."""
    return DECISIONS.get(decision, "reopen (undecided)" if decision == "open" else "open")


def check_decision(decision: object) -> str | None:
    """A decision as given when it is one of :data:`DECISIONS` or None (open); else a clear error."""
    if decision is not None and decision not in DECISIONS:
        raise AssessError(f"a duplicate decision is one of {', '.join(DECISIONS)}, not {decision!r}")
    return decision  # type: ignore[return-value]


def flipped(decision: str | None) -> str | None:
    """The same decision on the pair (b, a): 'A covers B' becomes 'B covers A'."""
    return _FLIP.get(decision, decision)  # type: ignore[arg-type]


def entailment_edges(decisions: Iterable[tuple[Any, Any, str | None]]) -> set[tuple[Any, Any]]:
    """Directed (premise, hypothesis) edges implied by confirmed decisions on pairs (a, b)."""
    edges = set()
    for a, b, decision in decisions:
        check_decision(decision)
        if decision in ("a_covers_b", "same"):
            edges.add((a, b))
        if decision in ("b_covers_a", "same"):
            edges.add((b, a))
    return edges


def dedup_keep(order: Sequence[Any], edges: set[tuple[Any, Any]]) -> dict[Any, bool]:
    """CONE-RAG Section 4.3: keep a nugget unless another *kept* nugget entails it.

    Nuggets are visited last to first, so of nuggets that entail each other the earliest is kept
    (``assess.llm.clients.dedup_keep`` applies it to an NLI model's entailments). ``edges`` holds (premise, hypothesis) pairs.
    """
    premises: dict[Any, list[Any]] = {}
    for p, h in edges:
        if p != h:
            premises.setdefault(h, []).append(p)
    keep = dict.fromkeys(order, True)
    for n in reversed(order):
        if any(keep.get(p, False) for p in premises.get(n, ())):
            keep[n] = False
    return keep


def pair_table(pairs: Sequence[Mapping]) -> list[dict]:
    """Stored pairs as table rows: keys, both scores (2 decimals), the decision and who made it."""
    return [
        {
            "A": p["key_a"],
            "B": p["key_b"],
            "P(A⊨B)": round(p["score_ab"] or 0, 2),
            "P(B⊨A)": round(p["score_ba"] or 0, 2),
            "decision": decision_label(p["decision"]),
            "by": p["decided_by"] or "",
        }
        for p in pairs
    ]
