"""A pre-judging job over several endpoints: the pool from the command's ``--endpoint`` options, and its figures
recorded in the job as it runs (:mod:`store.endpoints`)."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
from collections.abc import Sequence

from assess.errors import AssessError
from assess.llm.clients import ClientConfigError
from assess.llm.endpoints import (
    EndpointPool,
    EndpointSpec,
    describe_figures,
    named_endpoint,
    named_endpoints,
    parse_endpoint,
)
from assess.llm.guard import redact_url
from assess.settings import llm_settings
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
    specs = [_spec(text) for text in endpoints]
    urls = [s.base_url for s in specs]
    repeated = sorted({u for u in urls if urls.count(u) > 1})
    if repeated:
        raise AssessError(
            f"--endpoint names {redact_url(repeated[0])} twice: give each endpoint once, with its concurrency"
        )
    return EndpointPool(
        model,
        specs,
        default_concurrency=concurrency,
        timeout=timeout,
        retries=retries,
        temperature=temperature,
        default_key=default_key,
    )


def _spec(text: str) -> EndpointSpec:
    """An ``--endpoint`` text: ``URL[,options]``, or the name of an endpoint the deployment allows
    (``default`` or one of ASSESS_LLM_ENDPOINTS) with options of its own (``gpu1,concurrency=8``)."""
    head, _, rest = text.partition(",")
    if "://" in head:
        return parse_endpoint(text)
    named = named_endpoint(head.strip()).spec
    if not rest:
        return named
    given = parse_endpoint(f"{named.base_url},{rest}")
    return dataclasses.replace(
        named,
        key_env=given.key_env or named.key_env,
        concurrency=given.concurrency or named.concurrency,
        pause_s=named.pause_s if given.pause_s is None else given.pause_s,
    )


def allowed_endpoints() -> list[dict]:
    """The endpoints the deployment allows (the /llm page offers only these): name, base URL (without
    ``user:password@``) and where its key comes from. ClientConfigError on a malformed ASSESS_LLM_ENDPOINTS."""
    return [{"name": e.name, "base URL": e.shown_url, "key": e.key_source} for e in named_endpoints()]


def endpoint_config(name: str, model: str | None) -> dict:
    """The settings of a job on the allowed endpoint ``name`` (:func:`allowed_endpoints`): base URL, model, key
    and the endpoint's name. Any other name (a URL typed in) is refused with one line, before any call; the
    server's key goes only to the deployment's own endpoint (``default``)."""

    model = model or llm_settings()["model"]
    if not model:
        raise ClientConfigError("no LLM model given: name the model (or set ASSESS_LLM_MODEL)")
    endpoint = named_endpoint((name or "").strip())
    return {"base_url": endpoint.spec.base_url, "model": model, "api_key": endpoint.key(), "endpoint": endpoint.name}


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
