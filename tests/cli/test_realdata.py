"""The public iKAT files in ../shared/data through the CLI, with the counts the issue states, on each engine."""

from __future__ import annotations

import json

import pytest

from tests.conftest import shared_file
from tests.helpers import run_cli

pytestmark = [pytest.mark.realdata, pytest.mark.both_engines]


@pytest.fixture(scope="module")
def ikat2024(module_store_target):
    topics = shared_file("data", "irlabamsterdam-iKAT", "2024", "data", "2024_test_topics.json")
    nist = shared_file("data", "gyeozai-CFDA-TREC-iKAT2025", "DATA", "topics", "2024_test_qrels.trec")
    gpt4 = shared_file(
        "data", "irlabamsterdam-CONE-RAG", "resources", "automatic_resources", "llm-gpt4-pool-depth-30.txt"
    )
    db = module_store_target
    run_cli("import", "topics", topics, db=db, check=True)
    run_cli("import", "qrels", nist, "--source", "nist", db=db, check=True)
    run_cli("import", "qrels", gpt4, "--source", "llm:gpt-4", db=db, check=True)
    return db, nist


def test_ikat2024_counts(ikat2024):
    db, _ = ikat2024
    stats = json.loads(run_cli("stats", "--json", db=db, check=True).stdout)
    assert stats["conversations"] == 17
    assert stats["turns"] == 218
    assert stats["passage_labels"]["nist"] == {
        "count": 20575,
        "turns": 116,
        "grades": [10680, 4246, 4325, 1199, 125],
        "cannot_judge": 0,
    }
    gpt = stats["passage_labels"]["llm:gpt-4"]
    assert (gpt["count"], gpt["grades"]) == (32999, [17130, 8771, 4393, 1993, 712])
    assert stats["ptkb_labels"]["organizers"] == {"count": 3660, "relevant": 175, "turns": 218}
    # the pool is the union of the two judged sets
    assert stats["pooled_pairs"] == 45471


def test_ikat2024_nist_export_equals_the_file(ikat2024):
    db, nist = ikat2024
    out = run_cli("export", "qrels", "--source", "nist", db=db, check=True).stdout
    original = {tuple(line.split()) for line in nist.read_text().splitlines() if line.strip()}
    exported = [tuple(line.split()) for line in out.splitlines()]
    assert len(exported) == 20575 and set(exported) == original


def test_ikat2023_ptkb_and_passages(store_target):
    base = ("data", "irlabamsterdam-iKAT", "2023")
    db = store_target
    run_cli("import", "topics", shared_file(*base, "data", "2023_test_topics.json"), db=db, check=True)
    run_cli(
        "import", "ptkb-qrels", shared_file(*base, "evaluation", "ptkb_rel_nist"), "--source", "nist", db=db, check=True
    )
    run_cli("import", "passages", shared_file(*base, "data", "2023_test_topics_psg_text.jsonl"), db=db, check=True)
    stats = json.loads(run_cli("stats", "--json", db=db, check=True).stdout)
    assert (stats["conversations"], stats["turns"]) == (25, 332)
    assert stats["ptkb_labels"]["nist"]["count"] == 1030 and stats["ptkb_labels"]["nist"]["relevant"] == 224
    assert stats["passages_with_text"] == 700
    # ptkb_rel_org is the topics' provenance: the organizers' labels contain its relevant set exactly
    org = shared_file(*base, "evaluation", "ptkb_rel_org")
    relevant = {tuple(l.split()[::2][:2]) for l in org.read_text().splitlines() if l.split()[3] == "1"}
    out = run_cli("export", "ptkb-qrels", "--source", "organizers", db=db, check=True).stdout
    assert {(l.split()[0], l.split()[2]) for l in out.splitlines() if l.split()[3] == "1"} == relevant


def test_cone_rag_nuggets_and_crowd_labels(store_target):
    cone = ("data", "irlabamsterdam-CONE-RAG", "resources")
    db = store_target
    run_cli(
        "import",
        "topics",
        shared_file("data", "irlabamsterdam-iKAT", "2024", "data", "2024_test_topics.json"),
        db=db,
        check=True,
    )
    run_cli(
        "import",
        "nuggets",
        shared_file(*cone, "human_resources", "gold_nuggets_human.json"),
        "--source",
        "human",
        db=db,
        check=True,
    )
    run_cli(
        "import",
        "nuggets",
        shared_file(*cone, "human_resources", "gold_nuggets_human_deduplicated.json"),
        "--source",
        "human",
        "--dedup",
        db=db,
        check=True,
    )
    run_cli(
        "import",
        "ntr-labels",
        shared_file(*cone, "human_resources", "human-study-matching-labels.txt"),
        db=db,
        check=True,
    )
    stats = json.loads(run_cli("stats", "--json", db=db, check=True).stdout)
    assert stats["nuggets"]["human"]["count"] == 2279
    assert stats["nuggets"]["human"]["deduplicated"] == 1201
    assert stats["ntr_labels"]["crowd:mturk"] == {"count": 1086, "yes": 154}
    dedup = json.loads(run_cli("export", "nuggets", "--source", "human", "--dedup", db=db, check=True).stdout)
    assert sum(len(v) for v in dedup.values()) == 1201
