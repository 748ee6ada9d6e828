"""Benchmark: peak memory of the staged JSON imports (issue 33): a topics file and a gold nugget file of about MB
megabytes each, imported in a child process (a fresh SQLite store in /tmp); prints the time and the child's peak
RSS (ru_maxrss), beside a child that only opens the store (the interpreter's and the store's own size).

Run: python tests/benchmarks/bench_import_memory.py [MB] [--kind topics|nuggets]   (MB defaults to 200)

The topics file: conversations of 20 turns, each turn's response about 5 KB, 5 PTKB statements (a conversation
is about 100 KB, one record of the stream). The nugget file: nuggets of about 2 KB for each of 1,000 turns
(stored first by a small topics file), as many per turn as the size needs (100 for 200 MB).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))

TURNS_PER_CONVERSATION = 20
NUGGET_TURNS = 1_000


def topics_file(path: Path, megabytes: int, conversations: int | None = None) -> int:
    """An iKAT 2024 topics file of about ``megabytes`` MB (or of ``conversations`` small ones); returns the count."""
    response = "r" * 5_000 if conversations is None else "r"
    written = 0
    with path.open("w") as out:
        out.write("[")
        while (conversations is None and out.tell() < megabytes * 1_000_000) or (
            conversations is not None and written < conversations
        ):
            turns = [
                {"turn_id": t, "utterance": f"u{t}", "response": response, "ptkb_provenance": [t % 5 + 1]}
                for t in range(1, TURNS_PER_CONVERSATION + 1)
            ]
            conv = {"number": 9000 + written, "title": "t", "ptkb": {str(k): f"s{k}" for k in range(1, 6)}}
            out.write(("," if written else "") + json.dumps({**conv, "turns": turns}))
            written += 1
        out.write("]")
    return written


def nuggets_file(path: Path, megabytes: int, turns: list[str]) -> int:
    """A CONE-RAG gold nugget file of about ``megabytes`` MB: as many nuggets of about 2 KB for each of ``turns``
    (each turn's nuggets one record of the stream); returns the number of nuggets."""
    per_turn = max(1, megabytes * 1_000_000 // (len(turns) * 2_040))
    with path.open("w") as out:
        out.write("{")
        for i, turn in enumerate(turns):
            nuggets = {f"[{k}]": {"text": f"n{k} " + "x" * 2_000, "relevance": k % 3} for k in range(1, per_turn + 1)}
            out.write(("," if i else "") + json.dumps(turn) + ":" + json.dumps(nuggets))
        out.write("}")
    return per_turn * len(turns)


def child(kind: str, file: str, db: str, small_topics: str) -> None:
    """In a fresh process: import ``file`` (``kind``; ``none``: only open the store); print seconds and peak RSS."""
    import resource

    from assess.services.loading import load_file
    from store import open_db

    store = open_db(db)
    if kind == "nuggets":
        load_file(store, "topics", small_topics)
    start = time.perf_counter()
    if kind == "topics":
        summary = load_file(store, "topics", file)
    elif kind == "nuggets":
        summary = load_file(store, "nuggets", file, source="big")
    else:
        summary = {}
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": elapsed, "peak_mib": peak, "summary": summary}, default=str))


def measure(kind: str, file: Path, db: Path, small_topics: Path) -> dict:
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); sys.path.insert(1, {str(Path(__file__).parent)!r}); "
        f"import bench_import_memory as b; b.child({kind!r}, {str(file)!r}, {str(db)!r}, {str(small_topics)!r})"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    for leftover in db.parent.glob(f"{db.name}*"):
        leftover.unlink()
    if proc.returncode:
        sys.exit(f"{kind}: failed: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    args = sys.argv[1:]
    kinds = (args[args.index("--kind") + 1],) if "--kind" in args else ("topics", "nuggets")
    numbers = [a for a in args if a.isdigit()]
    megabytes = int(numbers[0]) if numbers else 200
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        tmp = Path(tmp)
        small = tmp / "small-topics.json"
        topics_file(small, 0, conversations=NUGGET_TURNS // TURNS_PER_CONVERSATION)
        turns = [f"{9000 + c}_{t}" for c in range(NUGGET_TURNS // TURNS_PER_CONVERSATION) for t in range(1, 21)]
        base = measure("none", small, tmp / "base.db", small)
        print(f"opening the store alone: peak RSS {base['peak_mib']:.0f} MiB", flush=True)
        for kind in kinds:
            file = tmp / f"big-{kind}.json"
            n = topics_file(file, megabytes) if kind == "topics" else nuggets_file(file, megabytes, turns)
            size = file.stat().st_size / 1e6
            result = measure(kind, file, tmp / f"{kind}.db", small)
            what = "conversations" if kind == "topics" else "nuggets"
            print(
                f"{kind}: {size:.0f} MB, {n:,} {what}: {result['seconds']:.1f} s, peak RSS {result['peak_mib']:.0f} MiB "
                f"({result['summary']})",
                flush=True,
            )
            file.unlink()


if __name__ == "__main__":
    main()
