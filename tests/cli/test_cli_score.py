"""`python -m assess score ...` end to end: the shared worked cases, runs, nuggets and bad input."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from tests import helpers
from tests.conftest import ROOT, shared_file

TOLERANCE = 6e-7  # the cases hold published values rounded to 6 decimals


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """``python -m assess ARGS`` in process (tests.helpers.run_cli), in the project root."""
    return helpers.run_cli(*args)


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
    result = run_cli(
        "score",
        "runs",
        "--qrels",
        str(qrels),
        "--run",
        str(run),
        "--run",
        str(other),
        "--qrels-b",
        str(qrels),
        "--json",
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    toy = out["runs"]["toy"]
    assert toy["n_queries"] == 2
    # docs/measures.md#trec_eval-conventions (trec_eval -l 2): ndcg_cut_3 0.2919, ndcg_cut_5 0.3688, map 0.2286, recip_rank 0.3333
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


def test_runs_measures_without_rel_use_the_threshold(trec_files):
    """Issue 22 item 3: --measure P@5 --threshold 2 is trec_eval -l 2 (the toy's trec_eval v10.0 values,
    tests/unit/test_rankings.py TOY): P_5 0.3000, map 0.2286, recip_rank 0.3333, not the label >= 1 ones."""
    qrels, run, other = trec_files
    args = ["score", "runs", "--qrels", str(qrels), "--run", str(run), "--run", str(other)]
    measures = ["--measure", "P@5", "--measure", "AP", "--measure", "RR", "--measure", "P(rel=1)@5"]
    result = run_cli(*args, *measures, "--threshold", "2", "--ttest", "P@5", "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    # issue 34 item 5: P(rel=1)@5 keeps its rel in its name (ir_measures drops rel=1, its default, and P@5
    # under "label >= 2" read as the threshold's)
    assert out["measures"] == ["P(rel=2)@5", "AP(rel=2)", "RR(rel=2)", "P(rel=1)@5"]
    toy = out["runs"]["toy"]["mean"]
    assert toy["P(rel=2)@5"] == pytest.approx(0.3, abs=5e-5)
    assert toy["AP(rel=2)"] == pytest.approx(0.2286, abs=5e-5)
    assert toy["RR(rel=2)"] == pytest.approx(0.3333, abs=5e-5)
    assert toy["P(rel=1)@5"] == pytest.approx(0.5, abs=5e-5)  # its own rel=1: trec_eval -l 1's P_5
    assert out["ttest"]["measure"] == "P(rel=2)@5"
    assert "label >= 2" in out["binary_relevance"]
    text = run_cli(*args, *measures, "--threshold", "2").stdout
    assert "label >= 2" in text and "P(rel=1)@5" in text.splitlines()[1].split()
    lenient = json.loads(
        run_cli(*args, "--measure", "AP", "--measure", "P(rel=1)@5", "--threshold", "1", "--json").stdout
    )
    assert lenient["runs"]["toy"]["mean"]["AP"] == pytest.approx(0.5401, abs=5e-5)
    assert lenient["measures"] == ["AP", "P@5"]  # at the header's threshold, ir_measures' own name


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
    bad.write_text(
        json.dumps(
            {
                "attributes": [],
                "conversations": [{"id": "c", "nuggets": [{"start": 3, "end": 1, "level": 1, "groups": {}}]}],
            }
        )
    )
    result = run_cli("score", "gfrc2", str(bad), "--json")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == f"error: {bad}: expected end >= start in conversation 'c' nugget #1, found 1"
    broken = tmp_path / "broken.json"
    broken.write_text("{\n  'no': 1}")
    result = run_cli("score", "aepd", str(broken))
    assert result.returncode == 2 and f"{broken}:2: expected complete, valid JSON" in result.stderr


def test_nuggets_ntr_and_ntn(tmp_path):
    gold = tmp_path / "gold.json"
    gold.write_text(
        json.dumps(
            {
                "1_1": {"[1]": {"text": "a", "relevance": "2"}, "[2]": {"text": "b", "relevance": "3"}},
                "1_2": {"[1]": {"text": "c", "relevance": "1"}},
                "1_3": {},
            }
        )
    )
    dedup = tmp_path / "dedup.json"
    dedup.write_text(
        json.dumps({"1_1": {"[1]": {"text": "a", "relevance": "2"}}, "1_2": {"[1]": {"text": "c", "relevance": "1"}}})
    )
    labels = tmp_path / "labels.tsv"
    labels.write_text("1_1_1_1_runA\t1\n1_1_1_2_runA\t0\n1_1_2_1_runA\t0\n1_1_1_1_runB\t0\n")
    ptkb = tmp_path / "ptkb.qrels"
    ptkb.write_text("1_1 0 1 1\n1_1 0 2 0\n1_2 0 1 0\n")
    ntn = tmp_path / "ntn.json"
    ntn.write_text(
        json.dumps(
            {
                "runA": {
                    "1_1": {"response": ["[1]", "[2]"], "pairs": [["[1]", "[2]"]]},
                    "1_3": {"response": [], "pairs": []},
                }
            }
        )
    )
    result = run_cli(
        "score",
        "nuggets",
        "--gold",
        str(gold),
        "--gold-dedup",
        str(dedup),
        "--matches",
        str(labels),
        "--ntn",
        str(ntn),
        "--personal",
        str(ptkb),
        "--json",
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    run_a = out["ntr_recall"]["runs"]["runA"]
    assert run_a["original"]["per_turn"] == {"1_1": 0.5, "1_2": 0.0}
    assert run_a["original"]["mean"] == 0.25
    assert run_a["original"]["personal"] == {"mean": 0.5, "n": 1}
    assert run_a["deduplicated"]["per_turn"] == {"1_1": 1.0, "1_2": 0.0}
    # [2] unjudged: ignored; 1_2, judged for runA, has no label of runB: a missing response, 0 (trec_eval -c)
    assert out["ntr_recall"]["runs"]["runB"]["original"]["per_turn"] == {"1_1": 0.0, "1_2": 0.0}
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
    result = run_cli(
        "score",
        "nuggets",
        "--gold",
        root + "gold_nuggets_human.json",
        "--gold-dedup",
        root + "gold_nuggets_human_deduplicated.json",
        "--matches",
        root + "human-study-matching-labels.txt",
        "--personal",
        str(topics),
        "--json",
    )
    assert result.returncode == 0, result.stderr
    runs = json.loads(result.stdout)["ntr_recall"]["runs"]
    assert len(runs) == 6
    for per in runs.values():
        for row in per.values():
            assert 0 <= row["mean"] <= 1 and row["n_turns"] <= 25
            assert row["personal"]["n"] + row["non_personal"]["n"] == row["n_turns"]


def test_help_is_fast():
    start = time.perf_counter()
    result = helpers.run_cli_process("score", "--help")  # a cold interpreter: the entry point's own time
    assert result.returncode == 0 and "gfrc2" in result.stdout and "nuggets" in result.stdout
    assert time.perf_counter() - start < 3.0  # generous: a cold interpreter on a busy machine


# ------------------------------------------------------------------------------------------- NtR from the store

MINI_TOPICS = [
    {
        "number": 7,
        "title": "mini",
        "ptkb": {"1": "I run.", "2": "I swim."},
        "turns": [
            {"turn_id": 1, "utterance": "u1", "response": "r1", "ptkb_provenance": [1]},
            {"turn_id": 2, "utterance": "u2", "response": "r2", "ptkb_provenance": []},
            {"turn_id": 3, "utterance": "u3", "response": "r3", "ptkb_provenance": [2]},
            {"turn_id": 4, "utterance": "u4", "response": "r4", "ptkb_provenance": []},
        ],
    }
]


def _nuggets(keys: dict) -> dict:
    return {turn: {f"[{k}]": {"text": f"nugget {turn} {k}", "relevance": "2"} for k in ks} for turn, ks in keys.items()}


@pytest.fixture
def mini_store(store_target, tmp_path):
    """Conversation 7: turns 7_1 and 7_3 personal (organizers); gold nuggets 3/2/1/2; run A answers every
    turn (7_3 with white space only), run B answers 7_1, 7_2 and 7_4; a de-duplicated set of every turn."""
    from assess.services.loading import load_file
    from store import nuggets as stored
    from store import open_db, write
    from store.db import rows
    from store.sources import ensure_source

    files = {
        "topics.json": MINI_TOPICS,
        "gold.json": _nuggets({"7_1": [1, 2, 3], "7_2": [1, 2], "7_3": [1], "7_4": [1, 2]}),
        "dedup.json": _nuggets({"7_1": [1, 3], "7_2": [1, 2], "7_3": [1], "7_4": [2]}),
        "responses.json": {
            "7_1": {"A": "a1", "B": "b1"},
            "7_2": {"A": "a2", "B": "b2"},
            "7_3": {"A": "  "},
            "7_4": {"A": "a4", "B": "b4"},
        },
    }
    for name, data in files.items():
        (tmp_path / name).write_text(json.dumps(data))
    (tmp_path / "llm.tsv").write_text(
        "0_7_1_1_A\t1\n0_7_1_2_A\t0\n0_7_1_3_A\t0\n0_7_2_1_A\t1\n0_7_2_2_A\t1\n0_7_4_1_B\t1\n0_7_4_2_B\t0\n"
    )
    (tmp_path / "llm-ptkb.qrels").write_text("7_2 0 1 1\n7_1 0 1 0\n")
    path = store_target
    db = open_db(path)
    load_file(db, "topics", tmp_path / "topics.json")
    load_file(db, "nuggets", tmp_path / "gold.json", source="gold")
    load_file(db, "nuggets", tmp_path / "dedup.json", source="gold", dedup=True)
    load_file(db, "responses", tmp_path / "responses.json")
    load_file(db, "ntr-labels", tmp_path / "llm.tsv", source="llm:mini", nugget_source="gold")
    load_file(db, "ntr-labels", tmp_path / "llm.tsv", source="crowd:mini", nugget_source="gold")
    load_file(db, "ptkb-qrels", tmp_path / "llm-ptkb.qrels", source="llm:mini")
    gold = {
        (r["turn_id"], r["key"]): r["id"]
        for r in rows(db, "SELECT id, turn_id, key FROM nuggets WHERE source = 'gold'")
    }
    # the assessor amy on the /ntr page (signing in creates her source)
    with write(db):
        ensure_source(db, "amy", "assessor")
    for run, turn, key, match in [
        ("A", "7_1", 1, 1),
        ("A", "7_1", 2, 1),
        ("A", "7_1", 3, 0),
        ("A", "7_2", 1, 0),
        ("A", "7_3", 1, 1),
        ("A", "7_4", 1, 1),
        ("A", "7_4", 2, 1),
        ("B", "7_1", 3, 1),
        ("B", "7_4", 1, 0),
    ]:
        stored.ntr.save_label(db, "amy", gold[turn, f"[{key}]"], run, match)
    db.close()
    return path


def score_store(path, *args):
    result = run_cli("score", "nuggets", "--db", str(path), *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_nuggets_ntr_recall_from_assessor_labels_in_the_store(mini_store):
    # the command's default counts unjudged nuggets as "no" (below); these figures leave them out
    out = score_store(mini_store, "--ntr-source", "amy", "--dedup", "--personal", "--unjudged", "ignore")
    assert (out["nugget_source"], out["personal"], out["labels"]) == ("gold", "organizers", 8)
    assert out["ignored_labels"] == {"other_nugget_sets": 0, "empty_responses": 1}  # A on 7_3 (white space)
    a, b = out["ntr_recall"]["runs"]["A"], out["ntr_recall"]["runs"]["B"]
    # A: 7_1 2/3 (2 of 3 labelled yes), 7_2 0/1 ([2] unjudged, left out), 7_4 2/2; 7_3 skipped (empty response)
    assert a["original"]["per_turn"] == pytest.approx({"7_1": 2 / 3, "7_2": 0.0, "7_4": 1.0})
    assert a["original"]["mean"] == pytest.approx(5 / 9) and a["original"]["n_turns"] == 3
    assert a["original"]["personal"] == {"mean": pytest.approx(2 / 3), "n": 1}
    assert a["original"]["non_personal"] == {"mean": pytest.approx(0.5), "n": 2}
    # de-duplicated: 7_1 keeps [1] and [3] -> 1/2; 7_4 keeps [2] -> 1/1
    assert a["deduplicated"]["per_turn"] == pytest.approx({"7_1": 0.5, "7_2": 0.0, "7_4": 1.0})
    assert a["deduplicated"]["mean"] == pytest.approx(0.5)
    # B: 7_1 1/1 ([3] only), 7_4 0/1; de-duplicated 7_4 keeps only the unjudged [2]: skipped
    assert b["original"]["per_turn"] == {"7_1": 1.0, "7_4": 0.0} and b["original"]["mean"] == 0.5
    assert b["original"]["personal"] == {"mean": 1.0, "n": 1} and b["original"]["non_personal"] == {"mean": 0.0, "n": 1}
    assert b["deduplicated"]["per_turn"] == {"7_1": 1.0} and b["deduplicated"]["mean"] == 1.0
    assert out["dedup_unknown_turns"] == []
    # unjudged gold nuggets as "not captured": B 7_1 1/3, 7_4 0/2; de-duplicated 1/2 and 0/1
    no = score_store(mini_store, "--ntr-source", "amy", "--dedup", "--unjudged", "no")["ntr_recall"]["runs"]
    assert no["B"]["original"]["mean"] == pytest.approx(1 / 6) and no["B"]["deduplicated"]["mean"] == pytest.approx(
        0.25
    )
    assert no["A"]["original"]["per_turn"] == pytest.approx({"7_1": 2 / 3, "7_2": 0.0, "7_4": 1.0})
    plain = score_store(mini_store, "--ntr-source", "amy")
    assert (
        list(plain["ntr_recall"]["runs"]["A"]) == ["original"]
        and "personal" not in plain["ntr_recall"]["runs"]["A"]["original"]
    )


def test_nuggets_ntr_recall_of_llm_and_crowd_sources_and_a_ptkb_source(mini_store, tmp_path):
    llm = score_store(mini_store, "--ntr-source", "llm:mini", "--dedup", "--personal", "llm:mini")
    runs = llm["ntr_recall"]["runs"]
    # A: 7_1 1/3, 7_2 2/2; B: 7_4 1/2. llm:mini's PTKB labels make only 7_2 personal.
    assert runs["A"]["original"]["per_turn"] == pytest.approx({"7_1": 1 / 3, "7_2": 1.0})
    assert runs["A"]["original"]["personal"] == {"mean": 1.0, "n": 1}
    assert runs["A"]["original"]["non_personal"] == {"mean": pytest.approx(1 / 3), "n": 1}
    assert runs["A"]["deduplicated"]["per_turn"] == pytest.approx({"7_1": 0.5, "7_2": 1.0})
    assert runs["B"]["original"]["per_turn"] == {"7_4": 0.5} and runs["B"]["deduplicated"]["per_turn"] == {"7_4": 0.0}
    crowd = score_store(mini_store, "--ntr-source", "crowd:mini", "--dedup", "--personal", "llm:mini")
    assert crowd["ntr_recall"] == llm["ntr_recall"]
    # the file form on the same labels gives the same numbers
    files = run_cli(
        "score",
        "nuggets",
        "--gold",
        str(tmp_path / "gold.json"),
        "--gold-dedup",
        str(tmp_path / "dedup.json"),
        "--matches",
        str(tmp_path / "llm.tsv"),
        "--personal",
        str(tmp_path / "llm-ptkb.qrels"),
        "--json",
    )
    assert files.returncode == 0, files.stderr
    from_files = json.loads(files.stdout)["ntr_recall"]
    # the same numbers on the turns each run was judged on; but a labels file cannot tell a missing response
    # from judging still to do: A's 7_4 (judged for B) and B's 7_1, 7_2 (judged for A) score 0 there
    # (trec_eval -c, as --assignments), where the store, which has those responses, skips them
    assert from_files["missing_turns"] == {"A": ["7_4"], "B": ["7_1", "7_2"]}
    for run, extra in (("A", {"7_4": 0.0}), ("B", {"7_1": 0.0, "7_2": 0.0})):
        for name in ("original", "deduplicated"):
            stored_row = llm["ntr_recall"]["runs"][run][name]["per_turn"]
            assert from_files["runs"][run][name]["per_turn"] == {**stored_row, **extra}
    # a PTKB qrels file works in the store form too
    by_file = score_store(mini_store, "--ntr-source", "llm:mini", "--personal", str(tmp_path / "llm-ptkb.qrels"))
    assert by_file["ntr_recall"]["runs"]["A"]["original"] == llm["ntr_recall"]["runs"]["A"]["original"]
    text = run_cli("score", "nuggets", "--db", str(mini_store), "--ntr-source", "llm:mini", "--personal")
    assert text.returncode == 0 and "NtR recall of llm:mini on nugget set gold" in text.stdout
    assert "personal  non-personal" in text.stdout


def test_nuggets_store_form_refuses_bad_input(mini_store, tmp_path):
    from store import nuggets as stored
    from store import open_db
    from tests.helpers import snapshot

    db = open_db(mini_store)
    own = stored.gold.add_text_nugget(db, "amy", "7_1", "my own nugget")
    stored.ntr.save_label(db, "amy", own, "A", 1)
    db.close()
    before = snapshot(mini_store)
    for args, message in [
        (
            ["--ntr-source", "nobody"],
            "no NtR labels of source 'nobody'; sources with NtR labels: amy, crowd:mini, llm:mini",
        ),
        (["--ntr-source", "amy"], "refer to the nugget sets amy, gold: name one with --nugget-source"),
        (["--ntr-source", "amy", "--nugget-source", "gold", "--personal", "nist"], "no PTKB labels of source 'nist'"),
        (["--ntr-source", "amy", "--nugget-source", "none"], "no nuggets of source 'none'"),
        (["--ntr-source", "amy", "--nugget-source", "amy", "--dedup"], None),
        (["--ntr-source", "amy", "--gold", str(tmp_path / "gold.json")], "either files (--gold ...) or the store"),
    ]:
        result = run_cli("score", "nuggets", "--db", str(mini_store), *args)
        if message is None:  # amy's own set: every nugget kept (in_dedup 1), scored
            assert result.returncode == 0, result.stderr
            continue
        assert result.returncode == 2 and result.stdout == "" and message in result.stderr, result.stderr
        assert result.stderr.count("\n") == 1
    assert snapshot(mini_store) == before
    out = score_store(mini_store, "--ntr-source", "amy", "--nugget-source", "gold")
    assert out["ignored_labels"]["other_nugget_sets"] == 1 and out["labels"] == 8
    missing = run_cli("score", "nuggets", "--db", str(tmp_path / "absent.db"), "--ntr-source", "amy")
    assert missing.returncode == 2 and "no such database" in missing.stderr and not (tmp_path / "absent.db").exists()
    no_file = run_cli(
        "score", "nuggets", "--gold", str(tmp_path / "gold.json"), "--matches", str(tmp_path / "llm.tsv"), "--personal"
    )
    assert no_file.returncode == 2 and "PTKB qrels or topics file" in no_file.stderr


def test_nuggets_ntr_recall_of_the_demo_llm_labels(store_target):
    """The demo's llm:demo-gpt NtR labels, cross-checked by a computation straight from the tables and by
    the file form on the demo's own files."""
    from statistics import mean

    from assess.services.loading import load_demo
    from store import nuggets as stored
    from store import open_db
    from tests.helpers import rows

    path = store_target
    db = open_db(path)
    load_demo(db)
    # de-duplicate two turns by hand: 101_1 [2] is covered by [1]; 102_3 [1] and [3] say the same
    ids = {(t, k): i for i, t, k in rows(path, "SELECT id, turn_id, key FROM nuggets WHERE source = 'gold'", {})}
    stored.duplicates.decide_duplicate(db, ids["101_1", "[1]"], ids["101_1", "[2]"], "a_covers_b", by="org")
    stored.duplicates.decide_duplicate(db, ids["102_3", "[1]"], ids["102_3", "[3]"], "same", by="org")
    db.close()
    out = score_store(path, "--ntr-source", "llm:demo-gpt", "--dedup", "--personal")

    personal = {
        t
        for (t,) in rows(
            path, "SELECT DISTINCT turn_id FROM ptkb_labels WHERE source = 'organizers' AND relevant > 0", {}
        )
    }
    labels = rows(
        path,
        "SELECT l.run, l.turn_id, l.match, n.in_dedup FROM ntr_labels l JOIN nuggets n "
        "ON n.id = l.nugget_id WHERE l.source = 'llm:demo-gpt' AND n.source = 'gold'",
        {},
    )
    decided = {
        t for (t,) in rows(path, "SELECT turn_id FROM nuggets WHERE source = 'gold' AND in_dedup IS NOT NULL", {})
    }
    assert decided == {"101_1", "102_3"}
    for dedup in (False, True):
        per: dict = {}
        for run, turn, match, kept in labels:
            if not dedup or kept == 1:
                per.setdefault(run, {}).setdefault(turn, []).append(match)
        for run, turns in per.items():
            recall = {t: mean(v) for t, v in turns.items()}
            row = out["ntr_recall"]["runs"][run]["deduplicated" if dedup else "original"]
            assert row["per_turn"] == pytest.approx(recall) and row["mean"] == pytest.approx(mean(recall.values()))
            mine = [v for t, v in recall.items() if t in personal]
            rest = [v for t, v in recall.items() if t not in personal]
            assert row["personal"] == {"mean": pytest.approx(mean(mine)) if mine else None, "n": len(mine)}
            assert row["non_personal"] == {"mean": pytest.approx(mean(rest)) if rest else None, "n": len(rest)}
    assert len(out["ntr_recall"]["runs"]) == 3 and out["labels"] == 192
    assert set(out["ntr_recall"]["runs"]["demo-rerank"]["deduplicated"]["per_turn"]) == {"101_1", "102_3"}
    assert len(out["dedup_unknown_turns"]) == 10
    demo = ROOT / "assets" / "demo"
    files = run_cli(
        "score",
        "nuggets",
        "--gold",
        str(demo / "nuggets.json"),
        "--matches",
        str(demo / "llm-ntr.tsv"),
        "--personal",
        str(demo / "topics.json"),
        "--json",
    )
    assert files.returncode == 0, files.stderr
    from_files = json.loads(files.stdout)["ntr_recall"]["runs"]
    assert {r: v["original"] for r, v in from_files.items()} == {
        r: v["original"] for r, v in out["ntr_recall"]["runs"].items()
    }


# ------------------------------------------------------------------------------------------- graded NtR from the store


def _graded_labels(path) -> None:
    """bea's graded NtR labels and the gold set's importance labels on mini_store (see the hand-worked test)."""
    from assess.tasks import Task
    from store import labels, open_db, write
    from store.db import rows
    from store.sources import ensure_source

    db = open_db(path)
    gold = {
        (r["turn_id"], r["key"]): r["id"]
        for r in rows(db, "SELECT id, turn_id, key FROM nuggets WHERE source = 'gold'")
    }
    with write(db):
        ensure_source(db, "bea", "assessor")
    for run, turn, key, support in [
        ("A", "7_1", 1, 2),
        ("A", "7_1", 2, 1),
        ("A", "7_1", 3, 0),
        ("A", "7_2", 1, 1),
        ("B", "7_4", 1, 2),
        ("B", "7_4", 2, 2),
    ]:
        labels.save(db, Task.NTR_SUPPORT, "bea", (turn, gold[turn, f"[{key}]"], run), support, mode="blind", via="ui")
    for turn, key, vital in [("7_1", 1, 1), ("7_1", 2, 0), ("7_1", 3, 1), ("7_2", 2, 1)]:
        labels.save(db, Task.IMPORTANCE, "gold", (turn, gold[turn, f"[{key}]"]), vital, mode="blind", via="key")
    db.close()


def test_graded_nugget_scores_from_the_store_hand_worked(mini_store):
    _graded_labels(mini_store)
    out = score_store(mini_store, "--ntr-source", "bea")
    assert "ntr_recall" not in out  # graded labels only: no yes/no recall; the graded scores below
    assert (out["nugget_source"], out["importance_source"], out["labels"]) == ("gold", "gold", 6)
    scores = out["nugget_scores"]
    assert scores["notes"] == {
        "labels": 6,
        "other_set_labels": 0,
        "empty_response_labels": 0,
        "unjudged": 1,  # A 7_2 [2]
        "without_importance": 4,  # 7_2 [1], 7_3 [1], 7_4 [1] and [2]: okay
    }
    a = scores["runs"]["A"]["original"]
    # 7_1: [1] vital support, [2] okay partial, [3] vital none; 7_2: [1] okay partial, [2] vital unjudged = none
    assert a["per_turn"]["7_1"] == pytest.approx(
        {
            "all_strict": 1 / 3,
            "all_lax": 0.5,
            "vital_strict": 0.5,
            "vital_lax": 0.5,
            "weighted_strict": 1 / 2.5,
            "weighted_lax": 1.25 / 2.5,
            "ntr_recall_strict": 1 / 3,
            "ntr_recall_lax": 2 / 3,
        }
    )
    assert a["per_turn"]["7_2"] == pytest.approx(
        {
            "all_strict": 0.0,
            "all_lax": 0.25,
            "vital_strict": 0.0,
            "vital_lax": 0.0,
            "weighted_strict": 0.0,
            "weighted_lax": 0.25 / 1.5,
            "ntr_recall_strict": 0.0,
            "ntr_recall_lax": 0.5,
        }
    )
    assert a["n_turns"] == 2 and a["mean"] == pytest.approx(
        {
            "all_strict": 1 / 6,
            "all_lax": 0.375,
            "vital_strict": 0.25,
            "vital_lax": 0.25,
            "weighted_strict": 0.2,
            "weighted_lax": (0.5 + 1 / 6) / 2,
            "ntr_recall_strict": 1 / 6,
            "ntr_recall_lax": 7 / 12,
        }
    )
    # B 7_4: two okay nuggets supported; no vital nugget: Vital 0 (as nuggetizer's metrics)
    b = scores["runs"]["B"]["original"]["mean"]
    assert b["all_strict"] == b["weighted_lax"] == b["ntr_recall_strict"] == 1.0 and b["vital_strict"] == 0.0
    # the organizers' PTKB provenance makes 7_1 personal: A's personal turns 7_1, non-personal 7_2
    split = score_store(mini_store, "--ntr-source", "bea", "--personal")["nugget_scores"]["runs"]["A"]["original"]
    assert split["personal"]["all_strict"] == pytest.approx(1 / 3) and split["non_personal"]["all_lax"] == 0.25
    # unjudged left out: A 7_2 keeps [1] alone
    ignore = score_store(mini_store, "--ntr-source", "bea", "--unjudged", "ignore")["nugget_scores"]["runs"]["A"]
    assert ignore["original"]["per_turn"]["7_2"]["all_lax"] == 0.5
    text = run_cli("score", "nuggets", "--db", str(mini_store), "--ntr-source", "bea", "--per-turn")
    assert text.returncode == 0, text.stderr
    assert "Graded NtR labels of bea on nugget set gold (6 labels)" in text.stdout
    assert "importance: labels of gold (4 gold nugget(s) without an importance label count as okay)" in text.stdout
    per_turn = [line.split() for line in text.stdout.splitlines() if line.split()[:3] == ["A", "original", "7_2"]]
    assert per_turn == [
        ["A", "original", "7_2", "0.000000", "0.250000", *["0.000000"] * 3, "0.166667", "0.000000", "0.500000"]
    ]
    assert "warning: 1 gold nugget(s) have no NtR label (yes/no or graded) of bea" in text.stderr


def test_store_scores_equal_the_scores_page_service(mini_store):
    """The CLI's numbers are those of assess.services.rag.nugget_scores, what the RAG tab of /scores shows."""
    from assess.services import rag
    from store import open_db

    _graded_labels(mini_store)
    db = open_db(mini_store)
    for source in ("bea", "amy", "llm:mini"):
        page = rag.nugget_scores(db, source, "gold", "gold")
        cli = score_store(mini_store, "--ntr-source", source, "--nugget-source", "gold")["nugget_scores"]
        assert cli["notes"] == page["notes"]
        for row in page["runs"]:
            got = cli["runs"][row["run"]]["original"]
            assert got["n_turns"] == row["turns"]
            assert got["mean"] == {m: row[m] for m in rag.NUGGET_SCORES}
        for row in page["per_turn"]:
            assert cli["runs"][row["run"]]["original"]["per_turn"][row["turn"]] == {
                m: row[m] for m in rag.NUGGET_SCORES
            }
    db.close()
    # yes/no labels: strict and lax NtR recall are the yes/no recall (yes = support)
    amy = score_store(mini_store, "--ntr-source", "amy", "--nugget-source", "gold", "--dedup")
    for run, per in amy["ntr_recall"]["runs"].items():
        for name, row in per.items():
            graded = amy["nugget_scores"]["runs"][run][name]
            assert graded["mean"]["ntr_recall_strict"] == graded["mean"]["ntr_recall_lax"] == row["mean"]


def test_graded_store_form_refuses_bad_input(mini_store):
    from tests.helpers import snapshot

    _graded_labels(mini_store)
    before = snapshot(mini_store)
    for args, message in [
        (["--ntr-source", "nobody"], "sources with NtR labels: amy, bea, crowd:mini, llm:mini"),
        (["--ntr-source", "bea", "--importance-source", "nobody"], "no importance labels of source 'nobody'"),
        (["--ntr-source", "bea", "--nugget-source", "none"], "no nuggets of source 'none'"),
        (["--ntr-source", "bea", "--personal", "nist"], "no PTKB labels of source 'nist'"),
        (["--importance-source", "gold", "--gold", "g.json", "--matches", "m.tsv"], "--importance-source"),
    ]:
        result = run_cli("score", "nuggets", "--db", str(mini_store), *args)
        assert result.returncode == 2 and result.stdout == "" and message in result.stderr, result.stderr
        assert result.stderr.count("\n") == 1
    assert snapshot(mini_store) == before


# ------------------------------------------------------------------------------------------- citations from the store


@pytest.fixture
def cited_store(store_target, tmp_path):
    """Runs R1 (7_1: three sentences citing p1+p2, p3, nothing; 7_2: one sentence citing p1) and R2 (7_1:
    one sentence citing p4 and p5) as TREC RAG answers; cat labels every citation but R2's p5."""
    from store import open_db, write
    from store import responses as cited
    from store.sources import ensure_source

    (tmp_path / "topics.json").write_text(json.dumps(MINI_TOPICS))
    answers = [
        {
            "run_id": "R1",
            "topic_id": "7_1",
            "references": ["p1", "p2", "p3"],
            "answer": [
                {"text": "One.", "citations": [0, 1]},
                {"text": "Two.", "citations": [2]},
                {"text": "Three.", "citations": []},
            ],
        },
        {"run_id": "R1", "topic_id": "7_2", "references": ["p1"], "answer": [{"text": "Four.", "citations": [0]}]},
        {
            "run_id": "R2",
            "topic_id": "7_1",
            "references": ["p4", "p5"],
            "answer": [{"text": "Five.", "citations": [0, 1]}],
        },
    ]
    (tmp_path / "answers.jsonl").write_text("".join(json.dumps(a) + "\n" for a in answers))
    for kind, name in (("topics", "topics.json"), ("rag-answers", "answers.jsonl")):
        result = run_cli("import", kind, str(tmp_path / name), "--db", store_target)
        assert result.returncode == 0, result.stderr
    db = open_db(store_target)
    with write(db):
        ensure_source(db, "cat", "assessor")  # as signing in on /citations does
    for run, turn, sentence, passage, value in [
        ("R1", "7_1", 1, "p1", 2),
        ("R1", "7_1", 1, "p2", 1),
        ("R1", "7_1", 2, "p3", 1),
        ("R1", "7_2", 1, "p1", -1),
        ("R2", "7_1", 1, "p4", 2),
    ]:
        cited.save_citation_label(db, "cat", turn, run, sentence, passage, value, mode="blind", via="key")
    db.close()
    return store_target


def score_citations(path, *args):
    result = run_cli("score", "citations", "--db", str(path), "--source", "cat", *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout), result.stderr


def test_citation_scores_hand_worked(cited_store):
    out, stderr = score_citations(cited_store, "--per-response")
    r1, r2 = out["runs"]["R1"], out["runs"]["R2"]
    # R1 7_1: strict s1 supported (p1 fully), precise p1 of 3 citations; lax s1 and s2 (p3 partial, alone)
    # supported, precise p1, p2 and p3 (p2, partial beside a full one, supports s1 alone under the lax
    # reading: ALCE's rule). 7_2: p1 irrelevant: 0 and 0.
    assert r1 == {
        "responses": 2,
        "unlabelled": 0,
        "uncited": 0,
        "uncited_left_out": 0,
        "unlabelled_citations": 0,
        "coverage": 1.0,
        "cannot_judge": 0,
        "sentences": 4,
        "citations": 4,
        "recall": pytest.approx(1 / 6),
        "precision": pytest.approx(1 / 6),
        "supported": pytest.approx(1 / 6),  # mean per response: (1/3 + 0) / 2, the leaderboard's all row
        "recall_lax": pytest.approx(1 / 3),
        "precision_lax": pytest.approx(1 / 2),
        "supported_lax": pytest.approx(1 / 3),  # (2/3 + 0) / 2
        "supported_micro": pytest.approx(1 / 4),  # pooled: 1 of the run's 4 sentences
        "supported_lax_micro": pytest.approx(1 / 2),  # 2 of 4
    }
    # R2: p5 has no label: the response is not scored and said so, never counted as unsupported
    assert (r2["responses"], r2["unlabelled"], r2["unlabelled_citations"], r2["recall"]) == (0, 1, 1, None)
    assert r2["coverage"] == 0.5
    assert "warning: 1 citation(s) have no label of cat" in stderr and out["warnings"]
    per = {(r["run"], r["turn"]): r for r in out["per_response"]}
    assert per["R1", "7_1"]["recall"] == pytest.approx(1 / 3) and per["R1", "7_1"]["precision_lax"] == 1.0
    assert (per["R1", "7_1"]["sentences"], per["R1", "7_1"]["citations"], per["R1", "7_1"]["labelled"]) == (3, 3, 3)
    assert per["R2", "7_1"]["unlabelled_citations"] == 1 and per["R2", "7_1"]["precision"] is None
    only, _ = score_citations(cited_store, "--run", "R1")
    assert list(only["runs"]) == ["R1"] and only["runs"]["R1"] == r1 and "warnings" not in only
    text = run_cli("score", "citations", "--db", str(cited_store), "--source", "cat", "--per-response")
    assert text.returncode == 0 and "ALCE citation recall / precision" in text.stdout
    assert "R1   7_1" in text.stdout and "0.166667" in text.stdout


def test_leaderboard_all_rows_are_the_score_commands_means(cited_store, tmp_path):
    """Issue 34 item 2: the leaderboard's all row is the mean of its topic rows (trec_eval / AutoJudge); score
    citations prints that same mean as supported and the pooled share as supported_micro. R1: responses 7_1
    (1 of 3 sentences supported) and 7_2 (0 of 1): mean 1/6, pooled 1/4 (before, supported printed 1/4 while
    the all row said 1/6)."""
    out, _ = score_citations(cited_store, "--run", "R1")
    board = tmp_path / "board.txt"
    result = run_cli(
        "export", "leaderboard", "--db", str(cited_store), "--layout", "ir_measures", "--source", "cat",
        "--measure", "citation_supported", "--measure", "citation_supported_lax", "--measure", "citation_recall",
        "--run", "R1", "--out", str(board),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = {(t, m): float(v) for r, t, m, v in (line.split() for line in board.read_text().splitlines())}
    r1 = out["runs"]["R1"]
    assert rows["all", "citation_supported"] == pytest.approx(r1["supported"]) == pytest.approx(1 / 6)
    assert rows["all", "citation_supported_lax"] == pytest.approx(r1["supported_lax"]) == pytest.approx(1 / 3)
    assert rows["all", "citation_recall"] == pytest.approx(r1["recall"])
    topic_rows = [v for (t, m), v in rows.items() if m == "citation_supported" and t != "all"]
    assert rows["all", "citation_supported"] == pytest.approx(sum(topic_rows) / len(topic_rows))
    assert r1["supported_micro"] == pytest.approx(1 / 4)


def test_a_partly_labelled_run_is_not_scored_on_its_uncited_responses(cited_store, tmp_path):
    """Issue 22 item 7: run R3 answers 7_1 citing p1 (labelled fully supported), 7_2 citing nothing and 7_3
    citing p2 (no label yet). Before, the uncited 7_2 counted as a scored 0 beside the one labelled response
    (recall 0.5); now only fully labelled responses with citations count while the run is partly labelled,
    and the output says what was left out. Once p2 is labelled, the run gets ALCE's numbers: (1 + 0 + 1) / 3."""
    from store import open_db
    from store import responses as cited

    answers = [
        {"run_id": "R3", "topic_id": "7_1", "references": ["p1"], "answer": [{"text": "Six.", "citations": [0]}]},
        {"run_id": "R3", "topic_id": "7_2", "references": [], "answer": [{"text": "Seven.", "citations": []}]},
        {"run_id": "R3", "topic_id": "7_3", "references": ["p2"], "answer": [{"text": "Eight.", "citations": [0]}]},
    ]
    (tmp_path / "r3.jsonl").write_text("".join(json.dumps(a) + "\n" for a in answers))
    result = run_cli("import", "rag-answers", str(tmp_path / "r3.jsonl"), "--db", cited_store)
    assert result.returncode == 0, result.stderr
    db = open_db(cited_store)
    cited.save_citation_label(db, "cat", "7_1", "R3", 1, "p1", 2, mode="blind", via="key")
    db.close()
    out, stderr = score_citations(cited_store, "--run", "R3")
    r3 = out["runs"]["R3"]
    assert (r3["responses"], r3["unlabelled"], r3["uncited"], r3["uncited_left_out"]) == (1, 1, 1, 1)
    assert (r3["unlabelled_citations"], r3["coverage"]) == (1, 0.5)
    assert (r3["recall"], r3["precision"], r3["sentences"]) == (1.0, 1.0, 1)
    assert "1 response(s) with them and 1 response(s) citing nothing" in stderr
    per, _ = score_citations(cited_store, "--run", "R3", "--per-response")  # the leaderboard's lines
    assert {r["turn"]: r["recall"] for r in per["per_response"]} == {"7_1": 1.0, "7_2": None, "7_3": None}
    text = run_cli("score", "citations", "--db", str(cited_store), "--source", "cat", "--run", "R3")
    assert text.returncode == 0 and "uncited_left_out" in text.stdout and "coverage" in text.stdout
    db = open_db(cited_store)
    cited.save_citation_label(db, "cat", "7_3", "R3", 1, "p2", 2, mode="blind", via="key")
    db.close()
    full, stderr = score_citations(cited_store, "--run", "R3")
    r3 = full["runs"]["R3"]
    assert (r3["responses"], r3["unlabelled"], r3["uncited"], r3["uncited_left_out"], r3["coverage"]) == (
        3,
        0,
        1,
        0,
        1.0,
    )
    assert r3["recall"] == pytest.approx(2 / 3) and r3["precision"] == pytest.approx(2 / 3)
    assert stderr == "" and "warnings" not in full


def test_citation_scores_equal_the_scores_page_service(cited_store):
    from assess.services import rag
    from store import open_db

    out, _ = score_citations(cited_store)
    db = open_db(cited_store)
    page = rag.citation_scores(db, "cat")
    db.close()
    assert [r["run"] for r in page] == list(out["runs"])
    for row in page:
        assert out["runs"][row["run"]] == {k: v for k, v in row.items() if k != "run"}


def test_a_cannot_judge_citation_is_left_out_and_counted(cited_store):
    """Issue 22 item 11: cat cannot judge R2's p5 (its one unlabelled citation). The response is then labelled
    and scored on p4 alone (fully supported: recall and precision 1, not 1/2 as reading p5 as unsupported
    would give), and every output says one citation was left out, the text table as the JSON."""
    from store import open_db
    from store import responses as cited

    db = open_db(cited_store)
    cited.save_citation_label(db, "cat", "7_1", "R2", 1, "p5", None, mode="blind", via="key")
    db.close()
    out, stderr = score_citations(cited_store, "--per-response")
    r2 = out["runs"]["R2"]
    assert r2 == {
        "responses": 1,
        "unlabelled": 0,
        "uncited": 0,
        "uncited_left_out": 0,
        "unlabelled_citations": 0,
        "coverage": 1.0,
        "cannot_judge": 1,
        "sentences": 1,
        "citations": 2,
        "recall": 1.0,
        "precision": 1.0,
        "supported": 1.0,
        "recall_lax": 1.0,
        "precision_lax": 1.0,
        "supported_lax": 1.0,
        "supported_micro": 1.0,
        "supported_lax_micro": 1.0,
    }
    assert out["runs"]["R1"]["cannot_judge"] == 0 and stderr == "" and "warnings" not in out
    per = {(r["run"], r["turn"]): r for r in out["per_response"]}
    assert (per["R2", "7_1"]["labelled"], per["R2", "7_1"]["cannot_judge"], per["R2", "7_1"]["precision"]) == (
        2,
        1,
        1.0,
    )
    text = run_cli("score", "citations", "--db", str(cited_store), "--source", "cat", "--run", "R2")
    assert text.returncode == 0, text.stderr
    header, row = (line.split() for line in text.stdout.splitlines()[1:3])
    assert dict(zip(header, row, strict=True))["cannot_judge"] == "1"


def test_citation_scores_refuse_bad_input(cited_store, tmp_path):
    from tests.helpers import snapshot

    before = snapshot(cited_store)
    for args, message in [
        (["--source", "nobody"], "no citation labels of source 'nobody'; sources with citation labels: cat"),
        (["--source", "cat", "--run", "R9"], "no responses of run 'R9'; runs with responses: R1, R2"),
    ]:
        result = run_cli("score", "citations", "--db", str(cited_store), *args)
        assert result.returncode == 2 and result.stdout == "" and message in result.stderr, result.stderr
        assert result.stderr.count("\n") == 1
    missing = run_cli("score", "citations", "--db", str(tmp_path / "none.db"), "--source", "cat")
    assert missing.returncode == 2 and "no such database" in missing.stderr
    assert snapshot(cited_store) == before
