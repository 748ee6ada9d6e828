"""RAGTIME nugget banks and DRAGUN rubrics: reading and writing the tracks' JSON layouts.

**Nugget bank** (TREC RAGTIME 2026; ``autojudge_base.nugget_data.ragtime26``): one JSON object per topic,
one per line in a JSONL file or one per file::

    {"metadata": {"team_id", "topic_id", "run_id", "run_desc", ...},
     "nugget_bank": [{"question", "aggregator_type": "AND"|"OR",
                      "answers": [{"answer", "references": [docid, ...], "metadata"?}],
                      "importance"?, "metadata"?}]}

**Rubric** (TREC DRAGUN 2025, ``trec-dragun/resources``): one JSON object per topic::

    {"topic_id", "rubrics": [{"question_id", "question_text", "importance": "A: Have to Know"|...,
                              "short_answers": [{"answer_id", "answer_text", "references"?}]}]}

Every refusal is a :class:`~assess.errors.FormatError` naming the file, the line, the JSON path, what was
expected and what was found. Pure logic: no store.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from assess import lazylibs
from assess.errors import FormatError
from assess.formats.inert_csv import frame_csv
from assess.formats.reading import ID_RULE, JsonChecker, describe_char, id_problem, parse_json_text, read_text

AGGREGATORS: tuple[str, ...] = ("AND", "OR")
"""How a nugget's answers combine: ``AND`` every answer is needed, ``OR`` any one is enough."""

ORIGINS: tuple[str, ...] = ("original", "post-edit")
"""Where a stored bank question or answer comes from: the imported bank, or an assessor's later edit."""


class BankAnswer(NamedTuple):
    """One acceptable answer to a nugget question and the documents that support it."""

    answer: str
    references: tuple[Any, ...] = ()  # document ids (or {"doc_id", ...} objects), as the file gives them
    metadata: Mapping | None = None


class BankNugget(NamedTuple):
    """A question a good report answers, with its acceptable answers and how they combine."""

    question: str
    aggregator: str  # AND | OR
    answers: tuple[BankAnswer, ...]
    importance: int | float | str | None = None
    metadata: Mapping | None = None


class NuggetBank(NamedTuple):
    """One topic's nugget bank: the file's metadata (``topic_id`` among it) and its nuggets in order."""

    topic_id: str
    metadata: Mapping  # the whole metadata object, key order kept
    nuggets: tuple[BankNugget, ...]
    line: int | None = None


# ------------------------------------------------------------------------------------------- reading


def _documents(path: str | Path) -> Iterator[tuple[str, str, int]]:
    """(file name, JSON text, first line) of every top-level value: one JSON object per file, or one per line."""
    p = Path(path)
    files = sorted(f for f in p.iterdir() if f.suffix in (".json", ".jsonl")) if p.is_dir() else [p]
    if p.is_dir() and not files:
        raise FormatError(str(p), None, "a folder with .json or .jsonl files", "none")
    for f in files:
        text = read_text(f)
        stripped = text.strip()
        if not stripped:
            raise FormatError(str(f), None, "a JSON object per topic", "an empty file")
        try:
            json.loads(stripped)
            whole = True
        except ValueError:
            whole = False
        except RecursionError:  # nested too deep for json.loads: parse_json_text refuses it with its line
            whole = True
        if whole:
            yield str(f), text, 1
            continue
        for n, line in enumerate(text.split("\n"), start=1):
            if line.strip():
                yield str(f), line, n


def _object(check: JsonChecker, value: Any, json_path: tuple, what: str) -> dict:
    if not isinstance(value, dict):
        check.fail(json_path, what, value)
    return value


def _list(check: JsonChecker, value: Any, json_path: tuple, what: str) -> list:
    if not isinstance(value, list):
        check.fail(json_path, what, value)
    return value


def _text(check: JsonChecker, obj: dict, key: str, json_path: tuple) -> str:
    value = check.get(obj, key, str, json_path)
    if not value.strip():
        check.fail(json_path + (key,), "a non-empty text", "an empty text")
    return value


def _id(check: JsonChecker, obj: dict, key: str, json_path: tuple, what: str) -> str:
    """An id field (a topic, a run) as the file gives it: the id rule, with nothing stripped (``"101_3 "`` is
    refused, never stored beside ``"101_3"``)."""
    value = check.get(obj, key, str, json_path)
    if problem := id_problem(value):
        check.fail(json_path + (key,), f"{what}: {ID_RULE}", problem)
    return value


def _reference(check: JsonChecker, value: Any, json_path: tuple) -> Any:
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, dict) and isinstance(value.get("doc_id"), str) and value["doc_id"].strip():
        return value
    check.fail(json_path, 'a document id (a string, or an object with "doc_id")', value)


MAX_IMPORTANCE = 1_000_000
IMPORTANCE_RULE = f"an importance: a number from 0 to {MAX_IMPORTANCE:,}, or a text of at most 100 printable characters"


def _importance(check: JsonChecker, value: Any, json_path: tuple):
    """A nugget's importance: a number in range (a weight: 1e308 would make every weighted sum infinite), or a
    label; a numeric text is held to the numbers' range, as the weighted score reads it as one."""
    if value is None:
        return value
    if isinstance(value, str):
        bad = next((c for c in value if not c.isprintable()), None)
        if bad is not None or not value.strip() or len(value) > 100:
            check.fail(json_path, IMPORTANCE_RULE, describe_char(bad) if bad else f"{len(value)} characters")
        try:
            number = float(value)
        except ValueError:
            return value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        number = value
    else:
        check.fail(json_path, IMPORTANCE_RULE, value)
    if not (math.isfinite(number) and 0 <= number <= MAX_IMPORTANCE):
        check.fail(json_path, IMPORTANCE_RULE, repr(value))
    return value


def _bank(file: str, text: str, first_line: int) -> NuggetBank:
    value = parse_json_text(file, text, first_line=first_line)
    check = JsonChecker(file, text, first_line)
    top = _object(check, value, (), "a nugget bank object {metadata, nugget_bank}")
    metadata = _object(check, check.get(top, "metadata", object, ()), ("metadata",), "a metadata object")
    topic = _id(check, metadata, "topic_id", ("metadata",), "a topic id")
    for key in ("team_id", "run_id", "run_desc"):
        check.get(metadata, key, str, ("metadata",), required=False)
    items = _list(check, check.get(top, "nugget_bank", object, ()), ("nugget_bank",), "a list of nuggets")
    nuggets = []
    for i, item in enumerate(items):
        at = ("nugget_bank", i)
        item = _object(check, item, at, "a nugget object {question, aggregator_type, answers}")
        question = _text(check, item, "question", at)
        aggregator = check.get(item, "aggregator_type", str, at)
        if aggregator not in AGGREGATORS:
            check.fail(at + ("aggregator_type",), '"AND" or "OR"', repr(aggregator))
        answers = []
        for k, answer in enumerate(_list(check, check.get(item, "answers", object, at), at + ("answers",), "a list")):
            where = at + ("answers", k)
            answer = _object(check, answer, where, "an answer object {answer, references}")
            refs = check.get(answer, "references", list, where, required=False) or []
            meta = check.get(answer, "metadata", dict, where, required=False)
            answers.append(
                BankAnswer(
                    _text(check, answer, "answer", where),
                    tuple(_reference(check, r, where + ("references", j)) for j, r in enumerate(refs)),
                    meta,
                )
            )
        if not answers:
            check.fail(at + ("answers",), "at least one answer", "an empty list")
        importance = _importance(check, item.get("importance"), at + ("importance",))
        meta = check.get(item, "metadata", dict, at, required=False)
        nuggets.append(BankNugget(question, aggregator, tuple(answers), importance, meta))
    return NuggetBank(topic, metadata, tuple(nuggets), first_line)


def read_nugget_banks(path: str | Path) -> list[NuggetBank]:
    """Every nugget bank of a file (JSONL, or one JSON object) or of a folder's .json / .jsonl files.

    A topic given twice is refused (naming both places)."""
    banks: list[NuggetBank] = []
    seen: dict[str, str] = {}
    for file, text, line in _documents(path):
        bank = _bank(file, text, line)
        if bank.topic_id in seen:
            raise FormatError(
                file, line, f"one bank per topic ({bank.topic_id!r} is at {seen[bank.topic_id]})", "a second one"
            )
        seen[bank.topic_id] = f"{file}:{line}"
        banks.append(bank)
    return banks


# ------------------------------------------------------------------------------------------- writing


def bank_document(bank: NuggetBank) -> dict:
    """The layout's object for one bank: optional fields only where they have a value."""
    nuggets = []
    for nugget in bank.nuggets:
        answers = []
        for a in nugget.answers:
            answer = {"answer": a.answer, "references": list(a.references)}
            if a.metadata is not None:
                answer["metadata"] = dict(a.metadata)
            answers.append(answer)
        item = {"question": nugget.question, "aggregator_type": nugget.aggregator, "answers": answers}
        if nugget.importance is not None:
            item["importance"] = nugget.importance
        if nugget.metadata is not None:
            item["metadata"] = dict(nugget.metadata)
        nuggets.append(item)
    return {"metadata": dict(bank.metadata), "nugget_bank": nuggets}


def write_nugget_banks(banks: Iterable[NuggetBank]) -> str:
    """JSONL: one bank per line, in the order given."""
    return "".join(json.dumps(bank_document(b), ensure_ascii=False) + "\n" for b in banks)


# ------------------------------------------------------------------------------------------- rubrics

IMPORTANCE_WEIGHTS: Mapping[str, int] = MappingProxyType(
    {"A: Have to Know": 4, "B: Good to Know": 2, "C: Nice to Know": 1}
)
"""DRAGUN's rubric question importance and its weight (trec-dragun/resources ``utils/score.py``)."""


class RubricAnswer(NamedTuple):
    """An expected short answer to a rubric question."""

    answer_id: str
    text: str | None


class RubricQuestion(NamedTuple):
    """A rubric question, its importance label and its expected short answers."""

    question_id: str
    text: str | None
    importance: str  # one of IMPORTANCE_WEIGHTS
    answers: tuple[RubricAnswer, ...]


class Rubric(NamedTuple):
    """One topic's rubric; ``document`` is the file's object as read (written back unchanged)."""

    topic_id: str
    questions: tuple[RubricQuestion, ...]
    document: Mapping
    file: str = ""


_ANSWER_TEXT_KEYS = ("answer_text", "answer", "text")  # the answer's text field: see docs/responses.md


def _rubric(file: str, text: str, first_line: int) -> Rubric:
    value = parse_json_text(file, text, first_line=first_line)
    check = JsonChecker(file, text, first_line)
    top = _object(check, value, (), "a rubric object {topic_id, rubrics}")
    topic = _id(check, top, "topic_id", (), "a topic id")
    questions, answer_ids = [], set()
    for i, q in enumerate(_list(check, check.get(top, "rubrics", object, ()), ("rubrics",), "a list of questions")):
        at = ("rubrics", i)
        q = _object(check, q, at, "a question object {question_id, question_text, importance, short_answers}")
        qid = check.id(check.get(q, "question_id", str, at), at + ("question_id",), "a question id")
        importance = check.get(q, "importance", str, at)
        if importance not in IMPORTANCE_WEIGHTS:
            check.fail(at + ("importance",), " or ".join(repr(k) for k in IMPORTANCE_WEIGHTS), repr(importance))
        answers = []
        for k, a in enumerate(
            _list(check, check.get(q, "short_answers", object, at), at + ("short_answers",), "a list")
        ):
            where = at + ("short_answers", k)
            a = _object(check, a, where, "a short answer object {answer_id, answer_text}")
            aid = check.id(check.get(a, "answer_id", str, where), where + ("answer_id",), "an answer id")
            if aid in answer_ids:
                check.fail(where + ("answer_id",), "answer ids unique within the topic", repr(aid))
            answer_ids.add(aid)
            answer_text = next((a[key] for key in _ANSWER_TEXT_KEYS if isinstance(a.get(key), str)), None)
            answers.append(RubricAnswer(aid, answer_text))
        if any(x.question_id == qid for x in questions):
            check.fail(at + ("question_id",), "question ids unique within the topic", repr(qid))
        question_text = check.get(q, "question_text", str, at, required=False)
        questions.append(RubricQuestion(qid, question_text, importance, tuple(answers)))
    return Rubric(topic, tuple(questions), top, file)


def read_rubrics(path: str | Path) -> list[Rubric]:
    """Every rubric of a file (one JSON object, or JSONL) or of a folder's .json / .jsonl files."""
    rubrics: list[Rubric] = []
    seen: dict[str, str] = {}
    for file, text, line in _documents(path):
        rubric = _rubric(file, text, line)
        if rubric.topic_id in seen:
            raise FormatError(
                file, line, f"one rubric per topic ({rubric.topic_id!r} is at {seen[rubric.topic_id]})", "a second one"
            )
        seen[rubric.topic_id] = f"{file}:{line}"
        rubrics.append(rubric)
    return rubrics


def write_rubric(document: Mapping) -> str:
    """One rubric file's text (indented as the track's files are read by ``json.load``)."""
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


RUBRIC_JUDGMENTS: Mapping[str, int] = MappingProxyType({"supports": 2, "partial": 1, "none": 0, "contradicts": -2})
"""A report's judgment of a rubric short answer, stored as an integer in half units: the track's score is the
stored value / 2 (supports 1, partial 0.5, none 0, contradicts -1; trec-dragun/resources ``utils/score.py``)."""


class RubricJudgment(NamedTuple):
    """One row of a DRAGUN report assessment file."""

    topic_id: str
    run: str
    answer_id: str
    judgment: int  # RUBRIC_JUDGMENTS value
    line: int


JUDGMENT_COLUMNS = ("annotation", "auto_assessment", "assessment")
"""The judgment's column of a DRAGUN assessment CSV, by preference: human, AutoJudge at the repository's head
(4b60fb6c), AutoJudge at 1b451dff."""


def read_rubric_judgments(path: str | Path) -> list[RubricJudgment]:
    """A DRAGUN report assessment CSV (``report_assessments.csv`` / ``auto_report_assessments.csv``): a header
    with ``topic_id``, ``run_tag``, ``answer_id`` and the judgment's column, the first of
    :data:`JUDGMENT_COLUMNS` it has: ``annotation`` (human), ``auto_assessment`` (AutoJudge since the
    repository's commit cbfd1b9, read by ``utils/score.py`` since e2350624) or ``assessment`` (AutoJudge at
    1b451dff). Other columns (``team``, ``question_id``, ``reasoning``, ``auto_rationale``) are ignored."""
    import csv
    import io

    text = read_text(path)
    reader = csv.reader(io.StringIO(text))
    rows = _csv_rows(path, reader)
    try:
        header = next(rows)
    except StopIteration:
        raise FormatError(str(path), None, "a CSV header", "an empty file") from None
    label = next((c for c in JUDGMENT_COLUMNS if c in header), JUDGMENT_COLUMNS[0])
    needed = ("topic_id", "run_tag", "answer_id", label)
    missing = [c for c in needed if c not in header]
    if missing:
        raise FormatError(
            str(path),
            1,
            f"columns topic_id, run_tag, answer_id, {'|'.join(JUDGMENT_COLUMNS)}",
            f"{header} (no {missing[0]})",
        )
    at = {c: header.index(c) for c in needed}
    out, seen = [], {}
    for row in rows:
        line = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise FormatError(str(path), line, f"{len(header)} fields", f"{len(row)}")
        values = {c: row[i].strip() for c, i in at.items()}  # a cell's surrounding spaces are the CSV's, not the id's
        for c in needed[:3]:
            if problem := id_problem(values[c]):
                raise FormatError(str(path), line, f"a {c}: {ID_RULE}", problem)
        if values[label] not in RUBRIC_JUDGMENTS:
            raise FormatError(str(path), line, f"{label} one of {', '.join(RUBRIC_JUDGMENTS)}", repr(values[label]))
        key = (values["topic_id"], values["run_tag"], values["answer_id"])
        if key in seen:
            raise FormatError(
                str(path), line, f"one judgment per topic, run and answer (also on line {seen[key]})", repr(key)
            )
        seen[key] = line
        out.append(RubricJudgment(*key, RUBRIC_JUDGMENTS[values[label]], line))
    return out


def _csv_rows(path, reader) -> Iterator[list[str]]:
    """The reader's rows; the csv module's own refusals (a field over its limit, a NUL) as FormatErrors."""
    import csv

    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            found = str(exc)
            if "field limit" in found:
                expected = f"CSV fields of at most {csv.field_size_limit():,} characters"
                found = "a longer field"
            else:
                expected = "valid CSV"
            raise FormatError(str(path), reader.line_num, expected, found) from None
        yield row


def write_rubric_judgments(rows: Sequence[tuple[str, str, str, str, int]]) -> str:
    """The assessment CSV as the track's pandas writes it: ``topic_id,run_tag,question_id,answer_id,annotation``
    (rows in the order given, lines ending in LF), cells made inert (:mod:`assess.formats.inert_csv`)."""
    pd = lazylibs.pandas()

    names = {v: k for k, v in RUBRIC_JUDGMENTS.items()}
    columns = ["topic_id", "run_tag", "question_id", "answer_id", "annotation"]
    frame = pd.DataFrame([[t, r, q, a, names[v]] for t, r, q, a, v in rows], columns=columns, dtype=object)
    return frame_csv(frame)


class BankMatch(NamedTuple):
    """A response found to contain (or not) one answer of a bank nugget, with the sentences that state it."""

    topic_id: str
    run: str
    nugget: int  # 1-based place of the nugget in its bank
    answer: int  # 1-based place of the answer in its nugget
    contains: bool
    sentences: tuple[int, ...]  # the response's sentence numbers (from 1) that state the answer
    line: int


def read_bank_matches(path: str | Path) -> list[BankMatch]:
    """JSONL, one line per (topic, run, nugget, answer): ``{"topic_id", "run_id", "nugget", "answer",
    "contains"?, "sentences"?}`` (``contains`` defaults to true; ``sentences`` to none)."""
    out: list[BankMatch] = []
    seen: dict[tuple, int] = {}
    text = read_text(path)
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        value = parse_json_text(str(path), line, first_line=n)
        check = JsonChecker(str(path), line, n)
        obj = _object(check, value, (), "a match object {topic_id, run_id, nugget, answer}")
        topic = _id(check, obj, "topic_id", (), "a topic id")
        run = _id(check, obj, "run_id", (), "a run id")
        numbers = []
        for key in ("nugget", "answer"):
            v = check.get(obj, key, int, ())
            if v < 1:
                check.fail((key,), "a number from 1", str(v))
            numbers.append(v)
        contains = check.get(obj, "contains", bool, (), required=False)
        sentences = check.get(obj, "sentences", list, (), required=False) or []
        for j, s in enumerate(sentences):
            if not isinstance(s, int) or isinstance(s, bool) or s < 1:
                check.fail(("sentences", j), "a sentence number from 1", s)
        key = (topic, run, *numbers)
        if key in seen:
            raise FormatError(
                str(path), n, f"one line per topic, run, nugget and answer (also line {seen[key]})", repr(key)
            )
        seen[key] = n
        out.append(
            BankMatch(topic, run, numbers[0], numbers[1], contains is not False, tuple(sorted(set(sentences))), n)
        )
    return out
