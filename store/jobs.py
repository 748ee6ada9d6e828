"""LLM pre-judging jobs in the store: one row per run with its process, counts and heartbeat.

A job records the process running it and a heartbeat refreshed as results arrive and every few
seconds from a background thread, so a 'running' job whose process is gone (same host) or whose
heartbeat is too old is known to have been killed and is marked 'interrupted' (:func:`reap_stale_jobs`).
One live job per (source, task) at a time: :func:`start_job` checks and records in one transaction.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime

from sqlite_utils import Database

from assess.errors import AssessError
from assess.tasks import JobStatus, ParseStatus
from store.db import BUSY_TIMEOUT_MS, file_of, now, row, rows, run, value, write

JOB_COLUMNS = (
    "id",
    "source",
    "task",
    "model",
    "prompt_version",
    "base_url",
    "concurrency",
    "status",
    "planned",
    "done",
    "unparseable",
    "errors",
    "cached",
    "skipped",
    "message",
    "started_at",
    "finished_at",
    "pid",
    "host",
    "heartbeat_at",
    "stale_after_s",
)
_SELECT = f"SELECT {', '.join(JOB_COLUMNS)} FROM prejudge_jobs"
MIN_STALE_S = 60.0  # a running job without a heartbeat for this long (at least) was killed
HEARTBEAT_EVERY_S = 10.0  # how often a running job says it is alive, results or not


def _seconds_since(stamp: str | None) -> float | None:
    if not stamp:
        return None
    then = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return (datetime.now(UTC) - then).total_seconds()


def process_alive(pid: int) -> bool:
    """Is process ``pid`` of this host alive? (A zombie is not; where it cannot be told, assume it is.)"""
    if os.name != "posix" or pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. another user's process: it exists
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True


def stale_reason(job_: dict) -> str | None:
    """Why a 'running' job is in fact dead (its process is gone, or no heartbeat for too long), or None."""
    if job_["pid"] and job_["host"] == socket.gethostname() and not process_alive(int(job_["pid"])):
        return f"process {job_['pid']} on {job_['host']} is gone"
    age = _seconds_since(job_["heartbeat_at"] or job_["started_at"])
    limit = max(MIN_STALE_S, job_["stale_after_s"] or 0)
    if age is not None and age > limit:
        return f"no heartbeat for {age:.0f} s (limit {limit:.0f} s)"
    return None


def reap_stale_jobs(db: Database) -> list[int]:
    """Mark 'interrupted' every 'running' job that was killed (see :func:`stale_reason`); return their ids."""
    running = rows(db, f"{_SELECT} WHERE status = ?", (JobStatus.RUNNING,))
    dead = [(j, why) for j in running if (why := stale_reason(j))]
    if dead:
        with write(db):
            for j, why in dead:
                run(
                    db,
                    "UPDATE prejudge_jobs SET status = ?, message = ?, finished_at = ? WHERE id = ? AND status = ?",
                    (
                        JobStatus.INTERRUPTED,
                        f"interrupted: {why}; after {j['done']} of {j['planned']}",
                        now(),
                        j["id"],
                        JobStatus.RUNNING,
                    ),
                )
    return [j["id"] for j, _ in dead]


def _running(db: Database, source: str, task: str) -> dict | None:
    return row(
        db,
        f"{_SELECT} WHERE status = ? AND source = ? AND task = ? ORDER BY id LIMIT 1",
        (JobStatus.RUNNING, source, task),
    )


def _busy_message(j: dict) -> str:
    age = _seconds_since(j["heartbeat_at"] or j["started_at"])
    beat = "" if age is None else f", last heartbeat {age:.0f} s ago"
    return (
        f"job {j['id']} is already pre-judging {j['task']} for {j['source']} (pid {j['pid']} on {j['host']}"
        f"{beat}): wait for it or stop it; a killed job counts as interrupted after "
        f"{max(MIN_STALE_S, j['stale_after_s'] or 0):.0f} s without a heartbeat"
    )


def check_not_running(db: Database, source: str, task: str) -> None:
    """Refuse (:class:`AssessError`, one line) when a live job of the same source and task runs."""
    reap_stale_jobs(db)
    other = _running(db, source, task)
    if other is not None:
        raise AssessError(_busy_message(other))


def start_job(
    db: Database,
    *,
    source: str,
    task: str,
    model: str,
    prompt_version: str,
    base_url: str | None,
    concurrency: int,
    planned: int,
    skipped: int,
    stale_after_s: float = MIN_STALE_S,
) -> int:
    """Record a running job of this process. Refused while a live job of the same source and task runs
    (checked and recorded in one transaction, so two processes never both start); dead ones are reaped first."""
    reap_stale_jobs(db)
    with write(db):
        other = _running(db, source, task)
        if other is not None and stale_reason(other) is None:
            raise AssessError(_busy_message(other))
        stamp = now()
        return value(
            db,
            "INSERT INTO prejudge_jobs (source, task, model, prompt_version, base_url, concurrency, status, planned, "
            "skipped, started_at, pid, host, heartbeat_at, stale_after_s) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
            "RETURNING id",
            (
                source,
                task,
                model,
                prompt_version,
                base_url,
                concurrency,
                JobStatus.RUNNING,
                planned,
                skipped,
                stamp,
                os.getpid(),
                socket.gethostname(),
                stamp,
                max(MIN_STALE_S, stale_after_s),
            ),
        )


def count_result(db: Database, job_id: int, status: str, *, cached: bool) -> None:
    """Count one stored result of the job (inside the transaction that stored it) and refresh its heartbeat."""
    run(
        db,
        "UPDATE prejudge_jobs SET done = done + 1, unparseable = unparseable + ?, errors = errors + ?, "
        "cached = cached + ?, heartbeat_at = ? WHERE id = ?",
        (int(status == ParseStatus.UNPARSEABLE), int(status == ParseStatus.ERROR), int(cached), now(), job_id),
    )


@contextlib.contextmanager
def heartbeat(db: Database, job_id: int, every: float = HEARTBEAT_EVERY_S) -> Iterator[None]:
    """Refresh the job's heartbeat every ``every`` seconds from a background thread (its own connection)
    while the block runs, so a slow endpoint with no result for minutes does not look like a dead job."""
    path = file_of(db)
    if not path:  # an in-memory store: no other process can see the job anyway
        yield
        return
    stop = threading.Event()

    def loop():
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
        try:
            while not stop.wait(every):
                # locked for longer than the busy timeout: try at the next beat
                with contextlib.suppress(sqlite3.Error):
                    conn.execute(
                        "UPDATE prejudge_jobs SET heartbeat_at = ? WHERE id = ? AND status = ?",
                        (now(), job_id, JobStatus.RUNNING),
                    )
        finally:
            conn.close()

    thread = threading.Thread(target=loop, daemon=True, name=f"prejudge-job-{job_id}-heartbeat")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


def finish_job(db: Database, job_id: int, status: JobStatus | str, message: str | None = None) -> None:
    with write(db):
        run(
            db,
            "UPDATE prejudge_jobs SET status = ?, message = ?, finished_at = ?, heartbeat_at = ? WHERE id = ?",
            (JobStatus(status), message, now(), now(), job_id),
        )


def jobs(db: Database, limit: int = 20) -> list[dict]:
    """The latest pre-judging jobs, newest first (killed ones marked 'interrupted' first)."""
    reap_stale_jobs(db)
    return rows(db, f"{_SELECT} ORDER BY id DESC LIMIT ?", (limit,))


def job(db: Database, job_id: int) -> dict:
    return row(db, f"{_SELECT} WHERE id = ?", (job_id,))
