"""Nugget-bank coverage (AND / OR answers), RAGTIME's sentence support and F1, DRAGUN's rubric scores.

Pure functions over plain values; formulas, choices and papers in docs/measures.md ("Nugget banks",
"Rubrics with contradiction").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from assess.errors import AssessError


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


def sentence_support(supported: Sequence[bool]) -> float:
    """RAGTIME sentence support of one report: the share of its sentences that a cited document supports,
    ``|{s : supported(s)}| / |S|``. A report without sentences scores 0."""
    return sum(1 for s in supported if s) / len(supported) if supported else 0.0


def f1(recall: float, support: float) -> float:
    """The harmonic mean of nugget recall and sentence support, ``2 R S / (R + S)``; 0 when both are 0."""
    return 2 * recall * support / (recall + support) if recall + support > 0 else 0.0


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
