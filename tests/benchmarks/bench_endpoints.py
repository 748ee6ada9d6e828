"""Benchmark: one pre-judging worker over two endpoints, as a ratio to their combined limit (issue 26).

Two local OpenAI-compatible stubs on 127.0.0.1 answer every call in 200 ms; each is given a stated concurrency
limit (``--endpoint URL,concurrency=N``), so together they can answer at most ``2 N / 0.2`` calls per second.
One worker (this process: the job runner with an endpoint pool, every result stored in its own transaction
in a SQLite file) pre-judges ``--items`` passages. Target: items/s >= 0.9 x the combined limit. The stubs and
the worker share this machine's cores. Run: python tests/benchmarks/bench_endpoints.py [--items 1200]
[--concurrency 8] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def bench(items: int, concurrency: int, latency: float) -> float:
    from assess.services import jobs
    from assess.services.endpoints import build_pool
    from tests.benchmarks.bench_llm import build_store
    from tests.stub_llm import StubLLM

    with tempfile.TemporaryDirectory() as tmp, StubLLM(latency=latency) as a, StubLLM(latency=latency) as b:
        db = build_store(Path(tmp) / "bench.db", items)
        pool = build_pool(
            "bench",
            [f"{a.base_url},concurrency={concurrency}", f"{b.base_url},concurrency={concurrency}"],
            concurrency=concurrency,
            timeout=30,
            retries=0,
            temperature=0,
        )
        plan = jobs.plan(db, "passage", "llm:bench", "bench", limit=items)
        start = time.perf_counter()
        summary = jobs.run(db, plan, pool, concurrency=pool.concurrency, base_url=pool.base_url)
        seconds = time.perf_counter() - start
        stored = db.raw.execute("SELECT COUNT(*) FROM prejudgments WHERE source = 'llm:bench'").fetchone()[0]
        assert stored == items == summary["asked"], (stored, items, summary)
        limit = 2 * concurrency / latency
        rate = items / seconds
        per = [f["requests"] for f in pool.figures()]
        print(
            f"1 worker, 2 endpoints x concurrency {concurrency} at {latency * 1000:.0f} ms (limit {limit:.0f} items/s): "
            f"{items} items in {seconds:.2f} s = {rate:.1f} items/s = {rate / limit:.2f} x the limit "
            f"(calls per endpoint {per}; {os.cpu_count()} CPUs shared by worker and stubs); target >= 0.9: "
            f"{'met' if rate / limit >= 0.9 else 'NOT met'}"
        )
        return rate / limit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()
    bench(args.items, args.concurrency, args.latency)


if __name__ == "__main__":
    main()
