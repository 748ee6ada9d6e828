"""Corrected estimates from LLM labels on every item and human labels on a sample.

Prediction-powered inference (PPI): Angelopoulos, Bates, Fannjiang, Jordan & Zrnic (2023),
"Prediction-powered inference", Science 382(6671):669-674; with the power tuning of PPI++:
Angelopoulos, Duchi & Zrnic (2023), "PPI++: Efficient prediction-powered inference",
arXiv:2311.01453. Formulas, choices and their reasons: docs/estimates.md.

The setting here is a finite population: the judge (an LLM) labelled every item, so the judge's
population total is known exactly, and the target is the value the human labels of *all* items
would give. A human sample S is a stratified simple random sample without replacement (one stratum
is a plain uniform sample); each sampled item carries its inclusion probability pi_i = n_h / N_h.
For a linear measure theta = sum_i w_i y_i (a mean, P@k, NtR recall, a topic's share):

    theta_hat(lam) = lam * sum_i w_i f_i  +  sum_{i in S} w_i (y_i - lam f_i) / pi_i

which is unbiased for every fixed lam (the second term is the Horvitz-Thompson estimator of the
residual total). Its design variance is estimated by sum_h N_h^2 (1 - n_h/N_h) s_h^2 / n_h, with
s_h^2 the sample variance of z_i = w_i (y_i - lam f_i) in stratum h. lam = 0 is the classical,
human-only estimator from the same sample; lam = 1 is the original PPI; the tuned lam minimises the
estimated variance over [0, 1], so the tuned interval is never wider than the human-only one on
the same sample (the variance estimate is a quadratic in lam whose value at 0 is the human-only
one). Intervals are normal (CLT) at level 1 - alpha; nDCG@k, not linear, gets a rescaling
bootstrap (Rao & Wu 1988) instead.

Pure numpy: no store, no Streamlit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from assess.errors import AssessError

Item = Hashable
Labels = Mapping[Item, float]
Runs = Mapping[str, Mapping[Hashable, Sequence[Hashable]]]


def z_value(alpha: float) -> float:
    """The two-sided normal quantile z_{1-alpha/2}."""
    if not 0 < alpha < 1:
        raise AssessError(f"alpha must be between 0 and 1, found {alpha!r}")
    return NormalDist().inv_cdf(1 - alpha / 2)


@dataclass(frozen=True)
class Interval:
    """A point estimate with its standard error and a two-sided interval."""

    value: float
    se: float
    low: float
    high: float

    @property
    def width(self) -> float:
        return self.high - self.low

    def as_dict(self) -> dict[str, float]:
        return {"value": self.value, "se": self.se, "low": self.low, "high": self.high, "width": self.width}

    def within(self, low: float, high: float) -> Interval:
        """The estimate and interval clipped to [low, high] (a share is never reported outside [0, 1]); the
        standard error stays the estimator's."""

        def clip(x: float) -> float:
            return min(max(x, low), high)

        return Interval(clip(self.value), self.se, clip(self.low), clip(self.high))


def _interval(value: float, var: float, z: float) -> Interval:
    se = math.sqrt(max(var, 0.0))
    return Interval(float(value), se, float(value - z * se), float(value + z * se))


@dataclass(frozen=True)
class Corrected:
    """One measure estimated three ways: PPI (tuned lam), human labels only, the judge alone."""

    ppi: Interval
    human_only: Interval
    judge_only: float
    lam: float
    sampled: int  # sampled items with a non-zero weight in this measure

    def as_dict(self) -> dict[str, Any]:
        out = {
            "estimable": True,
            "ppi": self.ppi.as_dict(),
            "human_only": self.human_only.as_dict(),
            "judge_only": self.judge_only,
            "lambda": self.lam,
            "sampled": self.sampled,
        }
        if self.ppi.se == 0 < self.human_only.se:
            out["zero_width"] = ZERO_WIDTH
        return out

    def within(self, low: float, high: float) -> Corrected:
        """Both intervals clipped to [low, high] (see :meth:`Interval.within`)."""
        return Corrected(
            self.ppi.within(low, high), self.human_only.within(low, high), self.judge_only, self.lam, self.sampled
        )


NOT_ESTIMABLE = "not estimable: no sampled item carries weight in this figure"
ZERO_WIDTH = (
    "the sampled human and judge labels differ by the same amount on every sampled item of each stratum (a "
    "perfectly matched sample): the residual variance estimate is 0, so the PPI interval has no width; it "
    "covers only the disagreement the sample shows (with n matched items and none in disagreement, a "
    "disagreement rate up to 3/n is still plausible at 95%): read the human-only interval beside it"
)


def not_estimable(judge_only: float, reason: str = NOT_ESTIMABLE) -> dict[str, Any]:
    """The entry of a figure that no human label informs: no estimate and no interval (a zero-width interval
    around the judge's value, or a human-only 0, would claim a certainty nothing supports)."""
    return {
        "estimable": False,
        "reason": reason,
        "ppi": None,
        "human_only": None,
        "judge_only": judge_only,
        "lambda": None,
        "sampled": 0,
    }


def natural_key(key: Hashable) -> tuple:
    """Sort key reading the digit runs of ``str(key)`` as numbers: conversation 2 before 10, '1_2' before '1_10'."""
    text = str(key)
    parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", text) if p)
    return parts, text  # the text breaks ties such as '01' and '1'


# ---------------------------------------------------------------------------------------- the design


def sorted_keys(keys: Collection) -> list:
    try:
        return sorted(keys)
    except TypeError:  # mixed types: order by type name, then text
        return sorted(keys, key=lambda k: (type(k).__name__, repr(k)))


class Design:
    """The human sample as a stratified simple random sample without replacement.

    ``population`` is every item the judge labelled; ``sampled`` the items with a human label.
    ``probability`` gives each sampled item's inclusion probability (default: a uniform sample,
    n / N each). ``strata`` gives each sampled item's stratum; by default items are grouped by
    their inclusion probability (exact for a uniform sample and for a stratified one whose strata
    have distinct sampling fractions; strata that share a fraction are merged, which treats them as
    one stratum under proportional allocation, a conservative variance). Within a stratum the
    probability must be constant, and N_h = n_h / pi_h is the stratum's population size.
    """

    def __init__(
        self,
        population: Collection[Item],
        sampled: Collection[Item],
        probability: Mapping[Item, float] | None = None,
        strata: Mapping[Item, Hashable] | None = None,
    ):
        pop = set(population)
        if not pop:
            raise AssessError("the judge labelled no item: there is nothing to estimate")
        self.items = sorted_keys(sampled)
        if not self.items:
            raise AssessError("the human sample is empty: at least two human labels are needed")
        outside = [i for i in self.items if i not in pop]
        if outside:
            raise AssessError(
                f"{len(outside)} human-labelled item(s) have no judge label, e.g. {outside[0]!r}: "
                "the population is the judge's items"
            )
        n = len(self.items)
        if probability is None:
            pi = np.full(n, n / len(pop))
        else:
            missing = [i for i in self.items if i not in probability]
            if missing:
                raise AssessError(f"sampled item {missing[0]!r} has no inclusion probability")
            pi = np.array([float(probability[i]) for i in self.items])
            bad = np.flatnonzero(~((pi > 0) & (pi <= 1)))
            if bad.size:
                raise AssessError(
                    f"inclusion probability of {self.items[bad[0]]!r} must be in (0, 1], found {pi[bad[0]]!r}"
                )
        if strata is None:
            keys: list = [round(float(p), 12) for p in pi]
        else:
            missing = [i for i in self.items if i not in strata]
            if missing:
                raise AssessError(f"sampled item {missing[0]!r} has no stratum")
            keys = [strata[i] for i in self.items]
        names = sorted_keys(set(keys))
        code = {k: h for h, k in enumerate(names)}
        self.stratum = np.array([code[k] for k in keys], dtype=np.intp)
        self.names = names
        H = len(names)
        self.n_h = np.bincount(self.stratum, minlength=H).astype(float)
        first = np.full(H, -1)
        first[self.stratum[::-1]] = np.arange(n)[::-1]
        pi_h = pi[first]
        if np.any(np.abs(pi - pi_h[self.stratum]) > 1e-9):
            h = int(self.stratum[np.flatnonzero(np.abs(pi - pi_h[self.stratum]) > 1e-9)[0]])
            raise AssessError(f"stratum {names[h]!r}: the inclusion probability differs between its sampled items")
        self.pi = pi
        self.N_h = self.n_h / pi_h
        fraction = np.minimum(self.n_h / self.N_h, 1.0)
        census = fraction > 1 - 1e-9
        lonely = (self.n_h < 2) & ~census
        if lonely.any():
            h = int(np.flatnonzero(lonely)[0])
            raise AssessError(
                f"stratum {names[h]!r} has one sampled item of about {self.N_h[h]:.0f}: "
                "a variance needs at least two per stratum (or the whole stratum)"
            )
        # c_h: Var(HT total) = sum_h c_h s_h^2, zero for a stratum judged in full.
        with np.errstate(divide="ignore", invalid="ignore"):
            self.c_h = np.where(census, 0.0, self.N_h**2 * (1 - fraction) / self.n_h)
        self.index = {item: k for k, item in enumerate(self.items)}
        self.population_size = len(pop)

    def _centred(self, x: np.ndarray) -> np.ndarray:
        """x minus its stratum mean (x: n or n x m)."""
        H = len(self.names)
        if x.ndim == 1:
            means = np.bincount(self.stratum, weights=x, minlength=H) / self.n_h
            return x - means[self.stratum]
        sums = np.zeros((H,) + x.shape[1:])
        np.add.at(sums, self.stratum, x)
        return x - (sums / self.n_h[:, None])[self.stratum]

    def covariance(self, a: np.ndarray, b: np.ndarray) -> float:
        """Estimated design covariance of the HT totals of a and b (values on the sampled items)."""
        H = len(self.names)
        prod = self._centred(a) * self._centred(b)
        with np.errstate(divide="ignore", invalid="ignore"):
            s_ab = np.bincount(self.stratum, weights=prod, minlength=H) / (self.n_h - 1)
        return float(np.sum(np.where(self.c_h > 0, self.c_h * s_ab, 0.0)))

    def total(self, z: np.ndarray) -> float:
        """Horvitz-Thompson total of z (values on the sampled items)."""
        return float(np.sum(z / self.pi))


def _tuned(design: Design, a: np.ndarray, b: np.ndarray, lam: float | None) -> tuple[float, float, float, float]:
    """Return (lam, Var_human, Var(lam), HT total of a - lam b) for human values a and judge values b."""
    v_aa = design.covariance(a, a)
    v_bb = design.covariance(b, b)
    v_ab = design.covariance(a, b)
    if lam is None:
        # The judge's values do not vary within strata: every lam gives the same variance; take the
        # original PPI (lam = 1), which is exact for a perfect judge.
        lam = min(1.0, max(0.0, v_ab / v_bb)) if v_bb > 1e-300 else 1.0
    var = v_aa - 2 * lam * v_ab + lam * lam * v_bb
    return lam, v_aa, max(var, 0.0), design.total(a - lam * b)


# ---------------------------------------------------------------------------------------- linear measures


def _values(labels: Labels, name: str) -> dict[Item, float]:
    out = {}
    for item, value in labels.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise AssessError(f"{name} label of {item!r} must be a number, found {value!r}")
        if not math.isfinite(float(value)):
            raise AssessError(f"{name} label of {item!r} must be finite, found {value!r}")
        out[item] = float(value)
    return out


def _check_labels(judge: Labels, human: Labels) -> tuple[dict, dict]:
    return _values(judge, "judge"), _values(human, "human")


def _share(design: Design, weights: Mapping[Item, float], judge: dict, human: dict, z: float) -> dict[str, Any]:
    """A share's entry (P@k, NtR recall, a topic's share): not estimable when no sampled item has a weight,
    else the tuned estimate with both intervals inside [0, 1]."""
    found = _linear(design, weights, judge, human, z, None)
    if not found.sampled:
        return not_estimable(found.judge_only)
    return found.within(0.0, 1.0).as_dict()


def _linear(
    design: Design, weights: Mapping[Item, float], judge: dict, human: dict, z: float, lam: float | None
) -> Corrected:
    judged_total = math.fsum(w * judge.get(i, 0.0) for i, w in weights.items())
    w = np.array([weights.get(i, 0.0) for i in design.items])
    a = w * np.array([human[i] for i in design.items])
    b = w * np.array([judge[i] for i in design.items])
    lam, v_human, v_ppi, residual = _tuned(design, a, b, lam)
    return Corrected(
        ppi=_interval(lam * judged_total + residual, v_ppi, z),
        human_only=_interval(design.total(a), v_human, z),
        judge_only=judged_total,
        lam=lam,
        sampled=int(np.count_nonzero(w)),
    )


def corrected_total(
    weights: Mapping[Item, float],
    judge: Labels,
    human: Labels,
    probability: Mapping[Item, float] | None = None,
    *,
    strata: Mapping[Item, Hashable] | None = None,
    alpha: float = 0.05,
    lam: float | None = None,
) -> Corrected:
    """Estimate theta = sum_i weights[i] * y_i (y = human label) from the judge on every item and
    humans on a sample; items without a weight weigh 0. ``lam`` fixes lambda (default: tuned)."""
    judge_v, human_v = _check_labels(judge, human)
    design = Design(judge_v, human_v, probability, strata)
    return _linear(design, weights, judge_v, human_v, z_value(alpha), lam)


def corrected_mean(
    judge: Labels,
    human: Labels,
    probability: Mapping[Item, float] | None = None,
    *,
    strata: Mapping[Item, Hashable] | None = None,
    alpha: float = 0.05,
    lam: float | None = None,
) -> Corrected:
    """Estimate the mean human label over every item the judge labelled (PPI for a mean)."""
    weights = dict.fromkeys(judge, 1.0 / max(len(judge), 1))
    return corrected_total(weights, judge, human, probability, strata=strata, alpha=alpha, lam=lam)


def at_least(labels: Labels, threshold: float) -> dict[Item, float]:
    """1.0 where the label is at or above ``threshold``, else 0.0."""
    return {i: float(v >= threshold) for i, v in _values(labels, "the").items()}


def corrected_shares(
    judge: Labels,
    human: Labels,
    probability: Mapping[Item, float] | None = None,
    *,
    threshold: float = 2,
    topic_of: Callable[[Item], Hashable] | None = None,
    strata: Mapping[Item, Hashable] | None = None,
    alpha: float = 0.05,
) -> dict[Hashable, dict[str, Any]]:
    """Each topic's share of items at or above ``threshold`` (a domain estimate under the design).

    A topic is a domain: its share is (1/N_t) * sum over its items, with the known size N_t and the
    variance computed over the whole sample (the topic's indicator times the residual), so topics
    with few sampled items get honest, wide intervals; a topic with no sampled item is not estimable
    (:func:`not_estimable`), and every share is reported inside [0, 1]. Topics in natural order
    (:func:`natural_key`: conversation 2 before 10). ``topic_of`` maps an item to its topic (default: the
    first element of an item tuple, ``(turn, passage)``).
    """
    topic_of = topic_of or (lambda item: item[0])
    f, y = at_least(judge, threshold), at_least(human, threshold)
    design = Design(f, y, probability, strata)
    z = z_value(alpha)
    members: dict[Hashable, list] = {}
    for item in f:
        members.setdefault(topic_of(item), []).append(item)
    out = {}
    for topic in sorted(members, key=natural_key):
        items = members[topic]
        weights = dict.fromkeys(items, 1.0 / len(items))
        out[topic] = {"items": len(items), **_share(design, weights, f, y, z)}
    return out


def _ranked(docs: Sequence[Hashable], k: int) -> list[Hashable]:
    """The first k distinct documents of a ranking (a repeated id counts once, at its first rank)."""
    seen: dict[Hashable, None] = {}
    for doc in docs:
        if len(seen) == k:
            break
        seen.setdefault(doc, None)
    return list(seen)


def _run_topics(run: Mapping[Hashable, Sequence[Hashable]], topics: set) -> list:
    """The run's topics that have labels (trec_eval's mean is over queries both in qrels and run)."""
    return [t for t in sorted_keys(run) if t in topics and run[t]]


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise AssessError(f"k must be a positive integer, found {k!r}")
    return k


def corrected_precision(
    runs: Runs,
    judge: Labels,
    human: Labels,
    probability: Mapping[Item, float] | None = None,
    *,
    k: int = 10,
    threshold: float = 2,
    strata: Mapping[Item, Hashable] | None = None,
    alpha: float = 0.05,
) -> dict[str, dict[str, Any]]:
    """P@k at ``threshold`` per run: mean over the run's labelled topics of (relevant in top k) / k.

    Items are ``(topic, doc)``. P@k is linear in the labels, weight 1/(k * topics) per retrieved
    item, so it gets the exact PPI estimate; retrieved documents nobody labelled count as not
    relevant (trec_eval) and are reported as ``unjudged``.
    """
    _check_k(k)
    f, y = at_least(judge, threshold), at_least(human, threshold)
    design = Design(f, y, probability, strata)
    z = z_value(alpha)
    topics = {item[0] for item in f}
    out = {}
    for name, run in runs.items():
        chosen = _run_topics(run, topics)
        weights: dict[Item, float] = {}
        unjudged = 0
        for t in chosen:
            for doc in _ranked(run[t], k):
                if (t, doc) in f:
                    weights[(t, doc)] = 1.0 / (k * len(chosen))
                else:
                    unjudged += 1
        entry = _share(design, weights, f, y, z) if chosen else None
        out[name] = {"topics": len(chosen), "unjudged": unjudged, "estimate": entry}
    return out


def corrected_ntr(
    gold: Mapping[Hashable, Collection[Hashable]],
    judge: Labels,
    human: Labels,
    probability: Mapping[Item, float] | None = None,
    *,
    strata: Mapping[Item, Hashable] | None = None,
    alpha: float = 0.05,
) -> dict[str, dict[str, Any]]:
    """CONE-RAG NtR recall per run: mean over the run's turns of (gold nuggets captured) / (gold nuggets).

    Items are ``(run, turn, nugget)`` with label 1 (captured) or 0. A run's turns are those it has
    a judged item for whose gold set is not empty; a gold nugget without a judge label counts as
    not captured (the library's ``unjudged="no"``). Linear: weight 1/(turns * |gold of turn|).
    """
    judge_v, human_v = _check_labels(judge, human)
    for source, labels in (("judge", judge_v), ("human", human_v)):
        bad = next((i for i, v in labels.items() if v not in (0.0, 1.0)), None)
        if bad is not None:
            raise AssessError(f"{source} NtR label of {bad!r} must be 0 or 1, found {labels[bad]!r}")
    design = Design(judge_v, human_v, probability, strata)
    z = z_value(alpha)
    turns_of: dict[Hashable, set] = {}
    for item in judge_v:
        run, turn = item[0], item[1]
        if gold.get(turn):
            turns_of.setdefault(run, set()).add(turn)
    out = {}
    for run in sorted_keys(turns_of):
        turns = sorted_keys(turns_of[run])
        weights = {(run, t, g): 1.0 / (len(turns) * len(set(gold[t]))) for t in turns for g in set(gold[t])}
        out[run] = {"turns": len(turns), "estimate": _share(design, weights, judge_v, human_v, z)}
    return out


# ---------------------------------------------------------------------------------------- nDCG@k


def _discounts(k: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, k + 2))


def _ideal(counts: np.ndarray, grades: np.ndarray, disc: np.ndarray) -> np.ndarray:
    """Ideal DCG@k from (possibly fractional) counts per grade: counts (..., G) for grades ascending.

    Positions are filled from the highest grade down; a fractional count fills a fraction of a
    position (so integer counts give trec_eval's ideal DCG exactly).
    """
    k = len(disc)
    cum_disc = np.concatenate([[0.0], np.cumsum(disc)])

    def filled(x):  # sum of discounts over positions [0, x), x real in [0, k]
        x = np.clip(x, 0, k)
        whole = np.floor(x).astype(int)
        frac = x - whole
        return cum_disc[whole] + frac * np.concatenate([disc, [0.0]])[whole]

    counts = np.maximum(counts, 0.0)
    above = np.zeros(counts.shape[:-1])
    ideal = np.zeros(counts.shape[:-1])
    for g in range(len(grades) - 1, -1, -1):
        if grades[g] <= 0:
            continue
        upto = above + counts[..., g]
        ideal += grades[g] * (filled(upto) - filled(above))
        above = upto
    return ideal


def corrected_ndcg(
    runs: Runs,
    judge: Labels,
    human: Labels,
    probability: Mapping[Item, float] | None = None,
    *,
    k: int = 3,
    strata: Mapping[Item, Hashable] | None = None,
    alpha: float = 0.05,
    bootstrap: int = 400,
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """nDCG@k per run (linear gain = grade, as trec_eval) from corrected gains, bootstrap intervals.

    Each item's corrected gain is lam*f_i + (y_i - lam*f_i)/pi_i if sampled, else lam*f_i
    (unbiased for y_i at fixed lam). A topic's DCG@k is linear in those gains (unbiased); its ideal
    DCG@k is computed from the topic's corrected count of items per grade (fractional counts fill
    fractional positions), a plug-in that is consistent but not unbiased. nDCG = DCG / ideal (0
    when the ideal is 0), averaged over the run's labelled topics. The interval is the normal one
    from a Rao-Wu rescaling bootstrap of the sample within strata (the same replicates for every
    lam); lam is chosen on the grid 0, 0.1, ..., 1 to minimise the bootstrap variance, so the
    interval is never wider than the human-only one (lam = 0) on the same replicates.
    """
    _check_k(k)
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, int) or bootstrap < 2:
        raise AssessError(f"bootstrap must be an integer >= 2, found {bootstrap!r}")
    judge_v, human_v = _check_labels(judge, human)
    design = Design(judge_v, human_v, probability, strata)
    z = z_value(alpha)
    grades = np.array(sorted(set(judge_v.values()) | set(human_v.values())))
    disc = _discounts(k)
    u = _rescaled_weights(design, bootstrap, np.random.default_rng(seed))  # (n, B + 1); column 0 = 1/pi
    reps = u.shape[1]
    y_s = np.array([human_v[i] for i in design.items])
    f_s = np.array([judge_v[i] for i in design.items])
    topic_list = sorted_keys({item[0] for item in judge_v})
    t_index = {t: j for j, t in enumerate(topic_list)}
    g_index = {g: j for j, g in enumerate(grades)}
    # Corrected grade counts per topic are linear in lam: counts(lam) = c_human + lam * c_judge,
    # with c_human = sum_S onehot(y) u and c_judge = (judge counts) - sum_S onehot(f) u.
    s_topic = np.array([t_index[i[0]] for i in design.items], dtype=np.intp)
    rows_n = np.arange(len(y_s))
    y_hot = np.zeros((len(y_s), len(grades)))
    y_hot[rows_n, [g_index[v] for v in y_s]] = 1
    f_hot = np.zeros_like(y_hot)
    f_hot[rows_n, [g_index[v] for v in f_s]] = 1
    c_human = np.zeros((len(topic_list), len(grades), reps))
    np.add.at(c_human, s_topic, y_hot[:, :, None] * u[:, None, :])
    c_judge = np.zeros_like(c_human)
    np.add.at(c_judge, s_topic, -f_hot[:, :, None] * u[:, None, :])
    f_counts = np.zeros((len(topic_list), len(grades)))
    np.add.at(f_counts, ([t_index[i[0]] for i in judge_v], [g_index[v] for v in judge_v.values()]), 1)
    c_judge += f_counts[:, :, None]
    lams = np.linspace(0, 1, 11)
    out: dict[str, dict[str, Any]] = {}
    for name, run in runs.items():
        chosen = _run_topics(run, t_index)
        if not chosen:
            out[name] = {"topics": 0, "unjudged": 0, "estimate": None}
            continue
        rows = np.array([t_index[t] for t in chosen])
        dcg_f = np.zeros(len(chosen))
        at_topic, at_sample, at_disc = [], [], []
        unjudged = 0
        for r, t in enumerate(chosen):
            for j, doc in enumerate(_ranked(run[t], k)):
                item = (t, doc)
                if item not in judge_v:
                    unjudged += 1
                    continue
                dcg_f[r] += disc[j] * judge_v[item]
                s = design.index.get(item)
                if s is not None:
                    at_topic.append(r)
                    at_sample.append(s)
                    at_disc.append(disc[j])
        # DCG(lam) per (topic, replicate) = d_human + lam * d_judge, the same decomposition
        d_human = np.zeros((len(chosen), reps))
        d_judge = np.repeat(dcg_f[:, None], reps, axis=1)
        if at_sample:
            weight = u[at_sample] * np.array(at_disc)[:, None]
            np.add.at(d_human, at_topic, y_s[at_sample, None] * weight)
            np.add.at(d_judge, at_topic, -f_s[at_sample, None] * weight)
        ch, cj = np.moveaxis(c_human[rows], 1, 2), np.moveaxis(c_judge[rows], 1, 2)  # (topics, reps, G)
        values = np.empty((len(lams), reps))
        for li, lam in enumerate(lams):
            ideal = _ideal(ch + lam * cj, grades, disc)
            dcg = d_human + lam * d_judge
            with np.errstate(divide="ignore", invalid="ignore"):
                values[li] = np.where(ideal > 0, dcg / ideal, 0.0).mean(axis=0)
        spread = values[:, 1:].std(axis=1, ddof=1)
        best = int(np.argmin(spread))
        judge_only = _judge_ndcg(dcg_f, f_counts[rows], grades, disc)
        if not at_sample:  # no sampled item in any top k of the run: its DCG has no human label
            entry = not_estimable(judge_only)
        else:
            entry = (
                Corrected(
                    ppi=_interval(values[best, 0], spread[best] ** 2, z),
                    human_only=_interval(values[0, 0], spread[0] ** 2, z),
                    judge_only=judge_only,
                    lam=float(lams[best]),
                    sampled=len(at_sample),
                )
                .within(0.0, 1.0)
                .as_dict()
            )
        out[name] = {"topics": len(chosen), "unjudged": unjudged, "estimate": entry}
    return out


def _judge_ndcg(dcg_f: np.ndarray, counts: np.ndarray, grades: np.ndarray, disc: np.ndarray) -> float:
    ideal = _ideal(counts, grades, disc)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.mean(np.where(ideal > 0, dcg_f / ideal, 0.0)))


def _rescaled_weights(design: Design, replicates: int, rng: np.random.Generator) -> np.ndarray:
    """HT weights of the sample (column 0) and of ``replicates`` Rao-Wu rescaling bootstrap replicates.

    Within stratum h, n_h - 1 draws with replacement give multiplicities m_i; the replicate weight is
    (1/pi_i) * (1 - a_h + a_h * m_i * n_h / (n_h - 1)) with a_h = sqrt(1 - n_h/N_h), which matches the
    stratified without-replacement variance of a linear estimator (Rao & Wu 1988). A stratum judged
    in full keeps its weights.
    """
    n = len(design.items)
    u = np.empty((n, replicates + 1))
    base = 1.0 / design.pi
    u[:, 0] = base
    for h in range(len(design.names)):
        members = np.flatnonzero(design.stratum == h)
        n_h = len(members)
        fraction = min(n_h / design.N_h[h], 1.0)
        if design.c_h[h] == 0 or n_h < 2:
            u[members, 1:] = base[members, None]
            continue
        m = rng.multinomial(n_h - 1, np.full(n_h, 1.0 / n_h), size=replicates).T  # (n_h, B)
        a = math.sqrt(1 - fraction)
        u[members, 1:] = base[members, None] * (1 - a + a * m * n_h / (n_h - 1))
    return u


# ---------------------------------------------------------------------------------------- coverage


def coverage(
    reference: Mapping[Item, int],
    judge: Mapping[Item, int],
    *,
    threshold: float = 2,
    sample: int,
    repeats: int,
    seed: int = 0,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Simulate how honest the intervals are: repeated uniform samples of reference labels.

    Over the items both sources labelled, the target is the share of reference labels at or above
    ``threshold`` (``true_value``). Each repeat draws ``sample`` items uniformly without
    replacement, estimates the share with PPI (judge label at or above the threshold as the
    prediction, tuned lam) and from the sample alone, and checks whether each interval holds the
    target. Returns exactly ``{"n_items", "sample", "repeats", "nominal", "true_value", "ppi":
    {"coverage", "mean_width"}, "human_only": {"coverage", "mean_width"}}``. Vectorised over
    repeats (in blocks, to bound memory).
    """
    for name, value, low in (("sample", sample, 2), ("repeats", repeats, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise AssessError(f"{name} must be an integer >= {low}, found {value!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise AssessError(f"seed must be an integer, found {seed!r}")
    z = z_value(alpha)
    shared = sorted_keys(set(reference) & set(judge))
    N = len(shared)
    if sample > N:
        raise AssessError(f"sample {sample} is larger than the {N} items both sources labelled")
    ref = at_least({i: reference[i] for i in shared}, threshold)
    jud = at_least({i: judge[i] for i in shared}, threshold)
    y = np.array([ref[i] for i in shared])
    f = np.array([jud[i] for i in shared])
    true_value = float(y.mean())
    f_mean = float(f.mean())
    fpc = 1 - sample / N
    rng = np.random.default_rng(seed)
    block = max(1, min(repeats, 4_000_000 // max(N, 1)))
    hits_ppi = hits_human = 0
    width_ppi = width_human = 0.0
    done = 0
    while done < repeats:
        r = min(block, repeats - done)
        if sample == N:
            idx = np.tile(np.arange(N), (r, 1))
        else:
            idx = np.argpartition(rng.random((r, N), dtype=np.float32), sample - 1, axis=1)[:, :sample]
        ys, fs = y[idx], f[idx]
        ym, fm = ys.mean(axis=1), fs.mean(axis=1)
        yc, fc = ys - ym[:, None], fs - fm[:, None]
        v_yy = (yc * yc).sum(axis=1) / (sample - 1)
        v_ff = (fc * fc).sum(axis=1) / (sample - 1)
        v_yf = (yc * fc).sum(axis=1) / (sample - 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            lam = np.where(v_ff > 0, np.clip(v_yf / v_ff, 0.0, 1.0), 1.0)
        est_ppi = lam * f_mean + ym - lam * fm
        var_ppi = np.maximum(v_yy - 2 * lam * v_yf + lam * lam * v_ff, 0.0) * fpc / sample
        half_ppi = z * np.sqrt(var_ppi)
        half_human = z * np.sqrt(v_yy * fpc / sample)
        tol = 1e-12
        hits_ppi += int(np.count_nonzero(np.abs(est_ppi - true_value) <= half_ppi + tol))
        hits_human += int(np.count_nonzero(np.abs(ym - true_value) <= half_human + tol))
        width_ppi += float(2 * half_ppi.sum())
        width_human += float(2 * half_human.sum())
        done += r
    return {
        "n_items": N,
        "sample": sample,
        "repeats": repeats,
        "nominal": round(1 - alpha, 10),
        "true_value": true_value,
        "ppi": {"coverage": hits_ppi / repeats, "mean_width": width_ppi / repeats},
        "human_only": {"coverage": hits_human / repeats, "mean_width": width_human / repeats},
    }
