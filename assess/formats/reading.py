"""The one reading path of the workbench: files, uploads, lines and JSON, refused cleanly when hostile.

Every failure becomes a :class:`~assess.errors.FormatError` naming the input, the line (or JSON
path) and what was expected vs found:

- only regular files are read: a directory, FIFO, socket or device (``/dev/zero``) is refused after
  ``fstat`` on a descriptor opened without blocking, so neither a FIFO nor an endless device is read;
- size limits are checked before reading: JSON files at most :data:`MAX_JSON_BYTES`; line files
  (qrels, runs, passages JSONL, label TSVs) are read in blocks of :data:`BLOCK_BYTES` with no total
  limit, but no line may be longer than :data:`MAX_LINE_BYTES`; a streamed JSON file's records (and a
  top-level scalar) are at most :data:`MAX_RECORD_CHARS` characters each;
- text is UTF-8 (a byte-order mark at the very start is dropped; anywhere else it is a format
  character and refused in ids and field lines); invalid bytes name their line and column;
- field lines are separated by spaces or tabs only: control, format and other space characters
  (no-break space, U+2003, ...) are refused with their line and column;
- JSON: nesting at most :data:`MAX_DEPTH` levels; numbers are finite (no ``NaN``, ``Infinity``,
  ``1e309``) and integers fit in 64 bits; no lone surrogate escapes (``"\\ud800"``); a key given
  twice in one object with different values is refused;
- ids (turns, passages, runs, sources, nugget and PTKB keys) follow one rule, :func:`id_problem`.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import math
import os
import re
import stat
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from assess.errors import FormatError

MiB = 2**20
MAX_JSON_BYTES = 256 * MiB  # a whole JSON file (topics, nuggets, responses, score inputs, uploads)
MAX_LINE_BYTES = 4 * MiB  # one line of a line file (a passage JSONL line with a long text fits)
# One record of a streamed JSON file (a conversation, a turn's nuggets or responses): parsed, it takes about
# 20 times its size (a 28 MB record took 641 MB), so it is held to a line's limit; the iKAT and CONE-RAG
# files' largest record is 50 KB.
MAX_RECORD_CHARS = MAX_LINE_BYTES
BLOCK_BYTES = 1 * MiB  # line files are read, checked and parsed this much at a time
MAX_DEPTH = 200  # JSON nesting (the iKAT files nest 4 levels deep)
MAX_ID_CHARS = 1000
_BOM = b"\xef\xbb\xbf"

# Characters no id and no field line may hold: C0/C1 controls (tab, LF, CR aside), the Unicode
# format characters (zero-width and direction marks, BOM, soft hyphen, ...), spaces other than
# the ASCII space and tab, and surrogates (only a JSON escape can produce one).
_CONTROL = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
_FORMAT = (
    "\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)
_SPACES = "\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_SURROGATES = "\ud800-\udfff"
_BAD_IN_FIELDS = re.compile(f"[{_CONTROL}{_FORMAT}{_SPACES}{_SURROGATES}]|\r(?!\n)")
_BAD_IN_ID = re.compile(f"[\\s{_CONTROL}{_FORMAT}{_SPACES}{_SURROGATES}]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile(f"[{_SURROGATES}]")


def describe_char(char: str) -> str:
    """``U+00A0 (NO-BREAK SPACE)``: a character named so that a message shows what it is."""
    return f"U+{ord(char):04X} ({unicodedata.name(char, 'a control character')})"


def short(text: str, limit: int = 60) -> str:
    """``repr`` of ``text`` cut to ``limit`` characters: safe to print whatever it holds."""
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return repr(text)


# ------------------------------------------------------------------------------------------- ids


def id_problem(value: str) -> str | None:
    """What is wrong with ``value`` as an id (None when nothing is).

    The one id rule of every reader and option: non-empty, at most :data:`MAX_ID_CHARS` characters,
    no whitespace, control, format or surrogate characters. Ids are joined with spaces in history
    item keys and shown in pages, so this keeps both unambiguous.
    """
    if not value:
        return "an empty id"
    if len(value) > MAX_ID_CHARS:
        return f"an id of {len(value):,} characters"
    bad = _BAD_IN_ID.search(value)
    if bad:
        return f"{describe_char(bad.group())} in {short(value, 40)}"
    return None


ID_RULE = f"an id of 1..{MAX_ID_CHARS} characters without whitespace or control characters"


def check_id(value: Any, file, where: int | None, what: str) -> str:
    """``value`` if it is a valid id (see :func:`id_problem`), else a FormatError naming ``what``."""
    if not isinstance(value, str):
        raise FormatError(file, where, f"{what} as a string", type(value).__name__)
    problem = id_problem(value)
    if problem:
        raise FormatError(file, where, f"{what}: {ID_RULE}", problem)
    return value


# ------------------------------------------------------------------------------------- opening


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: str | Path, limit: int | None = None) -> BinaryIO:
    """Open ``path`` for binary reading if it is a regular file of at most ``limit`` bytes.

    The descriptor is opened non-blocking (a FIFO without writer does not hang the open) and checked
    with ``fstat`` before anything is read, so a swap of the file in between cannot slip through.
    A missing file raises FileNotFoundError (the CLI says "file not found").
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise FormatError(path, None, "a regular file", "a directory") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FormatError(path, None, "a regular file", _kind(info.st_mode))
        if limit is not None and info.st_size > limit:
            raise FormatError(path, None, f"a file of at most {limit // MiB} MiB", f"{info.st_size:,} bytes")
        os.set_blocking(fd, True)
        return open(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | Path, limit: int = MAX_JSON_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (also if it grows while being read)."""
    with open_regular(path, limit) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise FormatError(path, None, f"a file of at most {limit // MiB} MiB", "a file that grew beyond it")
    return data


def _decode(path, data: bytes, *, first_line: int = 1, column: bool = True) -> str:
    """``data`` as UTF-8; a bad byte is refused with its line (and column). Python's codec refuses
    encoded surrogates and overlong forms, so the text holds no surrogate."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        number = first_line + data.count(b"\n", 0, exc.start)
        found = f"the byte 0x{data[exc.start]:02x}"
        if column:
            line_start = data.rfind(b"\n", 0, exc.start) + 1
            found += f" at column {exc.start - line_start + 1}"
        raise FormatError(path, number, "UTF-8 text", found) from None


def read_text(path: str | Path, limit: int = MAX_JSON_BYTES) -> str:
    """The file's text (a UTF-8 BOM at the start dropped); bytes that are not UTF-8 name their line and column."""
    data = read_bytes(path, limit)
    return _decode(path, data[3:] if data.startswith(_BOM) else data)


# ---------------------------------------------------------------------------------- line files


def _refuse_character(path, text: str, first_line: int, match: re.Match) -> None:
    start = text.rfind("\n", 0, match.start()) + 1
    number = first_line + text.count("\n", 0, match.start())
    found = "a carriage return inside a line" if match.group() == "\r" else describe_char(match.group())
    raise FormatError(
        path,
        number,
        "fields separated by spaces or tabs, without control or format characters",
        f"{found} at column {match.start() - start + 1}",
    )


def read_blocks(path: str | Path, *, fields: bool = False) -> Iterator[tuple[int, str]]:
    """(number of the first line, text of whole lines) for each block of about :data:`BLOCK_BYTES`.

    Memory stays bounded whatever the file's size. With ``fields=True`` (qrels, runs, TSVs) the
    text may hold no control, format or non-ASCII space character (see the module docstring).
    """
    with open_regular(path) as handle:
        rest = handle.read(len(_BOM))
        if rest == _BOM:
            rest = b""
        first_line = 1
        while True:
            data = handle.read(BLOCK_BYTES)
            buffer = rest + data if rest else data
            if data:
                cut = buffer.rfind(b"\n") + 1
                if not cut:
                    if len(buffer) > MAX_LINE_BYTES:
                        raise FormatError(
                            path, first_line, f"lines of at most {MAX_LINE_BYTES // MiB} MiB", "a longer line"
                        )
                    rest = buffer
                    continue
                block, rest = buffer[:cut], buffer[cut:]
                if len(rest) > MAX_LINE_BYTES:  # an unfinished line already longer than any line may be
                    raise FormatError(
                        path,
                        first_line + block.count(b"\n"),
                        f"lines of at most {MAX_LINE_BYTES // MiB} MiB",
                        "a longer line",
                    )
            else:
                block, rest = buffer, b""
            if not block:
                return
            text = _decode(path, block, first_line=first_line)
            if fields:
                bad = _BAD_IN_FIELDS.search(text)
                if bad:
                    _refuse_character(path, text, first_line, bad)
            yield first_line, text
            first_line += block.count(b"\n")
            if not data:
                return


def lines_of(text: str, first_line: int) -> Iterator[tuple[int, str]]:
    """(line number, stripped text) of every non-blank line of a block."""
    for number, line in enumerate(text.split("\n"), start=first_line):
        if stripped := line.strip():
            yield number, stripped


def iter_lines(path: str | Path, *, fields: bool = False) -> Iterator[tuple[int, str]]:
    """(line number, stripped text) of every non-blank line, read block by block."""
    for first_line, text in read_blocks(path, fields=fields):
        yield from lines_of(text, first_line)


def read_lines(path: str | Path, *, fields: bool = False) -> list[tuple[int, str]]:
    """Return (line number, text) for every non-blank line, stripped; see :func:`read_blocks`."""
    return list(iter_lines(path, fields=fields))


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


DIGITS = re.compile(r"[0-9]{1,18}")


def to_int(path, line, value: str, what: str, low: int | None = None, high: int | None = None) -> int:
    """``value`` as a non-negative integer written in ASCII digits (no sign, no other digits), in range."""
    if not DIGITS.fullmatch(value):
        raise FormatError(path, line, what, short(value))
    number = int(value)
    if (low is not None and number < low) or (high is not None and number > high):
        raise FormatError(path, line, what, value)
    return number


FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,4})?")


def to_float(path, line, value: str, what: str) -> float:
    """``value`` as a finite number in ASCII notation (no ``nan``, ``inf``, ``1_0`` or other digits)."""
    if len(value) > 100 or not FLOAT.fullmatch(value):
        raise FormatError(path, line, what, short(value))
    number = float(value)
    if not math.isfinite(number):
        raise FormatError(path, line, f"{what} (finite)", value)
    return number


def split_fields(path, line: int, text: str, count: int, expected: str) -> list[str]:
    """The space/tab-separated fields of a line that must have ``count`` of them (``expected`` names them)."""
    fields = text.split()
    if len(fields) != count:
        found = f"{len(fields)} field{'s' if len(fields) != 1 else ''}: {short(text)}"
        raise FormatError(path, line, f"{count} fields ({expected})", found)
    return fields


# ---------------------------------------------------------------------------------------- JSON


class _Refused(Exception):
    """Raised from inside the JSON parser's hooks; turned into a FormatError with the line."""

    def __init__(self, literal: str, expected: str, found: str | None = None):
        self.literal, self.expected, self.found = literal, expected, found or short(literal, 40)


def _parse_int(literal: str) -> int:
    if len(literal.lstrip("-")) > 19:
        raise _Refused(literal, "an integer of at most 19 digits", f"{len(literal.lstrip('-')):,} digits")
    number = int(literal)
    if not -(2**63) <= number < 2**63:
        raise _Refused(literal, "an integer within 64 bits")
    return number


def _parse_float(literal: str) -> float:
    number = float(literal)
    if not math.isfinite(number):
        raise _Refused(literal, "a finite number")
    return number


def _parse_constant(literal: str):
    raise _Refused(literal, "a number (NaN and Infinity are not JSON)")


def _object(pairs: list[tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: dict = {}
        for key, value in pairs:
            if key in seen and seen[key] != value:
                raise _Refused(
                    json.dumps(key, ensure_ascii=False),
                    "each key once per object",
                    f"the key {short(key, 40)} twice with different values",
                )
            seen[key] = value
    return obj


_DECODER = json.JSONDecoder(
    parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant, object_pairs_hook=_object
)


def _line_of_literal(text: str, literal: str) -> int | None:
    """Line of the first occurrence of a literal as a JSON token (not inside a longer token)."""
    pattern = re.escape(literal) if literal.startswith('"') else rf"(?<![\w.+-]){re.escape(literal)}(?![\w.])"
    match = re.search(pattern + (r"\s*:" if literal.startswith('"') else ""), text)
    return None if match is None else text.count("\n", 0, match.start()) + 1


def _depth_line(text: str, start: int = 0) -> int | None:
    """The line where the nesting first exceeds :data:`MAX_DEPTH` (the error path of a very deep file);
    ``start``: the depth the text itself is nested at (a record of a streamed file: 1)."""
    depth = start
    for token in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', text):
        char = token.group()
        if char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return text.count("\n", 0, token.start()) + 1
        elif char in "]}":
            depth -= 1
    return None


def _where(json_path: tuple) -> str:
    shown = json_path if len(json_path) <= 8 else json_path[:8]
    text = "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in shown)
    return text + ("…" if len(json_path) > 8 else "") or "the top level"


def _shifted(line: int | None, first_line: int) -> int | None:
    return None if line is None else line + first_line - 1


def _check_tree(path, text: str, value: Any, first_line: int = 1, prefix: tuple = ()) -> None:
    """Nesting depth and lone surrogates, walked without recursion."""
    surrogates = bool(_SURROGATE_ESCAPE.search(text))
    stack: list[tuple[Any, tuple]] = [(value, prefix)]
    while stack:
        node, json_path = stack.pop()
        if len(json_path) > MAX_DEPTH:
            raise FormatError(
                path,
                _shifted(_depth_line(text, len(prefix)), first_line),
                f"JSON nested at most {MAX_DEPTH} levels deep",
                f"deeper at {_where(json_path)}",
            )
        if isinstance(node, dict):
            for key, item in node.items():
                if surrogates and _SURROGATE.search(key):
                    JsonChecker(path, text, first_line, prefix).fail(
                        json_path, "keys without lone surrogates (\\ud800-\\udfff)", short(key)
                    )
                stack.append((item, json_path + (key,)))
        elif isinstance(node, list):
            stack.extend((item, json_path + (index,)) for index, item in enumerate(node))
        elif surrogates and isinstance(node, str) and _SURROGATE.search(node):
            JsonChecker(path, text, first_line, prefix).fail(
                json_path, "text without lone surrogates (\\ud800-\\udfff)", short(node)
            )


def parse_json_text(path, text: str, *, first_line: int = 1, prefix: tuple = ()) -> Any:
    """Parse JSON text strictly (see the module docstring); every failure a FormatError naming ``path``.

    ``first_line`` and ``prefix``: where the text sits in its file when it is one record of a streamed
    file (:class:`JsonRecords`): the line it starts on and the JSON path of its value (the record's
    index or key), so that errors name the file's line and the whole path, and the nesting limit
    counts the levels above it.
    """
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        found = "the end of the file" if exc.pos >= len(text.rstrip()) and not prefix else exc.msg
        raise FormatError(path, _shifted(exc.lineno, first_line), "complete, valid JSON", found) from None
    except _Refused as exc:
        raise FormatError(
            path, _shifted(_line_of_literal(text, exc.literal), first_line), exc.expected, exc.found
        ) from None
    except RecursionError:
        raise FormatError(
            path,
            _shifted(_depth_line(text, len(prefix)), first_line),
            f"JSON nested at most {MAX_DEPTH} levels deep",
            "deeper nesting",
        ) from None
    return _checked(path, text, value, first_line, prefix)


def _checked(path, text: str, value: Any, first_line: int = 1, prefix: tuple = ()) -> Any:
    """``value``, parsed from ``text``, once its depth, surrogates and NUL characters have been checked."""
    _check_tree(path, text, value, first_line, prefix)
    if "\\u0000" in text.lower() and (line := _nul_line(text)):
        raise FormatError(path, _shifted(line, first_line), "text without NUL characters", "U+0000 (a NUL character)")
    return value


_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000", re.IGNORECASE)  # \u0000 not itself escaped as \\u0000


def _nul_line(text: str) -> int | None:
    """The line of the first escaped NUL character (``\\u0000``) in JSON text; None if there is none.
    A NUL is refused: PostgreSQL cannot store it in text, and it is no character of any real text."""
    found = _NUL.search(text)
    return text.count("\n", 0, found.start()) + 1 if found else None


def load_json(path: str | Path) -> tuple[Any, str]:
    """Parse a JSON file of at most :data:`MAX_JSON_BYTES`; return (value, text)."""
    text = read_text(path)
    return parse_json_text(path, text), text


def json_object(data: bytes, name: str) -> dict:
    """Parse bytes (an upload or a small file) as one JSON object, naming ``name`` and the line on error."""
    if len(data) > MAX_JSON_BYTES:
        raise FormatError(name, None, f"a file of at most {MAX_JSON_BYTES // MiB} MiB", f"{len(data):,} bytes")
    text = _decode(name, data[3:] if data.startswith(_BOM) else data)
    value = parse_json_text(name, text)
    if not isinstance(value, dict):
        raise FormatError(name, 1, "a JSON object", type(value).__name__)
    return value


def read_json_object(path: str | Path) -> dict:
    """A JSON file holding one object (guidelines and other small inputs)."""
    return json_object(read_bytes(path), str(path))


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
    except (ValueError, RecursionError):
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
    """Raises FormatError with the line of the offending JSON value.

    ``text`` is the whole file, or one record of a streamed file (:class:`JsonRecords`): then
    ``first_line`` is the file's line it starts on and ``prefix`` the JSON path of its value, and the
    paths given to :meth:`fail` are whole paths (they start with ``prefix``).
    """

    def __init__(self, path, text, first_line: int = 1, prefix: tuple = ()):
        self.path, self.text, self.first_line, self.prefix = path, text, first_line, tuple(prefix)

    def line(self, json_path: tuple) -> int | None:
        """The file's line where the value at ``json_path`` starts (error path only: it re-parses)."""
        inner = tuple(json_path[len(self.prefix) :]) if tuple(json_path[: len(self.prefix)]) == self.prefix else ()
        line = _shifted(json_line(self.text, inner), self.first_line)
        return self.first_line if line is None and self.prefix else line  # a record's scalar: its line

    def fail(self, json_path: tuple, expected: str, found: Any):
        if not isinstance(found, str):
            found = f"{type(found).__name__} {short(json.dumps(found, ensure_ascii=False), 40)}"
        raise FormatError(self.path, self.line(json_path), f"{expected} at {_where(json_path)}", found)

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

    def id(self, value: Any, json_path: tuple, what: str) -> str:
        """``value`` (a string, stripped) if it passes the id rule (:func:`id_problem`)."""
        if not isinstance(value, str):
            self.fail(json_path, f"{what} as a string", value)
        value = value.strip()
        problem = id_problem(value)
        if problem:
            self.fail(json_path, f"{what}: {ID_RULE}", problem)
        return value


# ------------------------------------------------------------------------------- streamed JSON


class _Decoded:
    """The text of a binary stream, decoded as UTF-8 piece by piece (a BOM at the very start dropped).

    A piece never ends inside a multi-byte character; a byte that is not UTF-8 is refused with its
    line and column as :func:`read_text` refuses it, and more than ``limit`` bytes are refused.
    """

    def __init__(self, handle: BinaryIO, name, limit: int):
        self.handle, self.name, self.limit = handle, name, limit
        self.total = 0
        self.line = 1  # the line the next piece starts on
        self.column = 0  # bytes of that line already decoded
        self.pending = b""  # the start of a character cut by the last read
        self.started = False

    def read(self, size: int) -> str:
        """At least one character, or '' at the end of the stream."""
        while True:
            data = self.handle.read(size)
            if not isinstance(data, bytes | bytearray | memoryview):
                raise FormatError(self.name, None, "a binary file", type(data).__name__)
            data = bytes(data)
            self.total += len(data)
            if self.total > self.limit:
                raise FormatError(self.name, None, f"a file of at most {self.limit // MiB} MiB", "a longer file")
            buffer = self.pending + data
            if not self.started:
                if len(buffer) < len(_BOM) and data and _BOM.startswith(buffer):
                    self.pending = buffer
                    continue
                self.started = True
                if buffer.startswith(_BOM):
                    buffer = buffer[len(_BOM) :]
            self.pending = b""
            if data:  # keep an unfinished character for the next read
                lead = len(buffer) - 1
                while lead >= 0 and len(buffer) - lead <= 3 and buffer[lead] & 0xC0 == 0x80:
                    lead -= 1
                if lead >= 0 and buffer[lead] >= 0xC0:
                    need = 2 if buffer[lead] < 0xE0 else 3 if buffer[lead] < 0xF0 else 4
                    if len(buffer) - lead < need:
                        buffer, self.pending = buffer[:lead], buffer[lead:]
            if not buffer:
                if not data:
                    return ""
                continue
            try:
                text = buffer.decode("utf-8")
            except UnicodeDecodeError as exc:
                number = self.line + buffer.count(b"\n", 0, exc.start)
                line_start = buffer.rfind(b"\n", 0, exc.start) + 1
                column = exc.start - line_start + 1 + (self.column if line_start == 0 else 0)
                found = f"the byte 0x{buffer[exc.start]:02x} at column {column}"
                raise FormatError(self.name, number, "UTF-8 text", found) from None
            newlines = buffer.count(b"\n")
            self.line += newlines
            self.column = len(buffer) - buffer.rfind(b"\n") - 1 if newlines else self.column + len(buffer)
            return text


_SPACE = re.compile(r"[ \t\n\r]*")


_NUMBER_TAIL = re.compile(r"[0-9eE+.-]*")


class JsonRecords:
    """The records of a JSON file, read incrementally: the elements of its top-level array, or the
    values of its top-level object, one at a time, each with a :class:`JsonChecker` for its errors.

    Only one record is in memory at a time (with at most about two reads of :data:`BLOCK_BYTES`
    around it), so memory is bounded by the largest record, not by the file. Every rule of
    :func:`parse_json_text` holds as if the file had been parsed whole: each record is parsed by it
    with the line it starts on and its index or key as the start of its JSON path (so errors name the
    file's line and the whole path, and the depth limit counts the top level); UTF-8, the size limit
    (:data:`MAX_JSON_BYTES`) and the syntax between records are checked as the file is read. A key of
    the top-level object given twice is refused when its values differ (compared by a digest of their
    canonical JSON, sorted keys) and otherwise yielded once; the error names the key's first line, as
    the whole-file parser does.

    ``source``: a path (a regular file, see :func:`open_regular`) or a binary file object (an upload),
    read from where it stands; ``name`` names it in errors (default: the path, or the object's
    ``name``). After opening, :attr:`kind` is ``list``, ``dict`` or, for a top-level scalar, its type
    (then :attr:`value` holds it and there are no records); :meth:`fail` refuses the top level.
    Iterating gives ``(index or key, value, checker)``; a FormatError is raised where the file
    breaks, after the records before it have been given (an importer that must write nothing then
    works in one transaction, or reads the file twice).
    """

    def __init__(self, source: str | Path | BinaryIO, name=None):
        if isinstance(source, str | os.PathLike):
            self.name = name if name is not None else source
            self._handle: BinaryIO | None = open_regular(source, MAX_JSON_BYTES)
            handle = self._handle
        else:
            self.name = name if name is not None else getattr(source, "name", "the upload")
            self._handle, handle = None, source
        self._text = _Decoded(handle, self.name, MAX_JSON_BYTES)
        self._buffer = ""
        self._counted, self._line = 0, 1  # lines counted up to position _counted of the buffer
        self._read_size = BLOCK_BYTES
        self.value: Any = None
        self._seen: dict[str, tuple[bytes, int]] = {}
        try:
            position = self._skip_space(0)
            self.top_line = self._line_at(position)
            first = self._buffer[position : position + 1]
            if first in ("[", "{"):
                self.kind: type = list if first == "[" else dict
                self._position = position + 1
                return
            while self._more_for(position, (), self.top_line):  # a scalar (or not JSON): the rest of the file
                pass
            self.value = parse_json_text(self.name, self._buffer[position:], first_line=self.top_line)
            self.kind = type(self.value)
            self._position = len(self._buffer)
        except BaseException:
            self.close()
            raise

    # -- the buffer

    def _more(self, most: int | None = None) -> bool:
        """Read more text into the buffer (reads grow with the buffer, so a long record is read in
        few pieces; at most ``most`` bytes); False at the end of the file."""
        size = max(self._read_size, len(self._buffer))
        text = self._text.read(size if most is None else max(1, min(size, most)))
        self._buffer += text
        return bool(text)

    def _line_at(self, position: int) -> int:
        if position < self._counted:
            return self._line - self._buffer.count("\n", position, self._counted)
        self._line += self._buffer.count("\n", self._counted, position)
        self._counted = position
        return self._line

    def _drop(self, position: int) -> int:
        """Forget the buffer before ``position`` (read and done with); its new index 0."""
        self._line_at(position)
        self._buffer = self._buffer[position:]
        self._counted = 0
        return 0

    def _skip_space(self, position: int) -> int:
        """The position of the next character that is no JSON whitespace (callers keep no older position)."""
        while True:
            position = _SPACE.match(self._buffer, position).end()
            if position < len(self._buffer):
                return position
            if position > BLOCK_BYTES:  # whitespace read is dropped: a file of spaces is no record to hold
                position = self._drop(position)
            if not self._more():
                return position

    def _syntax(self, position: int, found: str):
        at_end = position >= len(self._buffer) and not self._more()
        raise FormatError(
            self.name, self._line_at(position), "complete, valid JSON", "the end of the file" if at_end else found
        )

    def _decode_at(self, position: int, prefix: tuple) -> tuple[Any, int]:
        """(value, end) of the JSON value starting at ``position``, parsed by the strict decoder; the
        buffer is extended while the value runs past its end. A decoding error near the end of the
        buffer (or an unterminated string) means more text is needed; elsewhere, or at the end of the
        file, it is the file's error, named with its line."""
        while True:
            try:
                value, end = _DECODER.raw_decode(self._buffer, position)
                # a number that reaches the end of the buffer (digits, 'e', a sign) may go on past it
                number = isinstance(value, int | float) and not isinstance(value, bool)
                if (end < len(self._buffer) and not (number and _NUMBER_TAIL.fullmatch(self._buffer, end))) or (
                    not self._more_for(position, prefix)
                ):
                    self._check_size(end - position, position, prefix)
                    return value, end
                continue
            except json.JSONDecodeError as exc:
                cut = exc.pos >= len(self._buffer) - 8 or exc.msg.startswith("Unterminated string")
                if cut and self._more_for(position, prefix):
                    continue
                at_end = exc.pos >= len(self._buffer.rstrip())
                line = self._line_at(exc.pos)
                raise FormatError(
                    self.name, line, "complete, valid JSON", "the end of the file" if at_end else exc.msg
                ) from None
            except _Refused as exc:  # a number or constant refused: cutting a token never makes it valid
                rest = self._buffer[position:]
                line = _shifted(_line_of_literal(rest, exc.literal), self._line_at(position))
                raise FormatError(self.name, line, exc.expected, exc.found) from None
            except RecursionError:
                line = _shifted(_depth_line(self._buffer[position:], len(prefix)), self._line_at(position))
                raise FormatError(
                    self.name, line, f"JSON nested at most {MAX_DEPTH} levels deep", "deeper nesting"
                ) from None

    def _more_for(self, position: int, prefix: tuple, line: int | None = None) -> bool:
        """:meth:`_more` for the value starting at ``position``, which needs more text: refused once it runs
        past :data:`MAX_RECORD_CHARS`, before more is read, so memory is bounded by the limit, not the record."""
        held = len(self._buffer) - position
        self._check_size(held, position, prefix, line)
        return self._more(MAX_RECORD_CHARS + 1 - held)  # never more than one character past the limit

    def _check_size(self, size: int, position: int, prefix: tuple, line: int | None = None) -> None:
        if size > MAX_RECORD_CHARS:
            where = f"a record of at most {MAX_RECORD_CHARS // MiB} MiB at {_where(prefix)}"
            found = f"one running past {MAX_RECORD_CHARS:,} characters"
            raise FormatError(self.name, line or self._line_at(position), where, found)

    # -- the records

    def _raw(self) -> Iterator[tuple[Any, int | None, Any, str, int]]:
        """(index or key, the key's line (None in a list), value, the value's text, its first line) of
        every record, each value checked as :func:`parse_json_text` checks a whole file."""
        if self.kind not in (list, dict):
            return
        close = "]" if self.kind is list else "}"
        position = self._skip_space(self._position)
        index = 0
        if self._buffer[position : position + 1] == close:
            self._end(position + 1)
            return
        while True:
            if position > BLOCK_BYTES:
                position = self._drop(position)
            if self.kind is dict:
                if self._buffer[position : position + 1] != '"':
                    self._syntax(position, "Expecting property name enclosed in double quotes")
                key_line = self._line_at(position)
                key, end = self._decode_at(position, ("",))
                self._check_key(key, key_line)
                position = self._skip_space(end)
                if self._buffer[position : position + 1] != ":":
                    self._syntax(position, "Expecting ':' delimiter")
                position = self._skip_space(position + 1)
            else:
                key, key_line = index, None
            if position >= len(self._buffer) or self._buffer[position] in ",]}:":
                self._syntax(position, "Expecting value")
            value, end = self._decode_at(position, (key,))
            line = self._line_at(position)
            text = self._buffer[position:end]
            yield key, key_line, _checked(self.name, text, value, line, (key,)), text, line
            index += 1
            position = self._skip_space(end)
            following = self._buffer[position : position + 1]
            if following == close:
                self._end(position + 1)
                return
            if following != ",":
                self._syntax(position, "Expecting ',' delimiter")
            position = self._skip_space(position + 1)

    def _check_key(self, key: str, line: int) -> None:
        """A key of the top-level object, as strict as any key inside a record."""
        if "\x00" in key:
            raise FormatError(self.name, line, "text without NUL characters", "U+0000 (a NUL character)")
        if _SURROGATE.search(key):
            raise FormatError(
                self.name, line, "keys without lone surrogates (\\ud800-\\udfff) at the top level", short(key)
            )

    def _end(self, position: int) -> None:
        position = self._skip_space(position)
        if position < len(self._buffer):
            self._syntax(position, "Extra data")

    def __iter__(self) -> Iterator[tuple[Any, Any, JsonChecker]]:
        try:
            for key, key_line, value, text, line in self._raw():
                if self.kind is dict:
                    digest = hashlib.blake2b(
                        json.dumps(value, sort_keys=True, ensure_ascii=False).encode(), digest_size=16
                    ).digest()
                    entry = (digest, key_line)
                    first = self._seen.setdefault(key, entry)
                    if first is not entry:
                        if first[0] != digest:
                            raise FormatError(
                                self.name,
                                first[1],
                                "each key once per object",
                                f"the key {short(key, 40)} twice with different values (again on line {key_line})",
                            )
                        continue  # the same value under the same key again: given once
                yield key, value, JsonChecker(self.name, text, line, (key,))
        finally:
            self.close()

    def fail(self, expected: str, found: Any = None):
        """Refuse the top level: ``expected`` at the top level, found what it is (or ``found``)."""
        if found is None:
            head = " ".join(self._buffer[:200].split())
            found = (
                f"{self.kind.__name__} {short(head, 40)}"
                if self.kind in (list, dict)
                else f"{self.kind.__name__} {short(json.dumps(self.value, ensure_ascii=False), 40)}"
            )
        raise FormatError(self.name, self.top_line, f"{expected} at the top level", found)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def __enter__(self) -> JsonRecords:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def json_path_line(source: str | Path, json_path: tuple) -> int | None:
    """The line where the value at ``json_path`` starts in a JSON file, read incrementally (for an
    error found after a record was read: only the record holding the value is parsed); None if the
    file cannot be read or has no such value."""
    try:
        with JsonRecords(source) as records:
            if not json_path:
                return records.top_line
            for key, _key_line, _value, text, line in records._raw():
                if key == json_path[0]:
                    return _shifted(json_line(text, tuple(json_path[1:])), line)
    except (OSError, FormatError):
        return None
    return None


def per_turn(path: str | Path, top: str, inner: str) -> Iterator[tuple[JsonChecker, str, str, Any]]:
    """(checker, turn id, key, value) for each entry of a JSON file shaped ``{turn id: {key: value}}``.

    ``top`` and ``inner`` say what the file and each turn's object should be, for the error message.
    Turn ids and keys pass the id rule; they are given stripped. The file is read one turn at a time
    (:class:`JsonRecords`): a FormatError comes after the entries before it.
    """
    with JsonRecords(path) as records:
        if records.kind is not dict:
            records.fail(top)
        for turn, entries, check in records:
            turn_id = check.id(turn, (turn,), "a turn id")
            if not isinstance(entries, dict):
                check.fail((turn,), inner, entries)
            for key, value in entries.items():
                yield check, turn_id, check.id(key, (turn, key), "a key"), value
