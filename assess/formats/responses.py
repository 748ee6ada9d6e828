"""Generated responses with citations: read and written in the iKAT topics and the answer layouts (TREC RAG,
RAGTIME, iKAT runs).

One record per response, :class:`CitedResponse`: the run, the turn (or topic), the response text, its
sentences (text, character offsets into the text, the passage ids each cites) and the reference
list. Layouts read (the full description, with sources, is in ``docs/responses.md``):

``ikat-topics`` (:func:`parse_ikat_responses`)
    The iKAT topics file. 2025 (``irlabamsterdam/iKAT`` ``2025/data/2025_test_topics.json``): a JSON
    list of conversations ``{"number": "1-1", "responses": [{"turn_id": 2, "response": "...",
    "citations": ["clueweb22-...:1", ...]}, ...]}``. The citations belong to the response as a whole,
    not to a sentence: they become the record's ``citations`` (order and repeats kept: the 2025
    file cites one passage twice in two responses), and its ``references`` are their distinct ids.
    The 2023/2024 schema (``turns`` with ``response`` and ``response_provenance``) reads the same way.
    The turn id is ``<number>_<turn_id>`` as in :func:`assess.formats.ikat.parse_topics`. A turn
    without a ``response`` (absent or null) is no response and is skipped.

``trec-rag-2024`` and ``trec-rag-2025`` (:func:`parse_rag_answers`)
    TREC RAG answer files, JSONL, one response per line (TREC 2024 RAG Track Guidelines, "Output
    Format (AG Output)", https://trec-rag.github.io/annoucements/2024-track-guidelines/ and the 2025
    guidelines, https://trec-rag.github.io/annoucements/2025-track-guidelines/):
    2024: ``{"run_id", "topic_id", "topic", "references": [segment ids], "response_length",
    "answer": [{"text", "citations": [zero-based indices into references]}]}``;
    2025: ``{"metadata": {"team_id", "run_id", "type", "narrative_id", "narrative", "prompt"?},
    "references": [...], "answer": [...]}`` where a citation is an index ("Format 1") or a segment id
    from ``references`` ("Format 2"). Each answer element is one sentence; the response text is the
    sentences joined by one space.

``trec-rag-2026``, ``ragtime`` and ``ikat-2025-run`` (:func:`parse_rag_answers` too; sources and rules in
    docs/responses.md): TREC RAG 2026 ``{"metadata": {team_id, narrative_id, narrative, run_id, run_desc},
    "references", "answer"}`` (references: the cited documents only); RAGTIME ``{"metadata": {team_id,
    topic_id, run_id}, "references"?, "responses": [{"text", "citations": {id: score} | [id]}]}``; iKAT 2025
    run lines ``{"turn_id", "metadata": {team_id, run_id, run_type}, "references": {id: score}, "responses":
    [{"text", "citations": {id: score}, "ptkb_provenance"}]}``. A line's layout is told by its fields
    (:func:`_detect`) unless one is named. What a layout advises against (too many citations in a sentence,
    uncited references, over the word or character limit) is a warning (:func:`_advice`), not a refusal.

Sentences of free text (the iKAT ``response``) come from :func:`split_sentences` (rule in its
docstring). The writers (:func:`write_ikat_responses`, :func:`write_rag_answers`) give files the
readers read back into equal records. Counting: :func:`response_counts`.

Refused, each with the file, the line (or JSON path) and expected vs found: a response given twice
for one run and turn with different content, a citation index outside the reference list, a cited id
missing from the references, non-string text, ids breaking the id rule, an empty answer list.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assess.errors import FormatError
from assess.formats.ikat import cited_passages, turn_number
from assess.formats.rag_topics import LineChecker, RagTopic, topic_id_value
from assess.formats.reading import (
    JsonChecker,
    JsonRecords,
    iter_lines,
    json_line,
    parse_json_text,
    short,
)
from assess.formats.sentences import Sentence, joined, sentences_of

IKAT_TOPICS = "ikat-topics"
RAG_2024 = "trec-rag-2024"
RAG_2025 = "trec-rag-2025"
RAG_2026 = "trec-rag-2026"
RAGTIME = "ragtime"
IKAT_RUN = "ikat-2025-run"
ANSWER_LAYOUTS = (RAG_2024, RAG_2025, RAG_2026, RAGTIME, IKAT_RUN)
"""The layouts of answer files (one JSON object per topic or turn, JSONL): read and written by ``rag-answers``."""
LAYOUTS = (IKAT_TOPICS, *ANSWER_LAYOUTS)
DEFAULT_TOPICS_RUN = "topics"  # the run name given to the responses of an iKAT topics file


@dataclass(frozen=True, slots=True)
class CitedResponse:
    """A generated response with its citations (see the module docstring for the layouts)."""

    run: str
    turn_id: str
    text: str
    sentences: tuple[Sentence, ...]
    references: tuple[str, ...] = ()  # the passage ids citations point into, in the file's order
    citations: tuple[str, ...] = ()  # cited by the response as a whole, no sentence named (iKAT topics)
    layout: str = RAG_2024
    topic: str | None = None  # the RAG topic / narrative text
    fields: Mapping[str, Any] = field(default_factory=dict, hash=False)  # a RAG line's other fields, as read
    line: int | None = field(default=None, compare=False)
    # per sentence, what its layout says besides text and citations (RAGTIME / iKAT run: the citation scores as
    # ``scores``, ``ptkb_provenance``, other keys as read); () when no sentence says more
    sentence_fields: tuple[Mapping[str, Any], ...] = field(default=(), hash=False)
    reference_scores: tuple[float, ...] = ()  # iKAT run: the score of each reference, aligned with references

    @property
    def cited(self) -> tuple[str, ...]:
        """Every citation of the response: the sentences' then the response's own, repeats kept."""
        return tuple(p for s in self.sentences for p in s.citations) + self.citations


def response_counts(responses: Iterable[CitedResponse]) -> dict[str, int]:
    """``{"count", "with_citations", "citations"}``: responses, those citing at least one passage,
    and every citation given (a passage cited twice counts twice, as the file lists it)."""
    count = with_citations = citations = 0
    for response in responses:
        count += 1
        cited = len(response.cited)
        with_citations += cited > 0
        citations += cited
    return {"count": count, "with_citations": with_citations, "citations": citations}


# ------------------------------------------------------------------------------- the sentence rule


# ---------------------------------------------------------------------------------- iKAT topics


def parse_ikat_responses(path: str | Path, *, run: str = DEFAULT_TOPICS_RUN) -> list[CitedResponse]:
    """The responses of an iKAT topics file (2025 ``responses`` / 2023-2024 ``turns``) with their citations."""
    return list(iter_ikat_responses(path, run=run))


def iter_ikat_responses(path: str | Path, *, run: str = DEFAULT_TOPICS_RUN) -> Iterator[CitedResponse]:
    """:func:`parse_ikat_responses` one conversation at a time (:class:`~assess.formats.reading.JsonRecords`):
    a FormatError comes after the responses of the conversations before it."""
    with JsonRecords(path) as records:
        if records.kind is not list:
            records.fail("a list of conversations")
        seen: set[str] = set()
        count = 0
        for ci, conv, check in records:
            count += 1
            yield from _ikat_conversation(check, ci, conv, seen, run)
        if not count:
            records.fail("at least one conversation", "an empty list")


def _ikat_conversation(check: JsonChecker, ci: int, conv, seen: set[str], run: str) -> list[CitedResponse]:
    out: list[CitedResponse] = []
    if not isinstance(conv, dict):
        check.fail((ci,), "a conversation object", conv)
    number = check.get(conv, "number", (int, str), (ci,))
    if isinstance(number, bool):
        check.fail((ci, "number"), "a conversation number or id string", number)
    conv_id = check.id(str(number), (ci, "number"), "a conversation id")
    turns_key = "responses" if "responses" in conv or "turns" not in conv else "turns"
    cite_key = "citations" if turns_key == "responses" else "response_provenance"
    for ti, turn in enumerate(check.get(conv, turns_key, list, (ci,))):
        where = (ci, turns_key, ti)
        if not isinstance(turn, dict):
            check.fail(where, "a turn object", turn)
        turn_id = f"{conv_id}_{turn_number(check, check.get(turn, 'turn_id', (int, str), where), where + ('turn_id',))}"
        if turn_id in seen:
            check.fail(where + ("turn_id",), "each turn id once", f"turn {turn_id} again")
        seen.add(turn_id)
        body = check.get(turn, "response", str, where, required=False)
        if body is None:
            continue
        citations = cited_passages(check, turn, cite_key, where)
        out.append(
            CitedResponse(
                run=run,
                turn_id=turn_id,
                text=body,
                sentences=sentences_of(body),
                references=tuple(dict.fromkeys(citations)),
                citations=tuple(citations),
                layout=IKAT_TOPICS,
            )
        )
    return out


def ikat_turn_line(path: str | Path, turn_id: str) -> int | None:
    """The line of the turn ``turn_id`` (``<number>_<turn_id>``) in an iKAT topics file; None when it is not
    found. For errors found after parsing (a turn the store lacks): the file is read one conversation at a
    time up to the turn, so a big file costs no more memory here than when it was imported."""

    try:
        with JsonRecords(path) as records:
            if records.kind is not list:
                return None
            for _ci, conv, check in records:
                if not isinstance(conv, dict):
                    continue
                turns_key = "responses" if "responses" in conv or "turns" not in conv else "turns"
                for ti, turn in enumerate(conv.get(turns_key) or ()):
                    if (
                        isinstance(turn, dict)
                        and f"{str(conv.get('number')).strip()}_{str(turn.get('turn_id')).strip()}" == turn_id
                    ):
                        line = json_line(check.text, (turns_key, ti))
                        return None if line is None else check.first_line + line - 1
    except (OSError, FormatError):
        return None
    return None


# ------------------------------------------------------------------------------------- TREC RAG


def iter_rag_answers(
    path: str | Path,
    *,
    layout: str | None = None,
    warnings: list[str] | None = None,
    topics: Mapping[str, RagTopic] | None = None,
) -> Iterator[CitedResponse]:
    """The responses of an answer file (JSONL, one answer per line), line by line (see :func:`parse_rag_answers`).

    ``layout``: every line must be in this layout (:data:`ANSWER_LAYOUTS`); None: each line's layout is told
    by its fields (:func:`_detect`). What the layout's rules advise against but a file may still hold (more
    citations per sentence than the track judges, uncited references, over the length limit:
    :func:`_advice`) is appended to ``warnings`` (one line each, naming the file, line and JSON path); the
    answer is still given. ``topics``: the topics (or RAGTIME requests) by id (:func:`iter_rag_topics`), whose
    texts and character limits the answers are checked against.

    Memory is one line's answer plus, per (run, topic) given, a digest of its answer (:func:`_digest`)
    and its line, so that one given again is refused when it differs and given once when it does not."""
    if layout is not None and layout not in ANSWER_LAYOUTS:
        raise ValueError(f"unknown answer layout {layout!r}; choose one of {', '.join(ANSWER_LAYOUTS)}")
    seen: dict[tuple[str, str], tuple[bytes, int]] = {}
    for number, text in iter_lines(path):
        try:
            obj = parse_json_text(path, text)
        except FormatError as exc:
            raise FormatError(path, number, f"one JSON object per line ({exc.expected})", exc.found) from None
        check = LineChecker(path, number, text)
        if not isinstance(obj, dict):
            check.fail((), "a JSON object (one answer per line)", obj)
        response = _rag_answer(check, obj, number, layout)
        key = (response.run, response.turn_id)
        if key in seen:
            first, first_line = seen[key]
            if first != _digest(response):
                check.fail(
                    (),
                    f"one answer per run and topic ({short(response.run, 40)}, topic {short(response.turn_id, 40)} "
                    f"is on line {first_line})",
                    "a different answer",
                )
            continue  # the same answer repeated verbatim: kept once
        seen[key] = (_digest(response), number)
        if warnings is not None:
            warnings.extend(_advice(path, number, response, topics or {}))
        yield response
    if not seen:
        raise FormatError(path, None, "at least one answer line", "an empty file")


def _digest(response: CitedResponse) -> bytes:
    """A digest of everything that makes two responses equal (the fields ``==`` compares; the other
    fields as canonical JSON): equal responses have equal digests."""
    fields = json.dumps(response.fields, sort_keys=True, ensure_ascii=False)
    parts = (response.run, response.turn_id, response.text, response.sentences, response.references)
    more = json.dumps([response.sentence_fields, response.reference_scores], sort_keys=True, ensure_ascii=False)
    whole = repr((*parts, response.citations, response.layout, response.topic, fields, more))
    return hashlib.blake2b(whole.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def parse_rag_answers(
    path: str | Path, *, layout: str | None = None, warnings: list[str] | None = None
) -> list[CitedResponse]:
    """Read an answer file: TREC RAG 2024, 2025 or 2026, RAGTIME or an iKAT 2025 run (JSONL; layouts in the
    module docstring), each line in ``layout`` or in the layout its fields tell."""
    return list(iter_rag_answers(path, layout=layout, warnings=warnings))


_NO_LAYOUT = (
    "a TREC RAG answer: run_id, topic_id, references, answer (2024) or metadata, references, answer (2025, 2026), "
    "a RAGTIME report: metadata, responses, or an iKAT 2025 run line: turn_id, metadata, references, responses"
)


def _detect(check: JsonChecker, obj: dict) -> str:
    """The layout of an answer object, told by its fields: ``responses`` with a top-level ``turn_id`` is an iKAT
    2025 run line, ``responses`` without one a RAGTIME report; ``answer`` with ``metadata`` is TREC RAG 2026
    when the metadata has ``run_desc`` and no ``type``, else 2025; ``run_id`` / ``topic_id`` at the top level
    is 2024. An object with both ``answer`` and ``responses`` fits two layouts: refused (name one)."""
    if "answer" in obj and "responses" in obj:
        check.fail((), "either answer (TREC RAG) or responses (RAGTIME, iKAT run), or a --layout", "both")
    if "responses" in obj:
        return IKAT_RUN if "turn_id" in obj else RAGTIME
    if "metadata" in obj:
        head = obj["metadata"]
        return RAG_2026 if isinstance(head, dict) and "run_desc" in head and "type" not in head else RAG_2025
    if "run_id" in obj or "topic_id" in obj:
        return RAG_2024
    check.fail((), _NO_LAYOUT, f"fields {sorted(obj)}")
    raise AssertionError  # fail raises


def _rag_answer(check: JsonChecker, obj: dict, number: int, layout: str | None = None) -> CitedResponse:
    layout = layout or _detect(check, obj)
    if layout == RAGTIME:
        return _ragtime_answer(check, obj, number)
    if layout == IKAT_RUN:
        return _ikat_run_answer(check, obj, number)
    if layout in (RAG_2025, RAG_2026):
        head, head_path = check.get(obj, "metadata", dict, ()), ("metadata",)
        topic_key, text_key, what = "narrative_id", "narrative", "a narrative id"
        if layout == RAG_2026:
            for key in ("team_id", "narrative", "run_desc"):
                check.get(head, key, str, head_path)
    else:
        head, head_path = obj, ()
        topic_key, text_key, what = "topic_id", "topic", "a topic id"
    run = check.id(check.get(head, "run_id", str, head_path), head_path + ("run_id",), "a run id")
    topic_value = check.get(head, topic_key, (str, int), head_path)
    if isinstance(topic_value, bool):
        check.fail(head_path + (topic_key,), f"{what} (a string or an integer)", topic_value)
    topic_id = check.id(str(topic_value), head_path + (topic_key,), what)
    topic = check.get(head, text_key, str, head_path, required=False)
    references = tuple(
        check.id(ref, ("references", ri), "a segment id")
        for ri, ref in enumerate(check.get(obj, "references", list, ()))
    )
    if layout in MAX_REFERENCES and len(references) > MAX_REFERENCES[layout]:
        check.fail(("references",), f"at most {MAX_REFERENCES[layout]} references ({layout})", str(len(references)))
    known = set(references)
    answer = check.get(obj, "answer", list, ())
    if not answer:
        check.fail(("answer",), "at least one answer sentence", "an empty list")
    sentences = []
    for si, element in enumerate(answer):
        where = ("answer", si)
        if not isinstance(element, dict):
            check.fail(where, "a sentence object {text, citations}", element)
        text = check.get(element, "text", str, where)
        cited = []
        for ci, citation in enumerate(check.get(element, "citations", list, where, required=False) or []):
            at = where + ("citations", ci)
            if isinstance(citation, int) and not isinstance(citation, bool):
                if not 0 <= citation < len(references):
                    expected = f"an index into references 0..{len(references) - 1}" if references else "no citation"
                    check.fail(at, expected + f" ({len(references)} references)", str(citation))
                cited.append(references[citation])
            elif isinstance(citation, str):
                pid = check.id(citation, at, "a segment id")
                if pid not in known:
                    check.fail(at, "a segment id listed in references", short(pid, 40))
                cited.append(pid)
            else:
                check.fail(at, "a citation: an index into references or a segment id", citation)
        sentences.append((text, tuple(cited)))
    text, parts = joined(sentences)
    return CitedResponse(
        run=run,
        turn_id=topic_id,
        text=text,
        sentences=parts,
        references=references,
        layout=layout,
        topic=topic,
        fields={k: v for k, v in obj.items() if k not in ("references", "answer")},
        line=number,
    )


def _scored_sentences(
    check: JsonChecker, obj: dict, *, scores_only: bool
) -> tuple[list[tuple[str, tuple[str, ...]]], tuple[dict, ...]]:
    """The ``responses`` sentences of a RAGTIME report or iKAT run line: (text, cited ids) each, and what each
    says besides (``scores`` of a ``{id: score}`` citation map, other keys as read). ``scores_only``: the
    citations must be a map (iKAT); else a map or a list of ids (RAGTIME), or absent / null (cites nothing)."""
    items = check.get(obj, "responses", list, ())
    if not items:
        check.fail(("responses",), "at least one response sentence", "an empty list")
    sentences, extra = [], []
    for si, element in enumerate(items):
        where = ("responses", si)
        if not isinstance(element, dict):
            check.fail(where, "a sentence object {text, citations}", element)
        text = check.get(element, "text", str, where)
        given = element.get("citations")
        more = {k: v for k, v in element.items() if k not in ("text", "citations")}
        if scores_only and not isinstance(given, dict):
            check.fail(where + ("citations",), "citations as {passage id: score}", given)
        cited: list[str] = []
        if isinstance(given, dict):
            scores = []
            for pid, score in given.items():
                at = where + ("citations", pid)
                if isinstance(score, bool) or not isinstance(score, (int, float)):
                    check.fail(at, "a numeric score", short(score, 40) if isinstance(score, str) else score)
                cited.append(check.id(pid, at, "a document id"))
                scores.append(score)
            more["scores"] = scores
        elif isinstance(given, list):
            cited = [check.id(pid, where + ("citations", ci), "a document id") for ci, pid in enumerate(given)]
        elif given is not None:
            check.fail(where + ("citations",), "citations as {document id: score} or [document id]", given)
        sentences.append((text, tuple(cited)))
        extra.append(more)
    return sentences, tuple(extra) if any(extra) else ()


def _ragtime_answer(check: JsonChecker, obj: dict, number: int) -> CitedResponse:
    """A RAGTIME report: ``{"metadata": {team_id, topic_id, run_id, ...}, "references"?: [id], "responses":
    [{"text", "citations": {id: score} | [id]}]}``."""
    head = check.get(obj, "metadata", dict, ())
    check.get(head, "team_id", str, ("metadata",))
    run = check.id(check.get(head, "run_id", str, ("metadata",)), ("metadata", "run_id"), "a run id")
    topic_id = topic_id_value(
        check, check.get(head, "topic_id", (str, int), ("metadata",)), ("metadata", "topic_id"), "a topic id"
    )
    given = check.get(obj, "references", list, (), required=False) or []
    references = tuple(check.id(ref, ("references", ri), "a document id") for ri, ref in enumerate(given))
    sentences, extra = _scored_sentences(check, obj, scores_only=False)
    text, parts = joined(sentences)
    return CitedResponse(
        run=run,
        turn_id=topic_id,
        text=text,
        sentences=parts,
        references=references,
        layout=RAGTIME,
        fields={k: v for k, v in obj.items() if k not in ("references", "responses")},
        line=number,
        sentence_fields=extra,
    )


def _ikat_run_answer(check: JsonChecker, obj: dict, number: int) -> CitedResponse:
    """An iKAT 2025 run line: ``{"turn_id", "metadata": {team_id, run_id, run_type}, "references": {passage id:
    score}, "responses": [{"text", "citations": {passage id: score}, "ptkb_provenance": [...]}]}``."""
    head = check.get(obj, "metadata", dict, ())
    check.get(head, "team_id", str, ("metadata",))
    run = check.id(check.get(head, "run_id", str, ("metadata",)), ("metadata", "run_id"), "a run id")
    run_type = check.get(head, "run_type", str, ("metadata",))
    if run_type not in IKAT_RUN_TYPES:
        check.fail(("metadata", "run_type"), f"a run type {' / '.join(IKAT_RUN_TYPES)}", short(run_type, 40))
    turn_id = topic_id_value(check, check.get(obj, "turn_id", (str, int), ()), ("turn_id",), "a turn id")
    given = check.get(obj, "references", dict, ())
    references, scores = [], []
    for pid, score in given.items():
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            check.fail(("references", pid), "a numeric score", short(score, 40) if isinstance(score, str) else score)
        references.append(check.id(pid, ("references", pid), "a passage id"))
        scores.append(score)
    sentences, extra = _scored_sentences(check, obj, scores_only=True)
    known = set(references)
    for si, (_, cited) in enumerate(sentences):
        for pid in cited:
            if pid not in known:
                check.fail(("responses", si, "citations", pid), "a passage id listed in references", short(pid, 40))
        if "ptkb_provenance" not in obj["responses"][si]:
            check.fail(("responses", si), "a field 'ptkb_provenance'", f"fields {sorted(obj['responses'][si])}")
    text, parts = joined(sentences)
    return CitedResponse(
        run=run,
        turn_id=turn_id,
        text=text,
        sentences=parts,
        references=tuple(references),
        layout=IKAT_RUN,
        fields={k: v for k, v in obj.items() if k not in ("turn_id", "references", "responses")},
        line=number,
        sentence_fields=extra,
        reference_scores=tuple(scores),
    )


# ------------------------------------------------------------------------------- advice (warnings)

WORD_LIMITS = {RAG_2025: 400, RAG_2026: 1024, IKAT_RUN: 250}
"""Words per response each layout allows (TREC RAG 2025 guidelines "less than 400 words"; RAG 2026 rag-task.md
1024; iKAT 2025 ``validate_trec_ikat25.py`` RESPONSE_LIMIT 250): over it is a warning."""
MAX_CITATIONS = {RAG_2026: 3, RAGTIME: 3}
"""Citations per sentence the track judges (more is a warning: they judge the first three)."""
MAX_REFERENCES = {RAG_2025: 100}
"""References per answer (more is refused)."""
CITED_ONLY = (RAG_2026, RAGTIME)
"""Layouts whose references list exactly the cited documents: an uncited reference is a warning."""
IKAT_RUN_TYPES = ("manual", "automatic", "generation-only")


def word_count(texts: Iterable[str]) -> int:
    """Words of a response: its sentences joined by one space, NFKC-normalised, split on whitespace (AutoJudge's
    ``length_count`` in words; the iKAT 2025 validator counts the same)."""
    return len(unicodedata.normalize("NFKC", " ".join(texts)).split())


def char_count(texts: Iterable[str]) -> int:
    """Characters of a response: its sentences joined by one space, NFKC-normalised (RAGTIME's request limit,
    as AutoJudge's ``length_count`` in chars and hltcoe/rag-run-validator count them)."""
    return len(unicodedata.normalize("NFKC", " ".join(texts)))


def _path_text(json_path: tuple) -> str:
    return "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in json_path) or "the top level"


def _advice(path, number: int, response: CitedResponse, topics: Mapping[str, RagTopic]) -> list[str]:
    """What the layout advises against in one answer, each a line ``FILE:LINE: what at [JSON path]``: more
    citations in a sentence than the track judges (:data:`MAX_CITATIONS`), references no sentence cites in a
    layout whose references are the cited documents (:data:`CITED_ONLY`), RAGTIME citations missing from its
    (non-empty) references, a response over the word limit (:data:`WORD_LIMITS`) or over a RAGTIME request's
    character limit (its request's in ``topics``, else the report's own ``metadata.limit``), a TREC RAG
    narrative other than its topic's text in ``topics`` (the track asks for an exact copy)."""
    layout, out = response.layout, []
    key = "responses" if layout in (RAGTIME, IKAT_RUN) else "answer"

    def warn(what: str, json_path: tuple) -> None:
        out.append(f"{path}:{number}: {what} at {_path_text(json_path)}")

    cap = MAX_CITATIONS.get(layout)
    for si, sentence in enumerate(response.sentences):
        if cap is not None and len(sentence.citations) > cap:
            warn(
                f"{len(sentence.citations)} citations in one sentence ({layout} judges the first {cap})",
                (key, si, "citations"),
            )
    cited = {pid for s in response.sentences for pid in s.citations}
    if layout in CITED_ONLY:
        for ri, ref in enumerate(response.references):
            if ref not in cited:
                warn(
                    f"a reference no sentence cites, {short(ref, 40)} ({layout} lists the cited documents only)",
                    ("references", ri),
                )
    if layout == RAGTIME and response.references:
        listed = set(response.references)
        for si, sentence in enumerate(response.sentences):
            for pid in sentence.citations:
                if pid not in listed:
                    warn(f"a cited document missing from references, {short(pid, 40)}", (key, si, "citations"))
    texts = [s.text for s in response.sentences]
    if layout in WORD_LIMITS and (words := word_count(texts)) > WORD_LIMITS[layout]:
        warn(f"{words} words ({layout} allows {WORD_LIMITS[layout]})", (key,))
    topic = topics.get(response.turn_id)
    if layout in (RAG_2025, RAG_2026) and topic is not None and response.topic not in (None, topic.text):
        where = ("metadata", "narrative")
        warn(
            f"a narrative other than the text of topic {short(topic.topic_id, 40)} (line {topic.line} of the topics)",
            where,
        )
    if layout == RAGTIME:
        limit = topic.limit if topic is not None else None
        own = (response.fields.get("metadata") or {}).get("limit")
        if limit is None and isinstance(own, int) and not isinstance(own, bool):
            limit = own
        if limit is not None and (chars := char_count(texts)) > limit:
            warn(f"{chars} characters after NFKC (the request allows {limit})", (key,))
    return out


# ------------------------------------------------------------------------------------- RAG topics
