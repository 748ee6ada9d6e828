"""The 2026 campaign journey of docs/campaigns.md end to end, in process, on a fresh store: RAG 2026 topics and
answers in, a battle file with iKAT turn ids and RAG topic ids ranked (Bradley-Terry figures worked by hand),
a battle plan, LLM battles from the stub over real HTTP (an always-left judge: position bias 1), a RAGTIME
nugget bank matched by the stub (AND/OR coverage by hand), a DRAGUN rubric's supportive and contradictory
scores, and leaderboards in the three AutoJudge layouts equal to the score commands' figures."""

from __future__ import annotations

import json
import math

from tests.helpers import run_cli
from tests.stub_llm import enclosed, stub_llm  # noqa: F401  (fixture)

TOPICS = "rag26-1\tIs congestion pricing fair?\nrag26-2\tHow do heat pumps work in cold climates?\n"
NARRATIVES = {"rag26-1": "Is congestion pricing fair?", "rag26-2": "How do heat pumps work in cold climates?"}
ANSWERS = {  # (run, topic): [(sentence, cited documents)]
    ("alpha", "rag26-1"): [("Congestion pricing funds transit.", ["d1"]), ("Low-income drivers pay more.", ["d2"])],
    ("alpha", "rag26-2"): [("Heat pumps move heat even below freezing.", ["d5"])],
    ("beta", "rag26-1"): [("It is regressive for low-income drivers.", ["d2"])],
    ("beta", "rag26-2"): [("They use variable-speed compressors and vapor injection.", ["d6"])],
    ("gamma", "rag26-1"): [("Opinions differ.", [])],
    ("gamma", "rag26-2"): [("They work less well when it is very cold.", ["d5"])],
}
BANK = [  # RAGTIME layout; per topic: (question, aggregator, answers, importance)
    ("rag26-1", [("What does the revenue pay for?", "OR", ["funds transit", "pays for roads"], None),
                 ("Who bears the cost?", "AND", ["low-income drivers", "commuters"], 2)]),
    ("rag26-2", [("Do they work below freezing?", "OR", ["below freezing"], None),
                 ("What technology helps?", "AND", ["variable-speed compressors", "vapor injection"], 2)]),
]  # fmt: skip
RUBRIC = {
    "topic_id": "rag26-1",
    "rubrics": [
        {"question_id": "rag26-1-1", "question_text": "What does the revenue pay for?", "importance": "A: Have to Know",
         "short_answers": [{"answer_id": "rag26-1-1-1", "answer_text": "Transit.", "references": ["d1"]},
                           {"answer_id": "rag26-1-1-2", "answer_text": "Roads.", "references": ["d3"]}]},
        {"question_id": "rag26-1-2", "question_text": "Who bears the cost?", "importance": "B: Good to Know",
         "short_answers": [{"answer_id": "rag26-1-2-1", "answer_text": "Low-income drivers.", "references": ["d2"]}]},
        {"question_id": "rag26-1-3", "question_text": "Is it popular?", "importance": "C: Nice to Know",
         "short_answers": [{"answer_id": "rag26-1-3-1", "answer_text": "Support grows.", "references": ["d4"]}]},
    ],
}  # fmt: skip
JUDGMENTS = """topic_id,run_tag,question_id,answer_id,annotation
rag26-1,alpha,rag26-1-1,rag26-1-1-1,supports
rag26-1,alpha,rag26-1-1,rag26-1-1-2,partial
rag26-1,alpha,rag26-1-2,rag26-1-2-1,supports
rag26-1,alpha,rag26-1-3,rag26-1-3-1,contradicts
rag26-1,beta,rag26-1-1,rag26-1-1-1,none
rag26-1,beta,rag26-1-2,rag26-1-2-1,supports
rag26-1,beta,rag26-1-3,rag26-1-3-1,none
"""
# Pair counts consistent with strengths 4 : 2 : 1 (alpha : beta : gamma), so the MLE is exactly those ratios:
# alpha-beta 1 win + 2 ties (2 : 1), beta-gamma 2 : 1, alpha-gamma 4 : 1; one both_bad left out.
ARENA = [
    ("12-1_3", "alpha", "beta", "a"), ("rag26-1", "beta", "alpha", "tie"), ("2024-145979", "alpha", "beta", "tie"),
    ("12-1_3", "beta", "gamma", "a"), ("rag26-2", "gamma", "beta", "b"), ("12-2_1", "beta", "gamma", "b"),
    ("rag26-1", "alpha", "gamma", "a"), ("rag26-2", "gamma", "alpha", "b"), ("12-1_3", "alpha", "gamma", "a"),
    ("2024-145979", "gamma", "alpha", "b"), ("rag26-1", "gamma", "alpha", "a"), ("12-2_1", "alpha", "gamma", "both_bad"),
]  # fmt: skip


def _write_inputs(tmp_path) -> dict:
    (tmp_path / "topics.tsv").write_text(TOPICS, encoding="utf-8")
    lines = []
    for (run, topic), sentences in ANSWERS.items():
        refs = list(dict.fromkeys(d for _, docs in sentences for d in docs))
        meta = {"team_id": f"team-{run}", "narrative_id": topic, "narrative": NARRATIVES[topic], "run_id": run,
                "run_desc": "hand-written"}  # fmt: skip
        answer = [{"text": t, "citations": [refs.index(d) for d in docs]} for t, docs in sentences]
        lines.append({"metadata": meta, "references": refs, "answer": answer})
    (tmp_path / "answers.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    bank = [
        {"metadata": {"team_id": "org", "topic_id": topic, "run_id": "bank-v1"},
         "nugget_bank": [{"question": q, "aggregator_type": agg, "answers": [{"answer": a, "references": []} for a in answers],
                          **({"importance": imp} if imp is not None else {})} for q, agg, answers, imp in nuggets]}
        for topic, nuggets in BANK
    ]  # fmt: skip
    (tmp_path / "bank.jsonl").write_text("".join(json.dumps(x) + "\n" for x in bank), encoding="utf-8")
    (tmp_path / "rubrics").mkdir()
    (tmp_path / "rubrics" / "rag26-1.json").write_text(json.dumps(RUBRIC), encoding="utf-8")
    (tmp_path / "judgments.csv").write_text(JUDGMENTS, encoding="utf-8")
    arena = [{"topic_id": t, "run_a": a, "run_b": b, "winner": w} for t, a, b, w in ARENA]
    (tmp_path / "arena.jsonl").write_text("".join(json.dumps(x) + "\n" for x in arena), encoding="utf-8")
    return {name: str(tmp_path / name) for name in ("topics.tsv", "answers.jsonl", "bank.jsonl", "rubrics",
                                                      "judgments.csv", "arena.jsonl")}  # fmt: skip


def cli_json(*args: str, db) -> dict:
    return json.loads(run_cli(*args, "--json", db=db, check=True).stdout)


def stub_judge(request: dict) -> str:
    """Battles: always the left answer. Bank matches: contained when a sentence holds the answer's words."""
    fields = enclosed(request)
    if "answer" in fields and "report" in fields:
        lines = fields["report"].lower().splitlines()
        hits = [n for n, line in enumerate(lines, start=1) if fields["answer"].lower() in line]
        return json.dumps({"contains": "yes" if hits else "no", "sentences": hits})
    return "A"


def _leaderboard(db, layout: str, source: str, measures: list[str], out) -> dict[tuple[str, str, str], float]:
    """(run, topic, measure) -> value of an exported leaderboard, read back as AutoJudge reads its layout."""
    args = ["export", "leaderboard", "--layout", layout, "--source", source, "--out", str(out)]
    run_cli(*args, *(x for m in measures for x in ("--measure", m)), db=db, check=True)
    found = {}
    if layout == "trec_eval":  # one file per run: measure topic value
        for file in sorted(out.iterdir()):
            for line in file.read_text().splitlines():
                measure, topic, value = line.split("\t")
                found[(file.name, topic, measure)] = float(value)
        return found
    for line in out.read_text().splitlines():
        fields = line.split("\t")
        run, measure, topic, value = fields if layout == "tot" else (fields[0], fields[2], fields[1], fields[3])
        found[(run, topic, measure)] = float(value)
    return found


def _expected_board(result: dict, measures: dict[str, str]) -> dict[tuple[str, str, str], float]:
    """A score command's ``--json --per-topic`` figures as leaderboard rows (``all`` the run's figure)."""
    rows = {}
    for board_name, field in measures.items():
        for run, topics in result["per_topic"].items():
            for topic, values in topics.items():
                rows[(run, topic, board_name)] = values[field]
            rows[(run, "all", board_name)] = result["runs"][run][field]
    return rows


def test_the_2026_campaign_journey(tmp_path, stub_llm, monkeypatch):
    for var in ("ASSESS_LLM_BASE_URL", "ASSESS_LLM_MODEL", "ASSESS_LLM_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    files = _write_inputs(tmp_path)
    db = tmp_path / "campaign.db"  # no init: an import creates the store

    # battles judged elsewhere, topic ids of both kinds, ranked from the file alone
    assert cli_json("battles", "import", files["arena.jsonl"], "--source", "arena", db=db) == {
        "battles": 12, "new": 12, "changed": 0, "topics": 5, "runs": 3,
    }  # fmt: skip
    ranked = cli_json("battles", "rank", "--source", "arena", "--replicates", "200", db=db)
    assert set(ranked) == {"model", "runs"} and list(ranked["runs"]) == ["alpha", "beta", "gamma"]
    assert "centred to mean 0" in ranked["model"] and "both_bad battles are left out" in ranked["model"]
    by_hand = {"alpha": (math.log(2), 0.75, 8), "beta": (0.0, 0.5, 6), "gamma": (-math.log(2), 0.25, 8)}
    for run, (strength, win_rate, battles) in by_hand.items():
        got = ranked["runs"][run]
        assert set(got) == {"strength", "low", "high", "win_rate", "battles"}
        assert abs(got["strength"] - strength) < 1e-9
        assert (got["win_rate"], got["battles"]) == (win_rate, battles)
        assert got["low"] <= got["strength"] <= got["high"]

    # the RAG 2026 topics and answers, a plan over them, LLM battles in both orders
    run_cli("import", "rag-topics", files["topics.tsv"], db=db, check=True)
    imported = cli_json("import", "rag-answers", files["answers.jsonl"], "--topics", files["topics.tsv"], db=db)
    assert (imported["responses"], imported["runs"], "warnings" in imported) == (6, 3, False)
    planned = cli_json("battles", "plan", "--name", "all-pairs", "--method", "all", db=db)
    assert (planned["pairs"], planned["topics"]) == (6, 2)
    stub_llm.reply = stub_judge
    llm = ("--model", "stub", "--source", "llm:stub", "--base-url", stub_llm.base_url, "--no-progress")
    run_cli("prejudge", "--task", "battle", *llm, db=db, check=True)
    assert len(stub_llm.requests) == 12  # 3 pairs x 2 topics x both orders
    biased = cli_json("battles", "rank", "--source", "llm:stub", "--replicates", "50", "--details", db=db)
    assert biased["swapped_order"] == {"pairs": 6, "flips": 6, "flip_share": 1.0, "consistent_share": 0.0,
                                       "left_share": 1.0}  # fmt: skip
    assert {r: (v["strength"], v["win_rate"], v["battles"]) for r, v in biased["runs"].items()} == dict.fromkeys(
        ("alpha", "beta", "gamma"), (0.0, 0.5, 8)
    )  # every pair won once each way: equal strengths
    assert run_cli("battles", "rank", "--source", "llm:stub", "--details", db=db).returncode == 2

    # a RAGTIME nugget bank matched by the LLM: AND needs every answer, OR one
    run_cli("nuggets", "bank", "import", files["bank.jsonl"], db=db, check=True)
    run_cli("prejudge", "--task", "bank-match", *llm, db=db, check=True)
    coverage = cli_json("nuggets", "bank", "score", "--source", "llm:stub", "--per-topic", db=db)
    # alpha: rag26-1 OR met, AND half (1/2); rag26-2 OR met, AND none (1/2). beta: 0, then AND met (1/2). gamma: 0
    assert {r: v["coverage"] for r, v in coverage["runs"].items()} == {"alpha": 0.5, "beta": 0.25, "gamma": 0.0}
    weighted = cli_json("nuggets", "bank", "score", "--source", "llm:stub", "--weighted", "--per-topic", db=db)
    assert weighted["per_topic"]["alpha"] == {"rag26-1": {"coverage": 1 / 3}, "rag26-2": {"coverage": 1 / 3}}
    assert weighted["per_topic"]["beta"] == {"rag26-1": {"coverage": 0.0}, "rag26-2": {"coverage": 2 / 3}}

    # a DRAGUN rubric: weights 4, 2, 1 (W = 7); alpha (supports, partial), supports, contradicts; beta none,
    # supports, none
    run_cli("rubrics", "import", files["rubrics"], db=db, check=True)
    run_cli("rubrics", "import-judgments", files["judgments.csv"], "--source", "dragun", db=db, check=True)
    dragun = cli_json("rubrics", "score", "--source", "dragun", "--per-topic", db=db)
    assert dragun["runs"]["alpha"] == {"supportive": (4 * 0.75 + 2) / 7, "contradictory": 1 / 7, "topics": 1}
    assert dragun["runs"]["beta"] == {"supportive": 2 / 7, "contradictory": 0.0, "topics": 1}

    # leaderboards AutoJudge reads, in its three layouts, equal to the score commands' figures
    banks = _expected_board(coverage, {"bank_coverage": "coverage"}) | _expected_board(
        weighted, {"bank_coverage_weighted": "coverage"}
    )
    rubric = _expected_board(dragun, {"rubric_supportive": "supportive", "rubric_contradictory": "contradictory"})
    for layout in ("tot", "ir_measures", "trec_eval"):
        bank_board = _leaderboard(
            db, layout, "llm:stub", list(dict.fromkeys(k[2] for k in banks)), tmp_path / f"b-{layout}"
        )
        assert bank_board == banks, layout
        rubric_board = _leaderboard(
            db, layout, "dragun", list(dict.fromkeys(k[2] for k in rubric)), tmp_path / f"r-{layout}"
        )
        assert rubric_board == rubric, layout


def test_the_bank_and_rubric_imports_create_the_store(tmp_path):
    files = _write_inputs(tmp_path)
    bank = cli_json("nuggets", "bank", "import", files["bank.jsonl"], db=tmp_path / "banks.db")
    assert (bank["banks"], bank["nuggets"], bank["answers"]) == (2, 4, 7)
    rubrics = cli_json("rubrics", "import", files["rubrics"], db=tmp_path / "rubrics.db")
    assert (rubrics["rubrics"], rubrics["questions"], rubrics["answers"]) == (1, 3, 4)
    missing = run_cli("battles", "rank", "--source", "arena", db=tmp_path / "absent.db")
    assert missing.returncode == 2 and "no such database" in missing.stderr  # reading still needs a store
    assert not (tmp_path / "absent.db").exists()
