"""Nugget banks and rubrics: files in and out of the store, post-edits, matches and the scores on them.

The page (/nuggets, "Nugget banks" tab) and the command line (``nuggets bank ...``, ``rubrics ...``) call
these functions only. Formulas: assess/measures/banks.py; layouts: assess/formats/banks.py.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

from assess.errors import AssessError, FormatError
from assess.formats.banks import (
    IMPORTANCE_WEIGHTS,
    BankMatch,
    read_bank_matches,
    read_nugget_banks,
    read_rubric_judgments,
    read_rubrics,
    write_nugget_banks,
    write_rubric,
    write_rubric_judgments,
)
from assess.measures.banks import (
    NuggetState,
    RubricScore,
    TopicScores,
    citation_relevance,
    coverage,
    f1,
    importance_weight,
    mean_scores,
    nugget_met,
    report_support,
    rubric_topic_score,
    run_averages,
    sentence_support,
)
from assess.services.rag import sentence_citation_labels
from store import bank_imports
from store import banks as store_banks
from store.compare import qrels_of
from store.db import Store
from store.labels import StaleLabel as StaleLabel  # the refusal of save_matches, which the page catches


def import_bank_file(db: Store, path: str | Path, *, by: str | None, replace: bool = False) -> dict:
    """Read a RAGTIME nugget-bank file (or folder) and store its banks; nothing is written on a refusal."""
    banks = read_nugget_banks(path)
    return store_banks.import_banks(db, banks, str(path), by=by, replace=replace)


def export_banks(db: Store, topics: list[str] | None = None) -> str:
    """The stored banks (post-edits included) as RAGTIME JSONL; refused when there are none."""
    found = store_banks.banks(db, topics)
    if not found:
        raise AssessError("no nugget banks in the store" + (f" for {', '.join(topics)}" if topics else ""))
    return write_nugget_banks(found)


def import_match_file(db: Store, path: str | Path, source: str, *, by: str | None) -> dict:
    return bank_imports.import_matches(db, read_bank_matches(path), str(path), source, by=by)


def save_match(
    db: Store, source: str, topic: str, run: str, nugget: int, answer: int, contains: bool, sentences: list[int]
) -> bool:
    """One match decision by key or click (the page): stored with the assessor as its source."""
    return store_banks.save_match(
        db, source, BankMatch(topic, run, nugget, answer, contains, tuple(sorted(set(sentences))), 0)
    )


RUN_SUPPORT_MEASURES = (
    "nugget_coverage_micro",
    "sentence_support_macro",
    "sentence_support_micro",
    "citation_support_macro",
    "citation_support_micro",
    "f1_macro",
    "f1_micro",
)
"""A run's averages besides ``coverage`` when a citation source is given (Auto-ARGUE's names)."""
TOPIC_SUPPORT_MEASURES = ("sentence_support", "citation_support", "f1")


def score_columns(result: dict, *, per_topic: bool = False) -> list[str]:
    """The measures a scores table shows, run rows or (``per_topic``) topic rows."""
    if result["citation_source"] is None:
        return ["coverage"]
    columns = ["coverage", *(TOPIC_SUPPORT_MEASURES if per_topic else RUN_SUPPORT_MEASURES)]
    if result.get("relevance_source") is not None:
        columns += ["citation_relevance"] if per_topic else ["citation_relevance_macro", "citation_relevance_micro"]
    return columns


def bank_scores(
    db: Store,
    source: str,
    *,
    weighted: bool = False,
    citation_source: str | None = None,
    relevance_source: str | None = None,
) -> dict:
    """Per run: nugget coverage (AND / OR; importance-weighted when ``weighted``) over the topics the source
    judged its responses on; with ``citation_source``, sentence support, citation support and F1 as ARGUE
    defines them (every citation must support a sentence; 'cannot judge' and unlabelled citations left out).

    A run's row has ``coverage`` (the mean of its topics, as before) and Auto-ARGUE's ``*_macro`` (mean of the
    topic values) and ``*_micro`` (pooled counts) averages (:func:`assess.measures.banks.run_averages`). A
    response counts as judged when the source has at least one match label on it; an answer without a label
    counts as not contained. ``relevance_source`` (passage labels, with ``citation_source``): Auto-ARGUE's
    citation relevance, the share of cited passages graded relevant to the topic (grade >= 2)."""
    store_banks.require_source(db, "bank_matches", source)
    if citation_source is not None:
        store_banks.require_source(db, "citation_labels", citation_source)
    if relevance_source is not None:
        if citation_source is None:
            raise AssessError("--relevance-source needs --citation-source (the citations whose relevance it grades)")
        store_banks.require_source(db, "passage_labels", relevance_source)
    grades = qrels_of(db, relevance_source) if relevance_source is not None else {}
    labels: dict[tuple[str, str], dict[int, int]] = defaultdict(lambda: defaultdict(int))
    judged: set[tuple[str, str]] = set()
    for m in store_banks.matches(db, source):
        judged.add((m["run"], m["topic_id"]))
        if m["contains"]:
            labels[(m["run"], m["topic_id"])][m["nugget"]] += 1
    support = sentence_citation_labels(db, citation_source) if citation_source else {}
    per_topic: dict[str, dict[str, dict]] = defaultdict(dict)
    parts: dict[str, list[TopicScores]] = defaultdict(list)
    for bank in store_banks.banks(db):
        for run, topic in sorted(k for k in judged if k[1] == bank.topic_id):
            states = [
                NuggetState(
                    n.aggregator,
                    len(n.answers),
                    labels[(run, topic)].get(i, 0),
                    importance_weight(n.importance) if weighted else 1.0,
                )
                for i, n in enumerate(bank.nuggets, start=1)
            ]
            entry: dict = {"coverage": coverage(states)}
            report = relevance = None
            if citation_source is not None:
                cited = support.get((run, topic), [])
                report = report_support([[label for _, label in s] for s in cited])
                entry["sentence_support"] = sentence_support(report)
                entry["citation_support"] = report.supporting / report.citations if report.citations else None
                entry["f1"] = f1(entry["coverage"], entry["sentence_support"])
                entry.update(
                    sentences=report.sentences,
                    sentences_with_citations_or_requiring_citations=report.judged,
                    correctly_cited_sentences=report.supported,
                    sentences_left_out=report.left_out,
                    citations=report.citations,
                    supporting_citations=report.supporting,
                )
            if relevance_source is not None:
                relevance = citation_relevance([[p for p, _ in s] for s in cited], grades.get(topic, {}))
                entry["citation_relevance"] = relevance[0] / relevance[1] if relevance[1] else None
                entry["relevant_citations"], entry["graded_citations"] = relevance
            per_topic[run][topic] = entry
            weight = sum(s.weight for s in states if s.weight > 0)
            met = sum(s.weight for s in states if s.weight > 0 and nugget_met(s.aggregator, s.answers, s.matched))
            parts[run].append(TopicScores(met, weight, report, relevance))
    runs = {}
    for run, topics in sorted(per_topic.items()):
        averages = run_averages(parts[run], support=citation_source is not None)
        coverage_macro = averages.pop("nugget_coverage_macro")  # the run's `coverage`, as it always was
        runs[run] = {"topics": len(topics), "coverage": coverage_macro, **averages}
    return {
        "source": source,
        "weighted": weighted,
        "citation_source": citation_source,
        "relevance_source": relevance_source,
        "runs": runs,
        "per_topic": {run: dict(sorted(t.items())) for run, t in sorted(per_topic.items())},
    }


# ------------------------------------------------------------------------------------------- rubrics


def import_rubric_file(db: Store, path: str | Path, *, by: str | None, replace: bool = False) -> dict:
    return store_banks.import_rubrics(db, read_rubrics(path), str(path), by=by, replace=replace)


_SAFE_NAME = re.compile(r"^[A-Za-z0-9._#-]+$")


def export_rubrics(db: Store, out: str | Path) -> dict:
    """Write the stored rubrics: one JSON file per topic (``<topic>.json``) into the folder ``out``, or JSONL
    when ``out`` ends in ``.jsonl``. The files hold the objects as imported."""
    documents = store_banks.rubric_documents(db)
    if not documents:
        raise AssessError("no rubrics in the store")
    out = Path(out)
    if out.suffix == ".jsonl":
        out.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for _, d in documents), encoding="utf-8")
        return {"rubrics": len(documents), "file": str(out)}
    unsafe = [t for t, _ in documents if not _SAFE_NAME.match(t) or t in (".", "..")]
    if unsafe:
        raise FormatError(str(out), None, "topic ids usable as file names (or a .jsonl output)", repr(unsafe[0]))
    out.mkdir(parents=True, exist_ok=True)
    for topic, document in documents:
        (out / f"{topic}.json").write_text(write_rubric(document), encoding="utf-8")
    return {"rubrics": len(documents), "folder": str(out)}


def import_rubric_judgment_file(db: Store, path: str | Path, source: str, *, by: str | None) -> dict:
    return bank_imports.import_rubric_judgments(db, read_rubric_judgments(path), str(path), source, by=by)


def export_rubric_judgments(db: Store, source: str) -> str:
    store_banks.require_source(db, "rubric_labels", source)
    found = store_banks.rubric_judgments(db, source)
    return write_rubric_judgments(
        [(r["topic_id"], r["run"], r["question_id"], r["answer_id"], r["judgment"]) for r in found]
    )


def rubric_scores(db: Store, source: str) -> dict:
    """DRAGUN's supportive and contradictory scores per run (the mean over the topics it was judged on) and
    per topic, from the source's rubric labels (judgment / 2: supports 1, partial 0.5, none 0, contradicts -1)."""
    store_banks.require_source(db, "rubric_labels", source)
    weights: dict[str, dict[str, float]] = defaultdict(dict)
    for q in store_banks.rubric_questions(db):
        weights[q["topic_id"]][q["question_id"]] = IMPORTANCE_WEIGHTS[q["importance"]]
    judged: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in store_banks.rubric_judgments(db, source):
        judged[(r["run"], r["topic_id"])][r["question_id"]].append(r["judgment"] / 2)
    per_topic: dict[str, dict[str, RubricScore]] = defaultdict(dict)
    for (run, topic), questions in sorted(judged.items()):
        score = rubric_topic_score(weights[topic], questions)
        if score is not None:
            per_topic[run][topic] = score
    runs = {}
    for run, topics in sorted(per_topic.items()):
        mean = mean_scores(list(topics.values()))
        runs[run] = {"supportive": mean.supportive, "contradictory": mean.contradictory, "topics": len(topics)}
    return {
        "source": source,
        "runs": runs,
        "per_topic": {
            run: {t: {"supportive": s.supportive, "contradictory": s.contradictory} for t, s in sorted(topics.items())}
            for run, topics in sorted(per_topic.items())
        },
    }


# ------------------------------------------------------------------------------------------- the page


def _importance(text: str) -> int | float | str | None:
    """An importance typed on the page: empty is none, a number is a number, anything else a text."""
    text = text.strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def bank_rows(db: Store, topic: str) -> list[dict]:
    """One topic's questions and answers for display: numbers, texts, references, origin and who."""
    out = []
    for r in store_banks.bank_table(db, topic):
        out.append(
            {
                "nugget": r["nugget"],
                "question": r["question"],
                "aggregator": r["aggregator"],
                "importance": "" if r["importance"] is None else str(json.loads(r["importance"])),
                "answer": r["answer"],
                "answer text": r["answer_text"],
                "references": ", ".join(str(x) for x in json.loads(r["refs"])) if r["refs"] else "",
                "origin": r["answer_origin"] or r["question_origin"],
                "by": r["answer_by"] or r["question_by"] or "",
            }
        )
    return out


def edit_question(
    db: Store, by: str, topic: str, nugget: int | None, question: str, aggregator: str, importance: str
) -> str:
    """Write a question as a post-edit (a new one when ``nugget`` is None); the message to show."""
    n = store_banks.save_question(db, topic, nugget, question, aggregator, _importance(importance), by=by)
    return f"Question {n} of {topic} saved (post-edit by {by})."


def edit_answer(db: Store, by: str, topic: str, nugget: int, answer: int | None, text: str, references: str) -> str:
    """Write an answer with its supporting documents (comma- or space-separated ids) as a post-edit."""
    refs = [r for r in re.split(r"[,\s]+", references) if r]
    k = store_banks.save_answer(db, topic, nugget, answer, text, refs, by=by)
    return f"Answer {k} of question {nugget} saved (post-edit by {by})."


def match_screen(db: Store, source: str, topic: str, run: str) -> dict:
    """What the matching form shows: the response's numbered sentences (stored ones, else the sentence rule's),
    the bank's answers and the source's current labels on them."""
    sentences = store_banks.response_sentences(db, run, topic)
    own = {
        (m["nugget"], m["answer"]): m
        for m in store_banks.matches(db, source)
        if m["topic_id"] == topic and m["run"] == run
    }
    bank = store_banks.bank_of(db, topic)
    answers = []
    for n, nugget in enumerate(bank.nuggets if bank else (), start=1):
        for k, a in enumerate(nugget.answers, start=1):
            label = own.get((n, k))
            answers.append(
                {"nugget": n, "answer": k, "question": nugget.question, "aggregator": nugget.aggregator, "text": a.answer,
                 "contains": bool(label and label["contains"]), "sentences": label["sentences"] if label else [],
                 "labelled": label is not None}
            )  # fmt: skip
    return {"sentences": sentences, "answers": answers}


def shown_matches(screen: dict) -> dict[tuple[int, int], dict | None]:
    """What a match screen shows of the source's own matches, per (nugget, answer): passed back with the form's
    decisions, so that a match saved meanwhile from another tab or device is not replaced silently."""
    return {
        (a["nugget"], a["answer"]): store_banks.shown_match(a["contains"], a["sentences"]) if a["labelled"] else None
        for a in screen["answers"]
    }


def shown_decisions(decisions: dict[tuple[int, int], tuple[bool, list[int]]]) -> dict[tuple[int, int], dict]:
    """The form's decisions as :func:`shown_matches` spells them (what the form shows once they are saved)."""
    return {item: store_banks.shown_match(contains, cited) for item, (contains, cited) in decisions.items()}


def save_matches(
    db: Store,
    source: str,
    topic: str,
    run: str,
    decisions: dict[tuple[int, int], tuple[bool, list[int]]],
    shown: dict[tuple[int, int], dict | None],
) -> str:
    """Store the form's decisions as labels of the assessor's source, in one transaction with their history;
    ``shown`` (:func:`shown_matches`): what the form showed. A stored match that differs from the one shown is
    not replaced: :class:`store.labels.StaleLabel`, nothing saved. The message."""
    decided = [
        (BankMatch(topic, run, n, k, contains, tuple(sorted(set(sentences))), 0), shown.get((n, k)))
        for (n, k), (contains, sentences) in sorted(decisions.items())
    ]
    changed = store_banks.save_matches(db, source, decided)
    return f"{len(decisions)} answers judged for {run} on {topic} ({changed} changed)."


def bank_topics(db: Store) -> list[str]:
    return store_banks.topics(db)


def runs_for(db: Store, topic: str) -> list[str]:
    return [r["run"] for r in store_banks.responses_of(db, [topic])]


def default_sources(db: Store, sources: dict[str, list[str]]) -> dict[str, str | None]:
    """The bank matches and rubric judgments the scores tab opens on: the sources with the most of them (ties
    by name), not the first name in order."""

    def most(names: list[str], table: str) -> str | None:
        counts = store_banks.source_counts(db, table)
        return min(names, key=lambda n: (-counts.get(n, 0), n), default=None)

    return {"matches": most(sources["matches"], "bank_matches"), "rubrics": most(sources["rubrics"], "rubric_labels")}


def score_sources(db: Store) -> dict[str, list[str]]:
    """The label sources the scores tab offers: bank matches, citation support, rubric judgments."""
    return {
        "matches": store_banks.match_sources(db),
        "citations": store_banks.label_sources(db, "citation_labels"),
        "rubrics": store_banks.rubric_sources(db),
    }
