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
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

from assess.errors import AssessError
from assess.llm.guard import redact
from assess.tasks import JobStatus, ParseStatus
from store import outbox
from store.db import Store, db_clock, file_of, open_db, returning, row, rows, run, run_many, value, write

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


def _parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _seconds_since(stamp: str | None, at: str | None = None) -> float | None:
    """Seconds from ``stamp`` to ``at`` (the database's clock, :func:`store.db.db_clock`; None: this process's)."""
    if not stamp:
        return None
    return ((_parse(at) if at else datetime.now(UTC)) - _parse(stamp)).total_seconds()


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


def stale_reason(job_: dict, at: str | None = None) -> str | None:
    """Why a 'running' job is in fact dead (its process is gone, or no heartbeat for too long by the database's
    clock ``at``), or None."""
    if job_["pid"] and job_["host"] == socket.gethostname() and not process_alive(int(job_["pid"])):
        return f"process {job_['pid']} on {job_['host']} is gone"
    age = _seconds_since(job_["heartbeat_at"] or job_["started_at"], at)
    limit = max(MIN_STALE_S, job_["stale_after_s"] or 0)
    if age is not None and age > limit:
        return f"no heartbeat for {age:.0f} s (limit {limit:.0f} s)"
    return None


def reap_stale_jobs(db: Store) -> list[int]:
    """Mark 'interrupted' every 'running' job that was killed (see :func:`stale_reason`); return their ids."""
    running = rows(
        db,
        f"SELECT {', '.join(JOB_COLUMNS)}, shared FROM prejudge_jobs WHERE status = :status",
        {"status": JobStatus.RUNNING.value},
    )
    dead = []
    for j in rows(  # ended shared jobs whose worker rows still say running: a killed worker the job outlived
        db,
        "SELECT id, stale_after_s FROM prejudge_jobs j WHERE status != :status AND shared = 1 AND EXISTS "
        "(SELECT 1 FROM job_workers w WHERE w.job_id = j.id AND w.status = :status)",
        {"status": JobStatus.RUNNING.value},
    ):
        _reap_workers(db, j)
    for j in running:
        # a shared job lives while one of its workers does (or, before its first worker, its starter)
        why = stale_reason(j, db_clock(db)) if not j["shared"] or _reap_workers(db, j) else None
        if why and j["shared"]:
            why = f"no live worker ({why})"
        if why:
            dead.append((j, why))
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
                        "at": db_clock(db),
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


def _busy_message(j: dict, at: str | None = None) -> str:
    age = _seconds_since(j["heartbeat_at"] or j["started_at"], at)
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
        raise AssessError(_busy_message(other, db_clock(db)))


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
            raise AssessError(_busy_message(other, db_clock(db)))
        stamp = db_clock(db)
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
                "base_url": redact(base_url),
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
    count_results(
        db,
        job_id,
        done=1,
        unparseable=int(status == ParseStatus.UNPARSEABLE),
        errors=int(status == ParseStatus.ERROR),
        cached=int(cached),
    )


def count_results(db: Store, job_id: int, *, done: int, unparseable: int, errors: int, cached: int) -> None:
    """Count stored results of the job, in one statement (inside the transaction that stored them), and refresh
    its heartbeat."""
    run(
        db,
        "UPDATE prejudge_jobs SET done = done + :done, unparseable = unparseable + :unparseable, "
        "errors = errors + :errors, cached = cached + :cached, heartbeat_at = :at WHERE id = :id",
        {
            "done": done,
            "unparseable": unparseable,
            "errors": errors,
            "cached": cached,
            "at": db_clock(db),
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
                        {"at": db_clock(beat), "id": job_id, "status": JobStatus.RUNNING.value},
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
    """Mark a job finished; its ``job.finished`` webhook event commits with the mark (store/outbox.py)."""
    with write(db):
        at = db_clock(db)
        run(
            db,
            "UPDATE prejudge_jobs SET status = :status, message = :message, finished_at = :at, heartbeat_at = :at "
            "WHERE id = :id",
            {"status": JobStatus(status).value, "message": redact(message), "at": at, "id": job_id},
        )
        found = row(db, f"{_SELECT} WHERE id = :id", {"id": job_id})
        if found is not None:
            keep = (
                "source",
                "task",
                "model",
                "status",
                "message",
                "planned",
                "done",
                "unparseable",
                "errors",
                "cached",
            )
            payload = {
                "job": job_id,
                **{k: found[k] for k in keep},
                "started_at": found["started_at"],
                "finished_at": at,
            }
            outbox.emit(db, "job.finished", str(job_id), payload, at=at)


def jobs(db: Store, limit: int = 20) -> list[dict]:
    """The latest pre-judging jobs, newest first (killed ones marked 'interrupted' first)."""
    reap_stale_jobs(db)
    return [_shown(j) for j in rows(db, f"{_SELECT} ORDER BY id DESC LIMIT :limit", {"limit": int(limit)})]


def job(db: Store, job_id: int) -> dict:
    found = row(db, f"{_SELECT} WHERE id = :id", {"id": job_id})
    return _shown(found) if found else found


def _shown(j: dict) -> dict:
    """A job row without secrets in its base URL and message (:func:`assess.llm.guard.redact`): rows written before
    the store redacted what it writes are read out redacted too."""
    return j | {"base_url": redact(j["base_url"]), "message": redact(j["message"])}


# ------------------------------------------------------------------------------------------- shared jobs
# A shared job (``prejudge --join``) is worked on by any number of processes: its planner queues the items in
# ``job_items`` and cuts them into ``job_blocks``; each worker (``job_workers``) claims a block under a lease that
# its heartbeat renews. PostgreSQL: the claim picks the first free block with ``FOR UPDATE SKIP LOCKED``, so
# claimers never wait on one another's row locks; SQLite: the claim runs under the store's writer lock
# (:func:`store.db.write`), which serialises every writer of the file anyway.

SHARED_COLUMNS = (
    "shared",
    "options",
    "lease_s",
    "block_size",
    "scanned",
    "already",
    "deferred",
    "items",
    "calls",
    "chars",
    "planned_at",
)


def _later(at: str, seconds: float) -> str:
    """The timestamp ``seconds`` after ``at`` (the database's clock), in the store's format."""
    from datetime import timedelta

    return (_parse(at) + timedelta(seconds=seconds)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def shared_job(db: Store, job_id: int) -> dict:
    """The job's row with the columns of a shared job."""
    return row(
        db, f"SELECT {', '.join((*JOB_COLUMNS, *SHARED_COLUMNS))} FROM prejudge_jobs WHERE id = :id", {"id": job_id}
    )


def open_shared_job(
    db: Store,
    *,
    source: str,
    task: str,
    model: str,
    prompt_version: str,
    options: str,
    base_url: str | None,
    concurrency: int,
    lease_s: float,
    block_size: int,
    stale_after_s: float,
) -> tuple[int, str]:
    """The shared job of (source, task) this process works on, and how it came to it: 'join' (a running shared
    job planned with the same model, prompt version and ``options``), 'resume' (the latest job of the pair, a
    shared one that stopped, failed or was interrupted before it was done, same settings) or 'start' (a new one).

    Refused (:class:`AssessError`, one line) while a job of the pair runs that cannot be joined: a job of one
    process (``prejudge`` without ``--join``) or one with other settings. Checked and recorded in one transaction."""
    reap_stale_jobs(db)
    keys = {"source": source, "task": str(task)}
    with write(db):
        other = _running(db, source, task)
        if other is not None:
            found = shared_job(db, other["id"])
            if not found["shared"]:
                raise AssessError(_busy_message(other, db_clock(db)))
            mine = (model, prompt_version, options)
            if (found["model"], found["prompt_version"], found["options"]) != mine:
                raise AssessError(
                    f"job {found['id']} pre-judges {task} for {source} with {found['model']} "
                    f"({found['prompt_version']}, options {found['options']}), not {model} ({prompt_version}, "
                    f"options {options}): join it with the same options, or wait for it"
                )
            return found["id"], "join"
        latest = row(
            db,
            f"SELECT {', '.join((*JOB_COLUMNS, *SHARED_COLUMNS))} FROM prejudge_jobs WHERE source = :source "
            "AND task = :task ORDER BY id DESC LIMIT 1",
            keys,
        )
        resumable = (JobStatus.STOPPED.value, JobStatus.FAILED.value, JobStatus.INTERRUPTED.value)
        if (
            latest is not None
            and latest["shared"]
            and latest["status"] in resumable
            and (latest["model"], latest["prompt_version"], latest["options"]) == (model, prompt_version, options)
        ):
            run(
                db,
                "UPDATE prejudge_jobs SET status = :running, message = NULL, finished_at = NULL, heartbeat_at = :at, "
                "base_url = :base_url, concurrency = :concurrency, lease_s = :lease_s, stale_after_s = :stale, pid = :pid, "
                "host = :host WHERE id = :id",
                {
                    "running": JobStatus.RUNNING.value,
                    "at": db_clock(db),
                    "base_url": redact(base_url),
                    "concurrency": concurrency,
                    "lease_s": float(lease_s),
                    "stale": float(max(MIN_STALE_S, stale_after_s)),
                    "pid": os.getpid(),
                    "host": socket.gethostname(),
                    "id": latest["id"],
                },
            )
            return latest["id"], "resume"
        stamp = db_clock(db)
        created = returning(
            db,
            "INSERT INTO prejudge_jobs (source, task, model, prompt_version, base_url, concurrency, status, planned, "
            "skipped, started_at, pid, host, heartbeat_at, stale_after_s, shared, options, lease_s, block_size) "
            "VALUES (:source, :task, :model, :prompt_version, :base_url, :concurrency, :status, 0, 0, :at, :pid, "
            ":host, :at, :stale, 1, :options, :lease_s, :block_size) RETURNING id",
            keys
            | {
                "model": model,
                "prompt_version": prompt_version,
                "base_url": redact(base_url),
                "concurrency": concurrency,
                "status": JobStatus.RUNNING.value,
                "at": stamp,
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "stale": float(max(MIN_STALE_S, stale_after_s)),
                "options": options,
                "lease_s": float(lease_s),
                "block_size": int(block_size),
            },
        )
        return created["id"], "start"


def add_worker(db: Store, job_id: int) -> int:
    """Record this process as a worker of the shared job; its id."""
    stamp = db_clock(db)
    with write(db):
        return returning(
            db,
            "INSERT INTO job_workers (job_id, host, pid, status, started_at, heartbeat_at) "
            "VALUES (:job, :host, :pid, :status, :at, :at) RETURNING id",
            {
                "job": job_id,
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "status": JobStatus.RUNNING.value,
                "at": stamp,
            },
        )["id"]


def queue_block(
    db: Store,
    job_id: int,
    block: int,
    items: list[tuple],
    *,
    planned: int,
    items_queued: int,
    scanned: int,
    already: int,
    skipped: int,
    deferred: int,
    calls: int,
    chars: int,
) -> None:
    """Queue one block of items (``(seq, turn, item, sample, input hash, inputs JSON, cached_from)``, consecutive
    numbers) and the planner's running totals (``planned``: items queued so far), in one transaction: the block is
    claimable once committed. No items: only the totals."""
    with write(db):
        if items:
            run_many(
                db,
                "INSERT INTO job_items (job_id, seq, turn_id, item_id, sample, input_hash, inputs, cached_from) "
                "VALUES (:job, :seq, :turn, :item, :sample, :hash, :inputs, :cached_from)",
                (
                    {
                        "job": job_id,
                        "seq": seq,
                        "turn": turn,
                        "item": item,
                        "sample": sample,
                        "hash": hashed,
                        "inputs": inputs,
                        "cached_from": cached_from,
                    }
                    for seq, turn, item, sample, hashed, inputs, cached_from in items
                ),
            )
            run(
                db,
                "INSERT INTO job_blocks (job_id, block, first_seq, last_seq, state) VALUES (:job, :block, :first, "
                ":last, 'open')",
                {"job": job_id, "block": block, "first": items[0][0], "last": items[-1][0]},
            )
        run(
            db,
            "UPDATE prejudge_jobs SET planned = :planned, items = :items, scanned = :scanned, already = :already, skipped = :skipped, "
            "deferred = :deferred, calls = :calls, chars = :chars WHERE id = :id",
            {
                "id": job_id,
                "planned": planned,
                "items": items_queued,
                "scanned": scanned,
                "already": already,
                "skipped": skipped,
                "deferred": deferred,
                "calls": calls,
                "chars": chars,
            },
        )


def finish_planning(db: Store, job_id: int) -> None:
    """Mark the job's item list complete: once its blocks are done, the job is."""
    with write(db):
        run(db, "UPDATE prejudge_jobs SET planned_at = :at WHERE id = :id", {"at": db_clock(db), "id": job_id})


def last_queued(db: Store, job_id: int) -> tuple[int, int]:
    """(the number of the next item, the number of the next block) of a job's queue: where a resumed planner
    goes on."""
    found = row(
        db,
        "SELECT COALESCE(MAX(last_seq) + 1, 0) AS seq, COALESCE(MAX(block) + 1, 0) AS block FROM job_blocks "
        "WHERE job_id = :job",
        {"job": job_id},
    )
    return int(found["seq"]), int(found["block"])


def claim_block(db: Store, job_id: int, worker_id: int, lease_s: float) -> dict | None:
    """Claim the first block of the job that is open or whose lease ran out: ``{block, first_seq, last_seq,
    claims}``, or None when there is none now. The claim holds for ``lease_s`` unless renewed
    (:func:`beat_worker`)."""
    pick = (
        "SELECT block FROM job_blocks WHERE job_id = :job AND (state = 'open' OR (state = 'claimed' AND "
        "lease_until < :now)) ORDER BY block LIMIT 1"
    )
    if not db.sqlite:
        pick += " FOR UPDATE SKIP LOCKED"
    with write(db):
        at = db_clock(db)  # the database's clock: a worker whose own clock runs ahead takes no live lease
        params = {"job": job_id, "worker": worker_id, "now": at, "until": _later(at, lease_s)}
        found = returning(
            db,
            "UPDATE job_blocks SET state = 'claimed', worker_id = :worker, lease_until = :until, claims = claims + 1 "
            f"WHERE job_id = :job AND block = ({pick}) RETURNING block, first_seq, last_seq, claims",
            params,
        )
        if found is not None:
            run(db, "UPDATE job_workers SET claimed = claimed + 1 WHERE id = :worker", {"worker": worker_id})
    return found


def open_items(db: Store, job_id: int, first_seq: int, last_seq: int) -> list[dict]:
    """The items of a block not stored yet, in order: {seq, turn_id, item_id, sample, input_hash, inputs,
    cached_from}."""
    return rows(
        db,
        "SELECT seq, turn_id, item_id, sample, input_hash, inputs, cached_from FROM job_items WHERE job_id = :job "
        "AND seq BETWEEN :first AND :last AND state = 'open' ORDER BY seq",
        {"job": job_id, "first": first_seq, "last": last_seq},
    )


def mark_items(db: Store, job_id: int, worker_id: int, marks: Sequence[tuple[int, int, str]]) -> set[int]:
    """Mark items stored, ``(seq, block, status)`` each, in a few statements (one per block and status), inside
    the transaction that stores their results, where their block is still this worker's: the seqs marked. The
    others were stored already or their block was claimed by another worker (their results must not be kept).
    A failed call keeps the item's inputs (a resumed job may ask again); a result drops them."""
    groups: dict[tuple[int, str], list[int]] = {}
    for seq, block, status in marks:
        groups.setdefault((block, str(status)), []).append(seq)
    marked: set[int] = set()
    errors = 0
    for (block, status), seqs in groups.items():
        names = {f"s{i}": seq for i, seq in enumerate(seqs)}
        found = rows(
            db,
            "UPDATE job_items SET state = 'done', status = :status, inputs = CASE WHEN :status = 'error' THEN "
            f"inputs ELSE NULL END WHERE job_id = :job AND seq IN ({', '.join(':' + n for n in names)}) AND "
            "state = 'open' AND EXISTS (SELECT 1 FROM job_blocks b WHERE b.job_id = :job AND b.block = :block AND "
            "b.worker_id = :worker AND b.state = 'claimed') RETURNING seq",
            names | {"job": job_id, "block": block, "worker": worker_id, "status": status},
        )
        marked.update(r["seq"] for r in found)
        if status == ParseStatus.ERROR:
            errors += len(found)
    if marked:
        run(
            db,
            "UPDATE job_workers SET done = done + :done, errors = errors + :error, heartbeat_at = :at WHERE id = :worker",
            {"done": len(marked), "error": errors, "at": db_clock(db), "worker": worker_id},
        )
    return marked


def finish_block(db: Store, job_id: int, block: int, worker_id: int) -> None:
    """Mark a block of this worker done once every item of it is stored; a block with an item still open (a
    result the database lost) goes back to open instead, for the next claim to ask again."""
    params = {"job": job_id, "block": block, "worker": worker_id}
    with write(db):
        done = run(
            db,
            "UPDATE job_blocks SET state = 'done', lease_until = NULL WHERE job_id = :job AND block = :block "
            "AND worker_id = :worker AND state = 'claimed' AND NOT EXISTS (SELECT 1 FROM job_items i WHERE "
            "i.job_id = :job AND i.seq BETWEEN job_blocks.first_seq AND job_blocks.last_seq AND i.state = 'open')",
            params,
        )
        if not done:
            run(
                db,
                "UPDATE job_blocks SET state = 'open', worker_id = NULL, lease_until = NULL WHERE job_id = :job "
                "AND block = :block AND worker_id = :worker AND state = 'claimed'",
                params,
            )


def holds_block(db: Store, job_id: int, block: int, worker_id: int) -> bool:
    """Does this worker still hold the block (claimed, not taken over by another worker)?"""
    return bool(
        value(
            db,
            "SELECT COUNT(*) AS n FROM job_blocks WHERE job_id = :job AND block = :block AND worker_id = :worker "
            "AND state = 'claimed'",
            {"job": job_id, "block": block, "worker": worker_id},
        )
    )


def beat_worker(db: Store, job_id: int, worker_id: int, lease_s: float) -> None:
    """A worker's heartbeat: its row, its job's, and the leases of the blocks it holds, renewed in one transaction."""
    stamp = db_clock(db)
    with write(db):
        run(db, "UPDATE job_workers SET heartbeat_at = :at WHERE id = :id", {"at": stamp, "id": worker_id})
        run(
            db,
            "UPDATE prejudge_jobs SET heartbeat_at = :at WHERE id = :id AND status = :status",
            {"at": stamp, "id": job_id, "status": JobStatus.RUNNING.value},
        )
        run(
            db,
            "UPDATE job_blocks SET lease_until = :until WHERE job_id = :job AND worker_id = :worker AND state = 'claimed'",
            {"until": _later(stamp, lease_s), "job": job_id, "worker": worker_id},
        )


def job_state(db: Store, job_id: int) -> dict:
    """What a worker looking for work needs: whether the planner is done, how many blocks are not done, how many
    are claimed by a live lease, and the job's status."""
    found = row(
        db,
        "SELECT j.status AS status, j.planned AS planned, j.planned_at AS planned_at, j.pid AS pid, j.host AS host, "
        "(SELECT COUNT(*) FROM job_blocks b WHERE "
        "b.job_id = j.id AND b.state != 'done') AS unfinished FROM prejudge_jobs j WHERE j.id = :id",
        {"id": job_id},
    )
    return found


def finish_worker(db: Store, job_id: int, worker_id: int, status: str, message: str) -> str | None:
    """End this worker: its claimed blocks go back to open (another worker or a later run takes them), its row
    gets ``status``. The job ends with it when it was the last live worker: 'done' when every block is done and
    the planner finished, else ``status``. Returns the job's status when it ended, else None."""
    stamp = db_clock(db)
    with write(db):
        run(
            db,
            "UPDATE job_blocks SET state = 'open', worker_id = NULL, lease_until = NULL WHERE job_id = :job "
            "AND worker_id = :worker AND state = 'claimed'",
            {"job": job_id, "worker": worker_id},
        )
        run(
            db,
            "UPDATE job_workers SET status = :status, message = :message, finished_at = :at, heartbeat_at = :at "
            "WHERE id = :worker",
            {"status": status, "message": redact(message), "at": stamp, "worker": worker_id},
        )
        state = job_state(db, job_id)
        complete = state["planned_at"] is not None and state["unfinished"] == 0
        others = value(
            db,
            "SELECT COUNT(*) AS n FROM job_workers WHERE job_id = :job AND status = :running",
            {"job": job_id, "running": JobStatus.RUNNING.value},
        )
        if state["status"] != JobStatus.RUNNING.value or (others and not complete):
            return None
        ended = JobStatus.DONE.value if complete else status
        job_ = job(db, job_id)
        workers_ = value(db, "SELECT COUNT(*) AS n FROM job_workers WHERE job_id = :job", {"job": job_id})
        summary = (
            f"{job_['done']} of {job_['planned']} stored by {workers_} worker{'s' if workers_ != 1 else ''}"
            if complete
            else message
        )
        run(
            db,
            "UPDATE prejudge_jobs SET status = :status, message = :message, finished_at = :at, heartbeat_at = :at "
            "WHERE id = :id AND status = :running",
            {
                "status": ended,
                "message": redact(summary),
                "at": stamp,
                "id": job_id,
                "running": JobStatus.RUNNING.value,
            },
        )
        return ended


def workers(db: Store, job_id: int) -> list[dict]:
    """The workers of a shared job in the order they joined: {id, host, pid, status, claimed, done, errors,
    started_at, heartbeat_at, finished_at, message}, and the items of the blocks each holds now (``holding``)."""
    found = rows(
        db,
        "SELECT w.id AS id, w.host AS host, w.pid AS pid, w.status AS status, w.claimed AS claimed, w.done AS done, "
        "w.errors AS errors, w.started_at AS started_at, w.heartbeat_at AS heartbeat_at, w.finished_at AS "
        "finished_at, w.message AS message, (SELECT COALESCE(SUM(b.last_seq - b.first_seq + 1), 0) FROM job_blocks b "
        "WHERE b.job_id = w.job_id AND b.worker_id = w.id AND b.state = 'claimed') AS holding FROM job_workers w "
        "WHERE w.job_id = :job ORDER BY w.id",
        {"job": job_id},
    )
    return [w | {"message": redact(w["message"])} for w in found]


def _reap_workers(db: Store, job_: dict) -> bool:
    """Mark 'gone' the running workers of a shared job that were killed (process gone on this host, or no heartbeat
    for the job's stale limit); True when none is left running."""
    limit = max(MIN_STALE_S, job_["stale_after_s"] or 0)
    alive = 0
    for w in rows(
        db,
        "SELECT id, host, pid, heartbeat_at FROM job_workers WHERE job_id = :job AND status = :running",
        {"job": job_["id"], "running": JobStatus.RUNNING.value},
    ):
        gone = w["host"] == socket.gethostname() and not process_alive(int(w["pid"]))
        age = _seconds_since(w["heartbeat_at"], db_clock(db))
        if gone or (age is not None and age > limit):
            why = f"process {w['pid']} on {w['host']} is gone" if gone else f"no heartbeat for {age:.0f} s"
            with write(db):
                run(
                    db,
                    "UPDATE job_workers SET status = 'gone', message = :why, finished_at = :at WHERE id = :id "
                    "AND status = :running",
                    {"why": why, "at": db_clock(db), "id": w["id"], "running": JobStatus.RUNNING.value},
                )
                if gone:  # certainly dead: its blocks need not wait for their leases
                    run(
                        db,
                        "UPDATE job_blocks SET lease_until = :at WHERE job_id = :job AND worker_id = :id "
                        "AND state = 'claimed'",
                        {"at": db_clock(db), "job": job_["id"], "id": w["id"]},
                    )
        else:
            alive += 1
    return alive == 0


@contextlib.contextmanager
def worker_heartbeat(db: Store, job_id: int, worker_id: int, lease_s: float, every: float) -> Iterator[None]:
    """Renew the worker's heartbeat and the leases of its blocks every ``every`` seconds from a background thread
    (its own connection) while the block runs. A beat that fails (the database restarting) is tried again at the
    next one; the leases are long enough to survive a few."""
    if db.sqlite and not file_of(db):
        yield
        return
    stop = threading.Event()

    def loop():
        beat: Store | None = None
        try:
            while not stop.wait(every):
                with contextlib.suppress(Exception):
                    beat = beat or open_db(db.target, migrate=False)
                    beat_worker(beat, job_id, worker_id, lease_s)
        finally:
            if beat is not None:
                beat.close()

    thread = threading.Thread(target=loop, daemon=True, name=f"prejudge-job-{job_id}-worker-{worker_id}")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


def take_over_planning(db: Store, job_id: int) -> bool:
    """Become the planner of a shared job whose planner is gone before its item list was complete (its process
    is gone on this host, or its worker row was marked gone or ended): True when this process now plans."""
    with write(db):
        j = job_state(db, job_id)
        if j["status"] != JobStatus.RUNNING.value or j["planned_at"] is not None:
            return False
        if j["host"] == socket.gethostname() and j["pid"] and process_alive(int(j["pid"])):
            return False
        planner = value(
            db,
            "SELECT status FROM job_workers WHERE job_id = :job AND host = :host AND pid = :pid ORDER BY id DESC LIMIT 1",
            {"job": job_id, "host": j["host"], "pid": j["pid"]},
        )
        if j["host"] != socket.gethostname() and planner == JobStatus.RUNNING.value:
            return False
        return bool(
            run(
                db,
                "UPDATE prejudge_jobs SET pid = :pid, host = :host WHERE id = :id AND pid = :old_pid AND host = :old_host",
                {
                    "pid": os.getpid(),
                    "host": socket.gethostname(),
                    "id": job_id,
                    "old_pid": j["pid"],
                    "old_host": j["host"],
                },
            )
        )
