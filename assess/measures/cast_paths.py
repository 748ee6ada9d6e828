"""TREC CAsT 2022 conversation-path measures: CCG, CPS, TBCCG and WTBCCG.

TREC CAsT 2022 overview, Sections 3.1 and 5.1.1; docs/measures.md#cast-paths. A path
p = (t_1..t_n) is one root-to-leaf conversation of a topic tree, scored from its turns' scores s_t
(officially NDCG@3 under the strict qrels); results are the mean over all paths of all topics
(:func:`mean_over_paths`).

A turn "satisfies" the user when s_t > theta (theta = 0.33). The definitions use ">" while the
paper's results discussion says ">="; we follow the definitions (``strict=True``) and offer
``strict=False`` for ">=".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

from assess.errors import AssessError

THETA = 0.33


def _scores(scores: Sequence[float]) -> list[float]:
    values = [float(s) for s in scores]
    if not values:
        raise AssessError("a conversation path needs at least one turn")
    if any(math.isnan(v) for v in values):
        raise AssessError("turn scores must be numbers, found NaN")
    return values


def _satisfied(score: float, theta: float, strict: bool) -> bool:
    return score > theta if strict else score >= theta


def ccg(scores: Sequence[float]) -> float:
    """Compute Cumulative Conversational Gain: the mean turn score of the path (CAsT 2022 Eq. 1)."""
    values = _scores(scores)
    return math.fsum(values) / len(values)


def cps(scores: Sequence[float], *, gamma: float = 2.0, theta: float = THETA, strict: bool = True) -> float:
    """Compute Conversation Path Satisfaction (CAsT 2022 Eq. 2).

    CPS(p) = sum over maximal runs r of consecutive turns with s_t > theta of |r|^gamma, divided by
    |p|^gamma; reported with gamma = 2 and 3. Example: satisfied pattern r r n r n gives
    (2^2 + 1^2) / 5^2 = 0.2 for gamma = 2. ``strict=False`` uses s_t >= theta.
    """
    values = _scores(scores)
    total, streak = 0.0, 0
    for s in values + [-math.inf]:  # the sentinel closes the last run
        if _satisfied(s, theta, strict):
            streak += 1
        elif streak:
            total += streak**gamma
            streak = 0
    return total / len(values) ** gamma


def _continuation(values: list[float], p_r: float, p_n: float, theta: float, strict: bool) -> list[float]:
    """Share of users still reading at each turn: 1 for t_1, then prod_{k<i} P(c | t_k)."""
    if not 0 <= p_n <= p_r <= 1:
        raise AssessError(f"continuation probabilities need 0 <= P_n <= P_r <= 1, found P_r={p_r}, P_n={p_n}")
    reach, share = [], 1.0
    for s in values:
        reach.append(share)
        share *= p_r if _satisfied(s, theta, strict) else p_n
    return reach


def tbccg(
    scores: Sequence[float], *, p_r: float = 1.0, p_n: float = 0.0, theta: float = THETA, strict: bool = True
) -> float:
    """Compute Trust-Based CCG (CAsT 2022 Eq. 3).

    TBCCG(p) = (1/|p|) (s_1 + sum_{i>=2} [prod_{k=2..i} P(c | t_{k-1})] s_i), with P(c | t) = P_r if
    s_t > theta else P_n: the product runs over the turns BEFORE t_i (the paper's text: the third turn
    is reached by P(c|t_1) x P(c|t_2)). Reported with P_r = 1 and P_n in {0, 0.25}. Divides by |p|,
    not the expected number of turns read, so TBCCG <= CCG.
    """
    values = _scores(scores)
    reach = _continuation(values, p_r, p_n, theta, strict)
    return math.fsum(r * s for r, s in zip(reach, values)) / len(values)


def wtbccg(
    scores: Sequence[float],
    weights: Sequence[float] | None = None,
    *,
    p_r: float = 1.0,
    p_n: float = 0.0,
    theta: float = THETA,
    strict: bool = True,
) -> float:
    """Compute Weighted TBCCG (CAsT 2022 Eq. 4): TBCCG with per-turn weights w_t.

    WTBCCG(p) = (w_1 s_1 + sum_{i>=2} [prod_{k<i} P(c | t_k)] w_i s_i) / sum_i w_i. The paper does not
    specify the weights; the default (all 1) makes WTBCCG equal TBCCG. Weights must be >= 0 with a
    positive sum.
    """
    values = _scores(scores)
    w = [1.0] * len(values) if weights is None else [float(x) for x in weights]
    if len(w) != len(values):
        raise AssessError(f"one weight per turn expected: {len(w)} weights for {len(values)} turns")
    if any(x < 0 for x in w) or not math.fsum(w) > 0:
        raise AssessError("turn weights must be non-negative with a positive sum")
    reach = _continuation(values, p_r, p_n, theta, strict)
    return math.fsum(r * x * s for r, x, s in zip(reach, w, values)) / math.fsum(w)


MEASURES: dict[str, Callable[..., float]] = {"CCG": ccg, "CPS": cps, "TBCCG": tbccg, "WTBCCG": wtbccg}


def path_scores(
    turn_scores: Mapping[Hashable, float], path: Iterable[Hashable], *, missing: float | None = 0.0
) -> list[float]:
    """Look up the scores of a path's turns; a turn without a score gets ``missing`` (None: error).

    A run that returns nothing for a turn has NDCG@3 = 0 there, hence the default 0.
    """
    out = []
    for turn in path:
        if turn in turn_scores:
            out.append(float(turn_scores[turn]))
        elif missing is None:
            raise AssessError(f"turn {turn!r} of a path has no score")
        else:
            out.append(float(missing))
    return out


def mean_over_paths(
    turn_scores: Mapping[Hashable, float],
    paths: Mapping[Hashable, Sequence[Hashable]] | Iterable[Sequence[Hashable]],
    measure: str = "CCG",
    *,
    missing: float | None = 0.0,
    **params: Any,
) -> dict[str, Any]:
    """Score every path with ``measure`` (CCG, CPS, TBCCG, WTBCCG) and average over paths.

    ``paths`` maps a path id to its turn ids (or is a list of turn-id lists); ``params`` go to the
    measure (gamma, theta, strict, p_r, p_n, weights). Officially the mean over all paths of all
    topics. Returns ``{"mean", "n_paths", "per_path"}``; mean is None when there are no paths.
    """
    try:
        function = MEASURES[measure.upper()]
    except (KeyError, AttributeError):
        raise AssessError(f"unknown path measure {measure!r}; expected one of {', '.join(MEASURES)}") from None
    items = paths.items() if isinstance(paths, Mapping) else enumerate(paths)
    per_path = {pid: function(path_scores(turn_scores, turns, missing=missing), **params) for pid, turns in items}
    values = list(per_path.values())
    return {"mean": math.fsum(values) / len(values) if values else None, "n_paths": len(values), "per_path": per_path}
