"""Shared pre-judging jobs: many worker processes, on one host or several, on one job, in flat memory.

``prejudge --join`` makes a process a worker of the shared job of its source and task: it starts the job when
none runs, joins it when one does (same model, prompt version and options), and resumes it when the job's
last worker stopped, failed or was killed before it was done. The first worker also *plans*: it reads the
task's items turn by turn in key order, renders and hashes each, leaves out what the source has answered,
notes the cached answers to copy, and queues the rest in the store (``job_items``), cut into blocks of
``block_size`` (:func:`store.jobs.queue_block`); nothing holds all items or all results in memory.

Every worker claims a block at a time under a lease (:func:`store.jobs.claim_block`), renewed by its heartbeat,
and keeps ``concurrency`` calls in flight across block boundaries (the next block is claimed once the current
one's requests are all sent). Answers are stored in groups (group commit: up to :data:`GROUP_SIZE`, or what
arrived within :data:`GROUP_WAIT_S`; always at a block's end and when the worker ends), each group in one
transaction with its items marked done, and only while the worker still holds the block
(:func:`store.jobs.mark_items`), so no item is stored twice; a killed worker's held answers are asked again. A worker that ends
(done, Ctrl-C, a failing endpoint) gives its claimed blocks back; a killed worker's blocks are claimed again
once their lease runs out, and the new holder asks only the items still open. While the store cannot be
reached (a database restart) a worker keeps its answers and tries again for :data:`STORE_RETRY_S` seconds.

The client is passed in (anything with ``complete(messages, max_tokens=...)``: one endpoint or a pool of them).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from assess.errors import AssessError
from assess.llm.clients import DEFAULT_CONCURRENCY, ChatClient, ClientError
from assess.services import jobs
from assess.tasks import PREJUDGE_TASKS, JobStatus
from store import jobs as store_jobs
from store import prejudgments
from store.conversations import turn_contexts
from store.db import StoreUnavailable, write

DEFAULT_BLOCK_SIZE = 200  # items per claimed block
MAX_BLOCK_SIZE = 100_000
STORE_RETRY_S = 60.0  # how long a worker keeps trying to reach the store before it gives up (exit 2)
HASHES_PER_QUERY = 500  # input hashes per cache lookup of the planner
GROUP_SIZE = 64  # results stored per transaction (group commit)
GROUP_WAIT_S = 0.2  # the longest a result waits for others to be stored with (checked as results arrive)

Start = Callable[[dict, int], "jobs.Progress | None"]


@dataclasses.dataclass(frozen=True)
class Scope:
    """What a run's options say about which items a task covers (as :func:`assess.services.jobs.plan` takes them)."""

    depth: int | None = None
    nugget_source: str | None = None
    qrels: str | None = None
    relevant: int = 2
    dedup: bool = False
    runs: tuple[str, ...] | None = None  # ntr: only these runs' non-empty responses (``nuggets match``)


def options_key(scope: Scope, *, limit: int | None, samples: int, temperature: float) -> str:
    """The options a shared job's item list depends on, as the text a joining worker must match."""
    return json.dumps(
        {**dataclasses.asdict(scope), "limit": limit, "samples": samples, "temperature": temperature}, sort_keys=True
    )


def lease_for(timeout: float | None, lease_s: float | None) -> float:
    """A block's lease: the one asked for (at least 1 s), else as long as a job may go without a heartbeat."""
    if lease_s is None:
        return jobs.stale_after_s(timeout)
    if not lease_s >= 1:
        raise AssessError(f"--lease is at least 1 second, not {lease_s:g}")
    return float(lease_s)


def _retrying(call: Callable[[], Any]) -> Any:
    """``call()``, tried again while the store cannot be reached, for up to :data:`STORE_RETRY_S` seconds."""
    deadline = time.monotonic() + STORE_RETRY_S
    pause = 0.2
    while True:
        try:
            return call()
        except StoreUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(pause)
            pause = min(2.0, pause * 2)


def run_shared(
    db,
    task: str,
    source: str,
    model: str,
    client: ChatClient,
    *,
    scope: Scope = Scope(),
    limit: int | None = None,
    samples: int = 1,
    temperature: float | None = None,
    variant: str | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    block_size: int = DEFAULT_BLOCK_SIZE,
    lease_s: float | None = None,
    base_url: str | None = None,
    start: Start | None = None,
    latency_s: float | None = None,
) -> dict:
    """Work on the shared job of ``source`` and ``task`` as one of its workers (start, join or resume it) until
    no block is left; the summary of what this worker did, with the job's figures.

    ``start(estimate, todo)`` is called once the job's estimate is known (after planning, for the planner);
    what it returns is the progress callback. Refused (:class:`AssessError`) while a job of one process runs
    for the pair, or a shared one with other options. A fatal reply or too many failed calls in a row end this
    worker 'failed' (:class:`ClientError`), Ctrl-C 'stopped'; either way its blocks go back to the job."""
    if task not in jobs.BY_TURN:
        raise AssessError(f"the {task} task's items are not read turn by turn: it runs in one process (no --join)")
    if isinstance(block_size, bool) or not isinstance(block_size, int) or not 1 <= block_size <= MAX_BLOCK_SIZE:
        raise AssessError(f"--block-size is a number of items from 1 to {MAX_BLOCK_SIZE:,}, not {block_size!r}")
    if concurrency < 1:
        raise AssessError(f"--concurrency is at least 1, not {concurrency}")
    lease = lease_for(getattr(client, "timeout", None), lease_s)
    prompt, version, max_tokens, settings, temperature_ = jobs.setup(
        db, task, source, model, limit=limit, samples=samples, temperature=temperature, variant=variant
    )
    sent = getattr(client, "temperature", temperature_)
    if (sent or 0) != temperature_:
        raise AssessError(
            f"the job is for temperature {temperature_:g} but the judge sends {sent}: answers would be cached "
            "under the wrong settings"
        )
    if scope.nugget_source is not None or task in ("ntr", "ntr-support", "importance"):
        scope = dataclasses.replace(scope, nugget_source=jobs.resolve_nugget_source(db, scope.nugget_source))
    prejudgments.ensure_llm_source(db, source, model, version)
    prejudgments.record_prompt(db, prompt.version, prompt.name, prompt.task, prompt.system, prompt.template)
    job_id, role = store_jobs.open_shared_job(
        db,
        source=source,
        task=task,
        model=model,
        prompt_version=version,
        options=options_key(scope, limit=limit, samples=samples, temperature=temperature_),
        base_url=base_url,
        concurrency=concurrency,
        lease_s=lease,
        block_size=block_size,
        stale_after_s=jobs.stale_after_s(getattr(client, "timeout", None)),
    )
    worker = store_jobs.add_worker(db, job_id)
    shell = jobs.Plan(task, source, model, version, prompt, [], [], 0, 0, 0, None, 0, max_tokens, samples, temperature_)
    tally = jobs.Tally(shell)
    work = _Worker(db, job_id, worker, tally, lease, concurrency, settings)
    every = max(0.2, min(store_jobs.HEARTBEAT_EVERY_S, lease / 4))
    status, message = JobStatus.DONE.value, ""
    try:
        with store_jobs.worker_heartbeat(db, job_id, worker, lease, every), _prompt_handover():
            job_ = store_jobs.shared_job(db, job_id)
            if role != "join" and job_["planned_at"] is None:
                work.plan(task, scope, limit)
            job_ = store_jobs.shared_job(db, job_id)
            tally.total = job_["planned"]
            estimate = _estimate(shell, job_, concurrency, latency_s, left_only=role != "start")
            work.progress = start(estimate, job_["planned"]) if start is not None else None
            work.run(client, task, scope, limit)
    except ClientError as exc:
        status, message = JobStatus.FAILED.value, str(exc)
        raise
    except BaseException as exc:
        status = JobStatus.STOPPED.value
        message = f"interrupted ({type(exc).__name__}) after {tally.done} results of this worker"
        raise
    finally:
        if not message:
            message = f"{tally.done} results stored"
        with contextlib.suppress(StoreUnavailable):  # unreachable for good: the job is reaped as interrupted
            work.ended = _retrying(lambda: store_jobs.finish_worker(db, job_id, worker, status, message))
    job_ = store_jobs.shared_job(db, job_id)
    tally.plan = dataclasses.replace(
        shell,
        covered=job_["already"] + job_["items"] + job_["deferred"],
        already=job_["already"],
        skipped=job_["skipped"],
        skipped_reason=PREJUDGE_TASKS[task].skipped if job_["skipped"] else None,
        deferred=job_["deferred"],
    )
    summary = tally.summary(job_id, job_["status"])
    return summary | {
        "worker": worker,
        "role": role,
        "covered": tally.plan.covered,
        "job_done": job_["done"],
        "job_planned": job_["planned"],
    }


SWITCH_INTERVAL_S = 0.0005  # how long a thread may keep the interpreter lock while another waits (Python: 5 ms)


@contextlib.contextmanager
def _prompt_handover() -> Iterator[None]:
    """Hand the interpreter lock over sooner while the worker runs (:data:`SWITCH_INTERVAL_S`).

    The worker's thread waits on the store and the clients' threads on the endpoint; each time one of them
    wakes, it waits for the lock until the thread holding it lets go, by default up to 5 ms. Against a fast
    endpoint the client threads always hold it, so every round trip of the worker's thread cost that much more:
    measured on 2 cores, a shorter interval made the worker about 1.5 times faster for the same CPU."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(min(before, SWITCH_INTERVAL_S))
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _estimate(shell: jobs.Plan, job_: dict, concurrency: int, latency_s: float | None, left_only: bool) -> dict:
    """The job's estimate from the counts its planner keeps on its row; for a worker joining or resuming it
    (``left_only``), what is left: the results stored so far count as judged, the calls and copies as still to
    make (their prompt characters in proportion)."""
    calls, copies, already, chars = job_["calls"], job_["planned"] - job_["calls"], job_["already"], job_["chars"]
    if left_only:
        asked = job_["done"] - job_["cached"]
        left = max(0, calls - asked)
        chars = chars * left // calls if calls else 0
        calls, copies, already = left, max(0, copies - job_["cached"]), already + job_["done"]
    plan_ = dataclasses.replace(
        shell,
        covered=job_["already"] + job_["items"] + job_["deferred"],
        already=already,
        skipped=job_["skipped"],
        skipped_reason=PREJUDGE_TASKS[shell.task].skipped if job_["skipped"] else None,
        deferred=job_["deferred"],
    )
    return jobs.estimate_counts(
        plan_,
        calls=calls,
        chars=chars,
        copies=copies,
        concurrency=concurrency,
        latency_s=latency_s,
    )


def _reader_options(scope: Scope) -> dict:
    options = dataclasses.asdict(scope)
    del options["runs"]
    return options


def _in_runs(raw: tuple, runs: tuple[str, ...] | None) -> bool:
    """Does an NtR item belong to a job restricted to ``runs`` (its run named, its response not empty)?"""
    if runs is None:
        return True
    turn_id, item_id, fields, *_ = raw
    return jobs.ntr_run(item_id) in runs and bool(fields["response"].strip())


class _Worker:
    """One process's part of a shared job: planning (when it is the planner) and the claimed blocks' calls."""

    def __init__(self, db, job_id: int, worker: int, tally: jobs.Tally, lease: float, concurrency: int, settings):
        self.db, self.job_id, self.worker, self.tally = db, job_id, worker, tally
        self.block_size = store_jobs.shared_job(db, job_id)["block_size"]
        self.lease, self.concurrency, self.settings = lease, concurrency, settings
        self.progress: jobs.Progress | None = None
        self.ended: str | None = None
        self.left: dict[int, int] = {}  # block -> items of it not settled yet
        self.lost: set[int] = set()  # blocks another worker took over: their results are dropped
        self.pending: list[tuple] = []  # results held for the next group commit: (seq, block, item, outcome, copied)
        self.pending_since = 0.0

    # ------------------------------------------------------------------------------------- planning

    def plan(self, task: str, scope: Scope, limit: int | None) -> None:
        """Queue the task's items (resuming after the items a planner before read): turn by turn, in key order."""
        db, p = self.db, self.tally.plan
        job_ = store_jobs.shared_job(db, self.job_id)
        seq, block = store_jobs.last_queued(db, self.job_id)
        counts = {k: job_[k] for k in ("scanned", "already", "skipped", "deferred", "items", "calls", "chars")}
        counts["planned"] = seq
        skip = counts["scanned"]
        buffer: list[tuple] = []
        contexts = turn_contexts(db)

        def flush(final: bool = False) -> None:
            nonlocal buffer, block
            if not buffer and not final:
                return
            totals = dict(counts)
            _retrying(
                lambda: store_jobs.queue_block(
                    db,
                    self.job_id,
                    block,
                    buffer,
                    planned=totals.pop("planned"),
                    items_queued=totals.pop("items"),
                    **totals,
                )
            )
            block += bool(buffer)
            buffer = []

        for turn in prejudgments.turn_order(db):
            raws = jobs.turn_items(db, task, contexts, turn, **_reader_options(scope))
            if skip >= len(raws):
                skip -= len(raws)
                continue
            raws, skip = raws[skip:], 0
            for first_of_chunk in range(0, len(raws), HASHES_PER_QUERY):  # a few hundred rendered at a time
                chunk = raws[first_of_chunk : first_of_chunk + HASHES_PER_QUERY]
                entries = []
                for raw in chunk:
                    if raw is None:
                        entries.append(None)
                        continue
                    if not _in_runs(raw, scope.runs):
                        entries.append(False)
                        continue
                    turn_id, item_id, fields, parse_ctx, label_ctx = raw
                    first = jobs.chat_item(p.prompt, self.settings, turn_id, item_id, fields, parse_ctx, label_ctx)
                    entries.append((raw, first))
                hashes = [e[1].input_hash for e in entries if e]
                answered = prejudgments.answered_among(db, p.source, p.task, p.model, p.prompt_version, hashes)
                cached = prejudgments.cached_among(db, p.model, p.prompt_version, hashes)
                for entry in entries:
                    counts["scanned"] += 1
                    if entry is None:
                        counts["skipped"] += 1
                        continue
                    if entry is False:  # another run's item, or an empty response: not this job's
                        continue
                    (turn_id, item_id, fields, parse_ctx, label_ctx), first = entry
                    h = first.input_hash
                    missing = [k for k in range(p.samples) if (turn_id, item_id, h, k) not in answered]
                    if not missing:
                        counts["already"] += 1
                        continue
                    if limit is not None and counts["items"] >= limit:
                        counts["deferred"] += 1
                        continue
                    counts["items"] += 1
                    inputs = json.dumps([fields, parse_ctx, label_ctx], ensure_ascii=False)
                    for k in missing:
                        source_id = cached.get((h, k))
                        if source_id is None:
                            counts["calls"] += 1
                            counts["chars"] += jobs.message_chars(first.messages)
                        buffer.append((counts["planned"], turn_id, item_id, k, h, inputs, source_id))
                        counts["planned"] += 1
                    if len(buffer) >= self.block_size:  # a block ends at an item's last answer
                        flush()
        flush(final=True)
        _retrying(lambda: store_jobs.finish_planning(db, self.job_id))

    # ------------------------------------------------------------------------------------- working

    def run(self, client: ChatClient, task: str, scope: Scope, limit: int | None) -> None:
        """Claim blocks and ask about their items until every block of the job is done (waiting, while others
        hold the last ones, in case their leases run out)."""
        pause = max(0.1, min(1.0, self.lease / 8))
        while True:
            claimed = _retrying(lambda: store_jobs.claim_block(self.db, self.job_id, self.worker, self.lease))
            if claimed is None:
                state = _retrying(lambda: store_jobs.job_state(self.db, self.job_id))
                self.tally.total = state["planned"]
                if state["status"] != JobStatus.RUNNING.value:
                    return
                if state["planned_at"] is not None and state["unfinished"] == 0:
                    return
                if state["planned_at"] is None and _retrying(
                    lambda: store_jobs.take_over_planning(self.db, self.job_id)
                ):
                    self.plan(task, scope, limit)
                    continue
                time.sleep(pause)
                continue
            requests = self._requests(claimed)
            try:
                for key, reply in jobs.ask_all(client, requests, self.tally, concurrency=self.concurrency):
                    self._store_reply(key, reply)
            finally:  # Ctrl-C, a failing endpoint: what arrived is stored
                if self.pending:
                    self.flush()

    def _requests(self, first: dict) -> Iterator[tuple]:
        """The calls of the claimed block, then of each next block claimed once this one's are all sent (never
        waiting: when no block is free, the calls end and :meth:`run` looks again once they are answered)."""
        claimed: dict | None = first
        p = self.tally.plan
        while claimed is not None:
            block = claimed["block"]
            items = _retrying(
                lambda c=claimed: store_jobs.open_items(self.db, self.job_id, c["first_seq"], c["last_seq"])
            )
            self.left[block] = len(items)
            if not items:
                self._settle(block)
            for row in items:
                if block in self.lost:
                    break
                fields, parse_ctx, label_ctx = json.loads(row["inputs"])
                item = jobs.chat_item(
                    p.prompt, self.settings, row["turn_id"], row["item_id"], fields, parse_ctx, label_ctx, row["sample"]
                )
                item = dataclasses.replace(item, input_hash=row["input_hash"])
                if row["cached_from"] is not None:
                    self._copy(row["seq"], block, item, row["cached_from"])
                    continue
                yield (row["seq"], block, item), item.messages, p.max_tokens
            tally = self.tally
            tally.total = max(tally.total, claimed["last_seq"] + 1)
            claimed = _retrying(lambda: store_jobs.claim_block(self.db, self.job_id, self.worker, self.lease))

    def _copy(self, seq: int, block: int, item: jobs.Item, answer_id: int) -> None:
        found = _retrying(lambda: prejudgments.answer(self.db, answer_id))
        outcome = jobs.copied_outcome(self.tally.plan, item, self.job_id, found)
        self._keep(seq, block, item, outcome, copied=True)

    def _store_reply(self, key: tuple, reply) -> None:
        seq, block, item = key
        p = self.tally.plan
        outcome = jobs.reply_outcome(
            p.prompt,
            item,
            reply,
            source=p.source,
            task=p.task,
            model=p.model,
            version=p.prompt_version,
            job_id=self.job_id,
        )
        self._keep(seq, block, item, outcome, copied=False)

    def _keep(self, seq: int, block: int, item: jobs.Item, outcome, *, copied: bool) -> None:
        """Hold a result for the next group commit; commit the group when it is full, when its first result
        has waited :data:`GROUP_WAIT_S`, or when the result is the last one its block waits for."""
        if not self.pending:
            self.pending_since = time.monotonic()
        self.pending.append((seq, block, item, outcome, copied))
        waiting = sum(1 for entry in self.pending if entry[1] == block)
        if (
            len(self.pending) >= GROUP_SIZE
            or waiting >= self.left.get(block, 0)
            or time.monotonic() - self.pending_since >= GROUP_WAIT_S
        ):
            self.flush()

    def flush(self) -> None:
        """Store the results held (those of blocks this worker still holds) with their items marked done, in one
        transaction; then count them and settle their blocks. Nothing is stored twice: an item already done, or
        whose block another worker took over, is left out inside the same transaction (:func:`store.jobs.mark_items`)."""
        group = [entry for entry in self.pending if entry[1] not in self.lost]

        def save() -> set[int]:
            with write(self.db):
                marks = [(seq, block, outcome.parse_status) for seq, block, _, outcome, _ in group]
                kept = store_jobs.mark_items(self.db, self.job_id, self.worker, marks) if marks else set()
                prejudgments.save_many(
                    self.db,
                    [(outcome, item.label_context) for seq, _, item, outcome, _ in group if seq in kept],
                )
                return kept

        kept = _retrying(save)
        entries, self.pending = self.pending, []
        # not kept: another worker took the block over, or a commit whose answer the connection lost went through
        for block in dict.fromkeys(block for seq, block, *_ in group if seq not in kept):
            if not _retrying(lambda b=block: store_jobs.holds_block(self.db, self.job_id, b, self.worker)):
                self.lost.add(block)
        for seq, block, _, outcome, copied in entries:
            if seq in kept:
                self.tally.counts[outcome.parse_status] += 1
                if copied:
                    self.tally.copied += 1
                else:
                    self.tally.asked += 1
            self._settle(block, count=True)

    def _settle(self, block: int, count: bool = False) -> None:
        if count:
            self.left[block] -= 1
            if self.progress is not None:
                self.progress(self.tally.done, self.tally.total, self.tally.counts)
        if self.left.get(block) == 0:
            del self.left[block]
            if block not in self.lost:
                _retrying(lambda: store_jobs.finish_block(self.db, self.job_id, block, self.worker))
