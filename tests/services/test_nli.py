"""The local NLI judge with a tiny randomly initialised BERT built in the test (no downloads): batching,
the entailment class, NtN matching, de-duplication, NtR pre-judgments from the CLI, and `nuggets match` with
the NLI backend (NtR and NtN; the rest of `nuggets match` is in test_nugget_match.py)."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from assess.llm.clients import ClientConfigError, NliClient, dedup_keep, ntn_matches
from tests.helpers import run_cli
from tests.services.test_nugget_match import (
    RUNS,
    assert_scores_match,
    extracted_nuggets,
    items,
    match,
    ok,
    recall_by_hand,
    stored_labels,
)
from tests.stub_llm import stub_llm  # noqa: F401  (fixture)

WORDS = [
    "the",
    "a",
    "runner",
    "runs",
    "run",
    "plan",
    "week",
    "weeks",
    "knee",
    "sister",
    "race",
    "slow",
    "slowly",
    "fast",
    "shoes",
    "walk",
    "ten",
    "k",
    "is",
    "not",
    "most",
    "beginner",
    "plans",
    "last",
    "to",
    "three",
    "sessions",
    "with",
    "rest",
    "day",
    "between",
    "them",
    "on",
    "day",
    "start",
    "near",
    "back",
]


def build_tiny_nli(path, *, entail_index: int = 0, seed: int = 0):
    """A 2-layer, hidden-32 BERT classifier with a local word-piece vocabulary, saved with save_pretrained."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    path.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(set(WORDS))
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    BertTokenizerFast(vocab_file=str(path / "vocab.txt")).save_pretrained(path)
    names = ["neutral", "contradiction"]
    names.insert(entail_index, "entailment")
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=256,
        num_labels=3,
        initializer_range=0.5,
        id2label=dict(enumerate(names)),
        label2id={n: i for i, n in enumerate(names)},
    )
    BertForSequenceClassification(config).eval().save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_tiny_nli(tmp_path_factory.mktemp("nli") / "tiny")


PAIRS = [
    ("most beginner plans last ten weeks", "plans last ten weeks"),
    ("the knee", "a runner runs slowly"),
    ("start near the back on race day", "start slowly"),
    ("walk", "the sister runs a ten k race with rest"),
    ("unknownword zebra", "the plan"),
]


def test_batched_scores_equal_one_pair_at_a_time_and_keep_the_order(tiny_model):
    nli = NliClient(str(tiny_model), batch_size=3, local_files_only=True)
    batched = nli.entailment(PAIRS)
    single = [nli.entailment([p], batch_size=1)[0] for p in PAIRS]
    assert batched == pytest.approx(single, abs=1e-5)
    assert all(0.0 < p < 1.0 for p in batched) and len(set(round(p, 4) for p in batched)) > 1
    assert nli.device == "cpu"


def test_the_entailment_class_is_found_from_id2label(tmp_path):
    import torch

    path = build_tiny_nli(tmp_path / "m", entail_index=2, seed=3)
    nli = NliClient(str(path), local_files_only=True).load()
    assert nli._entail == 2
    enc = nli._tokenizer([PAIRS[0][0]], [PAIRS[0][1]], return_tensors="pt")
    with torch.inference_mode():
        expected = torch.softmax(nli._model(**enc).logits, -1)[0, 2].item()
    assert nli.entailment([PAIRS[0]])[0] == pytest.approx(expected, abs=1e-6)
    assert nli.entails([PAIRS[0]], threshold=expected - 1e-6) == [True]
    assert nli.entails([PAIRS[0]], threshold=expected + 1e-6) == [False]


def test_a_missing_model_is_a_clear_error(tmp_path):
    with pytest.raises(ClientConfigError, match="cannot load the NLI model"):
        NliClient(str(tmp_path / "absent"), local_files_only=True).load()


class FakeNli(NliClient):
    """Entailment = every word of the hypothesis occurs in the premise."""

    def __init__(self):
        super().__init__("fake")

    def entailment(self, pairs, *, batch_size=None):
        return [float(set(h.lower().split()) <= set(p.lower().split())) for p, h in pairs]


def test_ntn_pairs_are_the_entailed_gold_nuggets():
    response = ["plans last ten weeks with three sessions", "start near the back"]
    gold = ["plans last ten weeks", "three sessions", "rest day between them", "start near the back"]
    assert ntn_matches(FakeNli(), response, gold) == [(0, 0), (0, 1), (1, 3)]


def test_dedup_drops_entailed_nuggets_and_keeps_the_first_of_equals():
    nuggets = ["plans last ten weeks", "plans last ten weeks with rest", "ten weeks", "knee", "Knee", "walk"]
    assert dedup_keep(FakeNli(), nuggets) == [False, True, False, True, False, True]


def test_ntr_prejudgments_with_the_nli_backend(tmp_path, tiny_model, monkeypatch, capsys):
    db = tmp_path / "demo.db"
    run_cli("init", "--demo", db=db, check=True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # never the network, even by mistake
    from assess.cli import main

    # in-process (torch is loaded already): the same parser and handler as `python -m assess`
    code = main(
        [
            "prejudge",
            "--task",
            "ntr",
            "--backend",
            "nli",
            "--model",
            str(tiny_model),
            "--source",
            "llm:tiny-nli",
            "--nuggets",
            "gold",
            "--batch-size",
            "16",
            "--json",
            "--no-progress",
            "--db",
            str(db),
        ]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    summary = json.loads(out.out)
    from store import open_db
    from store.db import rows as query
    from store.db import value

    store = open_db(db)
    expected = value(
        store, "SELECT COUNT(*) AS n FROM responses r JOIN nuggets n ON n.turn_id = r.turn_id WHERE n.source = 'gold'"
    )
    assert summary["asked"] == summary["ok"] == expected
    # each answer (item 'nugget_id run') beside the label it gave
    labels = {
        (f"{r['nugget_id']} {r['run']}"): r["match"]
        for r in query(store, "SELECT nugget_id, run, match FROM ntr_labels WHERE source = 'llm:tiny-nli'")
    }
    answers = query(store, "SELECT item_id, raw_output FROM prejudgments WHERE source = 'llm:tiny-nli'")
    store.close()
    assert len(answers) == len(labels) == expected
    assert all(labels[a["item_id"]] == int(json.loads(a["raw_output"])["entailment"] >= 0.5) for a in answers)
    again = run_cli(
        "prejudge",
        "--task",
        "ntr",
        "--backend",
        "nli",
        "--model",
        str(tiny_model),
        "--source",
        "llm:tiny-nli",
        "--json",
        db=db,
    )
    assert json.loads(again.stdout)["asked"] == 0 and f"{expected} already judged" in again.stderr
    wrong = run_cli("prejudge", "--task", "passage", "--backend", "nli", "--model", str(tiny_model), db=db)
    assert wrong.returncode == 2 and "ntr task only" in wrong.stderr


# ------------------------------------------------------------------------------- `nuggets match` with the NLI judge
# Here rather than in test_nugget_match.py: the tests that load torch share one module (one import, one model).


@pytest.fixture
def demo(tmp_path, demo_copy):
    return demo_copy(tmp_path / "demo.db")


def test_ntr_with_nli_stores_the_judges_entailment_and_scores_it(demo, tiny_model):
    cases = items(demo)
    probs = NliClient(str(tiny_model)).entailment([(c["response"], c["nugget"]) for c in cases])
    threshold = sorted(probs)[len(probs) // 2]  # about half matched, half not
    args = ("--method", "ntr", "--backend", "nli", "--model", tiny_model, "--threshold", threshold)
    out = ok(match(demo, *sum((("--run", r) for r in RUNS), ()), *args))
    source = f"nli:{tiny_model}"
    assert out["matching"]["source"] == source and out["matching"]["asked"] == len(cases) == 128

    want = {(c["turn_id"], c["nugget_id"], c["run"]): int(p >= threshold) for c, p in zip(cases, probs)}
    assert stored_labels(demo, source) == want
    assert 0 < sum(want.values()) < len(want)
    assert_scores_match(demo, source, recall_by_hand(want))

    again = ok(match(demo, *sum((("--run", r) for r in RUNS), ()), *args))["matching"]
    assert (again["asked"], again["copied"], again["already"]) == (0, 0, 128)


def test_ntn_with_nli_extracts_once_and_matches_by_extracted_entails_gold(demo, tiny_model, stub_llm):
    base = ("--method", "ntn", "--backend", "nli", "--model", tiny_model, "--extract-model", "stub-1",
            "--endpoint", stub_llm.base_url, "--run", RUNS[0], "--run", RUNS[1])  # fmt: skip
    first = ok(match(demo, *base, "--threshold", "0.4"))
    assert first["nuggets_source"] == "llm:stub-1"
    assert first["extraction"]["asked"] == len(stub_llm.requests) == 24  # 12 responses per run, each asked once
    extracted = extracted_nuggets(demo, "llm:stub-1")
    assert len(extracted) == 24 and all(extracted.values())

    # the stored labels are CONE-RAG's NtN rule applied by the library function, response by response
    judge, cases = NliClient(str(tiny_model)), items(demo)
    by_response = defaultdict(list)
    for c in cases:
        by_response[(c["turn_id"], c["run"])].append(c)
    want = {}
    for key, golds in by_response.items():
        hits = {j for _, j in ntn_matches(judge, extracted[key], [g["nugget"] for g in golds], threshold=0.4)}
        want |= {(g["turn_id"], g["nugget_id"], g["run"]): int(j in hits) for j, g in enumerate(golds)}
    source = f"nli-ntn:{tiny_model}"
    assert stored_labels(demo, source) == want
    assert first["matching"]["matched"] == sum(want.values())
    assert_scores_match(demo, source, recall_by_hand(want))

    # a re-run asks nothing: no extraction call, no new NtN answer
    again = ok(match(demo, *base, "--threshold", "0.4"))
    assert again["extraction"] is None and len(stub_llm.requests) == 24
    assert (again["matching"]["asked"], again["matching"]["already"]) == (0, 128)
    # another threshold is another rule version: matched again, into the same labels
    other = ok(match(demo, *base, "--threshold", "0.9"))["matching"]
    assert other["asked"] == 128 and other["prompt_version"] == "ntn-nli@p>=0.9"
