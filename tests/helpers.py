"""Small helpers shared by tests: running the CLI in a subprocess, snapshotting a store."""
from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args: str, db: Path | None = None, check: bool = False, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``python -m assess ARGS`` as a user would (a subprocess in the project root)."""
    argv = [sys.executable, "-m", "assess", *map(str, args)]
    if db is not None:
        argv += ["--db", str(db)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env=env, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{argv} exited {proc.returncode}: {proc.stderr}")
    return proc


def snapshot(db: Path) -> str:
    """A digest of every row of every table: equal digests mean the store did not change."""
    conn = sqlite3.connect(db)
    h = hashlib.sha256()
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
        for row in sorted(conn.execute(f'SELECT * FROM "{name}"'), key=repr):
            h.update(repr((name, row)).encode())
    conn.close()
    return h.hexdigest()
