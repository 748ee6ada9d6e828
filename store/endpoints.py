"""The figures of each endpoint a pre-judging job sent its calls to (``prejudge_job_endpoints``).

A job spread over several endpoints rewrites its rows as it runs (:func:`save_figures`, one transaction for
all of them); the job listings read them back per job (:func:`figures`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from assess.llm.guard import redact
from store.db import Store, now, rows, run_many, write

_COLUMNS = (
    "job_id",
    "position",
    "base_url",
    "concurrency",
    "requests",
    "ok",
    "failed",
    "p50_ms",
    "p95_ms",
    "pauses",
    "paused_s",
    "paused",
    "last_error",
    "updated_at",
)


def save_figures(db: Store, job_id: int, figures: list[dict]) -> None:
    """Record (or bring up to date) the figures of every endpoint of job ``job_id``, in one transaction.

    Each figure has ``position`` (from 1), ``base_url``, ``concurrency``, ``requests``, ``ok``, ``failed``,
    ``p50_ms``, ``p95_ms``, ``pauses``, ``paused_s``, ``paused`` (a list) and ``last_error``."""
    if not figures:
        return
    stamp = now()
    values = [
        {
            **{c: f.get(c) for c in _COLUMNS[2:-1]},
            "job_id": job_id,
            "position": int(f["position"]),
            "base_url": redact(f.get("base_url")),
            "last_error": redact(f.get("last_error")),
            "paused": json.dumps([[*p[:2], redact(p[2])] if len(p) > 2 else p for p in f.get("paused") or []]),
            "paused_s": float(f.get("paused_s") or 0),
            "updated_at": stamp,
        }
        for f in figures
    ]
    updates = ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS[2:])
    with write(db):
        run_many(
            db,
            f"INSERT INTO prejudge_job_endpoints ({', '.join(_COLUMNS)}) "
            f"VALUES ({', '.join(':' + c for c in _COLUMNS)}) "
            f"ON CONFLICT (job_id, position) DO UPDATE SET {updates}",
            values,
        )


def figures(db: Store, job_ids: Iterable[int]) -> dict[int, list[dict]]:
    """The endpoint figures of each of ``job_ids`` that has any, by job, in the endpoints' order."""
    wanted = sorted({int(j) for j in job_ids})
    if not wanted:
        return {}
    found: dict[int, list[dict]] = {}
    for r in rows(
        db,
        f"SELECT {', '.join(_COLUMNS)} FROM prejudge_job_endpoints WHERE job_id >= :low AND job_id <= :high "
        "ORDER BY job_id, position",
        {"low": wanted[0], "high": wanted[-1]},
    ):
        if r["job_id"] in wanted:
            paused = json.loads(r["paused"]) if r["paused"] else []
            r["paused"] = [[*p[:2], redact(p[2])] if isinstance(p, list) and len(p) > 2 else p for p in paused]
            r["base_url"], r["last_error"] = redact(r["base_url"]), redact(r["last_error"])
            found.setdefault(r["job_id"], []).append(r)
    return found
