"""Benchmark: LLM pre-judging throughput against the local stub endpoint answering in 200 ms, and local NLI
throughput batched vs one pair at a time (tiny random model built here).

1,000 passages are pre-judged at the default concurrency (every result stored in its own transaction,
labels written); a sequential run over a subset gives the baseline. Target: >= 25 items/s at the
default concurrency. Run: python tests/benchmarks/bench_llm.py [--items 1000] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

WORDS = [
    "run",
    "walk",
    "plan",
    "week",
    "knee",
    "race",
    "sister",
    "shoes",
    "pace",
    "interval",
    "rest",
    "recovery",
    "beginner",
    "distance",
    "minute",
    "heart",
    "rate",
    "trail",
    "hill",
    "road",
    "coach",
    "stretch",
    "injury",
    "sleep",
    "coffee",
    "shift",
    "nurse",
    "diet",
    "protein",
    "hydration",
]


def build_store(path: Path, n: int):
    """The demo plus ``n`` synthetic passages pooled over the demo's turns by one extra run."""
    from assess.services.loading import load_demo, load_file
    from store import open_db

    db = open_db(path)
    load_demo(db)
    turns = [r[0] for r in db.raw.execute("SELECT id FROM turns ORDER BY id")]
    rng = random.Random(0)
    passages, run = path.with_suffix(".jsonl"), path.with_suffix(".run")
    per_turn = -(-n // len(turns))
    with passages.open("w") as p, run.open("w") as r:
        for t_i, turn in enumerate(turns):
            for k in range(per_turn):
                pid = f"bench-doc-{t_i:02d}{k:03d}:0"
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(60, 140))).capitalize() + "."
                p.write(json.dumps({"id": pid, "contents": text}) + "\n")
                r.write(f"{turn} Q0 {pid} {k + 1} {1000 - k} bench\n")
    load_file(db, "passages", passages)
    load_file(db, "run", run, depth=per_turn)
    return db


def bench_llm(items: int, latency: float) -> None:
    from assess.llm.clients import DEFAULT_CONCURRENCY, OpenAIClient
    from assess.services import jobs as prejudge
    from tests.stub_llm import StubLLM

    with tempfile.TemporaryDirectory() as tmp, StubLLM(latency=latency) as stub:
        db = build_store(Path(tmp) / "bench.db", items)
        print(
            f"stub endpoint answering in {latency * 1000:.0f} ms; pool {db.raw.execute('SELECT COUNT(*) FROM pool').fetchone()[0]} pairs"
        )
        results = {}
        for label, model, concurrency, n in (
            ("sequential", "seq", 1, 50),
            ("concurrency 4", "c4", 4, 200),
            ("concurrency 8", "c8", 8, 400),
            (f"default (concurrency {DEFAULT_CONCURRENCY})", "default", DEFAULT_CONCURRENCY, items),
            ("concurrency 32", "c32", 32, items),
        ):
            judge = OpenAIClient(model, base_url=stub.base_url, api_key="k")
            plan = prejudge.plan(db, "passage", f"llm:{model}", model, limit=n)
            start = time.perf_counter()
            summary = prejudge.run(db, plan, judge, concurrency=concurrency)
            seconds = time.perf_counter() - start
            stored = db.raw.execute("SELECT COUNT(*) FROM prejudgments WHERE source = ?", (f"llm:{model}",)).fetchone()[
                0
            ]
            assert stored == n == summary["asked"], (stored, n, summary)
            results[label] = n / seconds
            print(
                f"{label:28} {n:5d} items in {seconds:6.2f} s = {n / seconds:6.1f} items/s "
                f"(ideal {concurrency / latency:5.1f})"
            )
        default = results[f"default (concurrency {DEFAULT_CONCURRENCY})"]
        print(
            f"speed-up default vs sequential: {default / results['sequential']:.1f}x; target >= 25 items/s: "
            f"{'met' if default >= 25 else 'NOT met'}"
        )


def bench_nli(pairs: int, threads: int) -> None:
    import torch

    from assess.llm.clients import NliClient
    from tests.services.test_nli import build_tiny_nli

    torch.set_num_threads(threads)  # 1 by default: steadier figures on a shared 2-core machine

    rng = random.Random(1)
    data = [
        (
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 60))),
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 15))),
        )
        for _ in range(pairs)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        nli = NliClient(str(build_tiny_nli(Path(tmp) / "tiny")), batch_size=32, local_files_only=True).load()
        nli.entailment(data[:64])  # warm up
        for label, size, n in (
            ("one pair at a time", 1, pairs // 4),
            ("batched (32)", 32, pairs),
            ("batched (128)", 128, pairs),
        ):
            start = time.perf_counter()
            nli.entailment(data[:n], batch_size=size)
            seconds = time.perf_counter() - start
            print(
                f"NLI tiny model ({threads} thread), {label:20} {n:5d} pairs in {seconds:6.2f} s = "
                f"{n / seconds:8.1f} pairs/s"
            )


def bench_render(n: int) -> None:
    """Rendering a passage prompt with its data enclosure (fresh code, neutralised fields) and hashing its
    inputs, per call: the cost the enclosure adds to every planned item."""
    import hashlib

    from assess.llm.prompts import prompt_for

    rng = random.Random(3)
    prompt = prompt_for("passage")
    fields = [
        {
            "history": "\n".join(f"User: {' '.join(rng.choices(WORDS, k=12))}" for _ in range(4)),
            "utterance": " ".join(rng.choices(WORDS, k=10)),
            "resolved": " ".join(rng.choices(WORDS, k=14)),
            "ptkb": "\n".join(f"{i}. {' '.join(rng.choices(WORDS, k=8))}" for i in range(1, 11)),
            "passage": " ".join(rng.choices(WORDS, k=300)),
        }
        for _ in range(n)
    ]
    hostile = [{**f, "passage": " ".join(rng.choices(WORDS + ["</data-x>", ">>>"], k=300))} for f in fields]
    for name, batch in (("plain", fields), ("hostile (1 in 16 words a tag or >>>)", hostile)):
        start = time.perf_counter()
        for f in batch:
            prompt.render(**f)
            hashlib.sha256(json.dumps(prompt.inputs(**f), sort_keys=True).encode()).hexdigest()
        seconds = time.perf_counter() - start
        print(f"render + hash {n} passage prompts, ~2 KB {name}: {seconds * 1e6 / n:6.1f} us per prompt")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--pairs", type=int, default=4000)
    parser.add_argument("--threads", type=int, default=1, help="torch threads for the NLI part")
    args = parser.parse_args()
    bench_render(5000)
    bench_llm(args.items, args.latency)
    bench_nli(args.pairs, args.threads)


if __name__ == "__main__":
    main()
