"""Benchmark: a large pre-judging job run through a provider's batch API to its end (``prejudge --batch-submit``)
against the local stub of OpenAI's Files and Batch API (tests/batch_stubs.py, its own process), on a SQLite store.

The store holds ``--items`` pooled passages (default 1,000,000; bench_workers' synthetic store). One ``prejudge
--batch-submit`` process plans the job, splits it into input files of at most 50,000 requests / 200 MB, uploads and
submits them, polls, downloads the results and stores them. Reported: the time of each phase (from the job's
rows), the process's peak RSS and its RSS sampled as results arrive (flat memory: it does not grow with the items
stored), the batches and their sizes, and a check that every item was sent and stored exactly once.

Run: python tests/benchmarks/bench_batches.py [--items 1000000] [--per-turn 1000] [--provider openai|anthropic]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--per-turn", type=int, default=1000)
    parser.add_argument("--provider", choices=("openai", "anthropic"), default="openai")
    args = parser.parse_args()
    from tests.benchmarks.bench_workers import build_store

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        t0 = time.perf_counter()
        build_store(str(db), -(-args.items // args.per_turn), args.per_turn)
        print(f"store of {args.items:,} pooled passages built in {time.perf_counter() - t0:.0f} s")
        port = free_port()
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        stub = subprocess.Popen(
            [sys.executable, "tests/batch_stubs.py", "--port", str(port)], cwd=ROOT, env=env, stdout=subprocess.PIPE
        )
        stub.stdout.readline()
        base = f"http://127.0.0.1:{port}/v1"
        keys = {
            "openai": ("ASSESS_LLM_BASE_URL", "ASSESS_LLM_API_KEY"),
            "anthropic": ("ASSESS_ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"),
        }
        url_var, key_var = keys[args.provider]
        env |= {url_var: base, key_var: "sk-bench-0001"}
        argv = [sys.executable, "-m", "assess", "prejudge", "--task", "passage", "--source", "llm:bench"]
        argv += ["--model", "bench-1", "--batch-submit", "--provider", args.provider, "--poll", "1", "--no-progress"]
        argv += ["--json", "--db", str(db)]
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        samples = []
        try:
            while proc.poll() is None:
                time.sleep(2)
                mb = rss_mb(proc.pid)
                try:
                    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as c:
                        done = c.execute("SELECT COALESCE(MAX(done), 0) FROM prejudge_jobs").fetchone()[0]
                except sqlite3.Error:
                    done = None
                if mb is not None:
                    samples.append((time.perf_counter() - start, done, mb))
                    if len(samples) % 30 == 0:  # a line a minute: figures even from a run cut short
                        print(f"  {samples[-1][0]:.0f} s: {done:,} results stored, RSS {mb:.0f} MB", flush=True)
            out, err = proc.communicate()
        finally:
            stub.kill()
            stub.wait()
        wall = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # the CLI's (the stub: killed after)
        assert proc.returncode == 0, err[-2000:]
        s = json.loads(out)
        with sqlite3.connect(db) as c:
            job = dict(zip(("started", "planned_at", "finished", "done", "planned"), c.execute(
                "SELECT started_at, planned_at, finished_at, done, planned FROM prejudge_jobs").fetchone()))  # fmt: skip
            stored = c.execute(
                "SELECT COUNT(*), COUNT(DISTINCT turn_id || ' ' || item_id) FROM prejudgments"
            ).fetchone()
            first_sent = c.execute(
                "SELECT MIN(submitted_at), MAX(submitted_at), MAX(ended_at) FROM provider_batches"
            ).fetchone()
        assert job["done"] == job["planned"] == args.items and stored == (args.items, args.items), (job, stored)
        from datetime import datetime

        def at(text):
            return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()

        planning = at(job["planned_at"]) - at(job["started"])
        sending = at(first_sent[1]) - at(job["planned_at"])
        storing = at(job["finished"]) - at(first_sent[2])
        sizes = [b["requests"] for b in s["batches"]]
        print(
            f"{args.items:,} items through the {args.provider} batch stub in {wall:.0f} s: planning {planning:.0f} s, "
            f"writing + uploading + submitting {sending:.0f} s, storing the last batch's results {storing:.0f} s"
        )
        print(
            f"{len(sizes)} batches (requests: {min(sizes):,} to {max(sizes):,}; MB: "
            f"{min(b['MB'] for b in s['batches'])} to {max(b['MB'] for b in s['batches'])}), every item stored once"
        )
        print(f"peak RSS of the prejudge process: {peak:.0f} MB")
        marks = [samples[int(len(samples) * f)] for f in (0.1, 0.3, 0.5, 0.7, 0.9)] + [samples[-1]]
        print(
            "RSS as it ran (s, results stored, MB): " + "; ".join(f"{t:.0f} s, {d:,}, {m:.0f} MB" for t, d, m in marks)
        )


if __name__ == "__main__":
    main()
