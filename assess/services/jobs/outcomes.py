"""What becomes of an answer: a job's tally, one reply or failed call as the store keeps it, and a cached answer
copied instead of asking again (the one place a copy is written)."""

from __future__ import annotations

import time

from assess.llm.clients import (
    ClientError,
    Reply,
)
from assess.llm.prompts import Prompt
from assess.services.jobs.items import Item
from assess.services.jobs.planning import Plan
from assess.tasks import (
    ParseStatus,
)
from store import prejudgments

MAX_CONSECUTIVE_ERRORS = 10  # a run stops (as failed) after this many failed calls in a row


class Tally:
    """What a running job has done so far: answers by parse status, calls, tokens and failed calls in a row."""

    def __init__(self, plan_: Plan):
        self.plan = plan_
        self.counts = {status.value: 0 for status in ParseStatus}
        self.asked = self.copied = self.calls = self.matched = self.tokens_in = self.tokens_out = 0
        self.consecutive_errors = 0
        self.last_error: str | None = None
        self.start = time.perf_counter()
        self.total = plan_.todo  # a shared job's worker: the job's items, queued by its planner

    @property
    def done(self) -> int:
        return self.asked + self.copied

    def replied(self, reply: Reply) -> None:
        """Count one call's reply (its tokens, and the failed calls in a row it ends or extends)."""
        self.calls += 1
        self.tokens_in += reply.prompt_tokens or 0
        self.tokens_out += reply.completion_tokens or 0
        if reply.ok:
            self.consecutive_errors = 0
        else:
            self.consecutive_errors += 1
            self.last_error = reply.error

    def check(self, reply: Reply) -> None:
        """Stop the run (:class:`ClientError`) after a fatal reply or :data:`MAX_CONSECUTIVE_ERRORS` failed calls in
        a row."""
        total = self.total
        if reply.fatal:
            raise ClientError(f"{self.plan.model}: {reply.error}; stopped after {self.done} of {total} items")
        if self.consecutive_errors >= MAX_CONSECUTIVE_ERRORS:
            raise ClientError(
                f"{MAX_CONSECUTIVE_ERRORS} calls in a row failed (last: {reply.error}); "
                f"stopped after {self.done} of {total} items, run again to resume"
            )

    def summary(self, job_id: int, status: str) -> dict:
        seconds = time.perf_counter() - self.start
        return {
            "job": job_id,
            "status": status,
            "task": self.plan.task,
            "source": self.plan.source,
            "model": self.plan.model,
            "prompt_version": self.plan.prompt_version,
            "planned": self.total,
            "asked": self.asked,
            "copied": self.copied,
            **self.counts,
            "already": self.plan.already,
            "skipped": self.plan.skipped,
            "skipped_reason": self.plan.skipped_reason,
            "deferred": self.plan.deferred,
            "samples": self.plan.samples,
            "temperature": self.plan.temperature,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "seconds": round(seconds, 3),
            "items_per_s": round(self.asked / seconds, 2) if seconds > 0 else None,
            "last_error": self.last_error,
        }


def outcome_of(
    plan_: Plan, item: Item, job_id: int, raw_output: str | None, status: str, **fields
) -> prejudgments.Prejudgment:
    """One answer (or failed call) about ``item`` in a job of ``plan_``, as the store keeps it."""
    return prejudgments.Prejudgment(
        plan_.source,
        plan_.task,
        item.turn_id,
        item.item_id,
        plan_.model,
        plan_.prompt_version,
        item.input_hash,
        raw_output,
        status,
        job_id=job_id,
        sample=item.sample,
        **fields,
    )


def reply_outcome(
    prompt: Prompt, item: Item, reply: Reply, *, source: str, task: str, model: str, version: str, job_id=None
) -> prejudgments.Prejudgment:
    """One call's reply about ``item`` as the store keeps it: parsed by ``prompt`` when the call succeeded,
    an 'error' outcome with the reason when it failed."""
    if reply.ok:
        status, value, note = prompt.parse(reply.text, **item.parse_context)
    else:
        status, value, note = ParseStatus.ERROR, None, None
    return prejudgments.Prejudgment(
        source,
        task,
        item.turn_id,
        item.item_id,
        model,
        version,
        item.input_hash,
        reply.text if reply.ok else None,
        status,
        parsed=value,
        note=note,
        error=reply.error,
        latency_ms=reply.latency_ms,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        attempts=reply.attempts,
        job_id=job_id,
        sample=item.sample,
    )


def planned_outcome(plan_: Plan, item: Item, reply: Reply, job_id: int) -> prejudgments.Prejudgment:
    """:func:`reply_outcome` for an item of a job of ``plan_`` (its prompt, source, task, model and version)."""
    p = plan_
    return reply_outcome(
        p.prompt, item, reply, source=p.source, task=p.task, model=p.model, version=p.prompt_version, job_id=job_id
    )


def store_result(db, plan_: Plan, item: Item, reply: Reply, job_id: int, tally: Tally) -> None:
    """Store one call's reply about ``item`` (parsed, or the failed call), counted in ``tally``."""
    outcome = planned_outcome(plan_, item, reply, job_id)
    prejudgments.save(db, outcome, label_context=item.label_context)
    tally.counts[outcome.parse_status] += 1
    tally.asked += 1


def store_copy(db, plan_: Plan, item: Item, row: dict, job_id: int, tally: Tally) -> None:
    """Store another source's answer to the same model, prompt and input as ``item``'s (no call), counted in
    ``tally``: the first step of every run, live or from a batch file (:mod:`assess.services.batch_files`)."""
    prejudgments.save(db, copied_outcome(plan_, item, job_id, row), label_context=item.label_context)
    tally.counts[row["parse_status"]] += 1
    tally.copied += 1


def copied_outcome(plan_: Plan, item: Item, job_id: int, answer: dict) -> prejudgments.Prejudgment:
    """An earlier answer (:func:`store.prejudgments.answer`) copied for ``item`` instead of asking again."""
    return outcome_of(
        plan_,
        item,
        job_id,
        answer["raw_output"],
        answer["parse_status"],
        parsed=answer["parsed"],
        note=answer["note"],
        latency_ms=0,
        attempts=0,
        cached_from=answer["id"],
    )
