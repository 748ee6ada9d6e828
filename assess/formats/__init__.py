"""Readers (and TREC writers) for the formats the iKAT / CAsT community uses.

Every reader is pure: it takes a path, returns plain records, and raises
:class:`~assess.errors.FormatError` naming the file, the line and what was expected vs found.
They tolerate the real files' quirks: tabs or spaces, trailing spaces, CRLF line ends, a UTF-8
byte-order mark, blank lines, the 2023 ``9-1_3`` and 2024 ``0_8`` turn ids, and lines repeated
verbatim (kept once). Two lines that give the same item different values are refused.

Modules: :mod:`~assess.formats.reading` (text and JSON), :mod:`~assess.formats.trec` (qrels, runs,
passages), :mod:`~assess.formats.ikat` (topics, responses), :mod:`~assess.formats.nuggets`
(CONE-RAG nuggets and NtR labels). Value scales are the task registry's (:mod:`assess.tasks`).
"""

from assess.formats.ikat import Conversation, ResponseRecord, Turn, iter_topics, parse_responses, parse_topics
from assess.formats.nuggets import NtrRecord, NuggetRecord, nuggets_to_json, parse_ntr_labels, parse_nuggets
from assess.formats.reading import json_line, json_object, load_json, paused_gc, read_lines, read_text
from assess.formats.trec import (
    PassageText,
    Qrel,
    RunRow,
    RunStream,
    format_qrels,
    format_run,
    parse_passages,
    parse_ptkb_qrels,
    parse_qrels,
    parse_run,
    rank_run,
    repeated_run_line,
)

__all__ = [
    "Conversation",
    "NtrRecord",
    "NuggetRecord",
    "PassageText",
    "Qrel",
    "ResponseRecord",
    "RunRow",
    "RunStream",
    "Turn",
    "format_qrels",
    "format_run",
    "iter_topics",
    "json_line",
    "json_object",
    "load_json",
    "nuggets_to_json",
    "parse_ntr_labels",
    "parse_nuggets",
    "parse_passages",
    "parse_ptkb_qrels",
    "parse_qrels",
    "parse_responses",
    "parse_run",
    "parse_topics",
    "paused_gc",
    "rank_run",
    "read_lines",
    "read_text",
    "repeated_run_line",
]
