"""`score nuggets` checks every file before scoring: a wrong shape is exit 2 with one line naming the
file, the line or JSON path, and expected vs found (nothing on stdout, the store unchanged); what a
well-formed file holds but scoring would leave out is reported, never dropped silently."""

from __future__ import annotations

import json

import pytest

from tests.cli.test_cli_score import run_cli
from tests.helpers import snapshot

GOLD = {
    "0_1": {"[1]": {"text": "a", "relevance": "2"}, "[2]": {"text": "b", "relevance": "1"}},
    "0_2": {"[1]": {"text": "c", "relevance": "3"}},
}


@pytest.fixture
def gold(tmp_path):
    path = tmp_path / "gold.json"
    path.write_text(json.dumps(GOLD, indent=1))
    return path


def _file(tmp_path, name: str, content) -> str:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content, indent=1))
    return str(path)


def _jsonl(records) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


def _nugget(text, importance="vital", assignment="support"):
    return {"text": text, "importance": importance, "assignment": assignment}


# (option, file name, content, the place and expectation the one error line must name)
MALFORMED = [
    pytest.param(
        "--ntn",
        "ntn.json",
        '{"runA": {"0_2": {"response": "abc"}}}',
        [":1: expected a list of response nugget ids at ['runA']['0_2']['response'], found a string 'abc'"],
        id="ntn-response-a-string",
    ),
    pytest.param(
        "--ntn",
        "ntn.json",
        {"runA": {"0_1": {"response": ["r1"], "pairs": [["r2", "[1]"]]}}},
        [":8: expected a response id listed in ['runA', '0_1']['response']", "['pairs'][0]", "found 'r2'"],
        id="ntn-pair-names-unknown-response-nugget",
    ),
    pytest.param(
        "--ntn",
        "ntn.json",
        {"runA": {"0_1": {"response": ["r1"], "pairs": [["r1"]]}}},
        ["expected a pair [response id, gold id] at ['runA']['0_1']['pairs'][0]", "found list"],
        id="ntn-pair-of-one",
    ),
    pytest.param(
        "--ntn",
        "ntn.json",
        {"runA": {"0_1": {"response": ["r1"], "pair": []}}},
        ["expected only the fields \"response\" and \"pairs\" at ['runA']['0_1']", "found field 'pair'"],
        id="ntn-unknown-field",
    ),
    pytest.param(
        "--ntn",
        "ntn.json",
        {"runA": {"0_1": {"response": ["r1", "r1"]}}},
        ["expected distinct response nugget ids at ['runA']['0_1']['response'][1]", "found 'r1' twice"],
        id="ntn-repeated-response-id",
    ),
    pytest.param(
        "--ntn",
        "ntn.json",
        [{"runA": {}}],
        [":1: expected an object {run: {turn:", "at the top level", "found list"],
        id="ntn-not-an-object",
    ),
    pytest.param(
        "--matches",
        "labels.tsv",
        "0_0_1_1_runA\t1\n0_0_1_2_runA\tyes\n",
        [":2: expected a label 0 or 1, found 'yes'"],
        id="ntr-label-not-0-or-1",
    ),
    pytest.param(
        "--matches",
        "labels.tsv",
        "0_0_1_1_runA\t1\n0_0_1_1_runA\t0\n",
        [":2: expected one label per nugget (0_1 [1] runA is already 1), found 0"],
        id="ntr-two-labels-for-one-nugget",
    ),
    pytest.param(
        "--gold-dedup",
        "dedup.json",
        {"0_1": {"[1]": {"text": "a"}}, "0_2": {"[3]": {"text": "z"}}},
        [":8: expected a nugget of the full set", "at ['0_2']['[3]']", "found [3] of turn '0_2', which the full set"],
        id="dedup-not-a-subset",
    ),
    pytest.param(
        "--gold-dedup",
        "dedup.json",
        {"0_1": {"[2]": {"text": "B"}}},
        [":3: expected a nugget of the full set", "at ['0_1']['[2]']", "with another text: 'B' instead of 'b'"],
        id="dedup-other-text",
    ),
    pytest.param(
        "--assignments",
        "assign.jsonl",
        _jsonl([{"qid": "0_1", "run_id": "r", "nuggets": [_nugget("a"), _nugget("b", assignment="maybe")]}]),
        [":1: expected 'assignment' in nuggets[1] support, partial_support or not_support, found 'maybe'"],
        id="assignment-unknown-label",
    ),
    pytest.param(
        "--assignments",
        "assign.jsonl",
        _jsonl([{"qid": "0_1", "run_id": "r", "nuggets": [_nugget("a", importance="high")]}]),
        [":1: expected 'importance' in nuggets[0] vital or okay, found 'high'"],
        id="assignment-unknown-importance",
    ),
    pytest.param(
        "--assignments",
        "assign.jsonl",
        _jsonl([{"qid": "0_1", "run_id": "r", "nuggets": [_nugget("a")]}, '{"qid": "0_2", "nuggets": [}']),
        [":2: expected one JSON object per line (complete, valid JSON)"],
        id="assignment-broken-json-line",
    ),
    pytest.param(
        "--assignments",
        "assign.jsonl",
        _jsonl([{"qid": "0_1", "run_id": "r", "nuggets": "abc"}]),
        [":1: expected 'nuggets' as a list, found str 'abc'"],
        id="assignment-nuggets-a-string",
    ),
    pytest.param(
        "--assignments",
        "assign.jsonl",
        _jsonl([{"qid": "0_1", "run_id": "r", "nuggets": []}, {"qid": "0_1", "run_id": "r", "nuggets": []}]),
        [":2: expected each (run_id, qid) once (run 'r' qid '0_1' is on line 1)"],
        id="assignment-repeated-record",
    ),
    pytest.param(
        "--gold",
        "nuggets.jsonl",
        _jsonl(
            [{"qid": "0_1", "nuggets": [{"text": "a", "importance": "vital"}, {"text": "a", "importance": "okay"}]}]
        ),
        [":1: expected each nugget text once per qid in nuggets[1], found 'a'"],
        id="nuggetizer-gold-repeated-text",
    ),
    pytest.param(
        "--gold",
        "gold2.json",
        {"0_1": {"[1]": {"text": "a", "relevance": 9}}},
        [":3: expected a relevance 0..4 (an integer) at ['0_1']['[1]']['relevance'], found 9"],
        id="cone-rag-gold-relevance-out-of-scale",
    ),
]


@pytest.mark.parametrize(("option", "name", "content", "expected"), MALFORMED)
def test_malformed_input_is_refused_with_file_and_place(tmp_path, gold, option, name, content, expected):
    bad = _file(tmp_path, name, content)
    args = ["score", "nuggets", "--gold", str(gold), "--json"]
    if option == "--gold":
        args[3] = bad
        args += ["--matches", _file(tmp_path, "ok.tsv", "0_0_1_1_runA\t1\n")]
    else:
        args += [option, bad]
        if option == "--gold-dedup":
            args += ["--matches", _file(tmp_path, "ok.tsv", "0_0_1_1_runA\t1\n")]
    result = run_cli(*args)
    assert result.returncode == 2, result.stdout
    assert result.stdout == ""
    line = result.stderr
    assert line.count("\n") == 1 and line.startswith(f"error: {bad}") and "Traceback" not in line, line
    for part in expected:
        assert part in line, line


def test_two_assignment_files_with_one_run_and_qid_are_refused(tmp_path, gold):
    record = {"qid": "0_1", "run_id": "r", "nuggets": [_nugget("a")]}
    first, second = _file(tmp_path, "a.jsonl", _jsonl([record])), _file(tmp_path, "b.jsonl", _jsonl([record]))
    result = run_cli("score", "nuggets", "--assignments", first, "--assignments", second)
    assert result.returncode == 2 and result.stdout == ""
    assert (
        result.stderr
        == f"error: {second}:1: expected run 'r' qid '0_1' in one assignment file only, found it in {first} too\n"
    )


def test_what_scoring_would_leave_out_is_reported(tmp_path, gold):
    labels = _file(
        tmp_path,
        "labels.tsv",
        "0_0_1_1_runA\t1\n0_0_1_7_runA\t1\n0_9_1_1_runA\t1\n",  # [1] ok; [7] unknown nugget; turn 9_1 unknown
    )
    ntn = _file(tmp_path, "ntn.json", {"runA": {"0_1": {"response": ["r"], "pairs": [["r", "[5]"]]}}})
    result = run_cli("score", "nuggets", "--gold", str(gold), "--matches", labels, "--ntn", ntn, "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["warnings"] == [
        f"1 NtR label(s) are on turns without gold nuggets in {gold} and are left out (first: {labels}:3 9_1 [1] runA)",
        f"1 NtR label(s) name nuggets that {gold} does not have for their turn and are left out "
        f"(first: {labels}:2 0_1 [7] runA)",
        "1 gold nugget(s) have no NtR label in turns their run was judged on and count as not captured",
        f"1 (run, gold turn) pair(s) have no NtR label at all: on a turn no run was judged on they are not "
        f"evaluated, on one judged for another run they score 0 (labels in {labels}, gold {gold})",
        f"1 NtN pair(s) in {ntn} name gold nuggets that {gold} does not have and are left out "
        "(first: ['runA']['0_1'] [5])",
    ]
    assert result.stderr.splitlines() == [f"warning: {w}" for w in out["warnings"]]
    # the unjudged [2] of 0_1 counts as not captured (the one default): 1 of 2
    assert out["ntr_recall"]["runs"]["runA"]["original"]["per_turn"] == {"0_1": 0.5}


def test_assignments_against_another_nugget_set_are_reported(tmp_path, gold):
    assign = _file(
        tmp_path,
        "assign.jsonl",
        _jsonl(
            [
                {"qid": "0_1", "run_id": "r", "nuggets": [_nugget("a"), _nugget("zzz", assignment="not_support")]},
                {"qid": "7_7", "run_id": "r", "nuggets": [_nugget("a")]},
            ]
        ),
    )
    result = run_cli("score", "nuggets", "--gold", str(gold), "--assignments", assign, "--json")
    assert result.returncode == 0, result.stderr
    warnings = json.loads(result.stdout)["warnings"]
    assert (
        f"1 qid(s) of the assignments are not in the gold set {gold} and are left out (first: '7_7' at {assign}:2)"
        in warnings
    )
    assert any(w.startswith("1 assigned nugget(s) are not nuggets of the gold set") and "'zzz'" in w for w in warnings)
    assert any("counted as okay in the Vital and Weighted scores" in w for w in warnings)  # b: importance unknown


def test_store_form_refuses_a_bad_personal_file_and_leaves_the_store(tmp_path):
    db = tmp_path / "demo.db"
    assert run_cli("init", "--db", str(db), "--demo").returncode == 0
    before = snapshot(db)
    bad = _file(tmp_path, "ptkb.qrels", "0_1 0 1 1\n0_1 0 2 high\n")
    result = run_cli("score", "nuggets", "--db", str(db), "--ntr-source", "llm:demo-gpt", "--personal", bad)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"error: {bad}:2: expected") and result.stderr.count("\n") == 1
    assert snapshot(db) == before


def test_help_states_the_unjudged_default():
    result = run_cli("score", "nuggets", "--help")
    assert result.returncode == 0
    flat = " ".join(result.stdout.split())
    assert "count as not captured / not supported (no, the default" in flat
