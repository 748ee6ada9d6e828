"""What the RAG assessor pages read and write: cited responses as a citation-support queue, graded NtR and
nugget importance by key, and the RAG scores of stored labels (/citations, /ntr, /nuggets, /scores).

A citation item is one (sentence, cited passage) pair of a run's response to a turn; sentence 0 stands for
the response as a whole (the iKAT 2025 topics cite passages for a whole response). Its queue id is the JSON
list ``[run, sentence, passage id]``, so run and passage names may hold any character.

Scores from stored labels (docs/responses.md, "Assessing"):

- NtR recall strict / lax and the TREC RAG All / Vital / Weighted scores strict / lax per run
  (:mod:`assess.measures.nugget_recall`): the NtR labels of one source read on the graded scale (yes =
  support, no = no support; a graded label wins over a yes/no one of the same item), on the gold nuggets of
  one nugget set; a run is scored on the turns where the source labelled at least one of its gold nuggets;
  unjudged gold nuggets there count as no support (the library's and the CLI's one default). Importance
  comes from the ``importance`` labels of one source; a gold nugget without one counts as okay (reported).
- Citation recall, precision and the supported share per run (:mod:`assess.measures.citations`, ALCE's
  definitions on labels). A label of a whole-response citation stands for every sentence of the response
  (the measure's reading of such citations); a response without stored sentences is one sentence.
"""

from __future__ import annotations

from dataclasses import dataclass

from assess.errors import AssessError, UnknownItem
from assess.measures.citations import response_citation_scores, run_citation_scores
from assess.measures.nugget_recall import (
    LAX,
    OKAY,
    SCORE_NAMES,
    STRICT,
    UNJUDGED_DEFAULT,
    VITAL,
    label_coverage,
    ntr_run,
    nugget_scores_run,
)
from assess.queueing import QueueOrder
from assess.tasks import CITATION_CONTRADICTS, LABEL_KINDS, JudgingMode, Passage, Task
from store import conversations, labels
from store import responses as cited
from store.audit import source_kinds
from store.nuggets import gold, ntr
from store.screens import labels_version

WHOLE = 0  # the sentence number of a whole response's citations
_CITATION_KEY = LABEL_KINDS[Task.CITATION].key

# ------------------------------------------------------------------------------------------- citation queue


def citation_key(run: str, sentence: int, passage_id: str) -> str:
    """The queue id of a citation item: the citation kind's item key without the turn ('<run> <sentence>
    <passage id>', :meth:`~assess.tasks.ItemKey.encode_id`), as a pre-judgment's ``item_id`` spells it."""
    return _CITATION_KEY.encode_id((run, sentence, passage_id))


def citation_parts(item: str) -> tuple[str, int, str]:
    """(run, sentence, passage id) of a queue id written by :func:`citation_key`."""
    return _CITATION_KEY.decode_id(item)


def citation_order(db) -> QueueOrder:
    """Every stored citation as queue items (turn, :func:`citation_key`), in conversation, turn, run,
    sentence and citing order. Every assessor sees every citation (no assignment scope)."""
    return QueueOrder.of(
        (i["turn_id"], citation_key(i["run"], i["sentence"], i["passage_id"])) for i in cited.citation_items(db)
    )


def citations_version(db) -> tuple:
    """Changes when responses or citations are imported (the citation order is cached until then)."""
    return tuple(cited.counts(db).values())


def citation_done(db, assessor: str) -> frozenset:
    """The citation items the assessor has labelled, as queue keys."""
    return frozenset(
        (turn, citation_key(run, sentence, passage))
        for turn, run, sentence, passage in labels.labelled(db, Task.CITATION, assessor)
    )


@dataclass(frozen=True)
class CitationScreen:
    turn_id: str
    run: str
    sentence: int  # 0: the response as a whole
    sentences: int  # how many sentences the response has
    sentence_text: str
    passage: Passage  # the passage judged now; its text None when only its id is known
    cites: tuple[str, ...]  # every passage the sentence (or the whole response) cites, in citing order
    own: int | None  # the assessor's label: a support value, or None (no label, or 'cannot judge')
    labelled: bool = False  # the assessor has a label (own None with labelled: 'cannot judge')


def citation_screen(db, assessor: str, turn_id: str, item: str) -> CitationScreen:
    """What /citations shows for one item: the sentence, every passage it cites, the passage judged now
    and the assessor's own label (never another source's: the page is blind)."""
    run, sentence, passage_id = citation_parts(item)
    response = cited.response(db, run, turn_id)
    if response is None:
        raise UnknownItem(f"run {run!r} has no response to turn {turn_id}")
    if sentence == WHOLE:
        text, cites = response["text"], response["citations"]
    else:
        found = next((s for s in response["sentences"] if s["sentence"] == sentence), None)
        if found is None:
            raise UnknownItem(f"run {run!r}'s response to turn {turn_id} has no sentence {sentence}")
        text, cites = found["text"], found["citations"]
    if passage_id not in cites:
        where = "the response" if sentence == WHOLE else f"sentence {sentence}"
        raise UnknownItem(f"{where} of run {run!r}'s response to turn {turn_id} does not cite {passage_id}")
    own = labels.get(db, Task.CITATION, assessor, (turn_id, run, sentence, passage_id))
    return CitationScreen(
        turn_id=turn_id,
        run=run,
        sentence=sentence,
        sentences=len(response["sentences"]),
        sentence_text=text,
        passage=conversations.passage(db, passage_id),
        cites=tuple(cites),
        own=None if own is None else own.value,
        labelled=own is not None,
    )


def save_citation(
    db, assessor: str, turn_id: str, item: str, value: int | None, *, active_ms: int | None = None, expected=None
) -> None:
    """One key press: the assessor's citation-support label of the item (None: cannot judge), in one transaction;
    ``expected``: what the page showed of the label (a stale view is refused: :class:`store.labels.StaleLabel`)."""
    run, sentence, passage_id = citation_parts(item)
    cited.save_citation_label(
        db,
        assessor,
        turn_id,
        run,
        sentence,
        passage_id,
        value,
        mode=JudgingMode.BLIND,
        via="key",
        active_ms=active_ms,
        expected=expected,
    )


def undo_citation(db, assessor: str) -> tuple[str, str] | None:
    """Revert the assessor's latest citation label change; the queue key (turn, item) it touched."""
    touched = labels.undo(db, Task.CITATION, assessor)
    if touched is None:
        return None
    turn_id, run, sentence, passage_id = touched
    return turn_id, citation_key(run, int(sentence), passage_id)


# ------------------------------------------------------------------------------------------- graded NtR


def _ntr_label_key(db, item: str) -> tuple[str, int, str]:
    """The label key (turn, nugget id, run) of an NtR queue item; an error when the run has no response."""
    shown = ntr.ntr_item(db, item)
    return shown["turn_id"], shown["nugget_id"], shown["run"]


def ntr_support_done(db, assessor: str) -> frozenset:
    """The NtR items the assessor has a graded (``ntr-support``) label of, as queue keys."""
    return frozenset(
        (turn, ntr.item_key(int(nid), run)) for turn, nid, run in labels.labelled(db, Task.NTR_SUPPORT, assessor)
    )


def ntr_support_of(db, assessor: str, nugget_id: int, run: str) -> int | None:
    """The assessor's graded NtR label of a nugget and a run's response (2 support, 1 partial, 0 none), or None
    (called as :func:`store.nuggets.ntr.label_of` is)."""
    found = labels.get(db, Task.NTR_SUPPORT, assessor, _ntr_label_key(db, ntr.item_key(nugget_id, run)))
    return None if found is None else found.value


def save_ntr_support(
    db, assessor: str, item: str, value: int, *, mode: str, active_ms: int | None = None, expected=None
) -> None:
    """One key press: the assessor's graded NtR label of the item (one transaction); ``expected`` as for
    :func:`save_citation`."""
    key = _ntr_label_key(db, item)
    labels.save(db, Task.NTR_SUPPORT, assessor, key, value, mode=mode, via="ui", active_ms=active_ms, expected=expected)


def undo_ntr_support(db, assessor: str) -> tuple[str, str] | None:
    """Revert the assessor's latest graded NtR change; the queue key (turn, item) it touched."""
    touched = labels.undo(db, Task.NTR_SUPPORT, assessor)
    if touched is None:
        return None
    turn_id, nid, run = touched
    return turn_id, ntr.item_key(int(nid), run)


def ntr_item(db, item: str) -> dict:
    """What an NtR queue item shows: the response, the gold nugget, its key and run (:func:`store.nuggets.ntr.ntr_item`)."""
    return ntr.ntr_item(db, item)


def ntr_label_of(db, assessor: str, nugget_id: int, run: str) -> int | None:
    """The assessor's yes/no NtR label of a nugget and a run's response, or None."""
    return ntr.label_of(db, assessor, nugget_id, run)


def save_ntr_label(
    db, assessor: str, item: str, value: int, *, mode: str, active_ms: int | None = None, expected=None
) -> None:
    """One key press: the assessor's yes/no NtR label of the queue item (:func:`store.nuggets.ntr.save_label`)."""
    nugget_id, run = ntr.item_parts(item)
    ntr.save_label(db, assessor, nugget_id, run, value, mode=mode, via="ui", active_ms=active_ms, expected=expected)


def undo_ntr_label(db, assessor: str) -> tuple[str, str] | None:
    """Revert the assessor's latest yes/no NtR change; the queue key (turn, item) it touched."""
    return ntr.undo(db, assessor)


# ------------------------------------------------------------------------------------------- importance


def importance_of(db, source: str, turn_id: str) -> dict[int, int]:
    """The source's importance labels of one turn's nuggets: {nugget id: 1 vital / 0 okay}."""
    return {int(nid): v for (_, nid), v in labels.values(db, Task.IMPORTANCE, source, turn_id=turn_id).items()}


def save_importance(db, source: str, nugget_id: int, value: int) -> None:
    """One key press: the source's importance label of a nugget (one transaction)."""
    found = gold.nugget(db, nugget_id)
    labels.save(db, Task.IMPORTANCE, source, (found["turn_id"], found["id"]), value, mode=JudgingMode.BLIND, via="key")


def next_without_importance(nugget_ids: list[int], marked: dict[int, int], current: int) -> int:
    """The next nugget after ``current`` (wrapping) without an importance label; ``current`` when all have one."""
    if current not in nugget_ids:
        return current
    start = nugget_ids.index(current)
    for step in range(1, len(nugget_ids) + 1):
        candidate = nugget_ids[(start + step) % len(nugget_ids)]
        if candidate not in marked:
            return candidate
    return current


# ------------------------------------------------------------------------------------------- scores


def score_sources(db) -> dict[str, list[str]]:
    """The sources /scores offers: NtR labels (yes/no or graded), gold nugget sets, importance, citations."""
    return {
        "ntr": ntr_sources(db),
        "nuggets": gold.nugget_sources(db),
        "importance": labels.sources(db, Task.IMPORTANCE),
        "citation": labels.sources(db, Task.CITATION),
    }


GOLD_NUGGETS = "gold"
"""The nugget set the scores open on when the store holds it (the demo's, and the name organizers give theirs)."""
_PROVIDED = ("import", "organizers", "adjudication")  # nugget sets the organizers provide, not a person's own


def default_score_sources(db, sources: dict[str, list[str]]) -> dict[str, str | None]:
    """The choice each picker of the RAG scores opens on (``sources``: :func:`score_sources`): the gold nugget
    set (``gold``, else the organizers' set with the most nuggets, else the largest set), and the NtR and
    citation sources with the most labels (ties by name). Never the alphabetically first, which on a live
    campaign is a new assessor's few labels on their own nuggets: they score no run."""

    kinds = source_kinds(db)
    sizes = gold.nugget_counts(db)
    nuggets = sources["nuggets"]
    if GOLD_NUGGETS in nuggets:
        chosen = GOLD_NUGGETS
    else:
        chosen = min(
            nuggets, key=lambda n: (kinds.get(n, "import") not in _PROVIDED, -sizes.get(n, 0), n), default=None
        )
    ntr_counts = {
        name: a + b
        for (name, a), b in zip(
            labels.counts(db, Task.NTR, sources["ntr"]).items(),
            labels.counts(db, Task.NTR_SUPPORT, sources["ntr"]).values(),
        )
    }
    citations = labels.counts(db, Task.CITATION, sources["citation"])

    def most(counts: dict[str, int]) -> str | None:
        return min(counts, key=lambda n: (-counts[n], n), default=None)

    return {"nuggets": chosen, "ntr": most(ntr_counts), "citation": most(citations)}


def scores_version(db, *sources: str | None) -> tuple:
    """Changes when the labels of the given sources (NtR yes/no and graded, importance, citations) or the stored
    responses change: what a cached score table is keyed by."""

    tasks = (Task.NTR, Task.NTR_SUPPORT, Task.IMPORTANCE, Task.CITATION)
    return (citations_version(db), *(labels_version(db, t, s) for s in sources if s is not None for t in tasks))


def default_importance_source(db, nugget_source: str) -> str | None:
    """The importance labels the nugget scores read unless told otherwise: the nugget set's own source when it
    has importance labels (e.g. from ``import nuggetizer-nuggets``), else None (every gold nugget okay). One
    rule for the RAG tab of /scores and ``score nuggets --db``."""
    return nugget_source if nugget_source in labels.sources(db, Task.IMPORTANCE) else None


NTR_SCORES = ("ntr_recall_strict", "ntr_recall_lax")
NUGGET_SCORES = (*NTR_SCORES, *SCORE_NAMES)


def nugget_scores(
    db,
    ntr_source: str,
    nugget_source: str,
    importance_source: str | None,
    *,
    unjudged: str = UNJUDGED_DEFAULT,
    dedup: bool = False,
) -> dict:
    """NtR recall and All / Vital / Weighted (strict, lax) per run and per turn from stored labels.

    ``dedup``: score against the de-duplicated subset of the nugget set (its nuggets with ``in_dedup = 1``,
    the set ``export nuggets --dedup`` writes); labels of the set's other nuggets are then not counted.

    Returns ``{"runs": [{run, turns, <score>: value}], "per_turn": [{run, turn, <score>: value}],
    "notes": {labels, other_set_labels, empty_response_labels, unjudged, without_importance}}``.
    """
    members = {t: gold.turn_nuggets(db, nugget_source, t) for t in gold.nugget_turns(db, nugget_source)}
    if not members:
        raise AssessError(f"no gold nuggets of source {nugget_source!r}")
    # the set the labels must belong to, and the (possibly de-duplicated) set scored
    turn_of = {n["id"]: t for t, found in members.items() for n in found}
    nugget_ids = {t: {n["id"] for n in found if not dedup or n["in_dedup"] == 1} for t, found in members.items()}
    nugget_ids = {t: ids for t, ids in nugget_ids.items() if ids}
    if dedup and not nugget_ids:
        raise AssessError(no_dedup_message(nugget_source))
    marked = {}
    if importance_source is not None:
        marked = {int(nid): v for (_, nid), v in labels.values(db, Task.IMPORTANCE, importance_source).items()}
    importance = {t: {n: VITAL if marked.get(n) == 1 else OKAY for n in ids} for t, ids in nugget_ids.items()}
    # one pass over every label (300,000 in the benchmark): plain lookups only
    empty = {(r["run"], r["turn_id"]) for r in cited.responses(db) if not r["text"].strip()}
    kept = other = blank = 0
    support: dict[str, dict[str, dict[int, int]]] = {}
    for (turn, nid, run), value in labels.ntr_support(db, ntr_source).items():
        if turn_of.get(nid) != turn:
            other += 1
        elif (run, turn) in empty:
            blank += 1
        else:
            kept += 1
            by_turn = support.get(run)
            if by_turn is None:
                by_turn = support[run] = {}
            found = by_turn.get(turn)
            if found is None:
                found = by_turn[turn] = {}
            found[nid] = value
    notes = {"labels": kept, "other_set_labels": other, "empty_response_labels": blank}
    notes["unjudged"] = sum(label_coverage(turns, nugget_ids).unjudged for turns in support.values())
    notes["without_importance"] = sum(1 for ids in nugget_ids.values() for n in ids if n not in marked)
    runs, per_turn = [], []
    for run in sorted(support):
        turns = support[run]
        graded = nugget_scores_run(turns, importance, unjudged=unjudged)
        recall = {
            name: ntr_run(turns, nugget_ids, unjudged=unjudged, threshold=threshold)
            for name, threshold in (("ntr_recall_strict", STRICT), ("ntr_recall_lax", LAX))
        }
        runs.append({"run": run, "turns": graded["n"], **{m: recall[m]["mean"] for m in NTR_SCORES}, **graded["mean"]})
        for turn, scores in graded["per_turn"].items():
            per_turn.append(
                {"run": run, "turn": turn, **{m: recall[m]["per_turn"].get(turn) for m in NTR_SCORES}, **scores}
            )
    return {"runs": runs, "per_turn": per_turn, "notes": notes}


def no_dedup_message(nugget_source: str) -> str:
    """Why a nugget set cannot be scored de-duplicated (it has no de-duplicated subset yet)."""
    return (
        f"nugget set {nugget_source} has no de-duplicated set: import one with "
        f"`import nuggets FILE --source {nugget_source} --dedup` or decide duplicates on the Duplicates page"
    )


def ntr_sources(db) -> list[str]:
    """The sources with NtR labels, yes/no or graded, by name."""
    return sorted({*labels.sources(db, Task.NTR), *labels.sources(db, Task.NTR_SUPPORT)})


def ntr_nugget_sets(db, ntr_source: str) -> list[str]:
    """The nugget sets the NtR labels (yes/no and graded) of a source refer to, by name."""
    labelled = {nid for _, nid, _ in labels.ntr_support(db, ntr_source)}
    found = []
    for source in gold.nugget_sources(db):
        ids = {n["id"] for t in gold.nugget_turns(db, source) for n in gold.turn_nuggets(db, source, t)}
        if ids & labelled:
            found.append(source)
    return found


def personal_turns(db, ptkb_source: str) -> set[str]:
    """The turns with at least one PTKB statement the source labelled relevant (CONE-RAG's personal turns)."""
    have = labels.sources(db, Task.PTKB)
    if ptkb_source not in have:
        raise UnknownItem(f"no PTKB labels of source {ptkb_source!r}; PTKB label sources: {', '.join(have) or 'none'}")
    return {turn for (turn, _), value in labels.values(db, Task.PTKB, ptkb_source).items() if value and value > 0}


CITATION_SCORES = ("recall", "precision", "supported", "recall_lax", "precision_lax", "supported_lax")
POOLED_SCORES = ("supported_micro", "supported_lax_micro")
"""A run row's pooled (micro) supported shares, besides the per-response means of :data:`CITATION_SCORES`."""


def citation_scores(db, source: str) -> list[dict]:
    """Citation recall, precision and supported share (strict and lax) per run of the source's citation
    labels: ``[{run, responses, unlabelled, uncited, uncited_left_out, unlabelled_citations, coverage,
    cannot_judge, sentences, citations, <score>: value}]`` over the runs it labelled (the fields: :func:`citation_report`)."""
    return [row for row, _, _ in _citation_runs(db, source, None)]


def citation_report(db, source: str, runs: list[str] | None = None) -> dict:
    """What ``score citations`` prints: per run the rows of :func:`citation_scores` (the same numbers), and per
    response its own scores. ``runs``: these runs (each must have responses; a run the source has not
    labelled is scored on no labels: every response unlabelled); None: the runs the source labelled.

    A run's row: ``responses`` scored; ``unlabelled`` responses left out because a citation has no label;
    ``uncited`` responses citing nothing, of which ``uncited_left_out`` were left out because the run is
    partly labelled (they score 0 once every citation of the run is labelled,
    :mod:`assess.measures.citations`); ``unlabelled_citations`` the citations (items of /citations) the
    source has not labelled and ``coverage`` the labelled share of the run's citations (None: no citations),
    a 'cannot judge' label counting as labelled; ``cannot_judge`` the citations of the scored responses
    labelled 'cannot judge', left out of every score (never read as 0 or unsupported).

    Returns ``{"runs": [row], "per_response": [{run, turn, labelled, unlabelled_citations, cannot_judge,
    sentences, citations, <score>: value}]}``; a response's scores are None while one of its citations is unlabelled."""
    have = labels.sources(db, Task.CITATION)
    if source not in have:
        raise UnknownItem(
            f"no citation labels of source {source!r}; sources with citation labels: {', '.join(have) or 'none'}"
        )
    if runs:
        stored = sorted({r["run"] for r in cited.responses(db)})
        unknown = [r for r in runs if r not in stored]
        if unknown:
            raise UnknownItem(f"no responses of run {unknown[0]!r}; runs with responses: {', '.join(stored) or 'none'}")
    out_runs, per_response = [], []
    for row, responses, missing in _citation_runs(db, source, runs):
        out_runs.append(row)
        contradicting = "contradicts" in row  # every row has it when one label of the source contradicts
        for turn, ((sentences, own), given) in responses.items():
            one = response_citation_scores(sentences, given, response_citations=own)
            count = _citation_count(sentences, own)
            if row["uncited_left_out"] and not count:  # out of the run's scores, so out of its leaderboard rows
                one = response_citation_scores([], {})
            per_response.append(
                {
                    "run": row["run"],
                    "turn": turn,
                    "labelled": len(given),
                    "unlabelled_citations": missing.get(turn, 0),
                    "cannot_judge": one.cannot_judge,
                    "sentences": len(sentences),
                    "citations": count,
                    **{m: getattr(one, m) for m in CITATION_SCORES},
                    **(_contradiction(one) if contradicting else {}),
                }
            )
    return {"runs": out_runs, "per_response": per_response}


CONTRADICTION_FIELDS = ("contradicts", "contradiction_rate")
"""The fields a citation row gets when its source has a 'contradicts' label (:func:`citation_report`)."""


def _contradiction(scores) -> dict:
    return {"contradicts": scores.contradicts, "contradiction_rate": scores.contradiction_rate}


def _citation_count(sentences: list[list[str]], own: list[str]) -> int:
    """The citations of a response as the measure counts them (precision's denominator): per sentence its
    distinct passages, plus each passage the whole response cites once."""
    whole = set(own)
    per_sentence = sum(sum(1 for p in dict.fromkeys(cites) if p not in whole) for cites in sentences)
    return per_sentence + (len(whole) if sentences else 0)


def _citation_runs(db, source: str, runs: list[str] | None):
    """Per run (the given ones, else those the source labelled, by name): its row of citation scores, its
    responses as the measure's input, ``{turn: ((per sentence the cited passages, own citations), labels)}``,
    and per turn the number of its citations (items of /citations) without a label of the source."""
    given = labels.values(db, Task.CITATION, source)
    contradicting = CITATION_CONTRADICTS in given.values()  # then every row counts the contradicting citations
    done = set(given)
    by_run: dict[str, dict[str, dict[tuple[int, str], int | None]]] = {}
    for (turn, run, sentence, passage), value in given.items():
        by_run.setdefault(run, {}).setdefault(turn, {})[(int(sentence), passage)] = value
    for run in sorted(by_run) if runs is None else runs:
        responses = {}
        for response in cited.responses(db, run=run):
            turn = response["turn_id"]
            responses[turn] = _units(response, by_run.get(run, {}).get(turn, {}))
        scores = run_citation_scores(
            {t: units for t, (units, _) in responses.items()},
            {t: v for t, (_, v) in responses.items() if v},
        )
        missing: dict[str, int] = {}
        items = 0
        for item in cited.citation_items(db, run=run):
            items += 1
            if (item["turn_id"], item["run"], item["sentence"], item["passage_id"]) not in done:
                missing[item["turn_id"]] = missing.get(item["turn_id"], 0) + 1
        unlabelled_citations = sum(missing.values())
        row = {
            "run": run,
            "responses": scores.responses,
            "unlabelled": scores.unlabelled,
            "uncited": scores.uncited,
            "uncited_left_out": scores.uncited_left_out,
            "unlabelled_citations": unlabelled_citations,
            "coverage": (items - unlabelled_citations) / items if items else None,
            "cannot_judge": scores.cannot_judge,
            "sentences": scores.sentences,
            "citations": scores.citations,
            **{m: getattr(scores, m) for m in (*CITATION_SCORES, *POOLED_SCORES)},
            **(_contradiction(scores) if contradicting else {}),
        }
        yield row, responses, missing


def _units(
    response: dict, given: dict[tuple[int, str], int | None]
) -> tuple[tuple[list[list[str]], list[str]], dict[tuple[int, str], int | None]]:
    """A stored response as the measure's input: (per sentence the passages it cites, the whole response's
    citations) and the labels by (sentence index, passage), a whole-response label standing for every
    sentence. A response without stored sentences is one sentence."""
    own = list(response["citations"])
    parts = response["sentences"] or [{"sentence": WHOLE, "citations": []}]
    out = {}
    for index, s in enumerate(parts):
        for p in dict.fromkeys([*s["citations"], *own]):
            key = (s["sentence"], p)
            if key not in given and p in own:
                key = (WHOLE, p)
            if key in given:  # a value, or None: 'cannot judge' (a label too)
                out[(index, p)] = given[key]
    return ([list(s["citations"]) for s in parts], own), out


def sentence_citation_labels(db, source: str) -> dict[tuple[str, str], list[list[tuple[str, int | None]]]]:
    """Per stored response (run, turn): for each sentence, in order, its distinct citations (the whole
    response's included) with the label ``source`` gave each, None where the label is 'cannot judge' or
    missing: what sentence support per ARGUE reads (:func:`assess.measures.banks.report_support`)."""
    given: dict[tuple[str, str], dict[tuple[int, str], int | None]] = {}
    for (turn, run, sentence, passage), value in labels.values(db, Task.CITATION, source).items():
        given.setdefault((run, turn), {})[(int(sentence), passage)] = value
    out = {}
    for response in cited.responses(db):
        key = (response["run"], response["turn_id"])
        (sentences, own), found = _units(response, given.get(key, {}))
        out[key] = [
            [(p, found.get((i, p))) for p in dict.fromkeys([*cites, *own])] for i, cites in enumerate(sentences)
        ]
    return out
