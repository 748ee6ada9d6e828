"""The ``nuggetizer`` package's nugget and assignment layouts (TREC RAG 2024/2025, AutoNuggetizer).

Source: ``castorini/nuggetizer`` (PyPI ``nuggetizer``): README and
``.claude/skills/nuggetizer-quickstart/references/input-output-examples.md`` ("Create Output",
"Assign Output — Answers"), ``scripts/create_nuggets.py``, ``scripts/assign_nuggets.py`` and
``src/nuggetizer/core/metrics.py`` (which reads ``qid`` and ``nuggets[].importance/assignment``).
Both are JSONL, one JSON object per line:

- nuggets (``create`` output)::

    {"qid": "q1", "query": "What is Python?",
     "nuggets": [{"text": "Python is a programming language", "importance": "vital"}, ...]}

- assignments (``assign`` output, answers mode)::

    {"qid": "q1", "query": "...", "answer_text": "...", "response_length": 42, "run_id": "run-123",
     "nuggets": [{"text": "...", "importance": "vital", "assignment": "support"}, ...]}

A record's ``nuggets`` list may be empty: ``metrics.py`` then scores the response 0 on every score
(it divides by no nugget as 0.0), and the scorers here keep such a record instead of losing it.
``importance`` is ``vital`` or ``okay``; ``assignment`` is ``support``, ``partial_support`` or
``not_support`` (the 2-grade mode writes only ``support`` / ``not_support``). ``query``,
``answer_text``, ``response_length`` and ``run_id`` are optional here (``metrics.py`` needs none of
them); without ``run_id`` the run is named after the file (its name without ``.jsonl``). Other
fields (``trace`` and the like) are kept out of the records and not checked.

A nugget's key is its 1-based position in its ``qid``'s list, written ``[k]`` as CONE-RAG keys are,
so both layouts score through the same functions (:mod:`assess.measures.nugget_recall`). A ``qid``
is a turn id. Within one file a ``qid`` (nuggets) or a (``run_id``, ``qid``) pair (assignments)
is given once, and one nugget text once per ``qid``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from assess.errors import FormatError
from assess.formats.reading import check_id, iter_lines, parse_json_text, short

IMPORTANCE = ("vital", "okay")
# The layout's words for the support levels of assess.measures.nugget_recall (SUPPORT = 2, ...).
ASSIGNMENTS = {"support": 2, "partial_support": 1, "not_support": 0}
SUPPORT_NAMES = {level: name for name, level in ASSIGNMENTS.items()}


class NuggetizerNugget(NamedTuple):
    qid: str
    key: str  # '[k]', k the 1-based position in the qid's list
    text: str
    importance: str
    line: int


class NuggetizerAssignment(NamedTuple):
    run: str
    qid: str
    key: str
    text: str
    importance: str
    support: int  # 2 support, 1 partial_support, 0 not_support
    line: int


def _objects(path: str | Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for every non-blank line of a JSONL file."""
    for number, text in iter_lines(path):
        try:
            obj = parse_json_text(path, text)
        except FormatError as exc:
            raise FormatError(path, number, f"one JSON object per line ({exc.expected})", exc.found) from None
        if not isinstance(obj, dict):
            raise FormatError(path, number, "one JSON object per line", short(text, 40))
        yield number, obj


def _field(path, number: int, obj: dict, key: str, kind: type, where: str = "") -> Any:
    if key not in obj:
        raise FormatError(path, number, f"a field {key!r}{where}", f"fields {sorted(obj)}")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        found = f"{type(value).__name__} {short(shown, 40)}"
        raise FormatError(path, number, f"{key!r}{where} as a {kind.__name__}", found)
    return value


def _nuggets_of(path, number: int, obj: dict, *, assigned: bool) -> Iterator[tuple[str, str, str, int | None]]:
    """(key, text, importance, support or None) of one record's ``nuggets`` list, checked."""
    seen: set[str] = set()
    for index, nugget in enumerate(_field(path, number, obj, "nuggets", list)):
        where = f" in nuggets[{index}]"
        if not isinstance(nugget, dict):
            raise FormatError(path, number, f"an object {{text, importance}}{where}", type(nugget).__name__)
        text = _field(path, number, nugget, "text", str, where)
        if not text.strip():
            raise FormatError(path, number, f"a non-empty 'text'{where}", repr(text))
        if text in seen:
            raise FormatError(path, number, f"each nugget text once per qid{where}", short(text))
        seen.add(text)
        importance = _field(path, number, nugget, "importance", str, where)
        if importance not in IMPORTANCE:
            raise FormatError(path, number, f"'importance'{where} vital or okay", short(importance))
        support = None
        if assigned:
            name = _field(path, number, nugget, "assignment", str, where)
            if name not in ASSIGNMENTS:
                raise FormatError(
                    path, number, f"'assignment'{where} support, partial_support or not_support", short(name)
                )
            support = ASSIGNMENTS[name]
        yield f"[{index + 1}]", text, importance, support


def parse_nuggetizer_nuggets(path: str | Path) -> list[NuggetizerNugget]:
    """Read a nuggetizer nugget file (``create`` output JSONL; layout in the module docstring)."""
    return list(iter_nuggetizer_nuggets(path))


def iter_nuggetizer_nuggets(path: str | Path) -> Iterator[NuggetizerNugget]:
    """:func:`parse_nuggetizer_nuggets` line by line: memory holds one line's record and, per qid, the
    line it is on (a qid given twice is refused); a FormatError comes after the nuggets of the lines
    before it."""
    lines: dict[str, int] = {}
    for number, obj in _objects(path):
        qid = check_id(_field(path, number, obj, "qid", str), path, number, "a qid")
        if qid in lines:
            raise FormatError(path, number, f"each qid once (qid {qid!r} is on line {lines[qid]})", short(qid))
        lines[qid] = number
        yield from [
            NuggetizerNugget(qid, key, text, importance, number)
            for key, text, importance, _ in _nuggets_of(path, number, obj, assigned=False)
        ]  # the whole line checked before its first nugget is given
    if not lines:
        raise FormatError(path, None, "at least one nugget record", "an empty file")


class AssignmentRecord(NamedTuple):
    """One line of an assignment file: a run's response to a qid and its assigned nuggets (maybe none)."""

    run: str
    qid: str
    line: int
    nuggets: tuple[NuggetizerAssignment, ...]


def parse_nuggetizer_assignments(path: str | Path) -> list[NuggetizerAssignment]:
    """Read a nuggetizer assignment file (``assign`` output JSONL; layout in the module docstring): every
    assigned nugget of every record (a record with an empty ``nuggets`` list adds none; see
    :func:`parse_nuggetizer_assignment_records` for the records themselves)."""
    return [a for record in parse_nuggetizer_assignment_records(path) for a in record.nuggets]


def parse_nuggetizer_assignment_records(path: str | Path) -> list[AssignmentRecord]:
    """Read a nuggetizer assignment file record by record, a record whose ``nuggets`` list is empty
    included (``nuggetizer``'s ``calculate_nugget_scores`` scores such a response 0)."""
    return list(iter_nuggetizer_assignment_records(path))


def iter_nuggetizer_assignment_records(path: str | Path) -> Iterator[AssignmentRecord]:
    """:func:`parse_nuggetizer_assignment_records` line by line: memory holds one line's record and, per
    (run, qid), the line it is on (a pair given twice is refused); a FormatError comes after the records of
    the lines before it."""
    default_run = Path(path).name.removesuffix(".jsonl")
    lines: dict[tuple[str, str], int] = {}
    for number, obj in _objects(path):
        qid = check_id(_field(path, number, obj, "qid", str), path, number, "a qid")
        run = default_run
        if obj.get("run_id") is not None:
            run = check_id(_field(path, number, obj, "run_id", str), path, number, "a run_id")
        check_id(run, path, number, "a run name (run_id, or the file name without .jsonl)")
        if (run, qid) in lines:
            raise FormatError(
                path, number, f"each (run_id, qid) once (run {run!r} qid {qid!r} is on line {lines[run, qid]})", qid
            )
        lines[run, qid] = number
        nuggets = tuple(
            NuggetizerAssignment(run, qid, key, text, importance, support, number)
            for key, text, importance, support in _nuggets_of(path, number, obj, assigned=True)
        )
        yield AssignmentRecord(run, qid, number, nuggets)
    if not lines:
        raise FormatError(path, None, "at least one assignment record", "an empty file")


def looks_like_nuggetizer(path: str | Path) -> bool:
    """Whether a nugget file is in the nuggetizer layout: its first non-blank line is a complete JSON
    object with a ``qid`` field (a CONE-RAG file is one object keyed by turn ids)."""
    for _, text in iter_lines(path):
        try:
            obj = parse_json_text(path, text)
        except FormatError:
            return False
        return isinstance(obj, dict) and "qid" in obj and "nuggets" in obj
    return False


def _line(obj: dict) -> str:
    return json.dumps(obj, ensure_ascii=False)


def format_nuggetizer_nuggets(
    rows: Iterable[tuple[str, str, str]], queries: dict[str, str] | None = None
) -> Iterator[str]:
    """JSONL lines of the nugget layout from (qid, text, importance) rows, in the rows' order."""
    grouped: dict[str, list[dict]] = {}
    for qid, text, importance in rows:
        grouped.setdefault(qid, []).append({"text": text, "importance": importance})
    for qid, nuggets in grouped.items():
        record: dict[str, Any] = {"qid": qid}
        if queries and qid in queries:
            record["query"] = queries[qid]
        record["nuggets"] = nuggets
        yield _line(record)


def format_nuggetizer_assignments(rows: Iterable[tuple[str, str, str, str, int]]) -> Iterator[str]:
    """JSONL lines of the assignment layout from (run, qid, text, importance, support level) rows."""
    grouped: dict[tuple[str, str], list[dict]] = {}
    for run, qid, text, importance, support in rows:
        grouped.setdefault((run, qid), []).append(
            {"text": text, "importance": importance, "assignment": SUPPORT_NAMES[support]}
        )
    for (run, qid), nuggets in grouped.items():
        yield _line({"qid": qid, "run_id": run, "nuggets": nuggets})
