"""CONE-RAG nugget files: gold nuggets, nugget-to-response (NtR) labels, and the nugget writer."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from assess.errors import FormatError
from assess.formats.reading import per_turn, read_lines, short
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


_NUGGET_KEY = re.compile(r"\[?([0-9]{1,9})\]?")
_RELEVANCE = f"a relevance {NUGGET_RELEVANCE.low}..{NUGGET_RELEVANCE.high}"
_MATCHES = {str(v) for v in MATCH.values}


def parse_nuggets(path: str | Path) -> list[NuggetRecord]:
    """Read CONE-RAG gold nuggets: ``{turn: {"[k]": {"text", "relevance"}}}`` (k 1-based).

    ``1`` and ``[1]`` name the same nugget: given both with different contents, the file is refused.
    Relevance is an integer (a JSON integer or a string of ASCII digits) in the nugget scale.
    """
    out = []
    seen: dict[tuple[str, str], tuple[str, int | None]] = {}
    for check, turn, key, nugget in per_turn(path, "an object {turn id: {nugget key: nugget}}", "an object of nuggets"):
        matched = _NUGGET_KEY.fullmatch(key)
        if not matched:
            check.fail((turn,), "nugget keys like '[1]'", key)
        if isinstance(nugget, str):
            nugget = {"text": nugget}
        if not isinstance(nugget, dict):
            check.fail((turn, key), "a nugget object with 'text'", nugget)
        body = check.get(nugget, "text", str, (turn, key))
        rel = nugget.get("relevance")
        if rel is not None:
            rel = _relevance(check, rel, (turn, key, "relevance"))
        k = f"[{matched.group(1)}]"
        first = seen.get((turn, k))
        if first is not None:
            if first != (body, rel):
                check.fail((turn, key), f"one nugget per key ({k} is given twice with different contents)", key)
            continue  # the same nugget under '1' and '[1]': kept once
        seen[(turn, k)] = (body, rel)
        out.append(NuggetRecord(turn, k, body, rel, None))
    return out


def _relevance(check, value, json_path: tuple) -> int:
    """A nugget relevance: a JSON integer or a string of ASCII digits, in the scale (3.9 is refused, not cut to 3)."""
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit() and len(value.strip()) <= 3:
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value not in NUGGET_RELEVANCE:
        check.fail(json_path, _RELEVANCE + " (an integer)", value if not isinstance(value, int) else str(value))
    return value


# The id of one NtR label: batch, conversation, turn number, nugget number (1-based), run.
NTR_ID = re.compile(r"^(?P<batch>[^_\s]+)_(?P<conv>[^_\s]+)_(?P<turn>[0-9]{1,10})_(?P<k>[0-9]{1,9})_(?P<run>\S+)$")


def parse_ntr_labels(path: str | Path) -> list[NtrRecord]:
    """Read NtR labels (CONE-RAG TSV): ``<batch>_<conv>_<turn>_<k>_<run>`` then ``0|1``."""
    out = []
    for number, text in read_lines(path, fields=True):
        fields = text.split()
        if len(fields) != 2:
            raise FormatError(
                path, number, "2 fields (<batch>_<conv>_<turn>_<k>_<run>, 0|1)", f"{len(fields)} fields: {short(text)}"
            )
        m = NTR_ID.match(fields[0])
        if not m:
            raise FormatError(path, number, "an id <batch>_<conv>_<turn>_<k>_<run>", short(fields[0]))
        if fields[1] not in _MATCHES:
            raise FormatError(path, number, "a label 0 or 1", short(fields[1]))
        out.append(NtrRecord(m["batch"], f"{m['conv']}_{m['turn']}", f"[{m['k']}]", m["run"], int(fields[1]), number))
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
    """The line of nugget ``key`` ('[k]', or written 'k') of ``turn`` in a CONE-RAG JSON file (error path only)."""
    from assess.formats.reading import json_line, load_json

    try:
        data, text = load_json(path)
    except FormatError:
        return None
    entries = data.get(turn) if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        return json_line(text, (turn,))
    raw = next((k for k in entries if f"[{k.strip().strip('[]')}]" == key), key)
    return json_line(text, (turn, raw))
