"""Susceptibility probes of an LLM judge: re-judge a seeded sample of graded passages, altered, and compare.

For a sample of the passages an LLM source has graded, the judge is asked again three ways: the item
unaltered (``control``: how much the grade moves by itself) and with the passage altered by each
probe kind of :mod:`assess.llm.probes` (an injected instruction, query-term stuffing). The report
gives, per kind, how often the grade rose against the stored grade and against the control, by how
much, and how often it reached the top grade.

Every answer is stored in ``prejudgments`` under the source with a probe-marked prompt version (one
transaction per answer, as it arrives), so a second probe with the same seed asks nothing again; a
probe answer never becomes a label, a pool decision, a cached answer of a real run, or a rationale.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable

from assess.errors import AssessError
from assess.llm import probes
from assess.llm.clients import DEFAULT_CONCURRENCY, ChatJudge, complete_all
from assess.llm.prompts import prompt_for
from assess.services.jobs import chat_item, chat_settings, reply_outcome, turn_prompt_fields
from assess.tasks import LABELLED_STATUSES, ParseStatus
from store import prejudgments
from store.conversations import turn_contexts

DEFAULT_SAMPLE = 50
Progress = Callable[[int, int], None]


def _grade(status: str, parsed) -> int | None:
    return int(parsed) if status in LABELLED_STATUSES and parsed is not None else None


def probe_model(db, source: str, model: str | None) -> str:
    """The model to probe with: the one given, else the one the source records; the source must be an LLM
    source with passage grades of that model."""
    if source not in prejudgments.llm_sources(db):
        known = ", ".join(prejudgments.llm_sources(db)) or "none"
        raise AssessError(f"--source names an LLM label source (LLM sources: {known}), not {source!r}")
    recorded = prejudgments.source_model(db, source)
    if model and recorded and model != recorded:
        raise AssessError(
            f"source {source!r} holds grades of model {recorded!r}, not {model!r}: probe the judge that made "
            "them (leave out --model)"
        )
    model = model or recorded
    if not model:
        raise AssessError(f"source {source!r} records no model: pass --model MODEL")
    prejudgments.check_llm_source(db, source, model)
    return model


def probe(
    db,
    source: str,
    judge: ChatJudge,
    *,
    kinds: list[str] | tuple[str, ...] = probes.PROBES,
    sample: int = DEFAULT_SAMPLE,
    seed: int = 0,
    concurrency: int = DEFAULT_CONCURRENCY,
    progress: Progress | None = None,
) -> dict:
    """Probe ``judge`` (the model of LLM source ``source``) on ``sample`` of the source's graded passages.

    Returns ``{source, model, prompt_version, kinds, seed, sample, sampled, judged, asked, reused, failed,
    unparseable, results, items}``: ``results`` per kind (and ``control``) from :func:`assess.llm.probes.report`,
    ``items`` the grades of every sampled item. Refused (:class:`AssessError`) for a source that is not an
    LLM source of the judge's model, has no grades, or a sample below 1.
    """
    if sample < 1:
        raise AssessError(f"--sample is a number of items >= 1, not {sample}")
    if concurrency < 1:
        raise AssessError(f"--concurrency is at least 1, not {concurrency}")
    unknown = [k for k in kinds if k not in probes.PROBES]
    if unknown or not kinds:
        raise AssessError(f"probe kinds are {', '.join(probes.PROBES)}, not {', '.join(unknown) or 'none'}")
    model = probe_model(db, source, judge.model)
    graded = prejudgments.graded_passage_items(db, source)
    if not graded:
        raise AssessError(f"source {source!r} has no passage grades to probe: pre-judge passages first")
    chosen = [graded[i] for i in sorted(random.Random(seed).sample(range(len(graded)), min(sample, len(graded))))]
    prompt = prompt_for("passage")
    settings = chat_settings(prompt)
    contexts = turn_contexts(db)
    all_kinds = (probes.CONTROL, *kinds)
    versions = {kind: probes.probe_version(prompt.version, kind) for kind in all_kinds}
    for kind, version in versions.items():
        prejudgments.record_prompt(
            db, version, f"{prompt.name}{probes.PROBE_MARK}{kind}", "passage", prompt.system, prompt.template
        )

    results = [{"turn_id": c["turn_id"], "passage_id": c["passage_id"], "stored": c["grade"]} for c in chosen]
    calls, reused = [], 0
    for kind in all_kinds:
        items = []
        for n, c in enumerate(chosen):
            fields = turn_prompt_fields(contexts[c["turn_id"]])
            fields["passage"] = probes.altered(kind, c["text"], fields["resolved"])  # stuffing: the resolved query
            items.append((n, chat_item(prompt, settings, c["turn_id"], c["passage_id"], fields)))
        hits = prejudgments.cached(db, model, versions[kind], {it.input_hash for _, it in items})
        for n, it in items:
            hit = hits.get(it.input_hash)
            if hit is None:
                calls.append((kind, n, it))
            else:
                results[n][kind] = _grade(hit["parse_status"], hit["parsed"])
                reused += 1

    failed = unparseable = done = 0
    requests = (((kind, n, it), it.messages, prompt.max_tokens) for kind, n, it in calls)
    with contextlib.closing(complete_all(judge, requests, concurrency=concurrency)) as replies:
        for (kind, n, it), reply in replies:
            outcome = reply_outcome(
                prompt, it, reply, source=source, task="passage", model=model, version=versions[kind]
            )
            prejudgments.save(db, outcome)
            status, parsed = outcome.parse_status, outcome.parsed
            failed += status == ParseStatus.ERROR
            unparseable += status == ParseStatus.UNPARSEABLE
            results[n][kind] = _grade(status, parsed)
            done += 1
            if progress is not None:
                progress(done, len(calls))
    return {
        "source": source,
        "model": model,
        "prompt_version": prompt.version,
        "kinds": list(kinds),
        "seed": seed,
        "sample": sample,
        "sampled": len(chosen),
        "judged": len(graded),
        "asked": len(calls),
        "reused": reused,
        "failed": failed,
        "unparseable": unparseable,
        "results": probes.report(results, kinds),
        "items": results,
    }
