"""What the nugget pages do in one call: a browser selection stored as a nugget, a mark or an aspect's
words; the sources that may pick relevant passages; the nugget files to download. ``db`` is an open store
(:func:`store.open_db`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence

from assess import formats
from assess.errors import AssessError
from assess.measures import span_agreement as span_measures
from assess.nuggets import documents, spans
from assess.services import audit
from assess.tasks import JudgingMode, Task
from assess.text import inert_markdown
from store import conversations, exports, labels, queue
from store.nuggets import aspects, duplicates, gold, gold_responses, responses


def _json(document) -> str:
    return json.dumps(document, indent=1, ensure_ascii=False)


def nugget_files(db, source: str) -> dict[str, tuple[str, str, Callable[[], str]]]:
    """The source's nuggets as CONE-RAG JSON, all and de-duplicated: {name: (button label, file name, a function
    that writes the text)}. The texts are written when called (a download's click), not on each page run: the
    two files of a 23,000-nugget set took 1.9 s."""
    return {
        "full": (
            "Download all nuggets (CONE-RAG JSON)",
            f"nuggets_{source}.json",
            lambda: _json(formats.nuggets_to_json(exports.nuggets(db, source))),
        ),
        "dedup": (
            "Download the de-duplicated set",
            f"nuggets_{source}_deduplicated.json",
            lambda: _json(formats.nuggets_to_json(exports.nuggets(db, source, dedup=True))),
        ),
    }


# ------------------------------------------------------------------------------------------- passage nuggets


def relevance_sources(db, assessor: str, turn_id: str) -> tuple[list[str], int, dict[str, str]]:
    """Whose grades may pick a turn's relevant passages, which to offer first, and how to name the choices.

    The assessor first, other label sources unless the study is blind (then not even as a filter),
    and '' for every pooled passage with text, the default until the assessor has graded the turn.
    """
    blind = queue.judging_mode(db) == JudgingMode.BLIND
    others = [] if blind else [s for s in labels.sources(db, Task.PASSAGE, turn_id=turn_id) if s != assessor]
    options = [assessor, *others, ""]
    names = {assessor: f"your labels ({assessor})", "": "all pooled passages with text"}
    return options, 0 if gold.has_grades(db, assessor, turn_id) else len(options) - 1, names


def store_selection(db, assessor: str, turn_id: str, picked: Mapping, moving: Mapping | None) -> str:
    """Store a span picker's selection as a new nugget, or as the new span of the nugget being moved."""
    body = conversations.passage_text(db, picked["id"])
    span = spans.span_from_utf16(body or "", int(picked["start"]), int(picked["end"]), picked.get("text"))
    where = f"“{span.text}” ({picked['id']} {span.start}–{span.end})"
    if moving:
        moved = gold.set_nugget_span(
            db, assessor, moving["id"], span.start, span.end, span.text, passage_id=picked["id"]
        )
        return f"Nugget {moved['key']} moved: {where}"
    gold.add_span_nugget(db, assessor, turn_id, picked["id"], span.start, span.end, span.text)
    return f"Nugget added: {where}"


def add_typed(db, assessor: str, turn_id: str, text: str, passage_id: str) -> str:
    """Store a typed nugget, with its span when the passage holds the text; say which."""
    added = gold.nugget(db, gold.add_text_nugget(db, assessor, turn_id, text, passage_id=passage_id))
    where = (
        f"found at {added['start_char']}–{added['end_char']}"
        if added["start_char"] is not None
        else "not found in the passage: stored as free text"
    )
    return f"Nugget {added['key']} added ({where})"


def edit_nugget(db, assessor: str, nugget_id: int, text: str | None, relevance: str) -> str:
    """Save a nugget's edited text and relevance ('none' or a grade); say whether its span was kept."""
    saved = gold.update_nugget(
        db, assessor, nugget_id, text=text, relevance=None if relevance == "none" else int(relevance)
    )
    kind = "span kept" if saved["start_char"] is not None else "free text (not found in its passage)"
    return f"Nugget {saved['key']} saved: {kind}"


# ------------------------------------------------------------------------------------------- response marks and aspects


def save_study(db, name: str, attributes_json: str, *, max_level: int, L: int) -> str:
    """Create or update a GFRC2 study from its attribute sets as JSON text; return its name."""
    attributes = documents.parse_attributes_json(attributes_json)
    return save_study_attributes(db, name, attributes, max_level=max_level, L=L)["name"]


def save_study_attributes(db, name: str, attributes: Sequence[dict], *, max_level: int, L: int) -> dict:
    """Create or update a GFRC2 study from its parsed attribute sets; its stored settings
    (:func:`store.nuggets.responses.save_study`)."""
    return responses.save_study(db, name, attributes, max_level=max_level, L=L)


def mark_words(
    db,
    study: str,
    run: str,
    turn_id: str,
    level: int,
    groups: Mapping,
    *,
    picked: Mapping | None = None,
    words: tuple[int, int] | None = None,
) -> tuple[int, int]:
    """Mark a range of a run's response: the words a span picker's selection touches, or the word numbers given."""
    if picked is not None:
        text = responses.response_text(db, run, turn_id) or ""
        span = spans.span_from_utf16(text, int(picked["start"]), int(picked["end"]), picked.get("text"))
        words = documents.words_in_span(text, span.start, span.end)
    start_word, end_word = int(words[0]), int(words[1])
    responses.mark_response_nugget(db, study, run, turn_id, start_word, end_word, level, dict(groups))
    return start_word, end_word


def gfrc2_file(db, study: str) -> tuple[str, str, dict]:
    """The study as a ``score gfrc2`` input: (file name, JSON text, document)."""
    document = gfrc2_document(db, study)
    return f"gfrc2_{study}.json", _json(document), document


def gfrc2_scores(document: dict, run: str, conversation: str) -> tuple[str, dict]:
    """One run's GFRC2 scores on one conversation as a line of text, and the conversation's curves to plot."""
    view = audit.gfrc2_view(document)
    scores = next(r for r in view["table"] if r["run"] == run and r["conversation"] == conversation)
    name = f"{inert_markdown(run)} on {inert_markdown(conversation)}"  # data, inside our markdown
    line = f"**{name}:** GFRC2 {scores['GFRC2']:.6f} · EGNP {scores['EGNP']:.6f} · " + " · ".join(
        f"{inert_markdown(k)} {v:.6f}" for k, v in scores.items() if k.startswith("EGF")
    )
    return line, view["by_conversation"][conversation]


def add_selection_to_aspect(db, aspect_id: int, run: str, turn_id: str, picked: Mapping) -> str:
    """Append the words of a selection in a run's response to an aspect's content; say how many."""
    response = responses.response_text(db, run, turn_id) or ""
    span = spans.span_from_utf16(response, int(picked["start"]), int(picked["end"]), picked.get("text"))
    aspects.add_to_content(db, aspect_id, run, span.text)
    ids = [a["id"] for a in aspects.turn_aspects(db, turn_id)]
    number = ids.index(aspect_id) + 1 if aspect_id in ids else ""
    return f"Added {documents.word_count(span.text)} words to aspect {number}"


def save_contents(db, run: str, texts: Mapping[int, str]) -> None:
    """Save a run's edited content of several aspects, each in its own transaction (as typed, words only)."""
    for aspect_id, text in texts.items():
        aspects.set_aspect_content(db, aspect_id, run, text)


def delete_nugget(db, assessor: str, nugget_id: int) -> str:
    gold.delete_nugget(db, assessor, nugget_id)
    return "Nugget deleted"


def prefill_aspects(db, source: str, turn_id: str, run: str) -> str:
    """Pre-fill a turn's aspects and a run's content from an LLM's AEPD answer; say what changed."""
    n = aspects.prefill_aspects(db, source, turn_id, run)
    return (
        f"Pre-filled: {n['added']} aspects added, {n['existing']} already listed, "
        f"content of {n['content']} set for this run; review and edit them below"
    )


def aspect_preview(db, source: str, turn_id: str, run: str) -> list[dict]:
    """An LLM's proposed aspects as table rows: aspect, PTKB ids, content length in words, content."""
    return [
        {
            "aspect": a["aspect"],
            "PTKB": ", ".join(a["ptkb"]),
            "words": documents.word_count(a["text"]),
            "content": a["text"],
        }
        for a in aspects.llm_aspects(db, source, turn_id, run)
    ]


def aepd_file(db) -> tuple[str, dict]:
    """Every turn's aspects as a ``score aepd`` input: (JSON text, document)."""
    document = aepd_document(db)
    return _json(document), document


def gfrc2_document(db, study: str, *, runs: Sequence[str] | None = None) -> dict:
    """The study's ``score gfrc2`` input of ``runs`` (default every run with marks)."""
    return responses.gfrc2_export(db, study, runs=runs)


def aepd_document(db, *, runs: Sequence[str] | None = None) -> dict:
    """The ``score aepd`` input of ``runs`` (default every run with a response)."""
    return aspects.aepd_export(db, runs=runs)


def locate_nuggets(db, source: str, *, relocate: bool = False) -> dict:
    """Locate a source's text-only nuggets in their turn's passages; the counts
    (:func:`store.nuggets.gold.locate_nuggets`)."""
    return gold.locate_nuggets(db, source, relocate=relocate)


def aepd_scores(document: dict, turn_id: str) -> tuple[list[dict], list[dict]]:
    """AEPD scores of every (run, turn): the points of one turn (for its table) and all points (for the scatter)."""
    points = audit.aepd_view(document)["points"]
    return [p for p in points if str(p["id"]).endswith(f"/{turn_id}")], points


def suggest_duplicates(db, source: str, turns: list[str] | None, judge, *, threshold: float) -> dict[str, int]:
    """Suggest duplicate nugget pairs of ``source`` in each of ``turns`` (default: every turn with its nuggets)
    with the entailment ``judge``: ``{turn: pairs stored}`` (:func:`store.nuggets.duplicates.suggest_duplicates`)."""
    turns = turns or sorted(gold.nugget_turns(db, source))
    return {t: duplicates.suggest_duplicates(db, source, t, judge, threshold=threshold) for t in turns}


# The nugget pages' reads and single writes: the store's functions of the same names (the pages reach the store
# through services only, so one module says what a nugget page may touch).


def nugget_sources(db, *, viewer: str | None = None) -> list[str]:
    """The nugget sets ``viewer`` may see (None: every set)."""
    return gold.nugget_sources(db, viewer=viewer)


def nugget_turns(db, source: str) -> list[str]:
    return gold.nugget_turns(db, source)


def turn_nuggets(db, source: str, turn_id: str) -> list[dict]:
    return gold.turn_nuggets(db, source, turn_id)


def has_grades(db, source: str, turn_id: str) -> bool:
    return gold.has_grades(db, source, turn_id)


def relevant_passages(db, turn_id: str, *, source: str | None, threshold: int = 2) -> list[dict]:
    return gold.relevant_passages(db, turn_id, source=source, threshold=threshold)


def passages_without_text(db, turn_id: str) -> int:
    return gold.passages_without_text(db, turn_id)


def movable_nugget(db, source: str, nugget_id, turn_id: str) -> dict | None:
    return gold.movable_nugget(db, source, nugget_id, turn_id)


def passage_spans(db, source: str, turn_id: str, passage_id: str) -> list[tuple[int, int]]:
    return gold.passage_spans(db, source, turn_id, passage_id)


def suggest_turn_duplicates(db, source: str, turn_id: str, judge, *, threshold: float, by: str | None) -> int:
    """Suggest duplicate pairs among one turn's nuggets of ``source``; how many pairs were stored."""
    return duplicates.suggest_duplicates(db, source, turn_id, judge, threshold=threshold, by=by)


def decide_duplicate(db, a: int, b: int, decision: str | None, *, by: str) -> None:
    duplicates.decide_duplicate(db, a, b, decision, by=by)


def dedup_counts(db, source: str, turn_id: str) -> dict:
    return duplicates.dedup_counts(db, source, turn_id)


def duplicate_pairs(db, source: str, turn_id: str) -> list[dict]:
    return duplicates.duplicate_pairs(db, source, turn_id)


def turn_nugget_choices(db, turn_id: str, sources: Sequence[str] | None = None) -> list[dict]:
    return gold_responses.turn_nugget_choices(db, turn_id, sources)


def gold_response(db, source: str, turn_id: str) -> dict | None:
    return gold_responses.gold_response(db, source, turn_id)


def save_gold_response(db, source: str, turn_id: str, text: str, nugget_ids: Iterable[int]) -> None:
    gold_responses.save_gold_response(db, source, turn_id, text, nugget_ids)


def turn_aspects(db, turn_id: str) -> list[dict]:
    return aspects.turn_aspects(db, turn_id)


def save_aspect(db, turn_id: str, text: str, ptkb: Sequence[str] = (), *, aspect_id: int | None = None) -> int:
    return aspects.save_aspect(db, turn_id, text, ptkb, aspect_id=aspect_id)


def delete_aspect(db, aspect_id: int) -> None:
    aspects.delete_aspect(db, aspect_id)


def llm_aspect_sources(db, turn_id: str, run_name: str) -> list[str]:
    return aspects.llm_aspect_sources(db, turn_id, run_name)


def content_spans(db, turn_id: str, run_name: str) -> list[tuple[int, int]]:
    return aspects.content_spans(db, turn_id, run_name)


def turn_runs(db, turn_id: str) -> list[str]:
    return responses.turn_runs(db, turn_id)


def response_text(db, run_name: str, turn_id: str) -> str | None:
    return responses.response_text(db, run_name, turn_id)


def studies(db) -> list[str]:
    """The GFRC2 studies, oldest first."""
    return responses.studies(db)


def study(db, name: str) -> dict:
    return responses.study(db, name)


def response_runs(db) -> list[str]:
    return responses.response_runs(db)


def system_conversation(db, run_name: str, conversation_id: str) -> list[documents.TurnText]:
    return responses.system_conversation(db, run_name, conversation_id)


def response_marks(db, study_name: str, run_name: str, conversation_id: str | None = None) -> list[dict]:
    return responses.response_marks(db, study_name, run_name, conversation_id)


def delete_mark(db, mark_id: int) -> None:
    responses.delete_mark(db, mark_id)


def span_agreement(db, sources: Sequence[str] | None = None, *, unit: str = "char") -> list[dict]:
    """Pairwise agreement of the sources' nugget spans (assess.measures.span_agreement): one row per pair."""
    if unit not in span_measures.UNITS:
        raise AssessError(f"--unit is one of {', '.join(span_measures.UNITS)}, not {unit!r}")
    found, texts = gold.marked_spans(db, sources)
    missing = sorted(set(sources or ()) - {r["source"] for r in found})
    if missing:
        raise AssessError(f"--source {missing[0]!r} has no nugget spans (a nugget with a passage and offsets)")
    marks = [
        span_measures.Mark(r["source"], r["turn_id"], r["passage_id"], r["start_char"], r["end_char"]) for r in found
    ]
    return span_measures.span_agreement(marks, texts, unit)
