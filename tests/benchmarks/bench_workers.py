"""Benchmark: shared pre-judging jobs (``prejudge --join``) on one PostgreSQL store, with the endpoint and the store
on the same machine as the workers.

Part A, scaling: 1, 2 and 4 worker processes on one job against one local stub endpoint that answers in 200 ms and
serves at most ``--limit`` requests at a time (its capacity: limit / 0.2 s items/s); each worker keeps
``--concurrency`` calls in flight. Reported: items/s, as a share of the endpoint's capacity and of N workers'
ideal (N x concurrency / latency), and the CPU seconds each worker, the stub and PostgreSQL used.

Part B, a large job: ``--items`` items (default 1,000,000) against a stub answering at once, one worker: items/s of
planning and of working, the worker's peak RSS (target < 300 MB) and the store work per item (statements the
worker sent, BEGIN/COMMIT included, and PostgreSQL transactions), with the CPU of each process.

Run: python tests/benchmarks/bench_workers.py [--part a|b|both] [--items 1000000] [--limit 32] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

TICK = os.sysconf("SC_CLK_TCK")
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
]

# The worker process: the CLI, with every statement the store sends counted (printed on exit).
WORKER = r"""
import atexit, sys
import store.db as d
count = [0]
def counted(name, weight=lambda *a: 1):
    inner = getattr(d, name)
    def call(*args, **kwargs):
        count[0] += weight(*args)
        return inner(*args, **kwargs)
    setattr(d, name, call)
counted("_execute")
counted("driver_sql")
counted("_execute_many", lambda db, sql, chunk: len(chunk))
atexit.register(lambda: print(f"BENCH-STATEMENTS {count[0]}", file=sys.stderr))
from assess.cli import main
sys.exit(main(sys.argv[1:]))
"""

# The stub endpoint as a process of its own: answers after --latency, at most --limit at a time.
STUB = r"""
import sys, threading, time
sys.path.insert(0, sys.argv[1])
from tests.stub_llm import StubLLM, default_reply
latency, limit = float(sys.argv[2]), int(sys.argv[3])
gate = threading.BoundedSemaphore(limit) if limit else None
def reply(body):
    if gate is None:
        return default_reply(body)
    with gate:
        time.sleep(latency)
        return default_reply(body)
stub = StubLLM(reply=reply).start()
print(stub.base_url, flush=True)
stub.thread.join()
"""


def cpu_seconds(pid: int, children: bool = False) -> float:
    """utime + stime of a live process (with ``children``: plus those of its children it has waited for)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12]) + (int(fields[13]) + int(fields[14]) if children else 0)
    return ticks / TICK


def build_store(url: str, turns: int, per_turn: int, seed: int = 0) -> None:
    """A store of ``turns`` synthetic turns with ``per_turn`` pooled passages each (short texts: the store's work
    per item is what is measured, not the prompt's length)."""
    from store import open_db
    from store.bulk import insert_rows
    from store.db import now, write

    rng = random.Random(seed)
    stamp = now()
    with open_db(url) as db, write(db, references_checked=True):
        insert_rows(
            db,
            "INSERT INTO conversations (id, number, title)",
            ("?", "?", "'bench'"),
            "",
            ((f"c{c}", str(c)) for c in range(turns)),
        )
        insert_rows(
            db,
            "INSERT INTO turns (id, conversation_id, turn_number, position, utterance, resolved_utterance)",
            ("?", "?", "1", "0", "?", "?"),
            "",
            (
                (f"c{c}_1", f"c{c}", f"how do I {WORDS[c % len(WORDS)]}?", f"how do I {WORDS[c % len(WORDS)]}?")
                for c in range(turns)
            ),
        )
        texts = [" ".join(rng.choice(WORDS) for _ in range(12)) + "." for _ in range(997)]
        insert_rows(
            db,
            "INSERT INTO passages (id, text)",
            ("?", "?"),
            "",
            (
                (f"d{c}-{k}:0", texts[(c * per_turn + k) % 997] + f" {c}-{k}")
                for c in range(turns)
                for k in range(per_turn)
            ),
        )
        insert_rows(
            db,
            "INSERT INTO pool (turn_id, passage_id, method, best_rank, added_at)",
            ("?", "?", "'depth'", "?", ":at"),
            "",
            ((f"c{c}_1", f"d{c}-{k}:0", k + 1) for c in range(turns) for k in range(per_turn)),
            {"at": stamp},
        )


def start_stub(latency: float, limit: int) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", STUB, str(ROOT), str(latency), str(limit)], stdout=subprocess.PIPE, text=True
    )
    return proc, proc.stdout.readline().strip()


def start_worker(url: str, base_url: str, model: str, *options: str) -> subprocess.Popen:
    """A worker process (output to temporary files, so that its resource usage can be read when it ends)."""
    argv = [
        "prejudge",
        "--task",
        "passage",
        "--model",
        model,
        "--base-url",
        base_url,
        "--join",
        "--no-progress",
        "--db",
        url,
        *options,
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ASSESS_LLM_API_KEY": "k"}
    out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")  # noqa: SIM115  (closed in finish())
    proc = subprocess.Popen([sys.executable, "-c", WORKER, *argv], cwd=ROOT, env=env, stdout=out, stderr=err, text=True)
    proc.files = (out, err)
    return proc


def finish(proc: subprocess.Popen, expect: int = 0) -> dict:
    """Wait for a worker: its CPU seconds, peak RSS (MB), statements sent and output."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    out, err = (f.seek(0) or f.read() for f in proc.files)
    for f in proc.files:
        f.close()
    statements = next((int(line.split()[1]) for line in err.splitlines() if line.startswith("BENCH-STATEMENTS")), 0)
    if proc.returncode != expect:
        raise RuntimeError(f"worker failed ({proc.returncode}):\n{err[-3000:]}")
    return {
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss_mb": usage.ru_maxrss / 1024,
        "statements": statements,
        "out": out,
    }


def postmaster_pid(cluster) -> int:
    return int((cluster.data / "postmaster.pid").read_text().split()[0])


def seconds_between(a: str, b: str) -> float:
    from datetime import datetime

    parse = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))  # noqa: E731
    return (parse(b) - parse(a)).total_seconds()


def job_row(url: str, model: str) -> dict:
    from store import open_db
    from store.db import row

    with open_db(url) as db:
        return row(
            db,
            "SELECT id, status, planned, done, started_at, finished_at FROM prejudge_jobs WHERE model = :m",
            {"m": model},
        )


def part_a(
    cluster, url: str, workers: list[int], per_worker: int, limit: int, concurrency: int, latency: float
) -> None:
    capacity = limit / latency
    print(f"Part A: stub answering in {latency * 1000:.0f} ms, at most {limit} at a time (capacity {capacity:.0f} items/s); "
          f"each worker {concurrency} calls in flight (ideal {concurrency / latency:.0f} items/s)")  # fmt: skip
    stub, base = start_stub(latency, limit)
    try:
        for n in workers:
            model = f"bench-w{n}"
            items = per_worker * n
            pg0, stub0 = cpu_seconds(postmaster_pid(cluster), children=True), cpu_seconds(stub.pid)
            start = time.perf_counter()
            procs = [
                start_worker(
                    url, base, model, "--limit", str(items), "--concurrency", str(concurrency), "--block-size", "50"
                )
            ]
            time.sleep(0.5)  # the first plans; the others join
            procs += [
                start_worker(url, base, model, "--limit", str(items), "--concurrency", str(concurrency))
                for _ in range(n - 1)
            ]
            done = [finish(p) for p in procs]
            wall = time.perf_counter() - start
            job = job_row(url, model)
            assert job["status"] == "done" and job["done"] == items, job
            seconds = seconds_between(job["started_at"], job["finished_at"])
            rate = items / seconds
            ideal = min(capacity, n * concurrency / latency)
            pg_cpu = cpu_seconds(postmaster_pid(cluster), children=True) - pg0
            print(
                f"  {n} worker{'s' if n > 1 else ' '}: {items:5d} items in {seconds:5.1f} s = {rate:6.1f} items/s = "
                f"{rate / capacity:.2f} of the endpoint's capacity, {rate / ideal:.2f} of the ideal {ideal:.0f} (wall with "
                f"start-up {wall:.1f} s); CPU s per worker {', '.join(format(d['cpu'], '.1f') for d in done)}, stub "
                f"{cpu_seconds(stub.pid) - stub0:.1f}, PostgreSQL {pg_cpu:.1f}"
            )  # fmt: skip
    finally:
        stub.kill()
        stub.wait()


def plan_only(cluster, url: str, items: int, block: int) -> None:
    """Only the planner of a large job (it reads, renders, hashes and queues every item): its rate and peak RSS.
    The endpoint refuses every call, so the worker stops once the first calls fail."""
    print(f"Part B, planning only: {items:,} items, blocks of {block}")
    pg0 = cpu_seconds(postmaster_pid(cluster), children=True)
    start = time.perf_counter()
    proc = start_worker(url, "http://127.0.0.1:9/v1", "bench-plan", "--block-size", str(block), "--retries", "0")
    result = finish(proc, expect=2)
    from store import open_db
    from store.db import row

    with open_db(url) as db:
        job = row(db, "SELECT planned, started_at, planned_at FROM prejudge_jobs WHERE model = 'bench-plan'")
    assert job["planned"] == items, job
    seconds = seconds_between(job["started_at"], job["planned_at"])
    print(
        f"  {items:,} items queued in {seconds:.0f} s = {items / seconds:,.0f} items/s (wall {time.perf_counter() - start:.0f} s); "
        f"worker peak RSS {result['rss_mb']:.0f} MB; CPU s: worker {result['cpu']:.0f}, PostgreSQL "
        f"{cpu_seconds(postmaster_pid(cluster), children=True) - pg0:.0f}"
    )  # fmt: skip


def part_b(cluster, url: str, items: int, concurrency: int, block: int) -> None:
    from store import open_db
    from store.db import value

    print(f"Part B: one worker, {items:,} items, stub answering at once, concurrency {concurrency}, blocks of {block}")
    stub, base = start_stub(0.0, 0)
    try:
        with open_db(url) as db:
            commits0 = value(db, "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
        pg0, stub0 = cpu_seconds(postmaster_pid(cluster), children=True), cpu_seconds(stub.pid)
        start = time.perf_counter()
        proc = start_worker(url, base, "bench-big", "--concurrency", str(concurrency), "--block-size", str(block))
        planned_at = None
        while planned_at is None and os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            time.sleep(1)
            with open_db(url) as db:
                planned_at = value(db, "SELECT planned_at FROM prejudge_jobs WHERE model = 'bench-big'")
        planning = time.perf_counter() - start
        result = finish(proc)
        wall = time.perf_counter() - start
        with open_db(url) as db:
            commits = (
                value(db, "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()") - commits0
            )
        job = job_row(url, "bench-big")
        assert job["status"] == "done" and job["done"] == items, job
        working = wall - planning
        print(
            f"  {items:,} items in {wall:.0f} s: planning (read, render, hash, queue) {planning:.0f} s = "
            f"{items / planning:,.0f} items/s; working {working:.0f} s = {items / working:,.0f} items/s\n"
            f"  worker peak RSS {result['rss_mb']:.0f} MB (target < 300 MB); {result['statements'] / items:.1f} "
            f"statements and {commits / items:.2f} PostgreSQL transactions per item\n"
            f"  CPU s: worker {result['cpu']:.0f}, stub {cpu_seconds(stub.pid) - stub0:.0f}, PostgreSQL "
            f"{cpu_seconds(postmaster_pid(cluster), children=True) - pg0:.0f}"
        )  # fmt: skip
    finally:
        stub.kill()
        stub.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("a", "b", "both"), default="both")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--per-worker", type=int, default=400, help="part A: items per worker")
    parser.add_argument("--limit", type=int, default=32, help="part A: the endpoint's concurrency limit")
    parser.add_argument("--concurrency", type=int, default=8, help="part A: calls in flight per worker")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--items", type=int, default=1_000_000, help="part B: items of the large job")
    parser.add_argument("--per-turn", type=int, default=1000, help="part B: pooled passages per turn")
    parser.add_argument("--big-concurrency", type=int, default=16)
    parser.add_argument("--block-size", type=int, default=1000)
    parser.add_argument("--plan-only", action="store_true", help="part B: only plan the large job (its RSS and rate)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the cluster and the stub on a kill too
    from tests import pg

    cluster = pg.start_cluster()
    try:
        print(f"machine: {os.cpu_count()} CPUs; PostgreSQL {cluster.bindir.parent.name} on 127.0.0.1")
        if args.part in ("a", "both"):
            workers = [int(n) for n in args.workers.split(",")]
            url = cluster.url(cluster.create_database())
            build_store(url, 10, -(-max(workers) * args.per_worker // 10) + 10)
            part_a(cluster, url, workers, args.per_worker, args.limit, args.concurrency, args.latency)
        if args.part in ("b", "both"):
            url = cluster.url(cluster.create_database())
            t = time.perf_counter()
            turns = -(-args.items // args.per_turn)
            build_store(url, turns, args.per_turn)
            print(f"  store of {turns * args.per_turn:,} pooled passages built in {time.perf_counter() - t:.0f} s")
            if args.plan_only:
                plan_only(cluster, url, turns * args.per_turn, args.block_size)
            else:
                part_b(cluster, url, turns * args.per_turn, args.big_concurrency, args.block_size)
    finally:
        pg.remove_cluster(cluster)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory():
        main()
