"""Load test: N simulated crowd workers (default 200) take a batch and submit their answers all at
once, through the store functions the worker page calls (``store.crowd.enter``, ``consent``,
``screen``, ``answer``), each worker in its own thread opening the store per request as a Streamlit
script run does. Every worker also re-sends one answer (a double click or a retried request).

About half the workers fail their batch's hidden test item (their answers alternate 0 and 1), so
QC discards their batches and frees those slots: a batch goes out until k kept workers completed
it. Once the first wave is done, a second wave arrives at once (as many workers as slots were
freed, plus a tenth of N) and races for the freed slots; those who find none are turned away.

Checks that no answer is lost and none duplicated (one row per (assignment, item), every re-sent
answer reported as not new), that no worker gets two batches, that the second wave takes every
freed slot, and that no batch ever has more than k assignments in progress or completed and kept:
at the end (from the progress report), and throughout the run in a monitor thread reading the
slot counts every 20 ms. Reports answers per second, the latency of ``answer`` (median, p95,
max), the batches discarded and the assignments given out again in their place. Local only: a
temporary SQLite file, no network (nothing listens, not even on 127.0.0.1). Bounded: it gives up
after --deadline seconds and exits 1 on a failed check.

Run: python tests/benchmarks/load_crowd.py [--workers 200] [--think 0] [--deadline 120] [--no-second-wave]
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


def run_load(
    db_path: Path,
    workers: int = 200,
    deadline_s: float = 120.0,
    batch_size: int = 10,
    think_s: float = 0.0,
    seed: int = 0,
    second_wave: bool = True,
) -> dict:
    """Create the demo and a demo NtR study with room for ``workers``, run them at once, then (with
    ``second_wave``) the workers who race for the slots QC freed; check, measure.

    ``think_s`` > 0: each worker waits a random time (exponential, that mean) before each answer,
    as people do; 0 sends every answer as fast as the store takes it (the worst burst).
    """
    from assess.crowd.entry import entry_from_params
    from assess.services.loading import load_demo
    from store import crowd as store_crowd
    from store import open_db
    from store.db import row, value

    db = open_db(db_path)
    load_demo(db)
    batches = math.ceil(186 / batch_size)
    k = math.ceil(workers / batches)
    store_crowd.create_demo_study(db, name="load", k=k, batch_size=batch_size)
    db.close()

    latencies: list[float] = []
    repeats: list[bool] = []
    acknowledged: list[int] = []  # answers each worker was told were stored (new=True)
    turned_away: list[int] = []  # workers who found no batch left (second wave only)
    errors: list[str] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + deadline_s

    def worker(n: int, start: threading.Barrier) -> None:
        rng = random.Random(seed * 100_003 + n)
        try:
            start.wait(timeout=deadline_s)
            conn = open_db(db_path)  # the page's first script run: enter, consent
            assignment = store_crowd.enter(conn, entry_from_params({"study": "load", "worker": f"lw{n:04d}"}))
            if assignment is None:
                conn.close()
                with lock:
                    turned_away.append(n)
                return
            store_crowd.consent(conn, assignment.id)
            conn.close()
            own, again = [], []
            answered = 0
            while True:
                conn = open_db(db_path)  # one script run per key press: a fresh connection
                view = store_crowd.screen(conn, assignment.id)
                if view.completed:
                    conn.close()
                    break
                value = (n + answered) % 2
                if think_s:
                    time.sleep(rng.expovariate(1 / think_s))
                t0 = time.perf_counter()
                result = store_crowd.answer(conn, assignment.id, view.item.item_id, value, seconds=1.0)
                own.append(time.perf_counter() - t0)
                if answered == 2:  # re-send this one (double click / retried request)
                    t0 = time.perf_counter()
                    again.append(
                        not store_crowd.answer(conn, assignment.id, view.item.item_id, 1 - value, seconds=9.0).new
                    )
                    own.append(time.perf_counter() - t0)
                conn.close()
                answered += 1 if result.new else 0
            with lock:
                latencies.extend(own)
                repeats.extend(again)
                acknowledged.append(answered)
        except Exception as exc:  # a load test reports every failure, of any kind
            with lock:
                errors.append(f"worker {n}: {type(exc).__name__}: {exc}")

    def wave(numbers: range) -> tuple[float, int]:
        """Start the workers ``numbers`` at once; (seconds until all finished, how many did not finish)."""
        start = threading.Barrier(len(numbers) + 1)
        threads = [threading.Thread(target=worker, args=(n, start), daemon=True) for n in numbers]
        for t in threads:
            t.start()
        start.wait(timeout=deadline_s)
        began = time.perf_counter()
        for t in threads:
            t.join(timeout=max(0.0, stop_at - time.monotonic()))
        return time.perf_counter() - began, sum(t.is_alive() for t in threads)

    done = threading.Event()
    watched = {"samples": 0, "max_holding": 0, "over_k": []}

    def monitor() -> None:
        """Throughout the run: per batch, assignments in progress + completed and kept never exceed k."""
        try:
            conn = open_db(db_path)
            while not done.is_set():
                for batch, holding in store_crowd.holding(conn, "load").items():
                    watched["max_holding"] = max(watched["max_holding"], holding)
                    if holding > k:
                        watched["over_k"].append((batch, holding))
                watched["samples"] += 1
                time.sleep(0.02)
            conn.close()
        except Exception as exc:
            with lock:
                errors.append(f"monitor: {type(exc).__name__}: {exc}")

    watcher = threading.Thread(target=monitor, daemon=True)
    watcher.start()
    elapsed, alive = wave(range(workers))
    freed = refill = 0
    if second_wave and not alive:
        check = open_db(db_path)
        freed = k * batches - sum(b["kept"] for b in store_crowd.progress(check, "load")["batches"])
        check.close()
        refill = freed + workers // 10
        elapsed2, alive2 = wave(range(workers, workers + refill))
        elapsed, alive = elapsed + elapsed2, alive + alive2
    done.set()
    watcher.join(timeout=10)

    check = open_db(db_path)
    expected = value(
        check,
        "SELECT COUNT(*) AS n FROM crowd_assignments a JOIN crowd_batch_items bi "
        "ON bi.batch_id = a.batch_id WHERE a.study = 'load'",
    )
    counted = row(
        check,
        "SELECT COUNT(*) AS n, COUNT(DISTINCT CAST(assignment_id AS TEXT) || ' ' || CAST(item_id AS TEXT)) AS d FROM crowd_answers",
    )
    stored = (counted["n"], counted["d"])
    resent_kept = value(check, "SELECT COUNT(*) AS n FROM crowd_answers WHERE seconds = 9.0")
    beyond_k = value(
        check,
        "SELECT COALESCE(SUM(n - :k), 0) AS s FROM (SELECT COUNT(*) AS n FROM crowd_assignments "
        "GROUP BY batch_id HAVING COUNT(*) > :k) x",
        {"k": k},
    )
    second = value(check, "SELECT COUNT(*) AS n FROM crowd_assignments WHERE worker >= :w", {"w": f"lw{workers:04d}"})
    per_worker = value(check, "SELECT MAX(n) AS m FROM (SELECT COUNT(*) AS n FROM crowd_assignments GROUP BY worker) x")
    completed = value(check, "SELECT COUNT(*) AS n FROM crowd_assignments WHERE status = 'completed'")
    final = store_crowd.progress(check, "load")
    over_k = sum(b["kept"] + b["active"] > k for b in final["batches"])
    check.close()
    served = workers + refill - len(turned_away)
    ordered = sorted(latencies)
    result = {
        "workers": workers,
        "think_s": think_s,
        "k": k,
        "batches": batches,
        "elapsed_s": round(elapsed, 3),
        "unfinished": alive,
        "errors": errors[:5],
        "answers_acknowledged": sum(acknowledged),
        "assignment_items": expected,
        "answers_stored": stored[0],
        "distinct_answers": stored[1],
        "completed": completed,
        "resent": len(repeats),
        "resent_reported_not_new": sum(repeats),
        "resent_values_stored": resent_kept,
        "discarded": final["assignments_discarded"],
        "kept": sum(b["kept"] for b in final["batches"]),
        "slots_freed_after_wave_1": freed,
        "second_wave": refill,
        "second_wave_served": second,
        "turned_away": len(turned_away),
        "assignments_beyond_k": beyond_k,
        "batches_over_k": over_k,
        "monitor_samples": watched["samples"],
        "monitor_max_holding": watched["max_holding"],
        "monitor_over_k": len(watched["over_k"]),
        "max_assignments_per_worker": per_worker,
        "answers_per_s": round(stored[0] / elapsed, 1) if elapsed else None,
        "latency_median_ms": round(statistics.median(ordered) * 1000, 2) if ordered else None,
        "latency_p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 2) if ordered else None,
        "latency_max_ms": round(ordered[-1] * 1000, 2) if ordered else None,
    }
    result["ok"] = (
        not errors
        and alive == 0
        and stored[0] == stored[1] == expected == sum(acknowledged)
        and completed == served
        and len(repeats) == sum(repeats) == served
        and resent_kept == 0
        and over_k == 0
        and not watched["over_k"]
        and watched["samples"] > 0
        and per_worker == 1
        and second == served - workers
        and (not second_wave or second >= freed)
    )
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=200)
    parser.add_argument("--deadline", type=float, default=120.0, help="give up after this many seconds")
    parser.add_argument(
        "--think",
        type=float,
        default=0.0,
        help="mean seconds a worker thinks before each answer (default 0: all at once)",
    )
    parser.add_argument(
        "--no-second-wave", action="store_true", help="only the first wave (no workers racing for the slots QC freed)"
    )
    parser.add_argument("--db", help="SQLite file to use (default: a temporary file, removed afterwards)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.db) if args.db else Path(tmp) / "load.db"
        result = run_load(
            path,
            workers=args.workers,
            deadline_s=args.deadline,
            think_s=args.think,
            second_wave=not args.no_second_wave,
        )
    for key, value in result.items():
        print(f"{key:28} {value}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
