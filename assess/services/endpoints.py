"""A pre-judging job over several endpoints: the pool from the command's ``--endpoint`` options, and its figures
recorded in the job as it runs (:mod:`store.endpoints`)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Sequence

from assess.errors import AssessError
from assess.llm.endpoints import EndpointPool, describe_figures, parse_endpoint
from store import endpoints as store_endpoints

SAVE_EVERY_S = 5.0  # how often a running job's endpoint figures are written (and once at its end)


def build_pool(
    model: str,
    endpoints: Sequence[str],
    *,
    concurrency: int,
    timeout: float,
    retries: int,
    temperature: float | None,
    default_key: str | None = None,
) -> EndpointPool:
    """The pool of the ``--endpoint`` texts (see :func:`assess.llm.endpoints.parse_endpoint`); ``concurrency`` is the
    limit of an endpoint that states none."""
    specs = [parse_endpoint(text) for text in endpoints]
    urls = [s.base_url for s in specs]
    repeated = sorted({u for u in urls if urls.count(u) > 1})
    if repeated:
        raise AssessError(f"--endpoint names {repeated[0]} twice: give each endpoint once, with its concurrency")
    return EndpointPool(
        model,
        specs,
        default_concurrency=concurrency,
        timeout=timeout,
        retries=retries,
        temperature=temperature,
        default_key=default_key,
    )


class FigureRecorder:
    """Writes a pool's figures into its job: at most every :data:`SAVE_EVERY_S` seconds while it runs (called from
    the thread that stores results), and once more at the end."""

    def __init__(self, db, job_id: int, pool, every: float = SAVE_EVERY_S):
        self.db, self.job_id, self.pool, self.every = db, job_id, pool, every
        self.last = time.monotonic()
        self.save()

    def maybe_save(self) -> None:
        if time.monotonic() - self.last >= self.every:
            self.save()

    def save(self) -> None:
        store_endpoints.save_figures(self.db, self.job_id, self.pool.figures())
        self.last = time.monotonic()

    def finish(self) -> None:
        """The last save, in the runner's ``finally``: when the job is ending on an exception (the store gone, an
        interrupt), a failed save gives way to that exception, the one to report."""
        if sys.exc_info()[0] is None:
            self.save()
            return
        with contextlib.suppress(Exception):
            self.save()


def recorder_for(db, job_id: int, client) -> FigureRecorder | None:
    """A :class:`FigureRecorder` when ``client`` is a pool (it has figures), else None."""
    return FigureRecorder(db, job_id, client) if callable(getattr(client, "figures", None)) else None


def job_figures(db, job_ids) -> dict[int, list[dict]]:
    """The endpoint figures of the jobs that have any, by job."""
    return store_endpoints.figures(db, job_ids)


def describe(figures: dict) -> str:
    """One endpoint's figures as a line for people."""
    return describe_figures(figures)


def figure_rows(db, job_ids) -> list[dict]:
    """One flat row per (job, endpoint) of the jobs that have endpoint figures, newest job first: a table for the
    LLM page."""
    found = job_figures(db, job_ids)
    out = []
    for job_id in sorted(found, reverse=True):
        for f in found[job_id]:
            out.append(
                {
                    "job": job_id,
                    "endpoint": f["position"],
                    "base URL": f["base_url"],
                    "concurrency": f["concurrency"],
                    "calls": f["requests"],
                    "answered": f["ok"],
                    "failed": f["failed"],
                    "p50 ms": f["p50_ms"],
                    "p95 ms": f["p95_ms"],
                    "pauses": f["pauses"],
                    "paused s": f["paused_s"],
                    "last error": f["last_error"] if f["failed"] else None,
                }
            )
    return out
