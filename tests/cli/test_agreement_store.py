"""`python -m assess agreement` computed from the store, cross-checked against an independent computation."""

from __future__ import annotations

import json

import pytest
from sklearn.metrics import cohen_kappa_score

from tests.conftest import shared_file
from tests.helpers import ROOT, run_cli
from tests.unit.test_icc import statsmodels_icc


@pytest.fixture(scope="module")
def demo_db(module_demo_target):
    return module_demo_target


def test_demo_ptkb_llm_vs_organizers(demo_db):
    report = json.loads(
        run_cli(
            "agreement", "--task", "ptkb", "--a", "organizers", "--b", "llm:demo-gpt", "--json", db=demo_db, check=True
        ).stdout
    )
    # independent: read both qrels files and compare by hand
    topics = json.loads((ROOT / "assets/demo/topics.json").read_text())
    org = {
        (f"{c['number']}_{t['turn_id']}", k): int(int(k) in t["ptkb_provenance"])
        for c in topics
        for t in c["turns"]
        for k in c["ptkb"]
    }
    llm = {
        (l.split()[0], l.split()[2]): int(l.split()[3])
        for l in (ROOT / "assets/demo/llm-ptkb.qrels").read_text().splitlines()
        if l.strip()
    }
    keys = sorted(set(org) & set(llm))
    a, b = [org[k] for k in keys], [llm[k] for k in keys]
    assert report["n"] == len(keys) == 126
    assert report["agreement"] == pytest.approx(sum(x == y for x, y in zip(a, b)) / len(keys), abs=1e-12)
    assert report["kappa"] == pytest.approx(cohen_kappa_score(a, b, labels=[0, 1]), abs=1e-9)
    assert sum(map(sum, report["confusion"])) == 126


def test_demo_ntr_and_unknown_source(demo_db):
    report = json.loads(
        run_cli(
            "agreement", "--task", "ntr", "--a", "llm:demo-gpt", "--b", "llm:demo-gpt", "--json", db=demo_db, check=True
        ).stdout
    )
    assert report["n"] == 192 and report["agreement"] == 1.0
    proc = run_cli("agreement", "--a", "nist", "--b", "llm:demo-gpt", db=demo_db)
    assert proc.returncode == 2 and "source 'nist' has no passage labels" in proc.stderr


@pytest.mark.realdata
def test_gpt4_pool_vs_nist_2024_from_the_store(tmp_path):
    topics = shared_file("data", "irlabamsterdam-iKAT", "2024", "data", "2024_test_topics.json")
    nist = shared_file("data", "gyeozai-CFDA-TREC-iKAT2025", "DATA", "topics", "2024_test_qrels.trec")
    gpt4 = shared_file(
        "data", "irlabamsterdam-CONE-RAG", "resources", "automatic_resources", "llm-gpt4-pool-depth-30.txt"
    )
    db = tmp_path / "real.db"
    run_cli("import", "topics", topics, db=db, check=True)
    run_cli("import", "qrels", nist, "--source", "nist", db=db, check=True)
    run_cli("import", "qrels", gpt4, "--source", "llm:gpt-4", db=db, check=True)
    report = json.loads(
        run_cli(
            "agreement",
            "--a",
            "nist",
            "--b",
            "llm:gpt-4",
            "--threshold",
            "2",
            "--weights",
            "quadratic",
            "--json",
            db=db,
            check=True,
        ).stdout
    )

    def read(path):
        out = {}
        for line in path.read_text().splitlines():
            if line.strip():
                t, _, p, g = line.split()
                out[(t, p)] = int(g)
        return out

    a_map, b_map = read(nist), read(gpt4)
    keys = sorted(set(a_map) & set(b_map))
    a, b = [a_map[k] for k in keys], [b_map[k] for k in keys]
    assert report["n"] == len(keys) == 8103
    assert report["kappa"] == pytest.approx(
        cohen_kappa_score(a, b, labels=[0, 1, 2, 3, 4], weights="quadratic"), abs=1e-9
    )
    assert report["kappa_unweighted"] == pytest.approx(cohen_kappa_score(a, b, labels=[0, 1, 2, 3, 4]), abs=1e-9)
    assert report["kappa_binary"] == pytest.approx(
        cohen_kappa_score([x >= 2 for x in a], [y >= 2 for y in b]), abs=1e-9
    )
    assert len(report["per_topic"]) == len({k[0].split("_")[0] for k in keys})


def _qrels(name: str) -> dict[tuple[str, str], int]:
    rows = (line.split() for line in (ROOT / "assets/demo" / name).read_text().splitlines() if line.strip())
    return {(r[0], r[2]): int(r[3]) for r in rows}


def test_agreement_shows_icc_as_statsmodels_anova_gives_it(demo_db):
    out = run_cli(
        "agreement", "--task", "passage", "--a", "demo-ann", "--b", "llm:demo-gpt", "--json", db=demo_db, check=True
    )
    report = json.loads(out.stdout)
    ann, llm = _qrels("demo-ann.qrels"), _qrels("llm-passages.qrels")
    shared = sorted(set(ann) & set(llm))
    peer = statsmodels_icc([[ann[key], llm[key]] for key in shared])
    assert report["n"] == len(shared)
    assert (report["icc_2_1"], report["icc_3_1"]) == pytest.approx((peer["icc_2_1"], peer["icc_3_1"]), abs=1e-12)
    # the LLM grades higher on average: absolute agreement (2,1) is below consistency (3,1)
    assert report["icc_2_1"] < report["icc_3_1"]
    text = run_cli("agreement", "--task", "passage", "--a", "demo-ann", "--b", "llm:demo-gpt", db=demo_db).stdout
    assert f"icc_2_1          {report['icc_2_1']:.4f}" in text
    matrix = json.loads(
        run_cli(
            "audit",
            "agreement",
            "--task",
            "passage",
            "--source",
            "demo-ann",
            "--source",
            "llm:demo-gpt",
            "--bootstrap",
            "0",
            "--json",
            db=demo_db,
            check=True,
        ).stdout
    )
    pair = matrix["pairs"][0]
    assert (pair["icc_2_1"], pair["icc_3_1"]) == pytest.approx((peer["icc_2_1"], peer["icc_3_1"]), abs=1e-12)
