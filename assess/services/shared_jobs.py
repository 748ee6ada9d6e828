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
(:func:`store.jobs.mark_items`), so no item is stored twice. A worker that ends (done, Ctrl-C, a failing
endpoint) stores what arrived and gives its claimed blocks back; a killed worker's blocks are claimed again
once their lease runs out, and the new holder asks only the items still open (the answers it held too). While the store cannot be
reached (a database restart) a worker keeps its answers and tries again for :data:`STORE_RETRY_S` seconds.

What a job's items are is a :class:`JobItems`: how the planner reads them (in key order) and how a worker asks
about one (one call, or several: an NtN item asks once per extracted nugget) and stores its answer.
:func:`run_shared` works on a ``prejudge`` task's items (:class:`PrejudgeItems`); ``nuggets match --method ntn
--join`` passes its own (:class:`assess.services.matching.NtnItems`) to :func:`work_on`, the one runner.

The client is passed in (anything with ``complete(messages, max_tokens=...)``: one endpoint or a pool of them).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

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
GROUP_WAIT_S = 0.2  # the longest a result waits for others to be stored with (about: checked as results arrive
# and whenever none has arrived for this long)

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


@dataclasses.dataclass(frozen=True)
class Queued:
    """One item as the planner reads it: its key, its input's hash (the cache key with model and prompt version),
    the inputs a worker asks from (JSON text, kept on the queue while the item is open) and the characters of
    the calls it makes (the estimate's)."""

    turn_id: str
    item_id: str
    input_hash: str
    inputs: str
    chars: int


class JobItems(Protocol):
    """What a shared job's items are: how its planner reads them and how a worker asks about one and stores it.

    ``shell`` is the job's plan without items (task, source, model, prompt version, the prompt when there is one,
    ``skipped_reason`` for the items left out); ``options`` what the item list depends on, as the text a joining
    worker must match."""

    shell: jobs.Plan
    options: str

    def chunks(self, skip: int) -> Iterator[list[Queued | bool | None]]:
        """The items in key order after the first ``skip`` read, a few hundred at a time: a :class:`Queued`; None for
        an item left out (counted as skipped); False for one that is not this job's (not counted)."""
        ...

    def calls(self, row: dict) -> tuple[Any, list[tuple[list, int | None]]]:
        """The item of a queued row (:func:`store.jobs.open_items`) and its calls, ``(messages, max tokens)`` each
        (none: the answer is known without asking)."""
        ...

    def outcome(self, item: Any, replies: list, job_id: int) -> prejudgments.Prejudgment:
        """The answer to store from the replies to the item's calls, in their order."""
        ...

    def copied(self, item: Any, answer: dict, job_id: int) -> prejudgments.Prejudgment:
        """The answer to store copied from an earlier one (:func:`store.prejudgments.answer`)."""
        ...

    def save_all(self, db, results: list[tuple[Any, prejudgments.Prejudgment]]) -> None:
        """Store the answers, ``(item, answer)`` each in order, and what goes with them (labels), in the caller's
        transaction (a worker's group commit)."""
        ...

    def stored(self, outcome: prejudgments.Prejudgment) -> None:
        """Count what a summary tells beyond parse statuses (NtN: the gold nuggets matched): ``outcome`` was stored."""
        ...


class PrejudgeItems:
    """The items of a ``prejudge`` task read turn by turn (:func:`assess.services.jobs.turn_items`), one call each."""

    def __init__(self, db, shell: jobs.Plan, scope: Scope, settings: dict, options: str):
        self.db, self.shell, self.scope, self.settings, self.options = db, shell, scope, settings, options

    def chunks(self, skip: int) -> Iterator[list[Queued | bool | None]]:
        contexts = turn_contexts(self.db)
        for turn in prejudgments.turn_order(self.db):
            raws = jobs.turn_items(self.db, self.shell.task, contexts, turn, **_reader_options(self.scope))
            if skip >= len(raws):  # read by a planner before: not rendered again
                skip -= len(raws)
                continue
            raws, skip = raws[skip:], 0
            for first in range(0, len(raws), HASHES_PER_QUERY):  # a few hundred rendered at a time
                yield [self._queued(raw) for raw in raws[first : first + HASHES_PER_QUERY]]

    def _queued(self, raw: tuple | None) -> Queued | bool | None:
        if raw is None or not _in_runs(self.shell.task, raw, self.scope.runs):
            return None if raw is None else False  # False: another run's item, or an empty response
        turn_id, item_id, fields, parse_ctx, label_ctx = raw
        first = jobs.chat_item(self.shell.prompt, self.settings, turn_id, item_id, fields, parse_ctx, label_ctx)
        inputs = json.dumps([fields, parse_ctx, label_ctx], ensure_ascii=False)
        return Queued(turn_id, item_id, first.input_hash, inputs, jobs.message_chars(first.messages))

    def calls(self, row: dict) -> tuple[jobs.Item, list[tuple[list, int | None]]]:
        fields, parse_ctx, label_ctx = json.loads(row["inputs"])
        item = jobs.chat_item(
            self.shell.prompt,
            self.settings,
            row["turn_id"],
            row["item_id"],
            fields,
            parse_ctx,
            label_ctx,
            row["sample"],
        )
        item = dataclasses.replace(item, input_hash=row["input_hash"])
        return item, [(item.messages, self.shell.max_tokens)]

    def outcome(self, item: jobs.Item, replies: list, job_id: int) -> prejudgments.Prejudgment:
        [reply] = replies
        return jobs.planned_outcome(self.shell, item, reply, job_id)

    def copied(self, item: jobs.Item, answer: dict, job_id: int) -> prejudgments.Prejudgment:
        return jobs.copied_outcome(self.shell, item, job_id, answer)

    def save_all(self, db, results: list[tuple[jobs.Item, prejudgments.Prejudgment]]) -> None:
        prejudgments.save_many(db, [(outcome, item.label_context) for item, outcome in results])

    def stored(self, outcome: prejudgments.Prejudgment) -> None:
        pass


def _check_sizes(block_size: int, concurrency: int) -> None:
    if isinstance(block_size, bool) or not isinstance(block_size, int) or not 1 <= block_size <= MAX_BLOCK_SIZE:
        raise AssessError(f"--block-size is a number of items from 1 to {MAX_BLOCK_SIZE:,}, not {block_size!r}")
    if concurrency < 1:
        raise AssessError(f"--concurrency is at least 1, not {concurrency}")


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
    """Work on the shared job of ``source`` and the ``prejudge`` task ``task`` as one of its workers (start, join or
    resume it) until no block is left; the summary of what this worker did, with the job's figures (:func:`work_on`)."""
    _check_sizes(block_size, concurrency)
    lease_for(getattr(client, "timeout", None), lease_s)  # a bad --lease is refused before anything is stored
    items = prejudge_items(
        db, task, source, model, scope=scope, limit=limit, samples=samples, temperature=temperature, variant=variant
    )
    sent = getattr(client, "temperature", items.shell.temperature)
    if (sent or 0) != items.shell.temperature:
        raise AssessError(
            f"the job is for temperature {items.shell.temperature:g} but the judge sends {sent}: answers would be "
            "cached under the wrong settings"
        )
    return work_on(
        db,
        items,
        client,
        limit=limit,
        concurrency=concurrency,
        block_size=block_size,
        lease_s=lease_s,
        base_url=base_url,
        start=start,
        latency_s=latency_s,
    )


def prejudge_items(
    db,
    task: str,
    source: str,
    model: str,
    *,
    scope: Scope = Scope(),
    limit: int | None = None,
    samples: int = 1,
    temperature: float | None = None,
    variant: str | None = None,
    options: dict | None = None,
) -> PrejudgeItems:
    """The items of a shared job of the ``prejudge`` task ``task`` (its options checked); ``options``: more of what
    the job depends on (``prejudge --batch-submit``: its provider), so that only a run with the same may join it."""
    if task not in jobs.BY_TURN:
        raise AssessError(f"the {task} task's items are not read turn by turn: it runs in one process (no --join)")
    prompt, version, max_tokens, settings, temperature_ = jobs.setup(
        db, task, source, model, limit=limit, samples=samples, temperature=temperature, variant=variant
    )
    if scope.nugget_source is not None or task in ("ntr", "ntr-support", "importance"):
        scope = dataclasses.replace(scope, nugget_source=jobs.resolve_nugget_source(db, scope.nugget_source))
    shell = jobs.Plan(
        task,
        source,
        model,
        version,
        prompt,
        [],
        [],
        0,
        0,
        0,
        PREJUDGE_TASKS[task].skipped,
        0,
        max_tokens,
        samples,
        temperature_,
    )
    key = options_key(scope, limit=limit, samples=samples, temperature=temperature_)
    if options:
        key = json.dumps(json.loads(key) | options, sort_keys=True)
    return PrejudgeItems(db, shell, scope, settings, key)


def plan_queue(db, job_id: int, worker: int, items: JobItems, limit: int | None, lease: float) -> None:
    """Queue a shared job's items (the planner's part of :func:`work_on`) for a runner of its own."""
    _Worker(db, job_id, worker, jobs.Tally(items.shell), lease, 1, items, limit).plan()


def work_on(
    db,
    items: JobItems,
    client: ChatClient,
    *,
    limit: int | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    block_size: int = DEFAULT_BLOCK_SIZE,
    lease_s: float | None = None,
    base_url: str | None = None,
    start: Start | None = None,
    latency_s: float | None = None,
) -> dict:
    """Work on the shared job of ``items`` (its source and task) as one of its workers: start, join or resume it,
    until no block is left; the summary of what this worker did, with the job's figures.

    ``start(estimate, todo)`` is called once the job's estimate is known (after planning, for the planner);
    what it returns is the progress callback. Refused (:class:`AssessError`) while a job of one process runs
    for the pair, or a shared one with other options. A fatal reply or too many failed calls in a row end this
    worker 'failed' (:class:`ClientError`), Ctrl-C 'stopped'; either way its blocks go back to the job."""
    _check_sizes(block_size, concurrency)
    lease = lease_for(getattr(client, "timeout", None), lease_s)
    shell = items.shell
    prejudgments.ensure_llm_source(db, shell.source, shell.model, shell.prompt_version)
    if shell.prompt is not None:
        prompt = shell.prompt
        prejudgments.record_prompt(db, prompt.version, prompt.name, prompt.task, prompt.system, prompt.template)
    job_id, role = store_jobs.open_shared_job(
        db,
        source=shell.source,
        task=shell.task,
        model=shell.model,
        prompt_version=shell.prompt_version,
        options=items.options,
        base_url=base_url,
        concurrency=concurrency,
        lease_s=lease,
        block_size=block_size,
        stale_after_s=jobs.stale_after_s(getattr(client, "timeout", None)),
    )
    worker = store_jobs.add_worker(db, job_id)
    tally = jobs.Tally(shell)
    work = _Worker(db, job_id, worker, tally, lease, concurrency, items, limit)
    every = max(0.2, min(store_jobs.HEARTBEAT_EVERY_S, lease / 4))
    status, message = JobStatus.DONE.value, ""
    try:
        with store_jobs.worker_heartbeat(db, job_id, worker, lease, every), _prompt_handover():
            job_ = store_jobs.shared_job(db, job_id)
            if role != "join" and job_["planned_at"] is None:
                work.plan()
            job_ = store_jobs.shared_job(db, job_id)
            tally.total = job_["planned"]
            estimate = _estimate(shell, job_, concurrency, latency_s, left_only=role != "start")
            work.progress = start(estimate, job_["planned"]) if start is not None else None
            work.run(client)
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
    tally.plan = _with_counts(shell, job_)
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


def _with_counts(shell: jobs.Plan, job_: dict, *, already: int | None = None) -> jobs.Plan:
    """The job's plan with the counts its planner keeps on its row."""
    return dataclasses.replace(
        shell,
        covered=job_["already"] + job_["items"] + job_["deferred"],
        already=job_["already"] if already is None else already,
        skipped=job_["skipped"],
        skipped_reason=shell.skipped_reason if job_["skipped"] else None,
        deferred=job_["deferred"],
    )


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
    return jobs.estimate_counts(
        _with_counts(shell, job_, already=already),
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


def _in_runs(task: str, raw: tuple, runs: tuple[str, ...] | None) -> bool:
    """Does an item belong to a job restricted to ``runs`` (its run named, its response not empty)? The items of
    ``nuggets match``: NtR items (``'<nugget id> <run>'``), and response-nuggets items (the run: NtN's first step)."""
    if runs is None:
        return True
    turn_id, item_id, fields, *_ = raw
    if task == "response-nuggets":
        return item_id in runs and bool(fields["text"].strip())
    return jobs.ntr_run(item_id) in runs and bool(fields["response"].strip())


class _Worker:
    """One process's part of a shared job: planning (when it is the planner) and the claimed blocks' calls."""

    def __init__(
        self, db, job_id: int, worker: int, tally: jobs.Tally, lease: float, concurrency: int, items: JobItems,
        limit: int | None,
    ):  # fmt: skip
        self.db, self.job_id, self.worker, self.tally = db, job_id, worker, tally
        self.block_size = store_jobs.shared_job(db, job_id)["block_size"]
        self.lease, self.concurrency, self.items, self.limit = lease, concurrency, items, limit
        self.progress: jobs.Progress | None = None
        self.ended: str | None = None
        self.left: dict[int, int] = {}  # block -> items of it not settled yet
        self.lost: set[int] = set()  # blocks another worker took over: their results are dropped
        self.waiting: dict[int, list] = {}  # seq -> the replies to its item's calls so far (None: not yet)
        self.pending: list[tuple] = []  # results held for the next group commit: (seq, block, item, outcome, copied)
        self.pending_since = 0.0

    # ------------------------------------------------------------------------------------- planning

    def plan(self) -> None:
        """Queue the job's items (resuming after the items a planner before read), in key order."""
        db, p, limit = self.db, self.tally.plan, self.limit
        job_ = store_jobs.shared_job(db, self.job_id)
        seq, block = store_jobs.last_queued(db, self.job_id)
        counts = {k: job_[k] for k in ("scanned", "already", "skipped", "deferred", "items", "calls", "chars")}
        counts["planned"] = seq
        buffer: list[tuple] = []

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

        for chunk in self.items.chunks(counts["scanned"]):
            hashes = [entry.input_hash for entry in chunk if entry]
            answered = prejudgments.answered_among(db, p.source, p.task, p.model, p.prompt_version, hashes)
            cached = prejudgments.cached_among(db, p.model, p.prompt_version, hashes)
            for entry in chunk:
                counts["scanned"] += 1
                if entry is None:
                    counts["skipped"] += 1
                    continue
                if entry is False:  # not this job's item
                    continue
                h = entry.input_hash
                missing = [k for k in range(p.samples) if (entry.turn_id, entry.item_id, h, k) not in answered]
                if not missing:
                    counts["already"] += 1
                    continue
                if limit is not None and counts["items"] >= limit:
                    counts["deferred"] += 1
                    continue
                counts["items"] += 1
                for k in missing:
                    source_id = cached.get((h, k))
                    if source_id is None:
                        counts["calls"] += 1
                        counts["chars"] += entry.chars
                    buffer.append((counts["planned"], entry.turn_id, entry.item_id, k, h, entry.inputs, source_id))
                    counts["planned"] += 1
                if len(buffer) >= self.block_size:  # a block ends at an item's last answer
                    flush()
        flush(final=True)
        _retrying(lambda: store_jobs.finish_planning(db, self.job_id))

    # ------------------------------------------------------------------------------------- working

    def run(self, client: ChatClient) -> None:
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
                    self.plan()
                    continue
                time.sleep(pause)
                continue
            requests = self._requests(claimed)
            try:
                replies = jobs.ask_all(client, requests, self.tally, concurrency=self.concurrency, idle=GROUP_WAIT_S)
                for key, reply in replies:
                    if key is None:  # no answer for a while (a slow or stalled endpoint): store what is held
                        if self.pending and time.monotonic() - self.pending_since >= GROUP_WAIT_S:
                            self.flush()
                        continue
                    self._store_reply(key, reply)
            finally:  # Ctrl-C, a failing endpoint: what arrived is stored
                if self.pending:
                    self.flush()

    def _requests(self, first: dict) -> Iterator[tuple]:
        """The calls of the claimed block, then of each next block claimed once this one's are all sent (never
        waiting: when no block is free, the calls end and :meth:`run` looks again once they are answered)."""
        claimed: dict | None = first
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
                item, calls = self.items.calls(row)
                seq = row["seq"]
                if row["cached_from"] is not None:
                    self._copy(seq, block, item, row["cached_from"])
                    continue
                if not calls:
                    self._store(seq, block, item, [])
                    continue
                self.waiting[seq] = [None] * len(calls)
                for n, (messages, max_tokens) in enumerate(calls):
                    yield (seq, block, item, n), messages, max_tokens
            tally = self.tally
            tally.total = max(tally.total, claimed["last_seq"] + 1)
            claimed = _retrying(lambda: store_jobs.claim_block(self.db, self.job_id, self.worker, self.lease))

    def _copy(self, seq: int, block: int, item: Any, answer_id: int) -> None:
        found = _retrying(lambda: prejudgments.answer(self.db, answer_id))
        outcome = self.items.copied(item, found, self.job_id)
        self._keep(seq, block, item, outcome, copied=True)

    def _store_reply(self, key: tuple, reply) -> None:
        seq, block, item, n = key
        replies = self.waiting[seq]
        replies[n] = reply
        if all(r is not None for r in replies):  # the item's last call answered: its answer is known
            del self.waiting[seq]
            self._store(seq, block, item, replies)

    def _store(self, seq: int, block: int, item: Any, replies: list) -> None:
        self._keep(seq, block, item, self.items.outcome(item, replies, self.job_id), copied=False)

    def _keep(self, seq: int, block: int, item: Any, outcome, *, copied: bool) -> None:
        """Hold a result for the next group commit; commit the group when it is full, when its first result
        has waited :data:`GROUP_WAIT_S`, or when the result is the last one its block waits for."""
        if not self.pending:
            self.pending_since = time.monotonic()
        self.pending.append((seq, block, item, outcome, copied))
        held = sum(1 for entry in self.pending if entry[1] == block)
        if (
            len(self.pending) >= GROUP_SIZE
            or held >= self.left.get(block, 0)
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
                self.items.save_all(self.db, [(item, outcome) for seq, _, item, outcome, _ in group if seq in kept])
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
                self.items.stored(outcome)
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
