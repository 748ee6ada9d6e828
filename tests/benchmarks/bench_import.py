"""Benchmark: importing the 53,574 iKAT 2024 qrels lines (NIST + CONE-RAG GPT-4) vs a plain
sqlite3.executemany of the same rows, in the same run; and `python -m assess --help` start-up.

Run: python tests/benchmarks/bench_import.py   (needs ../shared/data)
"""
from __future__ import annotations

import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data"
TOPICS = DATA / "irlabamsterdam-iKAT/2024/data/2024_test_topics.json"
QRELS = [(DATA / "gyeozai-CFDA-TREC-iKAT2025/DATA/topics/2024_test_qrels.trec", "nist"),
         (DATA / "irlabamsterdam-CONE-RAG/resources/automatic_resources/llm-gpt4-pool-depth-30.txt", "llm:gpt-4")]


def plain_executemany(tmp: Path, n: int) -> float:
    rows = []
    for path, source in QRELS:
        for line in path.read_text().splitlines():
            if line.strip():
                t, _, p, g = line.split()
                rows.append((source, t, p, int(g)))
    conn = sqlite3.connect(tmp / f"plain{n}.db")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE q (source TEXT, turn TEXT, passage TEXT, grade INTEGER, PRIMARY KEY (source, turn, passage))")
    start = time.perf_counter()
    with conn:
        conn.executemany("INSERT INTO q VALUES (?,?,?,?)", rows)
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


def executemany_into_store(tmp: Path, n: int) -> float:
    """The same rows by one bare executemany into the workbench's own passage_labels table (keys, FKs)."""
    from store import open_db
    from store.loading import load_file

    db = open_db(tmp / f"raw{n}.db")
    load_file(db, "topics", TOPICS)
    rows, passages = [], set()
    for path, source in QRELS:
        db.conn.execute("INSERT INTO sources (name, kind, created_at) VALUES (?, 'import', 'now')", (source,))
        for line in path.read_text().splitlines():
            if line.strip():
                t, _, p, g = line.split()
                rows.append((source, t, p, int(g)))
                passages.add(p)
    db.conn.executemany("INSERT INTO passages (id) VALUES (?)", ((p,) for p in passages))
    start = time.perf_counter()
    db.conn.execute("BEGIN")
    db.conn.executemany("INSERT INTO passage_labels (source, turn_id, passage_id, grade, via, updated_at) "
                        "VALUES (?,?,?,?,'bulk','now')", rows)
    db.conn.execute("COMMIT")
    return time.perf_counter() - start


def ours(tmp: Path, n: int) -> float:
    from store import open_db
    from store.loading import load_file

    db = open_db(tmp / f"ours{n}.db")
    load_file(db, "topics", TOPICS)
    start = time.perf_counter()
    for path, source in QRELS:
        load_file(db, "qrels", path, source=source)
    return time.perf_counter() - start


def help_time() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "assess", "--help"], cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    if not TOPICS.exists():
        sys.exit("../shared/data is absent: nothing to benchmark")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        plain = min(plain_executemany(tmp, n) for n in range(3))
        full = min(ours(tmp, n) for n in range(3))
        into_store = min(executemany_into_store(tmp, n) for n in range(3))
    helps = [help_time() for _ in range(5)]
    print(f"qrels import, 53,574 lines: ours {full:.2f} s (parse + validate + labels + pool + history), "
          f"plain executemany {plain:.2f} s (insert only), ratio {full / plain:.2f}x")
    print(f"  vs a bare executemany of the same rows into the workbench's passage_labels table "
          f"{into_store:.2f} s: ratio {full / into_store:.2f}x")
    print(f"python -m assess --help: median {statistics.median(helps):.3f} s over 5 runs")


if __name__ == "__main__":
    main()
