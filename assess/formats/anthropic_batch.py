"""The Anthropic Message Batches layout, beside OpenAI's (:mod:`assess.formats.openai_batch`).

Source: Anthropic's Message Batches API reference ("Create a Message Batch", "Retrieve Message Batch results").

- A batch is created with its requests inline, ``POST /v1/messages/batches`` with the body
  ``{"requests": [{"custom_id": "...", "params": {"model", "max_tokens", "messages", "system", ...}}, ...]}``;
  a ``custom_id`` is 1 to 64 letters, digits, ``_`` or ``-``, and ``max_tokens`` is required.
- Its results (JSONL at the batch's ``results_url``, any order), one per request::

    {"custom_id": "...", "result": {"type": "succeeded", "message": {"model": "...", "content": [{"type": "text",
     "text": "..."}], "usage": {"input_tokens": 10, "output_tokens": 2}}}}
    {"custom_id": "...", "result": {"type": "errored", "error": {"type": "error", "error": {"type":
     "invalid_request_error", "message": "..."}}}}
    {"custom_id": "...", "result": {"type": "expired"}}      (or "canceled")

A results line is read into the same :class:`~assess.formats.openai_batch.BatchResult` as an OpenAI line, so both
are stored by one path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assess.errors import FormatError
from assess.formats.openai_batch import BatchResult
from assess.formats.reading import iter_lines, parse_json_text, short

CUSTOM_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
DEFAULT_MAX_TOKENS = 1024  # Anthropic requires a cap; the job's own when its prompt has one


def request_params(body: dict) -> dict:
    """The ``params`` of one request from the body a chat call sends (OpenAI's shape): system messages become the
    ``system`` field (Anthropic takes no system role among the messages)."""
    system = [str(m["content"]) for m in body["messages"] if m.get("role") == "system"]
    params: dict[str, Any] = {
        "model": body["model"],
        "max_tokens": body.get("max_tokens") or DEFAULT_MAX_TOKENS,
        "messages": [
            {"role": m["role"], "content": m["content"]} for m in body["messages"] if m.get("role") != "system"
        ],
    }
    if system:
        params["system"] = "\n\n".join(system)
    if body.get("temperature") is not None:
        params["temperature"] = body["temperature"]
    return params


def request_entry(custom_id: str, body: dict) -> str:
    """One request of a batch's ``requests`` list, as JSON text."""
    if not CUSTOM_ID.fullmatch(custom_id):
        raise ValueError(f"an Anthropic custom_id is 1-64 of [A-Za-z0-9_-], not {custom_id!r}")
    record = {"custom_id": custom_id, "params": request_params(body)}
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def _field(path, line: int, obj: Any, key: str, kind: type, where: str) -> Any:
    found = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(found, kind) or isinstance(found, bool):
        shown = short(found, 40) if isinstance(found, str) else type(found).__name__
        raise FormatError(path, line, f"{where} as {kind.__name__}", shown)
    return found


def _error_text(error: Any) -> str:
    """The innermost ``type: message`` of an errored result."""
    while isinstance(error, dict) and isinstance(error.get("error"), dict):
        error = error["error"]
    if isinstance(error, dict):
        parts = [str(error[k]) for k in ("type", "message") if error.get(k) not in (None, "")]
        return ": ".join(parts) or json.dumps(error, ensure_ascii=False)
    return str(error)


def _tokens(usage: Any, key: str) -> int | None:
    found = usage.get(key) if isinstance(usage, dict) else None
    return found if isinstance(found, int) and not isinstance(found, bool) and found >= 0 else None


def result_of(path, line: int, obj: Any) -> BatchResult:
    """Check one parsed results line (:class:`FormatError` naming the line and JSON path) and read it."""
    custom_id = _field(path, line, obj, "custom_id", str, "'custom_id'")
    result = _field(path, line, obj, "result", dict, "'result'")
    kind = _field(path, line, result, "type", str, "'result.type'")
    result_id = f"{custom_id} ({path}:{line})"
    if kind != "succeeded":
        if kind not in ("errored", "expired", "canceled"):
            raise FormatError(path, line, "'result.type' as succeeded, errored, expired or canceled", short(kind, 40))
        why = _error_text(result.get("error")) if kind == "errored" else f"request {kind}"
        return BatchResult(line, custom_id, result_id, False, None, why, None, None, None)
    message = _field(path, line, result, "message", dict, "'result.message'")
    content = message.get("content") or []
    if not isinstance(content, list):
        raise FormatError(path, line, "'result.message.content' as a list", type(content).__name__)
    texts = []
    for n, block in enumerate(content):
        if isinstance(block, dict) and block.get("type") == "text":
            texts.append(_field(path, line, block, "text", str, f"'result.message.content[{n}].text'"))
    model = message.get("model") if isinstance(message.get("model"), str) else None
    usage = message.get("usage")
    return BatchResult(
        line,
        custom_id,
        result_id,
        True,
        "".join(texts),
        None,
        model,
        _tokens(usage, "input_tokens"),
        _tokens(usage, "output_tokens"),
    )


def iter_results(path: str | Path) -> Iterator[BatchResult | FormatError]:
    """Every non-blank line of a results file, block by block: a :class:`BatchResult` or the :class:`FormatError`
    of a malformed line (yielded, so that every bad line can be reported)."""
    for number, text in iter_lines(path):
        try:
            yield result_of(path, number, parse_json_text(path, text))
        except FormatError as exc:
            yield exc
