"""Benchmark of the RAG tab of /scores: NtR recall and All / Vital / Weighted from stored labels
(``assess.services.rag.nugget_scores``), store reads included, on a synthetic SQLite store.

Run: ``python tests/benchmarks/bench_rag_scores.py [--runs 50] [--turns 200] [--nuggets 30]``. The store
holds RUNS x TURNS responses, TURNS x NUGGETS gold nuggets (a third vital), and one graded NtR label per
(run, nugget), written straight into the tables (setup time is printed apart). Prints the time of one
scoring, the number of labels read and the first run's scores.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from assess.services import rag  # noqa: E402
from store import open_db  # noqa: E402
from store.db import column, run, run_many, write  # noqa: E402
from store.sources import ensure_source  # noqa: E402

AT = "2026-01-01T00:00:00Z"


def build(path: Path, runs: int, turns: int, nuggets: int) -> None:
    rng = random.Random(0)
    db = open_db(path)
    turn_ids = [f"c{t // 10}_{t % 10 + 1}" for t in range(turns)]
    run_names = [f"run{r:03d}" for r in range(runs)]
    with write(db):
        ensure_source(db, "bench", "import")
        ensure_source(db, "gold", "import")
        run_many(
            db,
            "INSERT INTO conversations (id, number) VALUES (:id, :number)",
            [{"id": f"c{c}", "number": c} for c in range((turns + 9) // 10)],
        )
        run_many(
            db,
            "INSERT INTO turns (id, conversation_id, turn_number, position) VALUES (:id, :c, :n, :n)",
            [{"id": t, "c": t.split("_")[0], "n": int(t.split("_")[1])} for t in turn_ids],
        )
        run_many(
            db,
            "INSERT INTO runs (name, kind, file, imported_at) VALUES (:name, 'response', NULL, :at)",
            [{"name": r, "at": AT} for r in run_names],
        )
        run_many(
            db,
            "INSERT INTO responses (run, turn_id, text) VALUES (:run, :turn, 'an answer')",
            [{"run": r, "turn": t} for r in run_names for t in turn_ids],
        )
        run_many(
            db,
            "INSERT INTO nuggets (source, turn_id, key, text, created_at) VALUES ('gold', :turn, :key, 'n', :at)",
            [{"turn": t, "key": f"[{k + 1}]", "at": AT} for t in turn_ids for k in range(nuggets)],
        )
    ids = column(db, "SELECT id FROM nuggets ORDER BY id")
    turn_of = {i: turn_ids[n // nuggets] for n, i in enumerate(ids)}
    with write(db):
        run_many(
            db,
            "INSERT INTO nugget_importance_labels (source, nugget_id, turn_id, importance, updated_at) "
            "VALUES ('bench', :id, :turn, :v, :at)",
            [{"id": i, "turn": turn_of[i], "v": int(n % 3 == 0), "at": AT} for n, i in enumerate(ids)],
        )
        run_many(
            db,
            "INSERT INTO ntr_support_labels (source, nugget_id, run, turn_id, support, updated_at) "
            "VALUES ('bench', :id, :run, :turn, :v, :at)",
            [
                {"id": i, "run": r, "turn": turn_of[i], "v": rng.choice((0, 0, 1, 2)), "at": AT}
                for r in run_names
                for i in ids
            ],
        )
        run(db, "ANALYZE")
    db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--nuggets", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        start = time.perf_counter()
        build(path, args.runs, args.turns, args.nuggets)
        print(f"setup: {time.perf_counter() - start:.1f} s")
        db = open_db(path)
        start = time.perf_counter()
        scores = rag.nugget_scores(db, "bench", "gold", "bench")
        elapsed = time.perf_counter() - start
        print(
            f"{args.runs} runs x {args.turns} turns x {args.nuggets} nuggets: {elapsed:.2f} s "
            f"({scores['notes']['labels']} labels read and scored)"
        )
        print({k: round(v, 4) for k, v in scores["runs"][0].items() if isinstance(v, float)})
        db.close()


if __name__ == "__main__":
    main()
