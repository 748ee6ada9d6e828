"""Readers (and TREC writers) for the formats the iKAT / CAsT community uses.

Every reader is pure: it takes a path, returns plain records, and raises
:class:`~assess.errors.FormatError` naming the file, the line and what was expected vs found.
They tolerate the real files' quirks: tabs or spaces, trailing spaces, CRLF line ends, a UTF-8
byte-order mark, blank lines, the 2023 ``9-1_3`` and 2024 ``0_8`` turn ids, and lines repeated
verbatim (kept once). Two lines that give the same item different values are refused.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from assess.errors import FormatError

GRADES = {
    4: "Fully meets",
    3: "Highly meets",
    2: "Moderately meets",
    1: "Slightly meets",
    0: "Fails to meet",
}
"""The iKAT / CAsT passage relevance scale, used both for display and for validation."""

GRADE_DEFINITIONS = {
    4: "the passage is about the user's need in this turn and answers it completely; nothing important is missing",
    3: "the passage answers the need well, with a detail missing or a little unrelated material around it",
    2: "the passage answers part of the need, or answers it only with effort or indirectly",
    1: "the passage is on the topic of the turn but does not answer the need; marginal help at best",
    0: "the passage does not help with this turn: off topic, a wrong sense, or empty of content",
}
"""Our wording of what each grade means, shown beside the keys on the judging page."""


class Qrel(NamedTuple):
    turn_id: str
    item_id: str  # passage id (passage qrels) or PTKB statement key (PTKB qrels)
    grade: int
    line: int


class RunRow(NamedTuple):
    turn_id: str
    passage_id: str
    rank: int
    score: float
    tag: str
    line: int


class PassageText(NamedTuple):
    passage_id: str
    doc_id: str | None
    text: str
    line: int


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


class NuggetRecord(NamedTuple):
    turn_id: str
    key: str
    text: str
    relevance: int | None
    line: int | None


class ResponseRecord(NamedTuple):
    turn_id: str
    run: str
    text: str
    nuggets_used: tuple[str, ...] | None
    line: int | None


class NtrRecord(NamedTuple):
    batch: str
    turn_id: str
    nugget_key: str  # '[k]'
    run: str
    match: int
    line: int


# ---------------------------------------------------------------------------------- text files


def read_text(path: str | Path) -> str:
    """The file's text (a UTF-8 BOM dropped); bytes that are not UTF-8 are refused with their line and column."""
    path = Path(path)
    data = path.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        number = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise FormatError(path, number, "UTF-8 text", f"the byte 0x{data[exc.start]:02x} at column {column}") from None


def read_lines(path: str | Path) -> list[tuple[int, str]]:
    """Return (line number, text) for every non-blank line, stripped; refuse bytes that are not UTF-8."""
    lines = read_text(path).split("\n")
    return [(number, text) for number, line in enumerate(lines, start=1) if (text := line.strip())]


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a bulk read or write.

    Tens of thousands of small tuples trigger repeated full collections that find nothing (records
    hold no cycles): pausing them halves the time of parsing a year's qrels. Nests safely.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _short(text: str, limit: int = 60) -> str:
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return repr(text)


def _int(path, line, value: str, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise FormatError(path, line, what, _short(value)) from None


def _check_no_conflicts(path, records: Iterable, key, value) -> list:
    """Keep the first of identical duplicate records; refuse two records giving one key different values."""
    seen: dict = {}
    out = []
    for rec in records:
        k = key(rec)
        if k in seen:
            first = seen[k]
            if value(first) != value(rec):
                raise FormatError(
                    path,
                    rec.line,
                    f"one value per item ({' '.join(map(str, k))} is {value(first)} on line {first.line})",
                    f"{value(rec)}",
                )
            continue
        seen[k] = rec
        out.append(rec)
    return out


def parse_qrels(path: str | Path, *, low: int = 0, high: int = 4, item: str = "passage id") -> list[Qrel]:
    """Read a TREC qrels file: ``turn 0 item grade`` per line (any whitespace), grades in [low, high].

    A year's qrels are tens of thousands of lines, so a well-formed file (four fields on every line,
    no blank line, every grade in range, no repeated item) is read column-wise with C-level string
    and list operations. Anything else takes the line-by-line reader, which names the first bad line
    or keeps verbatim repeats once.
    """
    with paused_gc():
        rows = _qrels_by_column(read_text(path), low, high)
        return rows if rows is not None else _read_qrels(path, low, high, item)


def _qrels_by_column(text: str, low: int, high: int) -> list[Qrel] | None:
    """Read a well-formed qrels text column-wise (no Python loop per line); None if any line is not."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    parts = list(map(str.split, lines))
    if set(map(len, parts)) != {4}:  # a blank line, a missing or extra field
        return None
    turns, _iterations, items, grade_texts = zip(*parts)
    valid = {str(g): g for g in range(low, high + 1)}
    grades = list(map(valid.get, grade_texts))
    if None in grades or len(set(zip(turns, items))) != len(turns):  # a bad grade, a repeated item
        return None
    return list(map(tuple.__new__, itertools.repeat(Qrel), zip(turns, items, grades, itertools.count(1))))


def _read_qrels(path: str | Path, low: int, high: int, item: str) -> list[Qrel]:
    rows: list[Qrel] = []
    seen: dict[tuple[str, str], tuple[int, int]] = {}
    valid = {str(g): g for g in range(low, high + 1)}
    new_qrel = tuple.__new__
    for number, text in read_lines(path):
        fields = text.split()
        if len(fields) != 4:
            raise FormatError(
                path,
                number,
                f"4 fields (turn id, 0, {item}, grade)",
                f"{len(fields)} field{'s' if len(fields) != 1 else ''}: {_short(text)}",
            )
        turn, _iteration, item_id, grade_text = fields
        grade = valid.get(grade_text)
        if grade is None:
            grade = _int(path, number, grade_text, f"an integer grade {low}..{high}")
            if not low <= grade <= high:
                raise FormatError(path, number, f"a grade {low}..{high}", str(grade))
        key = (turn, item_id)
        first = seen.setdefault(key, (grade, number))
        if first[1] != number:
            if first[0] != grade:
                raise FormatError(
                    path, number, f"one value per item ({turn} {item_id} is {first[0]} on line {first[1]})", str(grade)
                )
            continue  # the same line again: kept once
        rows.append(new_qrel(Qrel, (turn, item_id, grade, number)))
    if not rows:
        raise FormatError(path, None, "at least one qrels line", "an empty file")
    return rows


def parse_ptkb_qrels(path: str | Path) -> list[Qrel]:
    """Read PTKB qrels: ``turn 0 statement_number rel`` (rel 0/1 in iKAT; 0..4 accepted)."""
    return parse_qrels(path, low=0, high=4, item="PTKB statement number")


def parse_run(path: str | Path) -> list[RunRow]:
    """Read a TREC run: ``turn Q0 passage rank score tag`` per line."""
    rows = []
    for number, text in read_lines(path):
        fields = text.split()
        if len(fields) != 6:
            raise FormatError(
                path,
                number,
                "6 fields (turn id, Q0, passage id, rank, score, run tag)",
                f"{len(fields)} field{'s' if len(fields) != 1 else ''}: {_short(text)}",
            )
        turn, _q0, passage, rank_text, score_text, tag = fields
        rank = _int(path, number, rank_text, "an integer rank")
        try:
            score = float(score_text)
        except ValueError:
            raise FormatError(path, number, "a numeric score", _short(score_text)) from None
        if score != score or score in (float("inf"), float("-inf")):
            raise FormatError(path, number, "a finite score", score_text)
        rows.append(RunRow(turn, passage, rank, score, tag, number))
    if not rows:
        raise FormatError(path, None, "at least one run line", "an empty file")
    seen: dict = {}
    for r in rows:
        key = (r.tag, r.turn_id, r.passage_id)
        if key in seen:
            raise FormatError(
                path,
                r.line,
                f"each passage once per turn (it is on line {seen[key]})",
                f"{r.passage_id} again for turn {r.turn_id}",
            )
        seen[key] = r.line
    return rows


def rank_run(rows: Iterable[RunRow]) -> dict[tuple[str, str], list[RunRow]]:
    """Group a run by (tag, turn) and order each ranking as trec_eval does: score desc, then passage id desc."""
    groups: dict[tuple[str, str], list[RunRow]] = {}
    for r in rows:
        groups.setdefault((r.tag, r.turn_id), []).append(r)
    for key, items in groups.items():
        items.sort(key=lambda r: r.passage_id, reverse=True)
        items.sort(key=lambda r: r.score, reverse=True)
    return groups


def parse_passages(path: str | Path) -> list[PassageText]:
    """Read passage text JSONL (iKAT ``psg_text``: ``doc_id``, ``passage_id``, ``passage_text``).

    Also accepted: ``{"id", "contents"}`` / ``{"id", "text"}`` (Pyserini / ir_datasets style).
    A ``passage_id`` without ':' is joined to its ``doc_id`` as ``doc_id:passage_id``.
    """
    out = []
    for number, text in read_lines(path):
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise FormatError(path, number, "one JSON object per line", f"invalid JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise FormatError(path, number, "a JSON object", type(obj).__name__)
        doc = obj.get("doc_id")
        pid = obj.get("passage_id", obj.get("id"))
        body = obj.get("passage_text", obj.get("contents", obj.get("text")))
        if pid is None or body is None:
            raise FormatError(
                path, number, "fields passage_id (or id) and passage_text (or contents/text)", f"fields {sorted(obj)}"
            )
        if not isinstance(body, str):
            raise FormatError(path, number, "passage_text as a string", type(body).__name__)
        if not isinstance(pid, (str, int)) or (doc is not None and not isinstance(doc, str)):
            raise FormatError(path, number, "string ids", f"passage_id {type(pid).__name__}")
        pid = str(pid)
        full = pid if (":" in pid or not doc) else f"{doc}:{pid}"
        out.append(PassageText(full, doc or full.rsplit(":", 1)[0], body, number))
    if not out:
        raise FormatError(path, None, "at least one passage", "an empty file")
    return out


# ---------------------------------------------------------------------------------- JSON files


def load_json(path: str | Path) -> tuple[Any, str]:
    """Parse a JSON file; return (value, text). Invalid UTF-8 or JSON names the line."""
    path = Path(path)
    data = path.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise FormatError(path, line, "UTF-8 text", f"the byte 0x{data[exc.start]:02x}") from None
    try:
        return json.loads(text), text
    except json.JSONDecodeError as exc:
        found = "the end of the file" if exc.pos >= len(text.rstrip()) else exc.msg
        raise FormatError(path, exc.lineno, "complete, valid JSON", found) from None


def json_object(data: bytes, name: str) -> dict:
    """Parse bytes (an upload or a small file) as one JSON object, naming ``name`` and the line on error."""
    try:
        value = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise FormatError(name, None, "UTF-8 text", "other bytes") from None
    except json.JSONDecodeError as exc:
        raise FormatError(name, exc.lineno, "valid JSON", exc.msg) from None
    if not isinstance(value, dict):
        raise FormatError(name, 1, "a JSON object", type(value).__name__)
    return value


def json_line(text: str, json_path: tuple) -> int | None:
    """Line number where the value at ``json_path`` (keys / indices) starts in ``text``.

    Used only on the error path: it re-parses with the pure-Python scanner, recording where
    every object and array begins.
    """
    from json import decoder, scanner

    starts: dict[int, int] = {}
    keep: list = []  # keep values alive so their ids stay unique

    def parse_object(s_and_end, *args):
        value, end = decoder.JSONObject(s_and_end, *args)
        starts[id(value)] = s_and_end[1] - 1
        keep.append(value)
        return value, end

    def parse_array(s_and_end, scan_once):
        value, end = decoder.JSONArray(s_and_end, scan_once)
        starts[id(value)] = s_and_end[1] - 1
        keep.append(value)
        return value, end

    dec = json.JSONDecoder()
    dec.parse_object = parse_object
    dec.parse_array = parse_array
    dec.scan_once = scanner.py_make_scanner(dec)
    try:
        value = dec.decode(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    position = starts.get(id(value))
    for step in json_path:
        try:
            value = value[step]
        except (KeyError, IndexError, TypeError):
            break
        position = starts.get(id(value), position)
    return None if position is None else text.count("\n", 0, position) + 1


class _JsonChecker:
    """Small helper that raises FormatError with the line of the offending JSON value."""

    def __init__(self, path, text):
        self.path, self.text = path, text

    def fail(self, json_path: tuple, expected: str, found: Any):
        where = "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in json_path)
        if not isinstance(found, str):
            found = f"{type(found).__name__} {_short(json.dumps(found, ensure_ascii=False), 40)}"
        raise FormatError(
            self.path, json_line(self.text, json_path), f"{expected} at {where or 'the top level'}", found
        )

    def get(self, obj: dict, key: str, kind, json_path: tuple, required: bool = True):
        if key not in obj:
            if required:
                self.fail(json_path, f"a field {key!r}", f"fields {sorted(obj)}")
            return None
        value = obj[key]
        if value is None and not required:
            return None
        if kind is int and isinstance(value, bool):
            self.fail(json_path + (key,), "an integer", value)
        if not isinstance(value, kind):
            name = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            self.fail(json_path + (key,), f"a {name}", value)
        return value


def parse_topics(path: str | Path, *, year: int | None = None) -> list[Conversation]:
    """Read iKAT topics JSON: the 2023/2024 schema (``ptkb`` dict, ``turns``) or 2025 (``ptkb`` list, ``responses``).

    Turn ids are ``<number>_<turn_id>`` as in the qrels. The year is taken from ``year`` or guessed
    from the schema: string numbers with ``turns`` → 2023, int numbers → 2024, ``responses`` → 2025.
    """
    data, text = load_json(path)
    check = _JsonChecker(path, text)
    if not isinstance(data, list):
        check.fail((), "a list of conversations", data)
    conversations = []
    seen_turns: set[str] = set()
    for ci, conv in enumerate(data):
        if not isinstance(conv, dict):
            check.fail((ci,), "a conversation object", conv)
        number = check.get(conv, "number", (int, str), (ci,))
        title = check.get(conv, "title", str, (ci,), required=False)
        if "responses" in conv and "turns" not in conv:
            schema_year = 2025
            raw_ptkb = check.get(conv, "ptkb", list, (ci,))
            ptkb = {}
            for si, statement in enumerate(raw_ptkb):
                if not isinstance(statement, str):
                    check.fail((ci, "ptkb", si), "a statement string", statement)
                ptkb[str(si + 1)] = statement
            turns_key, utt_key, ptkb_key, prov_key = "responses", "user_utterance", "relevant_ptkbs", "citations"
        else:
            schema_year = 2024 if isinstance(number, int) else 2023
            raw_ptkb = check.get(conv, "ptkb", dict, (ci,))
            ptkb = {}
            for key, statement in raw_ptkb.items():
                if not isinstance(statement, str):
                    check.fail((ci, "ptkb", key), "a statement string", statement)
                ptkb[str(key).strip()] = statement
            turns_key, utt_key, ptkb_key, prov_key = "turns", "utterance", "ptkb_provenance", "response_provenance"
        conv_id = str(number).strip()
        raw_turns = check.get(conv, turns_key, list, (ci,))
        turns = []
        for ti, t in enumerate(raw_turns):
            tp = (ci, turns_key, ti)
            if not isinstance(t, dict):
                check.fail(tp, "a turn object", t)
            turn_no = check.get(t, "turn_id", (int, str), tp)
            try:
                turn_no = int(turn_no)
            except ValueError:
                check.fail(tp + ("turn_id",), "an integer turn id", turn_no)
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
            prov = check.get(t, prov_key, list, tp, required=False) or []
            prov_ids = []
            for pi, p in enumerate(prov):
                if isinstance(p, dict):
                    p = p.get("passage_id") or p.get("id") or p.get("doc_id")
                if not isinstance(p, str):
                    check.fail(tp + (prov_key, pi), "a passage id string", p)
                prov_ids.append(p.strip())
            turns.append(
                Turn(
                    id=turn_id,
                    turn_number=turn_no,
                    utterance=check.get(t, utt_key, str, tp, required=False),
                    resolved_utterance=check.get(t, "resolved_utterance", str, tp, required=False),
                    response=check.get(t, "response", str, tp, required=False),
                    relevant_ptkb=tuple(dict.fromkeys(rel_keys)),
                    response_provenance=tuple(dict.fromkeys(prov_ids)),
                    parent_turn_id=(f"{conv_id}_{t['parent']}" if isinstance(t.get("parent"), (int, str)) else None),
                )
            )
        conversations.append(Conversation(conv_id, str(number), title, year or schema_year, ptkb, tuple(turns)))
    if not conversations:
        check.fail((), "at least one conversation", "an empty list")
    return conversations


def _natural(key: str):
    return (0, int(key), "") if key.isdigit() else (1, 0, key)


_NUGGET_KEY = re.compile(r"^\[?(\d+)\]?$")


def parse_nuggets(path: str | Path) -> list[NuggetRecord]:
    """Read CONE-RAG gold nuggets: ``{turn: {"[k]": {"text", "relevance"}}}`` (k 1-based)."""
    data, text = load_json(path)
    check = _JsonChecker(path, text)
    if not isinstance(data, dict):
        check.fail((), "an object {turn id: {nugget key: nugget}}", data)
    out = []
    for turn, nuggets in data.items():
        if not isinstance(nuggets, dict):
            check.fail((turn,), "an object of nuggets", nuggets)
        for key, nugget in nuggets.items():
            if not _NUGGET_KEY.match(key.strip()):
                check.fail((turn,), "nugget keys like '[1]'", key)
            if isinstance(nugget, str):
                nugget = {"text": nugget}
            if not isinstance(nugget, dict):
                check.fail((turn, key), "a nugget object with 'text'", nugget)
            body = check.get(nugget, "text", str, (turn, key))
            rel = nugget.get("relevance")
            if rel is not None:
                try:
                    rel = int(rel)
                except (TypeError, ValueError):
                    check.fail((turn, key, "relevance"), "a relevance 0..4", rel)
                if not 0 <= rel <= 4:
                    check.fail((turn, key, "relevance"), "a relevance 0..4", str(rel))
            k = "[" + _NUGGET_KEY.match(key.strip()).group(1) + "]"
            out.append(NuggetRecord(turn.strip(), k, body, rel, None))
    return out


def parse_responses(path: str | Path) -> list[ResponseRecord]:
    """Read responses: CONE-RAG ``{turn: {run: text}}``, ``{turn: {run: {"response", "nuggets"}}}``
    (response nuggets and the gold ``manual`` file), with the matched nugget texts when present."""
    data, text = load_json(path)
    check = _JsonChecker(path, text)
    if not isinstance(data, dict):
        check.fail((), "an object {turn id: {run: response}}", data)
    out = []
    for turn, runs in data.items():
        if not isinstance(runs, dict):
            check.fail((turn,), "an object {run: response}", runs)
        for run, value in runs.items():
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
            out.append(ResponseRecord(turn.strip(), run.strip(), body, used, None))
    return out


_NTR_ID = re.compile(r"^(?P<batch>[^_\s]+)_(?P<conv>[^_\s]+)_(?P<turn>\d+)_(?P<k>\d+)_(?P<run>\S+)$")


def parse_ntr_labels(path: str | Path) -> list[NtrRecord]:
    """Read NtR labels (CONE-RAG TSV): ``<batch>_<conv>_<turn>_<k>_<run>`` then ``0|1``."""
    out = []
    for number, text in read_lines(path):
        fields = text.split()
        if len(fields) != 2:
            raise FormatError(
                path, number, "2 fields (<batch>_<conv>_<turn>_<k>_<run>, 0|1)", f"{len(fields)} fields: {_short(text)}"
            )
        m = _NTR_ID.match(fields[0])
        if not m:
            raise FormatError(path, number, "an id <batch>_<conv>_<turn>_<k>_<run>", _short(fields[0]))
        if fields[1] not in ("0", "1"):
            raise FormatError(path, number, "a label 0 or 1", _short(fields[1]))
        out.append(NtrRecord(m["batch"], f"{m['conv']}_{m['turn']}", f"[{m['k']}]", m["run"], int(fields[1]), number))
    if not out:
        raise FormatError(path, None, "at least one label line", "an empty file")
    return out


# ---------------------------------------------------------------------------------- writers


def format_qrels(rows: Iterable[tuple[str, str, int]]) -> Iterator[str]:
    """Yield TREC qrels lines ``turn 0 item grade`` (space separated, newline-terminated)."""
    for turn, item, grade in rows:
        yield f"{turn} 0 {item} {grade}\n"


def format_run(rows: Iterable[tuple[str, str, int, float, str]]) -> Iterator[str]:
    """Yield TREC run lines ``turn Q0 passage rank score tag``."""
    for turn, passage, rank, score, tag in rows:
        yield f"{turn} Q0 {passage} {rank} {score:g} {tag}\n"


def nuggets_to_json(rows: Iterable[tuple[str, str, str, int | None]]) -> dict:
    """Build the CONE-RAG nugget layout from (turn, key, text, relevance) rows."""
    out: dict[str, dict] = {}
    for turn, key, body, rel in rows:
        entry = {"text": body}
        if rel is not None:
            entry["relevance"] = str(rel)
        out.setdefault(turn, {})[key] = entry
    return out
