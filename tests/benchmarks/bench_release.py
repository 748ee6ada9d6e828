"""Benchmark of issue 38 item 3: `export release` of the iKAT 2024 store (target under 30 s).

Run: ``python tests/benchmarks/bench_release.py [--db STORE]``. Without --db it builds the iKAT 2024 store of
docs/cli.md from ../shared/data and adds the eight runs of ``tests.ikat_store.add_shared_runs`` (so the
leaderboards have ranking runs to score). Prints the export's wall time and the process's peak memory.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from assess.cli import main  # noqa: E402


def build(target: Path) -> None:
    from tests.ikat_store import add_shared_runs, build_ikat2024, missing_files

    if missing_files():
        sys.exit(f"the public iKAT files are absent: {missing_files()[0]}")
    build_ikat2024(target)
    add_shared_runs(target)


def run(db: str, out: Path) -> float:
    start = time.perf_counter()
    if main(["export", "release", "--db", db, "--out", str(out)]):
        sys.exit("export release failed")
    return time.perf_counter() - start


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", help="an iKAT 2024 store (default: build one in a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = args.db
        if db is None:
            db = str(Path(folder) / "ikat.db")
            build(Path(db))
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        seconds = run(db, Path(folder) / "bundle")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(
            f"export release of the iKAT 2024 store: {seconds:.1f} s (target 30 s); peak memory {peak / 1024:.0f} MiB "
            f"({before / 1024:.0f} MiB before the export)"
        )
