"""CONE-RAG nugget matching scores: NtN recall/precision and NtR recall, per turn and per run.

Abbasiantaeb, Lupart et al. (2025), "Conversational Gold", Sections 4.2-4.3 and 6.1;
docs/measures.md#nugget-recall; reference code ``irlabamsterdam/CONE-RAG`` ``matching/NtN.py``
and ``matching/NtR.py``. The matching itself (NLI entailment, LLM or crowd yes/no) happens
elsewhere; these functions take its outcome as plain sets and booleans.

The gold nugget set is always an input (``{turn: gold nugget ids}``), so the same matches can be
scored against the original and the de-duplicated ("[D]") gold sets: a match on a nugget outside
the given gold set is ignored.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Mapping
from typing import Any, NamedTuple

from assess.errors import AssessError

Turn = Hashable
NuggetId = Hashable


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


def ntr_turn(gold: Collection[NuggetId], captured: Mapping[NuggetId, bool], *, unjudged: str = "no") -> float | None:
    """Compute NtR recall of one turn: gold nuggets the response captures / gold nuggets.

    ``captured[g]`` is the yes/no judgment "does the response capture gold nugget g" (CONE-RAG
    Section 4.2, Table 4 prompt). Gold nuggets without a judgment count as not captured
    (``unjudged='no'``, every gold nugget was asked in the reference code) or are left out of the
    denominator (``unjudged='ignore'``, for partially labelled studies). None if no gold nugget
    remains.
    """
    if unjudged not in ("no", "ignore"):
        raise AssessError(f"unjudged must be 'no' or 'ignore', found {unjudged!r}")
    gold_set = set(gold)
    if unjudged == "ignore":
        gold_set = {g for g in gold_set if g in captured}
    if not gold_set:
        return None
    return sum(1 for g in gold_set if captured.get(g)) / len(gold_set)


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


def ntr_run(
    matches: Mapping[Turn, Mapping[NuggetId, bool]], gold: Mapping[Turn, Collection[NuggetId]], *, unjudged: str = "no"
) -> dict[str, Any]:
    """Macro-average NtR recall of one run over its turns.

    ``matches`` has one entry per turn with a non-empty response (a turn absent from it is treated
    as an empty response and skipped, like ``NtR.py``); turns with no gold nuggets (after
    ``unjudged``, see :func:`ntr_turn`) are skipped too. Returns ``{"mean", "n", "per_turn"}``;
    the mean over no turns is None.
    """
    per_turn = {turn: ntr_turn(gold.get(turn, ()), captured, unjudged=unjudged) for turn, captured in matches.items()}
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
