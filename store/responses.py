"""Generated responses with citations: a run's response to a turn cut into sentences, and the passages
each sentence cites (schemas 9 and 10).

A response is named by its run and turn; its text lives in ``responses`` (where every other reader of
responses finds it), its sentences in ``response_sentences`` (numbered from 1, with code-point offsets
into the text) and its citations in ``response_citations`` (sentence 0: the response as a whole). A
reader of response files hands over :class:`assess.tasks.CitedResponse` records; writing them is one
transaction, and a response written again replaces its sentences and citations (or, with
``replace=False``, is refused when it differs from the stored one and left alone when it does not).
A passage cited twice (the iKAT 2025 topics do it) is stored twice, as the file gives it (schema 10);
:func:`citation_items` lists it once. A response read from a file keeps the file's layout and that
layout's other fields (``layout``, ``file_fields``: a TREC RAG answer's references, topic text and
other fields), so that it can be written back as it came.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from assess.errors import FormatError, InvalidSpan
from assess.tasks import CitedResponse, CitedSentence, Shown
from store import labels, outbox
from store.db import Store, each, now, row, rows, run, run_many, value, write
from store.history import record_action
from store.imports import check_turns, ensure_passages, switch_history
from store.rag_imports import register_response_runs

_WHOLE = 0  # the sentence number of citations given for the response as a whole


def _checked(file: str, response: CitedResponse) -> list[tuple[int, int]]:
    """The sentences' offsets; a FormatError naming the file and line when a sentence is not in the text."""
    where = f"the response of run {response.run!r} to turn {response.turn_id!r}"
    try:
        return response.spans()
    except InvalidSpan as e:
        raise FormatError(file, response.line, f"{where}: sentences that are in its text", str(e)) from None


Origin = tuple[str | None, Mapping | None]
"""The layout a response was read from and that layout's other fields (JSON-able), or (None, None)."""


def _content(
    response: CitedResponse, spans: Sequence[tuple[int, int]], origin: Origin
) -> tuple[str, list, list, str | None, object]:
    """What makes two versions of a response the same: text, sentences with offsets and citations, the
    response's own citations, layout and other fields (compared as they are stored)."""
    layout, fields = origin
    sentences = [(s.text, a, b, list(s.citations)) for s, (a, b) in zip(response.sentences, spans, strict=True)]
    return response.full_text, sentences, list(response.citations), layout, _json(fields)


def _stored_content(found: dict) -> tuple[str, list, list, str | None, object]:
    sentences = [(s["text"], s["start"], s["end"], s["citations"]) for s in found["sentences"]]
    return found["text"], sentences, found["citations"], found["layout"], _json(found["file_fields"])


def _json(fields: Mapping | None) -> str | None:
    return None if fields is None else json.dumps(fields, ensure_ascii=False)


def _difference(new: tuple, old: tuple) -> str:
    """What differs between two contents (:func:`_content`), in words, for a refusal."""
    if new[0] != old[0]:
        return "a different text"
    if len(new[1]) != len(old[1]):
        return f"{len(new[1])} sentences where {len(old[1])} are stored"
    for n, (a, b) in enumerate(zip(new[1], old[1], strict=True), start=1):
        if a[:3] != b[:3]:
            return f"sentence {n} cut differently"
        if a[3] != b[3]:
            return f"other citations of sentence {n}"
    if new[2] != old[2]:
        return "other citations of the whole response"
    return "the same text and citations from another layout or with other fields"


def add_responses(
    db: Store,
    file: str | Path,
    responses: Sequence[CitedResponse],
    *,
    by: str | None = None,
    origins: Sequence[Origin] | None = None,
    replace: bool = True,
    tally: bool = False,
) -> dict:
    """Store responses with their sentences and citations, all in one transaction; return the counts.

    The turns must exist (a FormatError names the first unknown one); runs and cited passages that the
    store does not know yet are created (passages by id only, as run imports do). ``origins`` (one per
    response): the layout each was read from and its other fields. A response already stored for the
    run and turn gets the new text, sentences and citations; with ``replace=False`` a response that
    differs from the stored one is refused instead (a FormatError naming the file, the line and what
    differs; nothing is written) and one that does not is left as it is; a response stored without
    sentences (a plain ``responses`` import) with the same text counts as different.
    The summary counts ``count``, ``with_citations``, ``citations`` of the given records, and with
    ``tally`` how many of them were ``new``, ``replaced`` and ``unchanged``. ``by`` (who imported the file) is recorded in the history as an
    organizer's import, as other imports are.
    """
    file = str(file)
    origins = list(origins) if origins is not None else [(None, None)] * len(responses)
    if len(origins) != len(responses):
        raise ValueError("one origin per response")
    seen: dict[tuple[str, str], int | None] = {}
    for r in responses:
        if (r.run, r.turn_id) in seen:
            raise FormatError(
                file,
                r.line,
                f"one response per run and turn (line {seen[(r.run, r.turn_id)]} has run {r.run!r}, turn {r.turn_id!r})",
                "a second one",
            )
        seen[(r.run, r.turn_id)] = r.line
    spans = [_checked(file, r) for r in responses]
    check_turns(db, file, responses)
    stamp = now()
    summary, tallies = counts_of(responses), {"new": 0, "replaced": 0, "unchanged": 0}
    if tally:
        summary = {**summary, **tallies}
    with write(db):
        kept = _compare_stored(db, file, responses, spans, origins, replace, tallies)
        if tally:
            summary.update(tallies)
        chosen = [i for i in range(len(responses)) if i not in kept]
        _write_responses(
            db, file, [responses[i] for i in chosen], [spans[i] for i in chosen], [origins[i] for i in chosen], stamp
        )
        if by is not None:
            record_action(db, by, "import", f"responses {Path(file).name}", None, summary, via="responses")
    return summary


def _compare_stored(
    db: Store,
    file: str,
    responses: Sequence[CitedResponse],
    spans: Sequence[list[tuple[int, int]]],
    origins: Sequence[Origin],
    replace: bool,
    summary: dict,
) -> set[int]:
    """Count new, replaced and unchanged responses; the positions of the unchanged ones (left as stored).
    Without ``replace``, the first response that differs from the stored one is refused."""
    stored: dict[tuple[str, str], dict] = {}
    for name in sorted({r.run for r in responses}):
        given = [r.turn_id for r in responses if r.run == name]
        have = row(db, "SELECT COUNT(*) AS n FROM responses WHERE run = :run", {"run": name})["n"]
        if have <= 2 * len(given):  # the run's stored responses are few beside these: read them all at once
            stored.update({(s["run"], s["turn_id"]): s for s in _responses(db, run=name)})
        else:  # a block of a large file (or a few responses of a large run): only the ones given
            for turn in given:
                stored.update({(s["run"], s["turn_id"]): s for s in _responses(db, run=name, turn_id=turn)})
    kept: set[int] = set()
    for i, (r, offsets, origin) in enumerate(zip(responses, spans, origins, strict=True)):
        old = stored.get((r.run, r.turn_id))
        if old is None:
            summary["new"] += 1
            continue
        new, before = _content(r, offsets, origin), _stored_content(old)
        if new == before:
            summary["unchanged"] += 1
            kept.add(i)
        elif replace:
            summary["replaced"] += 1
        else:
            raise FormatError(
                file,
                r.line,
                f"the response stored for run {r.run!r} and turn {r.turn_id!r} (from "
                f"{Path(old['imported_from'] or 'an earlier import').name}), or replacing it asked for",
                _difference(new, before),
            )
    return kept


def _write_responses(
    db: Store,
    file: str,
    responses: Sequence[CitedResponse],
    spans: Sequence[list[tuple[int, int]]],
    origins: Sequence[Origin],
    stamp: str,
) -> None:
    if not responses:
        return
    sentences, citations = [], []
    for r, offsets in zip(responses, spans, strict=True):
        key = {"run": r.run, "turn_id": r.turn_id}
        for number, (s, (start, end)) in enumerate(zip(r.sentences, offsets, strict=True), start=1):
            sentences.append({**key, "sentence": number, "text": s.text, "start_char": start, "end_char": end})
        for number, cited in [(_WHOLE, r.citations), *((n, s.citations) for n, s in enumerate(r.sentences, 1))]:
            citations += [{**key, "sentence": number, "position": i, "passage_id": p} for i, p in enumerate(cited)]
    register_response_runs(db, {r.run for r in responses}, file, stamp)
    ensure_passages(db, (c["passage_id"] for c in citations))
    run_many(
        db,
        "INSERT INTO responses (run, turn_id, text, imported_from, layout, file_fields) "
        "VALUES (:run, :turn_id, :text, :file, :layout, :file_fields) "
        "ON CONFLICT (run, turn_id) DO UPDATE SET text = excluded.text, imported_from = excluded.imported_from, "
        "layout = excluded.layout, file_fields = excluded.file_fields",
        [
            {
                "run": r.run,
                "turn_id": r.turn_id,
                "text": r.full_text,
                "file": file,
                "layout": layout,
                "file_fields": _json(fields),
            }
            for r, (layout, fields) in zip(responses, origins, strict=True)
        ],
    )
    # a text that did not change keeps its rows (the trigger clears only changed texts): replace them all
    for r in responses:
        key = {"run": r.run, "turn_id": r.turn_id}
        run(db, "DELETE FROM response_citations WHERE run = :run AND turn_id = :turn_id", key)
        run(db, "DELETE FROM response_sentences WHERE run = :run AND turn_id = :turn_id", key)
    run_many(
        db,
        "INSERT INTO response_sentences (run, turn_id, sentence, text, start_char, end_char) "
        "VALUES (:run, :turn_id, :sentence, :text, :start_char, :end_char)",
        sentences,
    )
    run_many(
        db,
        "INSERT INTO response_citations (run, turn_id, sentence, position, passage_id) "
        "VALUES (:run, :turn_id, :sentence, :position, :passage_id)",
        citations,
    )


# ------------------------------------------------------------------------------------------- staged imports
# A response file is written into temporary tables block by block (store.staging.staging / stage_block: no write
# lock held), then made visible by switch_responses in one short write transaction.

STAGING = {
    "staged_responses": "run TEXT NOT NULL, turn_id TEXT NOT NULL, text TEXT NOT NULL, imported_from TEXT, "
    "layout TEXT, file_fields TEXT, stored INTEGER NOT NULL, PRIMARY KEY (run, turn_id)",
    "staged_sentences": "run TEXT NOT NULL, turn_id TEXT NOT NULL, sentence INTEGER NOT NULL, text TEXT NOT NULL, "
    "start_char INTEGER NOT NULL, end_char INTEGER NOT NULL",
    "staged_citations": "run TEXT NOT NULL, turn_id TEXT NOT NULL, sentence INTEGER NOT NULL, "
    "position INTEGER NOT NULL, passage_id TEXT NOT NULL",
    "staged_passages": "id TEXT PRIMARY KEY, doc_id TEXT NOT NULL",
    "staged_history": "seq INTEGER NOT NULL, kind TEXT NOT NULL, source TEXT NOT NULL, item TEXT NOT NULL, "
    "old TEXT, new TEXT, via TEXT NOT NULL",
}


def stage_responses(
    db: Store,
    file: str | Path,
    responses: Sequence[CitedResponse],
    *,
    origins: Sequence[Origin],
    replace: bool,
    seen: dict[tuple[str, str], int | None],
) -> dict:
    """One block of a staged import (inside :func:`store.staging.stage_block`, with :data:`STAGING`): the checks of
    :func:`add_responses` against the store as it is now, then the block's new and changed responses written
    into the staging tables; ``seen`` (run, turn) -> line across the file's blocks. Returns the block's
    counts (``new``, ``replaced``, ``unchanged`` and those of :func:`counts_of`)."""
    file = str(file)
    for r in responses:
        if (r.run, r.turn_id) in seen:
            expected = (
                f"one response per run and turn (line {seen[(r.run, r.turn_id)]} has run {r.run!r}, turn {r.turn_id!r})"
            )
            raise FormatError(file, r.line, expected, "a second one")
        seen[(r.run, r.turn_id)] = r.line
    spans = [_checked(file, r) for r in responses]
    check_turns(db, file, responses)
    tallies = {"new": 0, "replaced": 0, "unchanged": 0}
    kept = _compare_stored(db, file, responses, spans, origins, replace, tallies)
    chosen = [i for i in range(len(responses)) if i not in kept]
    stored_before = {(r["run"], r["turn_id"]) for r in _stored_keys(db, [responses[i] for i in chosen])}
    heads, sentences, citations = [], [], []
    for i in chosen:
        r, offsets, (layout, fields) = responses[i], spans[i], origins[i]
        key = {"run": r.run, "turn_id": r.turn_id}
        heads.append(
            {
                **key,
                "text": r.full_text,
                "file": file,
                "layout": layout,
                "file_fields": _json(fields),
                "stored": int((r.run, r.turn_id) in stored_before),
            }
        )
        for number, (s, (start, end)) in enumerate(zip(r.sentences, offsets, strict=True), start=1):
            sentences.append({**key, "sentence": number, "text": s.text, "start_char": start, "end_char": end})
        for number, cited in [(_WHOLE, r.citations), *((n, s.citations) for n, s in enumerate(r.sentences, 1))]:
            citations += [{**key, "sentence": number, "position": i, "passage_id": p} for i, p in enumerate(cited)]
    run_many(
        db,
        "INSERT INTO staged_responses (run, turn_id, text, imported_from, layout, file_fields, stored) "
        "VALUES (:run, :turn_id, :text, :file, :layout, :file_fields, :stored)",
        heads,
    )
    run_many(
        db,
        "INSERT INTO staged_sentences (run, turn_id, sentence, text, start_char, end_char) "
        "VALUES (:run, :turn_id, :sentence, :text, :start_char, :end_char)",
        sentences,
    )
    run_many(
        db,
        "INSERT INTO staged_citations (run, turn_id, sentence, position, passage_id) "
        "VALUES (:run, :turn_id, :sentence, :position, :passage_id)",
        citations,
    )
    run_many(
        db,
        "INSERT INTO staged_passages (id, doc_id) VALUES (:id, :doc_id) ON CONFLICT (id) DO NOTHING",
        ({"id": p, "doc_id": p.rsplit(":", 1)[0]} for p in sorted({c["passage_id"] for c in citations})),
    )
    return {**counts_of(responses), **tallies}


def _stored_keys(db: Store, responses: Sequence[CitedResponse]) -> list[dict]:
    out = []
    for name in sorted({r.run for r in responses}):
        turns = sorted({r.turn_id for r in responses if r.run == name})
        for start in range(0, len(turns), 500):
            chunk = {f"t{i}": t for i, t in enumerate(turns[start : start + 500])}
            marks = ", ".join(f":{k}" for k in chunk)
            out += rows(
                db,
                f"SELECT run, turn_id FROM responses WHERE run = :run AND turn_id IN ({marks})",
                {"run": name, **chunk},
            )
    return out


def switch_responses(db: Store, file: str | Path, *, who: str | None = None) -> None:
    """Make the staged responses visible (inside the caller's ``store.db.write(references_checked=True)``): runs, passages,
    responses, their sentences and citations and the staged history rows, each one INSERT … SELECT, so the
    write lock is held for the copy alone. ``who``: the person named in staged replacement rows, checked
    again here (rights are checked at the write)."""
    stamp = now()
    # turns were checked while staging; one deleted since is refused here (the copy runs without SQLite's
    # per-row foreign-key checks: write(references_checked=True))
    gone = row(
        db,
        "SELECT s.turn_id AS turn_id FROM staged_responses s WHERE NOT EXISTS "
        "(SELECT 1 FROM turns t WHERE t.id = s.turn_id) LIMIT 1",
    )
    if gone is not None:
        raise FormatError(str(file), None, "turns of the store", f"turn {gone['turn_id']!r}, deleted during the import")
    # "WHERE true": SQLite reads an ON CONFLICT after a bare SELECT … FROM as a join's ON. The runs of unchanged
    # responses (not staged) are stored already.
    run(
        db,
        "INSERT INTO runs (name, kind, file, imported_at) SELECT DISTINCT run, 'response', :file, :at "
        "FROM staged_responses WHERE true ORDER BY run ON CONFLICT (name) DO NOTHING",
        {"file": str(file), "at": stamp},
    )
    run(
        db,
        "INSERT INTO passages (id, doc_id) SELECT id, doc_id FROM staged_passages WHERE true "
        "ON CONFLICT (id) DO NOTHING",
    )
    if row(db, "SELECT 1 AS one FROM staged_responses WHERE stored = 1 LIMIT 1"):  # replaced: their old rows go
        for table in ("response_citations", "response_sentences"):
            run(
                db,
                f"DELETE FROM {table} WHERE (run, turn_id) IN (SELECT run, turn_id FROM staged_responses WHERE stored = 1)",
            )
    run(
        db,
        "INSERT INTO responses (run, turn_id, text, imported_from, layout, file_fields) "
        "SELECT run, turn_id, text, imported_from, layout, file_fields FROM staged_responses WHERE true "
        "ORDER BY run, turn_id "
        "ON CONFLICT (run, turn_id) DO UPDATE SET text = excluded.text, imported_from = excluded.imported_from, "
        "layout = excluded.layout, file_fields = excluded.file_fields",
    )
    run(
        db,
        "INSERT INTO response_sentences (run, turn_id, sentence, text, start_char, end_char) "
        "SELECT run, turn_id, sentence, text, start_char, end_char FROM staged_sentences "
        "ORDER BY run, turn_id, sentence",
    )
    run(
        db,
        "INSERT INTO response_citations (run, turn_id, sentence, position, passage_id) "
        "SELECT run, turn_id, sentence, position, passage_id FROM staged_citations "
        "ORDER BY run, turn_id, sentence, position",
    )
    switch_history(db, who)
    outbox.import_finished(db, "rag-answers", file, responses=int(value(db, "SELECT COUNT(*) FROM staged_responses")))


def add_response(db: Store, file: str | Path, response: CitedResponse, *, by: str | None = None) -> dict:
    """:func:`add_responses` for one response."""
    return add_responses(db, file, [response], by=by)


def counts_of(responses: Sequence[CitedResponse]) -> dict:
    """``{count, with_citations, citations}`` of records (what :func:`counts` will say once they are stored)."""

    def cited(r: CitedResponse) -> int:
        return len(r.citations) + sum(len(s.citations) for s in r.sentences)

    return {
        "count": len(responses),
        "with_citations": sum(1 for r in responses if cited(r)),
        "citations": sum(cited(r) for r in responses),
    }


def counts(db: Store) -> dict:
    """``{count, with_citations, citations}``: stored responses, those citing at least one passage, and
    citations (one per sentence and passage it cites; sentence 0 for the response as a whole)."""
    found = row(
        db,
        "SELECT (SELECT COUNT(*) FROM responses) AS count, "
        "(SELECT COUNT(*) FROM (SELECT DISTINCT run, turn_id FROM response_citations) c) AS with_citations, "
        "(SELECT COUNT(*) FROM response_citations) AS citations",
    )
    return dict(found)


def responses(db: Store, *, run: str | None = None, turn_id: str | None = None) -> list[dict]:
    """Stored responses (of one run and/or turn), in conversation and turn order, then run:
    ``{run, turn_id, text, imported_from, layout, file_fields, sentences: [{sentence, text, start, end,
    citations}], citations}`` where ``citations`` are passage ids in citing order, repeats kept (the
    response's own: those given for it as a whole), ``layout`` the layout it was read from and
    ``file_fields`` that layout's other fields (a dict; both None when it was stored otherwise).
    Responses without sentences (stored by a plain run import) have ``sentences == []``."""
    return _responses(db, run=run, turn_id=turn_id)


def _responses(db: Store, *, run: str | None = None, turn_id: str | None = None) -> list[dict]:
    where, params = [], {}
    for name, given in (("run", run), ("turn_id", turn_id)):
        if given is not None:
            where.append(f"r.{name} = :{name}")
            params[name] = given
    condition = f"WHERE {' AND '.join(where)}" if where else ""
    out: dict[tuple[str, str], dict] = {}
    for r in each(
        db,
        "SELECT r.run AS run, r.turn_id AS turn_id, r.text AS text, r.imported_from AS imported_from, "
        "r.layout AS layout, r.file_fields AS file_fields FROM responses r "
        f"JOIN turns t ON t.id = r.turn_id JOIN conversations c ON c.id = t.conversation_id {condition} "
        "ORDER BY c.rowid, t.position, r.run",
        params,
    ):
        fields = json.loads(r["file_fields"]) if r["file_fields"] is not None else None
        out[(r["run"], r["turn_id"])] = {**r, "file_fields": fields, "sentences": [], "citations": []}
    if not out:
        return []
    sentences: dict[tuple[str, str, int], dict] = {}
    for s in each(
        db,
        "SELECT r.run AS run, r.turn_id AS turn_id, r.sentence AS sentence, r.text AS text, r.start_char AS start, "
        f"r.end_char AS end_ FROM response_sentences r {condition} ORDER BY r.run, r.turn_id, r.sentence",
        params,
    ):
        if (s["run"], s["turn_id"]) in out:
            entry = {
                "sentence": s["sentence"],
                "text": s["text"],
                "start": s["start"],
                "end": s["end_"],
                "citations": [],
            }
            out[(s["run"], s["turn_id"])]["sentences"].append(entry)
            sentences[(s["run"], s["turn_id"], s["sentence"])] = entry
    for c in each(
        db,
        "SELECT r.run AS run, r.turn_id AS turn_id, r.sentence AS sentence, r.passage_id AS passage_id "
        f"FROM response_citations r {condition} ORDER BY r.run, r.turn_id, r.sentence, r.position",
        params,
    ):
        if c["sentence"] == _WHOLE:
            if (c["run"], c["turn_id"]) in out:
                out[(c["run"], c["turn_id"])]["citations"].append(c["passage_id"])
        elif (c["run"], c["turn_id"], c["sentence"]) in sentences:
            sentences[(c["run"], c["turn_id"], c["sentence"])]["citations"].append(c["passage_id"])
    return list(out.values())


def response(db: Store, run: str, turn_id: str) -> dict | None:
    """One stored response as :func:`responses` gives it, or None."""
    found = responses(db, run=run, turn_id=turn_id)
    return found[0] if found else None


def records(db: Store, *, run: str | None = None) -> list[CitedResponse]:
    """Stored responses as the records they were written from (for the writers of response files)."""
    return [
        CitedResponse(
            run=r["run"],
            turn_id=r["turn_id"],
            sentences=tuple(
                CitedSentence(s["text"], tuple(s["citations"]), s["start"], s["end"]) for s in r["sentences"]
            ),
            text=r["text"],
            citations=tuple(r["citations"]),
        )
        for r in responses(db, run=run)
    ]


def citation_items(db: Store, *, run: str | None = None, turn_id: str | None = None) -> list[dict]:
    """Every (sentence, cited passage) pair, the items of citation-support labels, in conversation, turn, run,
    sentence and citing order: ``{turn_id, run, sentence, passage_id, sentence_text, passage_text}``;
    ``passage_text`` None when the store has no text for the passage. Citations of a response as a whole
    (sentence 0) come with the whole response as ``sentence_text``. A passage cited twice by one sentence
    is one item (at its first place)."""
    where, params = [], {}
    for name, given in (("run", run), ("turn_id", turn_id)):
        if given is not None:
            where.append(f"x.{name} = :{name}")
            params[name] = given
    condition = f"AND {' AND '.join(where)}" if where else ""
    return [
        dict(r)
        for r in each(
            db,
            "SELECT x.turn_id AS turn_id, x.run AS run, x.sentence AS sentence, x.passage_id AS passage_id, "
            "COALESCE(s.text, r.text) AS sentence_text, p.text AS passage_text FROM response_citations x "
            "JOIN responses r ON r.run = x.run AND r.turn_id = x.turn_id "
            "LEFT JOIN response_sentences s ON s.run = x.run AND s.turn_id = x.turn_id AND s.sentence = x.sentence "
            "JOIN passages p ON p.id = x.passage_id "
            "JOIN turns t ON t.id = x.turn_id JOIN conversations c ON c.id = t.conversation_id "
            "WHERE NOT EXISTS (SELECT 1 FROM response_citations y WHERE y.run = x.run AND y.turn_id = x.turn_id "
            "AND y.sentence = x.sentence AND y.passage_id = x.passage_id AND y.position < x.position) "
            f"{condition} ORDER BY c.rowid, t.position, x.run, x.sentence, x.position",
            params,
        )
    ]


def save_citation_label(
    db: Store,
    source: str,
    turn_id: str,
    run: str,
    sentence: int,
    passage_id: str,
    support: int | None,
    *,
    note: str | None = None,
    mode: str = "blind",
    via: str = "key",
    active_ms: int | None = None,
    expected: Shown | None = None,
) -> None:
    """Write one citation-support label (:data:`assess.tasks.CITATION_SUPPORT`; None: cannot judge) in its own
    transaction; :func:`store.labels.save` refuses it unless the sentence cites the passage (the kind's item
    source in the registry is ``response_citations``), or when ``expected`` (what the page showed of the label)
    is not the stored label."""
    labels.save(
        db,
        "citation",
        source,
        (turn_id, run, sentence, passage_id),
        support,
        note=note,
        mode=mode,
        via=via,
        active_ms=active_ms,
        expected=expected,
    )
