"""CONE-RAG nugget matching scores: NtN recall/precision and NtR recall, per turn and per run.

Abbasiantaeb, Lupart et al. (2025), "Conversational Gold", Sections 4.2-4.3 and 6.1;
docs/measures.md#nugget-recall; reference code ``irlabamsterdam/CONE-RAG`` ``matching/NtN.py``
and ``matching/NtR.py``. The matching itself (NLI entailment, LLM or crowd yes/no) happens
elsewhere; these functions take its outcome as plain sets and booleans.

The gold nugget set is always an input (``{turn: gold nugget ids}``), so the same matches can be
scored against the original and the de-duplicated ("[D]") gold sets: a match on a nugget outside
the given gold set is ignored here (the command line reports such labels before scoring).

Graded support (TREC RAG 2024/2025, AutoNuggetizer): a nugget's presence in a response is
``SUPPORT`` (2), ``PARTIAL`` (1) or ``NO_SUPPORT`` (0); a yes/no label is read as yes = support,
no = no support (:func:`support_level`). NtR recall is made binary at a threshold: strict counts
support only, lax counts support and partial support. Nugget importance is ``"vital"`` or ``"okay"``.

Unjudged gold nuggets: one default for the library and the command line,
:data:`UNJUDGED_DEFAULT` = ``"no"`` (a gold nugget without a label counts as not captured / not
supported). The reference code asks every gold nugget, so a missing label is missing work, and
leaving it out of the denominator would raise recall for less work; the command line reports how
many gold nuggets were unjudged. ``"ignore"`` stays available for partially labelled studies.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Mapping
from typing import Any, NamedTuple

from assess.errors import AssessError

Turn = Hashable
NuggetId = Hashable

UNJUDGED_DEFAULT = "no"
UNJUDGED_CHOICES = ("no", "ignore")

NO_SUPPORT, PARTIAL, SUPPORT = 0, 1, 2
VITAL, OKAY = "vital", "okay"
IMPORTANCE_WEIGHT = {VITAL: 1.0, OKAY: 0.5}  # AutoNuggetizer Weighted score
STRICT, LAX = SUPPORT, PARTIAL  # NtR binary thresholds: support only / support or partial support
THRESHOLDS = {"strict": STRICT, "lax": LAX}
SCORE_NAMES = ("all_strict", "all_lax", "vital_strict", "vital_lax", "weighted_strict", "weighted_lax")


_MISSING = object()
_LEVELS = {NO_SUPPORT: NO_SUPPORT, PARTIAL: PARTIAL, SUPPORT: SUPPORT}


def support_level(value: bool | int) -> int:
    """A label as a support level: yes/no (bool) is support / no support; 0, 1, 2 pass unchanged."""
    if isinstance(value, bool):
        return SUPPORT if value else NO_SUPPORT
    if value in (NO_SUPPORT, PARTIAL, SUPPORT):
        return int(value)
    raise AssessError(f"a support level must be 0, 1, 2 or a yes/no label, found {value!r}")


def _check_unjudged(unjudged: str) -> None:
    if unjudged not in UNJUDGED_CHOICES:
        raise AssessError(f"unjudged must be 'no' or 'ignore', found {unjudged!r}")


class NtnTurn(NamedTuple):
    """One run's response nuggets for a turn and the (response id, gold id) pairs that match."""

    response: Collection[NuggetId]
    pairs: Collection[tuple[NuggetId, NuggetId]]


def ntn_turn(
    gold: Collection[NuggetId], response: Collection[NuggetId], pairs: Collection[tuple[NuggetId, NuggetId]]
) -> tuple[float | None, float | None]:
    """Compute NtN (recall, precision) of one turn from entailment matches.

    N'_g = gold nuggets entailed by some response nugget, N'_r = response nuggets entailing some
    gold nugget (pairs are (response id, gold id), counted only when both ids are in their sets);
    recall = |N'_g| / |N_g|, precision = |N'_r| / |N_r| (CONE-RAG Section 4.2).
    Degenerate: recall is None when the gold set is empty, precision None when there are no
    response nuggets (the run-level functions decide how such turns count).
    """
    gold_set, response_set = set(gold), set(response)
    valid = [(r, g) for r, g in pairs if r in response_set and g in gold_set]
    recall = len({g for _, g in valid}) / len(gold_set) if gold_set else None
    precision = len({r for r, _ in valid}) / len(response_set) if response_set else None
    return recall, precision


def ntr_turn(
    gold: Collection[NuggetId],
    captured: Mapping[NuggetId, bool | int],
    *,
    unjudged: str = UNJUDGED_DEFAULT,
    threshold: int = STRICT,
) -> float | None:
    """Compute NtR recall of one turn: gold nuggets the response captures / gold nuggets.

    ``captured[g]`` is the judgment "does the response capture gold nugget g" (CONE-RAG Section
    4.2, Table 4 prompt): yes/no, or a support level (0..2) that counts as captured when it is at
    least ``threshold`` (``STRICT`` = support only, ``LAX`` = support or partial support; yes is
    support, so yes/no labels score the same under both). Gold nuggets without a judgment count as
    not captured (``unjudged='no'``, the default: every gold nugget was asked in the reference code)
    or are left out of the denominator (``unjudged='ignore'``, for partially labelled studies).
    None if no gold nugget remains.
    """
    _check_unjudged(unjudged)
    gold_set = set(gold)
    if unjudged == "ignore":
        gold_set = {g for g in gold_set if g in captured}
    if not gold_set:
        return None
    hits = 0
    for g in gold_set:
        value = captured.get(g, _MISSING)
        if value is _MISSING:
            continue
        level = SUPPORT if value is True else NO_SUPPORT if value is False else _LEVELS.get(value)
        if (level if level is not None else support_level(value)) >= threshold:
            hits += 1
    return hits / len(gold_set)


def _summary(per_turn: Mapping[Turn, float | None]) -> dict[str, Any]:
    values = [v for v in per_turn.values() if v is not None]
    return {"mean": math.fsum(values) / len(values) if values else None, "n": len(values), "per_turn": dict(per_turn)}


def ntn_run(
    responses: Mapping[Turn, NtnTurn], gold: Mapping[Turn, Collection[NuggetId]], *, empty_gold: str = "zero"
) -> dict[str, dict[str, Any]]:
    """Macro-average NtN recall and precision of one run over its turns.

    ``responses`` has one entry per turn the run answered. Skip rules of the reference code
    (``NtN.py``): a turn without response nuggets is left out of precision but counts 0 for recall;
    a turn whose gold set is empty (or absent) counts 0 for recall (``empty_gold='zero'``, as the code
    does) or is left out (``empty_gold='skip'``). Returns ``{"recall": {"mean", "n", "per_turn"},
    "precision": {...}}``; a mean over no turns is None.
    """
    if empty_gold not in ("zero", "skip"):
        raise AssessError(f"empty_gold must be 'zero' or 'skip', found {empty_gold!r}")
    recall: dict[Turn, float | None] = {}
    precision: dict[Turn, float | None] = {}
    for turn, entry in responses.items():
        response, pairs = entry
        r, p = ntn_turn(gold.get(turn, ()), response, pairs)
        recall[turn] = r if r is not None else (0.0 if empty_gold == "zero" else None)
        precision[turn] = p
    return {"recall": _summary(recall), "precision": _summary(precision)}


EMPTY_CHOICES = ("skip", "zero")


def _check_empty(empty: str) -> None:
    if empty not in EMPTY_CHOICES:
        raise AssessError(f"empty must be 'skip' or 'zero', found {empty!r}")


def ntr_run(
    matches: Mapping[Turn, Mapping[NuggetId, bool | int]],
    gold: Mapping[Turn, Collection[NuggetId]],
    *,
    unjudged: str = UNJUDGED_DEFAULT,
    threshold: int = STRICT,
    empty: str = "skip",
    evaluated: Collection[Turn] = (),
) -> dict[str, Any]:
    """Macro-average NtR recall of one run over its turns.

    ``matches`` has one entry per turn with a non-empty response (a turn absent from it is treated
    as an empty response and skipped, like ``NtR.py``), except that a turn of ``evaluated`` absent
    from it scores 0 (trec_eval -c: a topic of the evaluated set the run lacks counts 0); turns with
    no gold nuggets (after ``unjudged``, see :func:`ntr_turn`) are skipped too (``empty='skip'``) or
    count 0 (``empty='zero'``, as ``nuggetizer`` scores a record without nuggets). Returns ``{"mean",
    "n", "per_turn"}``; the mean over no turns is None.
    """
    _check_empty(empty)
    per_turn = {
        turn: ntr_turn(gold.get(turn, ()), captured, unjudged=unjudged, threshold=threshold)
        for turn, captured in matches.items()
    }
    per_turn.update({turn: 0.0 for turn in evaluated if turn not in matches})
    if empty == "zero":
        per_turn = {t: 0.0 if v is None else v for t, v in per_turn.items()}
    return _summary({t: v for t, v in per_turn.items() if v is not None})


def split_personal(
    per_turn: Mapping[Turn, float | None], personal_turns: Collection[Turn]
) -> dict[str, dict[str, Any]]:
    """Macro-average per-turn scores over all, personal and non-personal turns.

    A turn is personal when it has at least one relevant PTKB statement (CONE-RAG Section 6.1,
    Table 10); ``personal_turns`` lists those turns. None values (skipped turns) are left out.
    Returns ``{"all": {"mean", "n"}, "personal": {...}, "non_personal": {...}}``.
    """
    personal = set(personal_turns)
    out = {}
    for name, keep in (
        ("all", lambda t: True),
        ("personal", lambda t: t in personal),
        ("non_personal", lambda t: t not in personal),
    ):
        values = [v for t, v in per_turn.items() if v is not None and keep(t)]
        out[name] = {"mean": math.fsum(values) / len(values) if values else None, "n": len(values)}
    return out


def nugget_scores_turn(
    importance: Mapping[NuggetId, str], support: Mapping[NuggetId, bool | int], *, unjudged: str = UNJUDGED_DEFAULT
) -> dict[str, float] | None:
    """Compute the AutoNuggetizer scores of one response: All, Vital and Weighted, strict and lax.

    Pradeep et al. (2024/2025), "Initial nugget evaluation results for the TREC 2024 RAG track with
    the AutoNuggetizer framework", Section 3; ``castorini/nuggetizer`` ``core/metrics.py``. Each gold
    nugget i gets s_i: strict 1 for support, else 0; lax 1 for support, 0.5 for partial support,
    0 for no support. With N the gold nuggets and V the vital ones:
    All = sum_N s_i / |N|; Vital = sum_V s_i / |V|; Weighted = sum_N w_i s_i / sum_N w_i with
    w_i = 1 (vital) or 0.5 (okay). ``importance`` maps each gold nugget to "vital" or "okay".
    Unjudged nuggets count as no support (``unjudged='no'``) or are left out (``'ignore'``).
    Degenerate: None when no gold nugget remains (the turn is skipped, as NtR recall does); Vital
    is 0.0 when the turn has no vital nugget (as the reference ``calculate_nugget_scores``).
    """
    _check_unjudged(unjudged)
    skip = unjudged == "ignore"
    n = vital = 0
    weights = all_strict = all_lax = vital_strict = vital_lax = weighted_strict = weighted_lax = 0.0
    # Plain local sums: this loop runs once per (run, turn, nugget), 300,000 times in the benchmark.
    for nugget, kind in importance.items():
        value = support.get(nugget, _MISSING)
        if value is _MISSING:
            if skip:
                continue
            level = NO_SUPPORT
        else:
            level = SUPPORT if value is True else NO_SUPPORT if value is False else _LEVELS.get(value)
            if level is None:
                level = support_level(value)  # raises the one clear error
        weight = IMPORTANCE_WEIGHT[kind]
        strict = 1.0 if level == SUPPORT else 0.0
        lax = 1.0 if level == SUPPORT else (0.5 if level == PARTIAL else 0.0)
        n += 1
        weights += weight
        all_strict += strict
        all_lax += lax
        weighted_strict += weight * strict
        weighted_lax += weight * lax
        if kind == VITAL:
            vital += 1
            vital_strict += strict
            vital_lax += lax
    if not n:
        return None
    return {
        "all_strict": all_strict / n,
        "all_lax": all_lax / n,
        "vital_strict": vital_strict / vital if vital else 0.0,
        "vital_lax": vital_lax / vital if vital else 0.0,
        "weighted_strict": weighted_strict / weights,
        "weighted_lax": weighted_lax / weights,
    }


def nugget_scores_run(
    support: Mapping[Turn, Mapping[NuggetId, bool | int]],
    importance: Mapping[Turn, Mapping[NuggetId, str]],
    *,
    unjudged: str = UNJUDGED_DEFAULT,
    empty: str = "skip",
) -> dict[str, Any]:
    """Macro-average the AutoNuggetizer scores of one run over its turns (see :func:`nugget_scores_turn`).

    ``support`` has one entry per turn the run answered; a turn without gold nuggets (after
    ``unjudged``) is skipped (``empty='skip'``) or scores 0 on every score (``empty='zero'``: what
    ``nuggetizer``'s ``calculate_nugget_scores`` gives a record whose nugget list is empty). Returns
    ``{"mean": {score: value}, "n", "per_turn": {turn: {score: value}}}``; the means over no turns are None.
    """
    _check_empty(empty)
    per_turn = {}
    for turn, labels in support.items():
        scores = nugget_scores_turn(importance.get(turn, {}), labels, unjudged=unjudged)
        if scores is None and empty == "zero":
            scores = dict.fromkeys(SCORE_NAMES, 0.0)
        if scores is not None:
            per_turn[turn] = scores
    n = len(per_turn)
    mean = {name: (math.fsum(s[name] for s in per_turn.values()) / n if n else None) for name in SCORE_NAMES}
    return {"mean": mean, "n": n, "per_turn": per_turn}


class Coverage(NamedTuple):
    """How one run's labels meet a gold nugget set (what scoring would otherwise leave out silently)."""

    unknown_turns: list  # (turn, nugget) labels on turns without gold nuggets
    unknown_nuggets: list  # (turn, nugget) labels on nuggets not in their turn's gold set
    unjudged: int  # gold nuggets without a label, in turns the run has labels for
    unlabelled_turns: list  # gold turns the run has no label for (scored as no response: skipped)


def label_coverage(labels: Mapping[Turn, Collection[NuggetId]], gold: Mapping[Turn, Collection[NuggetId]]) -> Coverage:
    """Compare one run's labelled nuggets per turn with the gold nuggets per turn."""
    unknown_turns, unknown_nuggets, unjudged = [], [], 0
    for turn, judged in labels.items():
        known = gold.get(turn)
        if not known:
            unknown_turns.extend((turn, g) for g in judged)
            continue
        unknown_nuggets.extend((turn, g) for g in judged if g not in known)
        unjudged += sum(1 for g in known if g not in judged)
    unlabelled = [turn for turn, known in gold.items() if known and turn not in labels]
    return Coverage(unknown_turns, unknown_nuggets, unjudged, unlabelled)
