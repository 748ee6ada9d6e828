"""Budgeted human judging: which items humans should judge, with each item's inclusion probability.

Two designs, both stratified simple random samples without replacement, so every sampled item's
inclusion probability is exact (pi_i = n_h / N_h) and the estimators of :mod:`assess.measures.ppi`
stay unbiased (docs/estimates.md#budgeted-sampling):

- ``stratified``: strata = the judge's label; Neyman allocation n_h proportional to N_h * S_h, where
  S_h is the guessed standard deviation of the human binary label (at or above the threshold) in the
  stratum. Before any human label exists, S_h comes from a stated prior: P(human >= t | judge grade
  g) = 1 / (1 + exp(-(g - t + 0.5) / spread)) (``spread`` = 1 grade by default), or from a
  calibration table the organizer gives (``guess``, e.g. last year's human-vs-LLM rates).
- ``disagreement``: strata = |judge - second judge| (0..4, plus a stratum for items the second
  judge did not label, weighted as a disagreement of 1); the inclusion probability is proportional
  to ``floor + d`` (capped at 1), so it rises with the disagreement and is positive everywhere.

Every stratum gets at least ``minimum`` items (default 2, the fewest a variance needs; a smaller
stratum is judged in full). The chosen items of a stratum are drawn with ``numpy.random.Generator``
seeded by ``seed`` over the items in sorted order, so the same labels and seed give the same sample.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from assess.errors import AssessError
from assess.measures.ppi import sorted_keys, z_value

Item = Hashable
DESIGNS = ("stratified", "disagreement")


@dataclass(frozen=True)
class Sample:
    """A budgeted human sample: the chosen items with their inclusion probabilities and strata."""

    design: str
    items: list
    probability: dict = field(repr=False)
    stratum: dict = field(repr=False)
    allocation: dict  # {stratum: {"N": population size, "n": sampled, "probability": n/N, "weight": ...}}

    def as_dict(self) -> dict[str, Any]:
        return {
            "design": self.design,
            "items": self.items,
            "probability": [self.probability[i] for i in self.items],
            "stratum": [self.stratum[i] for i in self.items],
            "allocation": self.allocation,
        }


def prior_relevant(grade: float, threshold: float, spread: float = 1.0) -> float:
    """The stated prior P(human label >= threshold | judge grade): a logistic curve one grade wide."""
    if not spread > 0:
        raise AssessError(f"spread must be positive, found {spread!r}")
    return 1.0 / (1.0 + math.exp(-(grade - threshold + 0.5) / spread))


def _check_budget(budget: int, population: int) -> int:
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise AssessError(f"the budget must be a positive integer, found {budget!r}")
    if budget > population:
        raise AssessError(f"the budget {budget} is larger than the {population} items the judge labelled")
    return budget


def allocate(sizes: Sequence[int], weights: Sequence[float], budget: int, *, minimum: int = 2) -> list[int]:
    """Integer sample sizes n_h: at least min(minimum, N_h), at most N_h, summing to ``budget``, the
    rest proportional to ``weights`` (water-filling when a stratum reaches N_h), rounded by largest
    remainders. All-zero weights fall back to sizes (proportional allocation)."""
    N = np.asarray(sizes, dtype=float)
    w = np.asarray(weights, dtype=float)
    if np.any(w < 0) or not np.all(np.isfinite(w)):
        raise AssessError("allocation weights must be finite and non-negative")
    if w.sum() <= 0:
        w = N.copy()
    low = np.minimum(N, minimum)
    if budget < low.sum():
        raise AssessError(
            f"the budget {budget} is below the {int(low.sum())} items needed for {minimum} per stratum "
            f"in {len(N)} strata"
        )
    if budget > N.sum():
        raise AssessError(f"the budget {budget} is larger than the {int(N.sum())} items")
    # Proportional to the weights, with strata pushed below their minimum or above their size fixed
    # there and the rest shared again among the others, until no stratum is out of bounds.
    target = np.zeros(len(N))
    fixed = np.zeros(len(N), dtype=bool)
    for _ in range(2 * len(N) + 1):
        free = ~fixed
        left = budget - target[fixed].sum()
        wf = np.where(free, w, 0.0)
        if wf.sum() <= 0:
            wf = np.where(free, N, 0.0)
        target[free] = left * wf[free] / wf.sum() if wf.sum() > 0 else 0.0
        under = free & (target < low)
        over = free & (target > N)
        if not (under.any() or over.any()):
            break
        # One side at a time: raising strata to their minimum leaves less for the others, so fixing strata
        # at their size in the same step could overshoot the budget (sizes 1, 1, 2, weights 0, 0, 1, budget 3).
        moved = under if under.any() else over
        target[moved] = np.where(under.any(), low, N)[moved]
        fixed |= moved
    n = np.floor(target + 1e-9)
    rest = int(round(budget - n.sum()))
    # largest remainders first; then, if strata were capped, any stratum with room (budget <= sum N)
    order = list(np.argsort(-(target - n), kind="stable"))
    while rest > 0:
        for h in order:
            if rest > 0 and n[h] < N[h]:
                n[h] += 1
                rest -= 1
    return [int(x) for x in n]


def _draw(groups: dict, sizes: dict, seed: int, design: str, weights: dict) -> Sample:
    rng = np.random.default_rng(seed)
    chosen, probability, stratum = [], {}, {}
    allocation = {}
    for h in sorted_keys(groups):
        members = groups[h]  # sorted
        n_h = sizes[h]
        picked = rng.choice(len(members), size=n_h, replace=False) if n_h else []
        for j in sorted(int(x) for x in picked):
            item = members[j]
            chosen.append(item)
            probability[item] = n_h / len(members)
            stratum[item] = h
        allocation[h] = {"N": len(members), "n": n_h, "probability": n_h / len(members), "weight": weights[h]}
    return Sample(design, chosen, probability, stratum, allocation)


def _groups(keys: Mapping[Item, Hashable]) -> dict:
    groups: dict[Hashable, list] = {}
    for item in sorted_keys(keys):
        groups.setdefault(keys[item], []).append(item)
    return groups


def _labels(labels: Mapping[Item, float], name: str) -> None:
    for item, value in labels.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise AssessError(f"{name} label of {item!r} must be a number, found {value!r}")


def stratum_sd(
    judge: Mapping[Item, float],
    *,
    threshold: float = 2,
    spread: float = 1.0,
    guess: Mapping[Hashable, float] | None = None,
) -> dict[Hashable, float]:
    """Guessed S_h per judge grade: sqrt(p(1-p)) with p = ``guess[g]`` or the logistic prior."""
    out = {}
    for g in set(judge.values()):
        p = _prior_p(g, threshold, spread, guess)
        out[g] = math.sqrt(p * (1 - p))
    return out


def stratified_sample(
    budget: int,
    judge: Mapping[Item, float],
    *,
    threshold: float = 2,
    spread: float = 1.0,
    guess: Mapping[Hashable, float] | None = None,
    minimum: int = 2,
    seed: int = 0,
) -> Sample:
    """Stratify by the judge's label, Neyman allocation with the guessed S_h (see the module doc)."""
    _labels(judge, "judge")
    _check_budget(budget, len(judge))
    groups = _groups(judge)
    sd = stratum_sd(judge, threshold=threshold, spread=spread, guess=guess)
    names = sorted_keys(groups)
    weights = {h: len(groups[h]) * sd[h] for h in names}
    sizes = allocate([len(groups[h]) for h in names], [weights[h] for h in names], budget, minimum=minimum)
    return _draw(groups, dict(zip(names, sizes)), seed, "stratified", weights)


MISSING = "no second label"


def disagreement_strata(judge: Mapping[Item, float], second: Mapping[Item, float]) -> dict[Item, Hashable]:
    """Each judge item's disagreement |judge - second| (or ``MISSING`` without a second label)."""
    _labels(judge, "judge")
    _labels(second, "second judge")
    return {i: (int(abs(v - second[i])) if i in second else MISSING) for i, v in judge.items()}


def disagreement_sample(
    budget: int,
    judge: Mapping[Item, float],
    second: Mapping[Item, float],
    *,
    floor: float = 1.0,
    minimum: int = 2,
    seed: int = 0,
) -> Sample:
    """Inclusion probability proportional to floor + |judge - second| (see the module doc)."""
    if not floor > 0:
        raise AssessError(f"the floor must be positive so every item can be chosen, found {floor!r}")
    _check_budget(budget, len(judge))
    groups = _groups(disagreement_strata(judge, second))
    names = sorted_keys(groups)
    weights = {h: len(groups[h]) * (floor + (1 if h == MISSING else h)) for h in names}
    sizes = allocate([len(groups[h]) for h in names], [weights[h] for h in names], budget, minimum=minimum)
    return _draw(groups, dict(zip(names, sizes)), seed, "disagreement", weights)


def expected_width(
    budgets: Sequence[int],
    judge: Mapping[Item, float],
    *,
    second: Mapping[Item, float] | None = None,
    threshold: float = 2,
    spread: float = 1.0,
    guess: Mapping[Hashable, float] | None = None,
    floor: float = 1.0,
    minimum: int = 2,
    alpha: float = 0.05,
) -> list[dict[str, Any]]:
    """Expected interval width for the share at ``threshold`` at each budget, before anyone judges.

    Variance model: given the judge's grade g, each human binary label is an independent
    Bernoulli(p_g) with p_g from the prior (or ``guess``). For a stratified design, Var = sum_h W_h^2
    (1 - n_h/N_h) S_h^2 / n_h with S_h^2 = pbar_h (1 - pbar_h), pbar_h the mean prior over the stratum
    (exact for a mixture of Bernoullis). For a uniform sample: human-only S^2 = pbar (1 - pbar);
    PPI with the judge's binary label f: S^2 = min_lam Var(y - lam f) = E[p(1-p)] + Var(p - lam* f).
    Width = 2 z_{1-alpha/2} sqrt(Var). Returns one row per budget.
    """
    _labels(judge, "judge")
    z = z_value(alpha)
    items = sorted_keys(judge)
    N = len(items)
    p = np.array([_prior_p(judge[i], threshold, spread, guess) for i in items])
    f = np.array([float(judge[i] >= threshold) for i in items])
    pbar = float(p.mean())
    s2_human = pbar * (1 - pbar)
    var_f = float(f.var())
    lam = float(np.clip(np.cov(p, f, bias=True)[0, 1] / var_f, 0, 1)) if var_f > 0 else 0.0
    s2_ppi = float(np.mean(p * (1 - p)) + np.var(p - lam * f))
    designs = {"stratified": {i: judge[i] for i in items}}
    if second is not None:
        designs["disagreement"] = disagreement_strata(judge, second)
    rows = []
    for budget in budgets:
        _check_budget(budget, N)
        fpc = 1 - budget / N
        row: dict[str, Any] = {
            "budget": budget,
            "uniform_human_only": 2 * z * math.sqrt(s2_human * fpc / budget),
            "uniform_ppi": 2 * z * math.sqrt(s2_ppi * fpc / budget),
        }
        for design, keys in designs.items():
            groups = _groups(keys)
            names = sorted_keys(groups)
            index = {i: k for k, i in enumerate(items)}
            pb = {h: float(np.mean([p[index[i]] for i in groups[h]])) for h in names}
            size = {h: len(groups[h]) for h in names}
            if design == "stratified":
                weights = [size[h] * math.sqrt(pb[h] * (1 - pb[h])) for h in names]
            else:
                weights = [size[h] * (floor + (1 if h == MISSING else h)) for h in names]
            try:
                n_h = allocate([size[h] for h in names], weights, budget, minimum=minimum)
            except AssessError:
                row[design] = None
                continue
            var = 0.0
            for h, n in zip(names, n_h):
                if n and n < size[h]:
                    var += (size[h] / N) ** 2 * (1 - n / size[h]) * pb[h] * (1 - pb[h]) / n
            row[design] = 2 * z * math.sqrt(var)
        rows.append(row)
    return rows


def _prior_p(grade: float, threshold: float, spread: float, guess: Mapping[Hashable, float] | None) -> float:
    p = float(guess[grade]) if guess is not None and grade in guess else prior_relevant(grade, threshold, spread)
    if not 0 <= p <= 1:
        raise AssessError(f"guessed share for grade {grade!r} must be in [0, 1], found {p!r}")
    return p
