"""The one job runner: a job's record and heartbeat, bounded concurrent calls, stop rules, progress and NLI
batches."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterable
from typing import Any

from assess.errors import AssessError
from assess.llm.clients import (
    DEFAULT_CONCURRENCY,
    DEFAULT_TIMEOUT,
    ChatClient,
    ClientError,
    NliClient,
    OpenAIClient,
    complete_all,
)
from assess.services import endpoints as endpoint_figures
from assess.services.jobs.outcomes import Tally, outcome_of, store_copy, store_result
from assess.services.jobs.planning import Plan, check_not_running
from assess.tasks import (
    JobStatus,
    ParseStatus,
)
from store import jobs as store_jobs
from store import prejudgments

Progress = Callable[[int, int, dict], None]


def begin(db, plan_: Plan, *, base_url: str | None, concurrency: int, stale_after_s: float) -> int:
    """Record the source (and the prompt a chat run asks with) and start the job of ``plan_``; refused while a
    live job of the same source and task runs."""
    check_not_running(db, plan_.source, plan_.task)
    prejudgments.ensure_llm_source(db, plan_.source, plan_.model, plan_.prompt_version)
    if plan_.prompt is not None:
        p = plan_.prompt
        prejudgments.record_prompt(db, p.version, p.name, p.task, p.system, p.template)
    return store_jobs.start_job(
        db,
        source=plan_.source,
        task=plan_.task,
        model=plan_.model,
        prompt_version=plan_.prompt_version,
        base_url=base_url,
        concurrency=concurrency,
        planned=plan_.todo,
        skipped=plan_.skipped,
        stale_after_s=stale_after_s,
    )


def run_job(db, job_id: int, tally: Tally, work: Callable[[], None], *, note: str = "") -> None:
    """Do ``work`` as job ``job_id`` under its heartbeat and record how it ended (``note`` appended to the record).

    A :class:`ClientError` ends the job 'failed', any other exception (Ctrl-C, a Streamlit rerun) 'stopped'; both
    propagate, and every result stored before stays for the next run to resume from."""
    total = tally.plan.todo
    try:
        with store_jobs.heartbeat(db, job_id):
            work()
    except ClientError as exc:
        store_jobs.finish_job(db, job_id, JobStatus.FAILED, f"{exc}{note}")
        raise
    except BaseException as exc:
        store_jobs.finish_job(
            db, job_id, JobStatus.STOPPED, f"interrupted ({type(exc).__name__}) after {tally.done} of {total}{note}"
        )
        raise
    store_jobs.finish_job(db, job_id, JobStatus.DONE, f"{tally.done} of {total} stored{note}")


def ask_all(
    client: ChatClient, requests: Iterable[tuple], tally: Tally, *, concurrency: int, idle: float | None = None
):
    """The (key, reply) of every request (key, messages, max tokens), ``concurrency`` calls at a time, each reply
    counted; once the caller has stored a reply, a fatal one or too many failures in a row stop the run
    (:meth:`Tally.check`). With ``idle``, ``(None, None)`` whenever no reply came for that long
    (:func:`assess.llm.clients.complete_all`)."""
    with contextlib.closing(complete_all(client, requests, concurrency=concurrency, idle=idle)) as replies:
        for key, reply in replies:
            if key is None:
                yield None, None
                continue
            tally.replied(reply)
            yield key, reply
            tally.check(reply)


def stale_after_s(timeout: float | None) -> float:
    """How long a job may go without a heartbeat before it counts as killed: 2 × the call timeout, at least
    :data:`store.jobs.MIN_STALE_S`."""
    return max(store_jobs.MIN_STALE_S, 2 * (timeout or DEFAULT_TIMEOUT))


def run(
    db,
    plan_: Plan,
    client: ChatClient,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    progress: Progress | None = None,
    base_url: str | None = None,
) -> dict:
    """Ask ``client`` about every planned item, ``concurrency`` calls at a time, storing each result as it arrives.

    A fatal reply (bad key, unknown model) or :data:`MAX_CONSECUTIVE_ERRORS` failed calls in a row stop
    the run (job 'failed', :class:`ClientError`); an interrupt (Ctrl-C, a Streamlit rerun) marks it
    'stopped' and propagates. Either way every stored result stays, and the next run resumes. A kill
    leaves the job 'running' until its heartbeat stops and the next start or job listing marks it
    'interrupted'. Refused (:class:`AssessError`) while a live job of the same source and task runs.
    """
    if plan_.prompt is None:
        raise AssessError("this plan is for the NLI backend: use run_nli")
    sent = getattr(client, "temperature", plan_.temperature)
    if (sent or 0) != plan_.temperature:
        raise AssessError(
            f"the plan is for temperature {plan_.temperature:g} but the judge sends {sent}: answers would be cached "
            "under the wrong settings"
        )
    job_id = begin(
        db,
        plan_,
        base_url=base_url,
        concurrency=concurrency,
        stale_after_s=stale_after_s(getattr(client, "timeout", None)),
    )
    tally = Tally(plan_)
    total = plan_.todo
    figures = endpoint_figures.recorder_for(db, job_id, client)  # a pool of endpoints: its figures in the job

    def tick():
        if figures is not None:
            figures.maybe_save()
        if progress is not None:
            progress(tally.done, total, tally.counts)

    def work():
        tick()
        for item, row in plan_.copies:
            store_copy(db, plan_, item, row, job_id, tally)
            tick()
        requests = ((item, item.messages, plan_.max_tokens) for item in plan_.items)
        for item, reply in ask_all(client, requests, tally, concurrency=concurrency):
            store_result(db, plan_, item, reply, job_id, tally)
            tick()

    try:
        run_job(db, job_id, tally, work, note=f"; {plan_.settings_text}")
    finally:
        if figures is not None:
            figures.finish()
    return tally.summary(job_id, JobStatus.DONE.value)


def nli_batches(items: list, nli: NliClient, pairs: Callable[[Any], list[tuple[str, str]]], per_batch: int):
    """Score the (premise, hypothesis) pairs of ``items`` with a local NLI model, a batch of items at a time (closed
    once it holds ``per_batch`` pairs): (the batch, its pairs' P(entailment) in order, milliseconds per pair)."""
    batch: list = []
    size = 0
    for it in items:
        batch.append(it)
        size += len(pairs(it))
        if size >= per_batch:
            yield _nli_scored(batch, nli, pairs)
            batch, size = [], 0
    if batch:
        yield _nli_scored(batch, nli, pairs)


def _nli_scored(batch: list, nli: NliClient, pairs: Callable[[Any], list[tuple[str, str]]]):
    found = [pair for it in batch for pair in pairs(it)]
    start = time.perf_counter()
    probs = nli.entailment(found) if found else []
    return batch, probs, int(round((time.perf_counter() - start) * 1000 / max(1, len(found))))


def run_nli(db, plan_: Plan, nli: NliClient, *, threshold: float = 0.5, progress: Progress | None = None) -> dict:
    """Score a planned NtR run with a local NLI model (premise = response, hypothesis = nugget), in batches;
    each result is stored in its own transaction as its batch finishes."""
    job_id = begin(db, plan_, base_url=None, concurrency=nli.batch_size, stale_after_s=store_jobs.MIN_STALE_S)
    tally = Tally(plan_)
    total = plan_.todo

    def work():
        for item, row in plan_.copies:
            store_copy(db, plan_, item, row, job_id, tally)
        pairs = lambda it: [(it.messages[0], it.messages[1])]  # noqa: E731
        for batch, probs, each in nli_batches(plan_.items, nli, pairs, nli.batch_size):
            for it, p in zip(batch, probs):
                raw = json.dumps({"entailment": round(p, 6)})
                outcome = outcome_of(
                    plan_, it, job_id, raw, ParseStatus.OK, parsed=int(p >= threshold), latency_ms=each, attempts=1
                )
                prejudgments.save(db, outcome)
                tally.counts[ParseStatus.OK] += 1
                tally.asked += 1
            if progress is not None:
                progress(tally.done, total, tally.counts)

    run_job(db, job_id, tally, work)
    return tally.summary(job_id, JobStatus.DONE.value)


def run_with_settings(
    db,
    plan_: Plan,
    cfg: dict,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    progress: Progress | None = None,
    **client_options,
) -> dict:
    """Run a plan against the endpoint of :func:`prepare` (an :class:`~assess.llm.clients.OpenAIClient`)."""
    client_options.setdefault("temperature", plan_.temperature)
    client = OpenAIClient(cfg["model"], base_url=cfg["base_url"], api_key=cfg["api_key"], **client_options)
    return run(db, plan_, client, concurrency=concurrency, progress=progress, base_url=cfg["base_url"])
