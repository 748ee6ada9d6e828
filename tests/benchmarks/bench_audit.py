"""Timings of the judge-audit measures (not collected by pytest): run ``python tests/benchmarks/bench_audit.py``.

1. agreement_matrix over 10 sources x 50,000 labelled items each (all 45 pairs), with breakdowns by
   topic, turn depth and personal turn; target: well under 2 s without bootstrap intervals per group.
   Measured without any bootstrap, with 1,000 replicates for each pair's overall figures, and with
   100 replicates for every pair and group (group intervals cost replicates x groups x 25 cells per pair).
2. compare_systems for 50 runs x 200 topics (1,000 bootstrap replicates over topics, 1,225 run pairs
   t-tested under both sources).
3. bias_report and self_consistency on 50,000 items.
Each figure is the median of several repetitions (after one warm-up call, so imports are not counted).

``--store`` measures the services end to end instead (assess/services/audit/ on a SQLite store built once
in a temporary folder): ``agreement_view`` over the same 10 sources x 50,000 items read from the store (the
/audit page's numbers), the /audit page's first render on that store (target < 2 s: labels read, matrix
computed, page drawn and sent; AppTest in process, so without a browser's drawing), and ``coverage_view``
with 1,000 repeats on the iKAT 2024 NIST vs GPT-4 labels (8,103 shared pairs; target < 5 s), the latter
skipped without ../shared.

``--browser`` times /audit in headless Chromium on the same store and on the demo (see browser_figures).
"""

from __future__ import annotations

import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from assess.measures.agreement import agreement_matrix
from assess.measures.bias import bias_report, self_consistency
from assess.measures.systems import compare_systems


def median_time(function, repeat: int = 3) -> float:
    function()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def sources(n_sources: int = 10, per_source: int = 50_000, pool: int = 60_000, seed: int = 0):
    """Labels of ``n_sources`` sources on 0-4, each on ``per_source`` items of a ``pool``, noisy around a truth."""
    rng = np.random.default_rng(seed)
    items = [(f"t{i % 200}_{i % 7}", f"doc{i}") for i in range(pool)]
    truth = rng.integers(0, 5, pool)
    labels, kinds = {}, {}
    for s in range(n_sources):
        chosen = rng.choice(pool, per_source, replace=False)
        noisy = np.clip(truth[chosen] + rng.integers(-1, 2, per_source) * (rng.random(per_source) < 0.4), 0, 4)
        labels[f"source{s}"] = {items[i]: int(v) for i, v in zip(chosen.tolist(), noisy.tolist())}
        kinds[f"source{s}"] = "human" if s < 3 else "llm"
    groups = {
        "topic": {item: item[0].split("_")[0] for item in items},
        "depth": {item: int(item[0].split("_")[1]) for item in items},
        "personal": {item: int(item[1][3:]) % 3 == 0 for item in items},
    }
    return labels, kinds, groups


def main() -> None:
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, numpy {np.__version__}")
    labels, kinds, groups = sources()
    scale = [0, 1, 2, 3, 4]
    for title, kwargs in (
        ("no bootstrap", {"bootstrap": 0}),
        ("1,000 replicates per pair, none per group", {"bootstrap": 1000, "group_bootstrap": False}),
        ("100 replicates per pair and per group", {"bootstrap": 100, "group_bootstrap": True}),
    ):
        seconds = median_time(
            lambda kwargs=kwargs: agreement_matrix(labels, scale=scale, kinds=kinds, groups=groups, **kwargs)
        )
        print(f"agreement_matrix, 10 sources x 50,000 items, 45 pairs, 3 breakdowns, {title}: {seconds:.3f} s")

    rng = np.random.default_rng(1)
    quality = rng.random(50)
    reference = {
        f"run{r:02d}": {f"t{t}": float(quality[r] + rng.normal(0, 0.3)) for t in range(200)} for r in range(50)
    }
    other = {run: {t: v + float(rng.normal(0, 0.2)) for t, v in topics.items()} for run, topics in reference.items()}
    seconds = median_time(lambda: compare_systems(reference, other))
    print(f"compare_systems, 50 runs x 200 topics, 1,000 replicates, 1,225 pairs t-tested twice: {seconds:.3f} s")

    human = labels["source0"]
    llm = labels["source5"]
    lengths = {item: len(item[1]) * 20 for item in human}
    depth = groups["depth"]
    personal = groups["personal"]
    seconds = median_time(lambda: bias_report(llm, human, lengths=lengths, depth=depth, personal=personal))
    print(f"bias_report (length, depth, personal) on {len(set(llm) & set(human)):,} shared items: {seconds:.3f} s")
    samples = {item: [g, g, min(4, g + 1)] for item, g in list(llm.items())}
    seconds = median_time(lambda: self_consistency(samples, scale=scale))
    print(f"self_consistency, {len(samples):,} items x 3 samples: {seconds:.3f} s")


def page_render(target: str) -> tuple[float, float]:
    """Seconds of the /audit page's first render on ``target`` (nothing cached: the agreement matrix of every
    chosen source is computed, drawn and sent) and of a rerun, in Streamlit's AppTest (no browser)."""
    from streamlit.testing.v1 import AppTest

    os.environ.update(ASSESS_DB=target, ASSESS_OPEN="1")
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=300)
    at.run()
    at.switch_page("pages/audit.py")
    start = time.perf_counter()
    at.run()
    first = time.perf_counter() - start
    if at.exception or at.error or not at.dataframe:
        raise SystemExit(f"/audit did not render the matrix: {[e.value for e in [*at.exception, *at.error]]}")
    start = time.perf_counter()
    at.run()
    return first, time.perf_counter() - start


def build_store(target: str):
    """A SQLite store at ``target`` holding the labels of :func:`sources` (10 sources x 50,000 items)."""
    from store import labels as store_labels
    from store import open_db
    from store.db import run_many, write
    from store.sources import ensure_source

    labels, kinds, _groups = sources()
    db = open_db(target)
    items = sorted(set().union(*(set(v) for v in labels.values())))
    turns = sorted({t for t, _ in items})
    with write(db):
        conversations = sorted({t.split("_")[0] for t in turns})
        run_many(
            db,
            "INSERT INTO conversations (id, number, title) VALUES (:id, :id, :id)",
            [{"id": c} for c in conversations],
        )
        run_many(
            db,
            "INSERT INTO turns (id, conversation_id, turn_number, position) VALUES (:id, :c, :n, :n)",
            [{"id": t, "c": t.split("_")[0], "n": int(t.split("_")[1])} for t in turns],
        )
        run_many(db, "INSERT INTO passages (id) VALUES (:id)", [{"id": p} for p in sorted({p for _, p in items})])
        for name in labels:
            ensure_source(db, name, "assessor" if kinds[name] == "human" else "llm", model="m")
    for name, mapping in labels.items():
        store_labels.save_many(db, "passage", name, mapping.items(), mode="import", via="bench")
    return db


WAYS = {"link": "sidebar link", "load": "page load"}


def browser_figures(repeat: int = 3) -> None:
    """/audit in headless Chromium (Debian's) on the 10 x 50,000 store: from the click on the page's link in
    the sidebar (the app open on its home page, as an organizer moves between pages) or from a page load, until
    the page's script run has finished with the breakdown chart drawn; the matrix computed afresh (a label
    changed just before) and kept (the same labels again); beside the demo's /audit (the page's floor:
    Streamlit and plotly with next to no data). The browser loads plotly once before anything is timed."""
    import tempfile

    from playwright.sync_api import sync_playwright

    from assess.services.loading import load_demo
    from store import open_db
    from store.db import run, write
    from tests.browser_support import settled, streamlit_server

    def change_a_label(target: Path) -> None:
        with open_db(str(target)) as db, write(db):
            run(
                db,
                "UPDATE passage_labels SET grade = 4 - grade, updated_at = :now WHERE source = 'source0' AND "
                "(turn_id, passage_id) = (SELECT turn_id, passage_id FROM passage_labels WHERE source = 'source0' "
                "ORDER BY turn_id, passage_id LIMIT 1)",
                {"now": time.strftime("%Y-%m-%dT%H:%M:%S") + f".{time.time_ns() % 10**9:09d}Z"},
            )

    def visit(page, url: str, how: str) -> float:
        if how == "link":  # from the home page of the open app, the sidebar's organizer pages all listed
            page.locator('[data-testid="stSidebarNav"] a').first.click()
            page.get_by_text("Pooled pairs").first.wait_for(timeout=120_000)
            settled(page)
            more = page.get_by_text(re.compile(r"^View \d+ more$"))
            if more.count():
                more.first.click()
        start = time.perf_counter()
        if how == "link":
            page.locator('[data-testid="stSidebarNav"] a[href$="/audit"]').first.click()
        else:
            page.goto(url + "/audit")
        page.locator(".js-plotly-plot g.errorbar").first.wait_for(state="attached", timeout=120_000)
        settled(page)
        return time.perf_counter() - start

    with tempfile.TemporaryDirectory() as folder, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium")
        try:
            for name, prepare in (("demo", lambda t: load_demo(open_db(str(t)))), ("10 x 50,000", None)):
                where = Path(folder) / name.replace(" ", "")
                where.mkdir()
                target = where / "assess.db"
                if prepare is None:
                    build_store(str(target)).close()
                else:
                    prepare(target)
                with streamlit_server(where, db=target) as (url, _):
                    page = browser.new_page(viewport={"width": 1400, "height": 1200})
                    visit(page, url, "load")  # plotly's script into the browser's cache, the matrix into the server's
                    for how in ("link", "load"):
                        fresh, kept = [], []
                        for _ in range(repeat):
                            change_a_label(target)
                            fresh.append(visit(page, url, how))
                            kept.append(visit(page, url, how))
                        print(
                            f"/audit in Chromium, {name}, {WAYS[how]}: matrix computed "
                            f"{statistics.median(fresh):.2f} s, kept {statistics.median(kept):.2f} s (median of {repeat})"
                        )
                    page.close()
        finally:
            browser.close()


def store_figures() -> None:
    import tempfile

    from assess.services.audit import agreement_view, coverage_view
    from assess.services.loading import load_file
    from store import open_db

    with tempfile.TemporaryDirectory() as folder:
        db = build_store(str(Path(folder) / "bench.db"))
        seconds = median_time(lambda: agreement_view(db, "passage", threshold=2), repeat=3)
        print(f"agreement_view from the store, 10 sources x 50,000 items, 45 pairs, 3 breakdowns: {seconds:.3f} s")
        seconds = median_time(lambda: agreement_view(db, "passage", threshold=2, breakdowns=("topic",)), repeat=3)
        print(f"  as /audit asks for it (one breakdown, by topic): {seconds:.3f} s")
        db.close()
        first, again = page_render(str(Path(folder) / "bench.db"))
        print(f"/audit page on that store (AppTest, in process): first render {first:.3f} s, rerun {again:.3f} s")

        root = Path(__file__).resolve().parents[2].parent / "shared" / "data"
        files = (
            root / "irlabamsterdam-iKAT/2024/data/2024_test_topics.json",
            root / "gyeozai-CFDA-TREC-iKAT2025/DATA/topics/2024_test_qrels.trec",
            root / "irlabamsterdam-CONE-RAG/resources/automatic_resources/llm-gpt4-pool-depth-30.txt",
        )
        if not all(f.exists() for f in files):
            print("coverage_view: ../shared/data is absent, skipped")
            return
        db = open_db(str(Path(folder) / "real.db"))
        load_file(db, "topics", files[0])
        load_file(db, "qrels", files[1], source="nist")
        load_file(db, "qrels", files[2], source="llm:gpt-4")
        seconds = median_time(
            lambda: coverage_view(db, "nist", "llm:gpt-4", threshold=2, sample=500, repeats=1000, seed=0), repeat=3
        )
        print(f"coverage_view from the store, 8,103 shared pairs, sample 500, 1,000 repeats: {seconds:.3f} s")
        db.close()


if __name__ == "__main__":
    if "--browser" in sys.argv:
        browser_figures()
    elif "--store" in sys.argv:
        store_figures()
    else:
        main()
