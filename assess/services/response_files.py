"""Generated responses with citations in and out of the store: the iKAT topics' responses and TREC RAG
answer files (``import ikat-responses`` / ``rag-answers``, ``export ikat-responses`` / ``rag-answers``).

The files are read and written by :mod:`assess.formats.responses` (layouts, the sentence rule and their
sources: docs/responses.md); the store keeps a response as its text, sentences and citations
(:mod:`store.responses`) plus the layout it came in and that layout's other fields (a RAG answer's
reference list, topic text, ``response_length``, ``metadata``), so an export writes a response back as it
was read: importing the export gives equal records.

Choices (stated in docs/responses.md and ``--help``):

- The iKAT topics' responses are stored under the run ``topics`` unless a run name is given.
- A RAG file's responses keep their ``run_id``; a run name given renames them (only a file of one run:
  the file's fields are renamed with it, so the export names the new run).
- Cited passages the store does not know are added as passages without text (as qrels and run imports
  add them); the turns must exist (import the topics first).
- A response already stored for the same run and turn: the same content is left as it is (a re-import
  changes nothing); a different content is refused unless replacing is asked for (``--replace``): an
  organizer then learns that a file differs from the one imported before instead of losing the first.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator, Sequence
from pathlib import Path

from assess.errors import AssessError, FormatError
from assess.formats import rag_topics, response_writing
from assess.formats import responses as layouts
from assess.formats import sentences as sentence_rule
from assess.formats.reading import id_problem, short
from assess.tasks import RESPONSE_FILE_KINDS, CitedResponse, CitedSentence
from store import Store, imports
from store import responses as stored
from store.db import write
from store.history import record_action
from store.staging import stage_block, staging

IKAT_RESPONSES, RAG_ANSWERS = RESPONSE_FILE_KINDS
KINDS = RESPONSE_FILE_KINDS


def iter_read(
    kind: str,
    path: str | Path,
    *,
    run: str | None = None,
    layout: str | None = None,
    warnings: list[str] | None = None,
    topics: dict[str, rag_topics.RagTopic] | None = None,
) -> Iterator[layouts.CitedResponse]:
    """:func:`read` one response at a time: the file is read incrementally (a RAG file line by line, an
    iKAT topics file one conversation at a time). With ``run``, an answer of a second run is refused
    where it comes (naming its line). ``layout``, ``warnings``, ``topics`` (answer files only):
    :func:`assess.formats.responses.iter_rag_answers`."""
    if run is not None and (problem := id_problem(run)):
        raise AssessError(f"the run name {short(run)} is not an id: {problem}")
    if kind == IKAT_RESPONSES:
        if layout is not None:
            raise AssessError(f"--layout is for rag-answers imports (the iKAT topics have one layout), not {kind}")
        yield from layouts.iter_ikat_responses(path, run=run or layouts.DEFAULT_TOPICS_RUN)
        return
    if kind != RAG_ANSWERS:
        raise ValueError(f"unknown response file kind {kind!r}; choose one of {', '.join(KINDS)}")
    first = None
    for response in layouts.iter_rag_answers(path, layout=layout, warnings=warnings, topics=topics):
        if run is None:
            yield response
            continue
        first = first or response.run
        if response.run != first:
            expected = "answers of one run (to store them under another name)"
            raise FormatError(path, response.line, expected, f"runs {sorted({first, response.run})}")
        yield _renamed(response, run)


RESPONSES_PER_BLOCK = 2_000  # responses written per block of a streamed import


def read(kind: str, path: str | Path, *, run: str | None = None) -> list[layouts.CitedResponse]:
    """The responses of a file of ``kind``; ``run`` names their run (see the module docstring)."""
    if run is not None and (problem := id_problem(run)):
        raise AssessError(f"the run name {short(run)} is not an id: {problem}")
    if kind == IKAT_RESPONSES:
        return layouts.parse_ikat_responses(path, run=run or layouts.DEFAULT_TOPICS_RUN)
    if kind != RAG_ANSWERS:
        raise ValueError(f"unknown response file kind {kind!r}; choose one of {', '.join(KINDS)}")
    found = layouts.parse_rag_answers(path)
    if run is None:
        return found
    runs = sorted({r.run for r in found})
    if len(runs) > 1:
        raise FormatError(path, None, "answers of one run (to store them under another name)", f"runs {runs[:5]}")
    return [_renamed(r, run) for r in found]


def _renamed(response: layouts.CitedResponse, run: str) -> layouts.CitedResponse:
    """The response under another run name, the run id among its fields renamed with it."""
    fields = dict(response.fields)
    if response.layout != layouts.RAG_2024 and isinstance(fields.get("metadata"), dict):
        fields["metadata"] = {**fields["metadata"], "run_id": run}
    elif "run_id" in fields:
        fields["run_id"] = run
    return dataclasses.replace(response, run=run, fields=fields)


def to_store(response: layouts.CitedResponse) -> tuple[CitedResponse, stored.Origin]:
    """The store's record of a response read from a file, and its origin (layout, other fields)."""
    record = CitedResponse(
        run=response.run,
        turn_id=response.turn_id,
        sentences=tuple(CitedSentence(s.text, s.citations, s.start, s.end) for s in response.sentences),
        text=response.text,
        citations=response.citations,
        line=response.line,
    )
    fields = {"references": list(response.references), "topic": response.topic, "fields": dict(response.fields)}
    if response.sentence_fields:  # only when there is something: the rows of the older layouts stay as they were
        fields["sentence_fields"] = [dict(f) for f in response.sentence_fields]
    if response.reference_scores:
        fields["reference_scores"] = list(response.reference_scores)
    return record, (response.layout, fields)


def from_store(found: dict) -> layouts.CitedResponse:
    """A stored response (:func:`store.responses.responses`) as the record its file's reader gave.

    A response stored without sentences (a plain ``responses`` import) is cut by the sentence rule; one
    stored without a layout has the distinct passages it cites as references and is a 2024 RAG answer
    when written in that layout."""
    text = found["text"]
    if found["sentences"]:
        sentences = tuple(
            sentence_rule.Sentence(s["text"], s["start"], s["end"], tuple(s["citations"])) for s in found["sentences"]
        )
    else:
        sentences = sentence_rule.sentences_of(text)
    whole = tuple(found["citations"])
    extra = found["file_fields"] or {}
    references = extra.get("references")
    if references is None:
        references = list(dict.fromkeys([*(p for s in sentences for p in s.citations), *whole]))
    return layouts.CitedResponse(
        run=found["run"],
        turn_id=found["turn_id"],
        text=text,
        sentences=sentences,
        references=tuple(references),
        citations=whole,
        layout=found["layout"] or (layouts.IKAT_TOPICS if whole else layouts.RAG_2024),
        topic=extra.get("topic"),
        fields=extra.get("fields") or {},
        sentence_fields=tuple(extra.get("sentence_fields") or ()),
        reference_scores=tuple(extra.get("reference_scores") or ()),
    )


def import_file(
    db: Store,
    kind: str,
    path: str | Path,
    *,
    run: str | None = None,
    replace: bool = False,
    by: str | None = None,
    who: str | None = None,
    layout: str | None = None,
    topics: dict[str, rag_topics.RagTopic] | None = None,
) -> dict:
    """Read a response file and store its responses in one transaction (nothing written on a refusal).
    The summary: ``responses``, ``with_citations``, ``citations`` (as the file gives them, a passage cited
    twice counted twice), ``new``, ``replaced``, ``unchanged``, ``runs`` (their number); with ``replace``
    also ``labels_on_replaced`` (per task). ``by``: record the import as an organizer action; ``who``: the
    person named in the history row of each replaced response (old and new text, the labels on it).

    ``layout`` (answer files): read every line in this layout (default: each line's own, told by its fields);
    what the layout advises against (:func:`assess.formats.responses.iter_rag_answers`) is stored anyway and
    listed under ``warnings`` (at most :data:`MAX_WARNINGS` lines, then how many more); ``topics``: the topics
    or RAGTIME requests by id, whose texts and character limits the answers are checked against.

    The file is streamed (:func:`_import_blocks`), with ``replace`` too."""
    return _import_blocks(db, kind, path, run=run, by=by, replace=replace, who=who, layout=layout, topics=topics)


MAX_WARNINGS = 100  # warning lines an import lists; the rest are counted in one more line


def _import_blocks(
    db: Store,
    kind: str,
    path: str | Path,
    *,
    run: str | None,
    by: str | None,
    replace: bool = False,
    who: str | None = None,
    layout: str | None = None,
    topics: dict[str, rag_topics.RagTopic] | None = None,
) -> dict:
    """:func:`import_file`: the file read incrementally (:func:`iter_read`) and written
    :data:`RESPONSES_PER_BLOCK` responses at a time, so memory is bounded by a block whatever the file's
    size. Each block is checked against the store and written into staging tables without the write lock
    (:func:`store.staging.staging`); one short write transaction then copies them into the store
    (:func:`store.responses.switch_responses`). A refusal anywhere (a bad line, an unknown turn, a response
    that differs from the stored one without ``replace``) comes before the switch, so bad input leaves the
    store unchanged, and other writers never wait for the reading. With ``replace``, each block's stored
    versions are read before it is staged, and its replaced responses staged as history rows (one each)."""

    totals = dict.fromkeys(("count", "with_citations", "citations", "new", "replaced", "unchanged"), 0)
    runs: set[str] = set()
    replacements = imports.Replacements(staged=True)
    advice: list[str] = []
    seen: dict[tuple[str, str], int | None] = {}
    responses = iter_read(kind, path, run=run, layout=layout, warnings=advice, topics=topics)
    with staging(db, stored.STAGING):
        while block := list(itertools.islice(responses, RESPONSES_PER_BLOCK)):  # read and checked without the lock
            records, origins = zip(*map(to_store, block), strict=True)
            with stage_block(db):
                if kind == IKAT_RESPONSES:  # records of a JSON file carry no line: find the one of an unknown turn
                    imports.check_turns(
                        db, str(path), records, locate=lambda r: layouts.ikat_turn_line(path, r.turn_id)
                    )
                before = _stored_versions(db, block) if replace else {}
                summary = stored.stage_responses(db, path, records, origins=origins, replace=replace, seen=seen)
                if replace:
                    changed = [(r, before[(r.run, r.turn_id)]) for r in block if before.get((r.run, r.turn_id), r) != r]
                    imports.record_replacements(db, who, str(path), "response", changed, into=replacements)
            for key in totals:
                totals[key] += summary[key]
            runs.update(r.run for r in records)
        # the switch: SQLite holds the write lock for the copy alone; PostgreSQL only for the commit
        with write(db, references_checked=True, lock_to_commit=True):
            stored.switch_responses(db, path, who=who)
            if by is not None:
                record_action(db, by, "import", f"responses {Path(path).name}", None, totals, via="responses")
    out = {
        "responses": totals["count"],
        **{key: totals[key] for key in ("with_citations", "citations", "new", "replaced", "unchanged")},
        "runs": len(runs),
    }
    if replace:
        recorded = replacements.summary("response")
        out["labels_on_replaced"] = recorded["labels_on_replaced"]
        if "warnings" in recorded:
            out["warnings"] = recorded["warnings"]
    if advice:
        more = len(advice) - MAX_WARNINGS
        listed = advice[:MAX_WARNINGS] + ([f"{path}: {more} more warnings like these"] if more > 0 else [])
        out["warnings"] = listed + out.get("warnings", [])
    return out


def _stored_versions(db: Store, found: Sequence[layouts.CitedResponse]) -> dict[tuple[str, str], layouts.CitedResponse]:
    """The stored responses to the runs and turns of ``found`` (one block), as records of the files'
    reader, by (run, turn)."""
    out = {}
    for key in sorted({(r.run, r.turn_id) for r in found}):
        out.update({(s["run"], s["turn_id"]): from_store(s) for s in stored.responses(db, run=key[0], turn_id=key[1])})
    return out


def records(db: Store, *, runs: Sequence[str] = ()) -> list[layouts.CitedResponse]:
    """The stored responses (of ``runs``, all when none is named) as file records, in conversation and
    turn order, then run; an unknown run is refused, naming the runs that have responses."""
    out = []
    for name in runs or [None]:
        found = stored.responses(db, run=name)
        if name is not None and not found:
            have = sorted({r["run"] for r in stored.responses(db)})
            raise AssessError(f"no responses of run {name!r}; runs with responses: {', '.join(have) or 'none'}")
        out += [from_store(r) for r in found]
    if not out:
        raise AssessError(
            "no responses are stored (import them with: python -m assess import ikat-responses|rag-answers)"
        )
    return out


def export_file(db: Store, kind: str, path: str | Path, *, runs: Sequence[str] = (), layout: str | None = None) -> dict:
    """Write the stored responses (of ``runs``) as an iKAT topics file or an answer file (one run after another,
    each in turn order). ``layout`` (answer files only): one of
    :data:`assess.formats.responses.ANSWER_LAYOUTS` for every answer; by default each keeps the layout it was
    read in. Returns the counts written.

    The iKAT topics layout holds one response per turn: responses of several runs are refused there.
    The RAG layout has citations per sentence only: a response citing passages as a whole (the iKAT
    topics' responses) is refused there (a FormatError naming the run and turn)."""
    found = records(db, runs=runs)
    if kind == IKAT_RESPONSES:
        names = sorted({r.run for r in found})
        if len(names) > 1:
            raise AssessError(
                f"the iKAT topics layout holds one response per turn: name one run with --run (runs: {', '.join(names)})"
            )
        response_writing.write_ikat_responses(path, found)
    elif kind == RAG_ANSWERS:
        found.sort(key=lambda r: r.run)  # stable: each run's answers stay in turn order
        for response in found:  # refused before the file is opened: no half-written file
            response_writing.rag_document(response, layout=layout)
        response_writing.write_rag_answers(path, found, layout=layout)
    else:
        raise ValueError(f"unknown response file kind {kind!r}; choose one of {', '.join(KINDS)}")
    return layouts.response_counts(found)
