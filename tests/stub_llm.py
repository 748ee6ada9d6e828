"""A local OpenAI-compatible chat endpoint for tests and benchmarks (real HTTP on 127.0.0.1).

``StubLLM`` answers ``POST /v1/chat/completions`` (and ``/chat/completions``) from a script:

- ``reply(request) -> Reply | str`` decides each answer (default: a deterministic grade in one of
  the usual shapes, chosen from a hash of the prompt);
- ``queue``: replies consumed first, one per request, in order (e.g. ``[Reply(429), Reply(500)]``);
- ``latency``: seconds every answer waits before it is sent (a slow server; a client timeout);
- ``requests``: every request body received, for assertions (``len(stub.requests)`` = calls made);
  ``headers``: the headers of each (names in lower case: ``stub.headers[0]["authorization"]``, the key it was sent).

Run it standalone for manual checks: ``python tests/stub_llm.py --port 8765 --latency 0.2``.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


@dataclass
class Reply:
    status: int = 200
    content: str = ""  # the answer; for an error status, the error message
    delay: float | None = None  # seconds before answering (None: the stub's latency)
    headers: dict = field(default_factory=dict)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


def prompt_text(request: dict) -> str:
    return "\n".join(str(m.get("content", "")) for m in request.get("messages", []))


_ENCLOSED = re.compile(r'<data-([0-9a-f]+) field="([\w-]+)">\n(.*?)\n</data-\1>', re.S)


def enclosed(request: dict | str, field: str | None = None) -> dict[str, str] | str:
    """What a prompt encloses as data: every field's text by name, or one field's text (``field``).

    Reads the enclosure the way a model should: a field ends only at the closing tag with the call's code.
    """
    text = request if isinstance(request, str) else request["messages"][-1]["content"]
    found = {m.group(2): m.group(3) for m in _ENCLOSED.finditer(text)}
    return found if field is None else found[field]


def canonical(request: dict) -> str:
    """A request's user message with its delimiter code replaced by a fixed one: equal for two calls about
    the same input (each call draws a fresh random code)."""
    text = request["messages"][-1]["content"]
    for code in delimiter_codes(request):
        text = text.replace(f"data-{code}", "data-CODE")
    return text


def delimiter_codes(request: dict) -> set[str]:
    """The delimiter codes a request's user message uses (one per well-formed call)."""
    return {m.group(1) for m in _ENCLOSED.finditer(request["messages"][-1]["content"])}


def default_reply(request: dict) -> Reply:
    """A grade (or yes/no, or spans) derived from a hash of the prompt, in rotating answer shapes."""
    text = prompt_text(request)
    h = int(hashlib.sha256(text.encode()).hexdigest(), 16)
    if "yes or no" in text.lower() or "yes/no" in text.lower():
        return Reply(content=("yes" if h % 3 == 0 else "no"))
    if "exact copies" in text.lower():  # nugget extraction: copy the first sentence of the text
        body = enclosed(request, "text")
        first = re.split(r"(?<=[.!?])\s", body.strip(), maxsplit=1)[0]
        return Reply(content=first or "No nugget")
    grade = h % 5
    shapes = [str(grade), f"Score: {grade}", json.dumps({"rationale": "stub says so", "grade": grade})]
    return Reply(content=shapes[(h >> 8) % 3])


def failing_for(seconds: float, status: int = 429, then: Callable[[dict], Reply | str] | None = None):
    """A ``reply`` that answers ``status`` to every request for ``seconds`` from the first one, then as ``then``
    (default :func:`default_reply`): an endpoint down for a while. ``.failed`` counts the error answers."""
    then = then or default_reply
    lock = threading.Lock()
    state = {"start": None}

    def reply(request: dict) -> Reply | str:
        with lock:
            if state["start"] is None:
                state["start"] = time.monotonic()
            down = time.monotonic() - state["start"] < seconds
            if down:
                reply.failed += 1
        return Reply(status, f"stub down ({status})") if down else then(request)

    reply.failed = 0
    return reply


def completion(body: dict, answer: Reply, n: int) -> dict:
    """The chat completion the stub answers ``body`` with (``n`` numbers its id)."""
    prompt = prompt_text(body)
    usage_in = answer.prompt_tokens if answer.prompt_tokens is not None else max(1, len(prompt) // 4)
    usage_out = answer.completion_tokens if answer.completion_tokens is not None else max(1, len(answer.content) // 4)
    return {
        "id": f"chatcmpl-stub-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "stub"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": answer.content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": usage_in, "completion_tokens": usage_out, "total_tokens": usage_in + usage_out},
    }


def run_batch(requests: str | Path, results: str | Path, reply: Callable[[dict], Reply | str] | None = None) -> int:
    """A batch runner as ``vllm run-batch`` is one: answer every request line of ``requests`` (the OpenAI batch
    layout) into ``results``, one result line each, in order; an error status gives a response with that status
    and an error body. Returns the number of lines written."""
    reply = reply or default_reply
    lines = []
    for n, text in enumerate(Path(requests).read_text(encoding="utf-8").splitlines(), start=1):
        request = json.loads(text)
        answer = reply(request["body"])
        answer = Reply(content=answer) if isinstance(answer, str) else answer
        if answer.status == 200:
            body = completion(request["body"], answer, n)
        else:
            body = {"error": {"message": answer.content or f"stub error {answer.status}", "type": "server_error"}}
        response = {"status_code": answer.status, "request_id": f"req-{n}", "body": body}
        lines.append({"id": f"batch_req_{n}", "custom_id": request["custom_id"], "response": response, "error": None})
    Path(results).write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return len(lines)


class StubLLM:
    """An OpenAI-compatible chat server in a background thread (``with StubLLM() as stub: stub.base_url``)."""

    def __init__(self, *, latency: float = 0.0, reply: Callable[[dict], Reply | str] | None = None, port: int = 0):
        self.latency = latency
        self.reply = reply or default_reply
        self.queue: list[Reply] = []
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.statuses: list[int] = []
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            wbufsize = 1 << 16  # one write per answer (no Nagle / delayed-ACK stalls)
            disable_nagle_algorithm = True

            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": "stub", "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if len(raw) < length:  # the client went away mid-request (a killed process): no request was made
                    self.close_connection = True
                    return
                body = json.loads(raw or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                with stub._lock:
                    stub.requests.append(body)
                    stub.headers.append({k.lower(): v for k, v in self.headers.items()})
                    scripted = stub.queue.pop(0) if stub.queue else None
                answer = scripted if scripted is not None else stub.reply(body)
                if isinstance(answer, str):
                    answer = Reply(content=answer)
                delay = stub.latency if answer.delay is None else answer.delay
                if delay:
                    time.sleep(delay)
                with stub._lock:
                    stub.statuses.append(answer.status)
                if answer.status != 200:
                    kind = "rate_limit_error" if answer.status == 429 else "server_error"
                    message = answer.content or f"stub error {answer.status}"
                    self._send(answer.status, {"error": {"message": message, "type": kind}}, answer.headers)
                    return
                self._send(200, completion(body, answer, len(stub.requests)), answer.headers)

            def _send(self, status, payload, headers=None):
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, str(v))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 128

        self.server = Server(("127.0.0.1", port), Handler)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, name="stub-llm", daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def start(self) -> StubLLM:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> StubLLM:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


try:  # the fixture tests use: ``from tests.stub_llm import stub_llm``
    import pytest

    @pytest.fixture
    def stub_llm():
        """A running stub endpoint (no latency, default answers); stopped after the test."""
        with StubLLM() as server:
            yield server
except ImportError:  # standalone use without pytest
    pass


if __name__ == "__main__":  # pragma: no cover
    import argparse

    parser = argparse.ArgumentParser(description="a local OpenAI-compatible stub chat endpoint")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency", type=float, default=0.0)
    a = parser.parse_args()
    s = StubLLM(latency=a.latency, port=a.port).start()
    print(f"stub LLM at {s.base_url}", flush=True)
    try:
        s.thread.join()
    except KeyboardInterrupt:
        s.stop()
