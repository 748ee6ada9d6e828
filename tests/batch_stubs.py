"""Local stubs of the providers' batch APIs for tests and benchmarks (real HTTP on 127.0.0.1).

``BatchStub`` answers, under ``/v1``:

- OpenAI: ``POST /files`` (multipart, ``purpose=batch``), ``POST /batches``, ``GET /batches/{id}``,
  ``GET /files/{id}/content``;
- Anthropic: ``POST /messages/batches`` (requests inline), ``GET /messages/batches/{id}``, ``GET
  /messages/batches/{id}/results``.

Input and results are kept on disk (a benchmark's files are never held in memory). A batch answers "in progress"
to its first ``polls`` status requests (``hold=True``: until :meth:`BatchStub.release`), then ends. What becomes of
each request is ``fate(batch_number, custom_id)``: ``"ok"`` (an answer from :func:`tests.stub_llm.default_reply`),
``"error"`` (a failed request), ``"expire"`` (the batch expires: OpenAI lists it in the error file with
``batch_expired``, Anthropic as ``expired``) or ``"missing"`` (in no file). Every request it received is counted in
``received`` (custom id -> times), every batch in ``batches``; ``keys`` holds the keys it was sent.

Standalone: ``python tests/batch_stubs.py --port 8766`` (every request answered).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import tempfile
import threading
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.stub_llm import default_reply

Fate = Callable[[int, str], str]


def _all_ok(_batch: int, _custom_id: str) -> str:
    return "ok"


class BatchStub:
    def __init__(self, *, polls: int = 1, fate: Fate = _all_ok, hold: bool = False, port: int = 0):
        self.polls, self.fate, self.hold = polls, fate, hold
        self.dir = Path(tempfile.mkdtemp(prefix="batch-stub-"))
        self.batches: list[dict] = []  # {id, provider, requests, bytes, number, polled}
        self.received: Counter = Counter()
        self.keys: list[str] = []
        self.uploads = 0
        self.lock = threading.Lock()
        self.released = threading.Event()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                stub._key(self.headers)
                length = int(self.headers.get("content-length") or 0)
                body = stub.dir / f"body-{threading.get_ident()}-{len(stub.batches)}"
                with open(body, "wb") as handle:
                    left = length
                    while left:
                        chunk = self.rfile.read(min(left, 1 << 20))
                        if not chunk:
                            break
                        handle.write(chunk)
                        left -= len(chunk)
                if self.path == "/v1/files":
                    self._json(200, stub._upload(body, self.headers.get("content-type", "")))
                elif self.path == "/v1/batches":
                    self._json(200, stub._openai_batch(json.loads(body.read_text())))
                elif self.path == "/v1/messages/batches":
                    self._json(200, stub._anthropic_batch(body))
                else:
                    self._json(404, {"error": {"message": f"no route {self.path}"}})

            def do_GET(self):
                stub._key(self.headers)
                m = re.fullmatch(r"/v1/(batches|messages/batches)/([\w-]+)(/results)?", self.path)
                f = re.fullmatch(r"/v1/files/([\w-]+)/content", self.path)
                if m and m.group(3):
                    return self._file(stub.dir / f"{m.group(2)}-results.jsonl")
                if m:
                    return self._json(200, stub._status(m.group(2)))
                if f:
                    return self._file(stub.dir / f"{f.group(1)}.jsonl")
                self._json(404, {"error": {"message": f"no route {self.path}"}})

            def _json(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _file(self, path: Path) -> None:
                if not path.exists():
                    return self._json(404, {"error": {"message": "no such file"}})
                self.send_response(200)
                self.send_header("content-length", str(path.stat().st_size))
                self.end_headers()
                with open(path, "rb") as handle:
                    shutil.copyfileobj(handle, self.wfile, 1 << 20)

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    # ----------------------------------------------------------------------------------------- server side

    def _key(self, headers) -> None:
        key = headers.get("x-api-key") or (headers.get("authorization") or "").removeprefix("Bearer ")
        with self.lock:
            if key and key not in self.keys:
                self.keys.append(key)

    def _upload(self, body: Path, content_type: str) -> dict:
        """The file part of a multipart body, cut out on disk."""
        boundary = content_type.split("boundary=", 1)[1].strip('"').encode()
        with open(body, "rb") as handle:
            head = handle.read(1 << 16)
            start = head.index(b'filename="')
            start = head.index(b"\r\n\r\n", start) + 4
            size = body.stat().st_size
            handle.seek(max(0, size - 4096))
            tail = handle.read()
            end = max(0, size - 4096) + tail.rindex(b"\r\n--" + boundary)
            with self.lock:
                self.uploads += 1
                name = f"file-{self.uploads}"
            with open(self.dir / f"{name}.jsonl", "wb") as out:
                handle.seek(start)
                left = end - start
                while left:
                    chunk = handle.read(min(left, 1 << 20))
                    out.write(chunk)
                    left -= len(chunk)
        body.unlink()
        return {"id": name, "object": "file", "purpose": "batch", "bytes": end - start}

    def _new_batch(self, provider: str, size: int) -> dict:
        with self.lock:
            batch = {"id": f"batch-{len(self.batches)}", "provider": provider, "number": len(self.batches)}
            batch |= {"requests": 0, "bytes": size, "polled": 0, "ended": False, "counts": Counter()}
            self.batches.append(batch)
        return batch

    def _openai_batch(self, payload: dict) -> dict:
        source = self.dir / f"{payload['input_file_id']}.jsonl"
        batch = self._new_batch("openai", source.stat().st_size)
        out, err = self.dir / f"{batch['id']}-out.jsonl", self.dir / f"{batch['id']}-err.jsonl"
        with open(source) as lines, open(out, "w") as o, open(err, "w") as e:
            for line in lines:
                request = json.loads(line)
                cid = request["custom_id"]
                fate = self._take(batch, cid)
                if fate == "ok":
                    answer = default_reply(request["body"])
                    body = {"model": request["body"]["model"], "choices": [{"message": {"content": answer.content}}]}
                    body["usage"] = {"prompt_tokens": 10, "completion_tokens": 2}
                    o.write(
                        json.dumps(
                            {
                                "id": f"r-{cid}",
                                "custom_id": cid,
                                "response": {"status_code": 200, "body": body},
                                "error": None,
                            }
                        )
                        + "\n"
                    )
                elif fate == "error":
                    e.write(
                        json.dumps(
                            {
                                "id": f"r-{cid}",
                                "custom_id": cid,
                                "response": {"status_code": 500, "body": {"error": {"message": "server error"}}},
                                "error": None,
                            }
                        )
                        + "\n"
                    )
                elif fate == "expire":
                    e.write(json.dumps({"id": f"r-{cid}", "custom_id": cid, "response": None, "error": {"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}}) + "\n")  # fmt: skip
        source.unlink()
        return self._openai_status(batch)

    def _anthropic_batch(self, body: Path) -> dict:
        batch = self._new_batch("anthropic", body.stat().st_size)
        requests = json.loads(body.read_text())["requests"]
        body.unlink()
        with open(self.dir / f"{batch['id']}-results.jsonl", "w") as r:
            for request in requests:
                cid = request["custom_id"]
                fate = self._take(batch, cid)
                if fate == "ok":
                    answer = default_reply(request["params"])
                    message = {
                        "model": request["params"]["model"],
                        "content": [{"type": "text", "text": answer.content}],
                    }
                    message["usage"] = {"input_tokens": 10, "output_tokens": 2}
                    result = {"type": "succeeded", "message": message}
                elif fate == "error":
                    result = {
                        "type": "errored",
                        "error": {"type": "error", "error": {"type": "api_error", "message": "overloaded"}},
                    }
                elif fate == "expire":
                    result = {"type": "expired"}
                else:
                    continue
                r.write(json.dumps({"custom_id": cid, "result": result}) + "\n")
        return self._anthropic_status(batch)

    def _take(self, batch: dict, cid: str) -> str:
        fate = self.fate(batch["number"], cid)
        with self.lock:
            self.received[cid] += 1
            batch["requests"] += 1
            batch["counts"][fate] += 1
        return fate

    def _status(self, batch_id: str) -> dict:
        batch = next(b for b in self.batches if b["id"] == batch_id)
        with self.lock:
            batch["polled"] += 1
            if batch["polled"] > self.polls and (not self.hold or self.released.is_set()):
                batch["ended"] = True
        return self._openai_status(batch) if batch["provider"] == "openai" else self._anthropic_status(batch)

    def _openai_status(self, batch: dict) -> dict:
        c = batch["counts"]
        state = "in_progress"
        if batch["ended"]:
            state = "expired" if c["expire"] else "completed"
        found = {"id": batch["id"], "object": "batch", "status": state, "output_file_id": None, "error_file_id": None}
        found["request_counts"] = {"total": batch["requests"], "completed": c["ok"], "failed": c["error"]}
        if batch["ended"]:
            found |= {"output_file_id": f"{batch['id']}-out", "error_file_id": f"{batch['id']}-err"}
        return found

    def _anthropic_status(self, batch: dict) -> dict:
        c = batch["counts"]
        ended = batch["ended"]
        found = {"id": batch["id"], "type": "message_batch", "processing_status": "ended" if ended else "in_progress"}
        found["request_counts"] = {
            "processing": 0 if ended else batch["requests"], "succeeded": c["ok"] if ended else 0,
            "errored": c["error"] if ended else 0, "expired": c["expire"] if ended else 0, "canceled": 0,
        }  # fmt: skip
        found["results_url"] = f"{self.base_url}/messages/batches/{batch['id']}/results" if ended else None
        return found

    # ----------------------------------------------------------------------------------------- test side

    def release(self) -> None:
        """Let held batches end at their next poll."""
        self.released.set()

    def __enter__(self) -> BatchStub:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        shutil.rmtree(self.dir, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--polls", type=int, default=1)
    args = parser.parse_args()
    with BatchStub(port=args.port, polls=args.polls) as stub:
        print(stub.base_url, flush=True)
        stub.thread.join()
