"""Benchmark: one pre-judging worker over two endpoints, as a ratio to their combined limit (issue 26).

Two local OpenAI-compatible stubs on 127.0.0.1 answer every call in 200 ms; each is given a stated concurrency
limit (``--endpoint URL,concurrency=N``), so together they can answer at most ``2 N / 0.2`` calls per second.
One worker (this process: the job runner with an endpoint pool, every result stored in its own transaction
in a SQLite file) pre-judges ``--items`` passages. Target: items/s >= 0.9 x the combined limit. The stubs and
the worker share this machine's cores, so the same run also measures one endpoint with the two limits added up
(one client, no pool): the difference is what spreading costs. Run: python tests/benchmarks/bench_endpoints.py
[--items 1200] [--concurrency 8] [--latency 0.2]
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
    from assess.llm.clients import OpenAIClient
    from assess.services import jobs
    from assess.services.endpoints import build_pool
    from tests.benchmarks.bench_llm import build_store
    from tests.stub_llm import StubLLM

    limit = 2 * concurrency / latency
    with tempfile.TemporaryDirectory() as tmp, StubLLM(latency=latency) as a, StubLLM(latency=latency) as b:
        db = build_store(Path(tmp) / "bench.db", items)
        pool = build_pool(
            "pool",
            [f"{a.base_url},concurrency={concurrency}", f"{b.base_url},concurrency={concurrency}"],
            concurrency=concurrency,
            timeout=30,
            retries=0,
            temperature=0,
        )
        one = OpenAIClient("one", base_url=a.base_url, api_key="k", timeout=30, max_retries=0)
        rates = {}
        for label, client, total in (("2 endpoints", pool, pool.concurrency), ("1 endpoint", one, 2 * concurrency)):
            plan = jobs.plan(db, "passage", f"llm:{client.model}", client.model, limit=items)
            start = time.perf_counter()
            summary = jobs.run(db, plan, client, concurrency=total)
            seconds = time.perf_counter() - start
            stored = db.raw.execute(
                "SELECT COUNT(*) FROM prejudgments WHERE source = ?", (f"llm:{client.model}",)
            ).fetchone()[0]
            assert stored == items == summary["asked"], (stored, items, summary)
            rates[label] = items / seconds
            print(
                f"1 worker, {label} ({total} calls in flight) at {latency * 1000:.0f} ms, limit {limit:.0f} items/s: "
                f"{items} items in {seconds:.2f} s = {rates[label]:.1f} items/s = {rates[label] / limit:.2f} x the limit"
            )
        per = [f["requests"] for f in pool.figures()]
        ratio = rates["2 endpoints"] / limit
        print(
            f"calls per endpoint {per}; {os.cpu_count()} CPUs shared by the worker and the stubs, load average "
            f"{os.getloadavg()[0]:.1f}; target >= 0.9 x the limit: {'met' if ratio >= 0.9 else 'NOT met'} ({ratio:.2f}); "
            f"vs one endpoint at the same total concurrency: {rates['2 endpoints'] / rates['1 endpoint']:.2f}x"
        )
        return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()
    bench(args.items, args.concurrency, args.latency)


if __name__ == "__main__":
    main()
