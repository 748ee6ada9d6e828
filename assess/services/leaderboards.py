"""Leaderboards of stored measures (``export leaderboard``): per run and topic the values the score services
compute from one label source, with each run's ``all`` rows, in an AutoJudge layout
(:mod:`assess.formats.leaderboard`).

The measures, by name (docs/responses.md, "Leaderboards"):

- nugget scores of stored NtR labels (:func:`assess.services.scores.stored_nugget_scores`, the RAG tab of
  /scores): :data:`NUGGET_MEASURES`, per turn;
- citation scores of stored citation labels (:func:`assess.services.scores.citation_scores`):
  :data:`CITATION_MEASURES` (``citation_`` + the score's name), per response (its turn);
- qrels-based measures of the stored ranking runs against the source's passage labels
  (:func:`assess.measures.rankings.evaluate_runs`, as ``score runs``): any measure in ir_measures notation
  that pytrec_eval computes (``nDCG@10``, ``P@20``, ``AP``, ...); a binary one without its own ``rel``
  counts label >= 2 and is named with it (``P(rel=2)@20``), as ``score runs`` names it;
- nugget-bank coverage of stored bank matches (:func:`assess.services.banks.bank_scores`, as ``nuggets bank
  score``): :data:`BANK_MEASURES`, per topic;
- DRAGUN's supportive and contradictory scores of stored rubric judgments
  (:func:`assess.services.banks.rubric_scores`, as ``rubrics score``): :data:`RUBRIC_MEASURES`, per topic.

A topic whose value is None (a response left out while a citation is unlabelled, a measure with no value)
has no line; the ``all`` row is the mean of the run's topic lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from assess.errors import AssessError
from assess.formats.leaderboard import LEADERBOARD_LAYOUTS, Entry, leaderboard_text, with_all_rows, write_leaderboard
from assess.measures.rankings import evaluate_runs, measure_name, parse_measure
from assess.services.banks import bank_scores, rubric_scores
from assess.services.scores import citation_scores, stored_nugget_scores
from store.compare import qrels_of, runs_of

NUGGET_MEASURES = (
    "all_strict",
    "all_lax",
    "vital_strict",
    "vital_lax",
    "weighted_strict",
    "weighted_lax",
    "ntr_recall_strict",
    "ntr_recall_lax",
)
CITATION_SCORES = ("recall", "precision", "supported", "recall_lax", "precision_lax", "supported_lax")
CITATION_MEASURES = tuple(f"citation_{m}" for m in CITATION_SCORES)
BANK_MEASURES = ("bank_coverage", "bank_coverage_weighted")
RUBRIC_MEASURES = ("rubric_supportive", "rubric_contradictory")
OWN_MEASURES = NUGGET_MEASURES + CITATION_MEASURES + BANK_MEASURES + RUBRIC_MEASURES


def _nugget_entries(db, source: str, measures: Sequence[str]) -> list[Entry]:
    runs = stored_nugget_scores(db, source)["nugget_scores"]["runs"]
    return [
        Entry(run, turn, m, values[m])
        for run, sets in runs.items()
        for turn, values in sets["original"]["per_turn"].items()
        for m in measures
        if values.get(m) is not None
    ]


def _citation_entries(db, source: str, measures: Sequence[str]) -> list[Entry]:
    rows = citation_scores(db, source, per_response=True)["per_response"]
    return [
        Entry(r["run"], r["turn"], m, r[m.removeprefix("citation_")])
        for r in rows
        for m in measures
        if r[m.removeprefix("citation_")] is not None
    ]


def _bank_entries(db, source: str, measures: Sequence[str]) -> list[Entry]:
    out = []
    for m in measures:
        per_topic = bank_scores(db, source, weighted=m == "bank_coverage_weighted")["per_topic"]
        out += [
            Entry(run, topic, m, values["coverage"])
            for run, topics in per_topic.items()
            for topic, values in topics.items()
            if values["coverage"] is not None
        ]
    return out


def _rubric_entries(db, source: str, measures: Sequence[str]) -> list[Entry]:
    per_topic = rubric_scores(db, source)["per_topic"]
    return [
        Entry(run, topic, m, values[m.removeprefix("rubric_")])
        for run, topics in per_topic.items()
        for topic, values in topics.items()
        for m in measures
    ]


def _qrels_entries(db, source: str, measures: Sequence[str]) -> tuple[list[Entry], list[str]]:
    chosen = [parse_measure(m) for m in measures]
    qrels = qrels_of(db, source)
    if not qrels:
        raise AssessError(f"no passage labels of source {source!r} (the qrels of {', '.join(map(str, chosen))})")
    runs = runs_of(db)
    if not runs:
        raise AssessError("no ranking runs are stored (import them with: python -m assess import run FILE)")
    names = [measure_name(m) for m in chosen]
    out = []
    for run, result in sorted(evaluate_runs(qrels, runs, chosen, named_at=2).items()):
        topics = sorted({t for name in names for t in result["per_query"].get(name, {})})
        for topic in topics:
            out += [
                Entry(run, topic, name, result["per_query"][name][topic])
                for name in names
                if result["per_query"].get(name, {}).get(topic) is not None
            ]
    return out, names


def leaderboard(db, measures: Sequence[str], source: str, *, runs: Sequence[str] = ()) -> list[Entry]:
    """The entries of ``measures`` computed from ``source``'s labels, ``all`` rows included: runs in name order,
    each run's topics in the order its service gives them (turn order; qrels topics by id), measures in the
    order named. ``runs``: only these (each must have entries)."""
    if not measures:
        raise AssessError(
            "export leaderboard needs --measure NAME (repeatable): "
            f"{', '.join(OWN_MEASURES)} or an ir_measures measure such as nDCG@10"
        )
    if not source:
        raise AssessError("export leaderboard needs --source NAME (the labels the measures are computed from)")
    names = list(dict.fromkeys(measures))
    nugget = [m for m in names if m in NUGGET_MEASURES]
    citation = [m for m in names if m in CITATION_MEASURES]
    bank = [m for m in names if m in BANK_MEASURES]
    rubric = [m for m in names if m in RUBRIC_MEASURES]
    ranking = [m for m in names if m not in OWN_MEASURES]
    found: list[Entry] = []
    order = {m: i for i, m in enumerate(names)}  # the order named (a ranking measure under its canonical name)
    if nugget:
        found += _nugget_entries(db, source, nugget)
    if citation:
        found += _citation_entries(db, source, citation)
    if bank:
        found += _bank_entries(db, source, bank)
    if rubric:
        found += _rubric_entries(db, source, rubric)
    if ranking:
        entries, canonical = _qrels_entries(db, source, ranking)
        found += entries
        for given, name in zip(ranking, canonical, strict=True):
            order.setdefault(name, order[given])
    if runs:
        have = sorted({e.run for e in found})
        unknown = [r for r in runs if r not in have]
        if unknown:
            raise AssessError(f"no values of run {unknown[0]!r}; runs with values: {', '.join(have) or 'none'}")
        found = [e for e in found if e.run in set(runs)]
    if not found:
        raise AssessError(f"no values of {', '.join(names)} from the labels of {source!r}")
    topic_order: dict[tuple[str, str], int] = {}
    for e in found:
        topic_order.setdefault((e.run, e.topic), len(topic_order))
    found.sort(key=lambda e: (e.run, topic_order[(e.run, e.topic)], order[e.measure]))
    return with_all_rows(found)


def export_leaderboard(
    db,
    layout: str,
    *,
    measures: Sequence[str],
    source: str,
    output: str | Path | None,
    out: TextIO,
    runs: Sequence[str] = (),
) -> dict | None:
    """Write the leaderboard (:func:`leaderboard`) in ``layout`` to ``output`` (a directory for ``trec_eval``:
    one file per run) or, without one, to ``out`` (``tot`` and ``ir_measures`` only). Returns the counts
    written to a file, None when written to ``out``."""

    if layout not in LEADERBOARD_LAYOUTS:
        raise AssessError(f"export leaderboard needs --layout {'|'.join(LEADERBOARD_LAYOUTS)}")
    if layout == "trec_eval" and not output:
        raise AssessError("export leaderboard --layout trec_eval needs --out DIR (one file per run, named by the run)")
    entries = leaderboard(db, measures, source, runs=runs)
    if output:
        return write_leaderboard(output, entries, layout)
    out.write(leaderboard_text(entries, layout))
    return None
