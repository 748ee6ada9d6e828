"""The bank-match pre-judging task over real HTTP (tests/stub_llm.py): one call per (bank answer, response),
the answer parsed into a bank-match label of the LLM source with the sentences it names (in the answer's note
and the label's ``sentences``),
resumable (a second run asks nothing), and scored by `nuggets bank score` like a human source."""

from __future__ import annotations

import json
import re

from tests.helpers import ROOT, run_cli
from tests.stub_llm import Reply, enclosed, stub_llm  # noqa: F401  (fixture)

BANKS = ROOT / "assets" / "demo" / "banks"
ITEMS = 24  # 101_1: 4 answers x 5 responses (3 demo runs, rt-alpha, rt-beta); 101_2: 1 answer x 4 responses


def stated_in(request: dict) -> list[int]:
    """The scripted judge: the numbered sentences of the report that hold the answer's last two words."""
    fields = enclosed(request)
    words = " ".join(fields["answer"].lower().split()[-2:])
    numbered = re.findall(r"^\[(\d+)\] (.*)$", fields["report"], re.M)
    return [int(n) for n, text in numbered if words in text.lower()]


def judge(request: dict) -> Reply:
    found = stated_in(request)
    if "downhill" in enclosed(request, "answer"):
        return Reply(content="Yes")  # a bare yes: contained, no sentences named
    return Reply(content=json.dumps({"contains": "yes" if found else "no", "sentences": found}))


def test_llm_bank_matching_is_stored_resumable_and_scored(tmp_path, demo_copy, stub_llm, monkeypatch):
    for var in ("ASSESS_LLM_BASE_URL", "ASSESS_LLM_MODEL", "ASSESS_LLM_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    db = demo_copy(tmp_path / "demo.db")
    run_cli("import", "rag-answers", str(BANKS / "answers.jsonl"), db=db, check=True)
    run_cli("nuggets", "bank", "import", str(BANKS / "bank.jsonl"), db=db, check=True)
    stub_llm.reply = judge
    args = (
        "prejudge",
        "--task",
        "bank-match",
        "--source",
        "llm:stub",
        "--model",
        "stub-1",
        "--base-url",
        stub_llm.base_url,
    )
    first = run_cli(*args, "--json", db=db, check=True)
    assert len(stub_llm.requests) == ITEMS, first.stdout
    prompt = stub_llm.requests[0]["messages"][-1]["content"]
    assert '"contains": "yes" or "no"' in prompt and "[1] " in enclosed(stub_llm.requests[0], "report")

    from store import open_db
    from store.db import rows

    with open_db(db) as s:
        labels = rows(
            s,
            "SELECT turn_id, run, nugget, answer, contains, mode FROM bank_matches WHERE source = 'llm:stub' AND run = 'rt-alpha' ORDER BY turn_id, nugget, answer",
        )
        notes = rows(
            s,
            "SELECT item_id, parsed, note FROM prejudgments WHERE task = 'bank-match' AND turn_id = '101_1' AND item_id LIKE 'rt-alpha %' ORDER BY item_id",
        )
    assert labels == [
        {
            "turn_id": "101_1",
            "run": "rt-alpha",
            "nugget": 1,
            "answer": 1,
            "contains": 1,
            "mode": "llm",
        },  # 'walk-run plan', sentence 1
        {
            "turn_id": "101_1",
            "run": "rt-alpha",
            "nugget": 1,
            "answer": 2,
            "contains": 0,
            "mode": "llm",
        },  # 'walking first'
        {
            "turn_id": "101_1",
            "run": "rt-alpha",
            "nugget": 2,
            "answer": 1,
            "contains": 1,
            "mode": "llm",
        },  # 'after sleeping'
        {
            "turn_id": "101_1",
            "run": "rt-alpha",
            "nugget": 2,
            "answer": 2,
            "contains": 0,
            "mode": "llm",
        },  # 'a shift': 'a night shift'
        {
            "turn_id": "101_2",
            "run": "rt-alpha",
            "nugget": 1,
            "answer": 1,
            "contains": 1,
            "mode": "llm",
        },  # the bare 'Yes'
    ]
    assert notes[0] == {"item_id": "rt-alpha 1 1", "parsed": "1", "note": "sentences: 1"}
    assert notes[2] == {"item_id": "rt-alpha 2 1", "parsed": "1", "note": "sentences: 2"}
    with open_db(db) as s:  # the sentences the model named are the label's, as a person's match has them
        sentences = rows(
            s,
            "SELECT turn_id, nugget, answer, sentences, via FROM bank_matches WHERE source = 'llm:stub' "
            "AND run = 'rt-alpha' ORDER BY turn_id, nugget, answer",
        )
    assert [(r["turn_id"], r["nugget"], r["answer"], json.loads(r["sentences"]), r["via"]) for r in sentences] == [
        ("101_1", 1, 1, [1], "llm"),
        ("101_1", 1, 2, [], "llm"),
        ("101_1", 2, 1, [2], "llm"),
        ("101_1", 2, 2, [], "llm"),
        ("101_2", 1, 1, [], "llm"),  # the bare 'Yes' names no sentence
    ]

    again = run_cli(*args, db=db, check=True)
    assert len(stub_llm.requests) == ITEMS, again.stdout  # resumed: nothing asked twice

    scores = json.loads(run_cli("nuggets", "bank", "score", "--source", "llm:stub", "--json", db=db, check=True).stdout)
    # rt-alpha: 101_1 OR met, AND not (1/2), 101_2 met (1): 3/4; rt-beta states none of the answers' words: 0
    assert scores["runs"]["rt-alpha"] == {"topics": 2, "coverage": 0.75, "nugget_coverage_micro": 2 / 3}  # 2 of 3
    assert scores["runs"]["rt-beta"] == {"topics": 1, "coverage": 0.0, "nugget_coverage_micro": 0.0}
