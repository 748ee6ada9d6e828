"""nDCG@k in the budget simulator and the active design: IPW-PPI with a linearised (Taylor) variance.

nDCG@k of run r is the mean, over its topics T_r, of DCG_rt / IDCG_t (gain = grade, trec_eval's linear gain;
discount 1/log2(rank + 1); 0 where the ideal is 0). DCG_rt is linear in the grades; IDCG_t is a piecewise
linear function of the topic's count of items per grade (:func:`ideal`; a fractional count fills a fraction
of a position, as :func:`assess.measures.ppi.corrected_ndcg`). The estimate is that function's plug-in at
the PPI-corrected totals (Horvitz-Thompson, as ``corrected_ndcg``):

    D_hat_rt = lam D^f_rt + sum_{S, t} a_ri (y_i - lam f_i) / pi_i
    c_hat_t  = lam c^f_t  + sum_{S, t} (h(y_i) - lam h(f_i)) / pi_i     (h: one-hot of a positive grade)

and its variance the stratified design variance of the linearised item values
e_ri(g) = (1/|T_r|) [a_ri g / I_t - D_rt / I_t^2 dI_t/dc_g] at z_i = e_ri(y_i) - lam e_ri(f_i) (Woodruff's
linearisation; the bootstrap of ``corrected_ndcg`` costs ~200 replicates per draw, which 4 policies x 5 budgets
x 200 repeats cannot afford). lam per run and draw = clip(V_yf / V_ff, 0, 1), computed at the lam = 1 point,
then the estimate and variance are taken again at the tuned lam. A pair's difference is the runs' difference,
its variance from the cross covariances of the runs' z.

The active design's weights (:func:`sensitivity`) are exact finite differences at the judge's grades: how much
run r's nDCG@k moves when item i goes from grade 0 to the top grade. Through the ideal, every item of a run's
topics moves it a little; where the judge's top k is all top grades (its ideal saturated) an item keeps at
least the effect of a top grade at rank k, since the reference's ideal may not be.

Pure numpy: no store, no Streamlit.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from assess.errors import AssessError
from assess.measures.active_sampling import Plan
from assess.measures.budget_simulation import Estimates, covariances, plan_strata
from assess.measures.ppi import Runs, sorted_keys

Item = Hashable


def discounts(k: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, k + 2))


def ideal(counts: np.ndarray, grades: np.ndarray, disc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """IDCG@k and its gradient in the counts, from counts (..., G) of the positive ``grades`` (ascending).

    With grades descending g_1 > ... > g_G (g_{G+1} = 0) and U_j = c_1 + ... + c_j, IDCG = sum_j F(U_j)(g_j -
    g_{j+1}), F(x) the discounts summed over positions [0, x) (linear inside a position), so dIDCG/dc_l =
    sum_{j >= l} F'(U_j)(g_j - g_{j+1}). Negative counts (a correction overshooting) count as 0.
    """
    k = len(disc)
    cum = np.concatenate([[0.0], np.cumsum(disc)])
    slope = np.concatenate([disc, [0.0]])
    c = np.maximum(counts[..., ::-1], 0.0)  # descending grades
    g = grades[::-1]
    step = g - np.concatenate([g[1:], [0.0]])
    U = np.minimum(np.cumsum(c, axis=-1), k)
    whole = np.floor(U).astype(int)
    F = cum[whole] + (U - whole) * slope[whole]
    value = (F * step).sum(axis=-1)
    dF = slope[whole] * step  # F'(U_j)(g_j - g_{j+1}); 0 once the k positions are full
    grad = np.cumsum(dF[..., ::-1], axis=-1)  # dI/dc_l = sum_{j >= l}, descending; back to ascending:
    return value, grad


@dataclass(frozen=True)
class NdcgSetup:
    """The population's fixed quantities: per item its topic (0..T-1), judge and reference gains and their
    grade classes (index into ``grades``, -1 for a gain of 0); per run the discount of each item in its top k
    (A, R x N) and its topics (M, R x T)."""

    topic: np.ndarray
    f: np.ndarray
    y: np.ndarray
    f_class: np.ndarray
    y_class: np.ndarray
    grades: np.ndarray
    A: np.ndarray
    M: np.ndarray
    disc: np.ndarray

    @property
    def topics(self) -> int:
        return self.M.shape[1]

    def counts(self, classes: np.ndarray) -> np.ndarray:
        out = np.zeros((self.topics, len(self.grades)))
        keep = classes >= 0
        np.add.at(out, (self.topic[keep], classes[keep]), 1.0)
        return out

    def dcg(self, gains: np.ndarray) -> np.ndarray:
        """(R, T) DCG of every run on every topic under ``gains``."""
        out = np.zeros((self.A.shape[0], self.topics))
        for r in range(self.A.shape[0]):
            out[r] = np.bincount(self.topic, weights=self.A[r] * gains, minlength=self.topics)
        return out

    def ndcg(self, D: np.ndarray, best: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(best > 0, D / np.where(best > 0, best, 1.0), 0.0)
        return (ratio * self.M).sum(axis=-1) / self.M.sum(axis=1)

    def truth(self) -> np.ndarray:
        """Every run's nDCG@k under the reference's grades."""
        return self.ndcg(self.dcg(self.y), ideal(self.counts(self.y_class), self.grades, self.disc)[0])


def setup(runs: Runs, items: Sequence[Item], judge: np.ndarray, reference: np.ndarray, k: int) -> NdcgSetup:
    """The population of ``items`` ((topic, doc) pairs) with the judge's and the reference's grades (gain =
    max(grade, 0)); a run's topics are those it ranks that have population items, as ``precision_weights``."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise AssessError(f"k must be a positive integer, found {k!r}")
    topic_names = sorted_keys({item[0] for item in items})
    t_index = {t: j for j, t in enumerate(topic_names)}
    index = {item: j for j, item in enumerate(items)}
    f = np.maximum(np.asarray(judge, dtype=float), 0.0)
    y = np.maximum(np.asarray(reference, dtype=float), 0.0)
    grades = np.array(sorted({float(g) for g in np.concatenate([f, y]) if g > 0}))
    if not len(grades):
        grades = np.array([1.0])  # nothing relevant anywhere: every ideal is 0, every nDCG 0

    def classes(gains):
        return np.where(gains > 0, np.searchsorted(grades, gains), -1)

    disc = discounts(k)
    names = sorted(runs)
    A = np.zeros((len(names), len(items)))
    M = np.zeros((len(names), len(topic_names)))
    for r, name in enumerate(names):
        for t in sorted_keys(runs[name]):
            if t not in t_index or not runs[name][t]:
                continue
            M[r, t_index[t]] = 1
            seen: dict = {}
            for doc in runs[name][t]:
                if len(seen) == k:
                    break
                seen.setdefault(doc, None)
            for rank, doc in enumerate(seen):
                j = index.get((t, doc))
                if j is not None:
                    A[r, j] = disc[rank]
    if (M.sum(axis=1) == 0).any():
        raise AssessError("a run ranks none of the graded topics: its nDCG@k has nothing to average")
    topic = np.array([t_index[item[0]] for item in items], dtype=np.intp)
    return NdcgSetup(topic, f, y, classes(f), classes(y), grades, A, M, disc)


def sensitivity(s: NdcgSetup) -> np.ndarray:
    """(R, N): run r's nDCG@k with item i at the top grade minus with item i at 0, the others at the judge's
    grades (the active design's w_ri)."""
    top, G = float(s.grades[-1]), len(s.grades)
    base = s.counts(s.f_class)[s.topic]  # (N, G) the item's topic
    own = np.zeros_like(base)
    keep = s.f_class >= 0
    own[np.flatnonzero(keep), s.f_class[keep]] = 1
    low = base - own
    high = low.copy()
    high[:, G - 1] += 1
    best_low, best_high = ideal(low, s.grades, s.disc)[0], ideal(high, s.grades, s.disc)[0]
    D = s.dcg(s.f)[:, s.topic] - s.A * s.f  # (R, N) the topic's DCG without the item's gain
    with np.errstate(divide="ignore", invalid="ignore"):
        hi = np.where(best_high > 0, (D + s.A * top) / np.where(best_high > 0, best_high, 1), 0.0)
        lo = np.where(best_low > 0, D / np.where(best_low > 0, best_low, 1), 0.0)
        # Where the judge fills the top k with top grades its ideal is saturated and the difference is 0, yet
        # the reference's ideal may hang on the item: it keeps at least the effect of a top grade at rank k.
        floor = np.where(best_low > 0, D * top * s.disc[-1] / np.where(best_low > 0, best_low, 1) ** 2, 0.0)
    moved = np.where(np.abs(hi - lo) < floor, -floor, hi - lo)
    return moved * s.M[:, s.topic] / s.M.sum(axis=1)[:, None]


def ipw_ndcg(s: NdcgSetup, plan: Plan, idx: np.ndarray, *, lam: float | None = None) -> tuple[Estimates, Estimates]:
    """IPW-PPI of every run's nDCG@k and every run pair's difference (r < s, r - s), per repeat (rows of
    ``idx``, drawn from ``plan``): the module doc's plug-in with its linearised variance (``lam`` fixed, or
    tuned per run and draw when None)."""
    strata = plan_strata(plan)
    if any(c > 0 and stop - start < 2 for start, stop, _, c in strata):
        raise AssessError("every stratum that is not judged in full needs at least 2 sampled items for a variance")
    pi = np.concatenate([np.full(stop - start, p) for start, stop, p, _ in strata])
    R, T, G = s.A.shape[0], s.topics, len(s.grades)
    reps, n = idx.shape
    ts = s.topic[idx]
    key = (np.arange(reps)[:, None] * T + ts).ravel()

    def per_topic(weights: np.ndarray) -> np.ndarray:  # (reps, n) -> (reps, T)
        return np.bincount(key, weights=weights.ravel(), minlength=reps * T).reshape(reps, T)

    def class_sums(classes: np.ndarray) -> np.ndarray:  # (reps, T, G) of sum 1/pi per grade class
        out = np.zeros((reps, T, G))
        for g in range(G):
            out[:, :, g] = per_topic((classes == g) / pi)
        return out

    ys, fs, yc, fc = s.y[idx], s.f[idx], s.y_class[idx], s.f_class[idx]
    As = s.A[:, idx]  # (R, reps, n)
    Sy_c, Sf_c = class_sums(yc), class_sums(fc)
    Sy_D = np.stack([per_topic(As[r] * ys / pi) for r in range(R)])  # (R, reps, T)
    Sf_D = np.stack([per_topic(As[r] * fs / pi) for r in range(R)])
    cf, Df = s.counts(s.f_class), s.dcg(s.f)
    Mn = s.M / s.M.sum(axis=1)[:, None]  # (R, T)

    def at(lam: np.ndarray):  # lam (R, reps) -> value (R, reps), a and b (R, reps, n)
        L = lam[:, :, None]
        D = L * Df[:, None, :] + Sy_D - L * Sf_D
        best, dI = ideal(L[..., None] * cf + Sy_c - L[..., None] * Sf_c, s.grades, s.disc)
        positive = best > 0
        inv = np.where(positive, 1 / np.where(positive, best, 1), 0.0)
        value = (D * inv * Mn[:, None, :]).sum(axis=2)
        # gathers by flat (repeat, topic[, grade]) index: much faster than fancy indexing over 3 or 4 axes
        scale = (Mn[:, None, :] * inv).reshape(R, -1)[:, key].reshape(R, reps, n)  # M_rt / |T_r| / I_t
        tilt = (D * inv).reshape(R, -1)[:, key].reshape(R, reps, n)  # D_rt / I_t
        slope = dI.reshape(R, -1)

        def e(gains, classes):
            flat = key * G + np.maximum(classes, 0).ravel()
            grad = slope[:, flat].reshape(R, reps, n)  # dI_t/dc of the item's grade
            return scale * (As * gains - tilt * np.where(classes >= 0, grad, 0.0))

        return value, e(ys, yc), e(fs, fc)

    def tune(a, b) -> np.ndarray:
        Caa, Cab, Cbb = covariances(a, b, strata)
        v_ab, v_bb = np.einsum("krr->rk", Cab), np.einsum("krr->rk", Cbb)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(v_bb > 1e-300, np.clip(v_ab / v_bb, 0.0, 1.0), 1.0)

    lam = tune(*at(np.ones((R, reps)))[1:]) if lam is None else np.full((R, reps), float(lam))
    value, a, b = at(lam)
    Caa, Cab, Cbb = covariances(a, b, strata)
    lk = lam.T  # (reps, R)
    # Cov(z_r, z_s), z = a - lam b: Caa_rs - lam_s Cab_rs - lam_r Cab_sr + lam_r lam_s Cbb_rs
    Czz = Caa - lk[:, None, :] * Cab - lk[:, :, None] * np.swapaxes(Cab, 1, 2) + lk[:, :, None] * lk[:, None, :] * Cbb
    var = np.maximum(np.einsum("krr->rk", Czz), 0.0)
    counted = (As != 0).sum(axis=2)  # (R, reps)
    runs = Estimates(value, var, counted > 0, lam, counted)
    r_idx, s_idx = np.triu_indices(R, k=1)
    pair_var = Czz[:, r_idx, r_idx] - 2 * Czz[:, r_idx, s_idx] + Czz[:, s_idx, s_idx]
    pairs = Estimates(
        value[r_idx] - value[s_idx],
        np.maximum(pair_var.T, 0.0),
        runs.estimable[r_idx] | runs.estimable[s_idx],
        np.full((len(r_idx), reps), np.nan),
        np.minimum(counted[r_idx], counted[s_idx]),
    )
    return runs, pairs
