"""TREC files: qrels (passage and PTKB), runs, passage texts; and the qrels and run writers."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from assess.errors import FormatError
from assess.formats.reading import paused_gc, read_lines, read_text, short, split_fields, to_int
from assess.tasks import GRADES, PTKB_RELEVANCE


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


def parse_qrels(
    path: str | Path, *, low: int = GRADES.low, high: int = GRADES.high, item: str = "passage id"
) -> list[Qrel]:
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
        fields = split_fields(path, number, text, 4, f"turn id, 0, {item}, grade")
        turn, _iteration, item_id, grade_text = fields
        grade = valid.get(grade_text)
        if grade is None:
            grade = to_int(path, number, grade_text, f"an integer grade {low}..{high}")
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
    return parse_qrels(path, low=PTKB_RELEVANCE.low, high=PTKB_RELEVANCE.high, item="PTKB statement number")


def parse_run(path: str | Path) -> list[RunRow]:
    """Read a TREC run: ``turn Q0 passage rank score tag`` per line."""
    rows = []
    for number, text in read_lines(path):
        fields = split_fields(path, number, text, 6, "turn id, Q0, passage id, rank, score, run tag")
        turn, _q0, passage, rank_text, score_text, tag = fields
        rank = to_int(path, number, rank_text, "an integer rank")
        try:
            score = float(score_text)
        except ValueError:
            raise FormatError(path, number, "a numeric score", short(score_text)) from None
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
    for items in groups.values():
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


def format_qrels(rows: Iterable[tuple[str, str, int]]) -> Iterator[str]:
    """Yield TREC qrels lines ``turn 0 item grade`` (space separated, newline-terminated)."""
    for turn, item, grade in rows:
        yield f"{turn} 0 {item} {grade}\n"


def format_run(rows: Iterable[tuple[str, str, int, float, str]]) -> Iterator[str]:
    """Yield TREC run lines ``turn Q0 passage rank score tag``."""
    for turn, passage, rank, score, tag in rows:
        yield f"{turn} Q0 {passage} {rank} {score:g} {tag}\n"
