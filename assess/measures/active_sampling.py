"""Active sampling for system-level estimates: which items people judge so that the runs' P@k hold.

Zrnic & Candès (2024), "Active statistical inference" (ICML): draw item i with a known probability pi_i
that grows with how uncertain the model is about it, and correct with inverse-probability-weighted
prediction-powered inference. Here the estimands are each run's P@k and each run pair's difference, all
linear in the human labels (theta_e = sum_i w_ei y_i), so the Horvitz-Thompson form of
:mod:`assess.measures.ppi` applies unchanged. Under a Poisson-sampling approximation the summed variance
sum_e sum_i w_ei^2 sigma_i^2 (1 - pi_i) / pi_i is minimised, for a fixed expected budget, by
pi_i proportional to sigma_i * m_i, with

- m_i = sqrt(sum_r w_ri^2 + sum_{r<s} (w_ri - w_si)^2): the item's weight in the runs' measures and in
  their differences (an item some runs rank in their top k and others do not decides pairs);
- sigma_i = sqrt(p_i (1 - p_i)): the judge's uncertainty, p_i the stated prior P(human >= t | judge grade)
  of :func:`assess.measures.sampling.prior_relevant` (averaged over the two judges' grades when a second
  judge is given, so two judges that disagree put p_i near 1/2, the most uncertain).

To keep every inclusion probability exact (and the variance estimable) the design is a stratified simple
random sample without replacement: the items with m_i > 0 are cut into ``strata`` groups of equal size by
their score sigma_i m_i, each group gets n_h proportional to its summed score (Neyman allocation with
S_h ~ mean score), and pi_i = n_h / N_h. The items no run ranks in its top k form one more stratum with
the fewest items a variance needs (``minimum``): they cannot change any P@k, yet every item keeps a
positive probability, so other linear figures from the same sample (topic shares) stay unbiased.
Formulas and measured figures: docs/estimates.md#active-sampling.

Pure numpy: no store, no Streamlit.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from assess.errors import AssessError
from assess.measures.ppi import Runs, sorted_keys
from assess.measures.sampling import (
    MISSING,
    Sample,
    allocate,
    disagreement_strata,
    prior_relevant,
    stratum_sd,
)

Item = Hashable
POLICIES = ("uniform", "stratified", "disagreement", "active", "active-sequential")
OUTSIDE = "outside top k"


@dataclass(frozen=True)
class Plan:
    """A stratified design over a population of N items (indices 0..N-1): each stratum's name, its members
    (sorted indices) and its sample size; pi = n_h / N_h on its members."""

    design: str
    names: list
    members: list  # of np.ndarray
    sizes: list

    @property
    def budget(self) -> int:
        return int(sum(self.sizes))

    def probabilities(self, population: int) -> np.ndarray:
        """Every item's inclusion probability (0 nowhere: each stratum gets at least one item)."""
        pi = np.zeros(population)
        for members, n in zip(self.members, self.sizes):
            pi[members] = n / len(members)
        return pi

    def draw(self, items: Sequence[Item], seed: int = 0) -> Sample:
        """One sample of the plan over ``items`` (the population in index order), as :class:`Sample`."""
        rng = np.random.default_rng(seed)
        chosen, probability, stratum, allocation = [], {}, {}, {}
        for name, members, n in zip(self.names, self.members, self.sizes):
            picked = np.sort(rng.choice(len(members), size=n, replace=False)) if n else []
            for j in picked:
                item = items[int(members[j])]
                chosen.append(item)
                probability[item] = n / len(members)
                stratum[item] = name
            allocation[name] = {"N": len(members), "n": n, "probability": n / len(members)}
        return Sample(self.design, chosen, probability, stratum, allocation)


def precision_weights(runs: Runs, items: Sequence[Item], k: int) -> tuple[list[str], np.ndarray]:
    """Each run's P@k weights over ``items`` ((topic, doc) pairs, the population): w_ri = 1/(k * topics_r) for
    an item in run r's top k (a repeated doc counts once, at its first rank), 0 elsewhere; a run's topics are
    those it ranks that have population items (trec_eval's mean, as :func:`ppi.corrected_precision`)."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise AssessError(f"k must be a positive integer, found {k!r}")
    index = {item: j for j, item in enumerate(items)}
    topics = {item[0] for item in items}
    names = sorted(runs)
    W = np.zeros((len(names), len(items)))
    for r, name in enumerate(names):
        chosen = [t for t in sorted_keys(runs[name]) if t in topics and runs[name][t]]
        for t in chosen:
            seen: dict = {}
            for doc in runs[name][t]:
                if len(seen) == k:
                    break
                seen.setdefault(doc, None)
            for doc in seen:
                j = index.get((t, doc))
                if j is not None:
                    W[r, j] = 1.0 / (k * len(chosen))
    return names, W


def influence(W: np.ndarray) -> np.ndarray:
    """m_i = sqrt(sum_r w_ri^2 + sum_{r<s} (w_ri - w_si)^2), with the pair sum as R sum w^2 - (sum w)^2."""
    R = W.shape[0]
    square = (W * W).sum(axis=0)
    pairs = R * square - W.sum(axis=0) ** 2
    return np.sqrt(square + np.maximum(pairs, 0.0))


def uncertainty(
    judge: np.ndarray, second: np.ndarray | None = None, *, threshold: float = 2, spread: float = 1.0
) -> np.ndarray:
    """sigma_i = sqrt(p_i (1 - p_i)), p_i the prior of the judge's grade, averaged with the second judge's
    where it graded the item (``second`` NaN where it did not)."""
    prior = np.vectorize(lambda g: prior_relevant(float(g), threshold, spread), otypes=[float])
    p = prior(judge)
    if second is not None:
        graded = ~np.isnan(second)
        p = np.where(graded, (p + prior(np.where(graded, second, 0.0))) / 2, p)
    return np.sqrt(p * (1 - p))


def active_plan(budget: int, W: np.ndarray, sigma: np.ndarray, *, strata: int = 6, minimum: int = 2) -> Plan:
    """The active design (module doc): score strata of the items some run ranks in its top k, allocation
    proportional to summed score, and the items outside every top k as one stratum of ``minimum`` items."""
    N = W.shape[1]
    _check_budget(budget, N)
    score = influence(W) * sigma
    inside = np.flatnonzero(score > 0)
    outside = np.flatnonzero(score <= 0)
    if not inside.size:
        raise AssessError("no run ranks any of the items in its top k: there is nothing for people to decide")
    order = inside[np.argsort(-score[inside], kind="stable")]
    H = max(1, min(strata, len(order) // max(minimum, 1), budget // (4 * max(minimum, 1))))
    groups = [np.sort(g) for g in np.array_split(order, H)]
    names = [f"active {h + 1}" for h in range(H)]
    weights = [float(score[g].sum()) for g in groups]
    if outside.size:
        groups.append(outside)
        names.append(OUTSIDE)
        weights.append(0.0)
    sizes = allocate([len(g) for g in groups], weights, budget, minimum=minimum)
    return Plan("active", names, groups, sizes)


def _check_budget(budget: int, population: int) -> None:
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 2:
        raise AssessError(f"a budget is a whole number of items >= 2, found {budget!r}")
    if budget > population:
        raise AssessError(f"the budget {budget} is larger than the {population} items of the population")


def uniform_plan(budget: int, population: int) -> Plan:
    _check_budget(budget, population)
    return Plan("uniform", ["all"], [np.arange(population)], [budget])


def _keyed_plan(design: str, keys: Sequence[Hashable], weight: Mapping[Hashable, float], budget: int) -> Plan:
    names = sorted_keys(set(keys))
    code = {h: j for j, h in enumerate(names)}
    label = np.array([code[h] for h in keys], dtype=np.intp)
    members = [np.flatnonzero(label == j) for j in range(len(names))]
    weights = [len(m) * weight[h] for h, m in zip(names, members)]
    sizes = allocate([len(m) for m in members], weights, budget)
    return Plan(design, names, members, sizes)


def stratified_plan(budget: int, judge: np.ndarray, *, threshold: float = 2) -> Plan:
    """:func:`assess.measures.sampling.stratified_sample`'s design: strata by judge grade, Neyman allocation
    with the prior's S_h."""
    _check_budget(budget, len(judge))
    grades = [float(g) for g in judge]
    sd = stratum_sd(dict(enumerate(grades)), threshold=threshold)
    return _keyed_plan("stratified", grades, sd, budget)


def disagreement_plan(budget: int, judge: np.ndarray, second: np.ndarray, *, floor: float = 1.0) -> Plan:
    """:func:`assess.measures.sampling.disagreement_sample`'s design: strata by |judge - second|, allocation
    proportional to N_h (floor + d)."""
    _check_budget(budget, len(judge))
    given = {j: float(v) for j, v in enumerate(second) if not math.isnan(v)}
    keys = list(disagreement_strata({j: float(g) for j, g in enumerate(judge)}, given).values())
    weight = {h: floor + (1 if h == MISSING else h) for h in set(keys)}
    return _keyed_plan("disagreement", keys, weight, budget)
