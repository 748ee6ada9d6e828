"""Pre-judging through batch files: a job's open requests out in the OpenAI batch layout, the results back in.

:func:`write_requests` (``prejudge --batch-out FILE``) records a job and writes one request per item and answer
number still missing, with the body a live call would send; any OpenAI-compatible batch runner (a provider's
batch service, ``vllm run-batch``) turns it into a results file. :func:`read_results` (``prejudge --batch-in
FILE``) stores those results as a live run stores its replies: the same parsing, an unparseable answer stored as
unparseable, a failed request stored as a failed call, each in its own transaction, so a second run of the same
file stores nothing twice and a partial file can be followed by the rest.

The file is read twice, block by block. The first pass checks every line; a malformed line, a result of a job
for another source, task, model or prompt version, or one answered by another model refuses the whole file
(:class:`AssessError`, every such line named, nothing stored). Lines that only cannot be stored (a repeated
``custom_id``, an item already stored, an item whose input changed since the request was written, an item the
run does not cover) are reported with their line and left out. The second pass stores the rest.

The run's options (task, source, model, samples, temperature, variant, depth, ...) must be those of the
``--batch-out`` run: they decide which items are open, and every line's digest ties it to that job's settings.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path

from assess.errors import AssessError, FormatError
from assess.formats.openai_batch import BatchResult, CustomId, digest, iter_results, parse_custom_id, request_line
from assess.llm.clients import Reply
from assess.services import jobs
from assess.tasks import JobStatus
from store import jobs as store_jobs
from store import prejudgments

MAX_LISTED = 20  # reported lines named one by one; the rest counted

Key = tuple[str, str, int]  # turn, item, answer number


def identity(plan_: jobs.Plan) -> dict:
    """What a request's digest ties it to besides its job and input: the run's source, task, model, prompt
    version and generation settings."""
    return {
        "source": plan_.source,
        "task": plan_.task,
        "model": plan_.model,
        "prompt_version": plan_.prompt_version,
        "temperature": plan_.temperature,
        "max_tokens": plan_.max_tokens,
    }


def request_body(plan_: jobs.Plan, item: jobs.Item) -> dict:
    """The body of one call, as the live client sends it (model, messages, temperature, token cap)."""
    body: dict = {"model": plan_.model, "messages": item.messages, "temperature": plan_.temperature}
    if plan_.max_tokens:
        body["max_tokens"] = plan_.max_tokens
    return body


def custom_id(job_id: int, plan_: jobs.Plan, item: jobs.Item) -> CustomId:
    return CustomId(
        job_id,
        item.sample,
        digest(job_id, identity(plan_), item.input_hash, item.sample),
        item.turn_id,
        item.item_id,
    )


def write_requests(db, plan_: jobs.Plan, path: str | Path) -> dict:
    """Write the open requests of ``plan_`` to ``path`` (JSONL, replaced whole) and record the job that wrote them
    (status done, its ``planned`` the number of requests). Answers other sources already got are not written:
    :func:`read_results` copies them."""
    if plan_.prompt is None:
        raise AssessError("--batch-out writes chat requests: not for the NLI backend")
    if not plan_.items:
        return {"job": None, "requests": 0, "file": str(path), "copies": len(plan_.copies)}
    job_id = jobs.begin(
        db, dataclasses.replace(plan_, copies=[]), base_url=None, concurrency=0, stale_after_s=store_jobs.MIN_STALE_S
    )
    target = Path(path)
    partial = target.with_name(f".{target.name}.{os.getpid()}.part")  # renamed into place once whole
    try:
        with open(partial, "w", encoding="utf-8") as handle:
            for item in plan_.items:
                handle.write(request_line(custom_id(job_id, plan_, item), request_body(plan_, item)) + "\n")
        os.replace(partial, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            partial.unlink()
        store_jobs.finish_job(db, job_id, JobStatus.FAILED, f"batch file {target.name} not written: {exc}")
        raise
    count = len(plan_.items)
    store_jobs.finish_job(
        db,
        job_id,
        JobStatus.DONE,
        f"{count} requests written to the batch file {target.name} (custom_id job{job_id}/...); "
        f"store the results with --batch-in; {plan_.settings_text}",
    )
    return {"job": job_id, "requests": count, "file": str(target), "copies": len(plan_.copies)}


@dataclasses.dataclass
class _Check:
    """What the first pass learned: lines to store, lines reported, hard errors, lines per job."""

    to_store: dict[int, Key] = dataclasses.field(default_factory=dict)  # line -> item
    hard: list[str] = dataclasses.field(default_factory=list)
    hard_count: int = 0
    reports: list[str] = dataclasses.field(default_factory=list)
    reports_left_out: int = 0

    def report(self, text: str) -> None:
        """Keep a reported line (the first :data:`MAX_LISTED`; the rest are counted)."""
        if len(self.reports) < MAX_LISTED:
            self.reports.append(text)
        else:
            self.reports_left_out += 1

    counts: dict[str, int] = dataclasses.field(
        default_factory=lambda: {"lines": 0, "duplicates": 0, "already_stored": 0, "changed": 0, "not_covered": 0}
    )
    per_job: dict[int, int] = dataclasses.field(default_factory=dict)


class _Reader:
    """The items a results file may answer and the rules for each line (shared by both passes)."""

    def __init__(self, db, plan_: jobs.Plan, path: str | Path):
        self.db, self.plan, self.path = db, plan_, str(path)
        self.open: dict[Key, jobs.Item] = {(it.turn_id, it.item_id, it.sample): it for it in plan_.items}
        self.copied: set[Key] = {(it.turn_id, it.item_id, it.sample) for it, _ in plan_.copies}
        self._judged: dict[int, set[tuple[str, str]]] = {}
        self._jobs: dict[int, dict | None] = {}
        self.identity = identity(plan_)

    def refresh(self) -> None:
        """Forget what :meth:`judged` read: the next call reads the store as it is now."""
        self._judged.clear()
        self.copied = set()

    def judged(self, key: Key) -> bool:
        """Whether the source holds a non-error answer for ``key`` (or the run copies one)."""
        turn, item, sample = key
        if sample not in self._judged:
            p = self.plan
            self._judged[sample] = {
                (t, i)
                for t, i, _ in prejudgments.judged(self.db, p.source, p.task, p.model, p.prompt_version, sample=sample)
            }
        return (turn, item) in self._judged[sample] or key in self.copied

    def job(self, job_id: int) -> dict | None:
        if job_id not in self._jobs:
            self._jobs[job_id] = store_jobs.job(self.db, job_id)
        return self._jobs[job_id]

    def foreign(self, cid: CustomId, result: BatchResult) -> str | None:
        """Why a line belongs to another job (refused), or None."""
        p = self.plan
        j = self.job(cid.job)
        if j is None:
            return f"custom_id names job {cid.job}, which this store does not have (a file of another store?)"
        mine = {"source": p.source, "task": p.task, "model": p.model, "prompt version": p.prompt_version}
        theirs = {"source": j["source"], "task": j["task"], "model": j["model"], "prompt version": j["prompt_version"]}
        differ = [name for name in mine if str(mine[name]) != str(theirs[name])]
        if differ:
            said = ", ".join(f"{n} {theirs[n]}" for n in differ)
            wanted = ", ".join(f"{n} {mine[n]}" for n in differ)
            return f"a result of job {cid.job} ({said}); this run is for {wanted}"
        if result.model is not None and result.model != p.model and not result.model.startswith(f"{p.model}-"):
            return f"answered by the model {result.model!r}, not {p.model!r}"
        return None

    def error_stored(self, item: jobs.Item, result: BatchResult) -> bool:
        return prejudgments.error_stored(
            self.db,
            self.plan.source,
            self.plan.task,
            item.turn_id,
            item.item_id,
            self.plan.model,
            self.plan.prompt_version,
            item.sample,
            error_text(result),
        )


def error_text(result: BatchResult) -> str:
    """A failed request's reason as stored, naming its result line (so a second read of the file finds it)."""
    return f"{result.error} (batch result {result.result_id})"


def _where(path: str, line: int) -> str:
    return f"{path}:{line}"


def _check(reader: _Reader) -> _Check:
    out = _Check()
    seen: dict[str, int] = {}
    for result in iter_results(reader.path):
        if isinstance(result, FormatError):
            out.hard_count += 1
            if len(out.hard) < MAX_LISTED:
                out.hard.append(str(result))
            continue
        out.counts["lines"] += 1
        cid = parse_custom_id(result.custom_id)
        if cid is None:
            out.hard_count += 1
            if len(out.hard) < MAX_LISTED:
                out.hard.append(
                    f"{_where(reader.path, result.line)}: expected a custom_id written by --batch-out "
                    f"(job<N>/<answer>/<digest>/<turn> <item>), found {result.custom_id[:80]!r}"
                )
            continue
        why = reader.foreign(cid, result)
        if why is not None:
            out.hard_count += 1
            if len(out.hard) < MAX_LISTED:
                out.hard.append(f"{_where(reader.path, result.line)}: {why}")
            continue
        first = seen.get(result.custom_id)
        if first is not None:
            out.counts["duplicates"] += 1
            out.report(
                f"{_where(reader.path, result.line)}: custom_id {result.custom_id!r} repeats line {first}: not stored"
            )
            continue
        seen[result.custom_id] = result.line
        out.per_job[cid.job] = out.per_job.get(cid.job, 0) + 1
        key = (cid.turn_id, cid.item_id, cid.sample)
        item = reader.open.get(key)
        if item is None:
            if reader.judged(key):
                out.counts["already_stored"] += 1
            else:
                out.counts["not_covered"] += 1
                out.report(
                    f"{_where(reader.path, result.line)}: {cid.turn_id} {cid.item_id} (answer {cid.sample}) is not an "
                    "item this run covers (other --depth, --samples or nugget options than --batch-out?): not stored"
                )
            continue
        if digest(cid.job, reader.identity, item.input_hash, cid.sample) != cid.digest:
            out.counts["changed"] += 1
            out.report(
                f"{_where(reader.path, result.line)}: {cid.turn_id} {cid.item_id} (answer {cid.sample}): its input "
                "or the generation settings changed since the request was written: not stored (still pending)"
            )
            continue
        if not result.ok and reader.error_stored(item, result):
            out.counts["already_stored"] += 1
            continue
        out.to_store[result.line] = key
    return out


def _refusal(path: str, check: _Check) -> str:
    more = check.hard_count - len(check.hard)
    lines = "\n".join(check.hard) + (f"\n... and {more} more" if more > 0 else "")
    return f"{path}: {check.hard_count} result lines refused, nothing stored:\n{lines}"


def _missing(reader: _Reader, check: _Check, path: str) -> tuple[int, list[str]]:
    """Requests the jobs named in the file wrote that have no line in it."""
    total, reports = 0, []
    for job_id, lines in sorted(check.per_job.items()):
        wrote = int(reader.job(job_id)["planned"] or 0)
        if wrote > lines:
            total += wrote - lines
            reports.append(
                f"{path}: job {job_id} wrote {wrote} requests; {wrote - lines} have no result line "
                "(still pending: store them from another results file, or write them out again)"
            )
    return total, reports


def read_results(db, plan_: jobs.Plan, path: str | Path, *, progress: jobs.Progress | None = None) -> dict:
    """Store the results file ``path`` for the run planned as ``plan_`` (see the module docstring).

    Raises :class:`AssessError` (nothing stored) when a line is malformed or belongs to another job; returns the
    run's summary (:meth:`jobs.Tally.summary`) with the file's counts and the reported lines."""
    if plan_.prompt is None:
        raise AssessError("--batch-in stores chat answers: not for the NLI backend")
    reader = _Reader(db, plan_, path)
    check = _check(reader)
    if check.hard_count:
        raise AssessError(_refusal(reader.path, check))
    missing, missing_reports = _missing(reader, check, reader.path)
    run_plan = dataclasses.replace(plan_, items=[reader.open[key] for key in check.to_store.values()])
    tally = jobs.Tally(run_plan)
    total = run_plan.todo
    if not total:  # a file read before: no job to record
        return _read_summary(tally.summary(None, JobStatus.DONE.value), path, check, missing, missing_reports, reader)
    job_id = jobs.begin(db, run_plan, base_url=None, concurrency=0, stale_after_s=store_jobs.MIN_STALE_S)

    def tick():
        if progress is not None:
            progress(tally.done, total, tally.counts)

    def work():
        tick()
        for item, row in run_plan.copies:
            jobs.store_copy(db, run_plan, item, row, job_id, tally)
            tick()
        for item, result in _results_to_store(reader, check):  # the file read again: memory stays flat
            reply = reply_of(result)
            tally.replied(reply)
            outcome = jobs.planned_outcome(run_plan, item, reply, job_id)
            outcome = dataclasses.replace(outcome, latency_ms=None)  # unknown: kept out of the time estimates
            if prejudgments.save(db, outcome, label_context=item.label_context):
                tally.counts[outcome.parse_status] += 1
                tally.asked += 1
            tick()

    name = Path(path).name
    jobs.run_job(db, job_id, tally, work, note=f" from the batch file {name}; {plan_.settings_text}")
    summary = tally.summary(job_id, JobStatus.DONE.value)
    return _read_summary(summary, path, check, missing, missing_reports, reader)


def _read_summary(summary: dict, path, check: _Check, missing: int, missing_reports: list[str], reader: _Reader):
    reader.refresh()
    pending = sum(1 for key in reader.open if not reader.judged(key))
    for text in missing_reports:
        check.report(text)
    return {
        **summary,
        "file": str(path),
        **check.counts,
        "missing": missing,
        "pending": pending,
        "reports": check.reports,
        "reports_left_out": check.reports_left_out,
    }


def _results_to_store(reader: _Reader, check: _Check):
    """(item, result) of every line the first pass kept, in file order (the second read of the file)."""
    for result in iter_results(reader.path):
        if isinstance(result, FormatError) or result.line not in check.to_store:
            continue
        cid = parse_custom_id(result.custom_id)
        key = check.to_store[result.line]
        if cid is None or (cid.turn_id, cid.item_id, cid.sample) != key:
            raise AssessError(f"{reader.path}:{result.line}: the file changed while it was read; run again")
        yield reader.open[key], result


def reply_of(result: BatchResult) -> Reply:
    """A results line as the reply of a live call (one attempt; its latency is not known and stored as NULL)."""
    if not result.ok:
        return Reply(None, ok=False, error=error_text(result), latency_ms=0, attempts=1)
    return Reply(
        result.text,
        ok=True,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        latency_ms=0,
        attempts=1,
    )


def describe_written(s: dict) -> str:
    """What ``--batch-out`` did, for people."""
    if not s["requests"]:
        return f"nothing to ask: no batch file written ({s['copies']} answers can be copied from the cache)"
    return (
        f"{s['requests']} requests written to {s['file']} (job {s['job']}); run them with a batch service or "
        "`vllm run-batch`, then store the results with --batch-in RESULTS"
    )


def describe_read(s: dict) -> str:
    """What ``--batch-in`` stored, for people (one line)."""
    return (
        f"{s['source']} {s['task']}: {jobs.describe_stored(s)}; {s['lines']} result lines, {s['already_stored']} "
        f"already stored, {s['duplicates']} repeated, {s['changed'] + s['not_covered']} not stored; "
        f"{s['missing']} requests without a result, {s['pending']} answers still pending"
    )
