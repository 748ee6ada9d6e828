"""Pre-judging jobs: which items a task covers, what a run will cost, and running it resumably.

A run is planned first (:func:`plan`): every item the task covers is rendered with the task's
prompt and hashed; items the source already has an answer for (same model, prompt version and
input) are left out, answers another source got from the same model, prompt and input are copied
instead of asked again, and ``limit`` caps what is left. :func:`run` then asks the model with
bounded concurrency and stores each result in its own transaction the moment it arrives, so an
interrupted run loses nothing and the next run picks up exactly the items still missing.

Self-consistency: with ``samples=K`` the model is asked K times about each item (answers numbered 0..K-1,
each an outcome of its own, ``prejudgments.sample``); the label is their :func:`assess.tasks.consensus`
(the most frequent value, a tie by the mean rounded half up), recomputed by the store as each answer
arrives. The temperature is part of the cache key (an answer at 0.7 is not one at 0) and is sent with
every call; a run with a larger K asks only for the answers numbered from the old K on.

No Streamlit and no SQL here: the store functions live in :mod:`store.prejudgments` and :mod:`store.jobs`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from assess.errors import AssessError
from assess.llm.clients import DEFAULT_CONCURRENCY, ChatClient, ClientError, NliClient, Reply, complete_all
from assess.llm.prompts import NO_PTKB, VARIANTS, Prompt, format_history, format_ptkb, prompt_for
from assess.services import endpoints as endpoint_figures
from assess.tasks import (
    LABEL_KINDS,
    LABELLED_STATUSES,
    PREJUDGE_TASKS,
    JobStatus,
    ParseStatus,
    SourceKind,
    Task,
    TurnContext,
    source_kind,
)
from store import banks, prejudgments
from store import jobs as store_jobs
from store import responses as cited
from store.conversations import turn_contexts
from store.nuggets import gold

TASKS = tuple(PREJUDGE_TASKS)
LABEL_TASKS = tuple(name for name, t in PREJUDGE_TASKS.items() if t.labels)  # tasks whose answers are labels
MAX_SAMPLES = 20  # answers per item a run may ask for
DEFAULT_LATENCY_S = 2.0  # assumed seconds per call when the store has no measured latency
MAX_CONSECUTIVE_ERRORS = 10  # a run stops (as failed) after this many failed calls in a row

Progress = Callable[[int, int, dict], None]


@dataclass(frozen=True)
class Item:
    turn_id: str
    item_id: str
    messages: list
    input_hash: str
    parse_context: dict = field(default_factory=dict)
    label_context: dict = field(default_factory=dict)
    sample: int = 0  # which of the K answers about this input the call asks for


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


def input_hash(messages: Any, settings: dict) -> str:
    """sha256 of an input and the generation settings (the cache key with model and prompt version).

    For a chat prompt the input is the prompt's version and its untrusted values (:meth:`Prompt.inputs`),
    never the rendered messages: those carry a random delimiter code that changes with every call."""
    blob = json.dumps({"input": messages, "settings": settings}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def chat_item(
    prompt: Prompt,
    settings: dict,
    turn_id: str,
    item_id: str,
    fields: dict,
    parse_context: dict | None = None,
    label_context: dict | None = None,
    sample: int = 0,
) -> Item:
    """One chat item: messages rendered with a fresh delimiter code, hashed by version and values only
    (the answer number ``sample`` is not part of the hash: the K answers are to one input)."""
    key = {"prompt": prompt.version, "inputs": prompt.inputs(**fields)}
    return Item(
        turn_id,
        item_id,
        prompt.render(**fields),
        input_hash(key, settings),
        parse_context or {},
        label_context or {},
        sample,
    )


def chat_settings(prompt: Prompt, temperature: float = 0) -> dict:
    """The generation settings every chat call of ``prompt`` is made with (part of the cache key).

    Temperature 0 is written as the integer 0 whichever way it is given, so the key of a default run is the
    one it has always been."""
    return {"max_tokens": prompt.max_tokens, "temperature": _temperature(temperature)}


def checked_temperature(value: float | None) -> float:
    """The temperature a run sends (0 when not given), refused (one line) outside 0..2."""
    return _temperature(value)


def _temperature(value: float | None) -> float:
    if value is None:
        return 0
    value = float(value)
    if not (math.isfinite(value) and 0 <= value <= 2):
        raise AssessError(f"--temperature is between 0 and 2, not {value:g}")
    return 0 if value == 0 else value


def turn_prompt_fields(ctx: TurnContext) -> dict[str, str]:
    """The fields a turn gives the passage and PTKB prompts: conversation so far, utterance, resolved, PTKB."""
    return {
        "history": format_history(ctx.history),
        "utterance": ctx.utterance or "",
        "resolved": ctx.query,
        "ptkb": format_ptkb(ctx.ptkb),
    }


RawItem = tuple[str, str, dict, dict, dict]  # turn, item id, template fields, parse context, label context


@dataclass(frozen=True)
class _Scope:
    """What a run's options say about which items a task covers."""

    depth: int | None
    nugget_source: str | None
    qrels: str | None
    relevant: int
    dedup: bool
    turn: str | None = None  # one turn's items only (the streaming planner of a shared job goes turn by turn)


_READERS: dict[str, Callable[[Any, dict, _Scope], Iterable[RawItem | None]]] = {}


def _reads(task: str):
    """Register the item reader of ``task`` (an entry of :data:`assess.tasks.PREJUDGE_TASKS`): it yields each
    item the task covers, None for one left out (the entry's ``skipped``)."""

    def register(reader):
        _READERS[task] = reader
        return reader

    return register


@_reads("passage")
def _passage_items(db, contexts, scope):
    for r in prejudgments.passage_items(db, depth=scope.depth, turn_id=scope.turn):
        if not r["text"]:
            yield None
            continue
        yield (
            r["turn_id"],
            r["passage_id"],
            {**turn_prompt_fields(contexts[r["turn_id"]]), "passage": r["text"]},
            {},
            {},
        )


@_reads("ptkb")
def _ptkb_items(db, contexts, scope):
    for r in prejudgments.ptkb_items(db, turn_id=scope.turn):
        yield (
            r["turn_id"],
            r["statement_id"],
            {**turn_prompt_fields(contexts[r["turn_id"]]), "statement": r["text"]},
            {},
            {},
        )


@_reads("ntr")
@_reads("ntr-support")
def _ntr_items(db, contexts, scope):
    for r in prejudgments.ntr_items(
        db, resolve_nugget_source(db, scope.nugget_source), dedup=scope.dedup, turn_id=scope.turn
    ):
        item_id = LABEL_KINDS[Task.NTR].key.encode_id((r["nugget_id"], r["run"]))
        yield r["turn_id"], item_id, {"nugget": r["nugget"], "response": r["response"]}, {}, {}


@_reads("importance")
def _importance_items(db, contexts, scope):
    source = resolve_nugget_source(db, scope.nugget_source)
    for turn in gold.nugget_turns(db, source):
        if scope.turn is not None and turn != scope.turn:
            continue
        for n in gold.turn_nuggets(db, source, turn):
            if scope.dedup and not n["in_dedup"]:
                continue
            yield turn, str(n["id"]), {"query": contexts[turn].query, "nugget": n["text"]}, {}, {}


@_reads("citation")
def _citation_items(db, contexts, scope):
    for r in cited.citation_items(db, turn_id=scope.turn):
        if not r["passage_text"]:
            yield None
            continue
        turn = r["turn_id"]
        fields = {"query": contexts[turn].query, "sentence": r["sentence_text"], "passage": r["passage_text"]}
        yield turn, LABEL_KINDS[Task.CITATION].key.encode_id((r["run"], r["sentence"], r["passage_id"])), fields, {}, {}


@_reads("battle")
def _battle_items(db, contexts, scope):
    """Every pair of runs with a response to a turn, in both orders (the second shows the pair swapped: the
    judge's position bias is the share of pairs whose verdict flips)."""
    answers: dict[str, dict[str, str]] = {}
    for r in prejudgments.response_items(db, turn_id=scope.turn):
        answers.setdefault(r["turn_id"], {})[r["run"]] = r["text"]
    key = LABEL_KINDS[Task.BATTLE].key
    for turn, by_run in answers.items():
        runs = sorted(by_run)
        for n, x in enumerate(runs):
            for y in runs[n + 1 :]:
                for left, right in ((x, y), (y, x)):
                    fields = {**turn_prompt_fields(contexts[turn]), "left": by_run[left], "right": by_run[right]}
                    yield turn, key.encode_id((left, right, 0)), fields, {}, {}


@_reads("bank-match")
def _bank_match_items(db, contexts, scope):
    for r in banks.match_items(db):
        turn = r["topic_id"]
        report = "\n".join(f"[{n}] {text}" for n, text in enumerate(r["sentences"], start=1))
        fields = {"question": r["question"], "answer": r["answer_text"], "report": report}
        item_id = LABEL_KINDS[Task.BANK_MATCH].key.encode_id((r["run"], r["nugget"], r["answer"]))
        yield turn, item_id, fields, {"sentences": len(r["sentences"])}, {}


@_reads("nuggets")
def _nugget_span_items(db, contexts, scope):
    if scope.qrels:
        rows = prejudgments.relevant_passage_items(db, scope.qrels, scope.relevant, turn_id=scope.turn)
    else:
        rows = prejudgments.passage_items(db, depth=scope.depth, turn_id=scope.turn)
    for r in rows:
        turn, text = r["turn_id"], r["text"]
        if not text:
            yield None
            continue
        yield (
            turn,
            r["passage_id"],
            {"query": contexts[turn].query, "text": text},
            {"source": text},
            {"grade": r.get("grade")},
        )


@_reads("response-nuggets")
def _response_nugget_items(db, contexts, scope):
    for r in prejudgments.response_items(db, turn_id=scope.turn):
        turn, text = r["turn_id"], r["text"]
        yield turn, r["run"], {"query": contexts[turn].query, "text": text}, {"source": text}, {}


@_reads("aepd")
def _aepd_items(db, contexts, scope):
    for r in prejudgments.response_items(db, turn_id=scope.turn):
        turn, text = r["turn_id"], r["text"]
        ctx = contexts[turn]
        fields = {"query": ctx.query, "ptkb": format_ptkb(ctx.ptkb), "response": text}
        yield turn, r["run"], fields, {"source": text, "statements": [s["id"] for s in ctx.ptkb]}, {}


if set(_READERS) != set(PREJUDGE_TASKS):  # the table and the readers name the same tasks
    raise RuntimeError(f"pre-judge tasks without a reader or entry: {set(_READERS) ^ set(PREJUDGE_TASKS)}")


def _raw_items(
    db, task: str, *, depth: int | None, nugget_source: str | None, qrels: str | None, relevant: int, dedup: bool
) -> tuple[list[RawItem], int, str | None]:
    """(turn, item, template fields, parse context, label context) of every item, and how many were left out."""
    if task not in PREJUDGE_TASKS:
        raise AssessError(f"task is one of {', '.join(TASKS)}, not {task!r}")
    scope = _Scope(depth, nugget_source, qrels, relevant, dedup)
    out, skipped = [], 0
    for raw in _READERS[task](db, turn_contexts(db), scope):
        if raw is None:
            skipped += 1
        else:
            out.append(raw)
    return out, skipped, PREJUDGE_TASKS[task].skipped if skipped else None


BY_TURN = frozenset(PREJUDGE_TASKS) - {"bank-match"}  # tasks whose readers take one turn (bank matches go by topic)


def turn_items(
    db,
    task: str,
    contexts: dict,
    turn: str,
    *,
    depth: int | None = None,
    nugget_source: str | None = None,
    qrels: str | None = None,
    relevant: int = 2,
    dedup: bool = False,
) -> list[RawItem | None]:
    """The items ``task`` covers in one turn, in key order (None for one left out): what a streaming planner reads
    turn by turn instead of every item at once. ``contexts``: :func:`store.conversations.turn_contexts`."""
    if task not in BY_TURN:
        raise AssessError(f"the {task} task's items are not read turn by turn: it runs in one process (no --join)")
    return list(_READERS[task](db, contexts, _Scope(depth, nugget_source, qrels, relevant, dedup, turn)))


def ntr_run(item_id: str) -> str:
    """The run an NtR item (``'<nugget id> <run>'``) is about."""
    return LABEL_KINDS[Task.NTR].key.decode_id(item_id)[1]


def copied_outcome(plan_: Plan, item: Item, job_id: int, answer: dict) -> prejudgments.Prejudgment:
    """An earlier answer (:func:`store.prejudgments.answer`) copied for ``item`` instead of asking again."""
    return _outcome(
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


def resolve_nugget_source(db, nugget_source: str | None) -> str:
    """The nugget set NtR matches against: the one given, or the store's only non-LLM nugget source."""
    sources = prejudgments.nugget_sources(db)
    if nugget_source:
        if nugget_source not in sources:
            raise AssessError(f"no nuggets of source {nugget_source!r}; nugget sources: {', '.join(sources) or 'none'}")
        return nugget_source
    human = [s for s in sources if source_kind(s) is not SourceKind.LLM]
    if len(human) != 1:
        raise AssessError(
            f"name the gold nuggets with --nuggets SOURCE (nugget sources: {', '.join(sources) or 'none'})"
        )
    return human[0]


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
    temperature_ = _temperature(temperature)
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
    raw, skipped, reason = _raw_items(
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


# ------------------------------------------------------------------------------------------- running


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


def _outcome(
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


def _store_result(db, plan_: Plan, item: Item, reply: Reply, job_id: int, tally: Tally) -> None:
    p = plan_
    outcome = reply_outcome(
        p.prompt, item, reply, source=p.source, task=p.task, model=p.model, version=p.prompt_version, job_id=job_id
    )
    prejudgments.save(db, outcome, label_context=item.label_context)
    tally.counts[outcome.parse_status] += 1
    tally.asked += 1


def _copy_cached(db, plan_: Plan, item: Item, row: dict, job_id: int, tally: Tally) -> None:
    outcome = _outcome(
        plan_,
        item,
        job_id,
        row["raw_output"],
        row["parse_status"],
        parsed=row["parsed"],
        note=row["note"],
        latency_ms=0,
        attempts=0,
        cached_from=row["id"],
    )
    prejudgments.save(db, outcome, label_context=item.label_context)
    tally.counts[row["parse_status"]] += 1
    tally.copied += 1


def job_listing(db, limit: int = 20) -> list[dict]:
    """The latest jobs, newest first (:func:`store.jobs.jobs`); a shared job (``prejudge --join``) also carries its
    planner's state (``planning``: items read so far, None once its list is complete) and its ``workers``."""
    out = []
    for j in store_jobs.jobs(db, limit=limit):
        shared = store_jobs.shared_job(db, j["id"])
        if shared["shared"]:
            j = j | {
                "planning": None if shared["planned_at"] else shared["scanned"],
                "block_size": shared["block_size"],
                "lease_s": shared["lease_s"],
                "workers": store_jobs.workers(db, j["id"]),
            }
        out.append(j)
    return out


def worker_rows(db, job_ids: list[int]) -> list[dict]:
    """The workers of the shared jobs among ``job_ids``, one row each with captions for a table (the /llm page)."""
    out = []
    for job_id in job_ids:
        if not store_jobs.shared_job(db, job_id)["shared"]:
            continue
        for w in store_jobs.workers(db, job_id):
            out.append(
                {
                    "job": job_id,
                    "worker": w["id"],
                    "host": w["host"],
                    "pid": w["pid"],
                    "status": w["status"],
                    "blocks claimed": w["claimed"],
                    "items held": w["holding"],
                    "stored": w["done"],
                    "failed": w["errors"],
                    "last heartbeat": w["heartbeat_at"],
                }
            )
    return out


def describe_worker(w: dict) -> str:
    """One worker of a shared job as a line for people."""
    held = f", holding {w['holding']} items" if w["holding"] else ""
    failed = f" ({w['errors']} failed)" if w["errors"] else ""
    note = f"; {w['message']}" if w["message"] and w["status"] != JobStatus.RUNNING.value else ""
    return (
        f"worker {w['id']} {w['status']}: pid {w['pid']} on {w['host']}, {w['claimed']} blocks claimed{held}, "
        f"{w['done']} stored{failed}, last heartbeat {w['heartbeat_at']}{note}"
    )


def check_not_running(db, source: str, task: str) -> None:
    """Refuse to start (:class:`AssessError`, one line) while a live job of the same source and task runs:
    both would ask the model about every item. A killed job (process gone, no heartbeat) does not count."""
    store_jobs.check_not_running(db, source, task)


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
    from assess.llm.clients import DEFAULT_TIMEOUT

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
            _copy_cached(db, plan_, item, row, job_id, tally)
            tick()
        requests = ((item, item.messages, plan_.max_tokens) for item in plan_.items)
        for item, reply in ask_all(client, requests, tally, concurrency=concurrency):
            _store_result(db, plan_, item, reply, job_id, tally)
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
            _copy_cached(db, plan_, item, row, job_id, tally)
        pairs = lambda it: [(it.messages[0], it.messages[1])]  # noqa: E731
        for batch, probs, each in nli_batches(plan_.items, nli, pairs, nli.batch_size):
            for it, p in zip(batch, probs):
                raw = json.dumps({"entailment": round(p, 6)})
                outcome = _outcome(
                    plan_, it, job_id, raw, ParseStatus.OK, parsed=int(p >= threshold), latency_ms=each, attempts=1
                )
                prejudgments.save(db, outcome)
                tally.counts[ParseStatus.OK] += 1
                tally.asked += 1
            if progress is not None:
                progress(tally.done, total, tally.counts)

    run_job(db, job_id, tally, work)
    return tally.summary(job_id, JobStatus.DONE.value)


def aepd_document(db, source: str) -> dict:
    """The source's parsed AEPD aspects as an AEPD input document (``score aepd`` / :func:`assess.measures.aepd.score_aepd_document`)."""
    turns = []
    for row in reversed(prejudgments.stored(db, source, "aepd", limit=1_000_000)):
        if row["parse_status"] in LABELLED_STATUSES and row["parsed"]:
            aspects = json.loads(row["parsed"])["aspects"]
            turns.append(
                {
                    "id": f"{row['item_id']}/{row['turn_id']}",
                    "system": row["item_id"],
                    "aspects": [{"aspect": a["aspect"], "ptkb": a["ptkb"], "text": a["text"]} for a in aspects],
                }
            )
    latest = {t["id"]: t for t in turns}  # the newest answer per run and turn
    return {"turns": list(latest.values())}


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
    from assess.llm.clients import endpoint_settings

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
    from assess.llm.clients import OpenAIClient

    client_options.setdefault("temperature", plan_.temperature)
    client = OpenAIClient(cfg["model"], base_url=cfg["base_url"], api_key=cfg["api_key"], **client_options)
    return run(db, plan_, client, concurrency=concurrency, progress=progress, base_url=cfg["base_url"])


def describe_adaptive(r: dict) -> str:
    """An adaptive pooling report (:func:`assess.services.pooling.adaptive_pool`) as lines for people."""
    if r["mode"] == "runs":
        lines = [
            f"{r['runs']} runs, depth {r['depth']}: {r['depth_pool']} pairs; adaptive pool (top {r['always']} + "
            f"{r['source']} >= {r['threshold']}): {r['adaptive_pool']} pairs, {r['saved']} saved "
            f"({r['saved_share']:.1%}); {r['ungraded']} candidates not graded by {r['source']} left out"
        ]
    else:
        share = "n/a" if r["saved_share"] is None else f"{r['saved_share']:.1%}"
        both = f" and {r['qrels']}" if r["qrels"] else ""
        lines = [
            f"no stored runs: over the {r['pairs']} pairs judged by {r['source']}{both}, {r['source']} >= "
            f"{r['threshold']} keeps {r['kept']} and drops {r['saved']} ({share})"
        ]
    if r.get("qrels"):
        share = "n/a" if r["relevant_dropped_share"] is None else f"{r['relevant_dropped_share']:.1%}"
        lines.append(
            f"{r['qrels']}: {r['relevant']} relevant pairs (grade >= {r['relevant_grade']}), "
            f"{r['relevant_dropped']} dropped by the filter ({share}); dropped by grade "
            f"{r['relevant_dropped_by_grade']}"
        )
    if "added_to_pool" in r:
        lines.append(f"added {r['added_to_pool']} pairs to the pool (method adaptive)")
    return "\n".join(lines)


def describe_stored(s: dict) -> str:
    """What a run stored, by parse status: the part of a run summary the CLI and the LLM page share."""
    return (
        f"{s['asked'] + s['copied']} stored ({s['ok']} ok, {s['repaired']} repaired, {s['unparseable']} "
        f"unparseable, {s['error']} failed), {s['copied']} from cache"
    )


def describe_progress(done: int, total: int, counts: dict) -> tuple[float, str]:
    """A running job's progress as a fraction and a caption."""
    return (
        done / total if total else 1.0,
        f"{done} / {total} stored · {counts['unparseable']} unparseable · {counts['error']} failed",
    )


def adaptive_sources(db) -> tuple[list[str], list[str]]:
    """The LLM sources that can drive adaptive pooling, and the other passage label sources (human qrels)."""
    from store import labels

    llm = prejudgments.llm_sources(db)
    return llm, [s for s in labels.sources(db, "passage") if s not in llm]


def adaptive_metrics(r: dict) -> dict[str, int]:
    """The headline numbers of an adaptive pooling report, by caption."""
    runs = r["mode"] == "runs"
    shown = {
        "Pool before (depth pool)" if runs else "Pairs judged": r["depth_pool"] if runs else r["pairs"],
        "Pool after (adaptive)": r["adaptive_pool"] if runs else r["kept"],
        "Saved": r["saved"],
    }
    if runs:
        shown["Not graded (left out)"] = r["ungraded"]
    if r.get("qrels"):
        shown[f"Relevant in {r['qrels']}"] = r["relevant"]
        shown["Relevant dropped"] = r["relevant_dropped"]
    return shown


def store_copy(db, plan_: Plan, item: Item, row: dict, job_id: int, tally: Tally) -> None:
    """Store another source's answer to the same model, prompt and input as ``item``'s (no call), counted in
    ``tally``: the first step of every run, live or from a batch file (:mod:`assess.services.batch_files`)."""
    _copy_cached(db, plan_, item, row, job_id, tally)
