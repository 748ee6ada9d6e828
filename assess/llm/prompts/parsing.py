"""Parsing a model's answers: grades, yes/no, a named scale's choices, nugget spans (repaired to exact substrings or
rejected, every decision recorded), AEPD aspects and bank matches. An answer that fits no shape is unparseable and
never becomes a label."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from typing import Any, NamedTuple

from assess.nuggets.spans import locate_span
from assess.tasks import (
    BATTLE_OUTCOME,
    CITATION_CONTRADICTS,
    CITATION_SUPPORT,
    CITATION_SUPPORT_WITHOUT_CONTRADICTS,
    GRADES,
    IMPORTANCE,
    SUPPORT,
    ParseStatus,
)


class Parsed(NamedTuple):
    status: ParseStatus  # ok | repaired | unparseable ('error' is a failed call, never a parse)
    value: Any  # grade (int), 0/1, {"spans": [...], "rejected": [...]}, {"aspects": [...]}; None if unparseable
    note: str | None = None


# ------------------------------------------------------------------------------------------- parsing

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)
_GRADE_KEYS = ("grade", "score", "relevance", "label", "rating")
_GRADE_LINE = re.compile(
    r"\b(?:grade|score|relevance|rating)\b\**\s*[:=]?\s*\**\s*(-?\d+(?:\.\d+)?)(?:\s*/\s*(\d+))?", re.I
)


_ALTERNATIVE = re.compile(r"\s*(?:or|to|and|-|–|—)\s*\d", re.I)


def _json_objects(text: str) -> list[Any]:
    """JSON values found in the answer: the whole text, fenced blocks, or the outermost {...} / [...]."""
    candidates = [text.strip()] + [m.strip() for m in _FENCE.findall(text)]
    for open_, close in (("{", "}"), ("[", "]")):
        i, j = text.find(open_), text.rfind(close)
        if 0 <= i < j:
            candidates.append(text[i : j + 1])
    out = []
    for c in candidates:
        try:
            out.append(json.loads(c))
        except (json.JSONDecodeError, ValueError):
            continue
    return out


def _as_grade(value: Any, top: int) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and float(value).is_integer() and 0 <= value <= top:
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*\d+\s*", value) and 0 <= int(value) <= top:
        return int(value)
    return None


def parse_grade(text: str, *, top: int = GRADES.high, **_) -> Parsed:
    """A grade 0..top from a bare number, 'Score: 3' / 'Grade: 3/4' lines, or JSON {"grade"|"score": 3}."""
    for obj in _json_objects(text):
        if isinstance(obj, dict):
            found = [k for k in obj if str(k).lower() in _GRADE_KEYS] or [
                k for k in obj if any(g in str(k).lower() for g in _GRADE_KEYS)
            ]  # 'relevance_score'
            if found:
                values = {json.dumps(obj[k]) for k in found}
                if len(values) > 1:  # {"grade": 3, "score": 1}: which one? never guess
                    return Parsed(
                        ParseStatus.UNPARSEABLE, None, f"conflicting grade fields {', '.join(map(str, found))}"
                    )
                grade = _as_grade(obj[found[0]], top)
                return (
                    Parsed(ParseStatus.OK, grade)
                    if grade is not None
                    else Parsed(ParseStatus.UNPARSEABLE, None, f"{found[0]} {obj[found[0]]!r} is not a grade 0-{top}")
                )
        elif _as_grade(obj, top) is not None and not isinstance(obj, str):
            return Parsed(ParseStatus.OK, _as_grade(obj, top))
    bare = text.strip().strip("*`'\". ")
    if re.fullmatch(r"\d+", bare):
        grade = _as_grade(bare, top)
        return (
            Parsed(ParseStatus.OK, grade)
            if grade is not None
            else Parsed(ParseStatus.UNPARSEABLE, None, f"{bare} is off the scale")
        )
    found = {}
    for m in _GRADE_LINE.finditer(text):
        denominator = m.group(2)
        if denominator is not None and int(denominator) != top:
            return Parsed(ParseStatus.UNPARSEABLE, None, f"a grade out of {denominator}, not {top}")
        if _ALTERNATIVE.match(text, m.end()):  # 'Grade 2 or 3', 'Score: 2-3'
            return Parsed(ParseStatus.UNPARSEABLE, None, "a range or choice of grades, not one grade")
        found[m.group(1)] = True
    if len(found) == 1:
        value = next(iter(found))
        grade = _as_grade(value, top) if re.fullmatch(r"\d+", value) else None
        return (
            Parsed(ParseStatus.OK, grade)
            if grade is not None
            else Parsed(ParseStatus.UNPARSEABLE, None, f"{value} is not a grade 0-{top}")
        )
    if len(found) > 1:
        return Parsed(ParseStatus.UNPARSEABLE, None, f"several different grades: {', '.join(found)}")
    first_line = text.strip().splitlines()[0].strip().strip("*`'\". ")
    if re.fullmatch(r"\d", first_line) and _as_grade(first_line, top) is not None:
        return Parsed(ParseStatus.OK, int(first_line))
    return Parsed(ParseStatus.UNPARSEABLE, None, "no grade found")


_YES = {"yes", "y", "true", "1", "relevant", "match", "matched"}
_NO = {"no", "n", "false", "0", "not relevant", "irrelevant", "no match", "not matched"}


def _yes_no_value(value: Any) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int) and value in (0, 1):
        return value
    if isinstance(value, str):
        v = value.strip().strip("*`'\".!").lower()
        if v in _YES:
            return 1
        if v in _NO:
            return 0
    return None


def parse_yes_no(text: str, **_) -> Parsed:
    """1 for yes, 0 for no: a bare yes/no (or 1/0), 'Answer: yes', a leading 'Yes, ...', or JSON {"answer": "yes"}."""
    for obj in _json_objects(text):
        if isinstance(obj, dict):
            for key in ("answer", "match", "relevant", "label", "decision"):
                if key in obj:
                    value = _yes_no_value(obj[key])
                    return (
                        Parsed(ParseStatus.OK, value)
                        if value is not None
                        else Parsed(ParseStatus.UNPARSEABLE, None, f"{key} {obj[key]!r} is not yes/no")
                    )
    value = _yes_no_value(text)
    if value is not None:
        return Parsed(ParseStatus.OK, value)
    m = re.search(r"\banswer\b\**\s*(?:\(yes/no\))?\s*[:=]\s*\**\s*(yes|no)\b", text, re.I)
    if m:
        return Parsed(ParseStatus.OK, int(m.group(1).lower() == "yes"))
    m = re.match(r"\s*\**\s*(yes|no)\b[\s,.;:!*-]", text + " ", re.I)
    if m:
        first_sentence = re.split(r"[.!?\n]", text.strip(), maxsplit=1)[0].lower()
        words = set(re.findall(r"[a-z]+", first_sentence))
        if {"yes", "no"} <= words:  # 'Yes, but no': both answers in one breath
            return Parsed(ParseStatus.UNPARSEABLE, None, "both yes and no in the answer")
        return Parsed(ParseStatus.OK, int(m.group(1).lower() == "yes"))
    return Parsed(ParseStatus.UNPARSEABLE, None, "no yes/no answer found")


# Choice answers (graded NtR support, nugget importance, citation support): the answer is one of a scale's names.
# Accepted: the name alone, a JSON object or string naming it, an 'Answer: <name>' line, or the name opening the
# first line before a comma, full stop, dash or colon (then nothing else in that sentence may name another value).
# Each vocabulary holds the scale's names and a few spellings models commonly use (nuggetizer's
# ``partial_support``, 'not supported'); anything else is unparseable, never mapped to the nearest value.

SUPPORT_WORDS: dict[str, int] = {
    **{name: value for value, name in SUPPORT.names.items()},
    "supported": 2,
    "full support": 2,
    "fully supported": 2,
    "partially supported": 1,
    "partly supported": 1,
    "not support": 0,  # nuggetizer's not_support
    "not supported": 0,
    "unsupported": 0,
}
IMPORTANCE_WORDS: dict[str, int] = {**{name: value for value, name in IMPORTANCE.names.items()}, "ok": 0}
CITATION_WORDS: dict[str, int] = {
    **{name: value for value, name in CITATION_SUPPORT_WITHOUT_CONTRADICTS.names.items()},
    "supported": 2,
    "full support": 2,
    "fully": 2,
    "partial support": 1,
    "partly supported": 1,
    "partially": 1,
    "no support": 0,
    "unsupported": 0,
    "irrelevant": -1,
    "irrelevant citation": -1,
    "citation is irrelevant": -1,
}
CITATION_CONTRADICTS_WORDS: dict[str, int] = {
    **CITATION_WORDS,
    CITATION_SUPPORT.names[CITATION_CONTRADICTS]: CITATION_CONTRADICTS,
    "contradicted": CITATION_CONTRADICTS,
    "contradiction": CITATION_CONTRADICTS,
    "contradictory": CITATION_CONTRADICTS,
}
"""The contradicts variant's words: the plain prompt's (which never reads "contradicts") and "contradicts"."""
BATTLE_WORDS: dict[str, int] = {
    **{name.lower(): value for value, name in BATTLE_OUTCOME.names.items()},
    "answer a": 1,
    "a": 1,
    "answer b": 2,
    "b": 2,
    "a is better": 1,
    "b is better": 2,
    "both are bad": -1,
    "neither": -1,
    "equal": 0,
}
_CHOICE_KEYS = ("answer", "label", "support", "importance", "citation", "verdict", "decision", "judgment", "judgement")
_CHOICE_LINE = re.compile(r"^\W*(?:" + "|".join(_CHOICE_KEYS) + r")\W*?\s*[:=]\s*(.+?)\s*$", re.I | re.M)


def _choice_word(text: str) -> str:
    """An answer folded for lookup: NFKC, lower case, '_' and '-' as spaces, runs of white space as one,
    markdown, quotes and end punctuation stripped."""
    text = unicodedata.normalize("NFKC", text).lower().replace("_", " ").replace("-", " ")
    return " ".join(text.split()).strip("*`'\"“”‘’.,;:!?()[]{} ")


def _named_values(text: str, words: dict[str, int]) -> set[int]:
    """The values of every vocabulary phrase named in ``text`` as whole words."""
    folded = " " + re.sub(r"[^a-z ]+", " ", _choice_word(text)) + " "
    folded = " ".join(folded.split())
    return {v for w, v in words.items() if re.search(rf"(?<![a-z]){re.escape(w)}(?![a-z])", folded)}


def parse_choice(text: str, words: dict[str, int], what: str) -> Parsed:
    """One value of a named scale from an answer (see the vocabularies above); several or none: unparseable."""

    def looked_up(answer: Any, where: str) -> Parsed:
        value = words.get(_choice_word(answer)) if isinstance(answer, str) else None
        if value is None:
            return Parsed(ParseStatus.UNPARSEABLE, None, f"{where} {answer!r} is not one of the {what} answers")
        return Parsed(ParseStatus.OK, value)

    for obj in _json_objects(text):
        if isinstance(obj, dict):
            found = [k for k in obj if str(k).lower() in _CHOICE_KEYS]
            if found:
                if len({json.dumps(obj[k]) for k in found}) > 1:
                    return Parsed(ParseStatus.UNPARSEABLE, None, f"conflicting fields {', '.join(map(str, found))}")
                return looked_up(obj[found[0]], found[0])
        elif isinstance(obj, str):
            return looked_up(obj, "answer")
    whole = words.get(_choice_word(text))
    if whole is not None:
        return Parsed(ParseStatus.OK, whole)
    stated = {m.group(1) for m in _CHOICE_LINE.finditer(text)}
    if stated:
        values = {words.get(_choice_word(a)) for a in stated}
        if len(values) > 1:
            return Parsed(ParseStatus.UNPARSEABLE, None, f"several different answers: {', '.join(sorted(stated))}")
        return looked_up(next(iter(stated)), "answer")
    first = text.strip().splitlines()[0]
    if _choice_word(first) in words:  # the answer on its own line, an explanation below
        return Parsed(ParseStatus.OK, words[_choice_word(first)])
    folded = _choice_word(first)
    for word in sorted(words, key=len, reverse=True):  # 'not supported, because ...': longest name first
        m = re.match(rf"{re.escape(word)}\s*[,.;:—–]\s*", folded)
        if m:
            rest = re.split(r"[.!?]", folded[m.end() :], maxsplit=1)[0]
            if _named_values(rest, words) - {words[word]}:
                return Parsed(ParseStatus.UNPARSEABLE, None, f"more than one {what} answer in one sentence")
            return Parsed(ParseStatus.OK, words[word])
    return Parsed(ParseStatus.UNPARSEABLE, None, f"no {what} answer found")


def parse_support(text: str, **_) -> Parsed:
    """Graded NtR: 2 support, 1 partial support, 0 no support."""
    return parse_choice(text, SUPPORT_WORDS, "support")


def parse_importance(text: str, **_) -> Parsed:
    """Nugget importance: 1 vital, 0 okay."""
    return parse_choice(text, IMPORTANCE_WORDS, "importance")


def parse_citation(text: str, **_) -> Parsed:
    """Citation support: 2 fully, 1 partially, 0 not supported, -1 citation irrelevant."""
    return parse_choice(text, CITATION_WORDS, "citation support")


def parse_citation_contradicts(text: str, **_) -> Parsed:
    """Citation support with contradiction: as :func:`parse_citation`, and -2 contradicts."""
    return parse_choice(text, CITATION_CONTRADICTS_WORDS, "citation support")


def parse_battle(text: str, **_) -> Parsed:
    """A battle verdict: 1 answer A (the left one) better, 2 answer B better, 0 tie, -1 both bad."""
    return parse_choice(text, BATTLE_WORDS, "battle")


# ------------------------------------------------------------------------------------------- spans


def resolve_spans(candidates: Sequence[str], source: str) -> Parsed:
    """Turn extracted strings into exact spans of ``source`` (repairing or rejecting, every decision recorded).

    Value: ``{"spans": [{"start", "end", "text", "how", "original"}], "rejected": [{"original", "why"}]}``;
    status 'repaired' when any span needed repair; 'unparseable' when strings were given and none matched.
    """
    spans, rejected, taken = [], [], []
    for cand in candidates:
        span, how = locate_span(cand, source, taken)
        if span is None:
            rejected.append({"original": cand, "why": how.removeprefix("rejected: ")})
            continue
        if (span.start, span.end) in taken:
            rejected.append({"original": cand, "why": "duplicate of an earlier span"})
            continue
        taken.append((span.start, span.end))
        spans.append({"start": span.start, "end": span.end, "text": span.text, "how": how, "original": cand})
    repaired = sum(s["how"] != "exact" for s in spans)
    note = (
        ", ".join(
            x
            for x in (f"{repaired} repaired" if repaired else "", f"{len(rejected)} rejected" if rejected else "")
            if x
        )
        or None
    )
    value = {"spans": spans, "rejected": rejected}
    if candidates and not spans:
        return Parsed(ParseStatus.UNPARSEABLE, value, note)
    return Parsed(ParseStatus.REPAIRED if repaired else ParseStatus.OK, value, note)


_NO_NUGGET = re.compile(r"^\W*no\s+nuggets?\W*$", re.I)


def parse_spans(text: str, *, source: str = "", **_) -> Parsed:
    """Extracted nuggets, one per line (or a JSON list of strings), resolved to exact spans of ``source``."""
    if _NO_NUGGET.match(text.strip()):
        return Parsed(ParseStatus.OK, {"spans": [], "rejected": []}, "no nugget")
    candidates = None
    for obj in _json_objects(text):
        if isinstance(obj, list) and all(isinstance(x, str) for x in obj):
            candidates = obj
            break
        if (
            isinstance(obj, dict)
            and isinstance(obj.get("nuggets"), list)
            and all(isinstance(x, str) for x in obj["nuggets"])
        ):
            candidates = obj["nuggets"]
            break
    if candidates is None:
        lines = [ln for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("```")]
        lines = [ln for ln in lines if not re.match(r"^\s*#*\s*nuggets?\s*:?\s*$", ln, re.I)]
        candidates = [ln.strip() for ln in lines]
    candidates = [c for c in candidates if c.strip()]
    if not candidates:
        return Parsed(ParseStatus.UNPARSEABLE, None, "no nuggets listed")
    return resolve_spans(candidates, source)


def parse_aspects(text: str, *, source: str = "", statements: Sequence[str] = (), **_) -> Parsed:
    """AEPD aspects from JSON ``{"aspects": [{"aspect", "ptkb", "text"}]}``, texts resolved to spans of the response.

    Value: ``{"aspects": [{"aspect", "ptkb": [ids], "text", "start", "end", "how"}]}`` in the AEPD
    input shape (:func:`assess.measures.aepd.score_aepd_document`); a text not found in the response is
    dropped (the aspect counts as not covered) and noted; PTKB numbers the conversation lacks are dropped and noted.
    """
    data = None
    for obj in _json_objects(text):
        if isinstance(obj, dict) and isinstance(obj.get("aspects"), list):
            data = obj["aspects"]
            break
        if isinstance(obj, list):
            data = obj
            break
    if data is None or not all(isinstance(a, dict) and isinstance(a.get("aspect"), str) for a in data):
        return Parsed(ParseStatus.UNPARSEABLE, None, "no JSON aspects list")
    known = {str(s) for s in statements}
    aspects, notes, repaired, taken = [], [], 0, []
    for a in data:
        raw_ptkb = a.get("ptkb") or []
        if not isinstance(raw_ptkb, list):
            raw_ptkb = [raw_ptkb]
        ptkb = [str(p) for p in raw_ptkb if str(p) in known or not known]
        if len(ptkb) < len(raw_ptkb):
            notes.append(f"unknown PTKB numbers dropped in {a['aspect']!r}")
        entry = {"aspect": a["aspect"], "ptkb": ptkb, "text": "", "start": None, "end": None, "how": None}
        cover = a.get("text") or ""
        if isinstance(cover, str) and cover.strip():
            span, how = locate_span(cover, source, taken)
            if span is None:
                notes.append(f"text of {a['aspect']!r} {how}")
            else:
                taken.append((span.start, span.end))
                repaired += how != "exact"
                entry.update(text=span.text, start=span.start, end=span.end, how=how)
        aspects.append(entry)
    if repaired:
        notes.insert(0, f"{repaired} repaired")
    return Parsed(ParseStatus.REPAIRED if repaired else ParseStatus.OK, {"aspects": aspects}, "; ".join(notes) or None)


def parse_bank_match(text: str, *, sentences: int = 0, **_) -> Parsed:
    """1 when the report states the answer, 0 when not: JSON ``{"contains": yes/no, "sentences": [n, ...]}``
    (the sentence numbers, each from 1 to ``sentences``, kept in the note), else a yes/no answer as
    :func:`parse_yes_no` reads it (no sentences then)."""
    for obj in _json_objects(text):
        if isinstance(obj, dict) and any(k in obj for k in ("contains", "answer")):
            raw = obj.get("contains", obj.get("answer"))
            value = _yes_no_value(raw)
            if value is None:
                return Parsed(ParseStatus.UNPARSEABLE, None, f"contains {raw!r} is not yes/no")
            cited = obj.get("sentences") or []
            if not isinstance(cited, list) or not all(
                isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= sentences for n in cited
            ):
                return Parsed(
                    ParseStatus.UNPARSEABLE, None, f"sentences {cited!r} are not numbers from 1 to {sentences}"
                )
            numbers = sorted(set(cited)) if value else []
            return Parsed(
                ParseStatus.OK, value, _SENTENCES_NOTE + ", ".join(str(n) for n in numbers) if numbers else None
            )
    return parse_yes_no(text)


_SENTENCES_NOTE = "sentences: "


def bank_match_sentences(note: str | None) -> tuple[int, ...]:
    """The sentence numbers :func:`parse_bank_match` kept in an answer's note (none without such a note)."""
    if not note or not note.startswith(_SENTENCES_NOTE):
        return ()
    return tuple(int(n) for n in note.removeprefix(_SENTENCES_NOTE).split(", "))
