"""Benchmark: importing the 53,574 iKAT 2024 qrels lines (NIST + CONE-RAG GPT-4) vs a plain
sqlite3.executemany of the same rows, in the same run; and `python -m assess --help` start-up.

Run: python tests/benchmarks/bench_import.py [RUNS]   (needs ../shared/data; RUNS defaults to 9)
     python tests/benchmarks/bench_import.py --instructions
     python tests/benchmarks/bench_import.py --big [MB] [--baseline DIR] [--kind qrels|run]
        a synthetic qrels or run file (default: both, one after the other) of about MB megabytes
        (default 200) imported in a child process: peak memory (ru_maxrss) and time per line; with
        --baseline, the same in a checkout DIR of an earlier version (e.g. `git worktree add DIR
        34714a8`), whose own code the child then imports
     python tests/benchmarks/bench_import.py --answers [MB] [--db URL] [--kind answers|run|qrels]
        a synthetic TREC RAG answer file of about MB megabytes (default 70) imported in a child process
        while 20 assessor threads of this one press a label every 0.5 s (as the pages do: a 10 s lock
        wait): the import's time, its staging and switch, and the presses' longest waits (issue 33);
        --db: a PostgreSQL database to use (emptied first) instead of a SQLite file; --kind run or qrels: a
        synthetic run (depth 10) or qrels file of about MB megabytes instead, pressed through the same way

Wall-clock times on a shared 2-core machine swing by ±40% within a minute, so the two sides are
timed interleaved and the ratio is reported run by run. ``--instructions`` counts CPU instructions
instead, under valgrind's callgrind (a few minutes): repeatable to the instruction whatever else
the machine is doing. Each side is then measured as the difference between a process that does
the work and one that stops just before it (reading the rows; opening the store with the topics).
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if __name__ == "__main__":  # imported as a module by a --big child, the child's own checkout comes first
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


def big_topics(tmp: Path) -> Path:
    """Topics with 1,000 turns (100 conversations of 10), ids ``c_t``."""
    topics = tmp / "topics.json"
    topics.write_text(
        json.dumps(
            [
                {"number": c, "ptkb": {"1": "s"}, "turns": [{"turn_id": t, "utterance": "u"} for t in range(1, 11)]}
                for c in range(100)
            ]
        )
    )
    return topics


def big_qrels(tmp: Path, megabytes: int) -> tuple[Path, int]:
    """A qrels file of about ``megabytes`` MB over the 1,000 turns (unique items)."""
    qrels = tmp / "big.qrels"
    lines = 0
    with open(qrels, "w") as out:
        block = []
        while out.tell() < megabytes * 1_000_000:
            for _ in range(10_000):
                turn = f"{lines % 100}_{lines // 100 % 10 + 1}"
                block.append(
                    f"{turn} 0 clueweb22-en{lines % 9999:04d}-{lines // 9999:02d}-{lines:08d}:{lines % 37} {lines % 5}\n"
                )
                lines += 1
            out.write("".join(block))
            block.clear()
    return qrels, lines


def big_run(tmp: Path, megabytes: int) -> tuple[Path, int]:
    """A run file of about ``megabytes`` MB: per run tag, 200 turns x 1,000 passages ranked by a
    descending score (every tenth score tied with the one before), tags added until the size is
    reached; passages shared between tags as in pooled runs."""
    run = tmp / "big.run"
    lines = 0
    with open(run, "w") as out:
        tag = 0
        while out.tell() < megabytes * 1_000_000:
            for t in range(200):
                turn = f"{t % 100}_{t // 100 + 1}"
                block = []
                for rank in range(1, 1001):
                    passage = (rank * 7 + tag * 131 + t) % 1500
                    score = 40.0 - (rank - rank % 10 // 9) * 0.0371
                    block.append(
                        f"{turn} Q0 clueweb22-en{t:04d}-{passage // 100:02d}-{passage:05d}:{passage % 7} "
                        f"{rank} {score:.4f} run{tag}\n"
                    )
                out.write("".join(block))
                lines += len(block)
            tag += 1
    return run, lines


def big_child(topics: str, file: str, db: str, kind: str = "qrels") -> None:
    """In a fresh process: import the topics, then time the import of ``file``; print seconds and peak RSS (MiB)."""
    import resource

    from assess.services.loading import load_file
    from store import open_db

    store = open_db(db)
    load_file(store, "topics", topics)
    start = time.perf_counter()
    if kind == "run":
        load_file(store, "run", file, depth=10)
    else:
        load_file(store, "qrels", file, source="nist")
    elapsed = time.perf_counter() - start
    print(json.dumps({"seconds": elapsed, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def big(megabytes: int, baseline: str | None, kinds: tuple[str, ...] = ("qrels", "run")) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        topics = big_topics(tmp)
        for kind in kinds:
            file, lines = big_run(tmp, megabytes) if kind == "run" else big_qrels(tmp, megabytes)
            size = file.stat().st_size / 1e6
            for name, root in (("ours", ROOT), ("baseline", baseline)):
                if root is None:
                    continue
                db = tmp / f"{name}-{kind}.db"
                code = (
                    f"import sys; sys.path.insert(0, {str(root)!r}); "
                    f"sys.path.insert(1, {str(Path(__file__).parent)!r}); import bench_import; "
                    f"bench_import.big_child({str(topics)!r}, {str(file)!r}, {str(db)!r}, {kind!r})"
                )
                proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
                for leftover in tmp.glob(f"{db.name}*"):
                    leftover.unlink()
                if proc.returncode:
                    print(f"{name}: failed: {proc.stderr.strip().splitlines()[-1:]}")
                    continue
                result = json.loads(proc.stdout.strip().splitlines()[-1])
                print(
                    f"{name}: {size:.0f} MB {kind}, {lines:,} lines: {result['seconds']:.1f} s, "
                    f"{result['seconds'] / lines * 1e6:.2f} µs per line, peak RSS {result['peak_mib']:.0f} MiB",
                    flush=True,
                )
            file.unlink()


def big_answers(tmp: Path, megabytes: int) -> tuple[Path, int]:
    """A TREC RAG 2024 answer file of about ``megabytes`` MB over the 1,000 turns of :func:`big_topics`: runs
    answering every turn, each answer five sentences citing one or two of four references."""
    path = tmp / "answers.jsonl"
    count = 0
    with open(path, "w") as out:
        while out.tell() < megabytes * 1_000_000:
            block = []
            for t in range(1000):
                turn = f"{t // 10}_{t % 10 + 1}"
                refs = [f"clueweb22-en{t:04d}-{count % 97:02d}-{k:05d}:{count % 7}" for k in range(4)]
                answer = [
                    {"text": f"Sentence {k} of answer {count}: " + "some generated words " * 12, "citations": [k % 4]}
                    for k in range(5)
                ]
                line = {"run_id": f"run{count // 1000}", "topic_id": turn, "topic": "q", "references": refs}
                block.append(json.dumps({**line, "response_length": 60, "answer": answer}) + "\n")
                count += 1
            out.write("".join(block))
    return path, count


def answers_child(file: str, db: str) -> None:
    """In a fresh process: import the answer file, timing its staging and its switch; print them as JSON."""
    from assess.services import response_files
    from store import open_db
    from store import responses as stored

    marks = {}
    switch = stored.switch_responses

    def timed(*args, **kwargs):
        marks["switch_start"] = time.perf_counter()
        switch(*args, **kwargs)
        marks["switch_end"] = time.perf_counter()

    stored.switch_responses = timed
    store = open_db(db)
    start = time.perf_counter()
    summary = response_files.import_file(store, "rag-answers", file)
    end = time.perf_counter()  # after the commit and the staging tables' drop
    print(
        json.dumps(
            {
                "responses": summary["responses"],
                "seconds": end - start,
                "staging": marks["switch_start"] - start,
                "switch": marks["switch_end"] - marks["switch_start"],
            }
        )
    )


def file_child(kind: str, file: str, db: str) -> None:
    """In a fresh process: import a run (depth 10) or qrels file, timing its staging and its switch (the write
    that store.imports opens with lock_to_commit); print them as JSON."""
    import contextlib

    from assess.services.loading import load_file
    from store import imports, open_db

    marks = {}
    write = imports.write

    @contextlib.contextmanager
    def timed(*args, **kwargs):
        if kwargs.get("lock_to_commit"):
            marks["switch_start"] = time.perf_counter()
        with write(*args, **kwargs) as db:
            yield db
        if kwargs.get("lock_to_commit"):
            marks["switch_end"] = time.perf_counter()

    imports.write = timed
    store = open_db(db)
    start = time.perf_counter()
    if kind == "run":
        summary = load_file(store, "run", file, depth=10)
    else:
        summary = load_file(store, "qrels", file, source="big")
    end = time.perf_counter()
    print(
        json.dumps(
            {
                "responses": summary.get("rankings") or summary.get("labels"),
                "seconds": end - start,
                "staging": marks["switch_start"] - start,
                "switch": marks["switch_end"] - marks["switch_start"],
            }
        )
    )


def answers(megabytes: int, target: str | None, kind: str = "answers") -> None:
    import threading

    from assess.services.loading import load_file
    from store import open_db
    from store.db import StoreBusy, lock_wait, run, write
    from store.queue import save_passage_label
    from store.sources import ensure_source

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        db = target or str(tmp / "answers.db")
        store = open_db(db)
        if not store.sqlite:  # an empty database: every table of the store dropped
            run(store, "DROP SCHEMA public CASCADE")
            run(store, "CREATE SCHEMA public")
            store.close()
            store = open_db(db)
        load_file(store, "topics", big_topics(tmp))
        qrels = tmp / "pool.qrels"
        qrels.write_text("".join(f"{t // 10}_{t % 10 + 1} 0 doc-{t}:0 1\n" for t in range(0, 1000, 5)))
        load_file(store, "qrels", qrels, source="nist")
        pool = [(f"{t // 10}_{t % 10 + 1}", f"doc-{t}:0") for t in range(0, 1000, 5)]
        made = {"answers": big_answers, "run": big_run, "qrels": big_qrels}
        file, count = made[kind](tmp, megabytes)
        size = file.stat().st_size / 1e6
        waits: list[tuple[float, float]] = []
        refused: list[float] = []
        stop = threading.Event()

        def assessor(n: int) -> None:
            own = open_db(db)
            with write(own):
                ensure_source(own, f"bench-{n}", "assessor")
            i = 0
            while not stop.is_set():
                started = time.perf_counter()
                try:
                    with lock_wait(10):
                        save_passage_label(own, f"bench-{n}", *pool[(n * 10 + i) % len(pool)], i % 5)
                except StoreBusy:  # what the page shows as NOT SAVED with Retry
                    refused.append(started)
                waits.append((started, time.perf_counter() - started))
                i += 1
                time.sleep(0.5)

        threads = [threading.Thread(target=assessor, args=(n,), daemon=True) for n in range(20)]
        for thread in threads:
            thread.start()
        code = (
            f"import sys; sys.path.insert(0, {str(ROOT)!r}); sys.path.insert(1, {str(Path(__file__).parent)!r}); "
            + (
                f"import bench_import; bench_import.answers_child({str(file)!r}, {db!r})"
                if kind == "answers"
                else f"import bench_import; bench_import.file_child({kind!r}, {str(file)!r}, {db!r})"
            )
        )
        begun = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
        stop.set()
        for thread in threads:
            thread.join()
        if proc.returncode:
            sys.exit(f"the import failed: {proc.stderr.strip().splitlines()[-1:]}")
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        during = sorted(w for s, w in waits if s >= begun)
        print(
            f"{store.engine}: {size:.0f} MB {kind}, {result['responses']:,} {'responses' if kind == 'answers' else 'lines'}: import {result['seconds']:.1f} s "
            f"(staging {result['staging']:.1f} s without the lock, switch {result['switch']:.2f} s, its commit not "
            f"counted: {'holding the lock' if store.sqlite else 'the lock taken only to commit'})"
        )
        print(
            f"  20 assessors, {len(during)} presses during the import: longest wait {during[-1]:.2f} s, "
            f"99th percentile {during[int(len(during) * 0.99)]:.2f} s, median {statistics.median(during) * 1000:.0f} ms, "
            f"{sum(1 for s in refused if s >= begun)} not saved after 10 s"
        )


def main() -> None:
    if sys.argv[1:2] == ["--answers"]:
        rest = sys.argv[2:]
        target = rest[rest.index("--db") + 1] if "--db" in rest else None
        numbers = [a for a in rest if a.isdigit()]
        kind = rest[rest.index("--kind") + 1] if "--kind" in rest else "answers"
        return answers(int(numbers[0]) if numbers else 70, target, kind)
    if sys.argv[1:2] == ["--big"]:
        rest = sys.argv[2:]
        baseline = rest[rest.index("--baseline") + 1] if "--baseline" in rest else None
        kinds = (rest[rest.index("--kind") + 1],) if "--kind" in rest else ("qrels", "run")
        numbers = [a for a in rest if a.isdigit()]
        return big(int(numbers[0]) if numbers else 200, baseline, kinds)
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
