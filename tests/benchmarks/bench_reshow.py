"""Benchmark of what re-shown items add to a /judge key press on a SQLite store: the due check
(``store.reshows.due``, with the label count the page keeps and without it) and a new label's write with the
re-show rule on (``store.queue.save_passage_label``: the rule read, the pick and, when picked, its row).

Run: ``python tests/benchmarks/bench_reshow.py [--labels 20000] [--pending 1000] [--repeats 500]``. The store
holds one turn with LABELS pooled passages, all labelled by one assessor, and PENDING re-shows not yet due,
written straight into the tables (setup time is printed apart). Prints milliseconds per call.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from store import open_db, queue, reshows  # noqa: E402
from store.db import run, run_many, write  # noqa: E402
from store.sources import sign_in  # noqa: E402

AT = "2026-01-01T00:00:00Z"


def build(path: Path, labels: int, pending: int) -> None:
    db = open_db(path)
    with write(db):
        sign_in(db, "amy")
        run(db, "INSERT INTO conversations (id, number) VALUES ('c', '1')")
        run(db, "INSERT INTO turns (id, conversation_id, turn_number, position) VALUES ('c_1', 'c', 1, 0)")
        ids = [{"id": f"d:{i}"} for i in range(labels + 100)]
        run_many(db, "INSERT INTO passages (id) VALUES (:id)", ids)
        run_many(db, "INSERT INTO pool (turn_id, passage_id, method, added_at) VALUES ('c_1', :id, 'manual', :at)",
                 [{**i, "at": AT} for i in ids])  # fmt: skip
        run_many(
            db,
            "INSERT INTO passage_labels (source, turn_id, passage_id, grade, mode, via, updated_at) "
            "VALUES ('amy', 'c_1', :id, 1, 'blind', 'ui', :at)",
            [{**i, "at": AT} for i in ids[:labels]],
        )
        step = max(1, labels // max(1, pending))
        run_many(
            db,
            "INSERT INTO reshows (task, assessor, turn_id, item_id, first_count, min_due, due_count, scheduled_at) "
            "VALUES ('passage', 'amy', 'c_1', :id, :n, :late, :late, :at)",
            [{"id": f"d:{n}", "n": n, "late": labels + 10_000 + n, "at": AT} for n in range(0, labels, step)][:pending],
        )
    reshows.set_rule(db, 0.05, gap=10, by="bench")
    db.close()


def per_call(func, repeats: int) -> float:
    func()
    start = time.perf_counter()
    for _ in range(repeats):
        func()
    return (time.perf_counter() - start) / repeats * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=20_000)
    parser.add_argument("--pending", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        began = time.perf_counter()
        build(path, args.labels, args.pending)
        print(f"setup {time.perf_counter() - began:.1f} s: {args.labels} labels, {args.pending} pending re-shows")
        db = open_db(path)
        print(
            f"due, the page's count given: {per_call(lambda: reshows.due(db, 'amy', held=args.labels), args.repeats):.3f} ms"
        )
        print(f"due, counted in the store:   {per_call(lambda: reshows.due(db, 'amy'), args.repeats):.3f} ms")
        fresh = iter(range(args.labels, args.labels + 100))
        new = per_call(lambda: queue.save_passage_label(db, "amy", "c_1", f"d:{next(fresh)}", 2), 99)
        print(f"a new label with the rule on: {new:.3f} ms (rule read, pick, label, history)")
        db.close()


if __name__ == "__main__":
    main()
