"""The 2025/2026 answer layouts and AutoJudge leaderboards through the command line (in process): RAG topics
imported as turns, each answer layout imported and exported back byte for byte, warnings printed and stored
anyway (also in ``--json``), hard errors exit 2 naming the file, line and place with the store unchanged, and
leaderboards of stored measures whose ``all`` rows are the numbers ``score`` prints."""

from __future__ import annotations

import json

import pytest

from assess.formats import leaderboard as lb
from tests.helpers import ROOT, run_cli, snapshot
from tests.unit.test_answer_layouts import IKAT, RAG26, RAGTIME, jsonl

TOPICS = "rag2026-37\tIs congestion pricing fair?\n300\tFloods in May\n1-1_2\tWhich tea?\n"


@pytest.fixture
def store(tmp_path):
    """A SQLite store holding the three topics (a RAG 2026 topic, a RAGTIME request, an iKAT turn id)."""
    db = tmp_path / "store.db"
    topics = tmp_path / "topics.tsv"
    topics.write_text(TOPICS, encoding="utf-8")
    proc = run_cli("import", "rag-topics", topics, db=db, check=True)
    assert proc.stdout == f"{topics}: imported conversations 3, turns 3, ptkb_statements 0, ptkb_labels 0\n"
    return db


def refused(*args, db, names: tuple[str, ...]) -> str:
    """Run a command that must be refused: exit 2, one line naming ``names``, nothing written."""
    before = snapshot(db)
    proc = run_cli(*args, db=db)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    message = proc.stderr.strip()
    assert len(message.splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for name in names:
        assert name in message, (name, message)
    assert snapshot(db) == before
    return message


@pytest.mark.parametrize(
    "answer, layout",
    [(RAG26, "trec-rag-2026"), (RAGTIME, "ragtime"), (IKAT, "ikat-2025-run")],
    ids=["trec-rag-2026", "ragtime", "ikat-2025-run"],
)
def test_store_round_trip_per_layout(store, tmp_path, answer, layout):
    """Imported (told by its fields, and with --layout), exported in its layout: the same bytes; imported
    again into a new store and exported: the same bytes again; a second import changes nothing."""
    given = tmp_path / "in.jsonl"
    given.write_text(jsonl(answer), encoding="utf-8")
    proc = run_cli("import", "rag-answers", given, "--json", db=store, check=True)
    summary = json.loads(proc.stdout)
    assert (summary["responses"], summary["new"], summary["runs"]) == (1, 1, 1)
    assert "warnings" not in summary and proc.stderr == ""
    again = run_cli("import", "rag-answers", given, "--layout", layout, "--json", db=store, check=True)
    assert json.loads(again.stdout)["unchanged"] == 1
    out = tmp_path / "out.jsonl"
    proc = run_cli("export", "rag-answers", "--out", out, "--layout", layout, db=store, check=True)
    assert out.read_text(encoding="utf-8") == given.read_text(encoding="utf-8")
    other = tmp_path / "other.db"
    run_cli("import", "rag-topics", tmp_path / "topics.tsv", db=other, check=True)
    run_cli("import", "rag-answers", out, db=other, check=True)
    second = tmp_path / "second.jsonl"
    run_cli("export", "rag-answers", "--out", second, db=other, check=True)  # each in the layout it was read in
    assert second.read_bytes() == given.read_bytes()


def test_warnings_are_printed_and_stored_anyway(store, tmp_path):
    many = {**RAG26, "answer": [{"text": "Four cites.", "citations": [0, 1, 2, 0]}]}
    path = tmp_path / "warn.jsonl"
    path.write_text(jsonl(many), encoding="utf-8")
    proc = run_cli("import", "rag-answers", path, db=store, check=True)
    assert proc.stderr == (
        f"warning: {path}:1: 4 citations in one sentence (trec-rag-2026 judges the first 3) at "
        "['answer'][0]['citations']\n"
    )
    assert proc.stdout.startswith(f"{path}: imported responses 1, with_citations 1, citations 4, new 1,")
    proc = run_cli("import", "rag-answers", path, "--json", db=store, check=True)
    assert json.loads(proc.stdout)["warnings"] == [
        f"{path}:1: 4 citations in one sentence (trec-rag-2026 judges the first 3) at ['answer'][0]['citations']"
    ]
    out = tmp_path / "out.jsonl"
    run_cli("export", "rag-answers", "--out", out, db=store, check=True)
    assert json.loads(out.read_text(encoding="utf-8"))["answer"][0]["citations"] == [0, 1, 2, 0]


def test_ragtime_limits_from_requests(store, tmp_path):
    requests = tmp_path / "requests.jsonl"
    requests.write_text(jsonl({"request_id": "300", "title": "Floods", "limit": 40}), encoding="utf-8")
    path = tmp_path / "rt.jsonl"
    path.write_text(jsonl(RAGTIME), encoding="utf-8")
    proc = run_cli("import", "rag-answers", path, "--topics", requests, "--json", db=store, check=True)
    assert json.loads(proc.stdout)["warnings"] == [
        f"{path}:1: 70 characters after NFKC (the request allows 40) at ['responses']"
    ]


@pytest.mark.parametrize(
    "content, args, names",
    [
        (jsonl(RAG26, {"foo": 1}), (), ("bad.jsonl:2: expected a TREC RAG answer",)),
        (
            jsonl({**IKAT, "metadata": {**IKAT["metadata"], "run_type": "fast"}}),
            (),
            ("bad.jsonl:1: expected a run type manual / automatic / generation-only at ['metadata']['run_type']",),
        ),
        (jsonl(RAGTIME), ("--layout", "trec-rag-2026"), ("bad.jsonl:1: expected a field 'narrative' at ['metadata']",)),
        (
            jsonl({**RAG26, "metadata": {**RAG26["metadata"], "narrative_id": "unknown-topic"}}),
            (),
            ("bad.jsonl:1: expected a turn id present in the store", "'unknown-topic'"),
        ),
    ],
)
def test_malformed_answer_files_exit_2_and_store_nothing(store, tmp_path, content, args, names):
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    refused("import", "rag-answers", path, *args, db=store, names=names)


def test_layout_options_refused_where_they_do_not_fit(store, tmp_path):
    refused(
        "import",
        "rag-topics",
        tmp_path / "topics.tsv",
        "--layout",
        "ragtime",
        db=store,
        names=("--layout is for rag-answers imports, not rag-topics",),
    )
    refused(
        "export",
        "rag-answers",
        "--out",
        tmp_path / "x.jsonl",
        "--layout",
        "tot",
        db=store,
        names=("--layout tot is not an answer layout",),
    )
    refused(
        "export",
        "qrels",
        "--source",
        "x",
        "--measure",
        "AP",
        db=store,
        names=("--measure is for leaderboard exports, not qrels",),
    )
    refused(
        "export",
        "leaderboard",
        "--layout",
        "tot",
        "--source",
        "x",
        db=store,
        names=("export leaderboard needs --measure NAME",),
    )
    refused(
        "export",
        "leaderboard",
        "--layout",
        "trec_eval",
        "--measure",
        "AP",
        "--source",
        "x",
        db=store,
        names=("needs --out DIR",),
    )
    bad = tmp_path / "bad.tsv"
    bad.write_text("a\tb\tc\n", encoding="utf-8")
    refused("import", "rag-topics", bad, db=store, names=(f"{bad}:1: expected two tab-separated fields",))


# ---------------------------------------------------------------------------------------------- leaderboards


def test_citation_leaderboard_hand_worked(store, tmp_path):
    """Citation labels of one response: sentence 1 cites s0 (fully supported) and s1 (not), sentence 2 s1
    (partially) and s2 (not). Strict recall 1/2, lax recall 2/2; strict precision 1/4, lax precision 2/4."""
    from assess.services import rag
    from store import open_db
    from store.sources import ensure_source

    path = tmp_path / "a.jsonl"
    path.write_text(jsonl(RAG26), encoding="utf-8")
    run_cli("import", "rag-answers", path, db=store, check=True)
    s0, s1, s2 = RAG26["references"]
    with open_db(str(store)) as db:
        ensure_source(db, "ann", "assessor")
        for sentence, passage, value in ((1, s0, 2), (1, s1, 0), (2, s1, 1), (2, s2, 0)):
            rag.save_citation(db, "ann", "rag2026-37", rag.citation_key("my-rag-run", sentence, passage), value)
    measures = ("--measure", "citation_recall", "--measure", "citation_precision", "--measure", "citation_recall_lax")
    proc = run_cli(
        "export",
        "leaderboard",
        "--layout",
        "tot",
        *measures,
        "--measure",
        "citation_precision_lax",
        "--source",
        "ann",
        db=store,
        check=True,
    )
    assert proc.stdout == (
        "my-rag-run\tcitation_recall\trag2026-37\t0.5\n"
        "my-rag-run\tcitation_precision\trag2026-37\t0.25\n"
        "my-rag-run\tcitation_recall_lax\trag2026-37\t1.0\n"
        "my-rag-run\tcitation_precision_lax\trag2026-37\t0.5\n"
        "my-rag-run\tcitation_recall\tall\t0.5\n"
        "my-rag-run\tcitation_precision\tall\t0.25\n"
        "my-rag-run\tcitation_recall_lax\tall\t1.0\n"
        "my-rag-run\tcitation_precision_lax\tall\t0.5\n"
    )
    out = tmp_path / "board.ir"
    proc = run_cli(
        "export",
        "leaderboard",
        "--layout",
        "ir_measures",
        *measures,
        "--source",
        "ann",
        "--out",
        out,
        db=store,
        check=True,
    )
    assert proc.stdout == f"{out}: wrote runs 1, lines 6, files 1\n"
    assert out.read_text(encoding="utf-8").splitlines()[0] == "my-rag-run\trag2026-37\tcitation_recall\t0.5"


@pytest.fixture(scope="module")
def demo(tmp_path_factory, demo_copy):
    return demo_copy(tmp_path_factory.mktemp("demo") / "demo.db")


def test_nugget_leaderboard_all_rows_are_the_scores(demo, tmp_path):
    """The ``all`` row of each run and measure is the run's mean as ``score nuggets`` prints it."""
    folder = tmp_path / "board"
    proc = run_cli(
        "export",
        "leaderboard",
        "--layout",
        "trec_eval",
        "--measure",
        "all_strict",
        "--measure",
        "ntr_recall_lax",
        "--source",
        "llm:demo-gpt",
        "--out",
        folder,
        db=demo,
        check=True,
    )
    assert proc.stdout == f"{folder}: wrote runs 3, lines 78, files 3\n"
    entries = lb.read_leaderboard(folder, "trec_eval")
    scores = json.loads(
        run_cli("score", "nuggets", "--ntr-source", "llm:demo-gpt", "--json", db=demo, check=True).stdout
    )
    runs = scores["nugget_scores"]["runs"]
    alls = {(e.run, e.measure): e.value for e in entries if e.topic == "all"}
    assert alls == {
        (run, m): runs[run]["original"]["mean"][m] for run in runs for m in ("all_strict", "ntr_recall_lax")
    }
    assert alls[("demo-rerank", "all_strict")] == pytest.approx(0.9361111111111112)
    per_turn = {(e.run, e.topic): e.value for e in entries if e.measure == "all_strict" and e.topic != "all"}
    assert per_turn == {(run, t): v["all_strict"] for run in runs for t, v in runs[run]["original"]["per_turn"].items()}


def test_qrels_leaderboard_matches_score_runs(demo, tmp_path):
    """nDCG@3 and P@20 of the stored runs against demo-ann's labels: per topic and ``all`` as ``score runs``
    computes them from the exported qrels and the demo's run files."""
    out = tmp_path / "board.tot"
    run_cli(
        "export",
        "leaderboard",
        "--layout",
        "tot",
        "--measure",
        "nDCG@3",
        "--measure",
        "P@20",
        "--source",
        "demo-ann",
        "--out",
        out,
        "--run",
        "demo-dense",
        db=demo,
        check=True,
    )
    entries = lb.read_leaderboard(out, "tot")
    assert {e.run for e in entries} == {"demo-dense"} and {e.measure for e in entries} == {"nDCG@3", "P(rel=2)@20"}
    qrels = tmp_path / "ann.qrels"
    qrels.write_text(run_cli("export", "qrels", "--source", "demo-ann", db=demo, check=True).stdout, encoding="utf-8")
    runs = [str(p) for p in sorted((ROOT / "assets" / "demo" / "runs").iterdir())]
    args = [a for r in runs for a in ("--run", r)]
    scored = json.loads(
        run_cli(
            "score",
            "runs",
            "--qrels",
            qrels,
            *args,
            "--measure",
            "nDCG@3",
            "--measure",
            "P@20",
            "--per-query",
            "--json",
            check=True,
        ).stdout
    )
    dense = scored["runs"]["demo-dense"]
    assert {(e.topic, e.measure): e.value for e in entries} == {
        **{(t, m): v for m, per in dense["per_query"].items() for t, v in per.items()},
        **{("all", m): pytest.approx(v) for m, v in dense["mean"].items()},
    }


@pytest.mark.both_engines
def test_one_file_of_three_layouts_round_trips_on_both_engines(store_target, tmp_path):
    """One JSONL mixing the three layouts, each line told by its fields: stored and exported back (each answer
    in the layout it was read in) byte for byte, on SQLite and PostgreSQL."""
    topics = tmp_path / "topics.tsv"
    topics.write_text(TOPICS, encoding="utf-8")
    run_cli("import", "rag-topics", topics, db=store_target, check=True)
    given = tmp_path / "mixed.jsonl"
    given.write_text(jsonl(RAG26, RAGTIME, IKAT), encoding="utf-8")
    proc = run_cli("import", "rag-answers", given, "--json", db=store_target, check=True)
    assert {k: json.loads(proc.stdout)[k] for k in ("responses", "citations", "new", "runs")} == {
        "responses": 3,
        "citations": 7,
        "new": 3,
        "runs": 3,
    }
    out = tmp_path / "out.jsonl"
    run_cli("export", "rag-answers", "--out", out, db=store_target, check=True)
    # runs in name order: ikat-gen, my-rag-run, rt-1
    assert out.read_text(encoding="utf-8") == jsonl(IKAT, RAG26, RAGTIME)
