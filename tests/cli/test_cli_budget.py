"""`audit simulate` and `audit sample --design active` (issue 37) on the audit tests' small store, and the
acceptance check on the iKAT 2024 store (marker ``scale``: eight runs over the items NIST and GPT-4 both graded,
budget 400, 100 repeats; skipped without ../shared)."""

from __future__ import annotations

import json

import pytest

from store import open_db, samples
from tests.cli.test_cli_audit import cli, refused, report, store  # noqa: F401 (the module's store fixture)
from tests.conftest import shared_file


def test_simulate_prints_the_issue_json(capsys, store):
    got = report(
        capsys, store, "simulate", "--reference", "nist", "--judge", "llm:a", "--measure", "P@3",
        "--budget", "12", "--budget", "16", "--policy", "uniform", "--policy", "active", "--repeats", "30",
    )  # fmt: skip
    assert list(got) == ["results"]
    assert [(r["policy"], r["budget"]) for r in got["results"]] == [
        ("uniform", 12), ("uniform", 16), ("active", 12), ("active", 16)
    ]  # fmt: skip
    for r in got["results"]:
        assert list(r) == ["policy", "budget", "coverage", "mean_width", "tau", "settled", "spent"]
        assert r["spent"] == r["budget"]
        assert 0 <= r["coverage"] <= 1 and r["mean_width"] >= 0 and -1 <= r["tau"] <= 1
    again = report(
        capsys, store, "simulate", "--reference", "nist", "--judge", "llm:a", "--measure", "P@3",
        "--budget", "12", "--budget", "16", "--policy", "uniform", "--policy", "active", "--repeats", "30",
    )  # fmt: skip
    assert again == got  # seeded
    code, out, _ = cli(capsys, store, "simulate", "--reference", "nist", "--judge", "llm:a", "--budget", "12")
    assert code == 0 and "policy" in out and "active" in out


def test_simulate_refuses_bad_input_with_exit_2(capsys, store):
    base = ("simulate", "--reference", "nist", "--judge", "llm:a")
    assert "P@k or nDCG@k" in refused(capsys, store, *base, "--budget", "10", "--measure", "MAP@5")
    assert "--level" in refused(capsys, store, *base, "--budget", "10", "--level", "95")
    assert "rounds" in refused(capsys, store, *base, "--budget", "10", "--policy", "active-sequential", "--rounds", "0")
    assert "second judge" in refused(capsys, store, *base, "--budget", "10", "--policy", "disagreement")
    assert "larger than the 24" in refused(capsys, store, *base, "--budget", "25")
    assert "repeats" in refused(capsys, store, *base, "--budget", "10", "--repeats", "0")
    got = report(capsys, store, *base, "--second", "llm:b", "--budget", "12", "--policy", "disagreement")
    assert got["results"][0]["policy"] == "disagreement"


def test_simulate_ndcg_and_the_sequential_policy(capsys, store):
    base = ("simulate", "--reference", "nist", "--judge", "llm:a", "--budget", "16", "--repeats", "40")
    got = report(capsys, store, *base, "--measure", "nDCG@3", "--policy", "uniform", "--policy", "active")
    p_at = report(capsys, store, *base, "--measure", "P@3", "--policy", "uniform", "--policy", "active")
    assert [r["policy"] for r in got["results"]] == ["uniform", "active"]
    assert got != p_at  # another measure, other intervals
    for r in got["results"]:
        assert 0 <= r["coverage"] <= 1 and r["mean_width"] > 0 and -1 <= r["tau"] <= 1
    seq = report(capsys, store, *base, "--policy", "active-sequential", "--rounds", "2", "--level", "0.9")
    (row,) = seq["results"]
    # two looks of 8 then 16 items: a repeat stops at 8 once every pair is settled
    assert row["policy"] == "active-sequential" and 8 <= row["spent"] <= 16


def test_active_sample_is_queued_with_its_inclusion_probabilities(capsys, store):
    got = report(
        capsys, store, "sample", "--name", "s-active", "--judge", "llm:a", "--budget", "12", "--assessor", "carol",
        "--design", "active", "--k", "3",
    )  # fmt: skip
    assert got["items"] == 12 and got["design"] == "active" and got["population"] == 24
    assert sum(a["n"] for a in got["allocation"].values()) == 12
    db = open_db(store)
    try:
        drawn = samples.sample_items(db, "s-active")
        found = {s["name"]: s for s in samples.samples(db)}["s-active"]
    finally:
        db.close()
    assert found["design"] == "active" and found["details"]["measure"] == "P@3"
    for item in drawn:
        a = got["allocation"][item["stratum"]]
        assert item["inclusion"] == pytest.approx(a["n"] / a["N"]) and item["assessor"] == "carol"
    # r1's and r2's top 3 cover all 6 items of each turn, and a budget of 12 holds one stratum (4 items each
    # at least): every item at 12 / 24
    assert got["allocation"] == {"active 1": {"N": 24, "n": 12, "probability": 0.5}}
    # the stored sample estimates the runs' P@3 as any drawn sample does
    ndcg = report(
        capsys, store, "sample", "--name", "s-ndcg", "--judge", "llm:a", "--budget", "12", "--assessor", "carol",
        "--design", "active", "--measure", "nDCG@k", "--k", "3",
    )  # fmt: skip
    assert ndcg["items"] == 12
    db = open_db(store)
    try:
        assert {s["name"]: s for s in samples.samples(db)}["s-ndcg"]["details"]["measure"] == "nDCG@3"
    finally:
        db.close()
    est = report(capsys, store, "estimate", "--reference", "nist", "--judge", "llm:a", "--sample", "s-active",
                 "--measure", "P@k", "--k", "3")  # fmt: skip
    assert est["design"]["kind"] == "drawn" and est["design"]["design"] == "active"


@pytest.mark.realdata
@pytest.mark.scale
def test_acceptance_on_ikat_2024(tmp_path, capsys):
    from tests.ikat_store import IKAT2024_IMPORTS, add_shared_runs, build_ikat2024

    for entry in IKAT2024_IMPORTS:
        shared_file("data", *entry[1].split("/"))
    target = build_ikat2024(tmp_path / "ikat.db")
    add_shared_runs(target)
    from assess.cli import main

    code = main(
        ["audit", "simulate", "--db", str(target), "--reference", "nist", "--judge", "llm:gpt-4", "--measure", "P@5",
         "--budget", "400", "--policy", "uniform", "--policy", "active", "--repeats", "100", "--seed", "0", "--json"]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    got = {r["policy"]: r for r in json.loads(out)["results"]}
    assert got["uniform"]["coverage"] >= 0.88 and got["active"]["coverage"] >= 0.88
    assert got["active"]["mean_width"] <= 0.8 * got["uniform"]["mean_width"]


def test_sequential_active_sample_draws_round_after_judged_round(capsys, store):
    base = ("sample", "--name", "s-seq", "--judge", "llm:a", "--budget", "12", "--assessor", "carol",
            "--design", "active", "--k", "3", "--sequential", "--rounds", "2", "--level", "0.9")  # fmt: skip
    first = report(capsys, store, *base)
    # one stratum of 24 items (test above), n 12 over 2 rounds: round 1 stores 6 at 6/24
    assert first["status"] == "drawn" and first["items"] == 6 and first["round"] == 1
    assert first["allocation"] == {"active 1": {"N": 24, "n": 6, "probability": 0.25}}

    def stored():
        db = open_db(store)
        try:
            return samples.sample_items(db, "s-seq"), {s["name"]: s for s in samples.samples(db)}["s-seq"]
        finally:
            db.close()

    items, sample = stored()
    assert [i["inclusion"] for i in items] == [0.25] * 6 and sample["details"]["sequential"]["round"] == 1
    assert "--reference" in refused(capsys, store, *base)
    # carol has graded none of round 1: nothing is drawn before she has
    assert "6 of the 6 items of round 1 have no grade from 'carol'" in refused(
        capsys, store, *base, "--reference", "carol"
    )
    assert "not 'llm:b'" in refused(capsys, store, *base[:4], "llm:b", *base[5:], "--reference", "nist")
    assert "--design active" in refused(capsys, store, "sample", "--name", "x", "--judge", "llm:a", "--budget", "4",
                                        "--assessor", "carol", "--sequential")  # fmt: skip
    second = report(capsys, store, *base, "--reference", "nist")
    assert second["pairs"] == 3 and second["round"] in (1, 2)  # three runs
    items, sample = stored()
    if second["settled"] == 3:  # settled on round 1: nothing added
        assert second["status"] == "every pair settled" and len(items) == 6
        return
    # round 2: 6 more items, every item's inclusion probability now the nested sample's 12/24
    assert second["status"] == "next round drawn" and second["added"] == 6 and len(items) == 12
    assert {i["inclusion"] for i in items} == {0.5} and sample["budget"] == 12
    assert [i["position"] for i in items] == list(range(12))
    third = report(capsys, store, *base, "--reference", "nist")
    assert third["status"] in ("every pair settled", "budget spent") and third["added"] == 0
    code, out, _ = cli(capsys, store, *base, "--reference", "nist")
    assert code == 0 and "round 2 of 2" in out and "run pairs settled at level 0.9" in out
