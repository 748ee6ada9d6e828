"""The OpenAI batch file layout (also read and written by vLLM's ``run-batch``): requests out, results in.

Source: the OpenAI Batch API reference ("The request input object", "The request output object") and vLLM's
``vllm/entrypoints/openai/run_batch.py`` (``BatchRequestInput``, ``BatchRequestOutput``). Both are JSONL, one
JSON object per line:

- a request::

    {"custom_id": "job7/0/3fa9c2d1e07b/101_1 psg:3", "method": "POST", "url": "/v1/chat/completions",
     "body": {"model": "m", "messages": [...], "temperature": 0, "max_tokens": 64}}

- a result (``response`` null when the request failed without an HTTP answer, ``error`` then says why)::

    {"id": "batch_req_…", "custom_id": "job7/0/…", "response": {"status_code": 200, "request_id": "…",
     "body": {…a chat completion…}}, "error": null}

A ``custom_id`` here is ``job<J>/<sample>/<digest>/<turn> <item>``: the job that wrote the request, the answer
number, 12 hex characters tying the line to that job's model, prompt version, settings and the item's input
(:func:`digest`), and the item (the turn id has no white space; the item id may). Results come back in any
order; ``custom_id`` is what ties each to its request.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from assess.errors import FormatError
from assess.formats.reading import iter_lines, parse_json_text, short

REQUEST_URL = "/v1/chat/completions"
_CUSTOM_ID = re.compile(r"job([0-9]{1,18})/([0-9]{1,3})/([0-9a-f]{12})/(\S+) (.+)", re.S)


class CustomId(NamedTuple):
    job: int
    sample: int
    digest: str
    turn_id: str
    item_id: str

    def __str__(self) -> str:
        return f"job{self.job}/{self.sample}/{self.digest}/{self.turn_id} {self.item_id}"


def digest(job: int, identity: dict, input_hash: str, sample: int) -> str:
    """12 hex characters of sha256 over the job id, its identity (source, task, model, prompt version,
    settings), the item's input hash and the answer number: a result line is stored only when they all agree."""
    blob = json.dumps([job, identity, input_hash, sample], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def parse_custom_id(text: str) -> CustomId | None:
    """The parts of a ``custom_id`` this workbench wrote, or None for any other text."""
    m = _CUSTOM_ID.fullmatch(text)
    if m is None:
        return None
    return CustomId(int(m.group(1)), int(m.group(2)), m.group(3), m.group(4), m.group(5))


def request_line(custom_id: CustomId, body: dict) -> str:
    """One request of a batch input file (without the line end)."""
    record = {"custom_id": str(custom_id), "method": "POST", "url": REQUEST_URL, "body": body}
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


class BatchResult(NamedTuple):
    """One line of a results file, checked for shape: the call's answer text or why there is none."""

    line: int
    custom_id: str
    result_id: str  # the line's ``id`` (else the response's ``request_id``, else 'line N')
    ok: bool
    text: str | None
    error: str | None
    model: str | None  # the model the body says answered
    prompt_tokens: int | None
    completion_tokens: int | None


def _expect(path, line: int, value: Any, kind: type | tuple, where: str, expected: str) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool):
        if isinstance(value, str):
            shown = short(value, 40)
        else:  # JSON text of a number, list or object: escaped, safe to print
            shown = json.dumps(value)
            shown = shown if len(shown) <= 40 else shown[:39] + "…"
        raise FormatError(path, line, f"{where} as {expected}", f"{type(value).__name__} {shown}")
    return value


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        code, message = error.get("code"), error.get("message")
        parts = [str(p) for p in (code, message) if p not in (None, "")]
        return ": ".join(parts) or json.dumps(error, ensure_ascii=False)
    return str(error)


def _tokens(usage: Any, key: str) -> int | None:
    value = usage.get(key) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def result_of(path, line: int, obj: Any) -> BatchResult:
    """Check one parsed results line (:class:`FormatError` naming the line and JSON path) and read it."""
    obj = _expect(path, line, obj, dict, "the line", "an object {id, custom_id, response, error}")
    if "custom_id" not in obj:
        raise FormatError(path, line, "a field 'custom_id'", f"fields {sorted(obj)}")
    custom_id = _expect(path, line, obj["custom_id"], str, "'custom_id'", "a string")
    response, error = obj.get("response"), obj.get("error")
    if response is None and error is None:
        raise FormatError(path, line, "a 'response' or an 'error'", "neither")
    request_id = None
    if response is not None:
        response = _expect(path, line, response, dict, "'response'", "an object {status_code, request_id, body}")
        if "status_code" not in response:
            raise FormatError(path, line, "a field 'response.status_code'", f"fields {sorted(response)}")
        status = _expect(path, line, response["status_code"], int, "'response.status_code'", "an integer")
        body = response.get("body")
        if body is not None:
            body = _expect(path, line, body, dict, "'response.body'", "an object")
        request_id = response.get("request_id") if isinstance(response.get("request_id"), str) else None
    line_id = obj.get("id") if isinstance(obj.get("id"), str) and obj.get("id") else None
    result_id = line_id or request_id or f"line {line}"
    if error is not None or response is None:
        return BatchResult(line, custom_id, result_id, False, None, _error_text(error), None, None, None)
    body = body or {}
    model = body.get("model") if isinstance(body.get("model"), str) else None
    if status != 200:
        message = _error_text(body.get("error")) if body.get("error") is not None else "no answer"
        return BatchResult(line, custom_id, result_id, False, None, f"HTTP {status}: {message}", model, None, None)
    choices = body.get("choices")
    if choices is not None:
        _expect(path, line, choices, list, "'response.body.choices'", "a list")
    text = ""  # an answer without choices or content reads as the live client reads it: an empty answer
    if choices:
        first = _expect(path, line, choices[0], dict, "'response.body.choices[0]'", "an object")
        message = first.get("message")
        if message is not None:
            message = _expect(path, line, message, dict, "'response.body.choices[0].message'", "an object")
            content = message.get("content")
            if content is not None:
                text = _expect(path, line, content, str, "'response.body.choices[0].message.content'", "a string")
    usage = body.get("usage")
    return BatchResult(
        line,
        custom_id,
        result_id,
        True,
        text,
        None,
        model,
        _tokens(usage, "prompt_tokens"),
        _tokens(usage, "completion_tokens"),
    )


def iter_results(path: str | Path) -> Iterator[BatchResult | FormatError]:
    """Every non-blank line of a results file, read block by block: a :class:`BatchResult`, or the
    :class:`FormatError` of a malformed line (yielded, not raised, so that every bad line can be reported).
    A file that cannot be read at all (missing, not UTF-8, a line over the limit) raises."""
    for number, text in iter_lines(path):
        try:
            obj = parse_json_text(path, text)
        except FormatError as exc:
            yield FormatError(path, number, f"one JSON object per line ({exc.expected})", exc.found)
            continue
        try:
            yield result_of(path, number, obj)
        except FormatError as exc:
            yield exc
