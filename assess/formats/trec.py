"""TREC files: qrels (passage and PTKB), runs, passage texts; and the qrels and run writers."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator
from operator import itemgetter
from pathlib import Path
from typing import NamedTuple

from assess import lazylibs
from assess.errors import FormatError
from assess.formats import reading
from assess.formats.reading import (
    MAX_ID_CHARS,
    check_id,
    iter_lines,
    lines_of,
    parse_json_text,
    paused_gc,
    read_blocks,
    short,
    split_fields,
    to_float,
    to_int,
)
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
    """Read a TREC qrels file: ``turn 0 item grade`` per line (spaces or tabs), grades in [low, high].

    Lines repeated verbatim are kept once. For files too large to hold, :class:`QrelsStream` gives
    the same records block by block.
    """
    stream = QrelsStream(path, low=low, high=high, item=item)
    with paused_gc():
        rows = [q for block in stream for q in block]
    if stream.repeated:
        rows = [q for q in rows if q.line not in stream.repeated]
    return rows


class QrelsStream:
    """The records of a qrels file, one list per block of the file (memory bounded by the block).

    Each block is read column-wise with C-level string and list operations when it is well formed
    (four fields on every line, no blank line, every grade valid, no repeated item), else line by
    line, which names the first bad line. An item repeated across blocks is found by
    :class:`RepeatGuard` once the last block has been read: with a different grade it is refused
    (raised from the iteration, so an import consuming the blocks inside its transaction rolls
    back); repeated verbatim, its line numbers are in ``repeated`` afterwards (``count`` is the
    number of distinct items).
    """

    def __init__(self, path: str | Path, *, low: int = GRADES.low, high: int = GRADES.high, item: str = "passage id"):
        self.path, self.low, self.high, self.item = path, low, high, item
        self.repeated: set[int] = set()
        self.count = 0

    def blocks(self) -> Iterator[list[Qrel]]:
        """The records block by block, each block checked on its own (no check across blocks)."""
        for first_line, text in read_blocks(self.path, fields=True):
            rows = _qrels_by_column(text, self.low, self.high, first_line)
            if rows is None:
                rows = _qrels_by_line(self.path, lines_of(text, first_line), self.low, self.high, self.item)
            if rows:
                yield rows

    def __iter__(self) -> Iterator[list[Qrel]]:
        guard = RepeatGuard()
        total = 0
        for rows in self.blocks():
            guard.add(map(itemgetter(0, 1), rows), len(rows))
            total += len(rows)
            yield rows
        if not total:
            raise FormatError(self.path, None, "at least one qrels line", "an empty file")
        suspects = guard.repeated_hashes()
        self.repeated = self._repeats(suspects) if suspects else set()
        self.count = total - len(self.repeated)

    def _repeats(self, suspects: set[int]) -> set[int]:
        """A second pass over the file for the keys whose hash occurs twice: the lines repeating an
        earlier line verbatim; the first line giving an earlier item another grade is refused."""
        first: dict[tuple[str, str], tuple[int, int]] = {}
        repeated = set()
        for rows in self.blocks():
            for turn, item_id, grade, number in rows:
                key = (turn, item_id)
                if hash(key) not in suspects:
                    continue
                seen = first.setdefault(key, (grade, number))
                if seen[1] == number:
                    continue
                if seen[0] != grade:
                    raise FormatError(
                        self.path,
                        number,
                        f"one value per item ({turn} {item_id} is {seen[0]} on line {seen[1]})",
                        str(grade),
                    )
                repeated.add(number)
        return repeated


class RepeatGuard:
    """Finds keys given more than once in a file too large to keep its keys: it keeps a 64-bit hash
    of each key (8 bytes per record, in numpy arrays) and, once the file has been read, sorts them in
    place and returns the hashes that occur more than once (usually none; the caller then looks at
    those keys themselves, so a hash collision costs only a second look)."""

    def __init__(self):
        self._blocks: list = []
        self._size = 0

    def add(self, keys: Iterable, count: int) -> None:
        np = lazylibs.numpy()

        self._blocks.append(np.fromiter(map(hash, keys), dtype=np.int64, count=count))
        self._size += count

    def repeated_hashes(self) -> set[int]:
        np = lazylibs.numpy()

        if len(self._blocks) < 2:  # within one block the parser has compared the keys themselves
            return set()
        hashes = np.empty(self._size, dtype=np.int64)
        at = 0
        self._blocks.reverse()
        while self._blocks:  # copy block by block, freeing each: memory stays at one array
            block = self._blocks.pop()
            hashes[at : at + len(block)] = block
            at += len(block)
        hashes.sort()
        return set(np.unique(hashes[1:][hashes[1:] == hashes[:-1]]).tolist())


def _block_columns(text: str, fields: int) -> list[tuple[str, ...]] | None:
    """The whitespace-separated fields of a block's lines as columns; None when the block is empty or a
    line has another number of fields (a blank line, a missing or extra field)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if not lines:
        return None
    parts = list(map(str.split, lines))
    if set(map(len, parts)) != {fields}:
        return None
    return list(zip(*parts))


def _qrels_by_column(text: str, low: int, high: int, first_line: int = 1) -> list[Qrel] | None:
    """Read a well-formed qrels text column-wise (no Python loop per line); None if any line is not."""
    columns = _block_columns(text, 4)
    if columns is None:
        return None
    turns, _iterations, items, grade_texts = columns
    valid = {str(g): g for g in range(low, high + 1)}
    grades = list(map(valid.get, grade_texts))
    if None in grades or len(set(zip(turns, items))) != len(turns):  # a bad grade, a repeated item
        return None
    return list(map(tuple.__new__, itertools.repeat(Qrel), zip(turns, items, grades, itertools.count(first_line))))


def _read_qrels(path: str | Path, low: int, high: int, item: str) -> list[Qrel]:
    """The line-by-line reader over a whole file (the reference the column reader must agree with)."""
    rows = _qrels_by_line(path, iter_lines(path, fields=True), low, high, item)
    if not rows:
        raise FormatError(path, None, "at least one qrels line", "an empty file")
    return rows


def _qrels_by_line(path, lines: Iterable[tuple[int, str]], low: int, high: int, item: str) -> list[Qrel]:
    rows: list[Qrel] = []
    seen: dict[tuple[str, str], tuple[int, int]] = {}
    valid = {str(g): g for g in range(low, high + 1)}
    new_qrel = tuple.__new__
    what = f"a grade {low}..{high} (an integer grade: ASCII digits, no sign)"
    for number, text in lines:
        fields = split_fields(path, number, text, 4, f"turn id, 0, {item}, grade")
        turn, _iteration, item_id, grade_text = fields
        grade = valid.get(grade_text)
        if grade is None:
            grade = to_int(path, number, grade_text, what, low, high)
        _check_ids(path, number, turn, item_id)
        key = (turn, item_id)
        first = seen.setdefault(key, (grade, number))
        if first[1] != number:
            if first[0] != grade:
                raise FormatError(
                    path, number, f"one value per item ({turn} {item_id} is {first[0]} on line {first[1]})", str(grade)
                )
            continue  # the same line again: kept once
        rows.append(new_qrel(Qrel, (turn, item_id, grade, number)))
    return rows


def _check_ids(path, number: int, *ids: str) -> None:
    """Field lines hold no control or space characters (checked per block); ids are also bounded in length."""
    for value in ids:
        if len(value) > MAX_ID_CHARS:
            check_id(value, path, number, "an id")


def parse_ptkb_qrels(path: str | Path) -> list[Qrel]:
    """Read PTKB qrels: ``turn 0 statement_number rel`` (rel 0/1 in iKAT; 0..4 accepted)."""
    return parse_qrels(path, low=PTKB_RELEVANCE.low, high=PTKB_RELEVANCE.high, item="PTKB statement number")


def parse_run(path: str | Path) -> list[RunRow]:
    """Read a TREC run: ``turn Q0 passage rank score tag`` per line (rank: ASCII digits; score: a finite number).

    A (tag, turn, passage) given twice is refused (:func:`repeated_run_line`). For files too large to
    hold, :class:`RunStream` gives the same records block by block (the store then finds repeats).
    """
    rows = []
    seen: dict[tuple[str, str, str], int] = {}
    with paused_gc():
        for block in RunStream(path):
            for r in block:
                first = seen.setdefault((r.tag, r.turn_id, r.passage_id), r.line)
                if first != r.line:
                    raise repeated_run_line(path, r, first)
            rows.extend(block)
    return rows


def repeated_run_line(path, row: RunRow, first_line: int) -> FormatError:
    """The error for a run line repeating the (tag, turn, passage) of ``first_line``."""
    return FormatError(
        path,
        row.line,
        f"each passage once per turn (it is on line {first_line})",
        f"{row.passage_id} again for turn {row.turn_id}",
    )


class RunStream:
    """The records of a run file, one list per block of the file (memory bounded by the block).

    Lines are checked as :func:`parse_run` checks them, except for repeats, which need every key
    seen so far: the consumer looks for them (:func:`parse_run` in a dict, the store's import in
    the rankings table's primary key). Errors come in line order: when a line is bad, the lines
    of its block before it are yielded first, then the error is raised, so a repeat among those
    lines is still reported before it. ``count`` is the number of records once iterated.
    """

    def __init__(self, path: str | Path):
        self.path = path
        self.count = 0

    def __iter__(self) -> Iterator[list[RunRow]]:
        path = self.path
        for first_line, text in read_blocks(path, fields=True):
            rows = _run_by_column(text, first_line)
            if rows is not None:
                self.count += len(rows)
                yield rows
                continue
            rows = []
            try:
                for number, line in lines_of(text, first_line):
                    rows.append(_run_row(path, number, line))
            except FormatError:
                if rows:
                    self.count += len(rows)
                    yield rows
                raise
            if rows:
                self.count += len(rows)
                yield rows
        if not self.count:
            raise FormatError(path, None, "at least one run line", "an empty file")


def _run_by_column(text: str, first_line: int) -> list[RunRow] | None:
    """Read a well-formed run block column-wise (no Python loop per line, the checks of
    :func:`_run_row` over whole columns); None if any line is not (the caller then reads the block
    line by line, which names the first bad line)."""
    columns = _block_columns(text, 6)
    if columns is None:
        return None
    turns, _q0, passages, rank_texts, score_texts, tags = columns
    if (
        max(map(len, turns)) > MAX_ID_CHARS
        or max(map(len, passages)) > MAX_ID_CHARS
        or max(map(len, tags)) > MAX_ID_CHARS
        or not all(map(reading.DIGITS.fullmatch, rank_texts))  # to_int's and to_float's own patterns
        or max(map(len, score_texts)) > 100
        or not all(map(reading.FLOAT.fullmatch, score_texts))
    ):
        return None
    scores = list(map(float, score_texts))
    if not all(map(math.isfinite, scores)):
        return None
    columns = zip(turns, passages, map(int, rank_texts), scores, tags, itertools.count(first_line))
    return list(map(tuple.__new__, itertools.repeat(RunRow), columns))


def _run_row(path, number: int, text: str) -> RunRow:
    fields = split_fields(path, number, text, 6, "turn id, Q0, passage id, rank, score, run tag")
    turn, _q0, passage, rank_text, score_text, tag = fields
    rank = to_int(path, number, rank_text, "an integer rank (ASCII digits, no sign)")
    score = to_float(path, number, score_text, "a numeric score (a finite score in ASCII notation)")
    _check_ids(path, number, turn, passage, tag)
    return RunRow(turn, passage, rank, score, tag, number)


def rank_run(rows: Iterable[RunRow]) -> dict[tuple[str, str], list[RunRow]]:
    """Group a run by (tag, turn) and order each ranking as trec_eval does: score desc, then passage id desc.

    The in-memory ranking; the store's run import ranks the same way in SQL, block by block
    (:func:`store.imports.import_run`), and the tests hold the two equal.
    """
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
    A ``passage_id`` without ':' is joined to its ``doc_id`` as ``doc_id:passage_id``. One passage
    given twice with the same text is kept once; with different texts it is refused.
    """
    return [p for block in PassageStream(path) for p in block]


class PassageStream:
    """The passages of a JSONL file, one list per block of the file (see :func:`parse_passages`).

    The ids seen so far are kept with a hash of their text, to refuse a passage given twice with
    different texts; ``count`` is the number of distinct passages once iterated.
    """

    def __init__(self, path: str | Path):
        self.path = path
        self.count = 0

    def __iter__(self) -> Iterator[list[PassageText]]:
        path = self.path
        seen: dict[str, tuple[int, int]] = {}
        for first_line, block in read_blocks(path):
            out = []
            for number, text in lines_of(block, first_line):
                passage = _passage(path, number, text)
                digest = hash(passage.text)
                first = seen.setdefault(passage.passage_id, (digest, number))
                if first[1] != number:
                    if first[0] != digest:
                        raise FormatError(
                            path,
                            number,
                            f"one text per passage ({short(passage.passage_id, 40)} has another text on line {first[1]})",
                            "a different text",
                        )
                    continue
                out.append(passage)
            if out:
                self.count += len(out)
                yield out
        if not self.count:
            raise FormatError(path, None, "at least one passage", "an empty file")


def _passage(path, number: int, text: str) -> PassageText:
    try:
        obj = parse_json_text(path, text)
    except FormatError as exc:
        raise FormatError(path, number, f"one JSON object per line ({exc.expected})", exc.found) from None
    if not isinstance(obj, dict):
        raise FormatError(path, number, "one JSON object per line", short(text, 40))
    doc = obj.get("doc_id")
    pid = obj.get("passage_id", obj.get("id"))
    body = obj.get("passage_text", obj.get("contents", obj.get("text")))
    if pid is None or body is None:
        raise FormatError(
            path, number, "fields passage_id (or id) and passage_text (or contents/text)", f"fields {sorted(obj)}"
        )
    if not isinstance(body, str):
        raise FormatError(path, number, "passage_text as a string", type(body).__name__)
    if isinstance(pid, bool) or not isinstance(pid, (str, int)) or (doc is not None and not isinstance(doc, str)):
        raise FormatError(path, number, "string ids", f"passage_id {type(pid).__name__}")
    pid = check_id(str(pid), path, number, "a passage id")
    if doc is not None:
        check_id(doc, path, number, "a doc_id")
    full = pid if (":" in pid or not doc) else f"{doc}:{pid}"
    check_id(full, path, number, "a passage id")
    return PassageText(full, doc or full.rsplit(":", 1)[0], body, number)


def format_qrels(rows: Iterable[tuple[str, str, int]]) -> Iterator[str]:
    """Yield TREC qrels lines ``turn 0 item grade`` (space separated, newline-terminated)."""
    for turn, item, grade in rows:
        yield f"{turn} 0 {item} {grade}\n"


def format_run(rows: Iterable[tuple[str, str, int, float, str]]) -> Iterator[str]:
    """Yield TREC run lines ``turn Q0 passage rank score tag``."""
    for turn, passage, rank, score, tag in rows:
        yield f"{turn} Q0 {passage} {rank} {score:g} {tag}\n"


def qrels_table(path: str | Path, *, ptkb: bool = False) -> dict[str, dict[str, int]]:
    """``{turn: {item: grade}}`` from TREC qrels (passage qrels, or PTKB statement qrels with ``ptkb``)."""
    qrels: dict[str, dict[str, int]] = {}
    for row in parse_ptkb_qrels(path) if ptkb else parse_qrels(path):
        qrels.setdefault(row.turn_id, {})[row.item_id] = row.grade
    return qrels


def runs_table(path: str | Path) -> dict[str, dict[str, dict[str, float]]]:
    """``{tag: {turn: {passage: score}}}`` from a TREC run (the rank column is ignored, as in trec_eval)."""
    runs: dict[str, dict[str, dict[str, float]]] = {}
    for row in parse_run(path):
        runs.setdefault(row.tag, {}).setdefault(row.turn_id, {})[row.passage_id] = row.score
    return runs
