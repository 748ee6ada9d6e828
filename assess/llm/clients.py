"""Model clients behind one small interface: an OpenAI-compatible chat endpoint and a local NLI cross-encoder.

A chat client has a ``model`` name and one method, ``complete(messages, max_tokens=None) -> Reply``;
it never raises for a failed call: the failure is a :class:`Reply` with ``ok=False`` and the
reason, stored like any other outcome. :func:`complete_all` runs many calls with bounded
concurrency and yields each reply the moment it arrives. Tests inject fake clients or point
:class:`OpenAIClient` at a local stub server.

:class:`NliClient` wraps a ``transformers`` sequence-classification model (default the DeBERTa-v3
MNLI/FEVER/ANLI cross-encoder CONE-RAG uses) and scores entailment of (premise, hypothesis) pairs
in batches, for nugget-to-nugget / nugget-to-response matching and nugget de-duplication.

``openai``, ``torch`` and ``transformers`` are imported inside the methods that need them.
"""

from __future__ import annotations

import queue
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from assess import lazylibs
from assess.errors import AssessError
from assess.llm.guard import check_destination, redact
from assess.nuggets.dedup import dedup_keep as keep_rule
from assess.settings import llm_settings

DEFAULT_CONCURRENCY = 16
DEFAULT_TIMEOUT = 60.0
DEFAULT_RETRIES = 4
DEFAULT_NLI_MODEL = "MoritzLaurer/DeBERTa-v3-base-mnli-fever-anli"
LOCAL_KEY = "not-needed"  # local servers (vLLM, Ollama) ignore the key but the client wants one


class ClientConfigError(AssessError):
    """No endpoint, key or model configured, or a model that cannot be loaded."""


class ClientError(AssessError):
    """A job stopped because every further call would fail (bad key, unknown model, endpoint down)."""


@dataclass(frozen=True)
class Reply:
    """One call's outcome: the answer text, or why there is none."""

    text: str | None
    ok: bool = True
    error: str | None = None
    fatal: bool = False  # every further call would fail the same way (key, model, URL)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: int = 0  # wall time of the call, retries and back-off included
    attempts: int = 1
    retryable: bool = False  # failed on 408/409/429/5xx, a timeout or a dropped connection: may work elsewhere


class ChatClient(Protocol):
    model: str

    def complete(self, messages: list[dict], *, max_tokens: int | None = None) -> Reply: ...


def endpoint_settings(*, base_url: str | None = None, model: str | None = None, api_key: str | None = None) -> dict:
    """Explicit values over ASSESS_LLM_* / OPENAI_* settings; one clear error when something is missing.

    A base URL without a key is a local server (vLLM, Ollama): a placeholder key is used. No base URL
    means OpenAI itself, which needs a key.
    """

    env = llm_settings()
    base_url = base_url or env["base_url"]
    model = model or env["model"]
    api_key = api_key or env["api_key"]
    if not model:
        raise ClientConfigError("no LLM model given: pass --model MODEL (or set ASSESS_LLM_MODEL)")
    if not base_url and not api_key:
        raise ClientConfigError(
            "no LLM endpoint configured: pass --base-url URL (or set ASSESS_LLM_BASE_URL) for a "
            "local OpenAI-compatible server, or set ASSESS_LLM_API_KEY (or OPENAI_API_KEY) "
            "for OpenAI"
        )

    check_destination(base_url)  # refused before any estimate or job: no link-local or metadata host
    return {"base_url": base_url, "model": model, "api_key": api_key or LOCAL_KEY}


_RETRY_STATUS = {408, 409, 429}
_FATAL_STATUS = {401, 403, 404}


class OpenAIClient:
    """A chat model behind any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp server).

    Each call has a timeout; 408/409/429/5xx answers, timeouts and dropped connections are retried up
    to ``max_retries`` times with exponential back-off and jitter (honouring ``Retry-After``);
    401/403/404 are fatal for the job; any other error is returned as a failed :class:`Reply`.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client=None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_RETRIES,
        backoff: float = 0.5,
        max_backoff: float = 20.0,
        temperature: float | None = 0.0,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.model = model
        self.base_url = base_url
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.temperature = temperature
        self._sleep = sleep
        self._token_param = "max_tokens"
        self._direct = False  # the SDK client is ours: post the request itself (see _create)
        if client is None:
            import openai

            check_destination(base_url)  # no link-local or metadata host unless the deployment configured it
            # Retries are ours (counted, stored, with our back-off), so the client's are off.
            client = openai.OpenAI(base_url=base_url, api_key=api_key or LOCAL_KEY, max_retries=0, timeout=timeout)
            self._direct = True
        self.client = client

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(self.max_backoff, max(0.0, float(retry_after)))
            except ValueError:
                pass
        return min(self.max_backoff, self.backoff * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)

    def _create(self, messages: list[dict], max_tokens: int | None) -> tuple[str, int | None, int | None]:
        """One call: the answer's text and its prompt and completion tokens (None where not given).

        The SDK's own client posts the body as it is and hands back the JSON: ``chat.completions.create`` first
        walks every message through its parameter types and builds a typed response, which cost about 1.5 ms of
        CPU per call, more than the rest of a worker's work on an item. Errors, time-outs and status codes are the
        SDK's either way. A client passed in (tests, other SDKs) is called through ``chat.completions.create``."""
        options: dict[str, Any] = {"model": self.model, "messages": messages}
        if self.temperature is not None:
            options["temperature"] = self.temperature
        if max_tokens:
            options[self._token_param] = max_tokens
        if self._direct:
            httpx = lazylibs.httpx()

            answer = self.client.post(
                "/chat/completions",
                cast_to=httpx.Response,
                body=options,
                options={"timeout": self.timeout, "follow_redirects": False},  # a redirect goes nowhere else
            ).json()
            choices = answer.get("choices") or [{}]
            text = ((choices[0] or {}).get("message") or {}).get("content") or ""
            usage = answer.get("usage") or {}
            return text, usage.get("prompt_tokens"), usage.get("completion_tokens")
        response = self.client.chat.completions.create(**options, timeout=self.timeout)
        choice = response.choices[0] if response.choices else None
        text = (choice.message.content if choice is not None and choice.message else None) or ""
        usage = getattr(response, "usage", None)
        return text, getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None)

    def complete(self, messages: list[dict], *, max_tokens: int | None = None) -> Reply:
        """Ask the model once (with bounded retries); never raises for a failed call."""
        import openai

        start = time.perf_counter()
        attempts, last = 0, "no attempt"
        adapted = False
        while attempts <= self.max_retries:
            attempts += 1
            retry_after = None
            try:
                text, prompt_tokens, completion_tokens = self._create(messages, max_tokens)
            except openai.APIStatusError as exc:
                status = exc.status_code
                last = f"HTTP {status}: {_short(exc)}"
                if status == 400 and not adapted and self._adapt(str(exc)):
                    adapted = True  # a parameter this model refuses: drop or rename it, ask again
                    attempts -= 1
                    continue
                if status in _FATAL_STATUS:
                    return self._failed(last, start, attempts, fatal=True)
                if status not in _RETRY_STATUS and status < 500:
                    return self._failed(last, start, attempts)
                retry_after = exc.response.headers.get("retry-after") if exc.response is not None else None
            except openai.APITimeoutError:
                last = f"timeout after {self.timeout:g} s"
            except openai.APIConnectionError as exc:
                last = f"connection failed: {_short(exc)}"
            except (openai.OpenAIError, ValueError, AttributeError, TypeError) as exc:  # the latter: not a chat answer
                return self._failed(f"{type(exc).__name__}: {_short(exc)}", start, attempts)
            else:
                return Reply(
                    text,
                    ok=True,
                    prompt_tokens=prompt_tokens,
                    completion_tokens=completion_tokens,
                    latency_ms=_ms(start),
                    attempts=attempts,
                )
            if attempts <= self.max_retries:
                self._sleep(self._delay(attempts, retry_after))
        return self._failed(f"{last} (gave up after {attempts} attempts)", start, attempts, retryable=True)

    def _adapt(self, message: str) -> bool:
        message = message.lower()
        if "max_tokens" in message and self._token_param == "max_tokens":
            self._token_param = "max_completion_tokens"
            return True
        if "temperature" in message and self.temperature is not None:
            self.temperature = None
            return True
        return False

    @staticmethod
    def _failed(error: str, start: float, attempts: int, *, fatal: bool = False, retryable: bool = False) -> Reply:
        return Reply(
            None,
            ok=False,
            error=redact(error),
            fatal=fatal,
            latency_ms=_ms(start),
            attempts=attempts,
            retryable=retryable,
        )


def _ms(start: float) -> int:
    return int(round((time.perf_counter() - start) * 1000))


def _short(exc: BaseException, limit: int = 200) -> str:
    """An exception's text on one line, at most ``limit`` characters, without secrets (keys an endpoint echoes,
    ``user:password@`` of its URL: :func:`assess.llm.guard.redact`)."""

    text = redact(" ".join(str(exc).split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def complete_all(
    client: ChatClient,
    requests: Iterable[tuple[Any, list[dict], int | None]],
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    idle: float | None = None,
) -> Iterator[tuple[Any, Reply]]:
    """Run ``(key, messages, max_tokens)`` requests with at most ``concurrency`` in flight; yield ``(key, reply)``
    as each arrives (not in request order). With ``idle`` (seconds), ``(None, None)`` is yielded whenever no reply
    has arrived for that long, so that the caller can act on time (store what it holds) while the calls hang.

    Workers are daemon threads fed one request per finished one, so closing the generator (or an
    interrupt in the consumer) stops new calls at once; calls already in flight finish in the
    background and their replies are dropped (the next run makes them again).
    """
    if concurrency < 1:
        raise AssessError(f"concurrency is at least 1, not {concurrency}")
    pending = iter(requests)
    work: queue.Queue = queue.Queue()
    done: queue.Queue = queue.Queue()
    stop = threading.Event()

    def worker():
        while True:
            job = work.get()
            if job is None or stop.is_set():
                return
            key, messages, max_tokens = job
            try:
                reply = client.complete(messages, max_tokens=max_tokens)
            except Exception as exc:
                reply = Reply(None, ok=False, error=f"{type(exc).__name__}: {_short(exc)}")
            done.put((key, reply))

    in_flight = 0
    for request in pending:
        work.put(request)
        in_flight += 1
        if in_flight == concurrency:
            break
    lazylibs.load_deferred()  # the workers must not be the first to touch a module the command line left waiting
    threads = [
        threading.Thread(target=worker, daemon=True, name=f"client-{i}") for i in range(min(concurrency, in_flight))
    ]
    for t in threads:
        t.start()
    try:
        while in_flight:
            try:
                key, reply = done.get(timeout=idle)
            except queue.Empty:
                yield None, None
                continue
            in_flight -= 1
            nxt = next(pending, None)
            if nxt is not None:
                work.put(nxt)
                in_flight += 1
            yield key, reply
    finally:
        stop.set()
        for _ in threads:
            work.put(None)


# ------------------------------------------------------------------------------------------- NLI


class NliClient:
    """Entailment probabilities from a local NLI cross-encoder (``transformers``), batched, on CPU or GPU.

    ``model`` is a Hugging Face name or a local directory; the model is loaded on first use. The
    entailment class is found from the model's ``id2label`` (a label containing 'entail').
    """

    def __init__(
        self,
        model: str = DEFAULT_NLI_MODEL,
        *,
        device: str | None = None,
        batch_size: int = 32,
        max_length: int = 512,
        local_files_only: bool | None = None,
    ):
        self.model = model
        self.device = device
        self.batch_size = batch_size
        self.max_length = max_length
        self.local_files_only = local_files_only
        self._tokenizer = None
        self._model = None
        self._entail = None

    def load(self) -> NliClient:
        """Load the tokenizer and model (done once; raises ClientConfigError when the model cannot be found)."""
        if self._model is not None:
            return self
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        options = {} if self.local_files_only is None else {"local_files_only": self.local_files_only}
        try:
            tokenizer = AutoTokenizer.from_pretrained(self.model, **options)
            model = AutoModelForSequenceClassification.from_pretrained(self.model, **options)
        except (OSError, ValueError) as exc:
            raise ClientConfigError(
                f"cannot load the NLI model {self.model!r} (a Hugging Face name needs the "
                f"network or a local cache; or give a local directory): {_short(exc)}"
            ) from None
        labels = {int(i): str(name).lower() for i, name in model.config.id2label.items()}
        entail = [i for i, name in labels.items() if "entail" in name and "not" not in name]
        if len(entail) != 1:
            raise ClientConfigError(f"{self.model}: no single entailment label in {labels}")
        self.device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        self._tokenizer, self._model, self._entail = tokenizer, model.to(self.device).eval(), entail[0]
        return self

    def entailment(self, pairs: Sequence[tuple[str, str]], *, batch_size: int | None = None) -> list[float]:
        """P(entailment) of each (premise, hypothesis) pair, computed in batches of similar length."""
        import torch

        self.load()
        size = batch_size or self.batch_size
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        out = [0.0] * len(pairs)
        with torch.inference_mode():
            for b in range(0, len(order), size):
                idx = order[b : b + size]
                enc = self._tokenizer(
                    [pairs[i][0] for i in idx],
                    [pairs[i][1] for i in idx],
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                )
                enc = {k: v.to(self.device) for k, v in enc.items()}
                probs = torch.softmax(self._model(**enc).logits.float(), dim=-1)[:, self._entail].tolist()
                for i, p in zip(idx, probs):
                    out[i] = float(p)
        return out

    def entails(self, pairs: Sequence[tuple[str, str]], *, threshold: float = 0.5) -> list[bool]:
        """Whether each premise entails its hypothesis (P(entailment) >= threshold)."""
        return [p >= threshold for p in self.entailment(pairs)]


def ntn_matches(
    nli: NliClient, response_nuggets: Sequence[str], gold_nuggets: Sequence[str], *, threshold: float = 0.5
) -> list[tuple[int, int]]:
    """CONE-RAG NtN (Eq. 2): the (response nugget i, gold nugget j) pairs where i entails j."""
    pairs = [(i, j) for i in range(len(response_nuggets)) for j in range(len(gold_nuggets))]
    keep = nli.entails([(response_nuggets[i], gold_nuggets[j]) for i, j in pairs], threshold=threshold)
    return [pair for pair, k in zip(pairs, keep) if k]


def dedup_keep(nli: NliClient, nuggets: Sequence[str], *, threshold: float = 0.5) -> list[bool]:
    """CONE-RAG duplicate removal (Section 4.3) with the NLI model's entailments as the edges of
    :func:`assess.nuggets.dedup.dedup_keep` (the one home of the keep rule)."""

    n = len(nuggets)
    pairs = [(j, i) for i in range(n) for j in range(n) if i != j]
    entailed = nli.entails([(nuggets[j], nuggets[i]) for j, i in pairs], threshold=threshold)
    kept = keep_rule(list(range(n)), {pair for pair, e in zip(pairs, entailed) if e})
    return [kept[i] for i in range(n)]
