"""``prejudge --batch-submit`` as a user runs it, against local stubs of both providers' batch APIs (real HTTP):
a process killed mid-poll and started again polls the batch it had sent (nothing sent twice, nothing lost),
``jobs`` lists each batch's state, and bad input exits 2 with one line and nothing stored."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.batch_stubs import BatchStub
from tests.helpers import ROOT, rows, run_cli

POOL_WITH_TEXT = 214
ARGS = ("prejudge", "--task", "passage", "--source", "llm:stub", "--model", "stub-1", "--batch-submit")


@pytest.fixture
def demo(tmp_path, demo_copy):
    return demo_copy(tmp_path / "demo.db")


@pytest.fixture(autouse=True)
def provider_env(monkeypatch):
    for var in ("ASSESS_LLM_BASE_URL", "ASSESS_LLM_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("ASSESS_ANTHROPIC_BASE_URL", raising=False)


def point_at(monkeypatch, stub, provider: str) -> dict:
    if provider == "openai":
        env = {"ASSESS_LLM_BASE_URL": stub.base_url, "ASSESS_LLM_API_KEY": "sk-openai-test-0001"}
    else:
        env = {"ASSESS_ANTHROPIC_BASE_URL": stub.base_url, "ANTHROPIC_API_KEY": "sk-ant-test-0001"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env


def start(demo, provider: str, env: dict) -> subprocess.Popen:
    argv = [sys.executable, "-m", "assess", *ARGS, "--provider", provider, "--poll", "0.05", "--no-progress"]
    return subprocess.Popen(
        [*argv, "--db", str(demo)],
        cwd=ROOT,
        env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(condition, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while not condition():
        assert time.time() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_process_killed_mid_poll_is_resumed_without_sending_twice(monkeypatch, demo, provider):
    with BatchStub(polls=0, hold=True) as stub:
        env = point_at(monkeypatch, stub, provider)
        first = start(demo, provider, env)
        wait_for(lambda: stub.batches and stub.batches[0]["polled"] >= 3)  # sent, and polled while it runs
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        assert rows(demo, "SELECT COUNT(*) FROM prejudgments") == [(0,)]
        listed = run_cli("jobs", db=demo, check=True).stdout
        assert "interrupted" in listed and f"batch {provider} batch-0: block 0 round 1 part 0, in_progress" in listed
        stub.release()
        again = start(demo, provider, env)
        out, err = again.communicate(timeout=120)
        assert again.returncode == 0, err
    assert len(stub.batches) == 1  # the batch of the killed process was polled, not sent again
    assert len(stub.received) == POOL_WITH_TEXT and max(stub.received.values()) == 1
    assert rows(demo, "SELECT COUNT(*) AS n, COUNT(DISTINCT turn_id || ' ' || item_id) AS i FROM prejudgments") == [
        (214, 214)
    ]
    assert "(resume)" in out and f"{POOL_WITH_TEXT} of {POOL_WITH_TEXT} stored in all" in out
    jobs = json.loads(run_cli("jobs", "--json", db=demo, check=True).stdout)
    assert jobs[0]["status"] == "done"
    assert [(b["batch id"], b["state"], b["succeeded"]) for b in jobs[0]["batches"]] == [("batch-0", "stored", 214)]
    assert stub.keys == [env.get("ASSESS_LLM_API_KEY") or env["ANTHROPIC_API_KEY"]]


def test_bad_input_exits_2_with_one_line_and_stores_nothing(monkeypatch, demo):
    with BatchStub() as stub:
        point_at(monkeypatch, stub, "openai")
        for extra, said in [
            (("--poll", "0"), "--poll is a number of seconds above 0, not 0"),
            (("--base-url", stub.base_url), "no --base-url or --join"),
            (("--batch-out", "x.jsonl"), "give one of them"),
        ]:
            r = run_cli(*ARGS, *extra, "--no-progress", db=demo)
            assert r.returncode == 2 and said in r.stderr and "Traceback" not in r.stderr, r.stderr
        r = run_cli("prejudge", "--task", "passage", "--model", "m", "--poll", "5", db=demo)
        assert r.returncode == 2 and "--provider and --poll are options of --batch-submit" in r.stderr
    monkeypatch.delenv("ASSESS_LLM_BASE_URL")
    monkeypatch.delenv("ASSESS_LLM_API_KEY")
    r = run_cli(*ARGS, "--provider", "anthropic", "--no-progress", db=demo)
    assert r.returncode == 2 and "needs its key: set ANTHROPIC_API_KEY" in r.stderr
    assert stub.batches == [] and rows(demo, "SELECT COUNT(*) FROM prejudge_jobs") == [(0,)]


def test_a_refusing_provider_fails_the_job_with_its_message_and_no_key(monkeypatch, demo):
    with BatchStub() as stub:
        monkeypatch.setenv("ASSESS_LLM_BASE_URL", stub.base_url.replace("/v1", "/nowhere"))
        monkeypatch.setenv("ASSESS_LLM_API_KEY", "sk-secret-never-shown-42")
        r = run_cli(*ARGS, "--poll", "0.01", "--no-progress", db=demo)
    assert r.returncode == 2 and "HTTP 404" in r.stderr and "sk-secret-never-shown-42" not in r.stderr
    assert "Traceback" not in r.stderr
    assert rows(demo, "SELECT status FROM prejudge_jobs") == [("failed",)]
    assert rows(demo, "SELECT state FROM provider_batches") == [("preparing",)]
    assert rows(demo, "SELECT COUNT(*) FROM prejudgments") == [(0,)]
