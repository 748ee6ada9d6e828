"""Pre-judging through a provider's batch API, to the end: ``prejudge --batch-submit``.

The job is a shared job (:mod:`assess.services.shared_jobs`): its planner queues the items in the store
(``job_items``, flat memory) in blocks of at most the provider's request limit, and a process works on it by
claiming blocks under a lease. For each claimed block it

1. copies the answers the cache already holds (no request);
2. writes the block's open items as input files within the provider's limits (:data:`assess.llm.batch_api.LIMITS`:
   requests and bytes), records them (``provider_batches``, state ``preparing``), then sends each: OpenAI's file
   upload and batch, or Anthropic's batch with its requests inline;
3. polls every batch it holds, waiting ``poll`` seconds between rounds of polls, doubled while nothing changes
   (at most :data:`MAX_POLL_S`);
4. when a batch ended (completed, expired, cancelled, failed), downloads its results and errors and stores each
   result as ``--batch-in`` stores a results line (the same parsing and outcome), its item marked done in the
   same transaction and only while the block is still this process's (:func:`store.jobs.mark_items`): a result
   read twice is stored once;
5. asks again, in a new round of batches, for the items a round left open (failed, expired, or missing from the
   results); after :data:`MAX_ROUNDS` rounds a request that still failed is stored as a failed call (a later run
   asks it again, as after a live run).

Every batch id and state is written to the store before the next step, so a process killed at any point and
started again with the same command goes on: batches recorded but not accepted are written and sent again,
submitted ones polled, ended ones stored (what was stored before is left out). A ``custom_id`` is
``j<job>-<item number>-<digest>`` (1-64 of ``[A-Za-z0-9_-]``, as Anthropic requires), the digest tying the result
to the job's settings and the item's input as ``--batch-out``'s does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from assess.errors import AssessError, FormatError
from assess.formats import anthropic_batch, openai_batch
from assess.llm.batch_api import LIMITS, BatchAPIError, Limits
from assess.llm.clients import Reply
from assess.services import jobs, shared_jobs
from assess.services.batch_files import identity, reply_of
from assess.tasks import JobStatus, ParseStatus
from store import batches as store_batches
from store import jobs as store_jobs
from store import prejudgments
from store.db import write

DEFAULT_POLL_S = 30.0
MAX_POLL_S = 600.0
MAX_ROUNDS = 3  # batches per item at most: the first and two more for what failed or expired
PAGE = 1000  # items read from the queue at a time
GROUP = 500  # results stored per transaction
LEASE_S = 600.0  # a claimed block's lease (renewed by the heartbeat; a killed process's blocks are freed at once)
_CUSTOM_ID = re.compile(r"j([0-9]{1,18})-([0-9]{1,18})-([0-9a-f]{12})")


@dataclasses.dataclass(frozen=True)
class Settings:
    """How a run sends its batches: the provider, its limits, the first wait between polls, the rounds."""

    provider: str
    limits: Limits | None = None  # default: the provider's (LIMITS)
    poll_s: float = DEFAULT_POLL_S
    max_rounds: int = MAX_ROUNDS

    @property
    def limit(self) -> Limits:
        return self.limits or LIMITS[self.provider]


def run_batches(
    db,
    task: str,
    source: str,
    model: str,
    api,
    settings: Settings,
    *,
    scope: shared_jobs.Scope | None = None,
    limit: int | None = None,
    samples: int = 1,
    temperature: float | None = None,
    variant: str | None = None,
    base_url: str | None = None,
    start: Callable | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> dict:
    """Run the batch job of ``source`` and the ``prejudge`` task ``task`` at ``api``'s provider to its end (start it,
    or resume it after a stop or a kill); the summary of this run, with the job's counts and its batches."""
    if not settings.poll_s > 0:
        raise AssessError(f"--poll is a number of seconds above 0, not {settings.poll_s:g}")
    items = shared_jobs.prejudge_items(
        db, task, source, model, scope=scope or shared_jobs.Scope(), limit=limit, samples=samples, temperature=temperature,
        variant=variant, options={"batch": settings.provider},
    )  # fmt: skip
    shell = items.shell
    prejudgments.ensure_llm_source(db, shell.source, shell.model, shell.prompt_version)
    prompt = shell.prompt
    prejudgments.record_prompt(db, prompt.version, prompt.name, prompt.task, prompt.system, prompt.template)
    job_id, role = store_jobs.open_shared_job(
        db, source=shell.source, task=shell.task, model=shell.model, prompt_version=shell.prompt_version,
        options=items.options, base_url=base_url, concurrency=0, lease_s=LEASE_S,
        block_size=settings.limit.requests, stale_after_s=LEASE_S,
    )  # fmt: skip
    worker = store_jobs.add_worker(db, job_id)
    runner = _Runner(db, job_id, worker, items, api, settings, sleep)
    status, message = JobStatus.DONE.value, ""
    try:
        with store_jobs.worker_heartbeat(db, job_id, worker, LEASE_S, store_jobs.HEARTBEAT_EVERY_S):
            if role != "join" and store_jobs.shared_job(db, job_id)["planned_at"] is None:
                shared_jobs.plan_queue(db, job_id, worker, items, limit, LEASE_S)
            job_ = store_jobs.shared_job(db, job_id)
            runner.tally.total = job_["planned"]
            runner.progress = start(job_, role) if start is not None else None
            runner.run()
    except BatchAPIError as exc:
        status, message = JobStatus.FAILED.value, str(exc)
        raise
    except BaseException as exc:
        status = JobStatus.STOPPED.value
        message = f"interrupted ({type(exc).__name__}); run the same command again to go on"
        raise
    finally:
        if not message:
            message = f"{runner.tally.done} results stored from {runner.sent} batches sent by this process"
        with contextlib.suppress(Exception):
            store_jobs.finish_worker(db, job_id, worker, status, message)
        runner.close()
    job_ = store_jobs.shared_job(db, job_id)
    summary = runner.tally.summary(job_id, job_["status"])
    return summary | {
        "role": role,
        "provider": settings.provider,
        "sent": runner.sent,
        "job_done": job_["done"],
        "job_planned": job_["planned"],
        "batches": batch_rows(db, [job_id]),
    }


def custom_id(job_id: int, seq: int, dig: str) -> str:
    return f"j{job_id}-{seq}-{dig}"


class _Runner:
    """One process's part of a batch job: the blocks it holds, their batches, what it stored."""

    def __init__(self, db, job_id: int, worker: int, items: shared_jobs.PrejudgeItems, api, settings, sleep):
        self.db, self.job_id, self.worker, self.items, self.api, self.settings = (
            db,
            job_id,
            worker,
            items,
            api,
            settings,
        )
        self.sleep = sleep
        self.tally = jobs.Tally(items.shell)
        self.identity = identity(items.shell)
        self.progress = None
        self.blocks: dict[int, dict] = {}  # claimed: block -> {block, first_seq, last_seq}
        self.sent = 0
        self.workdir = Path(tempfile.mkdtemp(prefix=f"assess-batch-job{job_id}-"))

    def close(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)

    # ------------------------------------------------------------------------------------- the loop

    def run(self) -> None:
        wait = self.settings.poll_s
        while True:
            while (claimed := store_jobs.claim_block(self.db, self.job_id, self.worker, LEASE_S)) is not None:
                self.blocks[claimed["block"]] = claimed
            changed = False
            for block in list(self.blocks.values()):
                changed |= self._advance(block)
            if not self.blocks:
                state = store_jobs.job_state(self.db, self.job_id)
                if state["status"] != JobStatus.RUNNING.value:
                    return
                if state["planned_at"] is not None and state["unfinished"] == 0:
                    return
                if state["planned_at"] is None and store_jobs.take_over_planning(self.db, self.job_id):
                    shared_jobs.plan_queue(self.db, self.job_id, self.worker, self.items, None, LEASE_S)
                    continue
            if changed:
                wait = self.settings.poll_s
                continue
            self.sleep(wait)
            wait = min(MAX_POLL_S, wait * 2)

    def _advance(self, block: dict) -> bool:
        """One step for each batch of the block: send, poll, store; then the next round or the block's end. Whether
        anything changed (the wait between polls starts again)."""
        parts = store_batches.of_block(self.db, self.job_id, block["block"])
        if not parts:
            self._copy_cached(block)
            if self._new_round(block, 1):
                return True
            return self._finish(block)  # every item copied from the cache: nothing to send
        round_ = max(p["round"] for p in parts)
        current = [p for p in parts if p["round"] == round_]
        changed = False
        for p in current:
            if p["state"] == store_batches.PREPARING:
                self._send(block, p)
                changed = True
            elif p["state"] != store_batches.STORED and p["ended_at"] is None:
                changed |= self._poll(p)
        current = [p for p in store_batches.of_block(self.db, self.job_id, block["block"]) if p["round"] == round_]
        for p in current:
            if p["ended_at"] is not None and p["state"] != store_batches.STORED:
                self._store(p)
                changed = True
        if any(p["state"] != store_batches.STORED for p in current):
            return changed
        if store_batches.count_open(self.db, self.job_id, block["first_seq"], block["last_seq"]):
            if round_ < self.settings.max_rounds:
                return self._new_round(block, round_ + 1) or True
            self._give_up(block, current)
        return self._finish(block)

    def _finish(self, block: dict) -> bool:
        store_jobs.finish_block(self.db, self.job_id, block["block"], self.worker)
        del self.blocks[block["block"]]
        return True

    # ------------------------------------------------------------------------------------- sending

    def _file(self, block: int, round_: int, part: int) -> Path:
        return self.workdir / f"job{self.job_id}-block{block}-round{round_}-part{part}.jsonl"

    def _new_round(self, block: dict, round_: int) -> bool:
        """Write the block's open items as the round's input files (each within the limits), record them, send
        them. False when no item is left to ask."""
        parts, after, part = [], block["first_seq"] - 1, 0
        while after < block["last_seq"]:
            path = self._file(block["block"], round_, part)
            written = self._write(path, block["first_seq"], block["last_seq"], after)
            if written is None:
                break
            first, last, requests, size = written
            parts.append((part, first, last, requests, size))
            after, part = last, part + 1
        if not parts:
            return False
        store_batches.add_parts(self.db, self.job_id, block["block"], round_, self.settings.provider, parts)
        for p in store_batches.of_block(self.db, self.job_id, block["block"]):
            if p["round"] == round_:
                self._send(block, p)
        return True

    def _write(self, path: Path, first_seq: int, last_seq: int, after: int) -> tuple | None:
        """Write the open items after ``after`` (up to ``last_seq``) that fit the limits into ``path``: (first and
        last number written, requests, bytes), or None when none is open."""
        limits, anthropic = self.settings.limit, self.settings.provider == "anthropic"
        head, sep, tail = (b'{"requests":[', b",", b"]}") if anthropic else (b"", b"", b"")
        size, count, first, last = len(head) + len(tail), 0, None, None
        with open(path, "wb") as handle:
            handle.write(head)
            while True:
                page = store_batches.open_items(self.db, self.job_id, first_seq, last_seq, after=after, limit=PAGE)
                full = False
                for row in page:
                    after = row["seq"]
                    if row["cached_from"] is not None:  # copied, not asked
                        continue
                    line = self._line(row, anthropic)
                    extra = len(line) + (len(sep) if count else 0) + (0 if anthropic else 1)
                    if count and (count + 1 > limits.requests or size + extra > limits.bytes):
                        full = True
                        break
                    if size + extra > limits.bytes:
                        raise AssessError(f"item {row['turn_id']} {row['item_id']}: one request is over the limit")
                    handle.write((sep if count else b"") + line + (b"" if anthropic else b"\n"))
                    size, count, last = size + extra, count + 1, row["seq"]
                    first = row["seq"] if first is None else first
                if full or len(page) < PAGE:
                    break
            handle.write(tail)
        return None if not count else (first, last, count, size)

    def _line(self, row: dict, anthropic: bool) -> bytes:
        item, [(messages, max_tokens)] = self.items.calls(row)
        shell = self.items.shell
        body: dict = {"model": shell.model, "messages": messages, "temperature": shell.temperature}
        if max_tokens:
            body["max_tokens"] = max_tokens
        cid = custom_id(
            self.job_id, row["seq"], openai_batch.digest(self.job_id, self.identity, item.input_hash, item.sample)
        )
        if anthropic:
            return anthropic_batch.request_entry(cid, body).encode()
        record = {"custom_id": cid, "method": "POST", "url": openai_batch.REQUEST_URL, "body": body}
        return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()

    def _send(self, block: dict, p: dict) -> None:
        """Send a recorded batch (its input written again when this process did not write it: a resumed one)."""
        path = self._file(block["block"], p["round"], p["part"])
        if not path.exists():
            self._write(path, p["first_seq"], p["last_seq"], p["first_seq"] - 1)
        meta = {"assess_job": self.job_id, "assess_batch": p["id"]}
        file_id, remote_id = self.api.submit(path, meta)
        stamp = store_batches.now(self.db)
        store_batches.update(
            self.db, p["id"], state="submitted", input_file_id=file_id, remote_id=remote_id, submitted_at=stamp
        )
        path.unlink(missing_ok=True)
        self.sent += 1

    # ------------------------------------------------------------------------------------- polling and storing

    def _poll(self, p: dict) -> bool:
        found = self.api.status(p["remote_id"])
        ended = store_batches.now(self.db) if found.ended else None
        downloads = list(found.downloads) + [None, None]
        fields = {"state": found.state, "succeeded": found.succeeded, "failed": found.failed}
        if ended:
            fields |= {"ended_at": ended, "output_file_id": downloads[0], "error_file_id": downloads[1]}
        store_batches.update(self.db, p["id"], **fields)
        return bool(ended) or found.state != p["state"]

    def _store(self, p: dict) -> None:
        """Download what the ended batch produced and store every result (see the module docstring)."""
        final = p["round"] >= self.settings.max_rounds
        counts = {"answered": 0, "failed": 0, "malformed": 0, "foreign": 0}
        reader = anthropic_batch.iter_results if self.settings.provider == "anthropic" else openai_batch.iter_results
        for n, name in enumerate(x for x in (p["output_file_id"], p["error_file_id"]) if x):
            path = self.workdir / f"batch{p['id']}-{n}.jsonl"
            self.api.download(name, path)
            group: list = []
            for result in reader(path):
                if isinstance(result, FormatError):
                    counts["malformed"] += 1
                    continue
                group.append(result)
                if len(group) >= GROUP:
                    self._store_group(p, group, final, counts)
                    group = []
            self._store_group(p, group, final, counts)
            path.unlink(missing_ok=True)
        message = (
            f"{counts['answered']} answered, {counts['failed']} failed"
            + (" (stored as failed calls)" if final and counts["failed"] else "")
            + (" (asked again in the next round)" if not final and counts["failed"] else "")
            + (f", {counts['malformed']} malformed result lines" if counts["malformed"] else "")
            + (f", {counts['foreign']} results of other requests" if counts["foreign"] else "")
        )
        store_batches.update(self.db, p["id"], state=store_batches.STORED, message=message)

    def _store_group(self, p: dict, results: list, final: bool, counts: dict) -> None:
        keyed = []
        for result in results:
            m = _CUSTOM_ID.fullmatch(result.custom_id)
            if m is None or int(m.group(1)) != self.job_id or not p["first_seq"] <= int(m.group(2)) <= p["last_seq"]:
                counts["foreign"] += 1
                continue
            keyed.append((int(m.group(2)), m.group(3), result))
        rows = store_batches.items_by_seq(self.db, self.job_id, [seq for seq, _, _ in keyed])
        ready = []
        for seq, dig, result in keyed:
            row = rows.get(seq)
            if row is None or row["state"] != "open":
                continue
            item = _stored_item(row)
            if openai_batch.digest(self.job_id, self.identity, item.input_hash, item.sample) != dig:
                counts["foreign"] += 1
                continue
            if not result.ok:
                counts["failed"] += 1
                if not final:
                    continue
            reply = reply_of(result)
            self.tally.replied(reply)
            ready.append(
                (seq, item, dataclasses.replace(self.items.outcome(item, [reply], self.job_id), latency_ms=None))
            )
        kept = self._save(p["block"], ready)
        counts["answered"] += sum(1 for seq, _, o in ready if seq in kept and o.parse_status != ParseStatus.ERROR)

    def _save(self, block: int, ready: list, *, copied: bool = False) -> set[int]:
        """Store results, ``(seq, item, outcome)`` each, with their items marked done, in one transaction: the item
        numbers stored (the others were stored before). ``copied``: cached answers, counted as copies."""
        if not ready:
            return set()
        with write(self.db):
            kept = store_jobs.mark_items(
                self.db, self.job_id, self.worker, [(s, block, o.parse_status) for s, _, o in ready]
            )
            self.items.save_all(self.db, [(item, o) for s, item, o in ready if s in kept])
        for seq, _, outcome in ready:
            if seq in kept:
                self.tally.counts[outcome.parse_status] += 1
                if copied:
                    self.tally.copied += 1
                else:
                    self.tally.asked += 1
        self._tick()
        return kept

    def _copy_cached(self, block: dict) -> None:
        after = block["first_seq"] - 1
        while page := store_batches.open_items(
            self.db, self.job_id, block["first_seq"], block["last_seq"], after=after
        ):
            after = page[-1]["seq"]
            ready = []
            for row in page:
                if row["cached_from"] is not None:
                    item, _ = self.items.calls(row)
                    found = prejudgments.answer(self.db, row["cached_from"])
                    ready.append((row["seq"], item, self.items.copied(item, found, self.job_id)))
            self._save(block["block"], ready, copied=True)

    def _give_up(self, block: dict, last_round: list[dict]) -> None:
        """Store the items still open after the last round as failed calls (a later run asks them again)."""
        states = ", ".join(sorted({p["state"] for p in last_round}))
        why = f"no answer after {self.settings.max_rounds} batch rounds (last batches: {states})"
        after = block["first_seq"] - 1
        while page := store_batches.open_items(
            self.db, self.job_id, block["first_seq"], block["last_seq"], after=after
        ):
            after = page[-1]["seq"]
            ready = []
            for row in page:
                item = _stored_item(row)
                reply = Reply(None, ok=False, error=why, latency_ms=0, attempts=self.settings.max_rounds)
                outcome = dataclasses.replace(self.items.outcome(item, [reply], self.job_id), latency_ms=None)
                ready.append((row["seq"], item, outcome))
            self._save(block["block"], ready)

    def _tick(self) -> None:
        if self.progress is not None:
            self.progress(self.tally.done, self.tally.total, self.tally.counts)


def _stored_item(row: dict) -> jobs.Item:
    """A queued item as its result is stored: its key, input hash and contexts (no prompt rendered: none is sent)."""
    _, parse_ctx, label_ctx = json.loads(row["inputs"])
    return jobs.Item(
        row["turn_id"], row["item_id"], [], row["input_hash"], parse_ctx or {}, label_ctx or {}, row["sample"]
    )


def batch_rows(db, job_ids: list[int]) -> list[dict]:
    """The provider batches of the jobs among ``job_ids``, one row each for a table (``jobs``, the /llm page)."""
    return [
        {
            "job": b["job_id"],
            "block": b["block"],
            "round": b["round"],
            "part": b["part"],
            "provider": b["provider"],
            "batch id": b["remote_id"],
            "state": b["state"],
            "requests": b["requests"],
            "MB": round(b["bytes"] / 1e6, 1),
            "succeeded": b["succeeded"],
            "failed": b["failed"],
            "submitted": b["submitted_at"],
            "ended": b["ended_at"],
            "note": b["message"],
        }
        for b in store_batches.of_jobs(db, job_ids)
    ]


def describe_batch(b: dict) -> str:
    """One batch as a line for people (``jobs``)."""
    where = f"{b['provider']} {b['batch id']}" if b["batch id"] else f"{b['provider']} (not sent yet)"
    line = (
        f"batch {where}: block {b['block']} round {b['round']} part {b['part']}, {b['state']}, {b['requests']} "
        f"requests ({b['MB']} MB), {b['succeeded']} succeeded, {b['failed']} failed"
    )
    return line + (f"; {b['note']}" if b["note"] else "")


def describe(s: dict) -> str:
    """What ``--batch-submit`` did, for people (one line)."""
    return (
        f"{s['source']} {s['task']}: job {s['job']} {s['status']} ({s['role']}), {jobs.describe_stored(s)} by this "
        f"process from {s['sent']} {s['provider']} batches sent; {s['job_done']} of {s['job_planned']} stored in all"
    )
