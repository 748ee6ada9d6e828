"""What a pre-judging job asks about: one item reader per task of :data:`assess.tasks.PREJUDGE_TASKS`, each item
rendered with the task's prompt and hashed for the answer cache."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from assess.errors import AssessError
from assess.llm.prompts import Prompt, format_history, format_ptkb
from assess.tasks import (
    LABEL_KINDS,
    PREJUDGE_TASKS,
    SourceKind,
    Task,
    TurnContext,
    source_kind,
)
from store import banks, prejudgments
from store import responses as cited
from store.conversations import turn_contexts
from store.nuggets import gold

TASKS = tuple(PREJUDGE_TASKS)
LABEL_TASKS = tuple(name for name, t in PREJUDGE_TASKS.items() if t.labels)  # tasks whose answers are labels


@dataclass(frozen=True)
class Item:
    turn_id: str
    item_id: str
    messages: list
    input_hash: str
    parse_context: dict = field(default_factory=dict)
    label_context: dict = field(default_factory=dict)
    sample: int = 0  # which of the K answers about this input the call asks for


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


def raw_items(
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
