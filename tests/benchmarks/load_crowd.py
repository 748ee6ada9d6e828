"""Load test: N simulated crowd workers (default 200) take a batch and submit their answers all at
once, through the store functions the worker page calls (``store.crowd.enter``, ``consent``,
``screen``, ``answer``), each worker in its own thread opening the store per request as a Streamlit
script run does. Every worker also re-sends one answer (a double click or a retried request).

Checks that no answer is lost and none duplicated (one row per (assignment, item), every batch
complete, no batch over k workers, every re-sent answer reported as not new) and reports answers
per second and the latency of ``answer`` (median, p95, max). Local only: a temporary SQLite file,
no network (nothing listens, not even on 127.0.0.1). Bounded: it gives up after --deadline seconds
and exits 1 on a failed check.

Run: python tests/benchmarks/load_crowd.py [--workers 200] [--think 0] [--deadline 120]
"""
from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def run_load(db_path: Path, workers: int = 200, deadline_s: float = 120.0, batch_size: int = 10,
             think_s: float = 0.0, seed: int = 0) -> dict:
    """Create the demo and a demo NtR study with room for ``workers``, run them at once, check, measure.

    ``think_s`` > 0: each worker waits a random time (exponential, that mean) before each answer,
    as people do; 0 sends every answer as fast as the store takes it (the worst burst).
    """
    from assess.crowd import entry_from_params
    from store import crowd as store_crowd
    from store import open_db
    from store.loading import load_demo

    db = open_db(db_path)
    load_demo(db)
    batches = math.ceil(186 / batch_size)
    k = math.ceil(workers / batches)
    store_crowd.create_demo_study(db, name="load", k=k, batch_size=batch_size)
    db.conn.close()

    start = threading.Barrier(workers + 1)
    latencies: list[float] = []
    repeats: list[bool] = []
    acknowledged: list[int] = []       # answers each worker was told were stored (new=True)
    errors: list[str] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        rng = random.Random(seed * 100_003 + n)
        try:
            start.wait(timeout=deadline_s)
            conn = open_db(db_path)          # the page's first script run: enter, consent
            assignment = store_crowd.enter(conn, entry_from_params({"study": "load", "worker": f"lw{n:04d}"}))
            store_crowd.consent(conn, assignment.id)
            conn.conn.close()
            own, again = [], []
            answered = 0
            while True:
                conn = open_db(db_path)      # one script run per key press: a fresh connection
                view = store_crowd.screen(conn, assignment.id)
                if view.completed:
                    conn.conn.close()
                    break
                value = (n + answered) % 2
                if think_s:
                    time.sleep(rng.expovariate(1 / think_s))
                t0 = time.perf_counter()
                result = store_crowd.answer(conn, assignment.id, view.item.item_id, value, seconds=1.0)
                own.append(time.perf_counter() - t0)
                if answered == 2:            # re-send this one (double click / retried request)
                    t0 = time.perf_counter()
                    again.append(not store_crowd.answer(conn, assignment.id, view.item.item_id, 1 - value,
                                                        seconds=9.0).new)
                    own.append(time.perf_counter() - t0)
                conn.conn.close()
                answered += 1 if result.new else 0
            with lock:
                latencies.extend(own)
                repeats.extend(again)
                acknowledged.append(answered)
        except Exception as exc:            # a load test reports every failure, of any kind
            with lock:
                errors.append(f"worker {n}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(workers)]
    for t in threads:
        t.start()
    start.wait(timeout=deadline_s)
    began = time.perf_counter()
    stop_at = time.monotonic() + deadline_s
    for t in threads:
        t.join(timeout=max(0.0, stop_at - time.monotonic()))
    elapsed = time.perf_counter() - began
    alive = sum(t.is_alive() for t in threads)

    check = open_db(db_path)
    c = check.conn
    expected = c.execute("SELECT COUNT(*) FROM crowd_assignments a JOIN crowd_batch_items bi "
                         "ON bi.batch_id = a.batch_id WHERE a.study = 'load'").fetchone()[0]
    stored = c.execute("SELECT COUNT(*), COUNT(DISTINCT assignment_id || ' ' || item_id) FROM crowd_answers"
                       ).fetchone()
    resent_kept = c.execute("SELECT COUNT(*) FROM crowd_answers WHERE seconds = 9.0").fetchone()[0]
    over_k = c.execute("SELECT COUNT(*) FROM (SELECT batch_id FROM crowd_assignments GROUP BY batch_id "
                       "HAVING COUNT(*) > ?)", (k,)).fetchone()[0]
    per_worker = c.execute("SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM crowd_assignments GROUP BY worker)"
                           ).fetchone()[0]
    completed = c.execute("SELECT COUNT(*) FROM crowd_assignments WHERE status = 'completed'").fetchone()[0]
    check.conn.close()
    ordered = sorted(latencies)
    result = {
        "workers": workers, "think_s": think_s, "k": k, "batches": batches, "elapsed_s": round(elapsed, 3), "unfinished": alive,
        "errors": errors[:5], "answers_acknowledged": sum(acknowledged), "assignment_items": expected,
        "answers_stored": stored[0], "distinct_answers": stored[1], "completed": completed,
        "resent": len(repeats), "resent_reported_not_new": sum(repeats), "resent_values_stored": resent_kept,
        "batches_over_k": over_k, "max_assignments_per_worker": per_worker,
        "answers_per_s": round(stored[0] / elapsed, 1) if elapsed else None,
        "latency_median_ms": round(statistics.median(ordered) * 1000, 2) if ordered else None,
        "latency_p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 2) if ordered else None,
        "latency_max_ms": round(ordered[-1] * 1000, 2) if ordered else None,
    }
    result["ok"] = (not errors and alive == 0 and stored[0] == stored[1] == expected == sum(acknowledged)
                    and completed == workers and len(repeats) == sum(repeats) == workers and resent_kept == 0
                    and over_k == 0 and per_worker == 1)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=200)
    parser.add_argument("--deadline", type=float, default=120.0, help="give up after this many seconds")
    parser.add_argument("--think", type=float, default=0.0,
                        help="mean seconds a worker thinks before each answer (default 0: all at once)")
    parser.add_argument("--db", help="SQLite file to use (default: a temporary file, removed afterwards)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.db) if args.db else Path(tmp) / "load.db"
        result = run_load(path, workers=args.workers, deadline_s=args.deadline, think_s=args.think)
    for key, value in result.items():
        print(f"{key:28} {value}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
