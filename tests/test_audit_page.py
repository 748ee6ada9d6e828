"""The audit and LLM pre-judging pages through AppTest: kappa values equal the store's, disagreements show
the LLM's words, a pre-judging job started from the page against the local stub stores its rows (the pool
or the top K of every run), a second start while a job runs is refused, and the adaptive pool report and
Apply equal `python -m assess pool adaptive`."""

from __future__ import annotations

import html
import json

import pytest
from streamlit.testing.v1 import AppTest

from store.db import run as execute
from store.db import write
from tests.helpers import ROOT, open_app, rows, run_cli  # noqa: F401
from tests.stub_llm import Reply, canonical, enclosed, stub_llm  # noqa: F401  (fixture)


def box_text(element) -> str:
    """The text a message box shows: its markdown source with the character references data is escaped with
    (assess.text.inert_markdown) read back."""
    return html.unescape(element.value)


@pytest.fixture
def app_db(request, tmp_path, monkeypatch):
    """The app's store: a SQLite file; once per engine for a test that also asks for ``store_target``."""
    path = tmp_path / "app.db"
    if "store_target" in request.fixturenames:
        path = request.getfixturevalue("store_target")
    monkeypatch.setenv("ASSESS_DB", str(path))
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    for var in ("ASSESS_LLM_BASE_URL", "ASSESS_LLM_MODEL", "ASSESS_LLM_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return path


def metrics(at) -> dict:
    return {m.label: m.value for m in at.metric}


def fill_job_form(at, stub, *, limit=0, concurrency=4, depth=0):
    at.text_input(key="pj_url").input(stub.base_url)
    at.text_input(key="pj_model").input("stub-1")
    at.number_input(key="pj_limit").set_value(limit)
    at.number_input(key="pj_conc").set_value(concurrency)
    at.number_input(key="pj_depth").set_value(depth)


def click(at, label):
    next(b for b in at.button if b.label == label).click().run()
    assert not at.exception, at.exception


def test_audit_page_shows_the_stores_kappas_and_the_llm_outputs(app_db, stub_llm):
    at = open_llm()
    assert at.title[0].value == "LLM pre-judging"
    # give the store a second LLM source through the job form
    stub_llm.reply = lambda r: Reply(content=f"Score: {len(r['messages'][-1]['content']) % 5}")
    fill_job_form(at, stub_llm, limit=40)
    click(at, "Start / resume")
    assert not at.exception, at.exception
    assert any("40 to ask" in box_text(i) for i in at.info)  # the estimate
    assert any("Job 1: 40 stored (40 ok" in box_text(s) for s in at.success)
    assert rows(
        app_db, "SELECT COUNT(*), COUNT(DISTINCT raw_output) > 1 FROM prejudgments WHERE source = 'llm:stub-1'"
    ) == [(40, 1)]
    assert rows(app_db, "SELECT status, done, base_url FROM prejudge_jobs") == [("done", 40, stub_llm.base_url)]
    assert len(stub_llm.requests) == 40

    at.switch_page("pages/audit.py")
    at.run()
    assert at.title[0].value == "Judge audit"
    at.selectbox(key="au_a").select("llm:demo-gpt").run()
    at.selectbox(key="au_b").select("llm:stub-1").run()
    at.selectbox(key="au_w").select("quadratic").run()
    shown = metrics(at)

    from assess.services.audit import agreement_from_store
    from store import open_db

    report = agreement_from_store(
        open_db(app_db), "passage", "llm:demo-gpt", "llm:stub-1", weights="quadratic", threshold=2
    )
    assert shown == {
        "n": f"{report['n']:,}",
        "agreement": f"{report['agreement']:.3f}",
        "κ": f"{report['kappa_unweighted']:.3f}",
        "κ quadratic": f"{report['kappa_quadratic']:.3f}",
        "κ binary (≥ 2)": f"{report['kappa_binary']:.3f}",
    }
    assert report["n"] == 40
    titles = [c.proto.spec for c in at.get("plotly_chart")]
    assert any(f"Confusion (n = {report['n']})" in t for t in titles) and any("per group" in t for t in titles)
    assert any("Kendall" in t for t in titles)  # run rankings under both
    frame = next(d.value for d in at.dataframe if "llm:stub-1 said" in d.value.columns)
    assert len(frame) == sum(1 for i, (x, y) in enumerate(zip(frame["llm:demo-gpt"], frame["llm:stub-1"])) if x != y)
    assert all(str(s).startswith("Score: ") for s in frame["llm:stub-1 said"])

    # a second start (resume) asks the next 40 items, never one of the first 40 again
    at.switch_page("pages/llm.py")
    at.run()
    fill_job_form(at, stub_llm, limit=40)
    click(at, "Start / resume")
    assert any("40 already judged, 0 from cache, 40 to ask" in box_text(i) for i in at.info)
    prompts_sent = [canonical(r) for r in stub_llm.requests]
    assert len(prompts_sent) == len(set(prompts_sent)) == 80
    assert rows(app_db, "SELECT COUNT(*) FROM prejudgments") == [(80,)]


def test_prejudge_form_says_what_is_missing_instead_of_crashing(app_db):
    at = open_llm()
    next(b for b in at.button if b.label == "Estimate").click().run()
    assert not at.exception
    assert any("no LLM model given" in box_text(e) for e in at.error)
    at.text_input(key="pj_model").input("gpt-4o")
    next(b for b in at.button if b.label == "Estimate").click().run()
    assert any("no LLM endpoint configured" in box_text(e) for e in at.error)
    assert rows(app_db, "SELECT COUNT(*) FROM prejudge_jobs") == [(0,)]


def test_anchoring_table_after_reveal(store_target, app_db):
    at = open_audit()
    from store import open_db, queue

    db = open_db(app_db)
    queue.set_setting(db, "judging_mode", "reveal")
    queue.sign_in(db, "ann")
    [(turn, pid, llm)] = rows(
        app_db,
        "SELECT turn_id, passage_id, grade FROM passage_labels WHERE source = 'llm:demo-gpt' "
        "AND grade BETWEEN 1 AND 3 ORDER BY turn_id, passage_id LIMIT 1",
    )
    queue.save_passage_label(db, "ann", turn, pid, 0 if llm > 1 else 4, mode="reveal")
    queue.save_passage_label(db, "ann", turn, pid, llm, mode="reveal")
    at.run()
    table = next(d.value for d in at.dataframe if "toward" in d.value.columns)
    assert table.to_dict("records")[0] == {
        "assessor": "ann",
        "llm": "llm:demo-gpt",
        "changed": 1,
        "toward": 1,
        "away": 0,
        "same_distance": 0,
        "landed_on_llm": 1,
        "toward_share": 1.0,
    }


def test_a_second_start_while_a_job_runs_is_refused(store_target, app_db, stub_llm):
    at = open_llm()
    from store import jobs, open_db, prejudgments

    db = open_db(app_db)
    prejudgments.ensure_llm_source(db, "llm:stub-1", "stub-1", "v")
    running = jobs.start_job(
        db,
        source="llm:stub-1",
        task="passage",
        model="stub-1",
        prompt_version="v",
        base_url=None,
        concurrency=1,
        planned=5,
        skipped=0,
    )
    fill_job_form(at, stub_llm, limit=3)
    click(at, "Start / resume")
    [error] = at.error
    assert error.value.startswith(f"job {running} is already pre-judging passage for llm:stub-1 (pid ")
    assert not at.info and not at.success and not stub_llm.requests  # no estimate, no call
    # an estimate is fine meanwhile
    click(at, "Estimate")
    assert not at.error and any("3 to ask" in box_text(i) for i in at.info)
    # the job's process (this one) lives, but without a heartbeat for long it counts as killed
    with write(db):
        execute(
            db, "UPDATE prejudge_jobs SET heartbeat_at = '2000-01-01T00:00:00.000Z' WHERE id = :id", {"id": running}
        )
    fill_job_form(at, stub_llm, limit=3)
    click(at, "Start / resume")
    assert not at.error and any(f"Job {running + 1}: 3 stored" in box_text(s) for s in at.success)
    jobs = next(d.value for d in at.dataframe if "heartbeat_at" in d.value.columns)
    assert list(jobs["status"]) == ["done", "interrupted"]
    assert "no heartbeat for" in jobs["message"][1]


def test_adaptive_pool_from_the_page_equals_the_cli(store_target, app_db, stub_llm):
    """Runs pooled to depth 5; pre-judge the top 10 of every run from the page (depth 10), then the adaptive
    pool's report and Apply, against `pool adaptive --json` and an independent count."""
    from assess.services.loading import DEMO_DIR, load_file
    from store import open_db

    db = open_db(app_db)
    load_file(db, "topics", DEMO_DIR / "topics.json", collection="demo")
    load_file(db, "passages", DEMO_DIR / "passages.jsonl")
    for run in sorted((DEMO_DIR / "runs").glob("*.run")):
        load_file(db, "run", run, depth=5)
    load_file(db, "qrels", DEMO_DIR / "llm-passages.qrels", source="nist")  # stands in for human qrels
    with write(db):
        execute(db, "DELETE FROM pool WHERE method = 'qrels'")  # importing qrels pooled them
    pool_before = set(rows(app_db, "SELECT turn_id, passage_id FROM pool"))
    best = {}
    for turn, pid, rank in rows(app_db, "SELECT turn_id, passage_id, rank FROM rankings WHERE rank <= 10"):
        best[(turn, pid)] = min(rank, best.get((turn, pid), 99))
    assert pool_before == {k for k, r in best.items() if r <= 5} and len(best) == 217 > len(pool_before)

    # the stub grades the relevant passages below rank 5 as 0 (the filter must drop them), others by length
    nist = dict(
        ((t, p), g)
        for t, p, g in rows(app_db, "SELECT turn_id, passage_id, grade FROM passage_labels WHERE source = 'nist'")
    )
    texts = dict(rows(app_db, "SELECT id, text FROM passages"))
    deep_relevant = {k for k, rank in best.items() if rank > 5 and nist.get(k, -1) >= 2}
    zero = {texts[p] for _, p in deep_relevant}

    def grade(request):
        text = enclosed(request, "passage")
        return Reply(content=f"Score: {0 if text in zero else len(text) % 5}")

    stub_llm.reply = grade
    at = open_llm()
    fill_job_form(at, stub_llm, concurrency=8, depth=10)
    click(at, "Start / resume")
    assert any(
        "214 items, 3 passages without text skipped; 0 already judged, 0 from cache, 214 to ask" in box_text(i)
        for i in at.info
    )
    assert len(stub_llm.requests) == 214
    assert set(rows(app_db, "SELECT turn_id, passage_id FROM pool")) == pool_before  # graded, not pooled

    at.selectbox(key="ap_source").select("llm:stub-1")
    at.number_input(key="ap_threshold").set_value(2)
    at.number_input(key="ap_always").set_value(5)
    at.number_input(key="ap_depth").set_value(10)
    at.selectbox(key="ap_qrels").select("nist")
    at.number_input(key="ap_relevant").set_value(2)
    click(at, "Report")
    args = [
        "pool",
        "adaptive",
        "--source",
        "llm:stub-1",
        "--threshold",
        "2",
        "--always",
        "5",
        "--depth",
        "10",
        "--qrels",
        "nist",
        "--relevant",
        "2",
        "--json",
    ]
    cli = run_cli(*args, db=app_db)
    assert cli.returncode == 0, cli.stderr
    r = json.loads(cli.stdout)
    assert metrics(at) == {
        "Pool before (depth pool)": f"{r['depth_pool']:,}",
        "Pool after (adaptive)": f"{r['adaptive_pool']:,}",
        "Saved": f"{r['saved']:,}",
        "Not graded (left out)": f"{r['ungraded']:,}",
        "Relevant in nist": f"{r['relevant']:,}",
        "Relevant dropped": f"{r['relevant_dropped']:,}",
    }
    assert any(
        f"adaptive pool (top 5 + llm:stub-1 >= 2): {r['adaptive_pool']} pairs, {r['saved']} saved" in box_text(i)
        for i in at.info
    )
    grades = dict(
        ((t, p), g)
        for t, p, g in rows(app_db, "SELECT turn_id, passage_id, grade FROM passage_labels WHERE source = 'llm:stub-1'")
    )
    kept = {k for k, rank in best.items() if rank <= 5 or grades.get(k, -1) >= 2}
    relevant = {k for k in best if nist.get(k, -1) >= 2}
    assert (r["depth_pool"], r["adaptive_pool"], r["relevant"], r["relevant_dropped"]) == (
        217,
        len(kept),
        len(relevant),
        len(relevant - kept),
    )
    assert r["saved"] > 0 and r["relevant_dropped"] == len(deep_relevant) > 0
    assert set(rows(app_db, "SELECT turn_id, passage_id FROM pool")) == pool_before  # a report changes nothing

    click(at, "Apply: add to the pool")
    pool_after = set(rows(app_db, "SELECT turn_id, passage_id FROM pool"))
    assert pool_after == pool_before | kept and kept - pool_before
    assert any(
        f"Added {len(kept - pool_before):,} pairs to the pool (method adaptive)." in box_text(s) for s in at.success
    )
    assert rows(app_db, "SELECT COUNT(*) FROM pool WHERE method = 'adaptive'") == [(len(kept - pool_before),)]
    again = json.loads(run_cli(*args, "--apply", db=app_db).stdout)  # the CLI's --apply: nothing left
    assert again["added_to_pool"] == 0 and again["adaptive_pool"] == r["adaptive_pool"]


def open_audit(assessor: str | None = None) -> AppTest:
    return open_app("pages/audit.py", assessor, timeout=120)


def open_llm() -> AppTest:
    return open_app("pages/llm.py", timeout=120)
