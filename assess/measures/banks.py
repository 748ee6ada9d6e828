"""Nugget-bank coverage (AND / OR answers), RAGTIME's sentence support and F1, DRAGUN's rubric scores.

Pure functions over plain values; formulas, choices and papers in docs/measures.md ("Nugget banks",
"Rubrics with contradiction").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from assess.errors import AssessError
from assess.measures.citations import citation_supports


class NuggetState(NamedTuple):
    """One bank nugget as a report covers it: how its answers combine, how many it has, how many the
    report contains, and its weight (1, or its importance)."""

    aggregator: str  # AND | OR
    answers: int
    matched: int
    weight: float = 1.0


def nugget_met(aggregator: str, answers: int, matched: int) -> bool:
    """Whether a nugget counts as covered: AND needs every answer (``matched == answers``), OR any one
    (``matched >= 1``). A nugget without answers is never covered."""
    if aggregator not in ("AND", "OR"):
        raise AssessError(f"an aggregator is AND or OR, not {aggregator!r}")
    if answers <= 0:
        return False
    return matched >= answers if aggregator == "AND" else matched >= 1


def coverage(nuggets: Sequence[NuggetState]) -> float | None:
    """Weighted nugget coverage of one report: ``sum_i w_i [covered_i] / sum_i w_i`` (``w_i`` = 1 unweighted).

    With unit weights this is RAGTIME's nugget recall. None when the bank has no nugget of positive
    weight (the score is undefined, never 0/0)."""
    total = sum(n.weight for n in nuggets if n.weight > 0)
    if total <= 0:
        return None
    got = sum(n.weight for n in nuggets if n.weight > 0 and nugget_met(n.aggregator, n.answers, n.matched))
    return got / total


def importance_weight(importance: object) -> float:
    """A nugget's weight from its importance: a number >= 0 as it is, a numeric text read as a number, none: 1."""
    if importance is None:
        return 1.0
    if isinstance(importance, bool):
        raise AssessError(f"an importance weight is a number, not {importance!r}")
    try:
        weight = float(importance)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise AssessError(f"an importance weight is a number, not {importance!r}") from None
    if weight != weight or weight < 0 or weight == float("inf"):
        raise AssessError(f"an importance weight is a finite number >= 0, not {importance!r}")
    return weight


class ReportSupport(NamedTuple):
    """ARGUE's citation counts of one report (Auto-ARGUE's names in the comments)."""

    sentences: int  # sentences
    judged: int  # sentences_with_citations_or_requiring_citations, less those left out
    supported: int  # correctly_cited_sentences
    citations: int  # citations with a verdict (not 'cannot judge', not unlabelled)
    supporting: int  # supporting_citations
    left_out: int = 0  # sentences whose verdict waits on a citation left out


def sentence_verdict(labels: Sequence[int | None]) -> bool | None:
    """ARGUE's verdict on one sentence from the support labels of its citations (None: 'cannot judge' or no
    label): supported when *each* citation supports it (fully: :func:`~assess.measures.citations.citation_supports`),
    unsupported when one does not, None (left out) when no citation says no and one is left out. A sentence
    citing nothing is unsupported (it is taken to require a citation: docs/measures.md)."""
    verdicts = [citation_supports(v) for v in labels]
    if not verdicts or False in verdicts:
        return False
    return None if None in verdicts else True


def report_support(sentences: Sequence[Sequence[int | None]]) -> ReportSupport:
    """Count one report's sentences and citations as ARGUE does. ``sentences``: per sentence the support labels
    of its distinct citations (None: 'cannot judge' or no label, left out)."""
    verdicts = [sentence_verdict(s) for s in sentences]
    supports = [citation_supports(v) for s in sentences for v in s]
    return ReportSupport(
        sentences=len(sentences),
        judged=sum(v is not None for v in verdicts),
        supported=sum(v is True for v in verdicts),
        citations=sum(v is not None for v in supports),
        supporting=sum(v is True for v in supports),
        left_out=sum(v is None for v in verdicts),
    )


def sentence_support(report: ReportSupport) -> float | None:
    """ARGUE sentence support of one report: ``correctly cited sentences / sentences with citations or requiring
    them``. 0 for a report without sentences; None when every sentence is left out."""
    if not report.sentences:
        return 0.0
    return report.supported / report.judged if report.judged else None


def f1(recall: float | None, support: float | None) -> float | None:
    """The harmonic mean of nugget recall and sentence support, ``2 R S / (R + S)``; 0 when both are 0, None
    when either is None."""
    if recall is None or support is None:
        return None
    return 2 * recall * support / (recall + support) if recall + support > 0 else 0.0


RELEVANT_GRADE = 2
"""A cited passage is relevant to its topic when the relevance source grades it at least this (the workbench's
binary relevance, ``score runs``' default threshold)."""


def citation_relevance(cited: Sequence[Sequence[str]], grades: Mapping[str, int]) -> tuple[int, int]:
    """Auto-ARGUE's citation relevance counts of one report: (relevant citations, citations with a grade), a
    citation being one distinct passage of one sentence; ``grades``: the topic's passage grades (a passage
    without one is left out)."""
    graded = [grades[p] for passages in cited for p in dict.fromkeys(passages) if p in grades]
    return sum(g >= RELEVANT_GRADE for g in graded), len(graded)


class TopicScores(NamedTuple):
    """What one topic adds to a run's micro averages: nugget weights met and total, and the report's counts."""

    covered: float
    weight: float
    report: ReportSupport | None  # None: sentence support not scored
    relevance: tuple[int, int] | None = None  # (relevant, graded) citations; None: relevance not scored


def run_averages(topics: Sequence[TopicScores], *, support: bool = True) -> dict[str, float | None]:
    """A run's Auto-ARGUE averages over its topics (hltcoe/argue-viz ``assets/example-report.scores.tsv``, the
    ``all`` rows): ``*_macro`` the mean of the topic values, ``*_micro`` the pooled counts'
    ratio; ``f1_macro`` the mean of the topic F1 values, ``f1_micro`` the F1 of the two micro averages. A topic
    whose value is None is out of that macro mean; a ratio over nothing is None. ``support``: with the
    sentence and citation support averages and F1 (the topics' reports)."""

    def mean(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return sum(known) / len(known) if known else None

    def ratio(part: float, whole: float) -> float | None:
        return part / whole if whole else None

    coverages = [ratio(t.covered, t.weight) for t in topics]
    out: dict[str, float | None] = {
        "nugget_coverage_macro": mean(coverages),
        "nugget_coverage_micro": ratio(sum(t.covered for t in topics), sum(t.weight for t in topics)),
    }
    reports = [(c, t.report) for c, t in zip(coverages, topics) if t.report is not None]
    if not support:
        return out
    supports = [sentence_support(r) for _, r in reports]
    out["sentence_support_macro"] = mean(supports)
    out["sentence_support_micro"] = ratio(sum(r.supported for _, r in reports), sum(r.judged for _, r in reports))
    out["citation_support_macro"] = mean([ratio(r.supporting, r.citations) for _, r in reports])
    out["citation_support_micro"] = ratio(sum(r.supporting for _, r in reports), sum(r.citations for _, r in reports))
    graded = [t.relevance for t in topics if t.relevance is not None]
    if graded:
        out["citation_relevance_macro"] = mean([ratio(r, n) for r, n in graded])
        out["citation_relevance_micro"] = ratio(sum(r for r, _ in graded), sum(n for _, n in graded))
    out["f1_macro"] = mean([f1(c, s) for (c, _), s in zip(reports, supports)])
    out["f1_micro"] = f1(out["nugget_coverage_micro"], out["sentence_support_micro"])
    return out


class RubricScore(NamedTuple):
    supportive: float
    contradictory: float


def rubric_topic_score(weights: Mapping[str, float], judged: Mapping[str, Sequence[float]]) -> RubricScore | None:
    """DRAGUN's per-topic scores of one report (trec-dragun/resources ``utils/score.py``).

    ``weights``: every rubric question of the topic and its importance weight (A 4, B 2, C 1); ``judged``:
    per question, the scores of the report's judged short answers (supports 1, partial 0.5, none 0,
    contradicts -1). With ``n_q`` the number of judged answers of question ``q`` and ``W = sum_q w_q`` over
    all the topic's questions:

        supportive    = sum_q w_q * (sum of the positive scores of q) / n_q / W
        contradictory = sum_q w_q * (-(sum of the negative scores of q)) / n_q / W

    A question without judged answers adds nothing. None when the rubric's weights sum to 0."""
    total = sum(weights.values())
    if total <= 0:
        return None
    supportive = contradictory = 0.0
    for question, scores in judged.items():
        if not scores:
            continue
        if question not in weights:
            raise AssessError(f"a judged question {question!r} is not in the rubric")
        w, n = weights[question], len(scores)
        supportive += sum(s for s in scores if s > 0) / n * w
        contradictory += -sum(s for s in scores if s < 0) / n * w
    return RubricScore(supportive / total, contradictory / total)


def mean_scores(per_topic: Sequence[RubricScore]) -> RubricScore | None:
    """A run's scores: the mean over the topics it was judged on (as the track averages per run); None for none."""
    if not per_topic:
        return None
    n = len(per_topic)
    return RubricScore(sum(s.supportive for s in per_topic) / n, sum(s.contradictory for s in per_topic) / n)
