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
import threading
from collections.abc import Iterator
from datetime import UTC, datetime

from assess.errors import AssessError
from assess.tasks import JobStatus, ParseStatus
from store.db import Store, file_of, now, open_db, returning, row, rows, run, write

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


def reap_stale_jobs(db: Store) -> list[int]:
    """Mark 'interrupted' every 'running' job that was killed (see :func:`stale_reason`); return their ids."""
    running = rows(db, f"{_SELECT} WHERE status = :status", {"status": JobStatus.RUNNING.value})
    dead = [(j, why) for j in running if (why := stale_reason(j))]
    if dead:
        with write(db):
            for j, why in dead:
                run(
                    db,
                    "UPDATE prejudge_jobs SET status = :status, message = :message, finished_at = :at "
                    "WHERE id = :id AND status = :running",
                    {
                        "status": JobStatus.INTERRUPTED.value,
                        "message": f"interrupted: {why}; after {j['done']} of {j['planned']}",
                        "at": now(),
                        "id": j["id"],
                        "running": JobStatus.RUNNING.value,
                    },
                )
    return [j["id"] for j, _ in dead]


def _running(db: Store, source: str, task: str) -> dict | None:
    return row(
        db,
        f"{_SELECT} WHERE status = :status AND source = :source AND task = :task ORDER BY id LIMIT 1",
        {"status": JobStatus.RUNNING.value, "source": source, "task": str(task)},
    )


def _busy_message(j: dict) -> str:
    age = _seconds_since(j["heartbeat_at"] or j["started_at"])
    beat = "" if age is None else f", last heartbeat {age:.0f} s ago"
    return (
        f"job {j['id']} is already pre-judging {j['task']} for {j['source']} (pid {j['pid']} on {j['host']}"
        f"{beat}): wait for it or stop it; a killed job counts as interrupted after "
        f"{max(MIN_STALE_S, j['stale_after_s'] or 0):.0f} s without a heartbeat"
    )


def check_not_running(db: Store, source: str, task: str) -> None:
    """Refuse (:class:`AssessError`, one line) when a live job of the same source and task runs."""
    reap_stale_jobs(db)
    other = _running(db, source, task)
    if other is not None:
        raise AssessError(_busy_message(other))


def start_job(
    db: Store,
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
        return returning(
            db,
            "INSERT INTO prejudge_jobs (source, task, model, prompt_version, base_url, concurrency, status, planned, "
            "skipped, started_at, pid, host, heartbeat_at, stale_after_s) VALUES (:source, :task, :model, "
            ":prompt_version, :base_url, :concurrency, :status, :planned, :skipped, :started_at, :pid, :host, "
            ":heartbeat_at, :stale_after_s) RETURNING id",
            {
                "source": source,
                "task": str(task),
                "model": model,
                "prompt_version": prompt_version,
                "base_url": base_url,
                "concurrency": concurrency,
                "status": JobStatus.RUNNING.value,
                "planned": planned,
                "skipped": skipped,
                "started_at": stamp,
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "heartbeat_at": stamp,
                "stale_after_s": float(max(MIN_STALE_S, stale_after_s)),
            },
        )["id"]


def count_result(db: Store, job_id: int, status: str, *, cached: bool) -> None:
    """Count one stored result of the job (inside the transaction that stored it) and refresh its heartbeat."""
    run(
        db,
        "UPDATE prejudge_jobs SET done = done + 1, unparseable = unparseable + :unparseable, "
        "errors = errors + :errors, cached = cached + :cached, heartbeat_at = :at WHERE id = :id",
        {
            "unparseable": int(status == ParseStatus.UNPARSEABLE),
            "errors": int(status == ParseStatus.ERROR),
            "cached": int(cached),
            "at": now(),
            "id": job_id,
        },
    )


@contextlib.contextmanager
def heartbeat(db: Store, job_id: int, every: float = HEARTBEAT_EVERY_S) -> Iterator[None]:
    """Refresh the job's heartbeat every ``every`` seconds from a background thread (its own connection)
    while the block runs, so a slow endpoint with no result for minutes does not look like a dead job."""
    if db.sqlite and not file_of(db):  # an in-memory store: no other process can see the job anyway
        yield
        return
    stop = threading.Event()

    def loop():
        beat: Store | None = None
        try:
            while not stop.wait(every):
                # locked for longer than the busy timeout, or the database briefly away: the next beat
                with contextlib.suppress(Exception):
                    beat = beat or open_db(db.target, migrate=False)
                    run(
                        beat,
                        "UPDATE prejudge_jobs SET heartbeat_at = :at WHERE id = :id AND status = :status",
                        {"at": now(), "id": job_id, "status": JobStatus.RUNNING.value},
                    )
        finally:
            if beat is not None:
                beat.close()

    thread = threading.Thread(target=loop, daemon=True, name=f"prejudge-job-{job_id}-heartbeat")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


def finish_job(db: Store, job_id: int, status: JobStatus | str, message: str | None = None) -> None:
    with write(db):
        run(
            db,
            "UPDATE prejudge_jobs SET status = :status, message = :message, finished_at = :at, heartbeat_at = :at "
            "WHERE id = :id",
            {"status": JobStatus(status).value, "message": message, "at": now(), "id": job_id},
        )


def jobs(db: Store, limit: int = 20) -> list[dict]:
    """The latest pre-judging jobs, newest first (killed ones marked 'interrupted' first)."""
    reap_stale_jobs(db)
    return rows(db, f"{_SELECT} ORDER BY id DESC LIMIT :limit", {"limit": int(limit)})


def job(db: Store, job_id: int) -> dict:
    return row(db, f"{_SELECT} WHERE id = :id", {"id": job_id})
