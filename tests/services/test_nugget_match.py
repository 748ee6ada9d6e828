"""`nuggets match`: CONE-RAG's automatic pipeline end to end on the demo store.

NtR and NtN with the local OpenAI-compatible stub (real HTTP) and with a tiny NLI model (no download; those
tests are in test_nli.py, the module that loads torch); the stored labels are checked against an independent computation (the NLI judge called
directly, the stub's own answering rule), `score nuggets --ntr-source` against recall worked out by
hand from them; re-runs ask nothing twice, an interrupted run keeps whole items only, bad input is one
line with exit 2 and leaves the store unchanged.
"""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from tests.helpers import run_cli, snapshot
from tests.stub_llm import Reply, enclosed, stub_llm  # noqa: F401  (fixture)

RUNS = ("demo-bm25", "demo-dense")


@pytest.fixture
def demo(tmp_path, demo_copy):
    return demo_copy(tmp_path / "demo.db")


@pytest.fixture
def no_llm_env(monkeypatch):
    for var in ("ASSESS_LLM_BASE_URL", "ASSESS_LLM_MODEL", "ASSESS_LLM_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)


def match(db, *args):
    return run_cli("nuggets", "match", "--gold", "gold", *args, "--json", db=db)


def ok(proc) -> dict:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def items(db_path, runs=RUNS) -> list[dict]:
    """Every (turn, gold nugget, run, response) the demo's gold set and ``runs`` give."""
    from store import open_db
    from store.prejudgments import ntr_items

    with open_db(db_path) as db:
        return [r for r in ntr_items(db, "gold") if r["run"] in runs]


def stored_labels(db_path, source: str) -> dict[tuple, int]:
    from store import labels, open_db

    with open_db(db_path) as db:
        return labels.values(db, "ntr", source)


def recall_by_hand(matched: dict[tuple, int]) -> dict[str, dict[str, float]]:
    """CONE-RAG NtR recall per run: per turn, matched gold nuggets / gold nuggets; the run's mean over turns."""
    per: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for (turn, _nugget, run), value in matched.items():
        per[run][turn].append(value)
    out = {}
    for run, turns in per.items():
        per_turn = {t: sum(v) / len(v) for t, v in turns.items()}
        out[run] = {"mean": sum(per_turn.values()) / len(per_turn), "per_turn": per_turn}
    return out


def scored(db_path, source: str) -> dict:
    out = ok(run_cli("score", "nuggets", "--ntr-source", source, "--nugget-source", "gold", "--json", db=db_path))
    return {run: per["original"] for run, per in out["ntr_recall"]["runs"].items()}


def assert_scores_match(db_path, source: str, expected: dict) -> None:
    got = scored(db_path, source)
    assert set(got) == set(expected)
    for run, want in expected.items():
        assert got[run]["mean"] == pytest.approx(want["mean"])
        assert got[run]["per_turn"] == pytest.approx(want["per_turn"])


# ------------------------------------------------------------------------------------------- NtR


def test_ntr_with_chat_scores_recall_worked_out_from_the_stubs_rule(demo, stub_llm):
    def rule(request):  # yes when the gold nugget's text has an even length
        return Reply(content="yes" if len(enclosed(request, "nugget")) % 2 == 0 else "no")

    stub_llm.reply = rule
    out = ok(match(demo, "--run", "demo-rerank", "--method", "ntr", "--backend", "chat", "--model", "stub-1",
                   "--endpoint", stub_llm.base_url))  # fmt: skip
    cases = items(demo, ("demo-rerank",))
    assert len(stub_llm.requests) == len(cases) == out["matching"]["asked"] == 64
    want = {(c["turn_id"], c["nugget_id"], c["run"]): int(len(c["nugget"]) % 2 == 0) for c in cases}
    assert stored_labels(demo, "llm:stub-1") == want
    expected = recall_by_hand(want)
    assert_scores_match(demo, "llm:stub-1", expected)
    # a few turns by hand, from the texts themselves
    turn = cases[0]["turn_id"]
    texts = [c["nugget"] for c in cases if c["turn_id"] == turn]
    assert expected["demo-rerank"]["per_turn"][turn] == sum(len(t) % 2 == 0 for t in texts) / len(texts)


# ------------------------------------------------------------------------------------------- NtN


def extracted_nuggets(db_path, source: str, runs=RUNS) -> dict[tuple, list[str] | None]:
    from assess.services.matching import response_nuggets
    from store import open_db

    with open_db(db_path) as db:
        return response_nuggets(db, source, runs)


def pair_rule(request) -> Reply:
    """yes when the gold nugget and the extracted nugget share their first word (case-blind)."""
    gold, extracted = enclosed(request, "nugget"), enclosed(request, "response")
    return Reply(content="yes" if gold.split()[0].lower() == extracted.split()[0].lower() else "no")


def stub_answer(request) -> Reply:
    if "exact copies" in request["messages"][-1]["content"].lower():  # extraction: two sentences back
        text = enclosed(request, "text")
        sentences = [s for s in text.replace("!", ".").split(". ") if s.strip()][:2]
        return Reply(content="\n".join(s.strip().rstrip(".") for s in sentences))
    return pair_rule(request)


def test_ntn_with_chat_resumes_after_a_failure_and_never_asks_a_pair_twice(demo, stub_llm):
    stub_llm.reply = stub_answer
    base = ("--method", "ntn", "--backend", "chat", "--model", "stub-1", "--endpoint", stub_llm.base_url,
            "--run", "demo-bm25", "--concurrency", "4")  # fmt: skip
    partial = ok(match(demo, *base, "--limit", "10"))
    # --limit caps each step: 10 responses extracted, 10 of their gold nuggets matched
    assert partial["extraction"]["asked"] == 10 and partial["extraction"]["deferred"] == 2
    m = partial["matching"]
    assert m["asked"] == 10 and m["asked"] + m["deferred"] + m["skipped"] == 64 and m["skipped"] > 0

    # the endpoint refuses the key after a few more calls: the run stops, whole items stay stored
    calls_before = len(stub_llm.requests)

    def then_refuse(request):
        return stub_answer(request) if len(stub_llm.requests) <= calls_before + 8 else Reply(401, "bad key")

    stub_llm.reply = then_refuse
    failed = match(demo, *base)
    assert failed.returncode == 2 and failed.stderr.count("\n") == 1 and "bad key" in failed.stderr
    source = "llm-ntn:stub-1"
    from store import open_db
    from store.prejudgments import stored

    with open_db(demo) as db:
        answers = [r for r in stored(db, source, "ntn") if r["parse_status"] in ("ok", "repaired")]
    assert len(stored_labels(demo, source)) == len(answers)  # never an answer without its label
    stored_at_failure = set(stored_labels(demo, source))

    stub_llm.reply = stub_answer
    done = ok(match(demo, *base))["matching"]
    assert done["already"] + done["asked"] == 64
    labelled = stored_labels(demo, source)
    assert len(labelled) == 64
    extracted = extracted_nuggets(demo, "llm:stub-1", ("demo-bm25",))
    # a pair is asked again only when its item (a gold nugget and the response) was not stored when the key
    # was refused: an item is stored whole, once all its pairs are answered, so the pairs of the items in
    # flight then (how many depends on timing) are asked again; a stored item never is
    asked = [
        (enclosed(r, "nugget"), enclosed(r, "response"))
        for r in stub_llm.requests
        if "exact copies" not in r["messages"][-1]["content"].lower()
    ]
    items_of: dict[str, set] = {}
    for c in items(demo, ("demo-bm25",)):
        items_of.setdefault(c["nugget"], set()).add((c["turn_id"], c["nugget_id"], c["run"]))
    repeated = {pair for pair in asked if asked.count(pair) > 1}
    assert not [pair for pair in repeated if items_of[pair[0]] <= stored_at_failure], "a stored item was asked again"
    pairs = sum(len(extracted[(c["turn_id"], c["run"])]) for c in items(demo, ("demo-bm25",)))
    assert len(set(asked)) == pairs
    # labels follow the rule: some extracted nugget shares the gold nugget's first word
    for (turn, nugget_id, run), value in labelled.items():
        gold = next(c["nugget"] for c in items(demo, ("demo-bm25",)) if c["nugget_id"] == nugget_id)
        firsts = {e.split()[0].lower() for e in extracted[(turn, run)]}
        assert value == int(gold.split()[0].lower() in firsts)
    assert_scores_match(demo, source, recall_by_hand(labelled))
    again = ok(match(demo, *base))["matching"]
    assert again["asked"] == 0 and again["calls"] == 0


def test_ntr_chat_on_postgresql(pg_url, stub_llm):
    store_target = pg_url
    run_cli("init", "--demo", db=store_target, check=True)
    stub_llm.reply = lambda request: Reply(content="yes" if "a" in enclosed(request, "nugget")[:3] else "no")
    out = ok(match(store_target, "--run", "demo-dense", "--method", "ntr", "--backend", "chat", "--model", "stub-1",
                   "--endpoint", stub_llm.base_url))  # fmt: skip
    assert out["matching"]["asked"] == 64
    want = {
        (c["turn_id"], c["nugget_id"], c["run"]): int("a" in c["nugget"][:3])
        for c in items(store_target, ("demo-dense",))
    }
    assert stored_labels(store_target, "llm:stub-1") == want
    assert_scores_match(store_target, "llm:stub-1", recall_by_hand(want))


# ------------------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    "args, says",
    [
        (
            ("--gold", "nope", "--run", "demo-bm25", "--method", "ntr", "--backend", "nli"),
            "no nuggets of source 'nope'",
        ),
        (("--gold", "gold", "--run", "no-such-run", "--method", "ntr", "--backend", "nli"), "no responses of run"),
        (("--gold", "gold", "--run", "demo-bm25", "--method", "ntn", "--backend", "nli"), "--extract-model"),
        (("--gold", "gold", "--run", "demo-bm25", "--method", "ntr", "--backend", "chat"), "no LLM model given"),
        (("--gold", "gold", "--run", "demo-bm25", "--method", "ntr", "--backend", "nli", "--threshold", "2"), "[0, 1]"),
        (("--gold", "gold", "--run", "demo-bm25", "--method", "ntr", "--backend", "nli", "--limit", "-1"), "--limit"),
    ],
)
def test_bad_input_is_one_line_and_leaves_the_store_alone(demo, no_llm_env, args, says):
    before = snapshot(demo)
    proc = run_cli("nuggets", "match", *args, db=demo)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ") and says in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert snapshot(demo) == before


def test_ntn_on_a_store_without_responses_is_refused(tmp_path, no_llm_env):
    from pathlib import Path

    demo_files = Path(__file__).resolve().parents[2] / "assets" / "demo"
    path = tmp_path / "bare.db"
    run_cli("init", db=path, check=True)
    run_cli("import", "topics", demo_files / "topics.json", db=path, check=True)
    run_cli("import", "nuggets", demo_files / "nuggets.json", "--source", "gold", db=path, check=True)
    before = snapshot(path)
    proc = run_cli("nuggets", "match", "--gold", "gold", "--run", "r1", "--method", "ntn", "--backend", "nli",
                   "--extract-model", "m", db=path)  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "no responses of run 'r1'" in proc.stderr and "runs with responses: none" in proc.stderr
    assert snapshot(path) == before
