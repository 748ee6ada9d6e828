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
    coverage,
    f1,
    importance_weight,
    mean_scores,
    rubric_topic_score,
    sentence_support,
)
from store import banks as store_banks
from store.db import Store


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
    return store_banks.import_matches(db, read_bank_matches(path), str(path), source, by=by)


def save_match(
    db: Store, source: str, topic: str, run: str, nugget: int, answer: int, contains: bool, sentences: list[int]
) -> bool:
    """One match decision by key or click (the page): stored with the assessor as its source."""
    return store_banks.save_match(
        db, source, BankMatch(topic, run, nugget, answer, contains, tuple(sorted(set(sentences))), 0)
    )


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def bank_scores(db: Store, source: str, *, weighted: bool = False, citation_source: str | None = None) -> dict:
    """Per run: nugget coverage (AND / OR; importance-weighted when ``weighted``) averaged over the topics the
    source judged its responses on; with ``citation_source``, RAGTIME's sentence support and F1 as well.

    A response counts as judged when the source has at least one match label on it; an answer without a
    label counts as not contained."""
    store_banks.require_source(db, "bank_matches", source)
    if citation_source is not None:
        store_banks.require_source(db, "citation_labels", citation_source)
    labels: dict[tuple[str, str], dict[int, int]] = defaultdict(lambda: defaultdict(int))
    judged: set[tuple[str, str]] = set()
    for m in store_banks.matches(db, source):
        judged.add((m["run"], m["topic_id"]))
        if m["contains"]:
            labels[(m["run"], m["topic_id"])][m["nugget"]] += 1
    support = store_banks.sentence_support(db, citation_source) if citation_source else {}
    per_topic: dict[str, dict[str, dict]] = defaultdict(dict)
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
            entry = {"coverage": coverage(states)}
            if citation_source is not None:
                entry["sentence_support"] = sentence_support(support.get((run, topic), []))
                entry["f1"] = f1(entry["coverage"] or 0.0, entry["sentence_support"])
            per_topic[run][topic] = entry
    runs = {}
    for run, topics in sorted(per_topic.items()):
        summary = {"topics": len(topics)}
        for measure in ("coverage", "sentence_support", "f1"):
            values = [t[measure] for t in topics.values() if t.get(measure) is not None]
            if measure == "coverage" or citation_source is not None:
                summary[measure] = _mean(values)
        runs[run] = summary
    return {
        "source": source,
        "weighted": weighted,
        "citation_source": citation_source,
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
    return store_banks.import_rubric_judgments(db, read_rubric_judgments(path), str(path), source, by=by)


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


def save_matches(
    db: Store, source: str, topic: str, run: str, decisions: dict[tuple[int, int], tuple[bool, list[int]]]
) -> str:
    """Store the form's decisions (each a label of the assessor's source, written with its history); the message."""
    changed = sum(
        save_match(db, source, topic, run, n, k, contains, sentences)
        for (n, k), (contains, sentences) in sorted(decisions.items())
    )
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
