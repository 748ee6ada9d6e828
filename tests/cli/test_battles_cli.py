"""`python -m assess battles`: import (iKAT turn ids and RAG topic ids), rank --json with hand-worked numbers,
malformed files refused with exit 2 and the store unchanged, export round trip, plans over the demo's responses."""

from __future__ import annotations

import json
import math

import pytest

from store import open_db
from store.db import rows
from tests.helpers import run_cli

LINES = [
    # iKAT turn ids and TREC RAG topic ids (one given as a number) side by side
    {"topic_id": "12-1_3", "run_a": "A", "run_b": "B", "winner": "a"},
    {"topic_id": "2024-145979", "run_a": "B", "run_b": "A", "winner": "tie"},
    {"topic_id": 2027497, "run_a": "A", "run_b": "B", "winner": "a"},
    {"topic_id": "12-1_3", "run_a": "A", "run_b": "B", "winner": "tie"},  # the same battle again: it counts
    {"topic_id": "12-1_3", "run_a": "B", "run_b": "A", "winner": "both_bad"},  # left out of the strengths
]


def _write(path, lines) -> str:
    path.write_text("".join((json.dumps(x) if not isinstance(x, str) else x) + "\n" for x in lines))
    return str(path)


@pytest.fixture
def store(tmp_path):
    db = tmp_path / "battles.db"
    run_cli("init", db=db, check=True)
    return db


def _state(db) -> tuple:
    database = open_db(db)
    try:
        return rows(database, "SELECT * FROM battles ORDER BY turn_id, run_a, run_b, occurrence"), rows(
            database, "SELECT label_table, source, item, old_value, new_value FROM label_history ORDER BY id"
        )
    finally:
        database.close()


def test_import_then_rank_json_by_hand(store, tmp_path):
    file = _write(tmp_path / "b.jsonl", LINES)
    out = run_cli("battles", "import", file, "--source", "arena", "--json", db=store, check=True)
    assert json.loads(out.stdout) == {"battles": 5, "new": 5, "changed": 0, "topics": 3, "runs": 2}
    stored, _ = _state(store)
    assert [(r["turn_id"], r["run_a"], r["occurrence"], r["outcome"]) for r in stored] == [
        ("12-1_3", "A", 0, 1),
        ("12-1_3", "A", 1, 0),
        ("12-1_3", "B", 0, -1),
        ("2024-145979", "B", 0, 0),
        ("2027497", "A", 0, 1),
    ]
    got = json.loads(
        run_cli("battles", "rank", "--source", "arena", "--json", "--replicates", "0", db=store, check=True).stdout
    )
    assert "maximum-likelihood" in got["model"] and "centred to mean 0" in got["model"]
    assert "half a win" in got["model"] and "both_bad" in got["model"] and "0 replicates" in got["model"]
    # A: 2 wins and 2 ties against B -> W[A,B] = 3, W[B,A] = 1: strengths +-ln(3)/2, win rates 3/4 and 1/4
    a, b = math.log(3) / 2, -math.log(3) / 2
    assert list(got["runs"]) == ["A", "B"]
    assert got["runs"]["A"] == pytest.approx({"strength": a, "low": a, "high": a, "win_rate": 0.75, "battles": 4})
    assert got["runs"]["B"] == pytest.approx({"strength": b, "low": b, "high": b, "win_rate": 0.25, "battles": 4})
    with_ci = json.loads(run_cli("battles", "rank", "--source", "arena", "--json", db=store, check=True).stdout)
    assert "1000 replicates" in with_ci["model"] and "95%" in with_ci["model"]
    assert with_ci["runs"]["A"]["low"] <= a <= with_ci["runs"]["A"]["high"]
    # a second import of the same file changes nothing
    again = run_cli("battles", "import", file, "--source", "arena", "--json", db=store, check=True)
    assert json.loads(again.stdout) == {"battles": 5, "new": 0, "changed": 0, "topics": 3, "runs": 2}
    text = run_cli("battles", "rank", "--source", "arena", "--replicates", "0", db=store, check=True).stdout
    assert "both_bad battles (left out): 1" in text


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"topic_id": "1_1", "run_a": "A", "run_b": "B", "winner": "A"}', "'winner' a, b, tie or both_bad"),
        ('{"topic_id": "1_1", "run_a": "A", "winner": "a"}', "a field 'run_b'"),
        ('{"topic_id": "1_1", "run_a": "A", "run_b": "B", "winner": "a"', "one JSON object per line"),
        ('{"topic_id": null, "run_a": "A", "run_b": "B", "winner": "a"}', "'topic_id' as a string"),
    ],
)
def test_a_malformed_line_is_refused_and_nothing_is_written(store, tmp_path, line, field):
    run_cli("battles", "import", _write(tmp_path / "ok.jsonl", LINES[:1]), "--source", "arena", db=store, check=True)
    before = _state(store)
    bad = _write(tmp_path / "bad.jsonl", [*LINES[1:3], line])
    out = run_cli("battles", "import", bad, "--source", "arena", db=store)
    assert out.returncode == 2
    assert out.stderr.startswith(f"error: {bad}:3: expected {field}"), out.stderr
    assert "Traceback" not in out.stderr
    assert _state(store) == before


def test_export_round_trips_and_unknown_sources_are_named(store, tmp_path):
    file = _write(tmp_path / "b.jsonl", LINES)
    run_cli("battles", "import", file, "--source", "arena", db=store, check=True)
    out = tmp_path / "out.jsonl"
    run_cli("battles", "export", "--source", "arena", "--out", str(out), db=store, check=True)
    run_cli("battles", "import", str(out), "--source", "copy", db=store, check=True)
    first, _ = _state(store)
    pick = [{k: r[k] for k in ("turn_id", "run_a", "run_b", "occurrence", "outcome")} for r in first]
    assert [p for p, r in zip(pick, first) if r["source"] == "arena"] == [
        p for p, r in zip(pick, first) if r["source"] == "copy"
    ]
    missing = run_cli("battles", "rank", "--source", "nobody", "--json", db=store)
    assert missing.returncode == 2 and "'nobody' has no battles" in missing.stderr and "arena" in missing.stderr


def test_plans_over_the_demo_responses(demo_copy, tmp_path):
    db = demo_copy(tmp_path / "demo.db")
    out = run_cli("battles", "plan", "--name", "every", "--method", "all", "--json", db=db, check=True)
    every = json.loads(out.stdout)
    database = open_db(db)
    try:
        runs_per_turn = rows(database, "SELECT turn_id, COUNT(*) AS n FROM responses GROUP BY turn_id")
        expected = sum(r["n"] * (r["n"] - 1) // 2 for r in runs_per_turn if r["n"] > 1)
        assert every == {
            "plan": "every",
            "method": "all",
            "pairs": expected,
            "topics": len([r for r in runs_per_turn if r["n"] > 1]),
        }
        some = json.loads(
            run_cli(
                "battles", "plan", "--name", "one", "--method", "random", "--pairs", "1", "--json", db=db, check=True
            ).stdout
        )
        assert some["pairs"] == some["topics"] == every["topics"]
        taken = rows(database, "SELECT turn_id, run_x, run_y FROM battle_pairs WHERE plan = 'one' ORDER BY position")
        assert all(r["run_x"] < r["run_y"] for r in taken)
        budget = json.loads(
            run_cli(
                "battles", "plan", "--name", "ad", "--method", "adaptive", "--budget", "4", "--json", db=db, check=True
            ).stdout
        )
        assert budget["pairs"] == 4
        again = run_cli("battles", "plan", "--name", "every", "--method", "all", db=db)
        assert again.returncode == 2 and "exists already" in again.stderr
        history = rows(
            database,
            "SELECT item FROM label_history WHERE label_table = 'import' AND item LIKE 'battle plan %' ORDER BY id",
        )
        assert [h["item"] for h in history] == ["battle plan every", "battle plan one", "battle plan ad"]
    finally:
        database.close()


def test_agreement_of_two_sources(store, tmp_path):
    # verdicts by run on the 3 common battles: A, tie, B against A, B, B; the 4th of the first source is not common
    first = [
        {"topic_id": "1", "run_a": "A", "run_b": "B", "winner": "a"},
        {"topic_id": "2", "run_a": "A", "run_b": "B", "winner": "tie"},
        {"topic_id": "3", "run_a": "B", "run_b": "A", "winner": "a"},
        {"topic_id": "4", "run_a": "B", "run_b": "A", "winner": "a"},
    ]
    second = [
        {"topic_id": "1", "run_a": "B", "run_b": "A", "winner": "b"},
        {"topic_id": "2", "run_a": "A", "run_b": "B", "winner": "b"},
        {"topic_id": "3", "run_a": "A", "run_b": "B", "winner": "b"},
    ]
    run_cli("battles", "import", _write(tmp_path / "h.jsonl", first), "--source", "people", db=store, check=True)
    run_cli("battles", "import", _write(tmp_path / "l.jsonl", second), "--source", "llm:judge", db=store, check=True)
    got = json.loads(
        run_cli(
            "battles", "agreement", "--source", "people", "--other", "llm:judge", "--json", db=store, check=True
        ).stdout
    )
    # first: x, tie, y; second: x, y, y -> 2 of 3 agree; margins (1/3, 1/3, 1/3) and (1/3, 2/3, 0):
    # chance 1/9 + 2/9 = 1/3, kappa = (2/3 - 1/3) / (2/3) = 1/2
    assert got == {
        "sources": {"people": "import", "llm:judge": "llm"},
        "common": 3,
        "agree": 2,
        "share": 2 / 3,
        "kappa": 0.5,
    }


def test_elo_of_an_imported_file_follows_the_files_order(store, tmp_path):
    """Issue 34 item 5: Elo is online, so its order matters; an imported file's order is its lines', not its
    topic ids'. The file: topic t2 A beats B, then topic t1 B beats A. By hand (K 4, start 1000): A 1002,
    B 998, then B's expected score 1 / (1 + 10 ** (4 / 400)) = e, B gains 4 (1 - e). Topic-id order (before)
    would play t1 first: B 1002, A 998, then A gains 4 (1 - e) and ends ahead."""
    file = _write(
        tmp_path / "order.jsonl",
        [
            {"topic_id": "t2", "run_a": "A", "run_b": "B", "winner": "a"},
            {"topic_id": "t1", "run_a": "A", "run_b": "B", "winner": "b"},
        ],
    )
    run_cli("battles", "import", file, "--source", "arena", db=store, check=True)
    got = json.loads(
        run_cli("battles", "rank", "--source", "arena", "--json", "--details", "--replicates", "0", db=store).stdout
    )
    e = 1 / (1 + 10 ** (4 / 400))
    assert got["elo"] == pytest.approx({"A": 1002 - 4 * (1 - e), "B": 998 + 4 * (1 - e)}, abs=1e-12)
    assert got["elo"]["B"] > got["elo"]["A"]
