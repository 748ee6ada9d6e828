"""Graded nugget support: AutoNuggetizer All / Vital / Weighted (strict and lax), NtR recall at both
thresholds, the nuggetizer layouts (round trips) and `score nuggets --assignments` end to end."""

from __future__ import annotations

import json
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assess.errors import AssessError
from assess.formats.nuggetizer import (
    format_nuggetizer_assignments,
    format_nuggetizer_nuggets,
    looks_like_nuggetizer,
    parse_nuggetizer_assignments,
    parse_nuggetizer_nuggets,
)
from assess.measures.nugget_recall import (
    LAX,
    SCORE_NAMES,
    STRICT,
    UNJUDGED_DEFAULT,
    ntr_run,
    ntr_turn,
    nugget_scores_run,
    nugget_scores_turn,
    support_level,
)
from tests.cli.test_cli_score import run_cli

# Turn t1: a vital support, b vital partial, c okay support, d okay not supported.
# Turn t2: e okay partial, f vital unjudged.
IMPORTANCE = {
    "t1": {"a": "vital", "b": "vital", "c": "okay", "d": "okay"},
    "t2": {"e": "okay", "f": "vital"},
}
SUPPORT = {"t1": {"a": 2, "b": 1, "c": 2, "d": 0}, "t2": {"e": 1}}


def test_turn_scores_by_hand():
    # strict s = 1,0,1,0; lax s = 1,.5,1,0; weights 1,1,.5,.5 (sum 3)
    assert nugget_scores_turn(IMPORTANCE["t1"], SUPPORT["t1"]) == pytest.approx(
        {
            "all_strict": 2 / 4,
            "all_lax": 2.5 / 4,
            "vital_strict": 1 / 2,
            "vital_lax": 1.5 / 2,
            "weighted_strict": (1 + 0.5) / 3,
            "weighted_lax": (1 + 0.5 + 0.5) / 3,
        }
    )
    # t2, f unjudged counts as not supported (the default): weights e .5, f 1
    assert UNJUDGED_DEFAULT == "no"
    assert nugget_scores_turn(IMPORTANCE["t2"], SUPPORT["t2"]) == pytest.approx(
        {
            "all_strict": 0.0,
            "all_lax": 0.5 / 2,
            "vital_strict": 0.0,
            "vital_lax": 0.0,
            "weighted_strict": 0.0,
            "weighted_lax": 0.5 * 0.5 / 1.5,
        }
    )
    # f left out: no vital nugget remains, Vital is 0.0 as nuggetizer's calculate_nugget_scores
    assert nugget_scores_turn(IMPORTANCE["t2"], SUPPORT["t2"], unjudged="ignore") == pytest.approx(
        {
            "all_strict": 0.0,
            "all_lax": 0.5,
            "vital_strict": 0.0,
            "vital_lax": 0.0,
            "weighted_strict": 0.0,
            "weighted_lax": 0.5,
        }
    )
    assert nugget_scores_turn({}, {"x": 2}) is None  # no gold nugget: the turn is skipped
    assert nugget_scores_turn({"x": "vital"}, {}, unjudged="ignore") is None


def test_run_means_and_ntr_thresholds_by_hand():
    run = nugget_scores_run(SUPPORT, IMPORTANCE)
    assert run["n"] == 2
    assert run["mean"] == pytest.approx(
        {
            "all_strict": (0.5 + 0) / 2,
            "all_lax": (0.625 + 0.25) / 2,
            "vital_strict": (0.5 + 0) / 2,
            "vital_lax": (0.75 + 0) / 2,
            "weighted_strict": (0.5 + 0) / 2,
            "weighted_lax": (2 / 3 + 1 / 6) / 2,
        }
    )
    gold = {t: set(n) for t, n in IMPORTANCE.items()}
    # NtR recall, binary: strict = support only, lax = support or partial support
    assert ntr_run(SUPPORT, gold, threshold=STRICT)["per_turn"] == pytest.approx({"t1": 2 / 4, "t2": 0 / 2})
    assert ntr_run(SUPPORT, gold, threshold=LAX)["per_turn"] == pytest.approx({"t1": 3 / 4, "t2": 1 / 2})
    assert ntr_run(SUPPORT, gold, threshold=LAX, unjudged="ignore")["per_turn"] == pytest.approx(
        {"t1": 3 / 4, "t2": 1.0}
    )
    empty = nugget_scores_run({}, IMPORTANCE)
    assert empty["n"] == 0 and set(empty["mean"].values()) == {None}


def test_yes_no_labels_are_support_and_no_support():
    assert (support_level(True), support_level(False), support_level(1)) == (2, 0, 1)
    with pytest.raises(AssessError, match="0, 1, 2"):
        support_level(3)
    yes_no = {"a": True, "b": False, "c": True}
    assert ntr_turn({"a", "b", "c", "d"}, yes_no, threshold=STRICT) == ntr_turn(
        {"a", "b", "c", "d"}, yes_no, threshold=LAX
    )
    scores = nugget_scores_turn({"a": "vital", "b": "okay", "c": "okay", "d": "vital"}, yes_no)
    assert scores["all_strict"] == scores["all_lax"] == 0.5
    assert scores["weighted_strict"] == scores["weighted_lax"] == pytest.approx(1.5 / 3)


LEVELS = st.sampled_from([0, 1, 2, True, False])


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.sampled_from("abcdefgh"), st.sampled_from(["vital", "okay"]), max_size=8),
    st.dictionaries(st.sampled_from("abcdefghij"), LEVELS, max_size=10),
    st.sampled_from(["no", "ignore"]),
)
def test_scores_are_bounded_and_strict_never_exceeds_lax(importance, support, unjudged):
    scores = nugget_scores_turn(importance, support, unjudged=unjudged)
    if scores is None:
        assert not importance or (unjudged == "ignore" and not set(importance) & set(support))
        return
    assert all(0.0 <= scores[name] <= 1.0 for name in SCORE_NAMES)
    for kind in ("all", "vital", "weighted"):
        assert scores[f"{kind}_strict"] <= scores[f"{kind}_lax"] + 1e-12
    # strict All is NtR recall at the strict threshold (same skip and unjudged rules)
    assert scores["all_strict"] == pytest.approx(ntr_turn(set(importance), support, unjudged=unjudged))


# ------------------------------------------------------------------------------- nuggetizer layouts

NUGGETS = [
    ("q1", "Python is a programming language", "vital"),
    ("q1", "Python was created by Guido van Rossum", "okay"),
    ("q2", "Un café — «noir»", "vital"),
]


def test_nugget_layout_round_trip(tmp_path):
    path = tmp_path / "nuggets.jsonl"
    path.write_text("\n".join(format_nuggetizer_nuggets(NUGGETS, {"q1": "What is Python?"})) + "\n")
    first = json.loads(path.read_text().splitlines()[0])
    assert first == {
        "qid": "q1",
        "query": "What is Python?",
        "nuggets": [
            {"text": "Python is a programming language", "importance": "vital"},
            {"text": "Python was created by Guido van Rossum", "importance": "okay"},
        ],
    }
    records = parse_nuggetizer_nuggets(path)
    assert [(r.qid, r.key, r.text, r.importance, r.line) for r in records] == [
        ("q1", "[1]", NUGGETS[0][1], "vital", 1),
        ("q1", "[2]", NUGGETS[1][1], "okay", 1),
        ("q2", "[1]", NUGGETS[2][1], "vital", 2),
    ]
    assert [(r.qid, r.text, r.importance) for r in records] == NUGGETS
    assert looks_like_nuggetizer(path)


ROWS = [
    ("run-1", "q1", "Python is a programming language", "vital", 2),
    ("run-1", "q1", "Python was created by Guido van Rossum", "okay", 1),
    ("run-1", "q2", "Un café — «noir»", "vital", 0),
    ("run-2", "q1", "Python is a programming language", "vital", 0),
]


def test_assignment_layout_round_trip(tmp_path):
    path = tmp_path / "assign.jsonl"
    path.write_text("\n".join(format_nuggetizer_assignments(ROWS)) + "\n")
    assert json.loads(path.read_text().splitlines()[0])["nuggets"][1] == {
        "text": "Python was created by Guido van Rossum",
        "importance": "okay",
        "assignment": "partial_support",
    }
    records = parse_nuggetizer_assignments(path)
    assert [(r.run, r.qid, r.text, r.importance, r.support) for r in records] == ROWS
    assert [r.key for r in records] == ["[1]", "[2]", "[1]", "[1]"]


def test_assignment_without_run_id_is_named_after_the_file(tmp_path):
    path = tmp_path / "my-run.jsonl"
    path.write_text(
        json.dumps({"qid": "q1", "nuggets": [{"text": "x", "importance": "okay", "assignment": "support"}]})
    )
    assert [(r.run, r.support) for r in parse_nuggetizer_assignments(path)] == [("my-run", 2)]


TEXT = st.text(alphabet=string.ascii_letters + " éü—", min_size=1, max_size=20).filter(str.strip)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["r1", "r2"]),
            st.sampled_from(["0_1", "0_2", "12-1_3"]),
            TEXT,
            st.sampled_from(["vital", "okay"]),
            st.sampled_from([0, 1, 2]),
        ),
        max_size=12,
        unique_by=lambda r: (r[0], r[1], r[2]),
    ).filter(bool)
)
def test_assignment_round_trip_property(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("rt") / "a.jsonl"
    path.write_text("\n".join(format_nuggetizer_assignments(rows)) + "\n", encoding="utf-8")
    records = parse_nuggetizer_assignments(path)
    again = [(r.run, r.qid, r.text, r.importance, r.support) for r in records]
    assert sorted(again) == sorted(rows)
    rewritten = "\n".join(format_nuggetizer_assignments(again)) + "\n"
    assert rewritten == path.read_text(encoding="utf-8")


# ------------------------------------------------------------------------------- the command line


def _write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_score_nuggets_assignments_end_to_end(tmp_path):
    gold = _write_jsonl(
        tmp_path / "nuggets.jsonl",
        [
            {"qid": "t1", "nuggets": [{"text": t, "importance": i} for t, i in IMPORTANCE["t1"].items()]},
            {"qid": "t2", "nuggets": [{"text": t, "importance": i} for t, i in IMPORTANCE["t2"].items()]},
        ],
    )
    names = {2: "support", 1: "partial_support", 0: "not_support"}
    assign = _write_jsonl(
        tmp_path / "assign.jsonl",
        [
            {
                "qid": t,
                "run_id": "runA",
                "nuggets": [
                    {"text": k, "importance": IMPORTANCE[t][k], "assignment": names[v]} for k, v in SUPPORT[t].items()
                ],
            }
            for t in ("t1", "t2")
        ],
    )
    result = run_cli("score", "nuggets", "--gold", str(gold), "--assignments", str(assign), "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    row = out["nugget_scores"]["runs"]["runA"]["original"]
    assert row["n_turns"] == 2
    assert row["mean"]["weighted_lax"] == pytest.approx((2 / 3 + 1 / 6) / 2)
    assert row["mean"]["vital_strict"] == pytest.approx(0.25)
    assert row["mean"]["ntr_recall_strict"] == pytest.approx((0.5 + 0) / 2)
    assert row["mean"]["ntr_recall_lax"] == pytest.approx((0.75 + 0.5) / 2)
    assert row["per_turn"]["t1"]["all_lax"] == pytest.approx(0.625)
    # f is unjudged: reported on stderr and in the JSON, counted as not supported
    assert out["warnings"] == [
        "1 gold nugget(s) have no assignment in turns their run was assessed on and count as not supported"
    ]
    assert result.stderr.startswith("warning: 1 gold nugget(s) have no assignment")
    text = run_cli("score", "nuggets", "--gold", str(gold), "--assignments", str(assign), "--per-turn")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].startswith("TREC RAG nugget scores (strict: support only")
    assert lines[1].split() == ["run", "gold", "turns", *SCORE_NAMES, "ntr_recall_strict", "ntr_recall_lax"]
    assert lines[2].split()[:4] == ["runA", "original", "2", "0.250000"]
    assert any(line.split()[:3] == ["runA", "original", "t1"] and "0.625000" in line for line in lines)
    # without --gold each record is scored against its own list (f is then not a nugget of t2)
    alone = json.loads(run_cli("score", "nuggets", "--assignments", str(assign), "--json").stdout)
    assert alone["nugget_scores"]["runs"]["runA"]["original"]["per_turn"]["t2"]["all_lax"] == 0.5
    assert "warnings" not in alone


def test_an_empty_nuggets_list_scores_zero_as_nuggetizer(tmp_path):
    """Issue 22 item 4: castorini/nuggetizer src/nuggetizer/core/metrics.py, calculate_nugget_scores, gives a
    record whose nuggets list is empty 0.0 on every score (each `... if nuggets else 0.0`) and
    calculate_global_metrics averages over every record. Worked by hand: q1 supports both its nuggets (1 on
    every score), q2 lists none (0): the run's mean is 0.5, not 1.0 (the record was dropped before)."""
    assign = _write_jsonl(
        tmp_path / "assign.jsonl",
        [
            {
                "qid": "q1",
                "run_id": "r",
                "nuggets": [
                    {"text": "A", "importance": "vital", "assignment": "support"},
                    {"text": "B", "importance": "okay", "assignment": "support"},
                ],
            },
            {"qid": "q2", "run_id": "r", "nuggets": []},
        ],
    )
    result = run_cli("score", "nuggets", "--assignments", str(assign), "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    row = out["nugget_scores"]["runs"]["r"]["original"]
    assert row["n_turns"] == 2
    assert row["mean"] == pytest.approx(dict.fromkeys([*SCORE_NAMES, "ntr_recall_strict", "ntr_recall_lax"], 0.5))
    assert row["per_turn"]["q2"] == pytest.approx(dict.fromkeys(row["per_turn"]["q2"], 0.0))
    assert out["nugget_scores"]["empty_records"] == {"r": ["q2"]}
    assert "1 assignment record(s) have an empty nuggets list and score 0" in result.stderr
    assert any("empty nuggets list" in w for w in out["warnings"])


def test_gold_qids_without_a_record_score_zero_and_are_reported(tmp_path):
    """Issue 22 item 4, with --gold: a gold qid the run has no record for (and one whose record lists no
    nugget) is a response that supports nothing: 0 on every score, whatever --unjudged, named in the output.
    By hand: q1 all supported (1), q2 empty record (0), q3 missing (0): mean 1/3."""
    gold = _write_jsonl(
        tmp_path / "gold.jsonl",
        [
            {"qid": "q1", "nuggets": [{"text": "A", "importance": "vital"}, {"text": "B", "importance": "okay"}]},
            {"qid": "q2", "nuggets": [{"text": "C", "importance": "vital"}]},
            {"qid": "q3", "nuggets": [{"text": "D", "importance": "okay"}]},
        ],
    )
    assign = _write_jsonl(
        tmp_path / "assign.jsonl",
        [
            {
                "qid": "q1",
                "run_id": "r",
                "nuggets": [
                    {"text": "A", "importance": "vital", "assignment": "support"},
                    {"text": "B", "importance": "okay", "assignment": "support"},
                ],
            },
            {"qid": "q2", "run_id": "r", "nuggets": []},
        ],
    )
    for unjudged in ("no", "ignore"):
        result = run_cli(
            "score", "nuggets", "--gold", str(gold), "--assignments", str(assign), "--unjudged", unjudged, "--json"
        )
        assert result.returncode == 0, result.stderr
        out = json.loads(result.stdout)
        row = out["nugget_scores"]["runs"]["r"]["original"]
        assert row["n_turns"] == 3, unjudged
        assert row["mean"]["all_strict"] == pytest.approx(1 / 3), unjudged
        assert row["mean"]["ntr_recall_lax"] == pytest.approx(1 / 3), unjudged
        assert row["per_turn"]["q3"]["weighted_lax"] == 0.0
        assert out["nugget_scores"]["missing_qids"] == {"r": ["q3"]}
        assert out["nugget_scores"]["empty_records"] == {"r": ["q2"]}
        assert "have no assignment record and score 0" in result.stderr
        assert not any("have no assignment in turns" in w for w in out["warnings"])  # not counted twice


def test_yes_no_output_unchanged_when_fully_judged(tmp_path):
    """Yes/no labels on every gold nugget: the output is what it was before graded support existed."""
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps({"1_1": {"[1]": {"text": "a"}, "[2]": {"text": "b"}}}))
    labels = tmp_path / "labels.tsv"
    labels.write_text("1_1_1_1_runA\t1\n1_1_1_2_runA\t0\n")
    result = run_cli("score", "nuggets", "--gold", str(gold), "--matches", str(labels), "--json")
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout == (
        f'{{"gold": "{gold}", "gold_dedup": null, "ntr_recall": {{"unjudged": "no", "runs": {{"runA": '
        '{"original": {"mean": 0.5, "n_turns": 1, "per_turn": {"1_1": 0.5}}}}}}\n'
    )


def test_a_missing_turn_scores_zero_with_matches_as_with_assignments(tmp_path):
    """Issue 34 item 5: run B has no labels (and no assignment record) for turn 1_2, which run A was judged on.
    trec_eval -c's rule, now for both inputs: a turn of the evaluated set the run lacks scores 0. By hand: A
    (1/2 + 1) / 2 = 3/4; B (1 + 0) / 2 = 1/2 (before, --matches skipped the turn: B 1.0 over one turn)."""
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps({"1_1": {"[1]": {"text": "A"}, "[2]": {"text": "B"}}, "1_2": {"[1]": {"text": "C"}}}))
    labels = tmp_path / "labels.tsv"
    labels.write_text("1_1_1_1_runA\t1\n1_1_1_2_runA\t0\n1_1_2_1_runA\t1\n1_1_1_1_runB\t1\n1_1_1_2_runB\t1\n")
    support = {True: "support", False: "not_support"}
    assign = _write_jsonl(
        tmp_path / "assign.jsonl",
        [
            {"qid": q, "run_id": run, "nuggets": [{"text": t, "importance": "vital", "assignment": support[ok]}
                                                  for t, ok in nuggets]}
            for q, run, nuggets in [
                ("1_1", "runA", [("A", True), ("B", False)]),
                ("1_2", "runA", [("C", True)]),
                ("1_1", "runB", [("A", True), ("B", True)]),
            ]
        ],
    )  # fmt: skip
    matched = run_cli("score", "nuggets", "--gold", str(gold), "--matches", str(labels), "--json")
    assigned = run_cli("score", "nuggets", "--gold", str(gold), "--assignments", str(assign), "--json")
    assert matched.returncode == 0 and assigned.returncode == 0, matched.stderr + assigned.stderr
    ntr = json.loads(matched.stdout)["ntr_recall"]
    graded = json.loads(assigned.stdout)["nugget_scores"]["runs"]
    for run, mean in (("runA", 0.75), ("runB", 0.5)):
        assert ntr["runs"][run]["original"]["mean"] == pytest.approx(mean)
        assert graded[run]["original"]["mean"]["ntr_recall_strict"] == pytest.approx(mean)
    assert ntr["runs"]["runB"]["original"]["per_turn"] == {"1_1": 1.0, "1_2": 0.0}
    assert ntr["missing_turns"] == {"runB": ["1_2"]} and "have no label of the run and score 0" in matched.stderr
