"""Benchmark: importing the 53,574 iKAT 2024 qrels lines (NIST + CONE-RAG GPT-4) vs a plain
sqlite3.executemany of the same rows, in the same run; and `python -m assess --help` start-up.

Run: python tests/benchmarks/bench_import.py [RUNS]   (needs ../shared/data; RUNS defaults to 9)
     python tests/benchmarks/bench_import.py --instructions

Wall-clock times on a shared 2-core machine swing by ±40% within a minute, so the two sides are
timed interleaved and the ratio is reported run by run. ``--instructions`` counts CPU instructions
instead, under valgrind's callgrind (a few minutes): repeatable to the instruction whatever else
the machine is doing. Each side is then measured as the difference between a process that does
the work and one that stops just before it (reading the rows; opening the store with the topics).
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
QRELS = [
    (DATA / "gyeozai-CFDA-TREC-iKAT2025/DATA/topics/2024_test_qrels.trec", "nist"),
    (DATA / "irlabamsterdam-CONE-RAG/resources/automatic_resources/llm-gpt4-pool-depth-30.txt", "llm:gpt-4"),
]


def plain_table(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(
        "CREATE TABLE q (source TEXT, turn TEXT, passage TEXT, grade INTEGER, PRIMARY KEY (source, turn, passage))"
    )
    return conn


def plain_executemany(tmp: Path, n: int) -> float:
    rows = read_rows()
    conn = plain_table(tmp / f"plain{n}.db")
    start = time.perf_counter()
    with conn:
        conn.executemany("INSERT INTO q VALUES (?,?,?,?)", rows)
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


def executemany_into_store(tmp: Path, n: int) -> float:
    """The same rows by one bare executemany into the workbench's own passage_labels table (keys, foreign
    keys, and its insert trigger writing one history row per label)."""
    from assess.services.loading import load_file
    from store import open_db

    db = open_db(tmp / f"raw{n}.db")
    load_file(db, "topics", TOPICS)
    rows = read_rows()
    for _path, source in QRELS:
        db.conn.execute("INSERT INTO sources (name, kind, created_at) VALUES (?, 'import', 'now')", (source,))
    db.conn.executemany("INSERT INTO passages (id) VALUES (?)", ((p,) for p in {r[2] for r in rows}))
    start = time.perf_counter()
    db.conn.execute("BEGIN")
    db.conn.executemany(
        "INSERT INTO passage_labels (source, turn_id, passage_id, grade, via, updated_at) "
        "VALUES (?,?,?,?,'bulk','now')",
        rows,
    )
    db.conn.execute("COMMIT")
    return time.perf_counter() - start


def ours(tmp: Path, n: int) -> float:
    from assess.services.loading import load_file
    from store import open_db

    db = open_db(tmp / f"ours{n}.db")
    load_file(db, "topics", TOPICS)
    start = time.perf_counter()
    for path, source in QRELS:
        load_file(db, "qrels", path, source=source)
    return time.perf_counter() - start


def read_rows() -> list[tuple]:
    rows = []
    for path, source in QRELS:
        for line in path.read_text().splitlines():
            if line.strip():
                t, _, p, g = line.split()
                rows.append((source, t, p, int(g)))
    return rows


def one_side(side: str) -> None:
    """The work of one side, alone in this process (for --instructions)."""
    from assess.services.loading import load_file
    from store import open_db

    tmp = Path(tempfile.mkdtemp())
    if side in ("read", "plain"):
        rows = read_rows()
        if side == "plain":
            conn = plain_table(tmp / "plain.db")
            with conn:
                conn.executemany("INSERT INTO q VALUES (?,?,?,?)", rows)
        return
    db = open_db(tmp / "ours.db")
    load_file(db, "topics", TOPICS)
    if side == "ours":
        for path, source in QRELS:
            load_file(db, "qrels", path, source=source)


def instructions() -> None:
    import re
    from concurrent.futures import ThreadPoolExecutor

    def count(side: str) -> int:
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, __file__, "--one", side],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        return int(re.search(r"Collected : (\d+)", proc.stderr).group(1))

    with ThreadPoolExecutor(2) as pool:
        n = dict(zip(("read", "plain", "setup", "ours"), pool.map(count, ("read", "plain", "setup", "ours"))))
    plain, ours = n["plain"] - n["read"], n["ours"] - n["setup"]
    print(
        f"qrels import, 53,574 lines, CPU instructions (callgrind): ours {ours / 1e9:.2f} G, plain executemany "
        f"{plain / 1e9:.2f} G, ratio {ours / plain:.2f}x"
    )


def help_time() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "assess", "--help"], cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    if not TOPICS.exists():
        sys.exit("../shared/data is absent: nothing to benchmark")
    if sys.argv[1:2] == ["--one"]:
        return one_side(sys.argv[2])
    if sys.argv[1:2] == ["--instructions"]:
        return instructions()
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    plain, full, into_store = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for n in range(runs):  # interleaved, so a slow spell of the machine hits both sides alike
            plain.append(plain_executemany(tmp, n))
            full.append(ours(tmp, n))
            into_store.append(executemany_into_store(tmp, n))
    ratios = sorted(f / p for f, p in zip(full, plain))
    med = statistics.median
    helps = [help_time() for _ in range(5)]
    print(
        f"qrels import, 53,574 lines, {runs} interleaved runs: ours median {med(full):.2f} s "
        f"(parse + validate + passages + labels + history + pool), plain executemany median {med(plain):.2f} s"
    )
    print(f"  ratio ours / plain, run by run: median {med(ratios):.2f}x, range {ratios[0]:.2f}–{ratios[-1]:.2f}x")
    print(
        f"  a bare executemany of the same rows into the workbench's own passage_labels table: median "
        f"{med(into_store):.2f} s, ratio {med(f / i for f, i in zip(full, into_store)):.2f}x"
    )
    print(f"python -m assess --help: median {med(helps):.3f} s over 5 runs")


if __name__ == "__main__":
    main()
