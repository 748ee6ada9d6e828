"""The two providers' batch APIs over HTTP: submit an input file, poll a batch, download what it produced.

- **OpenAI** (Batch API): ``POST /files`` (multipart, ``purpose=batch``) uploads the JSONL input, ``POST /batches``
  (``input_file_id``, ``endpoint``, ``completion_window=24h``) creates the batch, ``GET /batches/{id}`` polls it
  (``validating``, ``in_progress``, ``finalizing``, ``cancelling``; ended: ``completed``, ``expired``,
  ``cancelled``, ``failed``), ``GET /files/{id}/content`` downloads its ``output_file_id`` and ``error_file_id``.
- **Anthropic** (Message Batches): ``POST /messages/batches`` with the requests inline, ``GET
  /messages/batches/{id}`` polls it (``in_progress``, ``canceling``; ended: ``ended``), ``GET`` its ``results_url``
  downloads the results.

Input and output files are streamed from and to disk (a batch of 200 MB is never held in memory). 408/429/5xx
answers and dropped connections are tried again with back-off; any other error answer ends the job
(:class:`BatchAPIError`, the provider's message without the key). The key goes only to the configured base URL:
a results URL on another host is refused.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from assess.errors import AssessError
from assess.llm.guard import redact, redact_url

OPENAI_URL = "https://api.openai.com/v1"
ANTHROPIC_URL = "https://api.anthropic.com/v1"
ANTHROPIC_VERSION = "2023-06-01"
TRIES = 6  # per HTTP request: the first and five retries
CHUNK = 1 << 20


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one batch may hold: requests, and bytes of its input (OpenAI: the file; Anthropic: the request body)."""

    requests: int
    bytes: int


# OpenAI: "up to 50,000 requests, and can be up to 200 MB in size" (Batch API reference, Create batch);
# Anthropic: "limited to either 100,000 Message requests or 256 MB in size" (Message Batches guide). docs/llm.md.
LIMITS = {"openai": Limits(50_000, 200 * 1000 * 1000), "anthropic": Limits(100_000, 256 * 1000 * 1000)}
PROVIDERS = tuple(LIMITS)


class BatchAPIError(AssessError):
    """A provider refused a batch request for good (a bad key, a malformed file, an unknown batch)."""


@dataclasses.dataclass(frozen=True)
class Status:
    """A batch as the provider reports it: its state, whether it ended, what to download, its counts."""

    state: str
    ended: bool
    downloads: tuple[str, ...] = ()  # OpenAI: file ids (output, then errors); Anthropic: the results URL
    succeeded: int = 0
    failed: int = 0


class _Http:
    """One provider's HTTP session: its base URL, its headers (the key), retries with back-off."""

    def __init__(self, base_url: str, headers: dict, key: str | None, *, timeout: float, sleep=time.sleep):
        self.base_url = base_url.rstrip("/")
        self.client = httpx.Client(headers=headers, timeout=timeout, follow_redirects=False)
        self.sleep = sleep
        self.secrets = [key] if key else []

    def close(self) -> None:
        self.client.close()

    def _url(self, path_or_url: str) -> str:
        if "://" not in path_or_url:
            return self.base_url + path_or_url
        ours, theirs = urlsplit(self.base_url), urlsplit(path_or_url)
        if (ours.scheme, ours.netloc) != (theirs.scheme, theirs.netloc):
            raise BatchAPIError(
                f"the provider named {redact_url(path_or_url)} for the results, not a URL of {redact_url(self.base_url)}:"
                " the key is sent to the configured base URL only"
            )
        return path_or_url

    def call(self, method: str, path: str, *, to: Path | None = None, body=None, **kwargs) -> dict | None:
        """A request, tried again on 408/429/5xx and connection errors; the JSON answer, or (``to``) the body
        written to that file. ``body()`` makes a fresh request body for each try (a file to stream)."""
        url = self._url(path)
        pause = 0.5
        for attempt in range(TRIES):
            opened: list = []
            try:
                if body is not None:
                    kwargs = kwargs | body(opened)
                with self.client.stream(method, url, **kwargs) as response:
                    if response.status_code < 400:
                        if to is None:
                            return json.loads(response.read() or b"null")
                        with open(to, "wb") as handle:
                            for chunk in response.iter_bytes(CHUNK):
                                handle.write(chunk)
                        return None
                    text = response.read().decode("utf-8", "replace")[:300]
                    if response.status_code not in (408, 409, 429) and response.status_code < 500:
                        shown = redact(text, self.secrets)
                        raise BatchAPIError(f"{method} {redact_url(url)}: HTTP {response.status_code}: {shown}")
                    why = f"HTTP {response.status_code}"
            except (httpx.TransportError, json.JSONDecodeError) as exc:
                why = f"{type(exc).__name__}: {exc}"
            finally:
                for handle in opened:
                    handle.close()
            if attempt + 1 == TRIES:
                raise BatchAPIError(f"{method} {redact_url(url)}: no answer after {TRIES} tries ({why})")
            self.sleep(pause)
            pause = min(30.0, pause * 2)
        raise AssertionError("unreachable")


class OpenAIBatches:
    """The OpenAI Batch API (or a server that speaks it)."""

    provider = "openai"

    def __init__(self, base_url: str | None, api_key: str | None, *, timeout: float = 600.0, sleep=time.sleep):
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = _Http(base_url or OPENAI_URL, headers, api_key, timeout=timeout, sleep=sleep)

    def submit(self, path: Path, metadata: dict) -> tuple[str | None, str]:
        """Upload the input file and create its batch: (the file's id, the batch's id)."""

        def upload(opened: list) -> dict:
            opened.append(open(path, "rb"))  # noqa: SIM115  (closed by the call, after each try)
            return {"files": {"file": (path.name, opened[-1], "application/jsonl")}, "data": {"purpose": "batch"}}

        uploaded = self.http.call("POST", "/files", body=upload)
        created = self.http.call(
            "POST",
            "/batches",
            json={
                "input_file_id": uploaded["id"],
                "endpoint": "/v1/chat/completions",
                "completion_window": "24h",
                "metadata": {k: str(v) for k, v in metadata.items()},
            },
        )
        return uploaded["id"], created["id"]

    def status(self, remote_id: str) -> Status:
        found = self.http.call("GET", f"/batches/{remote_id}")
        state = str(found.get("status"))
        counts = found.get("request_counts") or {}
        ended = state in ("completed", "expired", "cancelled", "failed")
        files = tuple(f for f in (found.get("output_file_id"), found.get("error_file_id")) if f)
        return Status(state, ended, files, int(counts.get("completed") or 0), int(counts.get("failed") or 0))

    def download(self, name: str, to: Path) -> None:
        self.http.call("GET", f"/files/{name}/content", to=to)

    def close(self) -> None:
        self.http.close()


class AnthropicBatches:
    """Anthropic's Message Batches API."""

    provider = "anthropic"

    def __init__(self, base_url: str | None, api_key: str | None, *, timeout: float = 600.0, sleep=time.sleep):
        headers = {"anthropic-version": ANTHROPIC_VERSION, "content-type": "application/json"}
        if api_key:
            headers["x-api-key"] = api_key
        self.http = _Http(base_url or ANTHROPIC_URL, headers, api_key, timeout=timeout, sleep=sleep)

    def submit(self, path: Path, metadata: dict) -> tuple[str | None, str]:
        """Create the batch from the request body written at ``path`` (streamed): (None, the batch's id)."""
        created = self.http.call(
            "POST",
            "/messages/batches",
            body=lambda opened: {"content": _chunks(path), "headers": {"content-length": str(os.path.getsize(path))}},
        )
        return None, created["id"]

    def status(self, remote_id: str) -> Status:
        found = self.http.call("GET", f"/messages/batches/{remote_id}")
        state = str(found.get("processing_status"))
        counts = found.get("request_counts") or {}
        failed = sum(int(counts.get(k) or 0) for k in ("errored", "canceled", "expired"))
        url = found.get("results_url")
        return Status(state, state == "ended", (url,) if url else (), int(counts.get("succeeded") or 0), failed)

    def download(self, name: str, to: Path) -> None:
        self.http.call("GET", name, to=to)

    def close(self) -> None:
        self.http.close()


def _chunks(path: Path):
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            yield chunk


def connect(provider: str, *, base_url: str | None, api_key: str | None, sleep=time.sleep):
    """The client of ``provider`` ('openai' or 'anthropic')."""
    if provider == "openai":
        return OpenAIBatches(base_url, api_key, sleep=sleep)
    if provider == "anthropic":
        return AnthropicBatches(base_url, api_key, sleep=sleep)
    raise AssessError(f"--provider is one of {', '.join(PROVIDERS)}, not {provider!r}")
