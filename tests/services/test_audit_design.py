"""Issue 22: the judge audit's estimators state and check their design, and the reference and judge default by
the sources' kinds. A store written here: three conversations numbered 1, 2 and 10, an LLM judge that graded
every pooled passage and imported human qrels ('nist') on some of them (all of conversation 1, a few of 2,
none of 10), on both engines through `python -m assess audit ...`; the same figures on /audit (AppTest)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from assess.cli import main
from store import samples, sources
from tests.helpers import open_app, snapshot

CONVERSATIONS = ("1", "2", "10")
TURNS = [f"{c}_{n}" for c in CONVERSATIONS for n in (1, 2)]
PER_TURN = 8
ITEMS = [(t, f"doc-{t}:{j}") for t in TURNS for j in range(PER_TURN)]
JUDGE = {item: (3 * k + k // 5) % 5 for k, item in enumerate(ITEMS)}  # every grade in every conversation
# the reference: every passage of conversation 1 (all relevant), four of conversation 2, none of 10
REFERENCE = {item: 3 for item in ITEMS if item[0].startswith("1_")}
REFERENCE |= {item: g for item, g in zip([i for i in ITEMS if i[0].startswith("2_")][::4], (0, 2, 1, 4))}


def write_files(folder: Path) -> dict[str, Path]:
    topics = [
        {
            "number": int(c),
            "title": f"conversation {c}",
            "ptkb": {"1": "I cycle to work."},
            "turns": [
                {
                    "turn_id": n,
                    "utterance": f"question {n}",
                    "resolved_utterance": f"question {n}",
                    "response": "an answer",
                    "ptkb_provenance": [],
                    "response_provenance": [],
                }
                for n in (1, 2)
            ],
        }
        for c in CONVERSATIONS
    ]
    files = {"topics": folder / "topics.json"}
    files["topics"].write_text(json.dumps(topics))
    for name, labels in (("llm:j", JUDGE), ("nist", REFERENCE)):
        files[name] = folder / f"{name.replace(':', '-')}.qrels"
        files[name].write_text("".join(f"{t} 0 {p} {g}\n" for (t, p), g in labels.items()))
    return files


@pytest.fixture
def store(store_target, tmp_path):
    from assess.services.loading import load_file
    from store import open_db

    files = write_files(tmp_path)
    db = open_db(store_target)
    try:
        load_file(db, "topics", files["topics"])
        for name in ("llm:j", "nist"):
            load_file(db, "qrels", files[name], source=name)
    finally:
        db.close()
    return store_target


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
    assert code == 2 and out == "", (code, out)
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert snapshot(store) == before
    return err


# ------------------------------------------------------------------------------------------ estimates


def test_a_topic_with_nothing_sampled_is_not_estimable_and_shares_stay_in_0_1(capsys, store):
    """Before: conversation 10 (no reference label) got PPI = the judge's share with a zero-width interval and
    human-only 0.000 [0.000, 0.000]; conversation 1 (over-represented in the assumed sample) a human-only
    share of 48/20 = 2.4; and the topics came as text sorts them (1, 10, 2)."""
    got = report(capsys, store, "estimate", "--reference", "nist", "--judge", "llm:j", "--measure", "P@k")
    design = got["design"]
    assert design["kind"] == "assumed-uniform" and design["graded"] == 20 and design["population"] == 48
    assert design["statement"].startswith("assumed: the reference's 20 labels were not drawn by the workbench's")
    shares = got["topic_shares"]
    assert list(shares) == ["1", "2", "10"]
    judge_share_10 = sum(g >= 2 for (t, _), g in JUDGE.items() if t.startswith("10_")) / 16
    assert shares["10"] == {
        "items": 16,
        "estimable": False,
        "reason": "not estimable: no sampled item carries weight in this figure",
        "ppi": None,
        "human_only": None,
        "judge_only": pytest.approx(judge_share_10),
        "lambda": None,
        "sampled": 0,
    }
    one = shares["1"]
    assert one["estimable"] and one["sampled"] == 16
    assert one["human_only"]["value"] == 1.0  # 16 relevant of 16, each weighed 48 / 20: 2.4 before the clip
    for entry in (one, shares["2"]):
        for interval in (entry["ppi"], entry["human_only"]):
            assert 0 <= interval["low"] <= interval["value"] <= interval["high"] <= 1
            assert interval["width"] == pytest.approx(interval["high"] - interval["low"])
    code, out, _ = cli(capsys, store, "estimate", "--reference", "nist", "--judge", "llm:j", "--measure", "P@k")
    assert code == 0 and "assumed: the reference's 20 labels" in out
    row = next(line for line in out.splitlines() if line.startswith("10 "))
    assert "not estimable" in row and "[0.000, 0.000]" not in out


def test_reference_labels_outside_the_judges_items_are_refused_as_a_sample(capsys, store):
    """Labels that were not drawn from the judge's items cannot be taken as a uniform sample of them: the
    iKAT case (NIST judged a pool GPT-4's depth-30 pool only partly holds) gave conversation 0 PPI 0.060 vs
    human-only 0.169. Before: estimated as if they were such a sample."""
    from assess.formats.trec import Qrel
    from store import open_db
    from store.imports import import_passage_qrels

    db = open_db(store)
    try:  # one more passage that only nist graded
        import_passage_qrels(db, "extra", [Qrel("2_1", "doc-2_1:99", 2, 1)], source="nist")
    finally:
        db.close()
    err = refused(capsys, store, "estimate", "--reference", "nist", "--judge", "llm:j")
    assert "the reference 'nist' labelled 1 passages the judge 'llm:j' did not label (e.g. 2_1 doc-2_1:99)" in err
    assert "cannot be taken as a uniform random sample" in err
    # the coverage simulation samples the shared items itself: still available
    cov = report(capsys, store, "coverage", "--sample", "10", "--repeats", "50")
    assert cov["n_items"] == 20


def test_a_drawn_sample_states_its_design_and_a_stratum_with_nothing_graded_is_not_estimable(capsys, store):
    from store import labels, open_db
    from store.sources import ensure_source

    db = open_db(store)
    try:
        sources.sign_in(db, "carol")
    finally:
        db.close()
    drawn = report(capsys, store, "sample", "--name", "s1", "--judge", "llm:j", "--budget", "15", "--assessor", "carol")
    db = open_db(store)
    try:
        items = samples.sample_items(db, "s1")
        strata = sorted({i["stratum"] for i in items})
        assert strata == sorted(drawn["allocation"]) and len(strata) == 5
        # carol grades the drawn items of every stratum but the last
        first = [i for i in items if i["stratum"] != strata[-1]]
        labels.save_many(
            db, "passage", "carol", [((i["turn_id"], i["item_id"]), 2) for i in first], mode="blind", via="key"
        )
    finally:
        db.close()
    err = refused(capsys, store, "estimate", "--reference", "carol", "--judge", "llm:j", "--sample", "s1")
    missing = drawn["allocation"][strata[-1]]["n"]
    assert f"not estimable: the reference 'carol' has graded none of the {missing} items drawn in stratum" in err
    db = open_db(store)
    try:
        rest = [i for i in items if i["stratum"] == strata[-1]]
        labels.save_many(
            db, "passage", "carol", [((i["turn_id"], i["item_id"]), 1) for i in rest], mode="blind", via="key"
        )
    finally:
        db.close()
    got = report(capsys, store, "estimate", "--reference", "carol", "--judge", "llm:j", "--sample", "s1")
    assert got["design"]["kind"] == "drawn" and got["design"]["graded"] == got["design"]["drawn"] == 15
    assert "drawn by the workbench's sampler (stratified)" in got["design"]["statement"]
    # without the sample, carol's 15 labels are an assumed uniform sample (they lie among the judge's items)
    assumed = report(capsys, store, "estimate", "--reference", "carol", "--judge", "llm:j", "--measure", "P@k")
    assert assumed["design"]["kind"] == "assumed-uniform"
    # a judge whose items are not the population the sample was drawn from
    db = open_db(store)
    try:
        ensure_source(db, "llm:k", "llm")
        labels.save_many(db, "passage", "llm:k", [(i, g) for i, g in list(JUDGE.items())[:40]], mode="import", via=None)
    finally:
        db.close()
    assert "was drawn from the 48 passages of llm:j; the judge 'llm:k' graded 40" in refused(
        capsys, store, "estimate", "--reference", "carol", "--judge", "llm:k", "--sample", "s1"
    )


# ------------------------------------------------------------------------------------------ defaults by role


def test_roles_rank_by_kind_never_a_source_against_itself():
    from assess.services.audit import rank_roles

    kinds = {
        "adj": "adjudication",
        "crowd:x": "crowd",
        "llm:a": "llm",
        "llm:b": "llm",
        "nist": "import",
        "zed": "assessor",
    }
    assert rank_roles(list(kinds), kinds) == ("zed", "llm:a")
    assert rank_roles(["llm:gpt-4", "nist"], kinds | {"llm:gpt-4": "llm"}) == ("nist", "llm:gpt-4")
    assert rank_roles(["crowd:x", "nist"], kinds) == ("nist", "crowd:x")
    assert rank_roles(["llm:b", "llm:a"], kinds) == ("llm:a", "llm:b")
    assert rank_roles(list(kinds), kinds, judge="zed") == ("nist", "zed")
    assert rank_roles(list(kinds), kinds, reference="llm:a") == ("llm:a", "llm:b")
    with pytest.raises(Exception, match="no source other than the reference"):
        rank_roles(["nist"], kinds)


def test_commands_default_to_a_human_reference_and_an_llm_judge(capsys, store):
    """'llm:j' sorts before 'nist': by name it would have been the reference."""
    got = report(capsys, store, "estimate", "--measure", "P@k")
    assert (got["reference"], got["judge"]) == ("nist", "llm:j")
    bias = report(capsys, store, "bias")
    assert (bias["reference"], bias["judge"]) == ("nist", "llm:j")
    assert report(capsys, store, "plan", "--budget", "10")["judge"] == "llm:j"
    code, out, _ = cli(capsys, store, "coverage", "--sample", "10", "--repeats", "20")
    assert code == 0 and out.startswith("nist (reference) vs llm:j (judge): 20 shared items")
    got = report(capsys, store, "bias", "--judge", "nist")  # one role given: the other chosen around it
    assert (got["reference"], got["judge"]) == ("llm:j", "nist")


# ------------------------------------------------------------------------------------------ the page


@pytest.fixture
def page_store(tmp_path, monkeypatch):
    from assess.services.loading import load_file
    from store import open_db

    files = write_files(tmp_path)
    path = tmp_path / "app.db"
    db = open_db(str(path))
    try:
        load_file(db, "topics", files["topics"])
        for name in ("llm:j", "nist"):
            load_file(db, "qrels", files[name], source=name)
    finally:
        db.close()
    monkeypatch.setenv("ASSESS_DB", str(path))
    monkeypatch.setenv("ASSESS_OPEN", "1")  # open mode (the demo's) on a store that is not the demo
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    return path


def test_the_estimates_tab_says_the_design_and_shows_no_interval_where_nothing_was_sampled(page_store, capsys):
    at = open_app("pages/audit.py", timeout=120)
    assert (at.selectbox(key="au_ref").value, at.selectbox(key="au_judge").value) == ("nist", "llm:j")
    assert at.selectbox(key="au_ref").format_func("nist") == "nist (imported human qrels)"
    at.session_state["au_tab"] = "Estimates"
    at.run()
    assert not at.exception, at.exception
    got = report(capsys, str(page_store), "estimate", "--reference", "nist", "--judge", "llm:j")
    assert any(got["design"]["statement"][:60] in c.value for c in at.caption)
    at.radio(key="au_es_m").set_value("topics").run()
    table = next(d.value for d in at.dataframe if "PPI value" in d.value.columns)
    assert list(table["name"]) == ["1", "2", "10"]
    by_name = {r["name"]: r for r in table.to_dict("records")}
    empty = [by_name["10"][f"{s} {x}"] for s in ("PPI", "human only") for x in ("value", "low", "high")]
    assert by_name["10"]["estimable"].startswith("no") and all(v is None or math.isnan(v) for v in empty)
    for name in ("1", "2"):
        for series, key in (("PPI", "ppi"), ("human only", "human_only")):
            for x in ("value", "low", "high"):
                assert by_name[name][f"{series} {x}"] == round(got["topic_shares"][name][key][x], 4)
    plot = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if "topic share" in c.proto.spec)
    assert [list(t["x"]) for t in plot["data"]] == [["1", "2"], ["1", "2"]]  # 10: no point, no bar
    assert any("Not estimable" in c.value and "10" in c.value for c in at.caption)
