"""`battles import` with per-side features, `rank --control ... --json`, `rank --fragility --json` verified by
ranking again without the battles it names, and `export --layout dpo|hf` read back by Hugging Face datasets."""

from __future__ import annotations

import json

import numpy as np
import pytest

from store import open_db
from store.db import rows
from tests.helpers import run_cli


def _lines(seed=3, n=5, m=1500) -> list[dict]:
    rng = np.random.default_rng(seed)
    true, habit = np.linspace(-0.6, 0.6, n), np.array([6, 1, 4, 2, 5])
    out = []
    for i in range(m):
        a = int(rng.integers(n))
        b = int((a + rng.integers(1, n)) % n)
        fa = {"length": int(rng.poisson(100)), "citations": int(rng.poisson(habit[a]))}
        fb = {"length": int(rng.poisson(100)), "citations": int(rng.poisson(habit[b]))}
        d = (fa["citations"] - fb["citations"]) / max(1, fa["citations"] + fb["citations"])
        p = 1 / (1 + np.exp(-(true[a] - true[b] + 1.5 * d)))
        u = rng.random()
        winner = "tie" if u < 0.05 else "both_bad" if u < 0.08 else ("a" if rng.random() < p else "b")
        out.append(_battle(f"t{i % 50}", a, b, winner, fa, fb))
    return out


def _battle(topic: str, a: int, b: int, winner: str, fa: dict, fb: dict) -> dict:
    """One line of a battles file between runs ``r{a}`` and ``r{b}``, with each side's features."""
    return {"topic_id": topic, "run_a": f"r{a}", "run_b": f"r{b}", "winner": winner, "features_a": fa, "features_b": fb}


def _write(path, lines):
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return str(path)


def test_controls_and_fragility_through_the_command_line(tmp_path):
    lines = _lines()
    db = tmp_path / "s.db"
    run_cli("battles", "import", _write(tmp_path / "b.jsonl", lines), "--source", "arena", db=db, check=True)
    args = ("battles", "rank", "--source", "arena", "--replicates", "200")
    got = json.loads(
        run_cli(*args, "--control", "length", "--control", "citations", "--json", db=db, check=True).stdout
    )
    assert set(got["controls"]) == {"length", "citations"}
    cites = got["controls"]["citations"]
    assert 0 < cites["low"] < cites["coef"] < cites["high"]  # the simulated voters reward citations
    assert got["controls"]["length"]["low"] < 0 < got["controls"]["length"]["high"]  # and not length
    assert set(got["runs"]["r4"]) == {"strength", "low", "high", "win_rate", "battles"}

    plain = json.loads(run_cli(*args, "--fragility", "--json", db=db, check=True).stdout)
    top = plain["fragility"]["top"]
    first = next(iter(plain["runs"]))
    assert top["runs"][0] == first and top["count"] == len(top["battles"]) > 0
    assert top["share"] == pytest.approx(top["count"] / sum(x["winner"] != "both_bad" for x in lines))
    # removing exactly those battles from the file and ranking again changes the top run
    drop = {(b["topic_id"], b["run_a"], b["run_b"], b["occurrence"]) for b in top["battles"]}
    seen: dict = {}
    kept = []
    for x in lines:
        key = (x["topic_id"], x["run_a"], x["run_b"])
        seen[key] = seen.get(key, -1) + 1
        if (*key, seen[key]) not in drop:
            kept.append(x)
    assert len(kept) == len(lines) - top["count"]
    other = tmp_path / "o.db"
    run_cli("battles", "import", _write(tmp_path / "k.jsonl", kept), "--source", "arena", db=other, check=True)
    again = json.loads(run_cli(*args, "--json", db=other, check=True).stdout)
    assert next(iter(again["runs"])) != first


def test_features_on_one_side_only_are_refused_and_nothing_is_written(tmp_path):
    db = tmp_path / "s.db"
    run_cli("init", db=db, check=True)
    bad = {"topic_id": "t1", "run_a": "A", "run_b": "B", "winner": "a", "features_a": {"citations": 2}}
    out = run_cli("battles", "import", _write(tmp_path / "b.jsonl", [bad]), "--source", "x", db=db)
    assert out.returncode == 2 and "b.jsonl:1:" in out.stderr
    assert "features_a and features_b with the same names" in out.stderr and "Traceback" not in out.stderr
    database = open_db(db)
    try:
        assert rows(database, "SELECT * FROM battles") == [] and rows(database, "SELECT * FROM battle_features") == []
    finally:
        database.close()


def test_a_control_without_features_names_the_battle(tmp_path):
    db = tmp_path / "s.db"
    lines = [{"topic_id": "t1", "run_a": "A", "run_b": "B", "winner": w} for w in ("a", "b")]
    run_cli("battles", "import", _write(tmp_path / "b.jsonl", lines), "--source", "x", db=db, check=True)
    out = run_cli("battles", "rank", "--source", "x", "--control", "citations", db=db)
    assert out.returncode == 2 and "battle t1 A vs B: no 'citations'" in out.stderr and "Traceback" not in out.stderr


def test_preference_export_is_read_back_by_hugging_face_datasets(demo_copy, tmp_path):
    datasets = pytest.importorskip("datasets")
    db = demo_copy(tmp_path / "demo.db")
    lines = [
        {"topic_id": "101_1", "run_a": "demo-bm25", "run_b": "demo-dense", "winner": "b"},
        {"topic_id": "101_2", "run_a": "demo-dense", "run_b": "demo-rerank", "winner": "tie"},
        {"topic_id": "101_1", "run_a": "demo-rerank", "run_b": "demo-bm25", "winner": "a"},
        {"topic_id": "101_2", "run_a": "demo-bm25", "run_b": "demo-rerank", "winner": "both_bad"},
        {"topic_id": "elsewhere-1", "run_a": "x", "run_b": "y", "winner": "a"},
    ]
    run_cli("battles", "import", _write(tmp_path / "b.jsonl", lines), "--source", "arena", db=db, check=True)
    out = run_cli(
        "battles",
        "export",
        "--source",
        "arena",
        "--layout",
        "dpo",
        "--out",
        str(tmp_path / "p.jsonl"),
        db=db,
        check=True,
    )
    assert "2 preference pairs" in out.stderr and "1 ties, 1 both_bad, 1 without stored" in out.stderr
    hf = tmp_path / "hf"
    run_cli("battles", "export", "--source", "arena", "--layout", "hf", "--out", str(hf), db=db, check=True)
    for loaded in (
        datasets.load_dataset("json", data_files=str(tmp_path / "p.jsonl"))["train"],
        datasets.load_dataset(str(hf))["train"],
    ):
        assert loaded.num_rows == 2
        first = loaded[0]
        database = open_db(db)
        try:
            text = {
                r["run"]: r["text"] for r in rows(database, "SELECT run, text FROM responses WHERE turn_id = '101_1'")
            }
            query = rows(database, "SELECT utterance, resolved_utterance FROM turns WHERE id = '101_1'")[0]
        finally:
            database.close()
        assert first["chosen"] == text["demo-dense"] and first["rejected"] == text["demo-bm25"]
        assert first["prompt"] == (query["resolved_utterance"] or query["utterance"])
    again = run_cli("battles", "export", "--source", "arena", "--layout", "hf", "--out", str(hf), db=db)
    assert again.returncode == 2 and "not empty" in again.stderr


def _judged(seed: int, driver: str, m: int = 1500) -> list[dict]:
    """Battles of four equal runs whose verdicts follow one feature: ``supported_share`` (a careful assessor) or
    ``citations`` (a judge that counts them); the two features are drawn independently."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(m):
        a = int(rng.integers(4))
        b = int((a + rng.integers(1, 4)) % 4)
        fa, fb = (
            {"length": int(rng.poisson(100)), "citations": int(rng.poisson(3)), "supported_share": float(rng.random())}
            for _ in range(2)
        )
        diff = bc_diff(fa[driver], fb[driver])
        p = 1 / (1 + np.exp(-3 * diff))
        winner = "a" if rng.random() < p else "b"
        out.append(_battle(f"t{i}", a, b, winner, fa, fb))
    return out


def bc_diff(x: float, y: float) -> float:
    return 0.0 if x + y == 0 else (x - y) / (x + y)


def test_sway_tells_supported_citations_from_citation_counts_per_source(tmp_path):
    db = tmp_path / "s.db"
    run_cli(
        "battles",
        "import",
        _write(tmp_path / "h.jsonl", _judged(1, "supported_share")),
        "--source",
        "nia",
        db=db,
        check=True,
    )
    run_cli(
        "battles",
        "import",
        _write(tmp_path / "l.jsonl", _judged(2, "citations")),
        "--source",
        "llm:judge",
        db=db,
        check=True,
    )
    got = json.loads(run_cli("battles", "sway", "--replicates", "300", "--json", db=db, check=True).stdout)
    assert got["controls"] == ["citations", "supported_share", "length"]
    human, judge = got["sources"]["nia"], got["sources"]["llm:judge"]
    assert judge["kind"] == "llm" and human["battles"] == judge["battles"] == 1500
    assert human["controls"]["supported_share"]["low"] > 0.3  # the assessor follows support
    assert human["controls"]["citations"]["low"] < 0 < human["controls"]["citations"]["high"]
    assert judge["controls"]["citations"]["low"] > 0.3  # the judge counts citations
    assert judge["controls"]["supported_share"]["low"] < 0 < judge["controls"]["supported_share"]["high"]
    for s in (human, judge):
        assert s["controls"]["length"]["low"] < 0 < s["controls"]["length"]["high"] and s["left_out"] == {}
        assert 0.4 < s["position"]["left_share"] < 0.6
    table = run_cli("battles", "sway", "--source", "llm:judge", "--replicates", "50", db=db, check=True).stdout
    assert table.splitlines()[0].split() == [
        "source",
        "kind",
        "battles",
        "citations",
        "supported_share",
        "length",
        "left_chosen",
    ]
    assert "llm:judge" in table and "nia" not in table


def test_controls_read_from_the_stored_answers_equal_statsmodels(demo_copy, tmp_path):
    """Battles without features_a / features_b take the stored answers' length (the demo's cite nothing)."""
    import statsmodels.api as sm

    db = demo_copy(tmp_path / "demo.db")
    database = open_db(db)
    try:
        answers = rows(database, "SELECT run, turn_id, text FROM responses ORDER BY turn_id, run")
    finally:
        database.close()
    features = {(a["run"], a["turn_id"]): len(a["text"].split()) for a in answers}
    turns = sorted({t for _, t in features})
    runs = sorted({r for r, _ in features})
    rng = np.random.default_rng(5)
    lines = []
    for _ in range(400):
        t = turns[rng.integers(len(turns))]
        a, b = rng.choice(runs, 2, replace=False)
        lines.append({"topic_id": t, "run_a": str(a), "run_b": str(b), "winner": str(rng.choice(["a", "b", "tie"]))})
    run_cli("battles", "import", _write(tmp_path / "b.jsonl", lines), "--source", "arena", db=db, check=True)
    args = ("battles", "rank", "--source", "arena", "--replicates", "0", "--json")
    got = json.loads(run_cli(*args, "--control", "length", db=db, check=True).stdout)
    d = np.array(
        [[bc_diff(features[(x["run_a"], x["topic_id"])], features[(x["run_b"], x["topic_id"])])] for x in lines]
    )
    z = (d - d.mean(0)) / d.std(0)
    design = np.zeros((len(lines), len(runs) - 1 + 1))
    for j, run in enumerate(runs[1:]):
        design[:, j] = [(x["run_a"] == run) - (x["run_b"] == run) for x in lines]
    design[:, len(runs) - 1 :] = z
    y = np.array([{"a": 1.0, "b": 0.0, "tie": 0.5}[x["winner"]] for x in lines])
    res = sm.GLM(y, design, family=sm.families.Binomial()).fit(tol=1e-14)
    assert got["controls"]["length"]["coef"] == pytest.approx(res.params[-1], abs=1e-6)
    strengths = np.concatenate([[0.0], res.params[: len(runs) - 1]])
    for run, s in zip(runs, strengths - strengths.mean()):
        assert got["runs"][run]["strength"] == pytest.approx(s, abs=1e-6)


def test_fragility_of_every_adjacent_pair(tmp_path):
    db = tmp_path / "s.db"
    run_cli("battles", "import", _write(tmp_path / "b.jsonl", _lines(m=800)), "--source", "arena", db=db, check=True)
    got = json.loads(
        run_cli(
            "battles",
            "rank",
            "--source",
            "arena",
            "--replicates",
            "0",
            "--fragility",
            "--adjacent",
            "--json",
            db=db,
            check=True,
        ).stdout
    )
    order = list(got["runs"])
    pairs = got["fragility"]["pairs"]
    assert len(pairs) == len(order) - 1 and pairs[0] == got["fragility"]["top"]
    for (first, second), entry in zip(zip(order, order[1:]), pairs):
        assert entry is None or entry["runs"] == [first, second]
    alone = run_cli("battles", "rank", "--source", "arena", "--adjacent", db=db)
    assert alone.returncode == 2 and "--fragility with it" in alone.stderr
