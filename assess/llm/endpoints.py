"""Several OpenAI-compatible endpoints behind one chat client: a pool that spreads calls by free capacity.

A campaign runs several model servers (vLLM, SGLang, TGI, hosted APIs) that speak the same protocol. An
:class:`EndpointPool` is a :class:`~assess.llm.clients.ChatClient` (``model``, ``complete``) over a list of
endpoints, each with its own concurrency limit, so the job runner uses it in place of one client and runs as
many calls at once as the limits add up to (:attr:`EndpointPool.concurrency`).

- **Spread**: each call goes to the endpoint with the most free slots that is not paused (ties: the first
  listed); a call waits while every endpoint is full or paused.
- **Pause**: an endpoint whose calls fail ``pause_after`` times in a row on 408/409/429/5xx, a timeout or a
  dropped connection is paused for ``pause_s`` seconds (doubled on each pause that follows without an answer
  in between, at most :data:`MAX_PAUSE_S`); a 401/403/404 (a bad key, an unknown model there) disables it for
  the rest of the run. Its calls go to the others.
- **Moving a call**: a call that failed that way is tried again on the best endpoint then, up to
  ``retries + number of endpoints`` tries; the endpoints' own clients do not retry (the pool does, elsewhere).
  A call fails for good only when its tries are spent, when every endpoint is disabled (a fatal reply: the job
  stops), or on any other error (a 400: the request itself).
- **Figures** (:meth:`EndpointPool.figures`): per endpoint the calls sent (every try), answered, failed, the
  median and 95th percentile latency of answered calls (a log-bucket histogram: flat memory, 1 % resolution
  above one second), pauses with their start, length and reason, and the last error.

An endpoint is written ``URL[,key=ENV_VAR][,concurrency=N][,pause=S]`` (:func:`parse_endpoint`): the key is
read from the environment variable named (never given on the command line); without ``key=`` the usual
``ASSESS_LLM_API_KEY`` / ``OPENAI_API_KEY`` (or none, for a local server).

The endpoints the deployment allows (:func:`named_endpoints`, the only ones the /llm page offers): its own,
``default`` (ASSESS_LLM_BASE_URL, or OpenAI, with the server's key ASSESS_LLM_API_KEY / OPENAI_API_KEY), and
each ``NAME=URL[,key=ENV_VAR]...`` of ASSESS_LLM_ENDPOINTS, whose key is only the variable it names (the server's
key never goes to them). Every URL here is shown and stored without ``user:password@`` (:mod:`assess.llm.guard`).
"""

from __future__ import annotations

import dataclasses
import math
import re
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from assess.llm.clients import DEFAULT_RETRIES, DEFAULT_TIMEOUT, LOCAL_KEY, ClientConfigError, OpenAIClient, Reply
from assess.llm.guard import redact_url
from assess.settings import llm_endpoint_entries, llm_settings, named_secret

DEFAULT_PAUSE_AFTER = 3  # failed calls in a row that pause an endpoint
DEFAULT_PAUSE_S = 30.0  # the first pause; doubled while the endpoint keeps failing
MAX_PAUSE_S = 300.0
KEPT_PAUSES = 20  # latest pauses kept per endpoint for the job's record (all are counted)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_OPTIONS = ("key", "concurrency", "pause")
SERVER_ENDPOINT = "default"  # the name of the deployment's own endpoint (ASSESS_LLM_BASE_URL, or OpenAI)
OPENAI_URL = "https://api.openai.com/v1"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,39}")


@dataclasses.dataclass(frozen=True)
class EndpointSpec:
    """One endpoint as given: its base URL, the environment variable holding its key, its limits."""

    base_url: str
    key_env: str | None = None
    concurrency: int | None = None  # None: the run's --concurrency
    pause_s: float | None = None  # None: DEFAULT_PAUSE_S
    own_key_only: bool = False  # an endpoint of ASSESS_LLM_ENDPOINTS: never the server's key, only its key=


def parse_endpoint(text: str, *, what: str = "--endpoint") -> EndpointSpec:
    """``URL[,key=ENV_VAR][,concurrency=N][,pause=S]`` as an :class:`EndpointSpec` (ClientConfigError, one line,
    when it is not; ``what`` names where the text came from). Messages show the URL without ``user:password@``."""
    url, *options = [part.strip() for part in text.split(",")]
    shown = redact_url(url)
    if not re.fullmatch(r"https?://\S+", url):
        raise ClientConfigError(f"{what} starts with an http:// or https:// base URL, not {shown[:80]!r}")
    given: dict[str, str] = {}
    for option in options:
        name, sep, value = option.partition("=")
        if not sep or name not in _OPTIONS or name in given:
            raise ClientConfigError(
                f"{what} {shown}: options are key=ENV_VAR, concurrency=N and pause=SECONDS, each once; "
                f"not {redact_url(option[:40])!r}"
            )
        given[name] = value
    key_env = given.get("key")
    if key_env is not None and not _ENV_NAME.fullmatch(key_env):
        raise ClientConfigError(
            f"{what} {shown}: key= names the environment variable that holds the key (letters, digits and _), "
            "never the key itself"
        )
    concurrency = pause = None
    if "concurrency" in given:
        if not given["concurrency"].isdigit() or not 1 <= int(given["concurrency"]) <= 1024:
            raise ClientConfigError(f"{what} {shown}: concurrency is from 1 to 1024, not {given['concurrency']!r}")
        concurrency = int(given["concurrency"])
    if "pause" in given:
        try:
            pause = float(given["pause"])
        except ValueError:
            pause = -1.0
        if not (math.isfinite(pause) and 0 <= pause <= 3600):
            raise ClientConfigError(f"{what} {shown}: pause is from 0 to 3600 seconds, not {given['pause']!r}")
    return EndpointSpec(url, key_env, concurrency, pause)


@dataclasses.dataclass(frozen=True)
class NamedEndpoint:
    """An endpoint the deployment allows, by name: its own (``default``, with the server's key) or one of
    ASSESS_LLM_ENDPOINTS (with the key its ``key=`` names, or none)."""

    name: str
    spec: EndpointSpec
    server_key: bool = False  # the deployment's own endpoint: ASSESS_LLM_API_KEY / OPENAI_API_KEY is sent there

    @property
    def shown_url(self) -> str:
        return redact_url(self.spec.base_url)

    @property
    def key_source(self) -> str:
        """Where its key comes from, in words."""
        if self.spec.key_env:
            return self.spec.key_env
        return "ASSESS_LLM_API_KEY / OPENAI_API_KEY" if self.server_key else "none (a local server)"

    def key(self) -> str:
        """The key sent to this endpoint: the variable its ``key=`` names, the server's key for the deployment's
        own endpoint, else none (a placeholder). ClientConfigError when a named variable is unset."""

        if self.spec.key_env:
            found = named_secret(self.spec.key_env)
            if found is None:
                raise ClientConfigError(
                    f"endpoint {self.name}: the environment variable {self.spec.key_env} (its key) is not set"
                )
            return found
        if self.server_key:
            return llm_settings()["api_key"] or LOCAL_KEY
        return LOCAL_KEY


def named_endpoints() -> list[NamedEndpoint]:
    """The endpoints the deployment allows, in order: ``default`` (ASSESS_LLM_BASE_URL, or OpenAI when only a key
    is set; absent when neither is) and each ``NAME=URL[,key=ENV_VAR]`` of ASSESS_LLM_ENDPOINTS. A malformed or
    repeated entry is refused (ClientConfigError, one line)."""

    env = llm_settings()
    out: list[NamedEndpoint] = []
    if env["base_url"] or env["api_key"]:
        out.append(NamedEndpoint(SERVER_ENDPOINT, EndpointSpec(env["base_url"] or OPENAI_URL), server_key=True))
    for name, text in llm_endpoint_entries():
        if not _NAME.fullmatch(name) or name == SERVER_ENDPOINT:
            raise ClientConfigError(
                f"ASSESS_LLM_ENDPOINTS: each entry is NAME=URL[,key=ENV_VAR] with a name of letters, digits, "
                f"'.', '_' and '-' other than {SERVER_ENDPOINT!r}; not {redact_url(f'{name}={text}'[:80])!r}"
            )
        if any(e.name == name for e in out):
            raise ClientConfigError(f"ASSESS_LLM_ENDPOINTS names the endpoint {name!r} twice")
        spec = parse_endpoint(text, what=f"ASSESS_LLM_ENDPOINTS {name}")
        out.append(NamedEndpoint(name, dataclasses.replace(spec, own_key_only=True)))
    return out


def named_endpoint(name: str) -> NamedEndpoint:
    """The allowed endpoint called ``name`` (:func:`named_endpoints`); ClientConfigError, naming the allowed ones,
    for any other name or URL."""
    allowed = named_endpoints()
    for e in allowed:
        if e.name == name:
            return e
    if not allowed:
        raise ClientConfigError(
            "no LLM endpoint configured: the deployment sets ASSESS_LLM_BASE_URL (its own endpoint, with "
            "ASSESS_LLM_API_KEY for a hosted one) or ASSESS_LLM_ENDPOINTS (named endpoints)"
        )
    names = ", ".join(e.name for e in allowed)
    given = redact_url(str(name))[:80]
    raise ClientConfigError(
        f"{given!r} is not an endpoint this deployment allows (allowed: {names}); the deployment "
        "configures endpoints in ASSESS_LLM_BASE_URL and ASSESS_LLM_ENDPOINTS"
    )


class LatencyHistogram:
    """Latencies in milliseconds counted in buckets (exact below 1 s, 1 % wide above): quantiles in flat memory."""

    def __init__(self):
        self.counts: dict[int, int] = {}
        self.total = 0

    @staticmethod
    def _bucket(ms: int) -> int:
        if ms < 1000:
            return max(0, ms)
        return int(round(1000 * 1.01 ** round(math.log(ms / 1000) / math.log(1.01))))

    def add(self, ms: int) -> None:
        b = self._bucket(int(ms))
        self.counts[b] = self.counts.get(b, 0) + 1
        self.total += 1

    def quantile(self, q: float) -> int | None:
        """The smallest bucket holding at least ``q`` of the latencies (None when there are none)."""
        if not self.total:
            return None
        rank, seen = math.ceil(q * self.total), 0
        for bucket in sorted(self.counts):
            seen += self.counts[bucket]
            if seen >= rank:
                return bucket
        return max(self.counts)


class _Endpoint:
    """One endpoint's client, limits and state (guarded by the pool's lock)."""

    def __init__(self, position: int, spec: EndpointSpec, client, concurrency: int, pause_s: float):
        self.position, self.spec, self.client = position, spec, client
        self.concurrency, self.base_pause = concurrency, pause_s
        self.in_flight = self.requests = self.ok = self.failed = self.in_a_row = self.pauses = 0
        self.paused_until = 0.0
        self.next_pause = pause_s
        self.paused_s = 0.0
        self.paused: list[list] = []
        self.disabled: str | None = None
        self.last_error: str | None = None
        self.latency = LatencyHistogram()


class EndpointPool:
    """A chat client over several endpoints (see the module docstring); thread-safe, as the runner calls it
    from many threads."""

    def __init__(
        self,
        model: str,
        endpoints: Sequence[EndpointSpec],
        *,
        default_concurrency: int,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        temperature: float | None = 0.0,
        pause_after: int = DEFAULT_PAUSE_AFTER,
        default_key: str | None = None,
        secret: Callable[[str], str | None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        if not endpoints:
            raise ClientConfigError("an endpoint pool needs at least one endpoint")
        if secret is None:
            secret = named_secret
        self.model = model
        self.timeout = timeout
        self.temperature = temperature
        self.pause_after = max(1, pause_after)
        self.max_tries = max(1, retries + len(endpoints))
        self._clock = clock
        self._lock = threading.Condition()
        self._endpoints: list[_Endpoint] = []
        for position, spec in enumerate(endpoints, start=1):
            key = LOCAL_KEY if spec.own_key_only else default_key or LOCAL_KEY
            if spec.key_env is not None:
                key = secret(spec.key_env)
                if key is None:
                    raise ClientConfigError(
                        f"--endpoint {redact_url(spec.base_url)}: the environment variable {spec.key_env} (its key) "
                        "is not set"
                    )
            client = OpenAIClient(model, base_url=spec.base_url, api_key=key, timeout=timeout, max_retries=0)
            client.temperature = temperature
            pause = DEFAULT_PAUSE_S if spec.pause_s is None else spec.pause_s
            self._endpoints.append(
                _Endpoint(position, spec, client, spec.concurrency or default_concurrency, float(pause))
            )

    @property
    def concurrency(self) -> int:
        """The calls the pool can have in flight at once: the endpoints' limits added up."""
        return sum(e.concurrency for e in self._endpoints)

    @property
    def base_url(self) -> str:
        """The endpoints' base URLs, space-separated (the job's record)."""
        return " ".join(redact_url(e.spec.base_url) for e in self._endpoints)

    def _acquire(self) -> _Endpoint | None:
        """The endpoint the next call goes to, its slot taken; waits while all are full or paused; None when every
        endpoint is disabled."""
        with self._lock:
            while True:
                usable = [e for e in self._endpoints if e.disabled is None]
                if not usable:
                    return None
                now = self._clock()
                ready = [e for e in usable if e.paused_until <= now and e.in_flight < e.concurrency]
                if ready:
                    best = max(ready, key=lambda e: (e.concurrency - e.in_flight, -e.position))
                    best.in_flight += 1
                    best.requests += 1
                    return best
                waits = [e.paused_until - now for e in usable if e.paused_until > now]
                self._lock.wait(timeout=min(waits) if waits else None)

    def _release(self, e: _Endpoint, reply: Reply) -> None:
        with self._lock:
            e.in_flight -= 1
            if reply.ok:
                e.ok += 1
                e.in_a_row = 0
                e.next_pause = e.base_pause
                e.latency.add(reply.latency_ms)
            else:
                e.failed += 1
                e.last_error = reply.error
                if reply.fatal:
                    e.disabled = reply.error
                elif reply.retryable:
                    e.in_a_row += 1
                    now = self._clock()
                    if e.in_a_row >= self.pause_after and e.paused_until <= now:
                        self._pause(e, now, reply.error or "failed")
            self._lock.notify_all()

    def _pause(self, e: _Endpoint, now: float, reason: str) -> None:
        seconds = e.next_pause
        e.paused_until = now + seconds
        e.pauses += 1
        e.paused_s += seconds
        e.in_a_row = 0
        e.next_pause = min(MAX_PAUSE_S, max(seconds * 2, 0.001))
        started = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        e.paused = [*e.paused, [started, round(seconds, 3), f"{self.pause_after} failed in a row: {reason}"]][
            -KEPT_PAUSES:
        ]

    def complete(self, messages: list[dict], *, max_tokens: int | None = None) -> Reply:
        """Ask the model at the best endpoint, moving a call that failed there to another (see the module
        docstring); never raises for a failed call."""
        start = time.perf_counter()
        attempts, last = 0, None
        for _ in range(self.max_tries):
            e = self._acquire()
            if e is None:
                break
            try:
                reply = e.client.complete(messages, max_tokens=max_tokens)
            except Exception as exc:  # a client bug must not leave the slot taken
                reply = Reply(None, ok=False, error=f"{type(exc).__name__}: {exc}"[:200], retryable=True)
            self._release(e, reply)
            attempts += reply.attempts
            last = dataclasses.replace(reply, latency_ms=_ms(start), attempts=attempts)
            if reply.ok or not (reply.retryable or reply.fatal):
                return last
        if last is None or all(e.disabled for e in self._endpoints):
            reason = last.error if last is not None else "no endpoint"
            return Reply(None, ok=False, error=f"every endpoint is disabled (last: {reason})", fatal=True,
                         latency_ms=_ms(start), attempts=attempts)  # fmt: skip
        return dataclasses.replace(last, error=f"{last.error} (gave up after {attempts} tries over the endpoints)")

    def figures(self) -> list[dict]:
        """Each endpoint's figures so far (see the module docstring), in the order given."""
        with self._lock:
            return [
                {
                    "position": e.position,
                    "base_url": redact_url(e.spec.base_url),
                    "concurrency": e.concurrency,
                    "requests": e.requests,
                    "ok": e.ok,
                    "failed": e.failed,
                    "p50_ms": e.latency.quantile(0.5),
                    "p95_ms": e.latency.quantile(0.95),
                    "pauses": e.pauses,
                    "paused_s": round(e.paused_s, 3),
                    "paused": list(e.paused),
                    "last_error": e.disabled or e.last_error,
                }
                for e in self._endpoints
            ]


def _ms(start: float) -> int:
    return int(round((time.perf_counter() - start) * 1000))


def describe_figures(f: dict) -> str:
    """One endpoint's figures as a line for people."""
    latency = "" if f["p50_ms"] is None else f", p50 {f['p50_ms']} ms, p95 {f['p95_ms']} ms"
    paused = f", paused {f['pauses']}x ({f['paused_s']:g} s)" if f["pauses"] else ""
    error = f"; last error: {f['last_error']}" if f["last_error"] and f["failed"] else ""
    return (
        f"endpoint {f['position']} {f['base_url']} (concurrency {f['concurrency']}): {f['requests']} calls, "
        f"{f['ok']} answered, {f['failed']} failed{latency}{paused}{error}"
    )
