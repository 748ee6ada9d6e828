"""The LLM page lists the workers of a shared job and the batches of a batch job (as `jobs` prints them)."""

from __future__ import annotations

from tests.batch_stubs import BatchStub
from tests.helpers import open_app, rows, run_cli
from tests.stub_llm import StubLLM


def test_llm_page_shows_the_workers_of_a_shared_job(tmp_path, demo_copy, monkeypatch):
    db = demo_copy(tmp_path / "app.db")
    monkeypatch.setenv("ASSESS_DB", str(db))
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    with StubLLM() as stub:
        ran = run_cli(
            "prejudge", "--task", "passage", "--model", "stub-1", "--base-url", stub.base_url, "--limit", "12",
            "--join", "--block-size", "5", "--no-progress", db=db,
        )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    at = open_app("pages/llm.py", timeout=120)
    assert not at.exception and not at.error
    shown = next(d.value for d in at.dataframe if "blocks claimed" in d.value.columns)
    [(worker, pid, host)] = rows(db, "SELECT id, pid, host FROM job_workers")
    assert list(shown["worker"]) == [worker] and list(shown["pid"]) == [pid] and list(shown["host"]) == [host]
    assert list(shown["status"]) == ["done"] and list(shown["blocks claimed"]) == [3]  # 12 items in blocks of 5
    assert list(shown["stored"]) == [12] and list(shown["items held"]) == [0] and list(shown["failed"]) == [0]


def test_llm_page_shows_each_batch_of_a_batch_job(tmp_path, demo_copy, monkeypatch):
    db = demo_copy(tmp_path / "app.db")
    monkeypatch.setenv("ASSESS_DB", str(db))
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    with BatchStub() as stub:
        monkeypatch.setenv("ASSESS_ANTHROPIC_BASE_URL", stub.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-page-test-01")
        ran = run_cli(
            "prejudge", "--task", "passage", "--model", "stub-1", "--limit", "12", "--batch-submit",
            "--provider", "anthropic", "--poll", "0.01", "--no-progress", db=db,
        )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    at = open_app("pages/llm.py", timeout=120)
    assert not at.exception and not at.error
    shown = next(d.value for d in at.dataframe if "batch id" in d.value.columns)
    assert list(shown["provider"]) == ["anthropic"] and list(shown["batch id"]) == ["batch-0"]
    assert list(shown["state"]) == ["stored"] and list(shown["requests"]) == [12] and list(shown["succeeded"]) == [12]
