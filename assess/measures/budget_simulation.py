"""Choosing a budget: repeated draws of a design, inverse-probability-weighted PPI for every run, the verdict.

The simulator hides the reference's grades, lets a design (:class:`assess.measures.active_sampling.Plan`)
reveal ``budget`` of them, estimates each run's measure and each run pair's difference with IPW-PPI, and
compares with the full-reference values. :func:`ipw_ppi` is the estimator of
:func:`assess.measures.ppi.corrected_total` (stratified Horvitz-Thompson PPI++, power-tuned lambda in
[0, 1] per figure), vectorised over repeats and figures; a test holds the two equal on one sample.

For linear figures theta_e = sum_i w_ei y_i, on a stratified sample without replacement:

    theta_hat_e = lam_e sum_i w_ei f_i + sum_{i in S} w_ei (y_i - lam_e f_i) / pi_i
    Var_hat     = sum_h N_h^2 (1 - n_h/N_h) s_h^2(z) / n_h,   z_i = w_ei (y_i - lam_e f_i)
    lam_e       = clip(V_yf / V_ff, 0, 1)  (1 when V_ff = 0)

A pair's difference is the figure with weights w_r - w_s; its variance comes from the runs' cross
covariances, so no pair weight matrix is built. Pure numpy: no store, no Streamlit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from assess import lazylibs
from assess.errors import AssessError
from assess.measures.active_sampling import Plan
from assess.measures.ppi import z_value


@dataclass(frozen=True)
class Estimates:
    """Per figure (rows) and repeat (columns): estimate, variance, and whether any sampled item carries its
    weight (a figure no sampled item informs is not estimable)."""

    value: np.ndarray
    var: np.ndarray
    estimable: np.ndarray
    lam: np.ndarray
    sampled: np.ndarray  # sampled items carrying the figure's weight


def _draw_indices(plan: Plan, repeats: int, rng: np.random.Generator) -> np.ndarray:
    """(repeats, n) item indices, the columns of each stratum together and in the plan's order."""
    blocks = []
    for members, n in zip(plan.members, plan.sizes):
        if n == len(members):
            blocks.append(np.tile(members, (repeats, 1)))
        elif n:
            keys = rng.random((repeats, len(members)), dtype=np.float32)
            blocks.append(members[np.argpartition(keys, n - 1, axis=1)[:, :n]])
    return np.concatenate(blocks, axis=1)


def _strata(plan: Plan) -> list[tuple[int, int, float, float]]:
    """(start, stop, pi_h, c_h) per sampled stratum, c_h = N_h^2 (1 - n_h/N_h) / n_h (0 for a census)."""
    out, start = [], 0
    for members, n in zip(plan.members, plan.sizes):
        if n:
            N = len(members)
            out.append((start, start + n, n / N, 0.0 if n >= N else N * N * (1 - n / N) / n))
            start += n
    return out


def ipw_ppi(W: np.ndarray, f: np.ndarray, y: np.ndarray, plan: Plan, idx: np.ndarray) -> tuple[Estimates, Estimates]:
    """IPW-PPI of every run (rows of W) and every run pair r < s (difference r - s), for each repeat (rows of
    ``idx``, drawn from ``plan``); ``f`` the judge's and ``y`` the reference's values on every item."""
    strata = _strata(plan)
    if any(c > 0 and stop - start < 2 for start, stop, _, c in strata):
        raise AssessError("every stratum that is not judged in full needs at least 2 sampled items for a variance")
    pi = np.concatenate([np.full(stop - start, p) for start, stop, p, _ in strata])
    Ws = W[:, idx]  # (R, reps, n)
    inside = Ws != 0
    R, reps = Ws.shape[0], Ws.shape[1]
    # Hajek per run domain D_r (the items it weighs): the domain's size is known, so its estimate scales the
    # weighted domain mean rather than the HT total (a uniform sample then gives PPI over the run's own items).
    size = (W != 0).sum(axis=1).astype(float)[:, None]  # (R, 1)
    Nhat = (inside / pi).sum(axis=2)  # (R, reps)
    informed = Nhat > 0
    safe = np.where(informed, Nhat, 1.0)
    ma = (Ws * y[idx] / pi).sum(axis=2) / safe
    mb = (Ws * f[idx] / pi).sum(axis=2) / safe
    scale = (size / safe)[:, :, None]
    a = scale * inside * (Ws * y[idx] - ma[:, :, None])  # linearised: its HT variance is the estimate's
    b = scale * inside * (Ws * f[idx] - mb[:, :, None])
    Caa = np.zeros((reps, R, R))
    Cab = np.zeros((reps, R, R))
    Cbb = np.zeros((reps, R, R))
    for start, stop, _, c in strata:
        if c == 0:
            continue
        ac = a[:, :, start:stop] - a[:, :, start:stop].mean(axis=2, keepdims=True)
        bc = b[:, :, start:stop] - b[:, :, start:stop].mean(axis=2, keepdims=True)
        scale_h = c / (stop - start - 1)
        Caa += scale_h * np.einsum("rkn,skn->krs", ac, ac)
        Cab += scale_h * np.einsum("rkn,skn->krs", ac, bc)
        Cbb += scale_h * np.einsum("rkn,skn->krs", bc, bc)
    Ta = (size * ma).T  # (reps, R)
    Tb = (size * mb).T
    J = W @ f  # (R,)
    informed = informed.T
    counted = inside.sum(axis=2).T  # (reps, R)
    diagonal = [np.einsum("krr->kr", C) for C in (Caa, Cab, Cbb)]
    runs = _tuned(*diagonal, J, Ta, Tb, informed, counted)
    r_idx, s_idx = np.triu_indices(R, k=1)

    def pair(C: np.ndarray) -> np.ndarray:
        return C[:, r_idx, r_idx] - C[:, r_idx, s_idx] - C[:, s_idx, r_idx] + C[:, s_idx, s_idx]

    pairs = _tuned(
        pair(Caa),
        pair(Cab),
        pair(Cbb),
        J[r_idx] - J[s_idx],
        Ta[:, r_idx] - Ta[:, s_idx],
        Tb[:, r_idx] - Tb[:, s_idx],
        informed[:, r_idx] | informed[:, s_idx],
        np.minimum(counted[:, r_idx], counted[:, s_idx]),  # the smaller side bounds the degrees of freedom
    )
    return runs, pairs


def _tuned(v_aa, v_ab, v_bb, J, Ta, Tb, informed, counted) -> Estimates:
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(v_bb > 1e-300, np.clip(v_ab / v_bb, 0.0, 1.0), 1.0)
    value = lam * J + Ta - lam * Tb
    var = np.maximum(v_aa - 2 * lam * v_ab + lam * lam * v_bb, 0.0)
    return Estimates(value.T, var.T, informed.T, lam.T, counted.T)


def quantile(sampled: np.ndarray, alpha: float) -> np.ndarray:
    """Student's t_{1-alpha/2} with (sampled - 1) degrees of freedom (at least 1): a run's interval rests on
    the few sampled items in its own top k (about 10 of 215 at a uniform 5% of iKAT 2024), where the normal
    quantile undercovers."""
    t = lazylibs.scipy_stats().t

    return t.ppf(1 - alpha / 2, np.maximum(sampled - 1, 1))


def kendall_tau_b(estimates: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each column of ``estimates`` (runs x repeats) against ``truth`` (runs); NaN where a
    ranking is all ties."""
    r, s = np.triu_indices(len(truth), k=1)
    dt = np.sign(truth[r] - truth[s])[:, None]
    de = np.sign(estimates[r] - estimates[s])
    P = len(r)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (de * dt).sum(axis=0) / np.sqrt((P - (de == 0).sum(axis=0)) * (P - (dt == 0).sum()))


def simulate_plan(
    W: np.ndarray,
    f: np.ndarray,
    y: np.ndarray,
    plan: Plan,
    *,
    repeats: int,
    rng: np.random.Generator,
    alpha: float = 0.05,
    block: int = 100,
) -> dict[str, float]:
    """Draw ``plan`` ``repeats`` times and report {"coverage", "mean_width", "tau", "settled"}: the share of
    run x repeat 95% intervals holding the full-reference value sum_i w_ri y_i, their mean width, the mean
    Kendall tau-b of the estimated run ranking with the full-reference one, and the mean share of run pairs
    whose difference's interval excludes 0. A run no sampled item informs counts as the interval [0, 1]
    (nothing known: a share lies there), its estimate as the judge's value."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise AssessError(f"repeats must be a whole number >= 1, found {repeats!r}")
    z_value(alpha)  # refuses a bad alpha before any draw
    truth = W @ y
    hits = width = settled = 0.0
    taus = []
    done = 0
    while done < repeats:
        r = min(block, repeats - done)
        runs, pairs = ipw_ppi(W, f, y, plan, _draw_indices(plan, r, rng))
        half = quantile(runs.sampled, alpha) * np.sqrt(runs.var)
        held = np.abs(runs.value - truth[:, None]) <= half + 1e-12
        hits += float(np.where(runs.estimable, held, True).sum())
        width += float(np.where(runs.estimable, 2 * half, 1.0).sum())
        taus.append(kendall_tau_b(runs.value, truth))
        if pairs.value.size:
            apart = pairs.estimable & (np.abs(pairs.value) > quantile(pairs.sampled, alpha) * np.sqrt(pairs.var))
            settled += float(apart.mean(axis=0).sum())
        done += r
    tau = np.concatenate(taus)
    cells = W.shape[0] * repeats
    return {
        "coverage": hits / cells,
        "mean_width": width / cells,
        "tau": float(np.nanmean(tau)) if np.isfinite(tau).any() else None,
        "settled": settled / repeats,
    }
