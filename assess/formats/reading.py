"""Reading text and JSON files and uploads: UTF-8 (a byte-order mark dropped), errors that name the line.

Shared by every reader of the package; see :mod:`assess.formats` for the tolerance rules.
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assess.errors import FormatError


def _decode(path: Path, data: bytes, *, column: bool) -> str:
    """``data`` as UTF-8 text, a byte-order mark dropped; a bad byte is refused with its line (and column)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        number = data.count(b"\n", 0, exc.start) + 1
        found = f"the byte 0x{data[exc.start]:02x}"
        if column:
            line_start = data.rfind(b"\n", 0, exc.start) + 1
            found += f" at column {exc.start - line_start + 1}"
        raise FormatError(path, number, "UTF-8 text", found) from None


def read_text(path: str | Path) -> str:
    """The file's text (a UTF-8 BOM dropped); bytes that are not UTF-8 are refused with their line and column."""
    path = Path(path)
    return _decode(path, path.read_bytes(), column=True)


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


def short(text: str, limit: int = 60) -> str:
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return repr(text)


def to_int(path, line, value: str, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise FormatError(path, line, what, short(value)) from None


def split_fields(path, line: int, text: str, count: int, expected: str) -> list[str]:
    """The whitespace-separated fields of a line that must have ``count`` of them (``expected`` names them)."""
    fields = text.split()
    if len(fields) != count:
        found = f"{len(fields)} field{'s' if len(fields) != 1 else ''}: {short(text)}"
        raise FormatError(path, line, f"{count} fields ({expected})", found)
    return fields


def load_json(path: str | Path) -> tuple[Any, str]:
    """Parse a JSON file; return (value, text). Invalid UTF-8 or JSON names the line."""
    path = Path(path)
    text = _decode(path, path.read_bytes(), column=False)
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


class JsonChecker:
    """Raises FormatError with the line of the offending JSON value."""

    def __init__(self, path, text):
        self.path, self.text = path, text

    def fail(self, json_path: tuple, expected: str, found: Any):
        where = "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in json_path)
        if not isinstance(found, str):
            found = f"{type(found).__name__} {short(json.dumps(found, ensure_ascii=False), 40)}"
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


def per_turn(path: str | Path, top: str, inner: str) -> Iterator[tuple[JsonChecker, str, str, Any]]:
    """(checker, turn id, key, value) for each entry of a JSON file shaped ``{turn id: {key: value}}``.

    ``top`` and ``inner`` say what the file and each turn's object should be, for the error message.
    """
    data, text = load_json(path)
    check = JsonChecker(path, text)
    if not isinstance(data, dict):
        check.fail((), top, data)
    for turn, entries in data.items():
        if not isinstance(entries, dict):
            check.fail((turn,), inner, entries)
        for key, value in entries.items():
            yield check, turn, key, value
