"""The audit page through AppTest: kappa values equal the store's, disagreements show the LLM's words,
and a pre-judging job started from the page against the local stub stores its rows."""
from __future__ import annotations

import sqlite3

import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers import ROOT, open_app, rows  # noqa: F401
from tests.stub_llm import Reply, stub_llm  # noqa: F401  (fixture)


@pytest.fixture
def app_db(tmp_path, monkeypatch):
    path = tmp_path / "app.db"
    monkeypatch.setenv("ASSESS_DB", str(path))
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    for var in ("ASSESS_LLM_BASE_URL", "ASSESS_LLM_MODEL", "ASSESS_LLM_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return path


def metrics(at) -> dict:
    return {m.label: m.value for m in at.metric}


def test_audit_page_shows_the_stores_kappas_and_the_llm_outputs(app_db, stub_llm):
    at = open_audit()
    assert at.title[0].value == "Judge audit"
    # give the store a second LLM source through the page's own job form
    stub_llm.reply = lambda r: Reply(content=f"Score: {len(r['messages'][-1]['content']) % 5}")
    at.text_input(key="pj_url").input(stub_llm.base_url)
    at.text_input(key="pj_model").input("stub-1")
    at.number_input(key="pj_limit").set_value(40)
    at.number_input(key="pj_conc").set_value(4)
    next(b for b in at.button if b.label == "Start / resume").click().run()
    assert not at.exception, at.exception
    assert any("40 to ask" in i.value for i in at.info)                          # the estimate
    assert any("Job 1: 40 stored (40 ok" in s.value for s in at.success)
    assert rows(app_db, "SELECT COUNT(*), COUNT(DISTINCT raw_output) > 1 FROM prejudgments WHERE source = 'llm:stub-1'"
                ) == [(40, 1)]
    assert rows(app_db, "SELECT status, done, base_url FROM prejudge_jobs") == [("done", 40, stub_llm.base_url)]
    assert len(stub_llm.requests) == 40

    at.run()                      # the audit tab (drawn before the job ran) now has two passage sources
    at.selectbox(key="au_a").select("llm:demo-gpt").run()
    at.selectbox(key="au_b").select("llm:stub-1").run()
    at.selectbox(key="au_w").select("quadratic").run()
    shown = metrics(at)

    from store import open_db
    from assess.scoreboard import agreement_from_store

    report = agreement_from_store(open_db(app_db), "passage", "llm:demo-gpt", "llm:stub-1", weights="quadratic",
                                  threshold=2)
    assert shown == {"n": f"{report['n']:,}", "agreement": f"{report['agreement']:.3f}",
                     "κ": f"{report['kappa_unweighted']:.3f}", "κ quadratic": f"{report['kappa_quadratic']:.3f}",
                     "κ binary (≥ 2)": f"{report['kappa_binary']:.3f}"}
    assert report["n"] == 40
    titles = [c.proto.spec for c in at.get("plotly_chart")]
    assert any(f"Confusion (n = {report['n']})" in t for t in titles) and any("per group" in t for t in titles)
    assert any("Kendall" in t for t in titles)                                    # run rankings under both
    frame = next(d.value for d in at.dataframe if "llm:stub-1 said" in d.value.columns)
    assert len(frame) == sum(1 for i, (x, y) in enumerate(zip(frame["llm:demo-gpt"], frame["llm:stub-1"])) if x != y)
    assert all(str(s).startswith("Score: ") for s in frame["llm:stub-1 said"])

    # a second start (resume) asks the next 40 items, never one of the first 40 again
    next(b for b in at.button if b.label == "Start / resume").click().run()
    assert any("40 already judged, 0 from cache, 40 to ask" in i.value for i in at.info)
    prompts_sent = [r["messages"][-1]["content"] for r in stub_llm.requests]
    assert len(prompts_sent) == len(set(prompts_sent)) == 80
    assert rows(app_db, "SELECT COUNT(*) FROM prejudgments") == [(80,)]


def test_prejudge_form_says_what_is_missing_instead_of_crashing(app_db):
    at = open_audit()
    next(b for b in at.button if b.label == "Estimate").click().run()
    assert not at.exception
    assert any("no LLM model given" in e.value for e in at.error)
    at.text_input(key="pj_model").input("gpt-4o")
    next(b for b in at.button if b.label == "Estimate").click().run()
    assert any("no LLM endpoint configured" in e.value for e in at.error)
    assert rows(app_db, "SELECT COUNT(*) FROM prejudge_jobs") == [(0,)]


def test_anchoring_table_after_reveal(app_db):
    at = open_audit()
    from store import open_db, queue

    db = open_db(app_db)
    queue.set_setting(db, "judging_mode", "reveal")
    queue.sign_in(db, "ann")
    turn, pid, llm = db.execute("SELECT turn_id, passage_id, grade FROM passage_labels WHERE source = 'llm:demo-gpt' "
                                "AND grade BETWEEN 1 AND 3 LIMIT 1").fetchone()
    queue.save_passage_label(db, "ann", turn, pid, 0 if llm > 1 else 4, mode="reveal")
    queue.save_passage_label(db, "ann", turn, pid, llm, mode="reveal")
    at.run()
    table = next(d.value for d in at.dataframe if "toward" in d.value.columns)
    assert table.to_dict("records")[0] == {"assessor": "ann", "llm": "llm:demo-gpt", "changed": 1, "toward": 1,
                                                 "away": 0, "same_distance": 0, "landed_on_llm": 1,
                                                 "toward_share": 1.0}


def open_audit(assessor: str | None = None) -> AppTest:
    return open_app("pages/audit.py", assessor, timeout=120)
