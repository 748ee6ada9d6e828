"""The LLM page lists the figures of each endpoint of a job spread over several (as `jobs` prints them)."""

from __future__ import annotations

from tests.helpers import open_app, rows, run_cli
from tests.stub_llm import StubLLM


def test_llm_page_shows_each_endpoints_figures(tmp_path, demo_copy, monkeypatch):
    db = demo_copy(tmp_path / "app.db")
    monkeypatch.setenv("ASSESS_DB", str(db))
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    with StubLLM() as a, StubLLM() as b:
        ran = run_cli(
            "prejudge", "--task", "passage", "--model", "stub-1", "--limit", "6", "--no-progress",
            "--endpoint", f"{a.base_url},concurrency=2", "--endpoint", f"{b.base_url},concurrency=3", db=db,
        )  # fmt: skip
        sent = (len(a.requests), len(b.requests))
    assert ran.returncode == 0, ran.stderr
    at = open_app("pages/llm.py", timeout=120)
    assert not at.exception and not at.error
    shown = next(d.value for d in at.dataframe if "base URL" in d.value.columns)
    assert list(shown["endpoint"]) == [1, 2] and list(shown["base URL"]) == [a.base_url, b.base_url]
    assert list(shown["concurrency"]) == [2, 3] and tuple(shown["calls"]) == sent and sum(shown["answered"]) == 6
    assert list(shown["failed"]) == [0, 0]
    stored = rows(db, "SELECT requests, ok, p50_ms FROM prejudge_job_endpoints ORDER BY position")
    assert [tuple(r) for r in stored] == [
        (c, o, p) for c, o, p in zip(shown["calls"], shown["answered"], shown["p50 ms"], strict=True)
    ]
