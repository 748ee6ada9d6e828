"""LLM pre-judgments in the store: the items a task covers, the cache, one transaction per result
(the raw outcome and, when it parsed, the source's label), adaptive pooling and the audit queries
(raw outputs beside labels, anchoring after reveal). Jobs live in :mod:`store.jobs`.

Answers of susceptibility probes (:mod:`assess.llm.probes`, prompt versions marked ``~probe:``) are
stored like any answer but never give a label, and the audit queries leave them out."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from assess.errors import AssessError
from assess.formats.banks import BankMatch
from assess.llm.probes import PROBE_MARK, is_probe
from assess.llm.prompts import bank_match_sentences
from assess.tasks import (
    LABEL_KINDS,
    LABELLED_STATUSES,
    JudgingMode,
    Label,
    ParseStatus,
    SourceKind,
    Task,
    consensus,
    label_kind,
    source_kind,
)
from store import jobs, labels
from store.banks import write_llm_match
from store.bulk import by_keys
from store.compare import label_pairs
from store.db import Store, column, each, now, returning, row, rows, run, run_many, value, write
from store.nuggets import gold
from store.queue import revealed_labels
from store.sources import ensure_source


@dataclass(frozen=True)
class Prejudgment:
    """One stored outcome of asking a model about one item."""

    source: str
    task: str
    turn_id: str
    item_id: str
    model: str
    prompt_version: str
    input_hash: str
    raw_output: str | None
    parse_status: str
    parsed: Any = None
    note: str | None = None
    error: str | None = None
    latency_ms: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    attempts: int | None = None
    cached_from: int | None = None
    job_id: int | None = None
    sample: int = 0  # which of K answers asked for the same input (self-consistency); 0 when one is asked


# ------------------------------------------------------------------------------------------- sources, prompts


def check_llm_source(db: Store, source: str, model: str) -> None:
    """Refuse a source name with spaces, one that belongs to another kind of source, or to another model.

    Any name is accepted for a new LLM source (``llm:MODEL`` is the convention and the default).
    """
    if not source or any(c.isspace() for c in source):
        raise AssessError(f"an LLM label source name has no spaces (e.g. llm:{model}), not {source!r}")
    found = row(db, "SELECT kind, model FROM sources WHERE name = :source", {"source": source})
    if found and found["kind"] != SourceKind.LLM:
        raise AssessError(f"{source!r} is a source of kind {found['kind']}, not an LLM source")
    held = found and found["model"] and found["model"] != model
    if held and row(db, "SELECT 1 AS one FROM prejudgments WHERE source = :source LIMIT 1", {"source": source}):
        raise AssessError(
            f"source {source!r} holds pre-judgments of model {found['model']!r}, not {model!r}; "
            f"name another source (e.g. llm:{model})"
        )


def ensure_llm_source(db: Store, source: str, model: str, prompt_version: str) -> None:
    """Create the LLM source (after :func:`check_llm_source`) and record its model and latest prompt version."""
    check_llm_source(db, source, model)
    with write(db):
        ensure_source(db, source, "llm", model=model, prompt_version=prompt_version, description="LLM pre-judgments")
        run(
            db,
            "UPDATE sources SET model = :model, prompt_version = :prompt_version WHERE name = :source",
            {"model": model, "prompt_version": prompt_version, "source": source},
        )


def record_prompt(db: Store, version: str, name: str, task: str, system: str, template: str) -> None:
    """Keep the text of a prompt version (once) so every stored answer can be read with its prompt."""
    with write(db):
        run(
            db,
            "INSERT INTO llm_prompts (version, name, task, system, template, created_at) "
            "VALUES (:version, :name, :task, :system, :template, :at) ON CONFLICT(version) DO NOTHING",
            {"version": version, "name": name, "task": str(task), "system": system, "template": template, "at": now()},
        )


def prompt_text(db: Store, version: str) -> dict | None:
    return row(
        db, "SELECT name, task, system, template FROM llm_prompts WHERE version = :version", {"version": version}
    )


def llm_sources(db: Store) -> list[str]:
    return column(db, "SELECT name FROM sources WHERE kind = 'llm' ORDER BY name")


# ------------------------------------------------------------------------------------------- items


# a real answer, not one of a probe (the version does not contain the mark)
_NOT_PROBE = f"replace(prompt_version, '{PROBE_MARK}', '') = prompt_version"


_TURN_ORDER = "JOIN turns t ON t.id = x.turn_id JOIN conversations c ON c.id = t.conversation_id"


def _of_turn(turn_id: str | None, column: str = "x.turn_id", joiner: str = "WHERE") -> tuple[str, dict]:
    """The condition (and its parameter) that keeps one turn's items, or nothing when ``turn_id`` is None."""
    return ("", {}) if turn_id is None else (f" {joiner} {column} = :turn_id", {"turn_id": turn_id})


def turn_order(db: Store) -> list[str]:
    """Every turn id in conversation and turn order: the order the item readers go in."""
    return column(
        db,
        "SELECT t.id AS id FROM turns t JOIN conversations c ON c.id = t.conversation_id ORDER BY c.rowid, t.position",
    )


def passage_items(db: Store, *, depth: int | None = None, turn_id: str | None = None) -> list[dict]:
    """{turn_id, passage_id, text} of the pool in queue order; with ``depth``, the top ``depth`` of every run instead;
    with ``turn_id``, of that turn only."""
    if depth:
        inner, params = _of_turn(turn_id, "turn_id", "AND")
        return rows(
            db,
            "SELECT x.turn_id AS turn_id, x.passage_id AS passage_id, p.text AS text FROM (SELECT turn_id, passage_id "
            f"FROM rankings WHERE rank <= :depth{inner} GROUP BY turn_id, passage_id) x {_TURN_ORDER} "
            "JOIN passages p ON p.id = x.passage_id ORDER BY c.rowid, t.position, x.passage_id",
            {"depth": int(depth)} | params,
        )
    where, params = _of_turn(turn_id)
    return rows(
        db,
        f"SELECT x.turn_id AS turn_id, x.passage_id AS passage_id, p.text AS text FROM pool x {_TURN_ORDER} "
        f"JOIN passages p ON p.id = x.passage_id{where} ORDER BY c.rowid, t.position, x.passage_id",
        params,
    )


def relevant_passage_items(db: Store, qrels: str, threshold: int, *, turn_id: str | None = None) -> list[dict]:
    """{turn_id, passage_id, text, grade} of the passages ``qrels`` graded >= threshold (nugget extraction input)."""
    where, params = _of_turn(turn_id, joiner="AND")
    return rows(
        db,
        "SELECT x.turn_id AS turn_id, x.passage_id AS passage_id, p.text AS text, x.grade AS grade "
        f"FROM passage_labels x {_TURN_ORDER} JOIN passages p ON p.id = x.passage_id "
        f"WHERE x.source = :source AND x.grade >= :threshold{where} ORDER BY c.rowid, t.position, x.passage_id",
        {"source": qrels, "threshold": int(threshold)} | params,
    )


def graded_passage_items(db: Store, source: str) -> list[dict]:
    """{turn_id, passage_id, text, grade} of every passage with text that ``source`` gave a grade (not 'cannot
    judge'), in queue order: the items a susceptibility probe can re-judge."""
    return rows(
        db,
        "SELECT x.turn_id AS turn_id, x.passage_id AS passage_id, p.text AS text, x.grade AS grade "
        f"FROM passage_labels x {_TURN_ORDER} JOIN passages p ON p.id = x.passage_id "
        "WHERE x.source = :source AND x.grade IS NOT NULL AND p.text IS NOT NULL AND p.text != '' "
        "ORDER BY c.rowid, t.position, x.passage_id",
        {"source": source},
    )


def source_model(db: Store, source: str) -> str | None:
    """The model an LLM source records (None for another kind of source or an unknown name)."""
    return value(db, "SELECT model FROM sources WHERE name = :source AND kind = 'llm'", {"source": source})


def ptkb_items(db: Store, *, turn_id: str | None = None) -> list[dict]:
    """{turn_id, statement_id, text} for every turn (or one) and every PTKB statement of its conversation."""
    where, params = _of_turn(turn_id, "t.id")
    return rows(
        db,
        "SELECT t.id AS turn_id, s.statement_id AS statement_id, s.text AS text FROM turns t "
        "JOIN ptkb_statements s ON s.conversation_id = t.conversation_id "
        f"JOIN conversations c ON c.id = t.conversation_id{where} "
        "ORDER BY c.rowid, t.position, int_prefix(s.statement_id), s.statement_id",
        params,
    )


def response_items(db: Store, *, turn_id: str | None = None) -> list[dict]:
    """{turn_id, run, text} of every stored system response (of one turn, with ``turn_id``)."""
    where, params = _of_turn(turn_id)
    return rows(
        db,
        f"SELECT x.turn_id AS turn_id, x.run AS run, x.text AS text FROM responses x {_TURN_ORDER}{where} "
        "ORDER BY c.rowid, t.position, x.run",
        params,
    )


def nugget_sources(db: Store) -> list[str]:
    return column(db, "SELECT DISTINCT source FROM nuggets ORDER BY source")


def ntr_items(db: Store, nugget_source: str, *, dedup: bool = False, turn_id: str | None = None) -> list[dict]:
    """{turn_id, nugget_id, nugget, run, response} for every response × every nugget of its turn (or of one turn)."""
    where = " AND n.in_dedup = 1" if dedup else ""
    turn, params = _of_turn(turn_id, "r.turn_id", "AND")
    return rows(
        db,
        "SELECT r.turn_id AS turn_id, n.id AS nugget_id, n.text AS nugget, r.run AS run, r.text AS response "
        "FROM responses r JOIN nuggets n ON n.turn_id = r.turn_id JOIN turns t ON t.id = r.turn_id "
        f"JOIN conversations c ON c.id = t.conversation_id WHERE n.source = :source{where}{turn} "
        "ORDER BY c.rowid, t.position, r.run, n.id",
        {"source": nugget_source} | params,
    )


# ------------------------------------------------------------------------------------------- cache


def judged(
    db: Store, source: str, task: str, model: str, prompt_version: str, *, sample: int = 0
) -> set[tuple[str, str, str]]:
    """(turn, item, input hash) the source already has a non-error answer for, under this model and prompt
    (answer number ``sample`` of K; the only one when one answer is asked for)."""
    return {
        (r["turn_id"], r["item_id"], r["input_hash"])
        for r in each(
            db,
            "SELECT turn_id, item_id, input_hash FROM prejudgments WHERE source = :source AND task = :task "
            "AND model = :model AND prompt_version = :prompt_version AND parse_status != :error AND sample = :sample",
            {
                "source": source,
                "task": str(task),
                "model": model,
                "prompt_version": prompt_version,
                "error": ParseStatus.ERROR.value,
                "sample": int(sample),
            },
        )
    }


def cached(db: Store, model: str, prompt_version: str, hashes: Iterable[str], *, sample: int = 0) -> dict[str, dict]:
    """Earlier non-error answers (any source) to the same model, prompt version and input, by input hash
    (answer number ``sample``: another source's K answers are copied answer by answer)."""
    wanted = set(hashes)
    if not wanted:
        return {}
    out = {}
    for r in each(
        db,
        "SELECT id, input_hash, raw_output, parse_status, parsed, note, latency_ms, prompt_tokens, "
        "completion_tokens, attempts FROM prejudgments WHERE model = :model AND prompt_version = :prompt_version "
        "AND parse_status != :error AND cached_from IS NULL AND sample = :sample ORDER BY id",
        {"model": model, "prompt_version": prompt_version, "error": ParseStatus.ERROR.value, "sample": int(sample)},
    ):
        if r["input_hash"] in wanted and r["input_hash"] not in out:
            r["parsed"] = json.loads(r["parsed"]) if r["parsed"] is not None else None
            out[r["input_hash"]] = r
    return out


def _hash_marks(hashes: list[str]) -> tuple[str, dict]:
    return ", ".join(f":h{i}" for i in range(len(hashes))), {f"h{i}": h for i, h in enumerate(hashes)}


def answered_among(
    db: Store, source: str, task: str, model: str, prompt_version: str, hashes: Iterable[str]
) -> set[tuple[str, str, str, int]]:
    """(turn, item, input hash, sample) of the source's non-error answers under this model and prompt whose input
    is one of ``hashes`` (a few hundred at a time: what a streaming planner asks per turn)."""
    wanted = sorted(set(hashes))
    if not wanted:
        return set()
    marks, params = _hash_marks(wanted)
    return {
        (r["turn_id"], r["item_id"], r["input_hash"], int(r["sample"]))
        for r in each(
            db,
            "SELECT turn_id, item_id, input_hash, sample FROM prejudgments WHERE model = :model AND prompt_version = "
            f":prompt_version AND input_hash IN ({marks}) AND parse_status != :error AND source = :source AND task = :task",
            params
            | {
                "model": model,
                "prompt_version": prompt_version,
                "error": ParseStatus.ERROR.value,
                "source": source,
                "task": str(task),
            },
        )
    }


def cached_among(db: Store, model: str, prompt_version: str, hashes: Iterable[str]) -> dict[tuple[str, int], int]:
    """{(input hash, sample): id of the first earlier non-error answer (any source)} among ``hashes``: what
    :func:`cached` finds, by index lookups instead of a scan of the model's answers."""
    wanted = sorted(set(hashes))
    if not wanted:
        return {}
    marks, params = _hash_marks(wanted)
    out: dict[tuple[str, int], int] = {}
    for r in each(
        db,
        "SELECT id, input_hash, sample FROM prejudgments WHERE model = :model AND prompt_version = :prompt_version "
        f"AND input_hash IN ({marks}) AND parse_status != :error AND cached_from IS NULL ORDER BY id",
        params | {"model": model, "prompt_version": prompt_version, "error": ParseStatus.ERROR.value},
    ):
        out.setdefault((r["input_hash"], int(r["sample"])), r["id"])
    return out


def answer(db: Store, answer_id: int) -> dict | None:
    """One stored answer to copy: {id, raw_output, parse_status, parsed (decoded), note}."""
    found = row(
        db, "SELECT id, raw_output, parse_status, parsed, note FROM prejudgments WHERE id = :id", {"id": answer_id}
    )
    if found is not None and found["parsed"] is not None:
        found["parsed"] = json.loads(found["parsed"])
    return found


def median_latency_ms(db: Store, model: str) -> float | None:
    """The median latency of this model's successful stored calls (for time estimates), or None.

    Failed calls are left out: a timeout or a refused key says nothing about how long an answer takes."""
    latencies = column(
        db,
        "SELECT latency_ms FROM prejudgments WHERE model = :model AND cached_from IS NULL "
        "AND latency_ms IS NOT NULL AND parse_status != :error ORDER BY id DESC LIMIT 500",
        {"model": model, "error": ParseStatus.ERROR.value},
    )
    if not latencies:
        return None
    latencies.sort()
    return float(latencies[len(latencies) // 2])


def error_stored(
    db: Store,
    source: str,
    task: str,
    turn_id: str,
    item_id: str,
    model: str,
    prompt_version: str,
    sample: int,
    error: str,
) -> bool:
    """Whether this failed call (the same item, answer number and reason, word for word) is stored already:
    a batch result file read twice stores each failed request once."""
    return (
        row(
            db,
            "SELECT id FROM prejudgments WHERE task = :task AND turn_id = :turn_id AND item_id = :item_id "
            "AND source = :source AND model = :model AND prompt_version = :prompt_version AND sample = :sample "
            "AND parse_status = :error_status AND error = :error LIMIT 1",
            {
                "task": str(task),
                "turn_id": turn_id,
                "item_id": item_id,
                "source": source,
                "model": model,
                "prompt_version": prompt_version,
                "sample": int(sample),
                "error_status": ParseStatus.ERROR.value,
                "error": error,
            },
        )
        is not None
    )


# ------------------------------------------------------------------------------------------- writing


_COLUMNS = (
    "source",
    "task",
    "turn_id",
    "item_id",
    "model",
    "prompt_version",
    "input_hash",
    "raw_output",
    "parse_status",
    "parsed",
    "note",
    "error",
    "latency_ms",
    "prompt_tokens",
    "completion_tokens",
    "attempts",
    "cached_from",
    "job_id",
    "created_at",
)


def save(db: Store, p: Prejudgment, *, label_context: dict | None = None) -> int | None:
    """Store one outcome and, when it parsed, the source's label: one transaction, at once.

    Returns the new row id, or None when the same answer was already stored (a second writer).
    """
    parsed = None if p.parsed is None else json.dumps(p.parsed, ensure_ascii=False)
    values = {c: _plain_value(getattr(p, c)) for c in _COLUMNS[:-1]} | {"parsed": parsed, "created_at": now()}
    columns = (*_COLUMNS, "sample")
    with write(db):
        inserted = returning(
            db,
            f"INSERT INTO prejudgments ({', '.join(columns)}) VALUES ({', '.join(':' + c for c in columns)}) "
            "ON CONFLICT DO NOTHING RETURNING id",
            values | {"sample": int(p.sample)},
        )
        row_id = inserted["id"] if inserted else None
        if row_id and p.parse_status in LABELLED_STATUSES and not is_probe(p.prompt_version):
            _write_label(db, p, label_context or {})
        if p.job_id is not None and row_id:
            jobs.count_result(db, p.job_id, p.parse_status, cached=p.cached_from is not None)
    return row_id


_ROWS_PER_SAVE = 100  # results per INSERT statement of save_many


def save_many(db: Store, results: Sequence[tuple[Prejudgment, dict | None]]) -> list[int | None]:
    """:func:`save` for many outcomes (each with its label context), in order, in one transaction and a few
    statements: the same rows, labels, label history and job counts as one :func:`save` per outcome.

    Returns each outcome's new row id, or None when the same answer was already stored."""
    if not results:
        return []
    columns = (*_COLUMNS, "sample")
    at = now()
    ids: list[int | None] = []
    with write(db):
        for first in range(0, len(results), _ROWS_PER_SAVE):
            chunk = results[first : first + _ROWS_PER_SAVE]
            params: dict[str, Any] = {}
            cells = []
            for i, (p, _) in enumerate(chunk):
                parsed = None if p.parsed is None else json.dumps(p.parsed, ensure_ascii=False)
                values = {c: _plain_value(getattr(p, c)) for c in _COLUMNS[:-1]}
                values |= {"parsed": parsed, "created_at": at, "sample": int(p.sample)}
                params.update({f"{c}_{i}": values[c] for c in columns})
                cells.append("(" + ", ".join(f":{c}_{i}" for c in columns) + ")")
            inserted: dict[tuple, list[int]] = {}
            for r in rows(
                db,
                f"INSERT INTO prejudgments ({', '.join(columns)}) VALUES {', '.join(cells)} "
                f"ON CONFLICT DO NOTHING RETURNING id, {', '.join(_RESULT_KEY)}",
                params,
            ):
                inserted.setdefault(_row_key(r), []).append(r["id"])
            for p, _ in chunk:
                got = inserted.get(_row_key(p))
                ids.append(got.pop(0) if got else None)
        labelled = [
            (p, ctx, row_id)
            for (p, ctx), row_id in zip(results, ids, strict=True)
            if row_id and p.parse_status in LABELLED_STATUSES and not is_probe(p.prompt_version)
        ]
        _write_labels(db, labelled)
        counts: dict[int, dict[str, int]] = {}
        for (p, _), row_id in zip(results, ids, strict=True):
            if p.job_id is None or not row_id:
                continue
            c = counts.setdefault(p.job_id, {"done": 0, "unparseable": 0, "errors": 0, "cached": 0})
            c["done"] += 1
            c["unparseable"] += int(p.parse_status == ParseStatus.UNPARSEABLE)
            c["errors"] += int(p.parse_status == ParseStatus.ERROR)
            c["cached"] += int(p.cached_from is not None)
        for job_id, c in counts.items():
            jobs.count_results(db, job_id, **c)
    return ids


_RESULT_KEY = (
    "source",
    "task",
    "turn_id",
    "item_id",
    "model",
    "prompt_version",
    "input_hash",
    "sample",
    "parse_status",
)
"""The columns that tell the rows of one INSERT of :func:`save_many` apart (what its RETURNING clause gives back)."""


def _row_key(r) -> tuple:
    """A result's :data:`_RESULT_KEY` values as text (of a Prejudgment or a returned row)."""
    get = r.get if isinstance(r, dict) else lambda c: getattr(r, c)
    return tuple(str(_plain_value(get(c))) for c in _RESULT_KEY)


def _write_labels(db: Store, saved: list[tuple[Prejudgment, dict | None, int]]) -> None:
    """:func:`_write_label` for many stored answers, in order. A label kind's answers (but bank matches and PTKB)
    read their samples' answers and the current labels in a few queries and write the changed labels at once;
    the labels each answer gives are those it gives saved on its own (the answers stored before it counted)."""
    plain = [s for s in saved if s[0].task in LABEL_KINDS and s[0].task not in (Task.BANK_MATCH, Task.PTKB)]
    if len(plain) != len(saved):
        for p, ctx, _ in saved:
            _write_label(db, p, ctx or {})
        return
    groups: dict[tuple, list[tuple[Prejudgment, int]]] = {}
    for p, _, row_id in plain:
        groups.setdefault((p.source, str(p.task), p.model, p.prompt_version), []).append((p, row_id))
    for (source, task, model, version), group in groups.items():
        position = {row_id: i for i, (_, row_id) in enumerate(group)}
        answers: dict[tuple, list[tuple[int, Any]]] = {}
        keys = list(dict.fromkeys((p.turn_id, p.item_id, p.input_hash) for p, _ in group))
        shared = {
            "source": source,
            "task": task,
            "model": model,
            "prompt_version": version,
            "ok": ParseStatus.OK.value,
            "repaired": ParseStatus.REPAIRED.value,
        }
        for match, params in by_keys(("turn_id", "item_id", "input_hash"), keys):
            for r in rows(
                db,
                "SELECT id, turn_id, item_id, input_hash, parsed FROM prejudgments WHERE source = :source AND "
                "task = :task AND model = :model AND prompt_version = :prompt_version AND parse_status IN "
                f"(:ok, :repaired) AND {match}",
                params | shared,
            ):
                answers.setdefault((r["turn_id"], r["item_id"], r["input_hash"]), []).append((r["id"], r["parsed"]))
        changes = []
        for i, (p, _) in enumerate(group):
            # the answers stored before this one: those of other writers and the earlier ones of this call
            seen = [
                a for row_id, a in answers.get((p.turn_id, p.item_id, p.input_hash), []) if position.get(row_id, i) <= i
            ]
            value_ = consensus([int(json.loads(a)) for a in seen]) if len(seen) > 1 else int(p.parsed)
            changes.append((label_item(p.task, p.turn_id, p.item_id), value_))
        labels.save_changed_many(db, task, source, changes, mode=JudgingMode.LLM, via="llm")


def _plain_value(item):
    """An enum member as its plain value (PostgreSQL's driver takes str and int, not their subclasses);
    a NUL character in a model's output as U+FFFD (PostgreSQL cannot store NUL in text; the output is
    kept as received otherwise)."""
    if isinstance(item, Enum):
        return item.value
    if isinstance(item, str) and "\x00" in item:
        return item.replace("\x00", "\ufffd")
    return item


def label_item(task: str, turn_id: str, item_id: str) -> tuple:
    """The label item a prejudgment's ``item_id`` names: the task's item key without the turn
    (:meth:`assess.tasks.ItemKey.decode_id`: '<nugget id> <run>', '<run> <sentence> <passage id>', ...)."""
    return (turn_id, *label_kind(task).key.decode_id(item_id))


_SAMPLE_VALUES = (
    "SELECT parsed FROM prejudgments WHERE source = :source AND task = :task AND turn_id = :turn_id "
    "AND item_id = :item_id AND model = :model AND prompt_version = :prompt_version AND input_hash = :input_hash "
    "AND parse_status IN (:ok, :repaired)"
)


def _sample_params(p: Prejudgment) -> dict:
    """The parameters of :data:`_SAMPLE_VALUES`: the parsed answers to the same input as ``p``."""
    return {
        "source": p.source,
        "task": str(p.task),
        "turn_id": p.turn_id,
        "item_id": p.item_id,
        "model": p.model,
        "prompt_version": p.prompt_version,
        "input_hash": p.input_hash,
        "ok": ParseStatus.OK.value,
        "repaired": ParseStatus.REPAIRED.value,
    }


def _write_label(db: Store, p: Prejudgment, ctx: dict) -> None:
    """The label a parsed answer gives its source (a label already holding the value is left alone).

    When the judge was asked K times about the same input (:attr:`Prejudgment.sample`), the label is the
    :func:`assess.tasks.consensus` of the parsed answers stored so far (one answer: that answer)."""
    if p.task in LABEL_KINDS:
        answers = column(
            db,
            _SAMPLE_VALUES,
            _sample_params(p),
        )
        value_ = consensus([int(json.loads(a)) for a in answers]) if len(answers) > 1 else int(p.parsed)
        item = label_item(p.task, p.turn_id, p.item_id)
        if p.task == Task.BANK_MATCH:
            _write_bank_match(db, p, item, value_)
        else:
            labels.save_changed(db, p.task, p.source, item, value_, mode=JudgingMode.LLM, via="llm")
    elif p.task == "nuggets":
        gold.add_llm_spans(db, p.source, p.turn_id, p.item_id, p.parsed["spans"], relevance=ctx.get("grade"))
    # response nuggets and AEPD aspects have no label table: they live in prejudgments.parsed


def _write_bank_match(db: Store, p: Prejudgment, item: tuple, contains: int) -> None:
    """A bank-match answer as its label, written as a person's match is: ``contains`` and, in ``sentences``, the
    sentence numbers the model named (kept in the answer's note, :func:`assess.llm.prompts.bank_match_sentences`):
    of K answers, those of every answer that gives the consensus; none when the response does not contain it.
    Nothing changes when the label already holds both."""

    answers = rows(
        db,
        _SAMPLE_VALUES.replace("SELECT parsed", "SELECT parsed, note"),
        _sample_params(p),
    )
    agreeing = [a["note"] for a in answers if int(json.loads(a["parsed"])) == contains] if contains else []
    sentences = tuple(sorted({n for note in agreeing for n in bank_match_sentences(note)}))
    turn, run_name, nugget, answer = item
    write_llm_match(db, p.source, BankMatch(turn, run_name, int(nugget), int(answer), bool(contains), sentences, 0))


def status_counts(db: Store, source: str, task: str | None = None) -> dict[str, int]:
    """How many stored answers of the source came out ok / repaired / unparseable / error."""
    sql = f"SELECT parse_status, COUNT(*) AS n FROM prejudgments WHERE source = :source AND {_NOT_PROBE}"
    params = {"source": source}
    if task:
        sql, params = sql + " AND task = :task", params | {"task": str(task)}
    return {r["parse_status"]: r["n"] for r in each(db, sql + " GROUP BY parse_status", params)}


_ROW_COLUMNS = ("id", *(c for c in _COLUMNS if c not in ("source", "input_hash", "created_at")))


def stored(db: Store, source: str, task: str | None = None, limit: int = 1000) -> list[dict]:
    """Stored answers of a source (newest first) with every recorded field; probe answers left out."""
    sql = f"SELECT {', '.join(_ROW_COLUMNS)} FROM prejudgments WHERE source = :source AND {_NOT_PROBE}"
    params = {"source": source, "limit": int(limit)}
    if task:
        sql, params = sql + " AND task = :task", params | {"task": str(task)}
    return rows(db, sql + " ORDER BY id DESC LIMIT :limit", params)


# ------------------------------------------------------------------------------------------- audit


def raw_outputs(db: Store, source: str, task: str) -> dict[tuple, str]:
    """The latest answer text of ``source`` per item, keyed like :func:`store.compare.label_pairs` items.

    Passage and PTKB items are (turn, item); NtR items are (turn, nugget text, run).
    """
    answers = each(
        db,
        "SELECT turn_id, item_id, raw_output FROM prejudgments WHERE source = :source AND task = :task "
        f"AND parse_status != :error AND {_NOT_PROBE} ORDER BY id",
        {"source": source, "task": str(task), "error": ParseStatus.ERROR.value},
    )
    if task != Task.NTR:
        return {(r["turn_id"], r["item_id"]): r["raw_output"] for r in answers}
    texts = {r["id"]: r["text"] for r in each(db, "SELECT id, text FROM nuggets")}
    out = {}
    key = LABEL_KINDS[Task.NTR].key
    for r in answers:
        nugget_id, run_name = key.decode_id(r["item_id"])
        if nugget_id in texts:  # an answer about a nugget since deleted has no item to sit beside
            out[(r["turn_id"], texts[nugget_id], run_name)] = r["raw_output"]
    return out


def _answers(
    db: Store, task: str, *, source: str | None, model: str | None, prompt_versions: Iterable[str] | None
) -> dict[tuple, dict[str, list[int]]]:
    """{label item: {prompt version: parsed values by sample index}} of the labelled answers to each item's
    latest input under each version (an input changed since, e.g. new passage text, leaves earlier answers out)."""
    sql = (
        "SELECT turn_id, item_id, prompt_version, input_hash, sample, parsed FROM prejudgments WHERE task = :task "
        f"AND parse_status IN (:ok, :repaired) AND {_NOT_PROBE}"
    )
    params: dict[str, Any] = {"task": str(task), "ok": ParseStatus.OK.value, "repaired": ParseStatus.REPAIRED.value}
    for name, given in (("source", source), ("model", model)):
        if given is not None:
            sql, params = sql + f" AND {name} = :{name}", params | {name: given}
    wanted = None if prompt_versions is None else list(dict.fromkeys(prompt_versions))
    if wanted is not None:
        if not wanted:
            return {}
        marks = ", ".join(f":version{i}" for i in range(len(wanted)))
        sql, params = (
            sql + f" AND prompt_version IN ({marks})",
            params | {f"version{i}": v for i, v in enumerate(wanted)},
        )
    latest: dict[tuple, str] = {}
    found: dict[tuple, dict[int, int]] = {}
    for r in each(db, sql + " ORDER BY id", params):
        key = (r["turn_id"], r["item_id"], r["prompt_version"])
        if latest.get(key) != r["input_hash"]:
            latest[key], found[key] = r["input_hash"], {}
        found[key][r["sample"]] = int(json.loads(r["parsed"]))
    out: dict[tuple, dict[str, list[int]]] = {}
    for (turn_id, item_id, version), by_sample in found.items():
        item = label_item(task, turn_id, item_id)
        out.setdefault(item, {})[version] = [by_sample[n] for n in sorted(by_sample)]
    return out


def sample_answers(db: Store, source: str, task: str, *, prompt_version: str | None = None) -> dict[tuple, list[int]]:
    """Self-consistency: {label item: the parsed values of the source's K answers, by sample index}, for its latest
    prompt version of each item (or ``prompt_version``). Items asked once have one value."""
    versions = None if prompt_version is None else [prompt_version]
    out = {}
    for item, by_version in _answers(db, task, source=source, model=None, prompt_versions=versions).items():
        out[item] = by_version[prompt_version] if prompt_version is not None else list(by_version.values())[-1]
    return out


def answers_by_prompt_version(
    db: Store, task: str, prompt_versions: Iterable[str], *, source: str | None = None, model: str | None = None
) -> dict[tuple, dict[str, int]]:
    """Persona sensitivity and other prompt variants: {label item: {prompt version: value}} for the items answered
    under at least one of ``prompt_versions`` (by ``source`` and/or ``model``, when given); a version's value is
    the :func:`assess.tasks.consensus` of its K answers. Items answered under every version are the ones to
    compare; the labels table keeps one value per source, the outcomes keep every version's."""
    found = _answers(db, task, source=source, model=model, prompt_versions=list(prompt_versions))
    return {item: {v: consensus(values) for v, values in by_version.items()} for item, by_version in found.items()}


def rationale(db: Store, source: str, task: str, turn_id: str, item_id: str) -> str | None:
    """The latest raw answer of an LLM source for one item (what the model said, as its rationale)."""
    return value(
        db,
        "SELECT raw_output FROM prejudgments WHERE source = :source AND task = :task AND turn_id = :turn_id AND "
        f"item_id = :item_id AND parse_status != :error AND {_NOT_PROBE} ORDER BY id DESC LIMIT 1",
        {
            "source": source,
            "task": str(task),
            "turn_id": turn_id,
            "item_id": str(item_id),
            "error": ParseStatus.ERROR.value,
        },
    )


def revealed_with_rationale(db: Store, assessor: str, task: str, turn_id: str, item_id: str) -> list[Label]:
    """:func:`store.queue.revealed_labels` (blind-then-reveal rules unchanged), each with its LLM's raw answer."""
    return [
        replace(label, rationale=rationale(db, label.source, task, turn_id, item_id))
        for label in revealed_labels(db, assessor, task, turn_id, item_id)
    ]


def disagreements(db: Store, task: str, a: str, b: str, *, limit: int = 500) -> list[dict]:
    """Items where two sources differ, with both labels and each LLM source's raw answer."""
    pairs = label_pairs(db, task, a, b)
    raw = {s: raw_outputs(db, s, task) for s in (a, b) if source_kind(s) is SourceKind.LLM}
    out = []
    for item, la, lb in zip(pairs.items, pairs.a, pairs.b):
        if la == lb:
            continue
        found = {"turn_id": item[0], "item": " ".join(str(x) for x in item[1:]), a: la, b: lb}
        for s, outputs in raw.items():
            found[f"{s} said"] = outputs.get(tuple(item))
        out.append(found)
        if len(out) >= limit:
            break
    return out


def llm_values(db: Store, task: str) -> dict[tuple[str, str], dict[str, int]]:
    """{(turn, item after the turn): {LLM source: its value}} of ``task``, 'cannot judge' left out."""
    kind = label_kind(task)
    item_column, value_column = kind.item_columns[1], kind.value_column
    llm: dict[tuple[str, str], dict[str, int]] = {}
    for r in each(
        db,
        f"SELECT l.source AS source, l.turn_id AS turn_id, l.{item_column} AS item, l.{value_column} AS value "
        f"FROM {kind.table} l JOIN sources s ON s.name = l.source AND s.kind = 'llm' "
        f"WHERE l.{value_column} IS NOT NULL",
    ):
        llm.setdefault((r["turn_id"], str(r["item"])), {})[r["source"]] = int(r["value"])
    return llm


# ------------------------------------------------------------------------------------------- adaptive pooling


def passage_grades(db: Store, source: str) -> dict[tuple[str, str], int]:
    """The source's passage grades by (turn, passage), 'cannot judge' left out."""
    return {item: grade for item, grade in labels.values(db, Task.PASSAGE, source).items() if grade is not None}


def has_passage_labels(db: Store, source: str) -> bool:
    return row(db, "SELECT 1 AS one FROM passage_labels WHERE source = :source LIMIT 1", {"source": source}) is not None


def ranking_runs(db: Store) -> int:
    """How many runs have stored rankings."""
    return value(db, "SELECT COUNT(DISTINCT run) AS n FROM rankings")


def best_ranks(db: Store, depth: int) -> dict[tuple[str, str], int]:
    """{(turn, passage): its best rank over the runs} of every passage ranked within ``depth``."""
    return {
        (r["turn_id"], r["passage_id"]): r["best"]
        for r in each(
            db,
            "SELECT turn_id, passage_id, MIN(rank) AS best FROM rankings WHERE rank <= :depth "
            "GROUP BY turn_id, passage_id",
            {"depth": int(depth)},
        )
    }


def add_to_pool(db: Store, pairs: dict[tuple[str, str], int | None], *, method: str, detail: str) -> int:
    """Add (turn, passage) pairs with their best rank to the pool (pairs pooled already stay as they are);
    return how many rows the pool gained."""
    stamp = now()
    with write(db):
        before = value(db, "SELECT COUNT(*) AS n FROM pool")
        run_many(
            db,
            "INSERT INTO pool (turn_id, passage_id, method, detail, best_rank, added_at) "
            "VALUES (:turn_id, :passage_id, :method, :detail, :best_rank, :added_at) "
            "ON CONFLICT(turn_id, passage_id) DO NOTHING",
            [
                {"turn_id": t, "passage_id": p, "method": method, "detail": detail, "best_rank": r, "added_at": stamp}
                for (t, p), r in sorted(pairs.items())
            ],
        )
        return value(db, "SELECT COUNT(*) AS n FROM pool") - before
