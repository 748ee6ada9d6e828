"""LLM battles as a pre-judging task against the local stub over real HTTP: every pair of responses to a turn is
asked in both orders, the verdicts stored as battles of the LLM's own source; a rerun asks nothing again; the
judge's position bias and the ranking come out as counted by hand."""

from __future__ import annotations

import json

from store import open_db
from store.db import rows
from tests.helpers import run_cli
from tests.stub_llm import enclosed, stub_llm  # noqa: F401  (fixture)


def test_llm_battles_both_orders_stored_as_their_own_source(demo_copy, tmp_path, stub_llm, monkeypatch):
    for var in ("ASSESS_LLM_BASE_URL", "ASSESS_LLM_MODEL", "ASSESS_LLM_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    db = demo_copy(tmp_path / "demo.db")
    with open_db(db) as database:
        run_of = {r["text"]: r["run"] for r in rows(database, "SELECT run, text FROM responses")}
        turns = len(rows(database, "SELECT DISTINCT turn_id FROM responses"))

    def judge(request):
        # prefers demo-rerank whenever it is shown; otherwise always the left answer (a position bias)
        right = run_of[enclosed(request, "right")]
        return "B" if right == "demo-rerank" else "A"

    stub_llm.reply = judge
    ask = ("prejudge", "--task", "battle", "--source", "llm:stub", "--model", "stub-1", "--base-url", stub_llm.base_url)
    run_cli(*ask, db=db, check=True)
    pairs = turns * 3  # three runs answer every turn
    assert len(stub_llm.requests) == 2 * pairs
    with open_db(db) as database:
        stored = rows(database, "SELECT turn_id, run_a, run_b, occurrence, outcome, mode, via FROM battles")
        assert len(stored) == 2 * pairs
        assert {(r["run_a"], r["run_b"]) for r in stored} == {
            (a, b)
            for a in ("demo-bm25", "demo-dense", "demo-rerank")
            for b in ("demo-bm25", "demo-dense", "demo-rerank")
            if a != b
        }
        assert {(r["occurrence"], r["mode"], r["via"]) for r in stored} == {(0, "llm", "llm")}
        assert all(r["outcome"] == (2 if r["run_b"] == "demo-rerank" else 1) for r in stored)
        assert rows(database, "SELECT kind, model FROM sources WHERE name = 'llm:stub'") == [
            {"kind": "llm", "model": "stub-1"}
        ]
    run_cli(*ask, db=db, check=True)  # resumable: everything answered, nothing asked again
    assert len(stub_llm.requests) == 2 * pairs
    got = json.loads(
        run_cli("battles", "rank", "--source", "llm:stub", "--json", "--replicates", "50", db=db, check=True).stdout
    )
    # rerank wins its 4 battles per turn; bm25 and dense each lose 2 to rerank and win 1 of their 2 against each other
    assert {r: v["win_rate"] for r, v in got["runs"].items()} == {
        "demo-rerank": 1.0,
        "demo-bm25": 0.25,
        "demo-dense": 0.25,
    }
    assert {r: v["battles"] for r, v in got["runs"].items()} == dict.fromkeys(got["runs"], 4 * turns)
    text = run_cli("battles", "rank", "--source", "llm:stub", "--replicates", "0", db=db, check=True).stdout
    # position bias: of the 3 pairs per turn, bm25-dense flips (the left one wins both ways); 48 of 72 verdicts
    # chose the left answer (every rerank-left battle and every bm25/dense battle)
    assert f"pairs judged in both orders: {pairs}, verdict flipped: {turns} (33.3%)" in text
    assert "left answer chosen in 66.7% of decisive verdicts" in text


def test_llm_battles_as_a_shared_job(demo_copy, tmp_path, stub_llm, monkeypatch):
    """``prejudge --task battle --join``: the battles are queued in blocks and stored once each, as without it."""
    for var in ("ASSESS_LLM_BASE_URL", "ASSESS_LLM_MODEL", "ASSESS_LLM_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    db = demo_copy(tmp_path / "demo.db")
    stub_llm.reply = lambda request: "A"
    ask = ("prejudge", "--task", "battle", "--source", "llm:stub", "--model", "stub-1", "--base-url", stub_llm.base_url)
    out = run_cli(*ask, "--join", "--block-size", "10", "--no-progress", db=db, check=True).stdout
    assert "job 1 done: 72 of 72 stored (this was worker 1)" in out
    assert len(stub_llm.requests) == 72  # 24 turns x 3 pairs of runs, in both orders
    with open_db(db) as database:
        assert rows(database, "SELECT COUNT(*) AS n, SUM(outcome) AS wins FROM battles") == [{"n": 72, "wins": 72}]
        assert rows(database, "SELECT COUNT(*) AS n FROM job_blocks WHERE state = 'done'") == [{"n": 8}]
