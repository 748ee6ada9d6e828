"""The audit and LLM pre-judging pages through AppTest: kappa values equal the store's, disagreements show
the LLM's words, a pre-judging job started from the page against the local stub stores its rows (the pool
or the top K of every run), a second start while a job runs is refused, and the adaptive pool report and
Apply equal `python -m assess pool adaptive`."""

from __future__ import annotations

import html
import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from store import samples, settings, sources
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
    monkeypatch.delenv("ASSESS_LLM_ENDPOINTS", raising=False)
    if "stub_llm" in request.fixturenames:  # the deployment's own endpoint, the one the page offers
        monkeypatch.setenv("ASSESS_LLM_BASE_URL", request.getfixturevalue("stub_llm").base_url)
    return path


def metrics(at) -> dict:
    return {m.label: m.value for m in at.metric}


def fill_job_form(at, stub, *, limit=0, concurrency=4, depth=0):
    at.selectbox(key="pj_endpoint").set_value("default")  # ASSESS_LLM_BASE_URL: the stub (app_db)
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
    show_tab(at, "Two sources")
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
        "κ unweighted": f"{report['kappa_unweighted']:.3f}",
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
    at = open_audit(tab="Two sources")
    from store import open_db, queue

    db = open_db(app_db)
    settings.set_setting(db, "judging_mode", "reveal")
    sources.sign_in(db, "ann")
    [(turn, pid, llm)] = rows(
        app_db,
        "SELECT turn_id, passage_id, grade FROM passage_labels WHERE source = 'llm:demo-gpt' "
        "AND grade BETWEEN 1 AND 3 ORDER BY turn_id, passage_id LIMIT 1",
    )
    queue.save_passage_label(db, "ann", turn, pid, 0 if llm > 1 else 4, mode="reveal")
    queue.save_passage_label(db, "ann", turn, pid, llm, mode="reveal", active_ms=1800)
    at.run()
    table = next(d.value for d in at.dataframe if "toward" in d.value.columns)
    record = table.to_dict("records")[0]
    # the report gained the active time of the changes after the reveal (issue 25.2)
    assert {k: record.pop(k) for k in ("timed_changes", "change_median_ms", "change_q1_ms", "change_q3_ms")} == {
        "timed_changes": 1,
        "change_median_ms": 1800.0,
        "change_q1_ms": 1800.0,
        "change_q3_ms": 1800.0,
    }
    assert record == {
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


def open_audit(assessor: str | None = None, tab: str | None = None) -> AppTest:
    at = open_app("pages/audit.py", assessor, timeout=120)
    return show_tab(at, tab) if tab else at


def show_tab(at: AppTest, label: str) -> AppTest:
    """Open a tab of /audit as a click on it does: only the open tab's panels run."""
    at.session_state["au_tab"] = label
    at.run()
    assert not at.exception, at.exception
    return at


def open_llm() -> AppTest:
    return open_app("pages/llm.py", timeout=120)


# ------------------------------------------------------------------------------------------ the judge audit (issue 15)

DEMO_SOURCES = ["demo-ann", "demo-ben", "llm:demo-gpt", "llm:demo-llama"]


def chart(at, title_part: str) -> dict:
    """The plotly figure (as JSON) whose title holds ``title_part``."""
    for c in at.get("plotly_chart"):
        spec = json.loads(c.proto.spec)
        if title_part in (spec["layout"].get("title") or {}).get("text", ""):
            return spec
    raise AssertionError(f"no figure titled with {title_part!r}")


DEMO_PAIRS = [
    "demo-ann vs demo-ben",
    "demo-ann vs llm:demo-gpt",
    "demo-ann vs llm:demo-llama",
    "demo-ben vs llm:demo-gpt",
    "demo-ben vs llm:demo-llama",
    "llm:demo-gpt vs llm:demo-llama",
]


def frame_with(at, *columns):
    return next(d.value for d in at.dataframe if set(columns) <= set(d.value.columns))


def test_audit_on_the_demo_shows_every_judge_side_by_side_with_the_services_numbers(app_db):
    from assess.services import audit as service
    from store import open_db

    at = open_audit()
    assert not at.exception and not at.error
    db = open_db(app_db)
    # defaults: a human reference against an LLM judge, never a source against itself
    assert (at.selectbox(key="au_ref").value, at.selectbox(key="au_judge").value) == ("demo-ann", "llm:demo-gpt")
    assert at.multiselect(key="au_mx_sources_passage").value == DEMO_SOURCES
    view = service.agreement_view(db, "passage", DEMO_SOURCES, threshold=2, breakdowns=("topic",))
    heat = chart(at, "of every pair of sources")
    assert heat["data"][0]["x"] == [
        "demo-ann (human)",
        "demo-ben (human)",
        "llm:demo-gpt (llm)",
        "llm:demo-llama (llm)",
    ]
    assert heat["data"][0]["z"] == view["grids"]["kappa_unweighted"]["values"]
    ceiling = view["ceiling"]
    assert ceiling["pairs"] == [["demo-ann", "demo-ben"]] and ceiling["n"] == 109
    assert f"human ceiling (outlined) = {ceiling['kappa_unweighted']:.3f}" in heat["layout"]["title"]["text"]
    pairs = frame_with(at, "a", "b", "κ unweighted", "κ unweighted CI")
    first = view["pairs"][0]
    assert (pairs["a"][0], pairs["b"][0], pairs["n"][0]) == ("demo-ann", "demo-ben", 109)
    assert pairs["κ unweighted"][0] == round(first["kappa_unweighted"], 4)
    assert (
        pairs["κ unweighted CI"][0]
        == f"[{first['ci']['kappa_unweighted'][0]:.3f}, {first['ci']['kappa_unweighted'][1]:.3f}]"
    )
    splits = [f"pooled {name}" for name in ("human-human", "machine-machine", "human-machine", "(every pair)")]
    assert list(pairs["a"]) == ["demo-ann"] * 3 + ["demo-ben"] * 2 + ["llm:demo-gpt", "human ceiling", *splits]
    machines = list(pairs["a"]).index("pooled machine-machine")  # people and machines pooled apart
    assert pairs["κ unweighted"][machines] == round(view["splits"]["machine-machine"]["kappa_unweighted"], 4)
    assert (pairs["b"][machines], pairs["n"][machines]) == ("1 pair(s)", view["splits"]["machine-machine"]["n"])
    # humans agree more with each other than with either LLM (the demo's simulated assessors)
    assert all(p["kappa_unweighted"] < ceiling["kappa_unweighted"] for p in view["pairs"] if not p["human_pair"])
    by_topic = frame_with(at, "pair", "group", "value", "CI")
    assert set(by_topic["group"]) == {"101", "102"}
    assert by_topic["value"][0] == round(first["by"]["topic"][0]["kappa_unweighted"], 4)
    at.selectbox(key="au_mx_stat").select("alpha").run()
    assert chart(at, "Krippendorff's α of every pair")["data"][0]["z"] == view["grids"]["alpha"]["values"]
    # PTKB: demo-ann, the LLM and the topics' provenance (organizers, a human source) side by side
    at.radio(key="au_task").set_value("ptkb").run()
    assert not at.exception and at.multiselect(key="au_mx_sources_ptkb").value == [
        "demo-ann",
        "llm:demo-gpt",
        "organizers",
    ]
    ptkb = service.agreement_view(db, "ptkb", ["demo-ann", "llm:demo-gpt", "organizers"], threshold=1)
    heat = chart(at, "of every pair of sources")
    assert heat["data"][0]["z"] == ptkb["grids"]["alpha"]["values"] and ptkb["ceiling"]["n"] == 126
    at.radio(key="au_task").set_value("ntr").run()  # one NtR source in the demo
    assert any("Two label sources are needed" in i.value for i in at.info) and not at.exception


def test_a_breakdown_too_large_to_draw_shows_one_sources_pairs_and_downloads_all(app_db, monkeypatch):
    """Past BREAKDOWN_POINTS figures (45 pairs x 200 topics on a large store), the chart and the table hold
    the pairs of one chosen source (default: the first human); the download has every pair's rows."""
    from assess.ui import audit as panels

    monkeypatch.setattr(panels, "BREAKDOWN_POINTS", 5)  # the demo: 6 pairs x 2 topics = 12 figures
    at = open_audit()
    assert not at.exception and not at.error
    assert at.selectbox(key="au_mx_focus").value == "demo-ann"
    shown = frame_with(at, "pair", "group", "value", "CI")
    assert list(shown["pair"]) == [p for p in DEMO_PAIRS if "demo-ann" in p for _ in range(2)]
    assert "the 6 of the pairs with demo-ann" in " ".join(c.value for c in at.caption)
    plot = chart(at, "per topic")
    assert [trace["name"] for trace in plot["data"]] == [p for p in DEMO_PAIRS if "demo-ann" in p]
    assert any(b.proto.label == "Download every pair (CSV)" for b in at.get("download_button"))
    at.selectbox(key="au_mx_focus").select("llm:demo-llama").run()
    assert list(frame_with(at, "pair", "group", "value", "CI")["pair"]) == [
        p for p in DEMO_PAIRS if "llm:demo-llama" in p for _ in range(2)
    ]


def test_audit_systems_bias_and_estimates_on_the_demo(app_db):
    from assess.services import audit as service
    from store import open_db

    at = open_audit(tab="Systems")
    db = open_db(app_db)
    systems = service.systems_view(db, "demo-ann", "llm:demo-gpt", measure="nDCG@5", correction="holm")
    shown = frame_with(at, "name", "value", "low", "high")
    tau = systems["correlations"]["kendall_tau"]
    assert shown["name"][0] == "Kendall τ" and shown["value"][0] == tau["value"]
    assert [shown["low"][0], shown["high"][0]] == tau["ci"]
    sig = systems["significance"]
    text = next(m.value for m in at.markdown if m.value.startswith("**Significance preservation**"))
    assert f"of {sig['significant_reference']} run pairs significant under the reference, {sig['same']} keep" in text
    assert f"{sig['lost']} lose significance, {sig['flipped']} flip; {sig['gained']} become significant" in text
    lead = systems["leader"]
    assert any(f"Leading run under `demo-ann`: `{lead['reference']}`" in m.value for m in at.markdown)
    assert len(frame_with(at, "run A", "run B", "outcome")) == sig["pairs"] == 3

    bias = service.bias_view(db, "demo-ann", "llm:demo-gpt")
    show_tab(at, "Bias and consistency")
    lengths = frame_with(at, "name", "value", "n", "higher")
    assert list(lengths["name"]) == [g["group"] for g in bias["length"]["groups"]]
    assert list(lengths["value"]) == [g["mean_diff"] for g in bias["length"]["groups"]]
    assert bias["overall"]["mean_diff"] > 0  # the demo's LLM is lenient
    at.radio(key="au_bias_p").set_value("runs").run()
    runs = frame_with(at, "name", "value", "n", "higher")
    assert list(runs["name"]) == ["demo-bm25", "demo-dense", "demo-rerank"]
    assert list(runs["n"]) == [r["n"] for r in bias["runs"]]

    estimate = service.estimate_view(db, "demo-ann", "llm:demo-gpt", k=5, threshold=2)
    show_tab(at, "Estimates")
    table = frame_with(at, "name", "PPI value", "human only value")
    for _, row in table.iterrows():
        entry = estimate["P@k"][row["name"]]["estimate"]
        assert row["PPI value"] == round(entry["ppi"]["value"], 4)
        assert row["human only high"] == round(entry["human_only"]["high"], 4)
        assert entry["ppi"]["width"] <= entry["human_only"]["width"] + 1e-12
    assert list(table["name"]) == ["demo-bm25", "demo-dense", "demo-rerank"]

    at.number_input(key="au_cov_n").set_value(40)
    at.number_input(key="au_cov_r").set_value(300)
    next(b for b in at.button if b.label == "Simulate coverage").click().run()
    assert not at.exception, at.exception  # issue 22 item 8: its table's download button sat inside the form
    cov = service.coverage_view(db, "demo-ann", "llm:demo-gpt", sample=40, repeats=300)
    simulated = frame_with(at, "estimate", "coverage", "mean_width")
    assert simulated.to_dict("records") == [{"estimate": k, **cov[k]} for k in ("ppi", "human_only")]
    assert any(f"true share {cov['true_value']:.3f} of {cov['n_items']} items" in c.value for c in at.caption)
    at.run()  # the result stays through a rerun (a download click reruns the page)
    assert not at.exception and frame_with(at, "estimate", "coverage", "mean_width").to_dict("records") == [
        {"estimate": k, **cov[k]} for k in ("ppi", "human_only")
    ]


def test_audit_budgeted_sample_becomes_the_assessors_queue(app_db):
    from assess.services import audit as service
    from store import open_db

    at = open_audit(tab="Budgeted sample")
    db = open_db(app_db)
    plan = service.sample_plan(db, "llm:demo-gpt", budgets=(25, 50, 100, 200, 500), design="stratified")
    widths = frame_with(at, "budget", "uniform_human_only", "stratified")
    assert list(widths["budget"]) == [25, 50, 100, 200] == [r["budget"] for r in plan["rows"]]
    assert list(widths["stratified"]) == [r["stratified"] for r in plan["rows"]]
    assert [t["name"] for t in chart(at, "Expected 95% interval width")["data"]][-1].startswith("stratified")

    at.text_input(key="au_sa_name").input("first-20")
    at.selectbox(key="au_sa_who").select("demo-ben")
    next(n for n in at.number_input if n.label == "Budget (items)").set_value(20)
    next(b for b in at.button if b.label == "Create sample").click().run()
    assert not at.exception and not at.error
    assert any("Sample first-20: 20 items lead demo-ben's queue." in box_text(s) for s in at.success)
    items = samples.sample_items(db, "first-20")
    assert len(items) == 20 and {i["assessor"] for i in items} == {"demo-ben"}
    assert all(0 < i["inclusion"] <= 1 for i in items)
    order = [(i["turn_id"], i["item_id"]) for i in sorted(items, key=lambda i: i["position"])]
    assert list(samples.sampled_order(db, "demo-ben", task="passage").items)[:20] == order
    # the same name again is refused in one line, nothing more stored
    at.text_input(key="au_sa_name").input("first-20")
    next(b for b in at.button if b.label == "Create sample").click().run()
    assert any("exists already" in box_text(e) for e in at.error) and len(samples.sample_items(db, "first-20")) == 20
    # demo-ben grades the sample; as the reference, the Estimates tab opens on it and says its design
    from store import labels

    labels.save_many(db, "passage", "demo-ben", [(item, 2) for item in order], mode="blind", via="key")
    at.selectbox(key="au_ref").select("demo-ben").run()
    show_tab(at, "Estimates")
    assert at.selectbox(key="au_es_s_demo-ben").value == "first-20"
    assert any("Sample (drawn): sample 'first-20', drawn by the workbench" in box_text(c) for c in at.caption)
    show_tab(at, "Budgeted sample")
    # the disagreement design's second judge: the other LLM, not the first source by name (a person)
    at.radio(key="au_sa_d").set_value("disagreement").run()
    assert not at.exception and at.selectbox(key="au_sa_2").value == "llm:demo-llama"


def test_audit_consistency_and_persona_when_an_llm_answered_k_times_and_without_ptkb(app_db):
    from assess.services import audit as service
    from assess.tasks import ParseStatus
    from store import open_db, prejudgments

    at = open_audit(tab="Bias and consistency")
    db = open_db(app_db)
    items = rows(app_db, "SELECT turn_id, passage_id, grade FROM passage_labels WHERE source = 'llm:demo-llama'")[:12]
    prejudgments.ensure_llm_source(db, "llm:demo-llama", "demo-llama", "p-v1")
    # as prejudge --no-ptkb does, the variant's answers go to a source of their own (same model)
    prejudgments.ensure_llm_source(db, "llm:demo-llama:no-ptkb", "demo-llama", "p-noptkb-v1")
    for n, (turn, passage, grade) in enumerate(items):
        answers = {"p-noptkb-v1": [max(0, grade - (n % 3 == 0))], "p-v1": [grade, grade, min(4, grade + n % 2)]}
        for version, grades in answers.items():
            for sample, g in enumerate(grades):
                prejudgments.save(
                    db,
                    prejudgments.Prejudgment(
                        "llm:demo-llama:no-ptkb" if "noptkb" in version else "llm:demo-llama",
                        "passage",
                        turn,
                        passage,
                        "demo-llama",
                        version,
                        f"h-{version}-{n}",
                        f"Score: {g}",
                        ParseStatus.OK,
                        parsed=g,
                        sample=sample,
                    ),
                )
    at.run()
    assert not at.exception
    consistency = service.consistency_view(db, "llm:demo-llama")
    text = next(m.value for m in at.markdown if "answered" in m.value and "at least twice" in m.value)
    assert (
        f"answered {consistency['n_multi']} items at least twice: Krippendorff's α = {consistency['alpha']:.3f}" in text
    )
    assert at.selectbox(key="au_pn_llm:demo-llama").value == "p-noptkb-v1"
    persona = service.persona_view(db, "llm:demo-llama", "p-v1", "p-noptkb-v1")
    heat = chart(at, "Grades of 12 items")
    lowered = sum(1 for n, (_, _, grade) in enumerate(items) if n % 3 == 0 and grade > 0)
    assert heat["data"][0]["z"] == persona["matrix"] and persona["changed"] == lowered == persona["up"] > 0
    assert heat["layout"]["title"]["text"] == f"Grades of 12 items: {lowered} changed ({lowered} up, 0 down)"


def test_scores_open_on_a_human_source_against_an_llm(app_db):
    """/scores: agreement and run rankings open on a human source (A) against an LLM (B), by the sources'
    kinds, never on a source against itself. (/adjudicate is a keyboard queue now: tests/app/test_adjudication.py.)"""
    at = open_app("pages/scores.py")
    for task in ("passage", "ptkb", "ntr"):
        at.radio(key="ag_task").set_value(task).run()
        if task == "ntr":  # the demo has one NtR source: nothing compared with itself
            assert any("Two label sources of this kind are needed" in i.value for i in at.info)
            assert not any(s.key == "ag_a" for s in at.selectbox)
        else:
            assert (at.selectbox(key="ag_a").value, at.selectbox(key="ag_b").value) == ("demo-ann", "llm:demo-gpt")
    at.session_state["sc_tab"] = "Run rankings"  # only the open tab runs
    at.run()
    assert (at.selectbox(key="rk_a").value, at.selectbox(key="rk_b").value) == ("demo-ann", "llm:demo-gpt")


def test_audit_names_are_data_everywhere(app_db):
    """A source named like markup: inert in the heat map, the tables and every text."""
    from assess.formats.trec import Qrel
    from store import open_db
    from store.imports import import_passage_qrels

    at = open_audit()  # loads the demo
    db = open_db(app_db)
    evil = "<img_src=x_onerror=alert(1)>**bold**[link](http://example.org)"
    labelled = rows(app_db, "SELECT turn_id, passage_id, grade FROM passage_labels WHERE source = 'demo-ann'")
    import_passage_qrels(db, "evil", [Qrel(t, p, (g + 1) % 5, n) for n, (t, p, g) in enumerate(labelled)], source=evil)
    at.run()
    at.multiselect(key="au_mx_sources_passage").select(evil).run()  # a source added since is chosen by hand
    assert not at.exception
    at.selectbox(key="au_judge").select(evil).run()
    assert not at.exception
    heat = chart(at, "of every pair of sources")
    assert "&lt;img_src=x_onerror=alert(1)&gt;**bold**[link](http://example.org) (import)" in heat["data"][0]["x"]
    assert evil in set(frame_with(at, "a", "b", "κ unweighted")["b"])  # a table cell holds the name as it is
    for tab in (
        "Side by side",
        "Two sources",
        "Replace the humans?",
        "Systems",
        "Bias and consistency",
        "Estimates",
        "Budgeted sample",
        "Verdict",
    ):
        show_tab(at, tab)  # only the open tab runs: look at each
        assert not any("<img" in json.dumps(c.proto.spec) for c in at.get("plotly_chart")), tab
        for element in (*at.markdown, *at.caption, *at.info):
            text = re.sub(r"`[^`]*`", "", element.value)  # a code span shows its text verbatim: inert
            assert "<img" not in text and "](http" not in text, tab
        if tab == "Systems":
            assert any(f"under `{evil}`" in m.value for m in at.markdown)  # the leader line names it as code


def test_replace_the_humans_tab_shows_the_alt_test_of_audit_alt_test(app_db):
    at = open_audit(tab="Replace the humans?")
    assert at.multiselect(key="au_alt_humans").value == ["demo-ann", "demo-ben"]  # human kinds by default
    assert at.selectbox(key="au_alt_judge").value == "llm:demo-gpt"  # an LLM by default
    cli = json.loads(
        run_cli(
            "audit", "alt-test", "--human", "demo-ann", "--human", "demo-ben", "--judge", "llm:demo-gpt", "--json",
            db=app_db, check=True,
        ).stdout
    )  # fmt: skip
    verdict = next(m.value for m in at.markdown if "these humans here" in m.value)
    assert verdict.startswith(f"**{'llm:demo-gpt'} {'can' if cli['passes'] else 'cannot'} replace these humans here**")
    assert f"ω = {cli['omega']:.3f}" in verdict and f"ρ = {cli['rho']:.3f}" in verdict
    shown = frame_with(at, "human", "items", "p", "corrected p", "judge wins")
    assert list(shown["human"]) == [r["annotator"] for r in cli["annotators"]]
    assert list(shown["items"]) == [r["items"] for r in cli["annotators"]]
    assert list(shown["p"]) == [round(r["p_value"], 4) for r in cli["annotators"]]
    assert list(shown["judge wins"]) == [r["rejected"] for r in cli["annotators"]]

    at.number_input(key="au_alt_eps").set_value(0.0).run()  # no margin: the demo's LLM wins against nobody
    strict = json.loads(
        run_cli(
            "audit", "alt-test", "--human", "demo-ann", "--human", "demo-ben", "--judge", "llm:demo-gpt",
            "--epsilon", "0", "--json", db=app_db, check=True,
        ).stdout
    )  # fmt: skip
    verdict = next(m.value for m in at.markdown if "these humans here" in m.value)
    assert f"ω = {strict['omega']:.3f}" in verdict and strict["omega"] < cli["omega"]

    at.multiselect(key="au_alt_humans").set_value(["demo-ann"]).run()
    assert any("needs at least 2 human sources, got 1" in box_text(e) for e in at.error)
