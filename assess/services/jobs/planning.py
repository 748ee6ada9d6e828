"""Planning a run: its options checked, what is done, copied from the cache or left for later, and what the
calls will cost."""

from __future__ import annotations

import math
from dataclasses import dataclass

from assess.errors import AssessError
from assess.llm.clients import (
    DEFAULT_CONCURRENCY,
    endpoint_settings,
)
from assess.llm.prompts import NO_PTKB, VARIANTS, Prompt, prompt_for
from assess.services import endpoints as endpoint_figures
from assess.services.jobs.items import (
    LABEL_TASKS,
    TASKS,
    Item,
    chat_item,
    chat_settings,
    checked_temperature,
    input_hash,
    raw_items,
)
from store import jobs as store_jobs
from store import prejudgments

MAX_SAMPLES = 20  # answers per item a run may ask for
DEFAULT_LATENCY_S = 2.0  # assumed seconds per call when the store has no measured latency


@dataclass
class Plan:
    """What a run will do: items to ask, answers to copy, and what it leaves out and why."""

    task: str
    source: str
    model: str
    prompt_version: str
    prompt: Prompt | None  # None for the NLI backend
    items: list[Item]  # to ask the model
    copies: list[tuple[Item, dict]]  # answered before (another source or item): copied, no call
    covered: int  # items the task covers
    already: int  # answered before for this source: nothing to do
    skipped: int  # left out, see skipped_reason
    skipped_reason: str | None
    deferred: int  # left for a later run by ``limit``
    max_tokens: int | None = None
    samples: int = 1  # answers asked per item (self-consistency)
    temperature: float = 0  # sent with every call; part of the cache key

    @property
    def todo(self) -> int:
        return len(self.items) + len(self.copies)

    @property
    def settings_text(self) -> str:
        """The generation settings for people and for the job's record."""
        answers = "1 answer" if self.samples == 1 else f"{self.samples} answers (their consensus the label)"
        return f"temperature {self.temperature:g}, {answers} per item"


def setup(
    db,
    task: str,
    source: str,
    model: str,
    *,
    limit: int | None = None,
    backend: str = "chat",
    nli_threshold: float = 0.5,
    samples: int = 1,
    temperature: float | None = None,
    variant: str | None = None,
) -> tuple[Prompt | None, str, int | None, dict, float]:
    """Check a run's options and the source (:class:`AssessError`, one line, on the first refused one): the prompt
    (None for NLI), its version, the answer's token limit, the generation settings hashed into the cache key, and
    the temperature."""
    if task not in TASKS:
        raise AssessError(f"task is one of {', '.join(TASKS)}, not {task!r}")
    if limit is not None and limit < 0:
        raise AssessError(f"--limit is a number of items >= 0, not {limit}")
    if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= MAX_SAMPLES:
        raise AssessError(f"--samples is a number of answers per item from 1 to {MAX_SAMPLES}, not {samples!r}")
    if samples > 1 and task not in LABEL_TASKS:
        raise AssessError(
            f"--samples K asks for K answers to a labelling task ({', '.join(LABEL_TASKS)}), not to {task!r}"
        )
    temperature_ = checked_temperature(temperature)
    prejudgments.check_llm_source(db, source, model)
    if backend == "nli":
        if task != "ntr":
            raise AssessError("the NLI backend judges the ntr task only (entailment of a nugget by a response)")
        if samples > 1 or temperature_ or variant:
            raise AssessError("the NLI backend gives one deterministic answer: no --samples, --temperature or variant")
        prompt, version, max_tokens = None, f"nli-entailment@p>={nli_threshold:g}", None
        settings = {"threshold": nli_threshold}
    elif backend == "chat":
        try:
            prompt = prompt_for(task, variant)
        except ValueError as exc:
            raise AssessError(str(exc)) from None
        version, max_tokens = prompt.version, prompt.max_tokens
        settings = chat_settings(prompt, temperature_)
        _check_variant_source(db, source, task, prompt)
    else:
        raise AssessError(f"backend is chat or nli, not {backend!r}")
    return prompt, version, max_tokens, settings, temperature_


def plan(
    db,
    task: str,
    source: str,
    model: str,
    *,
    limit: int | None = None,
    depth: int | None = None,
    nugget_source: str | None = None,
    qrels: str | None = None,
    relevant: int = 2,
    dedup: bool = False,
    backend: str = "chat",
    nli_threshold: float = 0.5,
    samples: int = 1,
    temperature: float | None = None,
    variant: str | None = None,
) -> Plan:
    """Plan a run of ``task`` for ``source`` with ``model``: render, hash, drop what is done, copy cached answers.

    ``depth``: the passage (or nugget) task covers the top ``depth`` of every stored run instead of the
    pool (adaptive pooling grades candidates before they enter the pool). ``qrels``/``relevant``: the
    nugget task reads only passages that source graded >= relevant. ``backend='nli'`` (NtR only) scores
    entailment with a local NLI model instead of asking a chat model. ``samples``: K answers per item
    (numbered 0..K-1; only the missing numbers are asked); ``temperature``: sent with every call (default 0).
    ``variant``: a prompt variant of the task (:data:`assess.llm.prompts.VARIANTS`, e.g. ``no-ptkb``).
    ``limit`` counts items: an item with any answer missing is asked for all its missing answers.
    """
    prompt, version, max_tokens, settings, temperature_ = setup(
        db,
        task,
        source,
        model,
        limit=limit,
        backend=backend,
        nli_threshold=nli_threshold,
        samples=samples,
        temperature=temperature,
        variant=variant,
    )
    raw, skipped, reason = raw_items(
        db, task, depth=depth, nugget_source=nugget_source, qrels=qrels, relevant=relevant, dedup=dedup
    )
    exists = _source_exists(db, source)
    done = [
        prejudgments.judged(db, source, task, model, version, sample=k) if exists else set() for k in range(samples)
    ]
    pending: list[list[Item]] = []  # per item, its missing answers
    for turn, item_id, fields, parse_ctx, label_ctx in raw:
        if prompt is None:  # NLI: a (premise, hypothesis) pair, no prompt and no delimiters
            messages = [fields["response"], fields["nugget"]]
            item = Item(turn, item_id, messages, input_hash(messages, settings), parse_ctx, label_ctx)
            missing = [] if (turn, item_id, item.input_hash) in done[0] else [item]
        else:
            first = chat_item(prompt, settings, turn, item_id, fields, parse_ctx, label_ctx)
            key = (turn, item_id, first.input_hash)
            missing = [
                first if k == 0 else chat_item(prompt, settings, turn, item_id, fields, parse_ctx, label_ctx, k)
                for k in range(samples)
                if key not in done[k]
            ]
        if missing:
            pending.append(missing)
    already = len(raw) - len(pending)
    deferred = 0
    if limit is not None and len(pending) > limit:
        deferred, pending = len(pending) - limit, pending[:limit]
    asks = [it for missing in pending for it in missing]
    hits = {
        k: prejudgments.cached(db, model, version, {it.input_hash for it in asks if it.sample == k}, sample=k)
        for k in sorted({it.sample for it in asks})
    }
    copies = [(it, hits[it.sample][it.input_hash]) for it in asks if it.input_hash in hits[it.sample]]
    calls = [it for it in asks if it.input_hash not in hits[it.sample]]
    return Plan(
        task,
        source,
        model,
        version,
        prompt,
        calls,
        copies,
        len(raw),
        already,
        skipped,
        reason,
        deferred,
        max_tokens,
        samples=samples,
        temperature=temperature_,
    )


def _check_variant_source(db, source: str, task: str, prompt: Prompt) -> None:
    """Refuse to mix a task's prompt and its variants in one source: the source's labels would become the
    other prompt's answers (a source has one label per item). A variant's answers go to a source of their own."""
    variants = {p.name: v for (t, v), p in VARIANTS.items() if t == task}
    if not variants or not _source_exists(db, source):
        return
    latest = prejudgments.stored(db, source, task, limit=1)
    other = latest[0]["prompt_version"].split("@")[0] if latest else None
    if other in {*variants, prompt_for(task).name} and other != prompt.name:
        hint = f" (e.g. {source}:{variants[prompt.name]})" if prompt.name in variants else ""
        raise AssessError(
            f"{source!r} holds {task} answers of the prompt {other!r}: answers of {prompt.name!r} would replace "
            f"its labels; give another --source{hint}"
        )


def default_source(task: str, model: str, variant: str | None = None) -> str:
    """The default source of a run: ``llm:MODEL``; a prompt variant's answers ``llm:MODEL:VARIANT`` (e.g.
    ``llm:gpt-4o:no-ptkb``), so that they never replace the labels of the task's own prompt."""
    source = f"llm:{model}"
    return source if variant is None else f"{source}:{variant}"


def persona_versions() -> tuple[str, str]:
    """The prompt versions a persona-sensitivity audit compares: the passage prompt with and without the PTKB
    statements (read both with :func:`store.prejudgments.answers_by_prompt_version` by model)."""
    return prompt_for("passage").version, prompt_for("passage", NO_PTKB).version


def _source_exists(db, source: str) -> bool:
    return source in prejudgments.llm_sources(db)


def estimate(
    plan_: Plan,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    latency_s: float | None = None,
    price_in: float | None = None,
    price_out: float | None = None,
) -> dict:
    """Tokens, cost and time of the calls a plan will make.

    Input tokens ≈ characters / 4 of the rendered messages; output tokens = the prompt's expected
    answer length; cost = tokens × price per million (None when no price is given); time =
    ceil(calls / concurrency) × seconds per call (measured before, or :data:`DEFAULT_LATENCY_S`).
    """
    chars = sum(message_chars(it.messages) for it in plan_.items)
    return estimate_counts(
        plan_,
        calls=len(plan_.items),
        chars=chars,
        copies=len(plan_.copies),
        concurrency=concurrency,
        latency_s=latency_s,
        price_in=price_in,
        price_out=price_out,
    )


def message_chars(messages: list) -> int:
    """Characters of a call's messages (chat: their contents; NLI: the two texts): the input of a token estimate."""
    return sum(len(m["content"]) if isinstance(m, dict) else len(m) for m in messages)


def estimate_counts(
    plan_: Plan,
    *,
    calls: int,
    chars: int,
    copies: int,
    concurrency: int = DEFAULT_CONCURRENCY,
    latency_s: float | None = None,
    price_in: float | None = None,
    price_out: float | None = None,
) -> dict:
    """:func:`estimate` from counts (``calls``, their ``chars``, ``copies``) instead of the plan's lists: a shared
    job keeps its counts on its row, not its items in memory."""
    tokens_in = math.ceil(chars / 4)
    tokens_out = calls * (plan_.prompt.expected_output_tokens if plan_.prompt else 0)
    latency = DEFAULT_LATENCY_S if latency_s is None else latency_s
    cost = None
    if price_in is not None or price_out is not None:
        cost = tokens_in * (price_in or 0) / 1e6 + tokens_out * (price_out or 0) / 1e6
    return {
        "task": plan_.task,
        "source": plan_.source,
        "model": plan_.model,
        "prompt_version": plan_.prompt_version,
        "covered": plan_.covered,
        "already": plan_.already,
        "skipped": plan_.skipped,
        "skipped_reason": plan_.skipped_reason,
        "deferred": plan_.deferred,
        "samples": plan_.samples,
        "temperature": plan_.temperature,
        "calls": calls,
        "copies": copies,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "cost": cost,
        "latency_s": latency,
        "concurrency": concurrency,
        "seconds": math.ceil(calls / max(1, concurrency)) * latency if calls else 0.0,
    }


def describe_estimate(e: dict) -> str:
    """The estimate as two lines for people."""
    skipped = f", {e['skipped']} {e['skipped_reason']} skipped" if e["skipped"] else ""
    deferred = f", {e['deferred']} left for later (--limit)" if e["deferred"] else ""
    cost = (
        "cost unknown (give --price-in/--price-out, USD per million tokens)"
        if e["cost"] is None
        else f"≈ ${e['cost']:.2f}"
    )
    answers = ""
    if e.get("samples", 1) > 1:
        answers = f", {e['samples']} answers each at temperature {e['temperature']:g} (their consensus the label)"
        if not e["temperature"]:
            answers += " -- at temperature 0 the answers hardly differ; give --temperature"
    return (
        f"{e['task']} for {e['source']} with {e['model']} ({e['prompt_version']}): {e['covered']} items"
        f"{skipped}{answers}; {e['already']} already judged, {e['copies']} from cache, {e['calls']} to ask{deferred}.\n"
        f"≈ {e['tokens_in']:,} input + {e['tokens_out']:,} output tokens, {cost}; "
        f"≈ {_duration(e['seconds'])} at concurrency {e['concurrency']} ({e['latency_s']:.2f} s per call)"
    )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def measured_latency_s(db, model: str) -> float | None:
    ms = prejudgments.median_latency_ms(db, model)
    return None if ms is None else ms / 1000


def check_not_running(db, source: str, task: str) -> None:
    """Refuse to start (:class:`AssessError`, one line) while a live job of the same source and task runs:
    both would ask the model about every item. A killed job (process gone, no heartbeat) does not count."""
    store_jobs.check_not_running(db, source, task)


def prepare(
    db,
    task: str,
    *,
    model: str | None = None,
    base_url: str | None = None,
    endpoint: str | None = None,
    source: str | None = None,
    limit: int | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    starting: bool = False,
    **options,
) -> tuple[Plan, dict, dict]:
    """Endpoint settings (arguments over environment), the plan and its estimate: what the app shows before a run.

    ``endpoint``: the name of an endpoint the deployment allows (:func:`assess.services.endpoints.endpoint_config`,
    what the /llm page passes; anything else is refused before any call), instead of ``base_url``.
    ``starting``: refuse first (:func:`check_not_running`) when a live job of the same source and task runs."""
    if endpoint is not None:
        if base_url is not None:
            raise AssessError("name an allowed endpoint or give a base URL, not both")
        cfg = endpoint_figures.endpoint_config(endpoint, model)
    else:
        cfg = endpoint_settings(base_url=base_url, model=model)
    source = source or default_source(task, cfg["model"], options.get("variant"))
    if starting:
        check_not_running(db, source, task)
    plan_ = plan(db, task, source, cfg["model"], limit=limit, **options)
    return plan_, estimate(plan_, concurrency=concurrency, latency_s=measured_latency_s(db, cfg["model"])), cfg
