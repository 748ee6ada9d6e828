"""TREC RAG topics (a TSV of id and text, or AutoJudge requests JSONL) read with their line, and the checker of
a JSONL line that RAG answers and topics share. Pure."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from assess.errors import FormatError
from assess.formats.reading import (
    ID_RULE,
    JsonChecker,
    id_problem,
    iter_lines,
    parse_json_text,
)


class LineChecker(JsonChecker):
    """Checks the JSON object of one JSONL line; a failure names the line of the file."""

    def __init__(self, path, number: int, text: str):
        super().__init__(path, text)
        self.number = number

    def fail(self, json_path: tuple, expected: str, found: Any):
        self.text = "\n" * (self.number - 1) + self.text  # so json_line counts the file's lines
        super().fail(json_path, expected, found)


def topic_id_value(check: JsonChecker, value: Any, json_path: tuple, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        check.fail(json_path, f"{what} (a string or an integer)", value)
    return check.id(str(value), json_path, what)


class RagTopic(NamedTuple):
    """One topic of a TREC RAG 2026 topics TSV or an AutoJudge requests JSONL: its id, text and (requests
    only) the character ``limit`` of the report asked for."""

    topic_id: str
    text: str
    limit: int | None
    line: int


def iter_rag_topics(path: str | Path) -> Iterator[RagTopic]:
    """The topics of ``path``: TREC RAG 2026 ``topic_id <TAB> text`` lines (``trec_rag_2026_queries.tsv``,
    exactly two fields), or AutoJudge requests, one JSON object per line (``request_id``, ``title``, optional
    ``limit``; RAGTIME's). A file whose first line starts with ``{`` is read as requests. A topic id given
    twice, an empty id or text, a line of another shape: refused, naming the line."""
    seen: dict[str, int] = {}
    requests = None
    for number, text in iter_lines(path):
        if requests is None:
            requests = text.startswith("{")
        if requests:
            try:
                obj = parse_json_text(path, text)
            except FormatError as exc:
                raise FormatError(path, number, f"one JSON request per line ({exc.expected})", exc.found) from None
            check = LineChecker(path, number, text)
            if not isinstance(obj, dict):
                check.fail((), "a request object {request_id, title, limit}", obj)
            topic_id = topic_id_value(
                check, check.get(obj, "request_id", (str, int), ()), ("request_id",), "a request id"
            )
            body = check.get(obj, "title", str, ())
            limit = check.get(obj, "limit", int, (), required=False)
            if limit is not None and limit < 0:
                check.fail(("limit",), "a character limit >= 0", str(limit))
        else:
            fields = text.split("\t")
            if len(fields) != 2:
                raise FormatError(path, number, "two tab-separated fields: topic_id, text", f"{len(fields)} fields")
            topic_id, body, limit = fields[0].strip(), fields[1].strip(), None
            if problem := id_problem(topic_id):
                raise FormatError(path, number, f"a topic id: {ID_RULE}", problem)
        if not body.strip():
            raise FormatError(path, number, "a topic text", "an empty one")
        if topic_id in seen:
            raise FormatError(
                path, number, f"each topic id once ({topic_id!r} is on line {seen[topic_id]})", "it again"
            )
        seen[topic_id] = number
        yield RagTopic(topic_id, body, limit, number)
    if not seen:
        raise FormatError(path, None, "at least one topic line", "an empty file")


def parse_rag_topics(path: str | Path) -> list[RagTopic]:
    """:func:`iter_rag_topics` as a list."""
    return list(iter_rag_topics(path))
