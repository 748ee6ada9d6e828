"""GFRC2 and AEPD inputs from marked responses: whitespace words, word ranges, the scorers' documents.

Positions are whitespace words (the FairWeb-2 / GFRC2 tokeniser: punctuation stays attached), and
lengths are word counts, as the scorers in :mod:`assess.measures` expect (``docs/measures.md``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from assess.errors import AssessError, InvalidSpan
from assess.measures.gfrc import parse_attributes


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

    GFRC2 (``docs/measures.md``) numbers words 1.. over the whole conversation split on whitespace, so
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


#: The GFRC2 case study's attribute sets (Sakai, Tao, Song 2025): PRONOUN nominal, HINDEX ordinal, uniform targets.
EXAMPLE_ATTRIBUTES = [
    {"name": "PRONOUN", "kind": "nominal", "groups": ["he", "she", "other"]},
    {"name": "HINDEX", "kind": "ordinal", "groups": ["G1", "G2", "G3", "G4"], "divergence": "RNOD"},
]
EXAMPLE_ATTRIBUTES_JSON = json.dumps(EXAMPLE_ATTRIBUTES, indent=1)


def mark_spans(text: str, marks: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Character spans of 1-based inclusive word ranges of ``text`` (for highlighting marked words)."""
    spans = word_spans(text)
    return [(spans[s - 1][0], spans[e - 1][1]) for s, e in marks if 1 <= s <= e <= len(spans)]


def turn_mark_spans(turn: TurnText, marks: Iterable[Mapping]) -> list[tuple[int, int]]:
    """Character spans, in the turn's response, of the marks of that turn (for highlighting)."""
    ranges = [(m["start_word"], m["end_word"]) for m in marks if m["turn_id"] == turn.turn_id]
    return mark_spans(turn.response or "", ranges)


def mark_table(marks: Sequence[Mapping], offsets: Mapping[str, tuple[int, int]]) -> list[dict]:
    """Marks as table rows with conversation-wide word positions (``offsets`` from :func:`response_offsets`)."""
    return [
        {
            "id": m["id"],
            "turn": m["turn_id"],
            "words": f"{offsets[m['turn_id']][0] + m['start_word']}-{offsets[m['turn_id']][0] + m['end_word']}",
            "level": m["level"],
            **m["groups"],
            "text": m["text"],
        }
        for m in marks
    ]


def validate_attributes(attributes: Sequence[Mapping]) -> list[dict]:
    """Check a study's attribute sets (name, kind nominal|ordinal, groups, optional target/divergence)."""

    parsed = parse_attributes(attributes, source="attribute sets")
    return [
        {"name": a.name, "kind": a.kind, "groups": list(a.groups), "target": list(a.target), "divergence": a.divergence}
        for a in parsed
    ]


def parse_attributes_json(text: str, *, where: str = "attribute sets") -> list:
    """A study's attribute sets from JSON text (checked later by :func:`validate_attributes`)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise AssessError(f"{where}: expected a JSON list of attribute sets, found invalid JSON ({exc.msg})") from None


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


def ptkb_sorted(ids: Iterable[str]) -> list[str]:
    """PTKB statement ids in number order ('2' before '10'), non-numeric ids last."""
    return sorted(ids, key=lambda s: (not s.isdigit(), int(s) if s.isdigit() else 0, s))


def word_count(text: str | None) -> int:
    """How many whitespace words ``text`` has (AEPD lengths, GFRC2 positions)."""
    return len(words(text))


def proposed_aspects(answer: Mapping) -> list[dict]:
    """The aspects of a parsed AEPD answer as [{aspect, ptkb, text}]; aspects without a description are dropped."""
    out = []
    for a in answer.get("aspects") or []:
        text = str(a.get("aspect") or "").strip()
        if text:
            out.append(
                {
                    "aspect": text,
                    "ptkb": [str(p) for p in a.get("ptkb") or []],
                    "text": str(a.get("text") or "").strip(),
                }
            )
    return out
