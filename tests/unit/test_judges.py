"""The OpenAI-compatible judge over real HTTP against the local stub: answers, token counts, retries with
back-off on 429/5xx and timeouts, fatal errors, settings; and bounded concurrency of complete_all."""

from __future__ import annotations

import threading
import time

import pytest

from assess.llm import clients
from assess.llm.clients import ClientConfigError, OpenAIClient, Reply, complete_all, endpoint_settings
from tests.stub_llm import Reply as StubReply
from tests.stub_llm import stub_llm  # noqa: F401  (fixture)

MESSAGES = [{"role": "user", "content": "Grade this passage."}]


@pytest.fixture
def sleeps():
    return []


def judge_for(stub, sleeps, **options) -> OpenAIClient:
    options.setdefault("timeout", 5)
    return OpenAIClient("stub-model", base_url=stub.base_url, api_key="k", sleep=sleeps.append, **options)


def test_an_answer_with_its_tokens_and_latency(stub_llm, sleeps):
    stub_llm.queue.append(StubReply(content="Score: 3", prompt_tokens=120, completion_tokens=4, delay=0.05))
    reply = judge_for(stub_llm, sleeps).complete(MESSAGES, max_tokens=50)
    assert reply == Reply(
        "Score: 3", ok=True, prompt_tokens=120, completion_tokens=4, latency_ms=reply.latency_ms, attempts=1
    )
    assert reply.latency_ms >= 50
    sent = stub_llm.requests[0]
    assert sent["model"] == "stub-model" and sent["messages"] == MESSAGES
    assert sent["temperature"] == 0 and sent["max_tokens"] == 50


def test_429_and_500_are_retried_with_backoff_honouring_retry_after(stub_llm, sleeps):
    stub_llm.queue += [
        StubReply(429, headers={"Retry-After": "0.01"}),
        StubReply(500),
        StubReply(503),
        StubReply(content="2"),
    ]
    reply = judge_for(stub_llm, sleeps, backoff=0.2).complete(MESSAGES)
    assert reply.ok and reply.text == "2" and reply.attempts == 4
    assert stub_llm.statuses == [429, 500, 503, 200]
    assert sleeps[0] == 0.01  # Retry-After wins
    assert 0.2 <= sleeps[1] <= 0.4 and 0.4 <= sleeps[2] <= 0.8  # 0.2 × 2^(attempt-1), jitter ×[0.5, 1]


def test_a_slow_answer_times_out_and_is_retried(stub_llm, sleeps):
    stub_llm.queue += [StubReply(content="4", delay=1.5), StubReply(content="1")]
    reply = judge_for(stub_llm, sleeps, timeout=0.3).complete(MESSAGES)
    assert reply.ok and reply.text == "1" and reply.attempts == 2


def test_retries_are_bounded_and_the_failure_is_an_explicit_outcome(stub_llm, sleeps):
    stub_llm.reply = lambda request: StubReply(500)
    reply = judge_for(stub_llm, sleeps, max_retries=2).complete(MESSAGES)
    assert not reply.ok and reply.text is None and not reply.fatal
    assert reply.attempts == 3 and len(stub_llm.requests) == 3 and len(sleeps) == 2
    assert "HTTP 500" in reply.error and "gave up after 3 attempts" in reply.error


@pytest.mark.parametrize("status, fatal", [(401, True), (404, True), (400, False), (422, False)])
def test_client_errors_are_not_retried(stub_llm, sleeps, status, fatal):
    stub_llm.queue.append(StubReply(status))
    reply = judge_for(stub_llm, sleeps).complete(MESSAGES)
    assert not reply.ok and reply.fatal is fatal and reply.attempts == 1 and f"HTTP {status}" in reply.error
    assert len(stub_llm.requests) == 1


def test_a_refused_max_tokens_parameter_is_renamed_once(stub_llm, sleeps):
    refusal = "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens'."
    stub_llm.reply = lambda r: StubReply(content="3") if "max_completion_tokens" in r else StubReply(400, refusal)
    judge = judge_for(stub_llm, sleeps)
    first, second = judge.complete(MESSAGES, max_tokens=20), judge.complete(MESSAGES, max_tokens=20)
    assert first.ok and first.text == "3" and first.attempts == 1 and second.ok
    assert [("max_tokens" in r, r.get("max_completion_tokens")) for r in stub_llm.requests] == [
        (True, None),
        (False, 20),
        (False, 20),
    ]


def test_settings_come_from_arguments_then_environment(monkeypatch):
    for var in ("ASSESS_LLM_BASE_URL", "ASSESS_LLM_MODEL", "ASSESS_LLM_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ClientConfigError, match="no LLM model given"):
        endpoint_settings()
    with pytest.raises(ClientConfigError, match="no LLM endpoint configured"):
        endpoint_settings(model="gpt-4o")
    assert endpoint_settings(model="m", base_url="http://localhost:11434/v1") == {
        "base_url": "http://localhost:11434/v1",
        "model": "m",
        "api_key": clients.LOCAL_KEY,
    }
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-openai-var")
    assert endpoint_settings(model="m")["api_key"] == "sk-from-openai-var"
    monkeypatch.setenv("ASSESS_LLM_API_KEY", "sk-assess")
    monkeypatch.setenv("ASSESS_LLM_MODEL", "env-model")
    monkeypatch.setenv("ASSESS_LLM_BASE_URL", "http://env/v1")
    assert endpoint_settings() == {"base_url": "http://env/v1", "model": "env-model", "api_key": "sk-assess"}
    assert endpoint_settings(model="arg", base_url="http://arg/v1")["model"] == "arg"


class CountingJudge:
    """A fake judge that records how many calls run at once."""

    model = "fake"

    def __init__(self, delay=0.02, fail_on=()):
        self.delay, self.fail_on = delay, set(fail_on)
        self.active = self.peak = self.calls = 0
        self.lock = threading.Lock()

    def complete(self, messages, *, max_tokens=None):
        with self.lock:
            self.active += 1
            self.calls += 1
            self.peak = max(self.peak, self.active)
        time.sleep(self.delay)
        with self.lock:
            self.active -= 1
        if messages in self.fail_on:
            raise RuntimeError("judge bug")
        return Reply(f"answer {messages}")


def test_complete_all_bounds_concurrency_and_returns_every_reply():
    judge = CountingJudge()
    out = dict(complete_all(judge, ((i, i, None) for i in range(40)), concurrency=4))
    assert sorted(out) == list(range(40)) and out[7].text == "answer 7"
    assert judge.peak == 4 and judge.calls == 40


def test_complete_all_with_idle_says_when_no_reply_came_for_that_long():
    """A shared job's worker stores what it holds while a call hangs: it learns of the wait from ``idle``."""
    answer = threading.Event()

    class Hanging:
        model = "m"

        def complete(self, messages, max_tokens=None):
            answer.wait(10)
            return Reply(f"answer {messages}")

    stream = complete_all(Hanging(), [(1, 1, None)], concurrency=1, idle=0.02)
    assert next(stream) == (None, None) and next(stream) == (None, None)  # no reply yet: told so, twice
    answer.set()
    rest = [item for item in stream if item != (None, None)]
    assert [(key, reply.text) for key, reply in rest] == [(1, "answer 1")]


def test_a_judge_exception_becomes_a_failed_reply_not_a_lost_item():
    out = dict(complete_all(CountingJudge(fail_on={3}), ((i, i, None) for i in range(5)), concurrency=2))
    assert len(out) == 5 and not out[3].ok and "RuntimeError: judge bug" in out[3].error


def test_closing_the_stream_stops_new_calls():
    judge = CountingJudge(delay=0.05)
    stream = complete_all(judge, ((i, i, None) for i in range(100)), concurrency=3)
    got = [next(stream) for _ in range(5)]
    stream.close()
    time.sleep(0.2)
    assert len(got) == 5 and judge.calls <= 5 + 3


def test_concurrent_http_calls_overlap(stub_llm):
    stub_llm.latency = 0.2
    judge = OpenAIClient("m", base_url=stub_llm.base_url, api_key="k")
    start = time.perf_counter()
    out = list(complete_all(judge, ((i, [{"role": "user", "content": f"q{i}"}], 5) for i in range(20)), concurrency=10))
    elapsed = time.perf_counter() - start
    assert len(out) == 20 and all(r.ok for _, r in out)
    assert elapsed < 1.5  # sequentially: 20 × 0.2 s = 4 s


def test_complete_all_refuses_zero_concurrency():
    with pytest.raises(Exception, match="at least 1"):
        list(complete_all(CountingJudge(), [], concurrency=0))
