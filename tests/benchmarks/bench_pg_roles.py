"""Benchmark: the first import of the 53,574 iKAT 2024 qrels lines (NIST + CONE-RAG GPT-4) into a PostgreSQL
store, by its owner (the bulk switch honoured: one history event per import) and by the app role (one history
row per label, written by the insert trigger), on a throwaway cluster (tests/pg.py; fsync off).

Run: python tests/benchmarks/bench_pg_roles.py [RUNS]   (needs ../shared/data; RUNS defaults to 3)

The sides are timed interleaved, run by run; wall-clock times on a shared machine swing with its load, so
each side also reports the CPU time it used: this process's and the server processes' of the database
(from /proc), which the load disturbs far less. ``app, search
path reset`` is the app role with the trigger functions' pinned search path taken off again (as before
migration 13), which shows what pinning costs per history row.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.benchmarks.bench_import import QRELS, TOPICS  # noqa: E402


def first_import(cluster, side: str) -> float:
    from assess.services.loading import load_file
    from store.db import open_db, run, write
    from store.roles import grant_app_role

    name = cluster.create_database()
    try:
        roles = cluster.create_roles(name)
        with open_db(roles.owner_url) as db:
            grant_app_role(db, roles.app)
            load_file(db, "topics", TOPICS)
            if side.endswith("reset"):
                with write(db):
                    run(
                        db,
                        "DO $$ DECLARE f regprocedure; BEGIN FOR f IN SELECT oid FROM pg_proc "
                        "WHERE prorettype = CAST('trigger' AS regtype) AND pronamespace = CAST('public' AS regnamespace) "
                        "LOOP EXECUTE format('ALTER FUNCTION %s RESET search_path', f); END LOOP; END $$",
                    )
        with open_db(roles.owner_url if side == "owner" else roles.app_url) as db:
            before = server_cpu(cluster, name)
            start, cpu = time.perf_counter(), time.process_time()
            for path, source in QRELS:
                load_file(db, "qrels", path, source=source)
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu
            after = server_cpu(cluster, name)
            server = sum(t - before.get(pid, 0.0) for pid, t in after.items())
            return wall, cpu + server
    finally:
        cluster.drop_database(name)


def server_cpu(cluster, database: str) -> dict[int, float]:
    """CPU seconds (user + system) used so far by each server process serving ``database`` (read from /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    with cluster.connect() as conn:
        pids = [r[0] for r in conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", (database,))]
    out = {}
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        out[pid] = (int(fields[11]) + int(fields[12])) / ticks
    return out


def main() -> None:
    from tests import pg

    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    sides = ("owner", "app", "app, search path reset")
    cluster = pg.start_cluster()
    try:
        times: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
        for n in range(runs):
            for side in sides:
                times[side].append(first_import(cluster, side))
            print(
                f"run {n + 1}: "
                + ", ".join(f"{side} {times[side][-1][0]:.2f} s (CPU {times[side][-1][1]:.2f} s)" for side in sides),
                flush=True,
            )
        print(
            "median: "
            + ", ".join(
                f"{side} {statistics.median(t[0] for t in times[side]):.2f} s "
                f"(CPU {statistics.median(t[1] for t in times[side]):.2f} s)"
                for side in sides
            )
        )
    finally:
        pg.remove_cluster(cluster)


if __name__ == "__main__":
    main()
