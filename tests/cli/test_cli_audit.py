"""`python -m assess audit ...` on both engines: each command's JSON checked against numbers worked out here from
the labels the test writes (sklearn's kappa, trec_eval's P@k, sums by hand), refusals with exit 2 and the store
unchanged, budgeted samples leading the assessor's queue, and `audit coverage` on the real iKAT 2024 labels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score

from assess.cli import main
from store import samples, sources
from tests.conftest import shared_file
from tests.helpers import run_cli, snapshot

TURNS = ["1_1", "1_2", "2_1", "2_2"]  # conversation 1: turns 1, 2; conversation 2: turns 1, 2
PER_TURN = 6
ITEMS = [(t, f"doc-{t}:{j}") for t in TURNS for j in range(PER_TURN)]
GRADES = {
    "nist": [0, 1, 2, 3, 4, 0, 1, 2, 0, 3, 2, 1, 4, 3, 0, 0, 1, 2, 2, 2, 3, 0, 1, 4],
    "llm:a": [0, 1, 3, 3, 4, 1, 1, 1, 0, 2, 2, 1, 4, 4, 0, 1, 1, 2, 3, 2, 3, 0, 0, 4],
    "llm:b": [1, 1, 2, 2, 4, 0, 0, 2, 1, 3, 3, 1, 3, 3, 0, 0, 2, 2, 2, 1, 3, 1, 1, 3],
}
ALICE = dict(zip(ITEMS[:18], [0, 1, 2, 2, 4, 0, 1, 2, 1, 3, 2, 0, 4, 3, 0, 1, 1, 2]))
BOB = dict(zip(ITEMS[6:], [1, 2, 0, 3, 3, 1, 4, 2, 0, 0, 1, 2, 2, 2, 3, 0, 1, 4]))
# text for the passages of the first turn only: the others have an unknown length
TEXTS = {ITEMS[j][1]: " ".join(["word"] * (40 + 60 * j)) for j in range(PER_TURN)}
# K answers per item of llm:k, and answers with / without the PTKB under two prompt versions
K_ANSWERS = {ITEMS[0]: [2, 2, 3], ITEMS[1]: [1, 1, 1], ITEMS[2]: [4, 0], ITEMS[3]: [3]}
PERSONA = {ITEMS[4]: (2, 3), ITEMS[5]: (1, 1), ITEMS[6]: (3, 1), ITEMS[7]: (0, 0)}  # item: (without, with)


def labels_of(name: str) -> dict:
    return {"alice": ALICE, "bob": BOB}.get(name) or dict(zip(ITEMS, GRADES["nist" if name == "copy" else name]))


def write_files(folder: Path) -> dict[str, Path]:
    topics = []
    for conv in ("1", "2"):
        topics.append(
            {
                "number": int(conv),
                "title": f"conversation {conv}",
                "ptkb": {"1": "I live in a flat.", "2": "I cycle to work."},
                "turns": [
                    {
                        "turn_id": n,
                        "utterance": f"question {n}",
                        "resolved_utterance": f"question {n}",
                        "response": "an answer",
                        # conversation 1 turn 2 and conversation 2 turn 1 are personal
                        "ptkb_provenance": [1] if f"{conv}_{n}" in ("1_2", "2_1") else [],
                        "response_provenance": [],
                    }
                    for n in (1, 2)
                ],
            }
        )
    files = {"topics": folder / "topics.json"}
    files["topics"].write_text(json.dumps(topics))
    for name in ("nist", "llm:a", "llm:b"):
        path = files[name] = folder / f"{name.replace(':', '-')}.qrels"
        path.write_text("".join(f"{t} 0 {p} {g}\n" for (t, p), g in labels_of(name).items()))
    files["copy"] = files["nist"]
    lines = []
    for r, order in (("r1", range(PER_TURN)), ("r2", list(reversed(range(PER_TURN)))), ("r3", [2, 3, 4, 0, 1, 5])):
        for t in TURNS:
            for rank, j in enumerate(order, start=1):
                lines.append(f"{t} Q0 doc-{t}:{j} {rank} {100 - rank} {r}\n")
    files["run"] = folder / "runs.txt"
    files["run"].write_text("".join(lines))
    files["passages"] = folder / "passages.jsonl"
    files["passages"].write_text("".join(json.dumps({"id": p, "contents": text}) + "\n" for p, text in TEXTS.items()))
    return files


@pytest.fixture(scope="module")
def store(module_store_target, tmp_path_factory):
    from assess.services.loading import load_file
    from store import labels, open_db
    from store import prejudgments as pj

    files = write_files(tmp_path_factory.mktemp("files"))
    db = open_db(module_store_target)
    load_file(db, "topics", files["topics"])
    for name in ("nist", "llm:a", "llm:b", "copy"):
        load_file(db, "qrels", files[name], source=name)
    load_file(db, "run", files["run"])
    load_file(db, "passages", files["passages"])
    for name, grades in (("alice", ALICE), ("bob", BOB)):
        sources.sign_in(db, name)
        labels.save_many(db, "passage", name, grades.items(), mode="blind", via="key")
    sources.sign_in(db, "carol")
    pj.ensure_llm_source(db, "llm:k", "model-k", "passage@v1")

    def answer(item, value, sample, version):
        return pj.Prejudgment(
            source="llm:k",
            task="passage",
            turn_id=item[0],
            item_id=item[1],
            model="model-k",
            prompt_version=version,
            input_hash=f"{version}-{item[1]}",
            raw_output=f'{{"grade": {value}}}',
            parse_status="ok",
            parsed=value,
            sample=sample,
        )

    for item, values in K_ANSWERS.items():
        for n, v in enumerate(values):
            pj.save(db, answer(item, v, n, "passage@v1"))
    for item, (without, with_) in PERSONA.items():
        pj.save(db, answer(item, without, 0, "passage@noptkb"))
        pj.save(db, answer(item, with_, 0, "passage@ptkb"))
    db.close()
    return module_store_target


def cli(capsys, store, *args) -> tuple[int, str, str]:
    code = main(["audit", *map(str, args), "--db", store])
    out, err = capsys.readouterr()
    return code, out, err


def report(capsys, store, *args) -> dict:
    code, out, err = cli(capsys, store, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def refused(capsys, store, *args) -> str:
    before = snapshot(store)
    code, out, err = cli(capsys, store, *args)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert snapshot(store) == before
    return err


# ------------------------------------------------------------------------------------------ agreement


def test_agreement_matrix_entries_are_each_pairs_kappa(capsys, store):
    got = report(capsys, store, "agreement", "--bootstrap", "50", "--min-shared", "12")
    assert got["sources"] == ["alice", "bob", "copy", "llm:a", "llm:b", "llm:k", "nist"]
    assert got["kinds"] == {
        "alice": "human",
        "bob": "human",
        "copy": "import",
        "llm:a": "llm",
        "llm:b": "llm",
        "llm:k": "llm",
        "nist": "import",
    }
    assert got["labels"]["llm:k"] == len(K_ANSWERS) + len(PERSONA)
    by_pair = {(p["a"], p["b"]): p for p in got["pairs"]}
    for (a, b), pair in by_pair.items():
        la, lb = labels_of(a) if a != "llm:k" else None, labels_of(b) if b != "llm:k" else None
        if la is None or lb is None:
            continue
        shared = [i for i in la if i in lb]
        x, y = [la[i] for i in shared], [lb[i] for i in shared]
        assert pair["n"] == len(shared)
        assert pair["kappa_unweighted"] == pytest.approx(cohen_kappa_score(x, y, labels=[0, 1, 2, 3, 4]), abs=1e-9)
        assert pair["kappa_quadratic"] == pytest.approx(
            cohen_kappa_score(x, y, labels=[0, 1, 2, 3, 4], weights="quadratic"), abs=1e-9
        )
        assert pair["kappa_binary"] == pytest.approx(cohen_kappa_score([v >= 2 for v in x], [v >= 2 for v in y]))
        assert pair["agreement"] == pytest.approx(sum(u == v for u, v in zip(x, y)) / len(x))
        # the breakdowns partition the pair's items: 2 topics, depths 1 and 2, personal turns 1_2 and 2_1
        for name, keys in (("topic", {"1", "2"}), ("depth", {1, 2}), ("personal", {True, False})):
            groups = pair["by"][name]
            assert {g["group"] for g in groups} <= keys
            assert sum(g["n"] for g in groups) == len(shared)
    assert by_pair[("copy", "nist")]["kappa_unweighted"] == 1.0
    # the human ceiling is alice vs bob alone, over the 12 items both graded (the minimum lowered to 12)
    assert got["ceiling_min_shared"] == 12 and got["ceiling_below_minimum"] == []
    ceiling = got["ceiling"]
    assert ceiling["pairs"] == [["alice", "bob"]] and ceiling["n"] == 12
    assert ceiling["kappa_quadratic"] == pytest.approx(by_pair[("alice", "bob")]["kappa_quadratic"])
    personal = {g["group"]: g["n"] for g in ceiling["by"]["personal"]}
    assert personal == {True: 12}  # alice and bob share turns 1_2 and 2_1, both personal
    grid = got["grids"]["kappa_quadratic"]
    i, j = grid["sources"].index("llm:a"), grid["sources"].index("nist")
    assert grid["values"][i][j] == grid["values"][j][i] == by_pair[("llm:a", "nist")]["kappa_quadratic"]
    assert grid["values"][i][i] is None
    assert got["breakdowns"]["personal"]["ptkb_source"] == "organizers"
    assert got["breakdowns"]["depth"].startswith("turn depth")


def test_agreement_of_chosen_sources_with_intervals_and_table(capsys, store):
    got = report(
        capsys, store, "agreement", "--source", "nist", "--source", "llm:a", "--bootstrap", "200", "--seed", "3"
    )
    (pair,) = got["pairs"]
    low, high = pair["ci"]["kappa_quadratic"]
    assert low <= pair["kappa_quadratic"] <= high
    assert got == report(
        capsys, store, "agreement", "--source", "nist", "--source", "llm:a", "--bootstrap", "200", "--seed", "3"
    )
    code, out, _ = cli(capsys, store, "agreement", "--source", "nist", "--source", "llm:a", "--bootstrap", "0")
    assert code == 0
    assert f"{pair['kappa_quadratic']:.3f}" in out
    assert "human ceiling: no two human sources share 30 items or more" in out
    # by default (30) alice and bob's 12 shared items are listed, not pooled
    default = report(capsys, store, "agreement", "--bootstrap", "0")
    assert default["ceiling"] is None and default["ceiling_below_minimum"] == [["alice", "bob", 12]]
    code, out, _ = cli(capsys, store, "agreement", "--bootstrap", "0")
    assert "  not in the ceiling: alice and bob share 12 item(s), fewer than 30" in out


def test_agreement_refusals(capsys, store):
    assert "chosen twice" in refused(capsys, store, "agreement", "--source", "nist", "--source", "nist")
    assert "'nobody' has no passage labels" in refused(
        capsys, store, "agreement", "--source", "nist", "--source", "nobody"
    )
    assert "needs two sources" in refused(capsys, store, "agreement", "--source", "nist")
    assert "PTKB source 'nist' has no PTKB labels" in refused(capsys, store, "agreement", "--ptkb-source", "nist")


# ------------------------------------------------------------------------------------------ systems


def test_systems_identical_qrels_rank_identically(capsys, store):
    got = report(capsys, store, "systems", "--reference", "nist", "--other", "copy", "--bootstrap", "100")
    assert got["runs"] == ["r1", "r2", "r3"] and got["n_topics"] == 4
    for name in ("kendall_tau", "tau_ap", "spearman_rho", "pearson_r"):
        assert got["correlations"][name]["value"] == pytest.approx(1.0)
    assert [(row["k"], row["overlap"]) for row in got["top_k"]] == [(1, 1.0), (3, 1.0)]  # k up to the 3 runs
    assert got["leader"]["changed"] is False
    sig = got["significance"]
    assert sig["correction"] == "holm" and sig["lost"] == sig["flipped"] == sig["gained"] == 0
    assert got["reference_means"] == got["other_means"]


def test_systems_measure_at_threshold_matches_trec_eval(capsys, store):
    import ir_measures

    got = report(
        capsys, store, "systems", "--reference", "nist", "--other", "llm:a", "--measure", "P@3", "--bootstrap", "0"
    )
    assert got["measure"] == "P(rel=2)@3"
    qrels = [ir_measures.Qrel(t, p, g) for (t, p), g in labels_of("nist").items()]
    runs = {"r1": range(PER_TURN), "r2": list(reversed(range(PER_TURN))), "r3": [2, 3, 4, 0, 1, 5]}
    for name, order in runs.items():
        scored = [ir_measures.ScoredDoc(t, f"doc-{t}:{j}", 100 - r) for t in TURNS for r, j in enumerate(order, 1)]
        (value,) = ir_measures.calc_aggregate([ir_measures.P(rel=2) @ 3], qrels, scored).values()
        assert got["reference_means"][name] == pytest.approx(value)
    assert "same source" not in refused(capsys, store, "systems", "--reference", "nist", "--other", "nist")
    assert "unknown measure" in refused(
        capsys, store, "systems", "--reference", "nist", "--other", "llm:a", "--measure", "X@@"
    )


# ------------------------------------------------------------------------------------------ bias


def test_bias_probes_by_hand(capsys, store):
    got = report(capsys, store, "bias", "--reference", "nist", "--judge", "llm:a", "--k", "2")
    nist, llm = labels_of("nist"), labels_of("llm:a")
    diff = {i: llm[i] - nist[i] for i in ITEMS}
    assert got["n_shared"] == 24 and got["overall"]["mean_diff"] == pytest.approx(sum(diff.values()) / 24)
    # only turn 1_1's passages have text: 18 of 24 have an unknown length
    assert got["length_unknown"] == 18 and got["length"]["n"] == 6
    depth = {g["group"]: g["mean_diff"] for g in got["depth"]["groups"]}
    for d, turns in ((1, ("1_1", "2_1")), (2, ("1_2", "2_2"))):
        chosen = [diff[i] for i in ITEMS if i[0] in turns]
        assert depth[d] == pytest.approx(sum(chosen) / len(chosen))
    personal = {g["group"]: g["n"] for g in got["personal"]["groups"]}
    assert personal == {True: 12, False: 12}
    # r1's top 2 on every turn: passages 0 and 1
    r1 = next(r for r in got["runs"] if r["run"] == "r1")
    top = [diff[(t, f"doc-{t}:{j}")] for t in TURNS for j in (0, 1)]
    assert r1["n"] == 8 and r1["mean_diff"] == pytest.approx(sum(top) / 8)
    rank1 = next(g for g in got["rank"]["groups"] if g["group"] == "[1, 2)")
    assert rank1["n"] == 12  # ranks 1 of r1 (passage 0), r2 (passage 5) and r3 (passage 2) on 4 turns


# ------------------------------------------------------------------------------------------ consistency, persona


def test_consistency_of_k_answers(capsys, store):
    got = report(capsys, store, "consistency", "--source", "llm:k")
    assert got["n_items"] == 8 and got["n_multi"] == 3  # the 4 sampled items + 4 asked once per prompt version
    # unanimous: [1, 1, 1] of the three with 2+ answers; pairwise: (1/3 + 1 + 0) / 3
    assert got["unanimous"] == pytest.approx(1 / 3)
    assert got["pairwise"] == pytest.approx((1 / 3 + 1 + 0) / 3)
    assert got["items_by_k"] == {"1": 5, "2": 1, "3": 2}
    assert got["changed_by_consensus"] == 1  # [4, 0]: consensus 2 differs from the first answer
    assert "no stored answers" in refused(capsys, store, "consistency", "--source", "nist")


def test_persona_sensitivity(capsys, store):
    got = report(capsys, store, "persona", "--source", "llm:k", "--with", "passage@ptkb", "--without", "passage@noptkb")
    assert got["n"] == 4 and got["changed"] == 2 and got["up"] == 1 and got["down"] == 1
    assert got["mean_change"] == pytest.approx((1 + 0 - 2 + 0) / 4)
    groups = {g["group"]: g for g in got["groups"]}
    assert groups[False]["n"] == 2 and groups[False]["up"] == 1  # turn 1_1 is not personal
    assert groups[True]["n"] == 2 and groups[True]["down"] == 1  # turn 1_2 is
    assert "both prompt versions" in refused(
        capsys, store, "persona", "--source", "llm:k", "--with", "passage@ptkb", "--without", "passage@ptkb"
    )


# ------------------------------------------------------------------------------------------ estimates, coverage


def test_estimate_from_a_census_is_the_human_value(capsys, store):
    """The reference graded every item the judge did: PPI and human-only are the exact human figures, width 0."""
    import ir_measures

    got = report(capsys, store, "estimate", "--reference", "nist", "--judge", "llm:a", "--k", "3")
    assert got["design"]["kind"] == "assumed-uniform" and got["design"]["graded"] == got["design"]["population"] == 24
    assert "taken as a uniform random sample of the judge's 24 passages" in got["design"]["statement"]
    qrels = [ir_measures.Qrel(t, p, g) for (t, p), g in labels_of("nist").items()]
    order = {"r1": range(PER_TURN), "r2": list(reversed(range(PER_TURN))), "r3": [2, 3, 4, 0, 1, 5]}
    for run, ranking in order.items():
        scored = [ir_measures.ScoredDoc(t, f"doc-{t}:{j}", 100 - r) for t in TURNS for r, j in enumerate(ranking, 1)]
        p3, ndcg3 = (
            ir_measures.calc_aggregate([m], qrels, scored)[m] for m in (ir_measures.P(rel=2) @ 3, ir_measures.nDCG @ 3)
        )
        est = got["P@k"][run]["estimate"]
        assert est["ppi"]["value"] == pytest.approx(p3) and est["human_only"]["value"] == pytest.approx(p3)
        assert est["ppi"]["width"] == pytest.approx(0, abs=1e-12)
        assert got["nDCG@k"][run]["estimate"]["ppi"]["value"] == pytest.approx(ndcg3, abs=1e-9)
    share1 = sum(g >= 2 for (t, _), g in labels_of("nist").items() if t.startswith("1_")) / 12
    assert got["topic_shares"]["1"]["ppi"]["value"] == pytest.approx(share1)
    assert got["ntr"] is None  # no NtR labels in this store


def test_estimate_from_a_partial_reference(capsys, store):
    got = report(capsys, store, "estimate", "--reference", "alice", "--judge", "llm:a", "--measure", "P@k")
    assert got["design"]["graded"] == 18 and got["design"]["population"] == 24
    for entry in got["P@k"].values():
        est = entry["estimate"]
        assert est["ppi"]["width"] <= est["human_only"]["width"] + 1e-12
    assert set(got) >= {"P@k", "topic_shares"} and "nDCG@k" not in got
    assert "no sample named 'nope'" in refused(
        capsys, store, "estimate", "--reference", "alice", "--judge", "llm:a", "--sample", "nope"
    )


def test_coverage_json_is_exactly_the_issues_and_seeded(capsys, store):
    args = ("coverage", "--reference", "nist", "--judge", "llm:a", "--sample", "10", "--repeats", "300", "--seed", "5")
    got = report(capsys, store, *args)
    assert list(got) == ["n_items", "sample", "repeats", "nominal", "true_value", "ppi", "human_only"]
    assert list(got["ppi"]) == list(got["human_only"]) == ["coverage", "mean_width"]
    assert got["n_items"] == 24 and got["sample"] == 10 and got["repeats"] == 300 and got["nominal"] == 0.95
    assert got["true_value"] == pytest.approx(sum(g >= 2 for g in GRADES["nist"]) / 24)
    assert got == report(capsys, store, *args)
    assert got != report(capsys, store, *args[:-1], "6")
    code, out, _ = cli(capsys, store, *args)
    assert code == 0 and "ppi" in out and "human_only" in out


def test_coverage_refusals(capsys, store):
    assert "both 'nist'" in refused(
        capsys, store, "coverage", "--reference", "nist", "--judge", "nist", "--sample", "5", "--repeats", "5"
    )
    assert "sample 25 is larger than the 24 items" in refused(
        capsys, store, "coverage", "--reference", "nist", "--judge", "llm:a", "--sample", "25", "--repeats", "5"
    )
    assert "judge 'llm:z' has no passage labels" in refused(
        capsys, store, "coverage", "--reference", "nist", "--judge", "llm:z", "--sample", "5", "--repeats", "5"
    )


# ------------------------------------------------------------------------------------------ samples and plans


def test_sample_is_queued_with_its_inclusion_probabilities(capsys, store):
    from store import open_db, queue

    got = report(
        capsys, store, "sample", "--name", "s-strat", "--judge", "llm:a", "--budget", "12", "--assessor", "carol"
    )
    assert got["items"] == 12 and got["assessors"] == ["carol"] and got["population"] == 24
    counts = {}
    for g in GRADES["llm:a"]:
        counts[str(g)] = counts.get(str(g), 0) + 1
    assert {h: a["N"] for h, a in got["allocation"].items()} == counts
    assert sum(a["n"] for a in got["allocation"].values()) == 12
    db = open_db(store)
    try:
        drawn = samples.sample_items(db, "s-strat")
        assert len(drawn) == 12
        grade = labels_of("llm:a")
        for item in drawn:
            stratum = str(grade[(item["turn_id"], item["item_id"])])
            assert item["stratum"] == stratum and item["assessor"] == "carol"
            assert item["inclusion"] == pytest.approx(got["allocation"][stratum]["n"] / counts[stratum])
        order = [(r["turn_id"], r["item_id"]) for r in sorted(drawn, key=lambda r: r["position"])]
        assert [tuple(q[:2]) for q in queue.queue(db, "carol")][:12] == order
        action = [a for a in db_actions(db) if a["item"] == "sample s-strat"]
        assert len(action) == 1
    finally:
        db.close()
    # refused: the name again, an unknown assessor, a budget of 0 or above the population, no second judge
    assert "exists already" in refused(
        capsys, store, "sample", "--name", "s-strat", "--judge", "llm:a", "--budget", "12", "--assessor", "carol"
    )
    assert "'nobody' is not an assessor" in refused(
        capsys, store, "sample", "--name", "s2", "--judge", "llm:a", "--budget", "12", "--assessor", "nobody"
    )
    assert "budget" in refused(
        capsys, store, "sample", "--name", "s2", "--judge", "llm:a", "--budget", "0", "--assessor", "carol"
    )
    assert "larger than the 24" in refused(
        capsys, store, "sample", "--name", "s2", "--judge", "llm:a", "--budget", "25", "--assessor", "carol"
    )
    assert "needs a second judge" in refused(
        capsys,
        store,
        "sample",
        "--name",
        "s2",
        "--judge",
        "llm:a",
        "--budget",
        "8",
        "--assessor",
        "carol",
        "--design",
        "disagreement",
    )


def db_actions(db):
    from store.history import actions

    return actions(db)


def test_disagreement_sample_and_estimate_from_it(capsys, store):
    got = report(
        capsys,
        store,
        "sample",
        "--name",
        "s-dis",
        "--judge",
        "llm:a",
        "--second",
        "llm:b",
        "--budget",
        "16",
        "--design",
        "disagreement",
        "--assessor",
        "carol",
    )
    diffs = {}
    for a, b in zip(GRADES["llm:a"], GRADES["llm:b"]):
        diffs[str(abs(a - b))] = diffs.get(str(abs(a - b)), 0) + 1
    assert {h: a["N"] for h, a in got["allocation"].items()} == diffs
    # nist graded every sampled item: the estimate uses the sample's stored probabilities
    est = report(capsys, store, "estimate", "--reference", "nist", "--judge", "llm:a", "--sample", "s-dis")
    assert est["design"]["kind"] == "drawn" and est["design"]["graded"] == est["design"]["drawn"] == 16
    assert "drawn by the workbench's sampler (disagreement)" in est["design"]["statement"]


def test_plan_expected_widths(capsys, store):
    got = report(capsys, store, "plan", "--judge", "llm:a", "--budget", "6", "--budget", "12", "--budget", "50")
    assert [r["budget"] for r in got["rows"]] == [6, 12] and got["skipped"] == [50]
    small, large = got["rows"]
    assert large["uniform_human_only"] < small["uniform_human_only"]
    assert large["uniform_ppi"] <= large["uniform_human_only"]
    assert "budget" in refused(capsys, store, "plan", "--judge", "llm:a", "--budget", "0")
    with_second = report(capsys, store, "plan", "--judge", "llm:a", "--second", "llm:b", "--budget", "12")
    assert with_second["rows"][0]["disagreement"] is not None


def test_top_level_agreement_command_unchanged(store):
    proc = run_cli("agreement", "--a", "nist", "--b", "llm:a", "--threshold", "2", db=store, check=True)
    assert proc.stdout.splitlines()[0] == "passage: nist vs llm:a over 24 shared items"


# ------------------------------------------------------------------------------------------ real data


@pytest.mark.realdata
def test_coverage_on_ikat_2024_nist_vs_gpt4(tmp_path):
    from assess.services.loading import load_file
    from store import open_db

    topics = shared_file("data", "irlabamsterdam-iKAT", "2024", "data", "2024_test_topics.json")
    nist = shared_file("data", "gyeozai-CFDA-TREC-iKAT2025", "DATA", "topics", "2024_test_qrels.trec")
    gpt4 = shared_file(
        "data", "irlabamsterdam-CONE-RAG", "resources", "automatic_resources", "llm-gpt4-pool-depth-30.txt"
    )
    target = str(tmp_path / "real.db")
    db = open_db(target)
    load_file(db, "topics", topics)
    load_file(db, "qrels", nist, source="nist")
    load_file(db, "qrels", gpt4, source="llm:gpt-4")
    db.close()
    proc = run_cli(
        "audit",
        "coverage",
        "--reference",
        "nist",
        "--judge",
        "llm:gpt-4",
        "--sample",
        "500",
        "--repeats",
        "200",
        "--json",
        db=target,
        check=True,
    )
    got = json.loads(proc.stdout)
    assert got["n_items"] == 8103 and got["true_value"] == pytest.approx(2519 / 8103)
    assert 0.92 <= got["ppi"]["coverage"] <= 0.98
    assert got["ppi"]["mean_width"] <= got["human_only"]["mean_width"]


# ------------------------------------------------------------------------------------------ NtR recall estimate


def test_ntr_recall_estimate_worked_by_hand(capsys, tmp_path):
    """CONE-RAG NtR recall per run from the judge's NtR labels on every item and a reference's on all or half.

    The demo's LLM labelled every gold nugget of every turn for the three runs. The reference ("nist",
    NtR labels only, no passage grades) agrees except on every third item. With a census the corrected and
    the human-only estimates are the reference's recall exactly (zero width); with half the items the
    human-only estimate is (N / n) * sum over the sample of w * y, w = 1 / (turns * |gold of the turn|),
    and the corrected interval is no wider."""
    from assess.services.loading import load_demo
    from store import labels, open_db
    from store.db import rows
    from store.sources import ensure_source

    target = str(tmp_path / "ntr.db")
    db = open_db(target)
    load_demo(db)
    judge = {
        (run, turn, nugget): int(v == 2) for (turn, nugget, run), v in labels.ntr_support(db, "llm:demo-gpt").items()
    }
    items = sorted(judge)
    assert len(items) == 192
    reference = {item: 1 - judge[item] if n % 3 == 0 else judge[item] for n, item in enumerate(items)}
    gold: dict[str, set] = {}
    for r in rows(db, "SELECT turn_id, id FROM nuggets WHERE source = 'gold'"):
        gold.setdefault(r["turn_id"], set()).add(r["id"])
    ensure_source(db, "nist", "import")
    half = items[::2]

    def store_reference(chosen):
        with_values = [((turn, nugget, run), reference[(run, turn, nugget)]) for run, turn, nugget in chosen]
        labels.save_many(db, "ntr", "nist", with_values, mode="import", via=None)

    def weights(run):
        turns = sorted({t for r, t, _ in items if r == run})
        return {(run, t, g): 1 / (len(turns) * len(gold[t])) for t in turns for g in gold[t]}

    runs = sorted({r for r, _, _ in items})
    store_reference(items)
    got = report(capsys, target, "estimate", "--reference", "nist", "--judge", "llm:demo-gpt", "--measure", "ntr")
    assert got["design"] == {
        "kind": "assumed-uniform",
        "statement": "assumed: the reference's 192 labels were not drawn by the workbench's sampler; they are "
        "taken as a uniform random sample of the judge's 192 NtR items, and the estimates hold only if that is "
        "true (a pool judged to a depth, or the items someone chose to judge, is not a random sample)",
        "rule": "every NtR item the reference labelled, taken as a uniform random sample of the judge's",
        "drawn": 192,
        "graded": 192,
        "population": 192,
    }
    assert "topic_shares" not in got and sorted(got["ntr"]["runs"]) == runs
    for run in runs:
        w = weights(run)
        exact = sum(wi * reference[i] for i, wi in w.items())
        est = got["ntr"]["runs"][run]["estimate"]
        assert got["ntr"]["runs"][run]["turns"] == 12
        assert est["ppi"]["value"] == pytest.approx(exact) and est["human_only"]["value"] == pytest.approx(exact)
        assert est["ppi"]["width"] == pytest.approx(0, abs=1e-12)
        assert est["judge_only"] == pytest.approx(sum(wi * judge[i] for i, wi in w.items()))

    db.close()
    db = open_db(target)
    from store.db import run, write

    with write(db):
        run(db, "DELETE FROM ntr_labels WHERE source = 'nist'")
    store_reference(half)
    got = report(capsys, target, "estimate", "--reference", "nist", "--judge", "llm:demo-gpt", "--measure", "ntr")
    assert got["design"]["graded"] == 96 and got["design"]["population"] == 192
    for run_name in runs:
        w = weights(run_name)
        est = got["ntr"]["runs"][run_name]["estimate"]
        by_hand = 192 / 96 * sum(wi * reference[i] for i, wi in w.items() if i in set(half))
        assert est["human_only"]["value"] == pytest.approx(by_hand)
        assert est["ppi"]["width"] <= est["human_only"]["width"] + 1e-12
    db.close()
    assert "judge 'demo-ann' has no NtR labels" in refused(
        capsys, target, "estimate", "--reference", "nist", "--judge", "demo-ann", "--measure", "ntr"
    )
    assert "NtR recall is estimated without --sample" in refused(
        capsys,
        target,
        "estimate",
        "--reference",
        "nist",
        "--judge",
        "llm:demo-gpt",
        "--measure",
        "ntr",
        "--sample",
        "s",
    )
