"""How few battles decide a ranking: a small set of battles whose removal puts one run behind another.

Huang et al. (2025) found that dropping 2 of 57,477 battles flips Chatbot Arena's top model. The search is an
approximate maximum-influence one (Broderick, Giordano & Meager's "AMIP"): the first-order effect of removing a
battle on the strength gap (one Newton step, ``-c' H^-1 x_i (y_i - p_i)``), battles removed greedily, most
gap-closing first, as many as the first order says flip the pair; each step verified by refitting, influences
recomputed from the refit while the pair has not flipped; a set found is then pruned (each battle put back in
turn, kept out only where the pair would not flip without it). Small, verified, not proven minimal.
"""

from __future__ import annotations

import numpy as np

from assess.measures.battle_controls import Fit, fit, standardise

MAX_ROUNDS = 30
PRUNE_UP_TO = 25
"""Sets up to this size are pruned (one refit per battle); larger ones are reported as found."""


def order(strength: np.ndarray) -> np.ndarray:
    """Run indices strongest first, ties by index (the runs are indexed in name order)."""
    return np.lexsort((np.arange(len(strength)), -strength))


def _fit(left, right, y, d, n, keep, start) -> tuple[Fit, np.ndarray]:
    """The model refitted on the kept battles, its controls z-scored over them (as a ranking of them would)."""
    z = standardise(d[keep], [f"control {j}" for j in range(d.shape[1])])[0] if d.shape[1] else d[keep]
    return fit(left[keep], right[keep], y[keep], z, n, start=start), z


def _ahead(left, right, y, d, n, keep, first, second, start) -> tuple[bool, np.ndarray]:
    found, _ = _fit(left, right, y, d, n, keep, start)
    rank = order(found.strength)
    place = {int(r): i for i, r in enumerate(rank)}
    return place[first] < place[second], np.concatenate([found.strength, found.coef])


def flip_set(
    left: np.ndarray, right: np.ndarray, y: np.ndarray, d: np.ndarray, n: int, first: int, second: int
) -> np.ndarray | None:
    """Indices of battles whose removal puts run ``second`` ahead of ``first`` (by :func:`order`) when the model is
    refitted without them (``d``: the raw control differences, z-scored over the battles of each fit); None when
    no set was found within :data:`MAX_ROUNDS` refits."""
    left, right = np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64)
    y = np.asarray(y, dtype=np.float64)
    d = np.asarray(d, dtype=np.float64).reshape(len(y), -1)
    keep = np.ones(len(y), dtype=bool)
    found, z = _fit(left, right, y, d, n, keep, None)
    start = np.concatenate([found.strength, found.coef])
    c = np.zeros(n + d.shape[1])
    c[first], c[second] = 1.0, -1.0
    for _ in range(MAX_ROUNDS):
        gap = found.strength[first] - found.strength[second]
        u = np.linalg.lstsq(found.hessian, c, rcond=None)[0]
        kept = np.flatnonzero(keep)
        # the gap's change on removing battle i: -(u_left - u_right + z_i . u_controls) (y_i - p_i)
        effect = -(u[left[kept]] - u[right[kept]] + z @ u[n:]) * found.residual
        closing = np.argsort(effect, kind="stable")
        closing = closing[effect[closing] < 0]
        if not len(closing):
            return None
        reach = np.cumsum(effect[closing])
        take = int(np.searchsorted(-reach, gap, side="left")) + 1  # first prefix whose sum closes the gap
        keep[kept[closing[: min(take, len(closing))]]] = False
        if not keep.any():
            return None
        still, start = _ahead(left, right, y, d, n, keep, first, second, start)
        if not still:
            return _prune(left, right, y, d, n, keep, first, second, start)
        found, z = _fit(left, right, y, d, n, keep, start)  # its residuals and z: the kept battles
    return None


def _prune(left, right, y, d, n, keep, first, second, start) -> np.ndarray:
    removed = list(np.flatnonzero(~keep))
    if len(removed) <= PRUNE_UP_TO:
        for i in list(removed):
            keep[i] = True
            still, _ = _ahead(left, right, y, d, n, keep, first, second, start)
            if still:  # needed: without removing it the pair does not flip
                keep[i] = False
            else:
                removed.remove(i)
    return np.array(sorted(removed), dtype=np.int64)
