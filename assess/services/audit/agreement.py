"""Agreement between label sources: two sources with per-topic kappa, the matrix of several with the human
ceiling and breakdowns, and the alternative annotator test (can a judge replace the humans?)."""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from assess.errors import AssessError
from assess.measures import alt_test as measure
from assess.measures.agreement import (
    MATRIX_STATISTICS,
    MIN_SHARED,
    agreement_matrix,
    agreement_report,
    kappa_by_group,
    matrix_grid,
)
from assess.services.audit.groups import BREAKDOWNS, turn_groups
from assess.services.audit.sources import audit_sources, json_safe, key_text, known_sources, source_kinds
from store.audit import PART, packed_task_labels, scale_of, task_labels
from store.compare import label_pairs


def agreement_from_store(db, task: str, a: str, b: str, *, weights: str | None, threshold: float | None) -> dict:
    """The agreement report of two stored sources, with per-topic kappa."""

    pairs = label_pairs(db, task, a, b)
    report = agreement_report(pairs.a, pairs.b, scale=pairs.scale, weights=weights, threshold=threshold)
    kinds = source_kinds(db, [a, b])
    report.update(task=task, a=a, b=b, pair=pair_class(kinds[a], kinds[b]))
    report["per_topic"] = (
        kappa_by_group(pairs.a, pairs.b, pairs.topics, scale=pairs.scale, weights=weights) if pairs.a else {}
    )
    return report


def pair_class(a: str, b: str) -> str:
    """Two matrix kinds as a class of pair: 'human-human', 'machine-machine', 'human-machine' (the agreement
    matrix's splits), else 'other' (a crowd, import or adjudication source)."""
    named = sorted({"human": "human", "llm": "machine"}.get(k, "other") for k in (a, b))
    return "other" if "other" in named else "-".join(named)


GROUP_DRAWS_LIMIT = 200_000
"""The agreement view gives the per-group figures bootstrap intervals while the (pair, group) matrices present
times the replicates stay at most this (200 groups at 1,000 replicates): their cost grows with that product, about
4 µs of CPU a matrix and replicate (1,517 topic groups of 9 pairs at ten times iKAT 2024: 6.4 s). Above it the
groups get their figures without intervals, and the view says so (``bootstrap.groups`` is 0)."""


def agreement_view(
    db,
    task: str,
    sources=None,
    *,
    threshold: float | None,
    bootstrap: int = 1000,
    seed: int = 0,
    breakdowns=BREAKDOWNS,
    ptkb_source: str | None = None,
    min_shared: int | None = None,
) -> dict[str, Any]:
    """The agreement matrix of the chosen sources (default: every source with labels of ``task``).

    Every pair's observed agreement, Cohen's kappa (unweighted / linear / quadratic), kappa binarised at
    ``threshold`` and Krippendorff's alpha (ordinal), with percentile bootstrap intervals over items; the
    human<->human ceiling pooled over pairs of two human sources (assessors, organizers) that share at least
    ``min_shared`` items (default ``MIN_SHARED``; pairs below it listed in ``ceiling_below_minimum``); every figure per
    topic, turn depth and personal turn (see :func:`personal_turns`). The per-group figures get intervals
    only while their matrices times the replicates stay within GROUP_DRAWS_LIMIT. ``grids``: each
    statistic as a sources x sources grid for a heat map.
    """

    chosen = list(sources) if sources is not None else audit_sources(db, task)
    if len(set(chosen)) != len(chosen):
        twice = next(s for s in chosen if chosen.count(s) > 1)
        raise AssessError(f"source {twice!r} is chosen twice: never a source against itself")
    if len(chosen) < 2:
        raise AssessError(
            f"the agreement matrix needs two sources with {task} labels; found {', '.join(chosen) or 'none'}"
        )
    known_sources(db, task, chosen)
    labels = packed_task_labels(db, task, chosen)  # items as strings, the turn first: half the reading time

    def turn_of(item: str) -> str:
        return item.partition(PART)[0]

    if labels is None:
        labels, turn_of = task_labels(db, task, chosen), itemgetter(0)
    groups, rules = turn_groups(db, tuple(breakdowns), ptkb_source)
    matrix = agreement_matrix(
        labels,
        scale=scale_of(task, {v for by_item in labels.values() for v in by_item.values()}),
        threshold=threshold,
        groups=groups,
        group_key=turn_of,  # breakdowns are per turn
        kinds=source_kinds(db, chosen),
        bootstrap=bootstrap,
        group_draws_limit=GROUP_DRAWS_LIMIT,
        seed=seed,
        min_shared=MIN_SHARED if min_shared is None else min_shared,
    )
    matrix["grids"] = {name: matrix_grid(matrix, name) for name in MATRIX_STATISTICS}
    matrix["task"] = task
    matrix["labels"] = {s: len(labels[s]) for s in chosen}
    matrix["breakdowns"] = rules
    matrix["group_draws_limit"] = GROUP_DRAWS_LIMIT
    return matrix  # plain values already (groups: conversation text, depth int, personal bool)


def alt_test_view(
    db,
    humans: list[str],
    judge: str,
    *,
    task: str = "passage",
    epsilon: float | None = None,
    q: float | None = None,
    min_items: int | None = None,
    scoring: str | None = None,
) -> dict[str, Any]:
    """Can ``judge`` replace the human sources? The alternative annotator test (assess.measures.alt_test)
    over the items each human labelled together with the judge (cannot-judge left out, as in agreement).
    Defaults are the measure's (epsilon for expert assessors, q 0.05, 30 items per human)."""

    names = list(dict.fromkeys(humans))
    if len(names) < 2:
        raise AssessError(
            f"the alternative annotator test needs at least 2 human sources, got {len(names)}: have a second "
            "assessor judge a share of the same items (the authors recommend 50-100 items per human)"
        )
    if judge in names:
        raise AssessError(f"{judge!r} is both a human and the judge: a source is never tested against itself")
    grades: dict[str, dict[str, int]] = {}
    judged: dict[str, int] = {}
    for name in names:
        pairs = label_pairs(db, task, name, judge)
        for key, human, llm in zip(pairs.items, pairs.a, pairs.b):
            item = key_text(key)
            grades.setdefault(item, {})[name] = human
            judged[item] = llm
    result = measure.alt_test(
        grades,
        judged,
        epsilon=measure.EPSILON if epsilon is None else epsilon,
        q=measure.Q if q is None else q,
        min_items=measure.MIN_ITEMS if min_items is None else min_items,
        scoring=scoring or measure.SCORING,
    )
    report = result.as_dict()
    report.update(
        task=task,
        judge=judge,
        humans=names,
        shared_items=sum(len(by) >= 2 for by in grades.values()),
        pass_rule=f"winning rate omega >= {measure.PASS_OMEGA} over at least {measure.MIN_HUMANS} tested humans",
        min_humans=measure.MIN_HUMANS,
        too_few_humans=None,
    )
    tested = len(report["annotators"])
    if report["computable"] and tested < measure.MIN_HUMANS:  # omega may reach 0.5, but says too little to pass
        report["passes"] = False
        report["too_few_humans"] = (
            f"{tested} human(s) tested, fewer than {measure.MIN_HUMANS}: omega is shown but does not pass "
            "(have a third assessor judge the shared items: python -m assess overlap ... --copies 3)"
        )
    return json_safe(report)
