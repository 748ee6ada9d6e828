"""Cited responses written back in their layouts: an iKAT topics file's responses, and TREC RAG answer lines
(2024, 2025, 2026, RAGTIME, iKAT 2025 run) with their fields as read, so a file read and written again is equal.
Pure; the readers live in :mod:`assess.formats.responses`."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from assess.errors import FormatError
from assess.formats.reading import (
    short,
)
from assess.formats.responses import ANSWER_LAYOUTS, IKAT_RUN, RAG_2024, RAG_2025, RAG_2026, RAGTIME, CitedResponse


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


def rag_document(response: CitedResponse, *, layout: str | None = None, cite_ids: bool = False) -> dict:
    """One response as an answer object, in ``layout`` (default: the record's; an iKAT topics record
    becomes a 2024 answer). The fields read with the record come back as they were, with run, topic
    id and topic text from the record. TREC RAG citations are indices into ``references`` (an id's first
    position), or segment ids with ``cite_ids`` (2025 "Format 2"); a cited id missing from the
    references is appended to them. RAGTIME and iKAT run layouts: :func:`_scored_document`. Citations of
    the whole response (iKAT topics) name no sentence, which these layouts cannot say: they are refused."""
    layout = layout or (response.layout if response.layout in ANSWER_LAYOUTS else RAG_2024)
    if layout not in ANSWER_LAYOUTS:
        raise FormatError(
            "the TREC RAG layout", None, f"the layout {' or '.join(map(repr, ANSWER_LAYOUTS))}", short(layout)
        )
    if response.citations:
        raise FormatError(
            "the TREC RAG layout",
            None,
            "citations given per sentence",
            f"{len(response.citations)} citations of the whole response (run {short(response.run, 40)}, "
            f"turn {short(response.turn_id, 40)})",
        )
    if layout in (RAGTIME, IKAT_RUN):
        return _scored_document(response, layout)
    references = list(response.references)
    if layout == RAG_2026 and response.layout != RAG_2026:  # references are the cited documents only
        cited = {pid for s in response.sentences for pid in s.citations}
        references = [ref for ref in dict.fromkeys(references) if ref in cited]
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
    if layout in (RAG_2025, RAG_2026):
        same = response.layout == layout
        head = dict(document.get("metadata") or {}) if same else {}
        document = {k: v for k, v in document.items() if k == "metadata" or same}
        topic_key, text_key = "narrative_id", "narrative"
        if layout == RAG_2026 and not same:  # the layout's fields, empty where the record has no value
            given = dict(response.fields.get("metadata") or {})
            head = {"team_id": given.get("team_id", ""), "narrative_id": response.turn_id, "narrative": ""}
            head.update(run_id=response.run, run_desc=given.get("run_desc", ""))  # rag-task.md's order
    else:
        head = document if response.layout == RAG_2024 else {}
        topic_key, text_key = "topic_id", "topic"
    head["run_id"] = response.run
    if str(head.get(topic_key)) != response.turn_id:  # keep an integer id as it was written
        head[topic_key] = response.turn_id
    if response.topic is not None:
        head[text_key] = response.topic
    elif layout == RAG_2026:
        head.setdefault(text_key, "")
    else:
        head.pop(text_key, None)
    if layout in (RAG_2025, RAG_2026):
        document["metadata"] = head
    else:
        document = head
    return {**document, "references": references, "answer": answer}


def _scored_document(response: CitedResponse, layout: str) -> dict:
    """A RAGTIME report or iKAT 2025 run line. Citations are ``{id: score}`` with the scores read (a map keeps
    an id once); without scores RAGTIME writes a list of ids and the iKAT line gives each citation 1.0.
    RAGTIME writes ``references`` when the record has some (from another layout: the cited ones only); an
    iKAT line always does, with the scores read (1.0 where none was), cited passages it lacks appended. The
    metadata and other fields of a record read in the same layout come back as they were; from another
    layout the metadata has the run, topic and the record's ``team_id`` (else empty), and an iKAT line
    ``run_type`` ``automatic`` and an empty ``ptkb_provenance`` per sentence."""
    same = response.layout == layout
    document = {k: v for k, v in response.fields.items() if same and k not in ("references", "responses", "turn_id")}
    given = dict(response.fields.get("metadata") or {})
    head = dict(given) if same else {"team_id": given.get("team_id", "")}
    head["run_id"] = response.run
    extras = response.sentence_fields if same and len(response.sentence_fields) == len(response.sentences) else ()
    sentences = []
    for si, sentence in enumerate(response.sentences):
        more = dict(extras[si]) if extras else {}
        scores = more.pop("scores", None)
        if layout == RAGTIME and not (isinstance(scores, list) and len(scores) == len(sentence.citations)):
            citations: Any = list(sentence.citations)  # no scores: a list of ids
        else:
            scores = scores if isinstance(scores, list) and len(scores) == len(sentence.citations) else None
            citations = {}
            for ci, pid in enumerate(sentence.citations):
                citations.setdefault(pid, scores[ci] if scores else 1.0)
        if layout == IKAT_RUN and not same:
            more["ptkb_provenance"] = []
        sentences.append({"text": sentence.text, "citations": citations, **more})
    if layout == RAGTIME:
        if str(head.get("topic_id")) != response.turn_id:  # keep an integer id as it was written
            head["topic_id"] = response.turn_id
        document["metadata"] = head
        out = dict(document)
        references = list(response.references)
        if not same:  # RAGTIME references are the cited documents only: those listed, then those not
            cited = [pid for s in response.sentences for pid in s.citations]
            references = list(dict.fromkeys([*(ref for ref in references if ref in set(cited)), *cited]))
        if references:
            out["references"] = references
        out["responses"] = sentences
        return out
    if not same:
        head["run_type"] = "automatic"
    scores = response.reference_scores if len(response.reference_scores) == len(response.references) else ()
    references: dict[str, Any] = {}
    for ri, ref in enumerate(response.references):
        references.setdefault(ref, scores[ri] if scores else 1.0)
    for sentence in response.sentences:
        for pid in sentence.citations:
            references.setdefault(pid, 1.0)
    document.pop("metadata", None)
    return {
        "turn_id": response.turn_id,
        "metadata": head,
        **document,
        "references": references,
        "responses": sentences,
    }


def write_rag_answers(
    path: str | Path, responses: Iterable[CitedResponse], *, layout: str | None = None, cite_ids: bool = False
) -> None:
    """Write responses as a TREC RAG answer file, one JSON object per line (see :func:`rag_document`)."""
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        for response in responses:
            handle.write(json.dumps(rag_document(response, layout=layout, cite_ids=cite_ids), ensure_ascii=False))
            handle.write("\n")
