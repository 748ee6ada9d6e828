"""API label-write latency: N clients (default 20) each writing labels over HTTP at once, against one
`python -m assess api` process on a store holding the demo (a SQLite file, or a ``postgresql://`` URL with --db).

Each client is an account with its own token (`users token`) and the whole demo pool as its queue (open mode);
it reads its queue once (GET /v1/queue) and then POSTs one label after another with no think time (the worst case:
every client always waiting on a write), until it has written --writes labels. Measured per write: request sent to
201 received. Then the store is checked: every acknowledged write is stored once, under its client, with the grade
sent. Exit 1 when one is missing or a request failed.

Run: python tests/benchmarks/bench_api.py [--clients 20] [--writes 50] [--db FILE|postgresql://…]
     python tests/benchmarks/bench_api.py --engine postgresql   # a throwaway local cluster (tests/pg.py)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.processes import free_port, stop_process  # noqa: E402


def cli(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "assess", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise SystemExit(f"{' '.join(args)}: {done.stderr}")
    return done.stdout


def prepare(target: str, clients: int) -> dict[str, str]:
    from assess.services.loading import load_demo
    from assess.services.tokens import new_token
    from store import open_db
    from store.accounts import add

    with open_db(target) as db:
        load_demo(db)
        tokens = {}
        for n in range(clients):
            name = f"api{n:02d}"
            add(db, name, "assessor", None, by="bench")
            tokens[name] = new_token(db, name, by="bench")
    return tokens


def serve(target: str, workers: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ASSESS_OPEN": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "assess", "api", "--port", str(port), "--db", target, "--workers", str(workers)],
        cwd=ROOT,
        env=env,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "/openapi.json", timeout=2).status_code == 200:
                return proc, base
        except httpx.TransportError:
            time.sleep(0.2)
    stop_process(proc)
    raise SystemExit("the API server did not start")


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--writes", type=int, default=50, help="labels each client writes (at most the pool, 217)")
    parser.add_argument("--workers", type=int, default=1, help="API server processes (api --workers)")
    parser.add_argument("--db", help="a SQLite file to create, or an empty PostgreSQL database's URL")
    parser.add_argument(
        "--engine",
        choices=("sqlite", "postgresql"),
        default="sqlite",
        help="without --db: a temporary SQLite file, or a database of a throwaway PostgreSQL cluster",
    )
    args = parser.parse_args()
    if args.engine == "postgresql" and not args.db:
        from tests import pg

        cluster = pg.start_cluster()
        try:
            args.db = cluster.url(cluster.create_database())
            return run(args)
        finally:
            pg.remove_cluster(cluster)
    return run(args)


def run(args) -> int:
    if not 1 <= args.clients <= 200 or not 1 <= args.writes <= 217:
        raise SystemExit("--clients: 1 to 200; --writes: 1 to 217")
    with tempfile.TemporaryDirectory() as tmp:
        target = args.db or str(Path(tmp) / "bench.db")
        tokens = prepare(target, args.clients)
        proc, base = serve(target, args.workers)
        latencies: list[float] = []
        sent: dict[tuple, int] = {}
        errors: list[str] = []
        lock = threading.Lock()
        start = threading.Barrier(args.clients + 1)

        def client(name: str, token: str) -> None:
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60) as api:
                items = api.get("/v1/queue", params={"limit": args.writes}).json()["items"]
                start.wait()
                for n, item in enumerate(items):
                    grade = n % 5
                    t0 = time.perf_counter()
                    answer = api.post("/v1/labels", json={"task": "passage", **item, "grade": grade})
                    took = time.perf_counter() - t0
                    with lock:
                        if answer.status_code == 201:
                            latencies.append(took)
                            sent[(name, item["turn"], item["passage"])] = grade
                        else:
                            errors.append(f"{name}: {answer.status_code} {answer.text[:200]}")

        threads = [threading.Thread(target=client, args=pair) for pair in tokens.items()]
        for t in threads:
            t.start()
        start.wait()
        t0, cpu0 = time.perf_counter(), cpu_seconds(proc.pid)
        for t in threads:
            t.join()
        wall, cpu = time.perf_counter() - t0, cpu_seconds(proc.pid) - cpu0
        stop_process(proc)

        from store import open_db
        from store.db import rows

        with open_db(target) as db:
            found = {
                (r["source"], r["turn_id"], r["passage_id"]): r["grade"]
                for r in rows(db, "SELECT source, turn_id, passage_id, grade FROM passage_labels WHERE via = 'api'")
            }
        missing = [k for k, v in sent.items() if found.get(k) != v]
        report = {
            "engine": "postgresql" if target.startswith("postgresql") else "sqlite",
            "clients": args.clients,
            "server_processes": args.workers,
            "writes": len(latencies),
            "errors": len(errors),
            "lost": len(missing),
            "writes_per_s": round(len(latencies) / wall, 1),
            "ms_p50": round(1000 * statistics.median(latencies), 1),
            "ms_p95": round(1000 * percentile(latencies, 0.95), 1),
            "ms_p99": round(1000 * percentile(latencies, 0.99), 1),
            "ms_max": round(1000 * max(latencies), 1),
            # the first process's CPU only: one figure for one process
            "server_cpu_ms_per_write": round(1000 * cpu / max(1, len(latencies)), 2) if args.workers == 1 else None,
            "cpus": os.cpu_count(),
            "load_1min": round(os.getloadavg()[0], 1),
        }
        print(json.dumps(report))
        for line in errors[:5]:
            print(line, file=sys.stderr)
        return 1 if errors or missing else 0


if __name__ == "__main__":
    sys.exit(main())
