"""CONE-RAG's automatic pipeline end to end: gold nuggets matched against a run's generated responses,
the matches stored as NtR labels of an LLM or NLI source so that ``score nuggets --ntr-source`` scores them.

Two methods (CONE-RAG, Section 4.2):

- **NtR** (Eq. 3): every gold nugget of a turn against the whole response. Chat: the ``ntr-match``
  prompt (yes/no); NLI: P(the response entails the nugget) >= threshold. This is the ``ntr`` task of
  ``prejudge`` restricted to the given runs, so its answers, cache and jobs are the same ones.
- **NtN** (Eq. 2): the response's nuggets are extracted first (the ``response-nuggets`` prompt,
  asked only for responses that have none yet), then a gold nugget is *matched* when at least one
  extracted nugget entails it: NtN(n_i, n_j) = 1 iff extracted nugget n_i entails gold nugget n_j,
  and the gold nugget counts as captured iff some i gives 1 (the rule behind CONE-RAG's Recall_NtN,
  one direction only: the extracted nugget is the premise). NLI: P(entailment) of the pair
  (extracted, gold) >= threshold. Chat: the ``ntr-match`` prompt asked once per pair with the single
  extracted nugget in the place of the response; any "yes" matches.

What is stored, per gold nugget and response (item ``'<nugget id> <run>'`` of the turn): one
pre-judgment (task ``ntr`` or ``ntn``; the NtN one keeps every pair's answer in its raw output) and
the NtR label of the source (1 matched, 0 not) in the **same transaction**, so an interrupted run
never leaves an answer without its label nor the reverse, and the next run asks only for items
still missing (same model, prompt or rule version and input). Answers another source got for the
same input are copied, not asked again. Empty responses are skipped (CONE-RAG skips them; the
scorer leaves their labels out anyway).

With ``--join`` (a chat model) several processes work on one job through the store, as ``prejudge --join``
(:mod:`assess.services.shared_jobs`): NtR as the shared ``ntr`` job of the runs, NtN as the shared extraction job
then the shared ``ntn`` job (:class:`NtnItems`).

No Streamlit and no SQL here: :mod:`store.prejudgments`, :mod:`store.labels`, :mod:`store.jobs`.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from assess.errors import AssessError
from assess.llm import clients
from assess.llm.clients import DEFAULT_CONCURRENCY, ChatClient, NliClient, OpenAIClient, Reply, endpoint_settings
from assess.llm.entailment import nli_model_from_env
from assess.llm.prompts import prompt_for
from assess.services import jobs, shared_jobs
from assess.settings import llm_settings
from assess.tasks import LABEL_KINDS, LABELLED_STATUSES, JobStatus, JudgingMode, ParseStatus, Task
from store import labels, prejudgments
from store.db import write
from store.nuggets.responses import response_runs

METHODS = ("ntn", "ntr")
BACKENDS = ("chat", "nli")
DEFAULT_THRESHOLD = 0.5
NTN_RULE = "any-extracted-entails-gold"  # part of the NtN cache key: change the rule, change the key
_NTR_KEY = LABEL_KINDS[Task.NTR].key  # an NtN item is spelled as an NtR item: '<nugget id> <run>'

Progress = Callable[[int, int, dict], None]


def default_source(method: str, backend: str, model: str) -> str:
    """The label source a match run writes by default: ``llm:M`` / ``nli:M`` for NtR (the ``prejudge``
    names), ``llm-ntn:M`` / ``nli-ntn:M`` for NtN, so the two methods never overwrite each other."""
    prefix = "llm" if backend == "chat" else "nli"
    return f"{prefix}:{model}" if method == "ntr" else f"{prefix}-ntn:{model}"


def check_request(db, gold: str, runs: Sequence[str], method: str, backend: str) -> None:
    """Refuse (one line each) an unknown method, backend, gold nugget set or run (a run without responses)."""
    if method not in METHODS:
        raise AssessError(f"--method is ntn or ntr, not {method!r}")
    if backend not in BACKENDS:
        raise AssessError(f"--backend is chat or nli, not {backend!r}")
    if not runs:
        raise AssessError("name at least one run with --run RUN")
    jobs.resolve_nugget_source(db, gold)  # an unknown set is refused, naming the sets there are
    known = response_runs(db)
    missing = [r for r in runs if r not in known]
    if missing:
        raise AssessError(
            f"no responses of run {', '.join(map(repr, missing))} in the store (method {method} matches gold "
            f"nuggets against a run's responses; runs with responses: {', '.join(known) or 'none'})"
        )


def _answered_responses(db, runs: Sequence[str]) -> set[tuple[str, str]]:
    """(turn, run) of the given runs' responses that have text."""
    wanted = set(runs)
    return {
        (r["turn_id"], r["run"]) for r in prejudgments.response_items(db) if r["run"] in wanted and r["text"].strip()
    }


def _restrict(plan_: jobs.Plan, keep: Callable[[jobs.Item], bool], limit: int | None, covered: int) -> jobs.Plan:
    """A prejudge plan cut down to the items ``keep`` accepts, then to ``limit`` (calls and copies together)."""
    items, copies = [it for it in plan_.items if keep(it)], [c for c in plan_.copies if keep(c[0])]
    todo = len(items) + len(copies)
    deferred = 0
    if limit is not None and todo > limit:
        deferred = todo - limit
        copies = copies[:limit]
        items = items[: max(0, limit - len(copies))]
    return dataclasses.replace(
        plan_, items=items, copies=copies, covered=covered, already=covered - todo, deferred=deferred
    )


# ------------------------------------------------------------------------------------------- NtR


def ntr_plan(
    db,
    gold: str,
    runs: Sequence[str],
    source: str,
    model: str,
    *,
    backend: str,
    threshold: float = DEFAULT_THRESHOLD,
    limit: int | None = None,
) -> jobs.Plan:
    """The ``prejudge`` NtR plan of ``gold`` against the non-empty responses of ``runs`` only."""
    whole = jobs.plan(db, "ntr", source, model, nugget_source=gold, backend=backend, nli_threshold=threshold)
    answered = _answered_responses(db, runs)

    def keep(it: jobs.Item) -> bool:
        return (it.turn_id, _NTR_KEY.decode_id(it.item_id)[1]) in answered

    covered = sum(1 for r in prejudgments.ntr_items(db, gold) if (r["turn_id"], r["run"]) in answered)
    return _restrict(whole, keep, limit, covered)


# ------------------------------------------------------------------------------------------- NtN, step one


def extraction_plan(db, runs: Sequence[str], source: str, model: str, *, limit: int | None = None) -> jobs.Plan:
    """The ``prejudge`` response-nuggets plan for the non-empty responses of ``runs`` that ``source`` has
    no answer for yet (under the current prompt), at most ``limit`` of them."""
    whole = jobs.plan(db, "response-nuggets", source, model)
    answered = _answered_responses(db, runs)
    return _restrict(whole, lambda it: (it.turn_id, it.item_id) in answered, limit, len(answered))


def response_nuggets(db, source: str, runs: Sequence[str]) -> dict[tuple[str, str], list[str] | None]:
    """{(turn, run): extracted nugget texts} of ``source`` under the current ``response-nuggets`` prompt
    (the newest answer per response); None for a response whose only answers did not parse."""
    version = prompt_for("response-nuggets").version
    wanted = set(runs)
    out: dict[tuple[str, str], list[str] | None] = {}
    for r in reversed(prejudgments.stored(db, source, "response-nuggets", limit=10_000_000)):  # oldest first
        if r["item_id"] not in wanted or r["prompt_version"] != version:
            continue
        key = (r["turn_id"], r["item_id"])
        if r["parse_status"] in LABELLED_STATUSES and r["parsed"]:
            out[key] = [s["text"] for s in json.loads(r["parsed"])["spans"]]
        elif r["parse_status"] != ParseStatus.ERROR:
            out.setdefault(key, None)
    return out


# ------------------------------------------------------------------------------------------- NtN, step two


def _ntn_version(backend: str, threshold: float) -> tuple[str, dict]:
    """The rule version stored with every NtN answer, and the settings hashed into its cache key."""
    if backend == "nli":
        return f"ntn-nli@p>={threshold:g}", {"threshold": threshold, "rule": NTN_RULE}
    prompt = prompt_for("ntr")
    return f"ntn-{prompt.version}", {**jobs.chat_settings(prompt), "rule": NTN_RULE}


@dataclasses.dataclass
class NtnPlan:
    """A :class:`jobs.Plan` of NtN items plus what the matcher needs: each item's texts."""

    plan: jobs.Plan
    texts: dict[tuple[str, str], tuple[str, list[str]]]  # (turn, item id) -> (gold nugget, extracted nuggets)
    without_nuggets: int  # items left out: their response has no parsed extracted nuggets yet


def ntn_plan(
    db,
    gold: str,
    runs: Sequence[str],
    source: str,
    model: str,
    extracted: dict[tuple[str, str], list[str] | None],
    *,
    backend: str,
    threshold: float = DEFAULT_THRESHOLD,
    limit: int | None = None,
) -> NtnPlan:
    """Every gold nugget of ``gold`` x every non-empty response of ``runs``; an item's input is the gold
    nugget and the response's extracted nuggets (``extracted``, from :func:`response_nuggets`)."""
    prejudgments.check_llm_source(db, source, model)
    version, settings = _ntn_version(backend, threshold)
    answered = _answered_responses(db, runs)
    items, texts, without = [], {}, 0
    for r in prejudgments.ntr_items(db, gold):
        key = (r["turn_id"], r["run"])
        if key not in answered:
            continue
        found = extracted.get(key)
        if found is None:
            without += 1
            continue
        item_id = _NTR_KEY.encode_id((r["nugget_id"], r["run"]))
        document = {"gold": r["nugget"], "extracted": found}
        items.append(jobs.Item(r["turn_id"], item_id, [], jobs.input_hash(document, settings)))
        texts[(r["turn_id"], item_id)] = (r["nugget"], found)
    covered = len(items) + without
    done = prejudgments.judged(db, source, "ntn", model, version) if source in prejudgments.llm_sources(db) else set()
    pending = [it for it in items if (it.turn_id, it.item_id, it.input_hash) not in done]
    already = len(items) - len(pending)
    deferred = 0
    if limit is not None and len(pending) > limit:
        deferred, pending = len(pending) - limit, pending[:limit]
    hits = prejudgments.cached(db, model, version, {it.input_hash for it in pending})
    plan_ = jobs.Plan(
        "ntn",
        source,
        model,
        version,
        prompt_for("ntr") if backend == "chat" else None,
        [it for it in pending if it.input_hash not in hits],
        [(it, hits[it.input_hash]) for it in pending if it.input_hash in hits],
        covered,
        already,
        without,
        "gold nuggets of responses without extracted nuggets" if without else None,
        deferred,
    )
    return NtnPlan(plan_, texts, without)


def _store_ntn(db, plan_: jobs.Plan, item: jobs.Item, job_id: int, raw: str | None, status: str, **fields) -> None:
    """One NtN answer and, when it gives one, the source's NtR label, in the caller's transaction."""
    _save_ntn(db, jobs.outcome_of(plan_, item, job_id, raw, status, **fields))


def _save_ntn(db, outcome: prejudgments.Prejudgment) -> None:
    """An NtN answer and, when it gives one, the source's NtR label (1 matched, 0 not), in one transaction."""
    with write(db):
        if prejudgments.save(db, outcome) and outcome.parse_status in LABELLED_STATUSES:
            labels.save_changed(
                db,
                Task.NTR,
                outcome.source,
                (outcome.turn_id, *_NTR_KEY.decode_id(outcome.item_id)),
                int(outcome.parsed),
                mode=JudgingMode.LLM,
                via="llm",
            )


def _begin(db, plan_: jobs.Plan, *, base_url: str | None, concurrency: int, timeout: float | None = None) -> int:
    """Record the source (and the prompt a chat run asks with) and start the job, as ``prejudge`` does."""
    return jobs.begin(db, plan_, base_url=base_url, concurrency=concurrency, stale_after_s=jobs.stale_after_s(timeout))


def _summary(tally: jobs.Tally, job_id: int) -> dict:
    """What a match run did, for the command and the page."""
    seconds = time.perf_counter() - tally.start
    p = tally.plan
    return {
        "job": job_id,
        "task": p.task,
        "source": p.source,
        "model": p.model,
        "prompt_version": p.prompt_version,
        "covered": p.covered,
        "planned": p.todo,
        "asked": tally.asked,
        "copied": tally.copied,
        "calls": tally.calls,
        "matched": tally.matched,
        **tally.counts,
        "already": p.already,
        "skipped": p.skipped,
        "skipped_reason": p.skipped_reason,
        "deferred": p.deferred,
        "seconds": round(seconds, 3),
        "status": JobStatus.DONE.value,
    }


def _answered(tally: jobs.Tally, status: str, matched: bool) -> None:
    tally.counts[status] += 1
    tally.asked += 1
    tally.matched += bool(matched)


def _run(db, job_id: int, tally: jobs.Tally, run_items: Callable[[], None]) -> dict:
    """Copy the plan's cached answers, then ``run_items``, as one job of the shared runner (:func:`jobs.run_job`)."""

    def work() -> None:
        for item, row in tally.plan.copies:
            _save_ntn(db, jobs.copied_outcome(tally.plan, item, job_id, row))
            tally.counts[row["parse_status"]] += 1
            tally.copied += 1
            tally.matched += row["parsed"] == 1
        run_items()

    jobs.run_job(db, job_id, tally, work)
    return _summary(tally, job_id)


def run_ntn_nli(
    db, ntn: NtnPlan, nli: NliClient, *, threshold: float = DEFAULT_THRESHOLD, progress: Progress | None = None
) -> dict:
    """Match the planned NtN items with a local NLI model: every (extracted, gold) pair of a response is
    scored in batches of ``nli.batch_size``; each response's items are stored in one transaction."""
    plan_ = ntn.plan
    job_id = _begin(db, plan_, base_url=None, concurrency=nli.batch_size)
    tally = jobs.Tally(plan_)
    groups: dict[tuple[str, str], list[jobs.Item]] = {}
    for it in plan_.items:
        groups.setdefault((it.turn_id, _NTR_KEY.decode_id(it.item_id)[1]), []).append(it)

    def pairs(group: list[jobs.Item]) -> list[tuple[str, str]]:
        return [(e, ntn.texts[(it.turn_id, it.item_id)][0]) for it in group for e in _ext(ntn, it)]

    def run_items() -> None:
        for chunk, found, each_ms in jobs.nli_batches(list(groups.values()), nli, pairs, 4 * nli.batch_size):
            probs = iter(found)
            for group in chunk:
                with write(db):
                    for it in group:
                        p = [round(next(probs), 6) for _ in _ext(ntn, it)]
                        matched = int(any(x >= threshold for x in p))
                        raw = json.dumps({"entailment": p})
                        _store_ntn(
                            db,
                            plan_,
                            it,
                            job_id,
                            raw,
                            ParseStatus.OK,
                            parsed=matched,
                            latency_ms=each_ms * len(p),
                            attempts=1,
                        )
                        _answered(tally, ParseStatus.OK, matched)
            tally.calls += len(found)
            if progress is not None:
                progress(tally.done, plan_.todo, tally.counts)

    return _run(db, job_id, tally, run_items)


def _ext(ntn: NtnPlan, it: jobs.Item) -> list[str]:
    return ntn.texts[(it.turn_id, it.item_id)][1]


def pair_outcome(answers: Sequence[tuple[Reply, Any]]) -> tuple[str, int | None]:
    """The NtN answer of one gold nugget from its pairs' (reply, parsed) answers: matched (1) when any pair
    says yes; else not matched (0) when every pair parsed; else 'error' when a call failed (asked again
    next run) or 'unparseable' (no label)."""
    if any(parsed is not None and parsed.value == 1 for _, parsed in answers):
        return ParseStatus.OK, 1
    if any(not reply.ok for reply, _ in answers):
        return ParseStatus.ERROR, None
    if any(parsed.value is None for _, parsed in answers):
        return ParseStatus.UNPARSEABLE, None
    return ParseStatus.OK, 0


def _pairs_answer(answers: Sequence[tuple[Reply, Any]]) -> dict:
    """The stored NtN answer of one gold nugget from its pairs' (reply, parsed) answers: every reply's text as the
    raw output, :func:`pair_outcome`, the first failed call's error, the calls' latency, attempts and tokens."""
    status, value = pair_outcome(answers)
    errors = [reply.error for reply, _ in answers if not reply.ok]
    return {
        "raw": json.dumps([reply.text for reply, _ in answers], ensure_ascii=False),
        "status": status,
        "parsed": value,
        "error": errors[0] if errors else None,
        "latency_ms": sum(reply.latency_ms for reply, _ in answers),
        "attempts": sum(reply.attempts for reply, _ in answers),
        "prompt_tokens": sum(reply.prompt_tokens or 0 for reply, _ in answers),
        "completion_tokens": sum(reply.completion_tokens or 0 for reply, _ in answers),
    }


def run_ntn_chat(
    db,
    ntn: NtnPlan,
    client: ChatClient,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    progress: Progress | None = None,
    base_url: str | None = None,
) -> dict:
    """Match the planned NtN items with a chat model: one ``ntr-match`` call per (extracted, gold) pair
    (the extracted nugget in the place of the response), ``concurrency`` at a time; an item is stored
    (answer and label, one transaction) the moment its last pair's reply arrives. A fatal reply or
    :data:`jobs.MAX_CONSECUTIVE_ERRORS` failed calls in a row stop the run; what is stored stays."""
    plan_ = ntn.plan
    prompt = plan_.prompt
    job_id = _begin(db, plan_, base_url=base_url, concurrency=concurrency, timeout=getattr(client, "timeout", None))
    tally = jobs.Tally(plan_)
    waiting: dict[int, list] = {}

    def store_item(it: jobs.Item, answers: list) -> None:
        answer = _pairs_answer(answers)
        _store_ntn(db, plan_, it, job_id, **answer)
        _answered(tally, answer["status"], answer["parsed"] == 1)
        if progress is not None:
            progress(tally.done, plan_.todo, tally.counts)

    def requests():
        for n, it in enumerate(plan_.items):
            gold, extracted = ntn.texts[(it.turn_id, it.item_id)]
            waiting[n] = [None] * len(extracted)
            for i, text in enumerate(extracted):
                yield (n, i), prompt.render(nugget=gold, response=text), prompt.max_tokens

    def run_items() -> None:
        for it in plan_.items:  # nothing extracted: nothing can entail the gold nugget
            if not ntn.texts[(it.turn_id, it.item_id)][1]:
                store_item(it, [])
        for (n, i), reply in jobs.ask_all(client, requests(), tally, concurrency=concurrency):
            parsed = prompt.parse(reply.text) if reply.ok else None
            waiting[n][i] = (reply, parsed)
            if all(a is not None for a in waiting[n]):
                store_item(plan_.items[n], waiting.pop(n))

    return _run(db, job_id, tally, run_items)


class NtnItems:
    """The items of a shared NtN job (``nuggets match --method ntn --backend chat --join``) for
    :func:`assess.services.shared_jobs.work_on`: every gold nugget of ``gold`` x every non-empty response of
    ``runs``, in key order; an item's input is the gold nugget and the response's extracted nuggets (read by the
    planner from ``nuggets_source``, after the extraction step), one ``ntr-match`` call per extracted nugget. A
    response whose extraction did not parse leaves its gold nuggets out (skipped)."""

    def __init__(self, db, gold: str, runs: Sequence[str], source: str, model: str, nuggets_source: str, *,
                 threshold: float = DEFAULT_THRESHOLD, limit: int | None = None):  # fmt: skip
        prejudgments.check_llm_source(db, source, model)
        self.db, self.gold, self.runs, self.nuggets_source = db, gold, tuple(sorted(runs)), nuggets_source
        self.prompt = prompt_for("ntr")
        version, self.settings = _ntn_version("chat", threshold)
        self.shell = jobs.Plan(
            "ntn", source, model, version, self.prompt, [], [], 0, 0, 0,
            "gold nuggets of responses without extracted nuggets", 0, self.prompt.max_tokens,
        )  # fmt: skip
        self.matched = 0  # gold nuggets this worker stored as matched
        self.options = json.dumps(
            {"gold": gold, "runs": list(self.runs), "nuggets_source": nuggets_source, "limit": limit}, sort_keys=True
        )

    def chunks(self, skip: int):
        extracted = response_nuggets(self.db, self.nuggets_source, self.runs)
        answered = _answered_responses(self.db, self.runs)
        chunk: list = []
        for r in prejudgments.ntr_items(self.db, self.gold)[skip:]:
            key = (r["turn_id"], r["run"])
            if key not in answered:  # another run's item, or an empty response: not this job's
                chunk.append(False)
            elif (found := extracted.get(key)) is None:
                chunk.append(None)
            else:
                item_id = _NTR_KEY.encode_id((r["nugget_id"], r["run"]))
                h = jobs.input_hash({"gold": r["nugget"], "extracted": found}, self.settings)
                inputs = json.dumps([r["nugget"], found], ensure_ascii=False)
                chars = sum(jobs.message_chars(self.prompt.render(nugget=r["nugget"], response=e)) for e in found)
                chunk.append(shared_jobs.Queued(r["turn_id"], item_id, h, inputs, chars))
            if len(chunk) >= shared_jobs.HASHES_PER_QUERY:
                yield chunk
                chunk = []
        if chunk:
            yield chunk

    def calls(self, row: dict) -> tuple[jobs.Item, list]:
        gold, extracted = json.loads(row["inputs"])
        item = jobs.Item(row["turn_id"], row["item_id"], [], row["input_hash"])
        return item, [(self.prompt.render(nugget=gold, response=e), self.prompt.max_tokens) for e in extracted]

    def outcome(self, item: jobs.Item, replies: list, job_id: int) -> prejudgments.Prejudgment:
        answers = [(reply, self.prompt.parse(reply.text) if reply.ok else None) for reply in replies]
        a = _pairs_answer(answers)
        raw, status = a.pop("raw"), a.pop("status")
        return jobs.outcome_of(self.shell, item, job_id, raw, status, **a)

    def copied(self, item: jobs.Item, answer: dict, job_id: int) -> prejudgments.Prejudgment:
        return jobs.copied_outcome(self.shell, item, job_id, answer)

    def save_all(self, db, results: list[tuple[jobs.Item, prejudgments.Prejudgment]]) -> None:
        for _, outcome in results:
            _save_ntn(db, outcome)

    def stored(self, outcome: prejudgments.Prejudgment) -> None:
        self.matched += outcome.parse_status in LABELLED_STATUSES and outcome.parsed == 1


@dataclasses.dataclass(frozen=True)
class MatchRequest:
    """The options of one ``nuggets match`` run (the command's flags); the numbers are checked when it is made."""

    method: str
    backend: str
    gold: str
    runs: tuple[str, ...]
    source: str | None = None
    model: str | None = None
    endpoint: str | None = None
    extract_model: str | None = None
    nuggets_source: str | None = None
    threshold: float = DEFAULT_THRESHOLD
    batch: int = 32
    device: str | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    limit: int | None = None
    join: bool = False  # a chat model (ntr or ntn): work on the shared job of the source with other processes
    block_size: int | None = None
    lease: float | None = None

    def __post_init__(self):
        if not 0.0 <= self.threshold <= 1.0:
            raise AssessError(f"--threshold is a probability in [0, 1], not {self.threshold}")
        if self.batch < 1 or self.concurrency < 1:
            raise AssessError("--batch and --concurrency are at least 1")


@dataclasses.dataclass(frozen=True)
class MatchResult:
    """The label source a match run wrote and its report ``{method, backend, gold, runs, [nuggets_source,
    extraction,] matching}`` (``extraction`` is None when every response already had its nuggets)."""

    source: str
    report: dict


def _chat_client(cfg: dict):
    return OpenAIClient(cfg["model"], base_url=cfg["base_url"], api_key=cfg["api_key"])


def _extract(db, request: MatchRequest, chat_model: str | None, chat_cfg: dict | None) -> tuple[str, dict | None]:
    """NtN step one: the source of the extracted response nuggets, after extracting those still missing (with
    ``--join``, as a worker of the shared ``response-nuggets`` job of that source, restricted to the runs)."""

    model = (
        request.extract_model
        or chat_model
        or (prejudgments.source_model(db, request.nuggets_source) if request.nuggets_source else None)
        or llm_settings()["model"]
    )
    if not model:
        raise AssessError(
            "--method ntn extracts the responses' nuggets with a chat model: give --extract-model M (with "
            "--endpoint URL), or --nuggets-source SOURCE holding extracted response nuggets"
        )
    source = request.nuggets_source or f"llm:{model}"
    plan_ = extraction_plan(db, list(request.runs), source, model, limit=request.limit)
    if not plan_.todo:
        return source, None
    cfg = (
        chat_cfg
        if chat_cfg and chat_cfg["model"] == model
        else endpoint_settings(base_url=request.endpoint, model=model)
    )
    if request.join:
        summary = shared_jobs.run_shared(
            db,
            "response-nuggets",
            source,
            model,
            _chat_client(cfg),
            scope=shared_jobs.Scope(runs=tuple(sorted(request.runs))),
            **_shared_options(request, cfg),
        )
    else:
        summary = jobs.run(db, plan_, _chat_client(cfg), concurrency=request.concurrency, base_url=cfg["base_url"])
    return source, summary


def _shared_options(request: MatchRequest, cfg: dict) -> dict:
    return {
        "limit": request.limit,
        "concurrency": request.concurrency,
        "block_size": shared_jobs.DEFAULT_BLOCK_SIZE if request.block_size is None else request.block_size,
        "lease_s": request.lease,
        "base_url": cfg["base_url"],
    }


def _join(db, request: MatchRequest, source: str, chat_cfg: dict | None) -> MatchResult:
    """``nuggets match --join``: a worker of the shared job of ``source`` (:mod:`assess.services.shared_jobs`), with a
    chat model. NtR: the ``ntr`` job restricted to the runs' non-empty responses. NtN: the shared job that extracts
    the responses' nuggets still missing, then the ``ntn`` job (:class:`NtnItems`); every worker waits until the
    extraction's last block is done, so the NtN job's planner reads every extracted nugget."""
    if request.backend != "chat":
        raise AssessError(
            "--join shares a match with a chat model (--backend chat); the NLI backend runs in one process"
        )
    out: dict = {"method": request.method, "backend": "chat", "gold": request.gold, "runs": list(request.runs)}
    client = _chat_client(chat_cfg)
    if request.method == "ntr":
        summary = shared_jobs.run_shared(
            db,
            "ntr",
            source,
            chat_cfg["model"],
            client,
            scope=shared_jobs.Scope(nugget_source=request.gold, runs=tuple(sorted(request.runs))),
            **_shared_options(request, chat_cfg),
        )
    else:
        nuggets_source, extraction = _extract(db, request, chat_cfg["model"], chat_cfg)
        out["nuggets_source"], out["extraction"] = nuggets_source, extraction
        items = NtnItems(
            db,
            request.gold,
            request.runs,
            source,
            chat_cfg["model"],
            nuggets_source,
            threshold=request.threshold,
            limit=request.limit,
        )
        summary = shared_jobs.work_on(db, items, client, **_shared_options(request, chat_cfg))
        summary["matched"] = items.matched
    out["matching"] = summary
    return MatchResult(source, out)


def match(db, request: MatchRequest) -> MatchResult:
    """Match the gold nuggets of ``request.gold`` against the responses of ``request.runs`` (NtR, or NtN after
    extracting the responses' nuggets still missing), with a chat model or a local NLI model, as one job of
    the label source written. A ``KeyboardInterrupt`` keeps every match stored so far."""

    runs = list(request.runs)
    check_request(db, request.gold, runs, request.method, request.backend)
    chat_cfg = None
    if request.backend == "nli":
        model = request.model or nli_model_from_env() or clients.DEFAULT_NLI_MODEL
    else:
        chat_cfg = clients.endpoint_settings(base_url=request.endpoint, model=request.model)
        model = chat_cfg["model"]
    source = request.source or default_source(request.method, request.backend, model)
    if request.join:
        return _join(db, request, source, chat_cfg)
    if request.block_size is not None or request.lease is not None:
        raise AssessError("--block-size and --lease are options of a shared job: add --join")
    jobs.check_not_running(db, source, request.method)
    out: dict = {"method": request.method, "backend": request.backend, "gold": request.gold, "runs": runs}
    if request.method == "ntr":
        plan_ = ntr_plan(
            db,
            request.gold,
            runs,
            source,
            model,
            backend=request.backend,
            threshold=request.threshold,
            limit=request.limit,
        )
        if request.backend == "nli":
            nli = clients.NliClient(model, device=request.device, batch_size=request.batch)
            summary = jobs.run_nli(db, plan_, nli, threshold=request.threshold)
        else:
            client = _chat_client(chat_cfg)
            summary = jobs.run(db, plan_, client, concurrency=request.concurrency, base_url=chat_cfg["base_url"])
        summary["covered"] = plan_.covered
    else:
        chat_model = model if request.backend == "chat" else None
        nuggets_source, extraction = _extract(db, request, chat_model, chat_cfg)
        out["nuggets_source"], out["extraction"] = nuggets_source, extraction
        extracted = response_nuggets(db, nuggets_source, runs)
        ntn = ntn_plan(
            db,
            request.gold,
            runs,
            source,
            model,
            extracted,
            backend=request.backend,
            threshold=request.threshold,
            limit=request.limit,
        )
        if request.backend == "nli":
            nli = clients.NliClient(model, device=request.device, batch_size=request.batch)
            summary = run_ntn_nli(db, ntn, nli, threshold=request.threshold)
        else:
            summary = run_ntn_chat(
                db, ntn, _chat_client(chat_cfg), concurrency=request.concurrency, base_url=chat_cfg["base_url"]
            )
    out["matching"] = summary
    return MatchResult(source, out)
