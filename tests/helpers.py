"""Small helpers shared by tests: running the CLI (in process, or as a subprocess), snapshotting a store."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import sqlite3
import subprocess
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cli_argv(args, db) -> list[str]:
    argv = [*map(str, args)]
    if db is not None:
        argv += ["--db", str(db)]
    return argv


def run_cli(
    *args: str, db: Path | None = None, check: bool = False, timeout: float = 300
) -> subprocess.CompletedProcess:
    """Run the CLI as ``python -m assess ARGS`` would, in this process: ``assess.cli.main(argv)`` in the project
    root with standard output and error captured. An uncaught exception gives exit 1 and its traceback on
    standard error, as the interpreter would; ``SystemExit`` (argparse) its code. The environment is the
    test's (``monkeypatch.setenv``). ``timeout`` is :func:`run_cli_process`'s; in process pytest-timeout
    guards a hang. For what only a real process shows (the entry point, signals, concurrent processes),
    use :func:`run_cli_process`."""
    from assess.cli import main

    argv = cli_argv(args, db)
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code
                if isinstance(code, str):
                    print(code, file=sys.stderr)
                    code = 1
            except Exception:
                traceback.print_exc()
                code = 1
    finally:
        os.chdir(here)
    proc = subprocess.CompletedProcess(
        [sys.executable, "-m", "assess", *argv], int(code or 0), out.getvalue(), err.getvalue()
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"{proc.args} exited {proc.returncode}: {proc.stderr}")
    return proc


def run_cli_process(
    *args: str, db: Path | None = None, check: bool = False, timeout: float = 300
) -> subprocess.CompletedProcess:
    """Run ``python -m assess ARGS`` as a user would (a subprocess in the project root): the contract tests
    (entry point, exit codes, terminal escaping, processes at once)."""
    argv = [sys.executable, "-m", "assess", *cli_argv(args, db)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env=env, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{argv} exited {proc.returncode}: {proc.stderr}")
    return proc


def snapshot(target) -> str:
    """A digest of every row of every table (either engine): equal digests mean the store did not change."""
    import sqlalchemy as sa

    from store.db import Store
    from store.db import rows as query

    h = hashlib.sha256()
    with Store(target) as db:
        for name in sorted(sa.inspect(db.sa).get_table_names()):
            for row in sorted((tuple(r.values()) for r in query(db, f'SELECT * FROM "{name}"')), key=repr):
                h.update(repr((name, row)).encode())
    return h.hexdigest()


def rows(target, sql: str, *params) -> list[tuple]:
    """Run one read query on the store (a fresh connection, closed at once). Positional ``?`` parameters
    on a SQLite file; one dict of named ``:name`` parameters on either engine."""
    from store.db import Store, is_postgres
    from store.db import rows as query

    if is_postgres(target) or (len(params) == 1 and isinstance(params[0], dict)):
        with Store(target) as db:
            return [tuple(r.values()) for r in query(db, sql, params[0] if params else {})]
    conn = sqlite3.connect(target)
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


# ------------------------------------------------------------------------------------------- hostile data
# Strings an attacker could place in imported data, in a URL or in an error: each tries a markdown image and
# link, an HTML image and link, bare autolinks and Streamlit's own directives. The images point at port 9 of
# this machine (nothing listens there) and the links at evil.example, so a test can see any request leave.
TRAP = "127.0.0.1:9"
HOSTILE_TITLE = (
    f"Title ![t](http://{TRAP}/title.png) [t-link](http://evil.example/title) "
    f'<img src="http://{TRAP}/title-html.png"> www.evil.example :red[alarm] **loud**'
)
HOSTILE_PASSAGE = f"!`[p-link](http://evil.example/p)` ![p](http://{TRAP}/passage.png)"
HOSTILE_RUN = f"!run with space [r-link](http://evil.example/run) ![r](http://{TRAP}/run.png)"
HOSTILE_LLM = f"llm:![l](http://{TRAP}/llm.png)[l-link](http://evil.example/llm)"
HOSTILE_KEY = f"[k-link](http://evil.example/key) ![k](http://{TRAP}/key.png)"
HOSTILE_STUDY = f"x](http://evil.example/study) ![s](http://{TRAP}/study.png) <a href=http://evil.example>a</a>"


def hostile_store(path: Path) -> None:
    """The demo plus hostile strings where data can carry them, written past the importers' checks (as
    another SQLite client could): the first conversation's title, a pooled passage id (first in the queue
    of turn 101_1, with text), a response run (first NtR item of 101_1), an LLM source with a label on
    that passage and on PTKB statement 1 (the judging mode 'shown' reveals them), a gold nugget key; and the
    demo crowd study."""
    from assess.services.loading import load_demo
    from store import labels, open_db
    from store.crowd import create_demo_study
    from store.db import run, write
    from store.queue import set_judging_mode
    from store.sources import ensure_source

    db = open_db(path)
    load_demo(db)
    create_demo_study(db)  # before the nugget key changes: its known answers name the demo's keys
    at = "2026-01-01T00:00:00Z"
    with write(db):
        run(
            db,
            "UPDATE conversations SET title = :t WHERE id = (SELECT conversation_id FROM turns WHERE id = '101_1')",
            {"t": HOSTILE_TITLE},
        )
        run(
            db,
            "INSERT INTO passages (id, doc_id, text) VALUES (:p, 'evil', :text)",
            {"p": HOSTILE_PASSAGE, "text": f"Running a 10k ![in](http://{TRAP}/in.png)"},
        )
        run(
            db,
            "INSERT INTO pool (turn_id, passage_id, method, detail, best_rank, added_at) "
            "VALUES ('101_1', :p, 'manual', NULL, 1, :at)",
            {"p": HOSTILE_PASSAGE, "at": at},
        )
        run(
            db,
            "INSERT INTO runs (name, kind, file, imported_at) VALUES (:run, 'response', NULL, :at)",
            {"run": HOSTILE_RUN, "at": at},
        )
        run(
            db,
            "INSERT INTO responses (run, turn_id, text) VALUES (:run, '101_1', :text)",
            {"run": HOSTILE_RUN, "text": "A 10k plan: run three times a week."},
        )
        run(
            db,
            "UPDATE nuggets SET key = :k WHERE id = "
            "(SELECT MIN(id) FROM nuggets WHERE turn_id = '101_1' AND source = 'gold')",
            {"k": HOSTILE_KEY},
        )
        ensure_source(db, HOSTILE_LLM, "llm")
    labels.save(db, "passage", HOSTILE_LLM, ("101_1", HOSTILE_PASSAGE), 3, mode="import", via="llm")
    labels.save(db, "ptkb", HOSTILE_LLM, ("101_1", "1"), 1, mode="import", via="llm")
    set_judging_mode(db, "shown")
    db.close()


def verdict_figures_match(report: dict, run_json) -> int:
    """Check that every figure of an `audit verdict --json` report equals the figure at its path in the JSON of
    the command it names (``run_json(argv)`` runs ``audit ...`` and returns its JSON; each command runs once);
    return how many figures were compared."""
    import shlex

    outputs: dict[str, dict] = {}
    compared = 0
    for item in report["criteria"]:
        for entry in item["figures"]:
            command = item["commands"][entry["from"]]
            if command not in outputs:
                argv = shlex.split(command)
                assert argv[:3] == ["python", "-m", "assess"], command
                outputs[command] = run_json(argv[3:])
            for value, path in (("value", "path"), ("low", "low_path"), ("high", "high_path")):
                if entry.get(path) is None:
                    continue
                found = outputs[command]
                for step in entry[path]:
                    found = found[step]
                assert entry[value] == found, (item["key"], entry["name"], value, entry[value], found)
                compared += 1
    return compared
