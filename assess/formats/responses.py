"""Generated responses with citations: read and written in the iKAT topics and TREC RAG answer layouts.

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
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assess.errors import FormatError
from assess.formats.ikat import cited_passages, turn_number
from assess.formats.reading import JsonChecker, JsonRecords, iter_lines, parse_json_text, short

IKAT_TOPICS = "ikat-topics"
RAG_2024 = "trec-rag-2024"
RAG_2025 = "trec-rag-2025"
LAYOUTS = (IKAT_TOPICS, RAG_2024, RAG_2025)
DEFAULT_TOPICS_RUN = "topics"  # the run name given to the responses of an iKAT topics file


@dataclass(frozen=True, slots=True)
class Sentence:
    """One sentence of a response: ``text == response.text[start:end]``, with the passages it cites."""

    text: str
    start: int
    end: int
    citations: tuple[str, ...] = ()  # passage ids in the order given (repeats kept)


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

# A sentence ends after . ! ? or … (a run of them), closing quotes or brackets included, where
# whitespace and then more text follow; a line break always ends one.
_END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s+\S)")
_NEXT = re.compile(r"\s+")
_LAST_WORD = re.compile(r"(\S+)$")
_INITIAL = re.compile(r"[A-Za-z]")
ABBREVIATIONS = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "e.g", "i.e", "cf", "approx", "fig", "vol"}
    | {"al", "inc", "ltd", "corp", "dept", "u.s", "u.k", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep"}
    | {"sept", "oct", "nov", "dec"}
)


def split_sentences(text: str) -> list[tuple[int, int]]:
    """The (start, end) character offsets of the sentences of ``text``, without surrounding whitespace.

    The rule: a line break ends a sentence; within a line, a sentence ends after a run of ``.``, ``!``,
    ``?`` or ``…`` (closing quotes and brackets kept with it) that is followed by whitespace and then a
    character that is not a lowercase letter; a single ``.`` does not end one after a listed
    abbreviation (:data:`ABBREVIATIONS`, case-insensitive: "Dr.", "e.g.", "U.S."), after a single
    letter (an initial: "J. K. Rowling"), or inside a number ("3.5": no whitespace follows).
    Text that is only whitespace has no sentences.
    """
    spans: list[tuple[int, int]] = []
    position = 0
    for line in text.splitlines(keepends=True):
        base = position
        position += len(line)
        body = line.rstrip("\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
        start = 0
        for match in _END.finditer(body):
            after = _NEXT.match(body, match.end())
            following = body[after.end()] if after and after.end() < len(body) else ""
            if following.islower():
                continue
            if match.group() == ".":
                word = _LAST_WORD.search(body, 0, match.start())
                token = word.group(1).lower().lstrip("(\"'“‘[") if word else ""
                if token in ABBREVIATIONS or _INITIAL.fullmatch(token):
                    continue
            _add_span(spans, body, base, start, match.end())
            start = match.end()
        _add_span(spans, body, base, start, len(body))
    return spans


def _add_span(spans: list, body: str, base: int, start: int, end: int) -> None:
    piece = body[start:end]
    stripped = piece.strip()
    if stripped:
        lead = len(piece) - len(piece.lstrip())
        spans.append((base + start + lead, base + start + lead + len(stripped)))


def sentences_of(text: str) -> tuple[Sentence, ...]:
    """The sentences of free text by :func:`split_sentences`, citing nothing."""
    return tuple(Sentence(text[a:b], a, b) for a, b in split_sentences(text))


def joined(sentences: Sequence[tuple[str, tuple[str, ...]]]) -> tuple[str, tuple[Sentence, ...]]:
    """The response text (sentences joined by one space) and the sentences with their offsets."""
    out, position = [], 0
    for text, citations in sentences:
        out.append(Sentence(text, position, position + len(text), citations))
        position += len(text) + 1
    return " ".join(text for text, _ in sentences), tuple(out)


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
    from assess.formats.reading import json_line

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


def ikat_document(responses: Iterable[CitedResponse]) -> list[dict]:
    """The responses in the iKAT 2025 topics layout: ``[{"number", "responses": [{"turn_id", "response",
    "citations"}]}]``, conversations and turns in the order first met. A sentence's citations join the
    response's list (the layout has no per-sentence citations), then the response's own, repeats kept.
    Turn ids must be ``<conversation>_<number>``."""
    conversations: dict[str, list[dict]] = {}
    for response in responses:
        conv_id, _, number = response.turn_id.rpartition("_")
        if not conv_id or not number.isdigit():
            raise FormatError(
                "the iKAT topics layout", None, "turn ids <conversation>_<number>", short(response.turn_id)
            )
        conversations.setdefault(conv_id, []).append(
            {"turn_id": int(number), "response": response.text, "citations": list(response.cited)}
        )
    return [{"number": conv_id, "responses": turns} for conv_id, turns in conversations.items()]


def write_ikat_responses(path: str | Path, responses: Iterable[CitedResponse]) -> None:
    """Write :func:`ikat_document` as indented JSON (UTF-8, as the organisers' files are)."""
    Path(path).write_text(json.dumps(ikat_document(responses), ensure_ascii=False, indent=4) + "\n", encoding="utf-8")


# ------------------------------------------------------------------------------------- TREC RAG


class _LineChecker(JsonChecker):
    """Checks the JSON object of one JSONL line; a failure names the line of the file."""

    def __init__(self, path, number: int, text: str):
        super().__init__(path, text)
        self.number = number

    def fail(self, json_path: tuple, expected: str, found: Any):
        self.text = "\n" * (self.number - 1) + self.text  # so json_line counts the file's lines
        super().fail(json_path, expected, found)


def iter_rag_answers(path: str | Path) -> Iterator[CitedResponse]:
    """The responses of a TREC RAG answer file (JSONL), line by line (see :func:`parse_rag_answers`).

    Memory is one line's answer plus, per (run, topic) given, a digest of its answer (:func:`_digest`)
    and its line, so that one given again is refused when it differs and given once when it does not."""
    seen: dict[tuple[str, str], tuple[bytes, int]] = {}
    for number, text in iter_lines(path):
        try:
            obj = parse_json_text(path, text)
        except FormatError as exc:
            raise FormatError(path, number, f"one JSON object per line ({exc.expected})", exc.found) from None
        check = _LineChecker(path, number, text)
        if not isinstance(obj, dict):
            check.fail((), "a JSON object (one answer per line)", obj)
        response = _rag_answer(check, obj, number)
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
        yield response
    if not seen:
        raise FormatError(path, None, "at least one answer line", "an empty file")


def _digest(response: CitedResponse) -> bytes:
    """A digest of everything that makes two responses equal (the fields ``==`` compares; the other
    fields as canonical JSON): equal responses have equal digests."""
    fields = json.dumps(response.fields, sort_keys=True, ensure_ascii=False)
    parts = (response.run, response.turn_id, response.text, response.sentences, response.references)
    whole = repr((*parts, response.citations, response.layout, response.topic, fields))
    return hashlib.blake2b(whole.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def parse_rag_answers(path: str | Path) -> list[CitedResponse]:
    """Read a TREC RAG 2024 or 2025 answer file (JSONL; layouts in the module docstring)."""
    return list(iter_rag_answers(path))


def _rag_answer(check: JsonChecker, obj: dict, number: int) -> CitedResponse:
    if "metadata" in obj:
        layout, head, head_path = RAG_2025, check.get(obj, "metadata", dict, ()), ("metadata",)
        topic_key, text_key, what = "narrative_id", "narrative", "a narrative id"
    elif "run_id" in obj or "topic_id" in obj:
        layout, head, head_path = RAG_2024, obj, ()
        topic_key, text_key, what = "topic_id", "topic", "a topic id"
    else:
        check.fail(
            (),
            "a TREC RAG answer: run_id, topic_id, references, answer (2024) or metadata, references, answer (2025)",
            f"fields {sorted(obj)}",
        )
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


def rag_document(response: CitedResponse, *, layout: str | None = None, cite_ids: bool = False) -> dict:
    """One response as a TREC RAG answer object, in ``layout`` (default: the record's; an iKAT record
    becomes a 2024 answer). The fields read with the record come back as they were, with run, topic
    id and topic text from the record. Citations are indices into ``references`` (an id's first
    position), or segment ids with ``cite_ids`` (2025 "Format 2"); a cited id missing from the
    references is appended to them. Citations of the whole response (iKAT) name no sentence, which
    this layout cannot say: they are refused."""
    layout = layout or (response.layout if response.layout != IKAT_TOPICS else RAG_2024)
    if layout not in (RAG_2024, RAG_2025):
        raise FormatError("the TREC RAG layout", None, f"the layout {RAG_2024!r} or {RAG_2025!r}", short(layout))
    if response.citations:
        raise FormatError(
            "the TREC RAG layout",
            None,
            "citations given per sentence",
            f"{len(response.citations)} citations of the whole response (run {short(response.run, 40)}, "
            f"turn {short(response.turn_id, 40)})",
        )
    references = list(response.references)
    index: dict[str, int] = {}
    for position, ref in enumerate(references):
        index.setdefault(ref, position)
    for sentence in response.sentences:
        for pid in sentence.citations:
            if pid not in index:
                index[pid] = len(references)
                references.append(pid)
    answer = [
        {"text": s.text, "citations": [pid if cite_ids else index[pid] for pid in s.citations]}
        for s in response.sentences
    ]
    document = {k: v for k, v in response.fields.items() if k not in ("references", "answer")}
    if layout == RAG_2025:
        head = dict(document.get("metadata") or {}) if response.layout == RAG_2025 else {}
        document = {k: v for k, v in document.items() if k == "metadata" or response.layout == RAG_2025}
        topic_key, text_key = "narrative_id", "narrative"
    else:
        head = document if response.layout == RAG_2024 else {}
        topic_key, text_key = "topic_id", "topic"
    head["run_id"] = response.run
    if str(head.get(topic_key)) != response.turn_id:  # keep an integer id as it was written
        head[topic_key] = response.turn_id
    if response.topic is not None:
        head[text_key] = response.topic
    else:
        head.pop(text_key, None)
    if layout == RAG_2025:
        document["metadata"] = head
    else:
        document = head
    return {**document, "references": references, "answer": answer}


def write_rag_answers(
    path: str | Path, responses: Iterable[CitedResponse], *, layout: str | None = None, cite_ids: bool = False
) -> None:
    """Write responses as a TREC RAG answer file, one JSON object per line (see :func:`rag_document`)."""
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        for response in responses:
            handle.write(json.dumps(rag_document(response, layout=layout, cite_ids=cite_ids), ensure_ascii=False))
            handle.write("\n")
