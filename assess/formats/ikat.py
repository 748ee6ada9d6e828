"""iKAT files: topics (the 2023, 2024 and 2025 schemas) and generated responses.

Responses with their citations (the 2025 topics' ``citations``, TREC RAG answers) are read by
:mod:`assess.formats.responses`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, NamedTuple

from assess.formats.reading import JsonChecker, JsonRecords, open_regular, per_turn
from assess.formats.trec import qrels_table

MAX_TURN_NUMBER = 10**9


class Turn(NamedTuple):
    id: str
    turn_number: int
    utterance: str | None
    resolved_utterance: str | None
    response: str | None
    relevant_ptkb: tuple[str, ...]
    response_provenance: tuple[str, ...]
    parent_turn_id: str | None = None


class Conversation(NamedTuple):
    id: str
    number: str
    title: str | None
    year: int | None
    ptkb: dict[str, str]
    turns: tuple[Turn, ...]


class ResponseRecord(NamedTuple):
    turn_id: str
    run: str
    text: str
    nuggets_used: tuple[str, ...] | None
    line: int | None


def parse_topics(path: str | Path, *, year: int | None = None) -> list[Conversation]:
    """Read iKAT topics JSON: the 2023/2024 schema (``ptkb`` dict, ``turns``) or 2025 (``ptkb`` list, ``responses``).

    Turn ids are ``<number>_<turn_id>`` as in the qrels. The year is taken from ``year`` or guessed
    from the schema: string numbers with ``turns`` → 2023, int numbers → 2024, ``responses`` → 2025.
    All of them, as a list; :func:`iter_topics` gives them one at a time.
    """
    return list(iter_topics(path, year=year))


def iter_topics(path: str | Path | BinaryIO, *, year: int | None = None, name=None) -> Iterator[Conversation]:
    """The conversations of an iKAT topics file (see :func:`parse_topics`), read and checked one at a time.

    Only one conversation's JSON is in memory at a time (:class:`~assess.formats.reading.JsonRecords`),
    plus the set of turn ids seen (a turn id given twice is refused across the file). A FormatError is
    raised where the file breaks, after the conversations before it have been given: an importer that
    must leave the store unchanged writes them inside one transaction. ``path`` may be a binary file
    object (``name`` then names it in errors).
    """
    with JsonRecords(path, name) as records:
        if records.kind is not list:
            records.fail("a list of conversations")
        count = 0
        seen_turns: set[str] = set()
        for ci, conv, check in records:
            count += 1
            yield _conversation(check, ci, conv, seen_turns, year)
        if not count:
            records.fail("at least one conversation", "an empty list")


def _conversation(check: JsonChecker, ci: int, conv, seen_turns: set[str], year: int | None) -> Conversation:
    """One conversation of a topics file (``ci``: its index), its turns checked against ``seen_turns``."""
    if not isinstance(conv, dict):
        check.fail((ci,), "a conversation object", conv)
    number = check.get(conv, "number", (int, str), (ci,))
    if isinstance(number, bool) or (isinstance(number, int) and not 0 <= number <= MAX_TURN_NUMBER):
        check.fail((ci, "number"), f"a conversation number 0..{MAX_TURN_NUMBER:,} or an id string", number)
    title = check.get(conv, "title", str, (ci,), required=False)
    if "responses" in conv and "turns" not in conv:
        schema_year = 2025
        raw_ptkb = check.get(conv, "ptkb", list, (ci,))
        ptkb = {}
        for si, statement in enumerate(raw_ptkb):
            if not isinstance(statement, str):
                check.fail((ci, "ptkb", si), "a statement string", statement)
            ptkb[str(si + 1)] = statement
        if len(set(raw_ptkb)) != len(raw_ptkb):
            repeated = next(i for i, x in enumerate(raw_ptkb) if raw_ptkb.index(x) != i)
            check.fail((ci, "ptkb", repeated), "each PTKB statement once", raw_ptkb[repeated])
        turns_key, utt_key, ptkb_key, prov_key = "responses", "user_utterance", "relevant_ptkbs", "citations"
    else:
        schema_year = 2024 if isinstance(number, int) else 2023
        raw_ptkb = check.get(conv, "ptkb", dict, (ci,))
        ptkb = {}
        for key, statement in raw_ptkb.items():
            if not isinstance(statement, str):
                check.fail((ci, "ptkb", key), "a statement string", statement)
            key_id = check.id(key, (ci, "ptkb", key), "a PTKB statement key")
            if key_id in ptkb and ptkb[key_id] != statement:
                check.fail((ci, "ptkb", key), f"one text per PTKB statement key ({key_id!r} is given twice)", statement)
            ptkb[key_id] = statement
        turns_key, utt_key, ptkb_key, prov_key = "turns", "utterance", "ptkb_provenance", "response_provenance"
    conv_id = check.id(str(number), (ci, "number"), "a conversation id")
    raw_turns = check.get(conv, turns_key, list, (ci,))
    turns = []
    for ti, t in enumerate(raw_turns):
        tp = (ci, turns_key, ti)
        if not isinstance(t, dict):
            check.fail(tp, "a turn object", t)
        turn_no = turn_number(check, check.get(t, "turn_id", (int, str), tp), tp + ("turn_id",))
        turn_id = f"{conv_id}_{turn_no}"
        if turn_id in seen_turns:
            check.fail(tp + ("turn_id",), "each turn id once", f"turn {turn_id} again")
        seen_turns.add(turn_id)
        relevant = check.get(t, ptkb_key, list, tp, required=False) or []
        rel_keys = []
        for ri, r in enumerate(relevant):
            if isinstance(r, bool) or not isinstance(r, (int, str)):
                check.fail(tp + (ptkb_key, ri), "a PTKB statement number", r)
            key = str(r).strip()
            if key not in ptkb:
                # 2025 files may cite the statement text itself
                match = [k for k, s in ptkb.items() if s == r]
                if not match:
                    check.fail(
                        tp + (ptkb_key, ri),
                        f"one of the conversation's PTKB keys {sorted(ptkb, key=_natural)}",
                        str(r),
                    )
                key = match[0]
            rel_keys.append(key)
        prov_ids = cited_passages(check, t, prov_key, tp)
        turns.append(
            Turn(
                id=turn_id,
                turn_number=turn_no,
                utterance=check.get(t, utt_key, str, tp, required=False),
                resolved_utterance=check.get(t, "resolved_utterance", str, tp, required=False),
                response=check.get(t, "response", str, tp, required=False),
                relevant_ptkb=tuple(dict.fromkeys(rel_keys)),
                response_provenance=tuple(dict.fromkeys(prov_ids)),
                parent_turn_id=_parent(check, conv_id, t.get("parent"), tp + ("parent",)),
            )
        )
    return Conversation(conv_id, str(number), title, year or schema_year, ptkb, tuple(turns))


def cited_passages(check: JsonChecker, turn: dict, key: str, json_path: tuple) -> list[str]:
    """The passage ids a turn's ``key`` lists (absent or null: none), in order, repeats kept; an
    element may be an id or an object with ``passage_id`` (or ``id`` / ``doc_id``)."""
    ids = []
    for index, cited in enumerate(check.get(turn, key, list, json_path, required=False) or []):
        if isinstance(cited, dict):
            cited = cited.get("passage_id") or cited.get("id") or cited.get("doc_id")
        ids.append(check.id(cited, json_path + (key, index), "a passage id"))
    return ids


def turn_number(check: JsonChecker, value, json_path: tuple) -> int:
    """A turn number: an integer 0..MAX_TURN_NUMBER, or a string of ASCII digits (no sign)."""
    expected = f"an integer turn id 0..{MAX_TURN_NUMBER:,}"
    if isinstance(value, str):
        text = value.strip()
        if not (text.isascii() and text.isdigit() and len(text) <= 10):
            check.fail(json_path, expected, value)
        value = int(text)
    if isinstance(value, bool) or not 0 <= value <= MAX_TURN_NUMBER:
        check.fail(json_path, expected, value)
    return value


def _parent(check: JsonChecker, conv_id: str, value, json_path: tuple) -> str | None:
    """The parent turn's id (CAsT trees): the conversation's own turn of that number, or absent."""
    if value is None:
        return None
    if isinstance(value, str) and not value.strip().isdigit():
        return f"{conv_id}_{check.id(value, json_path, 'a parent turn id')}"
    return f"{conv_id}_{turn_number(check, value, json_path)}"


def _natural(key: str):
    return (0, int(key), "") if key.isdigit() else (1, 0, key)


def parse_responses(path: str | Path) -> list[ResponseRecord]:
    """:func:`iter_responses` as a list."""
    return list(iter_responses(path))


def iter_responses(path: str | Path) -> Iterator[ResponseRecord]:
    """Read responses: CONE-RAG ``{turn: {run: text}}``, ``{turn: {run: {"response", "nuggets"}}}``
    (response nuggets and the gold ``manual`` file), with the matched nugget texts when present. The file
    is read one turn at a time: a FormatError comes after the responses of the turns before it."""
    for check, turn, run, value in per_turn(path, "an object {turn id: {run: response}}", "an object {run: response}"):
        used = None
        if isinstance(value, dict):
            body = check.get(value, "response", str, (turn, run))
            nug = value.get("nuggets")
            if isinstance(nug, dict) and isinstance(nug.get("matched"), list):
                used = tuple(str(x) for x in nug["matched"])
        elif isinstance(value, str):
            body = value
        else:
            check.fail((turn, run), "a response string or object", value)
        yield ResponseRecord(turn, run, body, used, None)


def personal_turns(path: str | Path) -> set[str]:
    """Personal turns: iKAT topics JSON (turns with relevant PTKB statements) or PTKB qrels (a grade > 0)."""

    with open_regular(path) as handle:
        head = handle.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")
    if head[:1] in (b"[", b"{"):
        return {t.id for conv in parse_topics(path) for t in conv.turns if t.relevant_ptkb}
    return {turn for turn, grades in qrels_table(path, ptkb=True).items() if any(g > 0 for g in grades.values())}
