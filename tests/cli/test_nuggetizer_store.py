"""The nuggetizer layouts in and out of the store (``import`` / ``export nuggetizer-nuggets`` and
``nuggetizer-assignments``) on both engines: round trips, what the store holds, unknown nuggets reported,
malformed files and missing responses refused with exit 2 and the store unchanged, and the scores of the
imported labels equal to the file form of ``score nuggets`` on the same files."""

from __future__ import annotations

import json

import pytest

from assess.formats.nuggetizer import parse_nuggetizer_assignments, parse_nuggetizer_nuggets
from assess.tasks import Task
from store import labels, open_db
from tests.helpers import run_cli, snapshot

TOPICS = [
    {
        "number": 5,
        "title": "tea",
        "ptkb": {"1": "I like tea."},
        "turns": [
            {"turn_id": 1, "utterance": "u1", "response": "r1", "ptkb_provenance": [1]},
            {"turn_id": 2, "utterance": "u2", "response": "r2", "ptkb_provenance": []},
            {"turn_id": 3, "utterance": "u3", "response": "r3", "ptkb_provenance": []},
        ],
    }
]
RESPONSES = {"5_1": {"A": "a1", "B": "b1"}, "5_2": {"A": "a2", "B": "b2"}, "5_3": {"A": "a3"}}

# two qids in a non-store order, text with quotes and non-ASCII, both importances
NUGGETS = [
    {
        "qid": "5_2",
        "query": "which tea?",
        "nuggets": [
            {"text": "Grüner Tee is green", "importance": "okay"},
            {"text": 'It says "hi"', "importance": "vital"},
        ],
    },
    {
        "qid": "5_1",
        "nuggets": [
            {"text": "Tea has caffeine", "importance": "vital"},
            {"text": "Tea is old", "importance": "okay"},
            {"text": "Tea grows in Assam", "importance": "vital"},
        ],
    },
]


def _assigned(run: str, qid: str, levels: dict[str, str]) -> dict:
    by_text = {n["text"]: n["importance"] for record in NUGGETS for n in record["nuggets"]}
    return {
        "qid": qid,
        "run_id": run,
        "answer_text": f"answer of {run}",
        "nuggets": [{"text": t, "importance": by_text[t], "assignment": a} for t, a in levels.items()],
    }


ASSIGNMENTS = [
    _assigned(
        "A",
        "5_1",
        {"Tea is old": "support", "Tea has caffeine": "partial_support", "Tea grows in Assam": "not_support"},
    ),
    _assigned("A", "5_2", {"Grüner Tee is green": "support", 'It says "hi"': "support"}),
    _assigned("B", "5_1", {"Tea has caffeine": "support", "Tea is old": "not_support"}),  # [3] unjudged
]


def jsonl(path, records) -> str:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return str(path)


def cli_json(*args, db) -> dict:
    result = run_cli(*args, "--json", db=db)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def base(store_target, tmp_path):
    """A store with conversation 5 and the plain responses of runs A and B."""
    (tmp_path / "topics.json").write_text(json.dumps(TOPICS))
    (tmp_path / "responses.json").write_text(json.dumps(RESPONSES))
    run_cli("import", "topics", tmp_path / "topics.json", db=store_target, check=True)
    run_cli("import", "responses", tmp_path / "responses.json", db=store_target, check=True)
    return store_target


def records_of_nuggets(path) -> set:
    return {(n.qid, n.text, n.importance) for n in parse_nuggetizer_nuggets(path)}


def records_of_assignments(path) -> set:
    return {(a.run, a.qid, a.text, a.importance, a.support) for a in parse_nuggetizer_assignments(path)}


def test_nuggets_round_trip_and_importance_labels(base, tmp_path):
    path = jsonl(tmp_path / "nuggets.jsonl", NUGGETS)
    summary = cli_json("import", "nuggetizer-nuggets", path, "--source", "gold", db=base)
    assert summary == {"nuggets": 5, "turns": 2, "vital": 3, "okay": 2, "source": "gold"}
    db = open_db(base)
    stored = {(turn, int(nid)): value for (turn, nid), value in labels.values(db, Task.IMPORTANCE, "gold").items()}
    from store.nuggets import gold

    texts = {
        n["id"]: (n["turn_id"], n["key"], n["text"]) for t in ("5_1", "5_2") for n in gold.turn_nuggets(db, "gold", t)
    }
    db.close()
    assert sorted((texts[nid], v) for (_, nid), v in stored.items()) == [
        (("5_1", "[1]", "Tea has caffeine"), 1),
        (("5_1", "[2]", "Tea is old"), 0),
        (("5_1", "[3]", "Tea grows in Assam"), 1),
        (("5_2", "[1]", "Grüner Tee is green"), 0),
        (("5_2", "[2]", 'It says "hi"'), 1),
    ]
    out = tmp_path / "out.jsonl"
    proc = run_cli("export", "nuggetizer-nuggets", "--source", "gold", "--out", out, db=base, check=True)
    assert proc.stdout.strip() == f"{out}: wrote records 2, nuggets 5, without_importance 0"
    assert records_of_nuggets(out) == records_of_nuggets(path)
    # the layout's order: turns in conversation order, nuggets in their list's order; no query kept
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["qid"] for r in lines] == ["5_1", "5_2"] and "query" not in lines[1]
    assert lines[1]["nuggets"] == NUGGETS[0]["nuggets"] and lines[0]["nuggets"] == NUGGETS[1]["nuggets"]
    # importing the export again keeps the same nuggets and importance labels
    run_cli("import", "nuggetizer-nuggets", out, "--source", "gold", db=base, check=True)
    again = tmp_path / "again.jsonl"
    run_cli("export", "nuggetizer-nuggets", "--source", "gold", "--out", again, db=base, check=True)
    assert again.read_text(encoding="utf-8") == out.read_text(encoding="utf-8")


def test_assignments_round_trip_labels_and_scores(base, tmp_path):
    nuggets = jsonl(tmp_path / "nuggets.jsonl", NUGGETS)
    assignments = jsonl(tmp_path / "assignments.jsonl", ASSIGNMENTS)
    run_cli("import", "nuggetizer-nuggets", nuggets, "--source", "gold", db=base, check=True)
    summary = cli_json(
        "import", "nuggetizer-assignments", assignments, "--source", "llm:nz", "--nugget-source", "gold", db=base
    )
    assert summary == {
        "labels": 7,
        "support": 4,
        "partial_support": 1,
        "not_support": 2,
        "runs": 2,
        "unknown_nuggets": 0,
        "importance_added": 0,
        "source": "llm:nz",
    }
    db = open_db(base)
    graded = labels.values(db, Task.NTR_SUPPORT, "llm:nz")
    db.close()
    assert sorted(graded.values()) == [0, 0, 1, 2, 2, 2, 2] and {run for _, _, run in graded} == {"A", "B"}
    out = tmp_path / "out.jsonl"
    run_cli("export", "nuggetizer-assignments", "--source", "llm:nz", "--out", out, db=base, check=True)
    assert records_of_assignments(out) == records_of_assignments(assignments)
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [(r["run_id"], r["qid"]) for r in lines] == [("A", "5_1"), ("A", "5_2"), ("B", "5_1")]
    assert [n["text"] for n in lines[0]["nuggets"]] == ["Tea has caffeine", "Tea is old", "Tea grows in Assam"]
    only_b = tmp_path / "b.jsonl"
    run_cli(
        "export", "nuggetizer-assignments", "--source", "llm:nz", "--run", "B", "--out", only_b, db=base, check=True
    )
    assert records_of_assignments(only_b) == {r for r in records_of_assignments(assignments) if r[0] == "B"}

    # the store form scores the imported labels as the file form scores the files
    stored = cli_json("score", "nuggets", "--ntr-source", "llm:nz", db=base)
    files = run_cli("score", "nuggets", "--gold", nuggets, "--assignments", assignments, "--json")
    assert files.returncode == 0, files.stderr
    file_scores = json.loads(files.stdout)["nugget_scores"]
    from_files = file_scores["runs"]
    assert stored["importance_source"] == "gold" and stored["nugget_scores"]["notes"]["without_importance"] == 0
    # B has no record for gold qid 5_2: the file form scores it 0 and names it (issue 22 item 4); the store
    # form scores the turns the source labelled. Every turn both score agrees.
    assert file_scores["missing_qids"] == {"B": ["5_2"]}
    assert set(from_files["B"]["original"]["per_turn"]["5_2"].values()) == {0.0}
    for run in ("A", "B"):
        got, want = stored["nugget_scores"]["runs"][run]["original"], from_files[run]["original"]
        if run == "A":
            assert got["mean"] == pytest.approx(want["mean"]) and set(got["per_turn"]) == set(want["per_turn"])
        assert set(got["per_turn"]) == set(want["per_turn"]) - set(file_scores["missing_qids"].get(run, ()))
        for turn, scores in got["per_turn"].items():
            assert scores == pytest.approx(want["per_turn"][turn])
    # hand-worked: B on 5_1 (vital [1] support, okay [2] none, vital [3] unjudged = none)
    b = stored["nugget_scores"]["runs"]["B"]["original"]["per_turn"]["5_1"]
    assert b["all_strict"] == pytest.approx(1 / 3) and b["vital_strict"] == pytest.approx(1 / 2)
    assert b["weighted_strict"] == pytest.approx(1 / 2.5)


def test_unknown_nuggets_are_reported_not_stored_and_importance_is_added(base, tmp_path):
    # gold nuggets from a CONE-RAG file: no importance labels yet
    (tmp_path / "cone.json").write_text(
        json.dumps({"5_1": {"[1]": {"text": "Tea has caffeine", "relevance": "2"}, "[2]": {"text": "Tea is old"}}})
    )
    run_cli("import", "nuggets", tmp_path / "cone.json", "--source", "cone", db=base, check=True)
    records = [
        {
            "qid": "5_1",
            "run_id": "A",
            "nuggets": [
                {"text": "Tea has caffeine", "importance": "vital", "assignment": "support"},
                {"text": "Tea is from Mars", "importance": "okay", "assignment": "support"},
            ],
        },
        {
            "qid": "5_1",
            "run_id": "B",
            "nuggets": [{"text": "Tea is old", "importance": "okay", "assignment": "not_support"}],
        },
    ]
    path = jsonl(tmp_path / "a.jsonl", records)
    result = run_cli("import", "nuggetizer-assignments", path, "--source", "amy", "--nugget-source", "cone", db=base)
    assert result.returncode == 0, result.stderr
    assert "unknown_nuggets 1, importance_added 2" in result.stdout
    assert result.stderr == (
        f"warning: 1 assigned nugget(s) are not nuggets of cone for their qid (or have another importance there) "
        f"and were not stored (first: {path}:1 qid 5_1 'Tea is from Mars')\n"
    )
    db = open_db(base)
    assert sorted(labels.values(db, Task.NTR_SUPPORT, "amy").values()) == [0, 2]
    assert sorted(labels.values(db, Task.IMPORTANCE, "cone").values()) == [0, 1]
    db.close()
    # a nugget whose importance differs from the set's label is one of another set: reported, not stored
    records[1]["nuggets"][0]["importance"] = "vital"
    other = jsonl(tmp_path / "b.jsonl", records[1:])
    again = cli_json("import", "nuggetizer-assignments", other, "--source", "amy2", "--nugget-source", "cone", db=base)
    assert again["labels"] == 0 and again["unknown_nuggets"] == 1 and "b.jsonl:1 qid 5_1" in again["warnings"][0]


@pytest.mark.parametrize(
    ("kind", "records", "extra", "expected"),
    [
        (
            "nuggetizer-nuggets",
            [NUGGETS[0], {"qid": "5_1", "nuggets": [{"text": "x", "importance": "high"}]}],
            [],
            ":2:",
        ),
        ("nuggetizer-nuggets", [{"qid": "9_9", "nuggets": [{"text": "x", "importance": "okay"}]}], [], "9_9"),
        ("nuggetizer-nuggets", ["not an object"], [], ":1:"),
        (
            "nuggetizer-assignments",
            [ASSIGNMENTS[0], {**ASSIGNMENTS[1], "nuggets": [{"text": "x", "importance": "okay", "assignment": "yes"}]}],
            ["--source", "s", "--nugget-source", "gold"],
            ":2:",
        ),
        (
            "nuggetizer-assignments",
            [ASSIGNMENTS[0], {**ASSIGNMENTS[1], "run_id": "C"}],
            ["--source", "s", "--nugget-source", "gold"],
            "run 'C' has no responses",
        ),
        (
            "nuggetizer-assignments",
            [{**ASSIGNMENTS[0], "run_id": "B", "qid": "5_3"}],
            ["--source", "s", "--nugget-source", "gold"],
            "no response to turn 5_3",
        ),
        ("nuggetizer-assignments", ASSIGNMENTS, ["--nugget-source", "gold"], "needs --source NAME"),
        (
            "nuggetizer-assignments",
            ASSIGNMENTS,
            ["--source", "s", "--nugget-source", "nope"],
            "no nuggets of source 'nope'",
        ),
    ],
)
def test_malformed_or_unplaceable_files_are_refused(base, tmp_path, kind, records, extra, expected):
    run_cli(
        "import", "nuggetizer-nuggets", jsonl(tmp_path / "gold.jsonl", NUGGETS), "--source", "gold", db=base, check=True
    )
    path = tmp_path / "bad.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    before = snapshot(base)
    result = run_cli("import", kind, path, *extra, db=base)
    assert result.returncode == 2 and result.stdout == "", result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert expected in result.stderr
    if expected.startswith(":"):
        assert f"{path}{expected}" in result.stderr  # the file and its line
    assert snapshot(base) == before


def test_refused_exports(base, tmp_path):
    run_cli(
        "import", "nuggetizer-nuggets", jsonl(tmp_path / "gold.jsonl", NUGGETS), "--source", "gold", db=base, check=True
    )
    out = tmp_path / "x.jsonl"
    for args, message in [
        (["nuggetizer-nuggets", "--source", "nope", "--out", out], "no nuggets of source 'nope'"),
        (["nuggetizer-nuggets", "--source", "gold"], "needs --out FILE"),
        (["nuggetizer-nuggets", "--source", "gold", "--dedup", "--out", out], "no de-duplicated nuggets"),
        (["nuggetizer-assignments", "--source", "nobody", "--out", out], "no NtR labels of source 'nobody'"),
        (["nuggetizer-nuggets", "--source", "gold", "--nugget-source", "gold", "--out", out], "--nugget-source is for"),
    ]:
        result = run_cli("export", *args, db=base)
        assert result.returncode == 2 and message in result.stderr and result.stderr.count("\n") == 1, result.stderr
        assert not out.exists()
