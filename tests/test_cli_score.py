"""`python -m assess score ...` end to end: the shared worked cases, runs, nuggets and bad input."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT, shared_file

TOLERANCE = 6e-7  # the cases hold published values rounded to 6 decimals


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assess", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def assert_matches(expected, got, path="") -> int:
    """Compare every number in ``expected`` with ``got``; return how many were compared."""
    if isinstance(expected, dict):
        return sum(assert_matches(v, got[k], f"{path}/{k}") for k, v in expected.items())
    if isinstance(expected, list):
        assert len(got) == len(expected), path
        return sum(assert_matches(e, g, f"{path}[{i}]") for i, (e, g) in enumerate(zip(expected, got)))
    assert got == pytest.approx(expected, abs=TOLERANCE), path
    return 1


def test_gfrc2_case_file():
    case = shared_file("cases", "gfrc2_fairweb2_r112.json")
    result = run_cli("score", "gfrc2", "../shared/cases/gfrc2_fairweb2_r112.json", "--json")
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    expected = json.loads(case.read_text())["expected"]
    assert assert_matches(expected, got) >= 49  # every expected number (GFRC2 Tables 1-5, both runs)


def test_aepd_case_file():
    case = shared_file("cases", "aepd_paper_figure2.json")
    result = run_cli("score", "aepd", "../shared/cases/aepd_paper_figure2.json", "--json")
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    assert assert_matches(json.loads(case.read_text())["expected"], got) >= 12
    assert got["tradeoff"] == {"n": 1, "kendall_tau": None, "p_value": None}


def test_text_output_is_a_table():
    shared_file("cases", "gfrc2_fairweb2_r112.json")
    result = run_cli("score", "gfrc2", "../shared/cases/gfrc2_fairweb2_r112.json", "--clusters")
    assert result.returncode == 0
    assert "COPWA-CS-QD-MN-2  0.001728" in result.stdout
    assert "0.353340" in result.stdout  # Table 1, first Experience


QRELS = """q1 0 d1 4
q1 0 d2 3
q1 0 d3 2
q1 0 d4 1
q1 0 d5 0
q1 0 d6 2
q1 0 d7 1
q2\t0\te1\t1
q2 0 e2 2
q2 0 e3 0
q2 0 e4 4
"""
RUN = """q1 Q0 d5 1 10 toy
q1 Q0 d4 2 9 toy
q1 Q0 d3 3 8 toy
q1 Q0 dX 4 7 toy
q1 Q0 d1 5 6 toy
q1 Q0 d7 6 5 toy
q1 Q0 d2 7 5 toy
q2 Q0 e1 1 3 toy  
q2 Q0 e3 2 2 toy
q2 Q0 e2 3 1 toy

"""


@pytest.fixture
def trec_files(tmp_path):
    qrels = tmp_path / "toy.qrels"
    qrels.write_text(QRELS)
    run = tmp_path / "toy.run"
    run.write_text(RUN)
    other = tmp_path / "other.run"
    other.write_text(RUN.replace(" toy", " other").replace("d5 1 10", "d5 1 1"))
    return qrels, run, other


def test_runs_json_matches_trec_eval_toy(trec_files):
    qrels, run, other = trec_files
    result = run_cli("score", "runs", "--qrels", str(qrels), "--run", str(run), "--run", str(other),
                     "--qrels-b", str(qrels), "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    toy = out["runs"]["toy"]
    assert toy["n_queries"] == 2
    # MEASURES.md 7.3 (trec_eval -l 2): ndcg_cut_3 0.2919, ndcg_cut_5 0.3688, map 0.2286, recip_rank 0.3333
    assert toy["mean"]["nDCG@3"] == pytest.approx(0.2919, abs=5e-5)
    assert toy["mean"]["nDCG@5"] == pytest.approx(0.3688, abs=5e-5)
    assert toy["mean"]["AP(rel=2)"] == pytest.approx(0.2286, abs=5e-5)
    assert toy["mean"]["RR(rel=2)"] == pytest.approx(0.3333, abs=5e-5)
    assert out["correlation"]["nDCG@3"]["kendall_tau"] == pytest.approx(1.0)


def test_runs_threshold_ttest_and_text(trec_files):
    qrels, run, other = trec_files
    lenient = run_cli("score", "runs", "--qrels", str(qrels), "--run", str(run), "--threshold", "1", "--json")
    assert json.loads(lenient.stdout)["runs"]["toy"]["mean"]["AP"] == pytest.approx(0.5401, abs=5e-5)
    text = run_cli("score", "runs", "--qrels", str(qrels), "--run", str(run), "--run", str(other), "--ttest", "nDCG@3")
    assert text.returncode == 0, text.stderr
    assert "nDCG@3" in text.stdout and "Bonferroni" in text.stdout


def test_runs_bad_input_exit_2_with_one_line(tmp_path, trec_files):
    qrels, run, _ = trec_files
    bad = tmp_path / "bad.run"
    bad.write_text("q1 Q0 d1 1 0.5 tag\nq1 Q0 d2 2 high tag\n")
    result = run_cli("score", "runs", "--qrels", str(qrels), "--run", str(bad))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and f"{bad}:2" in result.stderr and "numeric score" in result.stderr
    short = tmp_path / "short.qrels"
    short.write_text("q1 0 d1\n")
    result = run_cli("score", "runs", "--qrels", str(short), "--run", str(run))
    assert result.returncode == 2 and f"{short}:1: expected 4 fields" in result.stderr


def test_gfrc2_bad_document_exit_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"attributes": [], "conversations": [{"id": "c", "nuggets": [{"start": 3, "end": 1,
                                                                                             "level": 1, "groups": {}}]}]}))
    result = run_cli("score", "gfrc2", str(bad), "--json")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == f"error: {bad}: expected end >= start in conversation 'c' nugget #1, found 1"
    broken = tmp_path / "broken.json"
    broken.write_text("{\n  'no': 1}")
    result = run_cli("score", "aepd", str(broken))
    assert result.returncode == 2 and f"{broken}:2: expected complete, valid JSON" in result.stderr


def test_nuggets_ntr_and_ntn(tmp_path):
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps({"1_1": {"[1]": {"text": "a", "relevance": "2"}, "[2]": {"text": "b", "relevance": "3"}},
                                "1_2": {"[1]": {"text": "c", "relevance": "1"}}, "1_3": {}}))
    dedup = tmp_path / "dedup.json"
    dedup.write_text(json.dumps({"1_1": {"[1]": {"text": "a", "relevance": "2"}}, "1_2": {"[1]": {"text": "c", "relevance": "1"}}}))
    labels = tmp_path / "labels.tsv"
    labels.write_text("1_1_1_1_runA\t1\n1_1_1_2_runA\t0\n1_1_2_1_runA\t0\n1_1_1_1_runB\t0\n")
    ptkb = tmp_path / "ptkb.qrels"
    ptkb.write_text("1_1 0 1 1\n1_1 0 2 0\n1_2 0 1 0\n")
    ntn = tmp_path / "ntn.json"
    ntn.write_text(json.dumps({"runA": {"1_1": {"response": ["[1]", "[2]"], "pairs": [["[1]", "[2]"]]},
                                        "1_3": {"response": [], "pairs": []}}}))
    result = run_cli("score", "nuggets", "--gold", str(gold), "--gold-dedup", str(dedup), "--matches", str(labels),
                     "--ntn", str(ntn), "--personal", str(ptkb), "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    run_a = out["ntr_recall"]["runs"]["runA"]
    assert run_a["original"]["per_turn"] == {"1_1": 0.5, "1_2": 0.0}
    assert run_a["original"]["mean"] == 0.25
    assert run_a["original"]["personal"] == {"mean": 0.5, "n": 1}
    assert run_a["deduplicated"]["per_turn"] == {"1_1": 1.0, "1_2": 0.0}
    assert out["ntr_recall"]["runs"]["runB"]["original"]["per_turn"] == {"1_1": 0.0}  # [2] unjudged: ignored
    ntn_a = out["ntn"]["runs"]["runA"]["original"]
    assert ntn_a["recall"]["per_turn"] == {"1_1": 0.5, "1_3": 0.0}  # empty gold counts 0, as the code
    assert ntn_a["precision"]["per_turn"] == {"1_1": 0.5, "1_3": None}
    text = run_cli("score", "nuggets", "--gold", str(gold), "--matches", str(labels))
    assert text.returncode == 0 and "runA" in text.stdout and "NtR recall" in text.stdout
    missing = run_cli("score", "nuggets", "--gold", str(gold))
    assert missing.returncode == 2 and "--matches" in missing.stderr


@pytest.mark.realdata
def test_nuggets_on_the_crowd_labels():
    root = "../shared/data/irlabamsterdam-CONE-RAG/resources/human_resources/"
    shared_file("data", "irlabamsterdam-CONE-RAG", "resources", "human_resources", "human-study-matching-labels.txt")
    topics = shared_file("data", "irlabamsterdam-iKAT", "2024", "data", "2024_test_topics.json")
    result = run_cli("score", "nuggets", "--gold", root + "gold_nuggets_human.json",
                     "--gold-dedup", root + "gold_nuggets_human_deduplicated.json",
                     "--matches", root + "human-study-matching-labels.txt", "--personal", str(topics), "--json")
    assert result.returncode == 0, result.stderr
    runs = json.loads(result.stdout)["ntr_recall"]["runs"]
    assert len(runs) == 6
    for per in runs.values():
        for row in per.values():
            assert 0 <= row["mean"] <= 1 and row["n_turns"] <= 25
            assert row["personal"]["n"] + row["non_personal"]["n"] == row["n_turns"]


def test_help_is_fast():
    start = time.perf_counter()
    result = run_cli("score", "--help")
    assert result.returncode == 0 and "gfrc2" in result.stdout and "nuggets" in result.stdout
    assert time.perf_counter() - start < 3.0  # generous: a cold interpreter on a busy machine
