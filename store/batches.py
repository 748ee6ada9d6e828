"""Provider batches of a shared job (``prejudge --batch-submit``): what was sent where, and what came back.

A row of ``provider_batches`` is one batch at a provider: a range of a block's item numbers whose open items made
its input, the ids the provider gave, its last known state and counts. Rows are written before anything is sent
(state ``preparing``) and after every answer of the provider, so a process started again after a kill knows which
batches exist and polls them instead of sending their items twice.
"""

from __future__ import annotations

from collections.abc import Sequence

from store.db import Store, db_clock, rows, run, write

COLUMNS = (
    "id", "job_id", "block", "round", "part", "first_seq", "last_seq", "provider", "state", "requests", "bytes",
    "input_file_id", "remote_id", "output_file_id", "error_file_id", "succeeded", "failed", "created_at",
    "submitted_at", "polled_at", "ended_at", "message",
)  # fmt: skip
_SELECT = f"SELECT {', '.join(COLUMNS)} FROM provider_batches"
_UPDATABLE = {
    "state", "input_file_id", "remote_id", "output_file_id", "error_file_id", "succeeded", "failed", "submitted_at",
    "polled_at", "ended_at", "message",
}  # fmt: skip
STORED = "stored"  # its results stored: nothing more to do with it
PREPARING = "preparing"  # recorded, its input not accepted by the provider yet


def add_parts(db: Store, job_id: int, block: int, round_: int, provider: str, parts: Sequence[tuple]) -> None:
    """Record a round of a block's batches, ``(part, first_seq, last_seq, requests, bytes)`` each, in one
    transaction, before any is sent."""
    stamp = db_clock(db)
    with write(db):
        for part, first, last, requests, size in parts:
            run(
                db,
                "INSERT INTO provider_batches (job_id, block, round, part, first_seq, last_seq, provider, state, "
                "requests, bytes, created_at) VALUES (:job, :block, :round, :part, :first, :last, :provider, "
                ":state, :requests, :bytes, :at)",
                {
                    "job": job_id, "block": block, "round": round_, "part": part, "first": first, "last": last,
                    "provider": provider, "state": PREPARING, "requests": requests, "bytes": size, "at": stamp,
                },
            )  # fmt: skip


def of_block(db: Store, job_id: int, block: int) -> list[dict]:
    """The block's batches, by round and part."""
    return rows(
        db, f"{_SELECT} WHERE job_id = :job AND block = :block ORDER BY round, part", {"job": job_id, "block": block}
    )


def of_jobs(db: Store, job_ids: Sequence[int]) -> list[dict]:
    """The batches of the jobs among ``job_ids``, newest job first, then by block, round and part."""
    if not job_ids:
        return []
    names = {f"j{i}": int(j) for i, j in enumerate(job_ids)}
    return rows(
        db,
        f"{_SELECT} WHERE job_id IN ({', '.join(':' + n for n in names)}) ORDER BY job_id DESC, block, round, part",
        names,
    )


def update(db: Store, batch_id: int, **fields) -> None:
    """Set columns of a batch (its state, ids, counts), in a transaction of its own; ``polled_at`` is now."""
    unknown = set(fields) - _UPDATABLE
    if unknown:
        raise ValueError(f"not a column of provider_batches one may set: {sorted(unknown)}")
    fields = {"polled_at": db_clock(db)} | fields
    sets = ", ".join(f"{name} = :{name}" for name in fields)
    with write(db):
        run(db, f"UPDATE provider_batches SET {sets} WHERE id = :id", fields | {"id": batch_id})


def now(db: Store) -> str:
    return db_clock(db)


def open_items(db: Store, job_id: int, first_seq: int, last_seq: int, *, after: int = -1, limit: int = 1000) -> list:
    """Up to ``limit`` open items numbered from ``after + 1`` to ``last_seq`` (``first_seq`` at least), in order:
    {seq, turn_id, item_id, sample, input_hash, inputs, cached_from}; a page at a time keeps memory flat."""
    return rows(
        db,
        "SELECT seq, turn_id, item_id, sample, input_hash, inputs, cached_from FROM job_items WHERE job_id = :job "
        "AND seq BETWEEN :first AND :last AND state = 'open' ORDER BY seq LIMIT :limit",
        {"job": job_id, "first": max(first_seq, after + 1), "last": last_seq, "limit": int(limit)},
    )


def items_by_seq(db: Store, job_id: int, seqs: Sequence[int]) -> dict[int, dict]:
    """The items numbered ``seqs`` of the job (any state), by number."""
    if not seqs:
        return {}
    names = {f"s{i}": int(s) for i, s in enumerate(seqs)}
    found = rows(
        db,
        "SELECT seq, turn_id, item_id, sample, input_hash, inputs, cached_from, state FROM job_items WHERE "
        f"job_id = :job AND seq IN ({', '.join(':' + n for n in names)})",
        names | {"job": job_id},
    )
    return {r["seq"]: r for r in found}


def count_open(db: Store, job_id: int, first_seq: int, last_seq: int) -> int:
    found = rows(
        db,
        "SELECT COUNT(*) AS n FROM job_items WHERE job_id = :job AND seq BETWEEN :first AND :last AND state = 'open'",
        {"job": job_id, "first": first_seq, "last": last_seq},
    )
    return int(found[0]["n"])
