"""Nuggets as plain values: spans in passage text, locating nugget text, duplicates, GFRC2 and AEPD inputs.

No Streamlit and no SQL here (``store.nuggets`` reads and writes; pages render).

Offsets. A span is stored as Python ``str`` indices (Unicode code points) with
``0 <= start < end <= len(passage)`` and ``text == passage[start:end]``. A browser reports
selection offsets in UTF-16 code units of the rendered text (an astral character such as 🏃
counts 2 there, 1 here); :func:`span_from_utf16` converts them exactly and refuses an offset that
falls inside a surrogate pair. Combining accents are separate code points in both worlds, so a
span may legally start or end between a letter and its accent: the stored text then keeps the
accent where it was selected, nothing is normalised.

Duplicates (CONE-RAG Section 4.3): nugget b is redundant when another nugget a of the same set
entails it; the de-duplicated set keeps the nuggets not entailed by another kept nugget
(:func:`dedup_keep`). Entailment comes from any :class:`Entailment` (``assess.llm.clients.NliJudge``
has the same ``entailment(pairs)`` method) or, by default, :class:`LexicalEntailment`, a cheap
token-containment suggester. Suggestions are only suggestions: the assessor confirms or rejects.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, Protocol

from assess.errors import AssessError, InvalidSpan
from assess.text import STOPWORDS


class NuggetSpan(NamedTuple):
    """A nugget's place in its passage: code-point offsets and the exact text there."""

    start: int
    end: int
    text: str


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
    """Where a nugget text was found: passage, span and how (exact or whitespace/case-normalised)."""

    passage_id: str
    span: NuggetSpan
    method: LocateMethod


def _normalised(text: str) -> tuple[str, list[int]]:
    """Case-fold ``text`` and collapse whitespace runs to one space; map each output char to its source index.

    Returns (normalised text, starts) where ``starts[i]`` is the index in ``text`` of the character
    that produced output character ``i`` (case folding may produce several, e.g. ß -> ss).
    """
    out: list[str] = []
    starts: list[int] = []
    previous_space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            if not previous_space:
                out.append(" ")
                starts.append(i)
            previous_space = True
            continue
        previous_space = False
        folded = ch.casefold()
        out.extend(folded)
        starts.extend([i] * len(folded))
    return "".join(out), starts


_EDGE = re.compile(r"^[\s\"'“”‘’«»]+|[\s\"'“”‘’«».;:,!?]+$")


def locate(passage: str, text: str) -> tuple[NuggetSpan, LocateMethod] | None:
    """Find nugget ``text`` in ``passage``: exact first, then case-folded with whitespace runs collapsed.

    The normalised match also ignores quotes and final punctuation around the nugget. Returns the
    span of the passage's own characters (so ``span.text`` may differ from ``text`` in case and
    spacing) and the method, or None when the text is not there.
    """
    if not text or not text.strip() or not passage:
        return None
    at = passage.find(text)
    if at >= 0:
        return validate_span(passage, at, at + len(text)), "exact"
    needle, _ = _normalised(_EDGE.sub("", text))
    needle = needle.strip()
    if not needle:
        return None
    hay, starts = _normalised(passage)
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
    (case-folded, white space collapsed, as :func:`locate`) is one piece, searched after the
    previous piece first, then anywhere; a word found nowhere is skipped. Pieces come back in
    content order; an empty list when nothing is found.
    """
    tokens = [_normalised(w)[0] for w in (content or "").split()]
    if not tokens or not text:
        return []
    hay, starts = _normalised(text)

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


# ------------------------------------------------------------------------------------------- duplicates


class Entailment(Protocol):
    """Anything that scores P(premise entails hypothesis) for many pairs at once (NliJudge fits)."""

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


def nli_model_from_env() -> str | None:
    """The NLI model to suggest duplicates with ($ASSESS_NLI_MODEL: a Hugging Face name or a local folder)."""
    return os.environ.get("ASSESS_NLI_MODEL") or None


def configured_entailment(model: str | None = None) -> Entailment:
    """The NLI judge of ``model`` (default $ASSESS_NLI_MODEL) when ``assess.llm.clients`` offers one, else the
    lexical suggester. The NLI model loads on first use."""
    model = model or nli_model_from_env()
    if not model:
        return LexicalEntailment()
    try:
        from assess.llm.clients import NliJudge
    except ImportError:
        return LexicalEntailment()
    return NliJudge(model)


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


Decision = Literal["a_covers_b", "b_covers_a", "same", "distinct"]
DECISIONS: dict[str, str] = {
    "same": "same information (keep the earlier)",
    "a_covers_b": "A covers B (drop B)",
    "b_covers_a": "B covers A (drop A)",
    "distinct": "not duplicates",
}


def entailment_edges(decisions: Iterable[tuple[Any, Any, str | None]]) -> set[tuple[Any, Any]]:
    """Directed (premise, hypothesis) edges implied by confirmed decisions on pairs (a, b)."""
    edges = set()
    for a, b, decision in decisions:
        if decision not in (None, *DECISIONS):
            raise AssessError(f"a duplicate decision is one of {', '.join(DECISIONS)}, not {decision!r}")
        if decision in ("a_covers_b", "same"):
            edges.add((a, b))
        if decision in ("b_covers_a", "same"):
            edges.add((b, a))
    return edges


def dedup_keep(order: Sequence[Any], edges: set[tuple[Any, Any]]) -> dict[Any, bool]:
    """CONE-RAG Section 4.3: keep a nugget unless another *kept* nugget entails it.

    Nuggets are visited last to first, so of nuggets that entail each other the earliest is kept
    (the same rule as ``assess.llm.clients.dedup_keep``). ``edges`` holds (premise, hypothesis) pairs.
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


# ------------------------------------------------------------------------------------------- GFRC2


def words(text: str | None) -> list[str]:
    """Whitespace tokens (the FairWeb-2 / GFRC2 tokeniser: punctuation stays attached)."""
    return (text or "").split()


def word_spans(text: str) -> list[tuple[int, int]]:
    """Code-point (start, end) of each whitespace token of ``text``."""
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text or "")]


def words_in_span(text: str, start: int, end: int) -> tuple[int, int]:
    """The 1-based inclusive word range of ``text`` that a character span touches (for marking by selection)."""
    touched = [i for i, (s, e) in enumerate(word_spans(text), start=1) if s < end and e > start]
    if not touched:
        raise InvalidSpan("the selection holds no word")
    return touched[0], touched[-1]


class TurnText(NamedTuple):
    """One turn of a system's conversation: turn id, 1-based turn number, user utterance, system response."""

    turn_id: str
    number: int
    utterance: str | None
    response: str | None


def response_offsets(turns: Sequence[TurnText]) -> dict[str, tuple[int, int]]:
    """For each turn, (words before its response S_k, words in S_k) over the conversation U1 S1 U2 S2 …

    GFRC2 (MEASURES.md 2.1) numbers words 1.. over the whole conversation split on whitespace, so
    word w of response S_k is at position ``before + w``.
    """
    out = {}
    position = 0
    for t in turns:
        position += len(words(t.utterance))
        n = len(words(t.response))
        out[t.turn_id] = (position, n)
        position += n
    return out


def conversation_text(turns: Sequence[TurnText]) -> str:
    """The conversation U1 S1 U2 S2 … as one text (one line per utterance or response)."""
    return "\n".join(part for t in turns for part in (t.utterance or "", t.response or ""))


#: The GFRC2 case study's attribute sets (Sakai, Tao, Song 2025): PRONOUN nominal, HINDEX ordinal, uniform targets.
EXAMPLE_ATTRIBUTES = [
    {"name": "PRONOUN", "kind": "nominal", "groups": ["he", "she", "other"]},
    {"name": "HINDEX", "kind": "ordinal", "groups": ["G1", "G2", "G3", "G4"], "divergence": "RNOD"},
]


def mark_spans(text: str, marks: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Character spans of 1-based inclusive word ranges of ``text`` (for highlighting marked words)."""
    spans = word_spans(text)
    return [(spans[s - 1][0], spans[e - 1][1]) for s, e in marks if 1 <= s <= e <= len(spans)]


def validate_attributes(attributes: Sequence[Mapping]) -> list[dict]:
    """Check a study's attribute sets (name, kind nominal|ordinal, groups, optional target/divergence)."""
    from assess.measures.gfrc import parse_attributes

    parsed = parse_attributes(attributes, source="attribute sets")
    return [
        {"name": a.name, "kind": a.kind, "groups": list(a.groups), "target": list(a.target), "divergence": a.divergence}
        for a in parsed
    ]


def gfrc2_document(study: Mapping, conversations: Sequence[Mapping], *, about: str | None = None) -> dict:
    """Build a ``score gfrc2`` input from stored response-nugget marks.

    ``study`` = {"attributes", "max_level", "L"}; each conversation = {"id", "turns": [TurnText],
    "marks": [{"turn_id", "start_word", "end_word", "level", "groups"}]} where the word range is
    1-based inclusive inside that turn's response. Positions become conversation-wide (U1 S1 U2 …).
    """
    attributes = validate_attributes(study.get("attributes") or [])
    names = [a["name"] for a in attributes]
    out_convs = []
    for conv in conversations:
        turns = list(conv["turns"])
        offsets = response_offsets(turns)
        numbers = {t.turn_id: t.number for t in turns}
        nuggets = []
        for mark in sorted(
            conv.get("marks", ()), key=lambda m: (offsets.get(m["turn_id"], (0, 0))[0], m["start_word"])
        ):
            before, n = offsets.get(mark["turn_id"], (None, 0))
            if before is None or not 1 <= mark["start_word"] <= mark["end_word"] <= n:
                raise InvalidSpan(
                    f"conversation {conv['id']}: words {mark['start_word']}-{mark['end_word']} "
                    f"are not inside the response of turn {mark['turn_id']} ({n} words)"
                )
            groups = dict(mark.get("groups") or {})
            missing = [a for a in names if a not in groups]
            if missing:
                raise AssessError(
                    f"conversation {conv['id']}: a nugget of turn {mark['turn_id']} has no {missing[0]} group"
                )
            nuggets.append(
                {
                    "turn": numbers[mark["turn_id"]],
                    "start": before + mark["start_word"],
                    "end": before + mark["end_word"],
                    "level": int(mark["level"]),
                    "groups": {a: groups[a] for a in names},
                }
            )
        out_convs.append({"id": conv["id"], "nuggets": nuggets})
    doc = {
        "about": about
        or "Response nuggets marked in the assessment workbench: positions are 1-based "
        "inclusive word positions over U1 S1 U2 S2 ... split on whitespace.",
        "L": int(study.get("L") or 1000),
        "max_level": int(study.get("max_level") or 2),
        "attributes": attributes,
        "conversations": out_convs,
    }
    return doc


# ------------------------------------------------------------------------------------------- AEPD


def aepd_document(entries: Sequence[Mapping], *, about: str | None = None) -> dict:
    """Build a ``score aepd`` input: one entry per (run, turn) = {"id", "system", "conversation",
    "aspects": [{"aspect", "ptkb": [ids], "text"}]}; lengths are whitespace word counts of ``text``."""
    turns = []
    for e in entries:
        turns.append(
            {
                "id": e["id"],
                "system": e.get("system"),
                "conversation": e.get("conversation"),
                "aspects": [
                    {"aspect": a["aspect"], "ptkb": list(a.get("ptkb") or []), "text": a.get("text") or ""}
                    for a in e["aspects"]
                ],
            }
        )
    return {
        "about": about
        or "AEPD aspects, PTKB links and response content per aspect from the assessment "
        "workbench; lengths are whitespace word counts.",
        "turns": turns,
    }


def ptkb_ids(values: Iterable[str]) -> list:
    """PTKB statement ids as in the AEPD files: integers when numeric, else the id string."""
    return [int(v) if str(v).isdigit() else str(v) for v in values]
