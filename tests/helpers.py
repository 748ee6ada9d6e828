"""Small helpers shared by tests: running the CLI in a subprocess, snapshotting a store."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_cli(
    *args: str, db: Path | None = None, check: bool = False, timeout: float = 300
) -> subprocess.CompletedProcess:
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


def rows(path, sql: str, *params) -> list[tuple]:
    """Run one read query on the store file (a fresh connection, closed at once)."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def open_app(page: str | None = None, assessor: str | None = None, *, timeout: float = 60, **params):
    """Start the app in AppTest as a browser would (app.py first), optionally signed in and on ``page``."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    if assessor:
        at.query_params["assessor"] = assessor
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    if page:
        at.switch_page(page)
        at.run()
        assert not at.exception, at.exception
    return at
