"""Benchmark: server-side time from a key press on the Judge page to the next passage rendered,
with the iKAT 2024 NIST pool imported (20,575 pairs, 116 turns) and N assessors at once.

Each assessor is a separate process driving the real page script with Streamlit's AppTest
(the same code path as a browser session: callback writes the label, the script reruns and
renders the next passage). Each assessor waits a random think time (mean --think seconds) before
each key press. Run: python tests/benchmarks/bench_judge.py [--assessors 20] [--presses 25] [--think 2]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data"
TOPICS = DATA / "irlabamsterdam-iKAT/2024/data/2024_test_topics.json"
NIST = DATA / "gyeozai-CFDA-TREC-iKAT2025/DATA/topics/2024_test_qrels.trec"


def assessor(args) -> list[float]:
    db_path, name, presses, start_at, think = args
    os.environ["ASSESS_DB"] = db_path
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["assessor"] = name
    at.run()
    at.switch_page("pages/judge.py")
    at.run()
    while time.time() < start_at:  # all assessors start pressing together
        time.sleep(0.01)
    times = []
    rng = random.Random(name)
    for i in range(presses):
        if think:  # an assessor reads before the next key press; 0 = press as fast as the server answers
            time.sleep(rng.uniform(0.5 * think, 1.5 * think))
        t = time.perf_counter()
        at.button(key=f"g{i % 5}").click().run()
        times.append((time.perf_counter() - t) * 1000)
        assert not at.exception, at.exception
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--assessors", type=int, default=20)
    parser.add_argument("--presses", type=int, default=25)
    parser.add_argument(
        "--think",
        type=float,
        default=2.0,
        help="mean seconds between an assessor's key presses (NIST assessors take 10-30 s)",
    )
    args = parser.parse_args()
    if not NIST.exists():
        sys.exit("../shared/data is absent: nothing to benchmark")
    from assess.services.loading import load_file
    from store import open_db

    with tempfile.TemporaryDirectory() as tmp:
        db_path = str(Path(tmp) / "bench.db")
        db = open_db(db_path)
        load_file(db, "topics", TOPICS)
        load_file(db, "qrels", NIST, source="nist")
        start_at = time.time() + 25
        jobs = [(db_path, f"a{i:02d}", args.presses, start_at, args.think) for i in range(args.assessors)]
        with mp.get_context("spawn").Pool(args.assessors) as pool:
            results = pool.map(assessor, jobs)
        all_times = sorted(t for r in results for t in r)
        labels = db.raw.execute("SELECT COUNT(*) FROM passage_labels WHERE source LIKE 'a%'").fetchone()[0]
    p95 = all_times[int(0.95 * (len(all_times) - 1))]
    print(
        f"{args.assessors} assessors x {args.presses} key presses (think time {args.think} s) on the 20,575-pair NIST pool "
        f"({os.cpu_count()} cores): median {statistics.median(all_times):.0f} ms, p95 {p95:.0f} ms, "
        f"max {all_times[-1]:.0f} ms; labels stored {labels} of {args.assessors * args.presses}"
    )


if __name__ == "__main__":
    main()
