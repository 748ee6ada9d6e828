"""CONE-RAG nugget files: gold nuggets, nugget-to-response (NtR) labels, and the nugget writer."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from assess.errors import FormatError
from assess.formats.nuggetizer import looks_like_nuggetizer, parse_nuggetizer_nuggets
from assess.formats.reading import JsonChecker, JsonRecords, json_line, json_path_line, load_json, read_lines, short
from assess.tasks import MATCH, NUGGET_RELEVANCE


class NuggetRecord(NamedTuple):
    turn_id: str
    key: str
    text: str
    relevance: int | None
    line: int | None


class NtrRecord(NamedTuple):
    batch: str
    turn_id: str
    nugget_key: str  # '[k]'
    run: str
    match: int
    line: int


# '[k]' or 'k', k a positive integer written without leading zeros ('[01]' would be a second name of [1])
_NUGGET_KEY = re.compile(r"\[?([1-9][0-9]{0,8})\]?")
_RELEVANCE = f"a relevance {NUGGET_RELEVANCE.low}..{NUGGET_RELEVANCE.high}"
_MATCHES = {str(v) for v in MATCH.values}


def _records(path: str | Path):
    """(raw turn key, value, checker) of each top-level entry of a ``{turn id: ...}`` JSON file, read one
    at a time (:class:`~assess.formats.reading.JsonRecords`); nothing when the top level is no object.
    For the error path: the caller stops at the first FormatError and keeps what it found before it."""
    with JsonRecords(path) as records:
        if records.kind is dict:
            yield from records


def raw_entries(path: str | Path, turn_id: str, key: str | None = None) -> list[tuple]:
    """The file's own JSON paths of turn ``turn_id`` (or of its entry ``key``) in a ``{turn id: {key: ...}}``
    JSON file, keys compared stripped (a nugget key ``[k]`` also finds ``k``); [] when the file cannot be
    read. For errors found after parsing: an unknown turn, one item given twice. The file is read one turn
    at a time, so a big file costs no more memory here than when it was imported."""
    names = ({key, key.strip("[]")} if _NUGGET_KEY.fullmatch(key) else {key}) if key is not None else set()
    found: list[tuple] = []
    try:
        for raw, entries, _check in _records(path):
            if not isinstance(raw, str) or raw.strip() != turn_id:
                continue
            if key is None:
                found.append((raw,))
            elif isinstance(entries, dict):
                found.extend((raw, k) for k in entries if k.strip() in names)
    except (OSError, FormatError):
        return found if found else []
    return found


def entry_line(path: str | Path, json_path: tuple) -> int | None:
    """The line of the value at ``json_path`` in a JSON file (None when the file cannot be read): where an
    object or list starts, or for a plain value (a nugget or response given as a string) the line of its
    key, searched after the line of the object holding it. Only the top-level entry holding the value is
    parsed (the file is read up to it, one entry at a time)."""
    if not json_path:
        return json_path_line(path, json_path)
    try:
        for raw, _value, check in _records(path):
            if raw == json_path[0]:
                return _line_in_record(check, json_path[1:])
    except (OSError, FormatError):
        return None
    return None


def _line_in_record(check, inner: tuple) -> int | None:
    """:func:`entry_line` within one top-level entry: ``check.text`` is its value's text, starting on
    the file's line ``check.first_line``."""
    text, first = check.text, check.first_line
    if not inner:
        return first
    found_at = json_line(text, inner)
    line = None if found_at is None else found_at + first - 1
    if not isinstance(inner[-1], str) or line is None:
        return line
    parent = (json_line(text, inner[:-1]) or 1) + first - 1
    if line != parent:
        return line
    start = 0
    for _ in range(parent - first):
        start = text.index("\n", start) + 1
    found = re.compile(re.escape(json.dumps(inner[-1], ensure_ascii=False)) + r"\s*:").search(text, start)
    return first + text.count("\n", 0, found.start()) if found else line


def twice(path: str | Path, turn_id: str, key: str, what: str) -> FormatError:
    """The refusal of one entry given twice in a ``{turn id: {key: ...}}`` file under keys (or turn ids)
    that differ only by surrounding whitespace: names the second one and its line."""
    found = raw_entries(path, turn_id, key)
    where = found[-1] if found else (turn_id, key)
    names = " and ".join(f"[{short(t, 40)}][{short(k, 40)}]" for t, k in found[:2]) or f"[{turn_id!r}][{key!r}]"
    return FormatError(
        path,
        entry_line(path, where),
        f"one {what} per turn and key ({names} differ only by surrounding whitespace)",
        f"[{short(where[0], 40)}][{short(where[1], 40)}] again",
    )


def turn_line(path: str | Path, turn_id: str) -> int | None:
    """The line of turn ``turn_id`` (its key, spaces around it allowed) in a ``{turn id: ...}`` JSON file;
    None when it cannot be found. For errors found after parsing (an unknown turn)."""
    try:
        for raw, _value, check in _records(path):  # read up to the turn, one turn at a time
            if isinstance(raw, str) and raw.strip() == turn_id:
                return _line_in_record(check, ())
    except (OSError, FormatError):
        return None
    return None


def parse_nuggets(path: str | Path) -> list[NuggetRecord]:
    """:func:`iter_nuggets` as a list."""
    return list(iter_nuggets(path))


def iter_nuggets(path: str | Path) -> Iterator[NuggetRecord]:
    """Read CONE-RAG gold nuggets: ``{turn: {"[k]": {"text", "relevance"}}}`` (k 1-based).

    ``1`` and ``[1]`` name the same nugget: given both with different contents, the file is refused.
    A key is ``[k]`` or ``k`` with k a positive integer without leading zeros (``[01]`` is refused, as
    it would be a second nugget beside ``[1]``); keys or turn ids that differ only by surrounding
    whitespace are refused; the text is not empty (nor only whitespace). Relevance is an integer (a
    JSON integer or a string of ASCII digits) in the nugget scale.

    The file is read one turn at a time (:func:`~assess.formats.reading.per_turn`) and the nuggets are
    given as they are read: a FormatError comes after the nuggets of the turns before it. What is kept
    to find a nugget given twice is the current turn's keys and contents; a turn id met again later
    under another spelling (``" t1"`` after ``"t1"``: rare, and refused only when a key repeats) has its
    earlier keys read again from the file.
    """
    earlier: dict[str, list[int]] = {}  # turn id -> the records (by number) that gave it: a few ints per turn
    with JsonRecords(path) as records:
        if records.kind is not dict:
            records.fail("an object {turn id: {nugget key: nugget}}")
        for index, (raw, entries, check) in enumerate(records):
            turn = check.id(raw, (raw,), "a turn id")
            if not isinstance(entries, dict):
                check.fail((raw,), "an object of nuggets", entries)
            given: set[str] = set()  # keys as given, stripped
            seen: dict[str, tuple[str, int | None]] = {}  # '[k]' -> (text, relevance)
            if turn in earlier:  # the same turn under another spelling of its id: its keys so far
                _given_before(path, earlier[turn], turn, given, seen)
            earlier.setdefault(turn, []).append(index)
            for raw_key, nugget in entries.items():
                key = check.id(raw_key, (raw, raw_key), "a key")
                if key in given:  # ' [1]' and '[1]' (or two such turn ids) meet here
                    raise twice(path, turn, key, "nugget")
                given.add(key)
                record = _nugget(check, (turn, key), turn, key, nugget)
                first = seen.get(record.key)
                if first is not None:
                    if first != (record.text, record.relevance):
                        check.fail(
                            (turn, key),
                            f"one nugget per key ({record.key} is given twice with different contents)",
                            key,
                        )
                    continue  # the same nugget under '1' and '[1]': kept once
                seen[record.key] = (record.text, record.relevance)
                yield record


def _given_before(path, indices: list[int], turn: str, given: set[str], seen: dict) -> None:
    """The keys and nuggets of ``turn`` in the file's records numbered ``indices`` (read again: they
    were checked when first read)."""
    wanted = set(indices)
    for index, (_raw, entries, check) in enumerate(_records(path)):
        if index > max(wanted):
            return
        if index in wanted:
            for raw_key, nugget in entries.items():
                key = raw_key.strip()
                given.add(key)
                record = _nugget(check, (turn, key), turn, key, nugget)
                seen.setdefault(record.key, (record.text, record.relevance))


def _nugget(check, where: tuple, turn: str, key: str, nugget) -> NuggetRecord:
    """One nugget entry (at the file's JSON path ``where``) checked: its key, text and relevance."""
    matched = _NUGGET_KEY.fullmatch(key)
    if not matched:
        check.fail(where, "nugget keys like '[1]' (a number from 1, without leading zeros)", short(key, 40))
    if isinstance(nugget, str):
        body, at = nugget, where
    elif isinstance(nugget, dict):
        body, at = check.get(nugget, "text", str, where), where + ("text",)
    else:
        check.fail(where, "a nugget object with 'text'", nugget)
    if not body.strip():
        check.fail(at, "a non-empty text", short(body, 20))
    rel = nugget.get("relevance") if isinstance(nugget, dict) else None
    if rel is not None:
        rel = _relevance(check, rel, where + ("relevance",))
    return NuggetRecord(turn, f"[{matched.group(1)}]", body, rel, None)


def _relevance(check, value, json_path: tuple) -> int:
    """A nugget relevance: a JSON integer or a string of ASCII digits, in the scale (3.9 is refused, not cut to 3)."""
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit() and len(value.strip()) <= 3:
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value not in NUGGET_RELEVANCE:
        check.fail(json_path, _RELEVANCE + " (an integer)", value if not isinstance(value, int) else str(value))
    return value


# The id of one NtR label: batch, conversation, turn number, nugget number (1-based), run.
NTR_ID = re.compile(r"^(?P<batch>[^_\s]+)_(?P<conv>[^_\s]+)_(?P<turn>[0-9]{1,10})_(?P<k>[0-9]{1,9})_(?P<run>\S+)$")


class NtrLine(NamedTuple):
    """One line of an NtR file (CONE-RAG TSV): the parts of its id and the fields after the id."""

    batch: str
    turn_id: str  # '<conv>_<turn>'
    nugget_key: str  # '[k]'
    run: str
    rest: tuple[str, ...]  # the fields after the id
    line: int


ReadError = Callable[[int, str, list[str]], FormatError]  # (line number, line, its fields) -> the error to raise


def read_ntr_lines(
    path: str | Path, *, widths: tuple[int, ...] = (2,), bad_width: ReadError, bad_id: ReadError
) -> Iterator[NtrLine]:
    """Each line of an NtR file, ``<batch>_<conv>_<turn>_<k>_<run>`` then more fields (``widths``: how many fields
    a line may have, the id included): the one reader of the layout, whoever reads it (label imports, crowd files,
    known answers). A line of another width raises ``bad_width``'s error, an id of another shape ``bad_id``'s."""
    for number, text in read_lines(path, fields=True):
        fields = text.split()
        if len(fields) not in widths:
            raise bad_width(number, text, fields)
        m = NTR_ID.match(fields[0])
        if not m:
            raise bad_id(number, text, fields)
        yield NtrLine(m["batch"], f"{m['conv']}_{m['turn']}", f"[{m['k']}]", m["run"], tuple(fields[1:]), number)


def parse_ntr_labels(path: str | Path) -> list[NtrRecord]:
    """Read NtR labels (CONE-RAG TSV): ``<batch>_<conv>_<turn>_<k>_<run>`` then ``0|1``."""
    out = []
    lines = read_ntr_lines(
        path,
        bad_width=lambda number, text, fields: FormatError(
            path, number, "2 fields (<batch>_<conv>_<turn>_<k>_<run>, 0|1)", f"{len(fields)} fields: {short(text)}"
        ),
        bad_id=lambda number, text, fields: FormatError(
            path, number, "an id <batch>_<conv>_<turn>_<k>_<run>", short(fields[0])
        ),
    )
    for r in lines:
        if r.rest[0] not in _MATCHES:
            raise FormatError(path, r.line, "a label 0 or 1", short(r.rest[0]))
        out.append(NtrRecord(r.batch, r.turn_id, r.nugget_key, r.run, int(r.rest[0]), r.line))
    if not out:
        raise FormatError(path, None, "at least one label line", "an empty file")
    return out


def nuggets_to_json(rows: Iterable[tuple[str, str, str, int | None]]) -> dict:
    """Build the CONE-RAG nugget layout from (turn, key, text, relevance) rows."""
    out: dict[str, dict] = {}
    for turn, key, body, rel in rows:
        entry = {"text": body}
        if rel is not None:
            entry["relevance"] = str(rel)
        out.setdefault(turn, {})[key] = entry
    return out


def check_subset(
    full: Iterable[tuple[str, str, str]], subset: Iterable[tuple[str, str, str]], full_path, subset_path
) -> None:
    """Refuse a de-duplicated nugget set that is not a subset of its full set.

    Both are (turn, key, text) triples; every nugget of ``subset`` must be in ``full`` under the same
    turn and key with the same text. The error names the subset file, the JSON path of the first
    nugget that is not (its line when the file is a JSON document), and what the full set holds.
    """
    known = {(turn, key): body for turn, key, body in full}
    for turn, key, body in subset:
        if known.get((turn, key)) == body:
            continue
        expected = f"a nugget of the full set {full_path} (a de-duplicated set is a subset of it)"
        found = (
            f"{key} of turn {turn!r}, which the full set does not have"
            if (turn, key) not in known
            else f"{key} of turn {turn!r} with another text: {short(body, 40)} instead of {short(known[turn, key], 40)}"
        )
        line = _json_line_of(subset_path, turn, key)
        raise FormatError(subset_path, line, f"{expected} at [{turn!r}][{key!r}]", found)


def _json_line_of(path, turn: str, key: str) -> int | None:
    """The line of nugget ``key`` ('[k]', or written 'k') of ``turn`` in a CONE-RAG JSON file (error path
    only; the file is read one turn at a time up to it)."""
    try:
        for raw, entries, check in _records(path):
            if raw != turn:
                continue
            if not isinstance(entries, dict):
                return check.first_line
            found = next((k for k in entries if f"[{k.strip().strip('[]')}]" == key), key)
            return _line_in_record(check, (found,)) if found in entries else check.first_line
    except (OSError, FormatError):
        return None
    return None


class GoldNuggets(NamedTuple):
    """A gold nugget file: ``{turn: {"[k]": text}}`` and, when the layout has it, each nugget's importance."""

    path: str
    text: dict[str, dict[str, str]]
    importance: dict[str, dict[str, str]] | None

    def keys(self) -> dict[str, set[str]]:
        """``{turn: {"[k]", ...}}`` (turns without nuggets are left out)."""
        return {turn: set(nuggets) for turn, nuggets in self.text.items() if nuggets}


def read_gold(path: str, layout: str = "auto") -> GoldNuggets:
    """Gold nuggets from a CONE-RAG JSON or a nuggetizer nugget JSONL file (``layout``: auto, cone-rag or
    nuggetizer; auto reads nuggetizer JSONL when the first line is an object with "qid" and "nuggets")."""

    text: dict[str, dict[str, str]] = {}
    if layout == "nuggetizer" or (layout == "auto" and looks_like_nuggetizer(path)):
        importance: dict[str, dict[str, str]] = {}
        for n in parse_nuggetizer_nuggets(path):
            text.setdefault(n.qid, {})[n.key] = n.text
            importance.setdefault(n.qid, {})[n.key] = n.importance
        return GoldNuggets(path, text, importance)
    for record in parse_nuggets(path):
        text.setdefault(record.turn_id, {})[record.key] = record.text
    return GoldNuggets(path, text, None)


def read_gold_sets(path: str, dedup_path: str | None, layout: str = "auto") -> tuple[GoldNuggets, GoldNuggets | None]:
    """A gold nugget set and its de-duplicated version (when given); a de-duplicated set in the other layout,
    or that is not a subset of the full one, is refused."""
    gold = read_gold(path, layout)
    if not dedup_path:
        return gold, None
    dedup = read_gold(dedup_path, layout)
    if (gold.importance is None) != (dedup.importance is None):
        raise FormatError(dedup_path, None, f"the layout of --gold {path}", "the other nugget layout")
    triples = [(t, k, body) for t, nuggets in gold.text.items() for k, body in nuggets.items()]
    check_subset(
        triples,
        [(t, k, body) for t, nuggets in dedup.text.items() for k, body in nuggets.items()],
        path,
        dedup_path,
    )
    return gold, dedup


def ntr_label_table(path: str) -> tuple[dict[str, dict[str, dict[str, bool]]], dict[tuple[str, str, str], int]]:
    """``{run: {turn: {"[k]": captured}}}`` from the NtR labels TSV, and each label's line by (run, turn, key);
    two different labels for one nugget are refused."""
    labels: dict[str, dict[str, dict[str, bool]]] = {}
    lines: dict[tuple[str, str, str], int] = {}
    for record in parse_ntr_labels(path):
        judged = labels.setdefault(record.run, {}).setdefault(record.turn_id, {})
        value = bool(record.match)
        if judged.get(record.nugget_key, value) != value:
            raise FormatError(
                path,
                record.line,
                f"one label per nugget ({record.turn_id} {record.nugget_key} {record.run} is already {int(not value)})",
                str(record.match),
            )
        judged[record.nugget_key] = value
        lines.setdefault((record.run, record.turn_id, record.nugget_key), record.line)
    return labels, lines


NTN_SHAPE = '{run: {turn: {"response": [ids], "pairs": [[response id, gold id], ...]}}}'


def read_ntn(path: str) -> dict[str, dict[str, tuple[list[str], list[tuple[str, str]]]]]:
    """NtN matches (layout :data:`NTN_SHAPE`), checked value by value: ``{run: {turn: (response ids, pairs)}}``.

    ``response`` is a list of distinct ids (a string is refused, not read as its characters),
    ``pairs`` (optional) a list of [response id, gold id] whose response id is in ``response``;
    no other field. Gold ids are compared with the gold set later (unknown ones are reported).
    """

    data, text = load_json(path)
    check = JsonChecker(path, text)
    if not isinstance(data, dict):
        check.fail((), f"an object {NTN_SHAPE}", data)
    runs: dict[str, dict[str, tuple[list[str], list[tuple[str, str]]]]] = {}
    for run, turns in data.items():
        run_id = check.id(run, (run,), "a run name")
        if not isinstance(turns, dict):
            check.fail((run,), "an object {turn: {response, pairs}}", turns)
        runs[run_id] = {}
        for turn, entry in turns.items():
            at = (run, turn)
            turn_id = check.id(turn, at, "a turn id")
            if not isinstance(entry, dict):
                check.fail(at, 'an object {"response": [ids], "pairs": [[r, g], ...]}', entry)
            extra = sorted(set(entry) - {"response", "pairs"})
            if extra:
                check.fail(at, 'only the fields "response" and "pairs"', f"field {short(extra[0], 40)}")
            response = check.get(entry, "response", (list, str), at)
            if isinstance(response, str):  # would otherwise be read as one id per character
                check.fail((*at, "response"), "a list of response nugget ids", f"a string {short(response, 40)}")
            ids: list[str] = []
            for i, item in enumerate(response):
                rid = check.id(item, (*at, "response", i), "a response nugget id")
                if rid in ids:
                    check.fail((*at, "response", i), "distinct response nugget ids", f"{short(rid, 40)} twice")
                ids.append(rid)
            pairs = []
            for i, pair in enumerate(check.get(entry, "pairs", list, at, required=False) or []):
                where = (*at, "pairs", i)
                if not isinstance(pair, list) or len(pair) != 2:
                    check.fail(where, "a pair [response id, gold id]", pair)
                r, g = (check.id(x, where, "a nugget id") for x in pair)
                if r not in ids:
                    check.fail(where, f"a response id listed in {list(at)}['response']", short(r, 40))
                pairs.append((r, g))
            runs[run_id][turn_id] = (ids, pairs)
    return runs
