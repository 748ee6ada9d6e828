"""The Alternative Annotator Test: may an LLM judge replace the human assessors?

Calderon, Reichart & Dror (2025), "The Alternative Annotator Test for LLM-as-a-Judge: How to
Statistically Justify Replacing Human Annotators with LLMs", ACL 2025, pp. 16051-16081
(arXiv:2501.10970), section 3. Choices below were checked against the authors' public code,
github.com/nitaytech/AltTest, ``alt_test_example.ipynb`` at commit
18428b1f4f34ac61c4978bc180263b90111e7337 (tests/fixtures/alt_test_reference.json holds its figures).

Leave one human out. For held-out human j and every item i that j graded, that at least one other
human graded and that the LLM graded, with H_i\\j the other humans' grades of item i:

    S(a, i, j)  = alignment of grade a with H_i\\j            (``scoring``; default neg_rmse)
    W^f_{i,j}   = 1[ S(llm_i, i, j) >= S(h_{j,i}, i, j) ]     (the LLM represents the others as well)
    W^h_{i,j}   = 1[ S(h_{j,i}, i, j) >= S(llm_i, i, j) ]     (ties count for both)
    rho^f_j     = mean_i W^f_{i,j},   rho^h_j = mean_i W^h_{i,j}   (advantage probabilities)
    d_{i,j}     = W^h_{i,j} - W^f_{i,j}  in {-1, 0, 1}

    H0_j: rho^f_j <= rho^h_j - epsilon    vs    H1_j: rho^f_j > rho^h_j - epsilon

tested by a one-sided one-sample t-test of mean(d_j) < epsilon. The m p-values are corrected with
Benjamini-Yekutieli at q (FDR under any dependence: the m tests share items and humans). Then

    omega (winning rate)            = (1/m) * #{ j : H0_j rejected }      passes  <=>  omega >= 0.5
    rho (average advantage prob.)   = (1/m) * sum_j rho^f_j               (for ranking LLM judges)

Scoring (S): ``"neg_rmse"`` = -sqrt(mean_k (a - h_k)^2) over the other humans' grades (the default:
the authors score their ordinal rating data sets, SummEval, 10k-prompts, CEBaB stars, lesion, this
way, and our 0-4 grades are ordinal); ``"accuracy"`` = share of the other humans giving exactly
grade a (their choice for nominal labels); or any callable ``(grade, others) -> float``.

Defaults and their provenance:
- ``epsilon = 0.2``: the paper's rule of thumb for expert annotators such as trained TREC/NIST
  assessors (0.15 skilled, 0.1 crowd workers: EPSILON_SKILLED, EPSILON_CROWD), and the default of
  the authors' ``alt_test``. Lower it when the humans agree little with each other.
- ``q = 0.05``: the paper's FDR level.
- ``min_items = 30``: a human is tested only on at least 30 items (the t-test's normality; the
  authors' ``min_instances_per_human``). The paper recommends 50-100 items (RECOMMENDED_ITEMS);
  ``below_recommended`` flags a computable result with a tested human under 50.

Degenerate cases: a human with fewer than ``min_items`` usable items is not tested and is listed in
``skipped`` (as in the authors' code; m counts tested humans only). If no human can be tested the
result is not computable: omega, rho and passes are None and ``reason`` says why (never a number).
When every d_{i,j} is the same value c the t statistic is +-infinity or undefined; p = 0 when
c < epsilon, else 1 (the sample leaves no doubt either way; undefined counts as not rejected).

Pure functions: no store, no Streamlit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assess import lazylibs
from assess.errors import AssessError

EPSILON_EXPERT = 0.2
EPSILON_SKILLED = 0.15
EPSILON_CROWD = 0.1
EPSILON = EPSILON_EXPERT
Q = 0.05
MIN_ITEMS = 30
RECOMMENDED_ITEMS = (50, 100)
PASS_OMEGA = 0.5
MIN_HUMANS = 3
"""The fewest tested humans whose outcome may be read as "can replace": with two, each human is scored against
one other person, and one win is already omega = 0.5 (the authors ask for three or more annotators)."""

Scoring = Callable[[Any, Sequence[Any]], float]


def accuracy(grade: Any, others: Sequence[Any]) -> float:
    """Share of the other humans' grades equal to ``grade``."""
    return sum(grade == h for h in others) / len(others)


def neg_rmse(grade: Any, others: Sequence[Any]) -> float:
    """Minus the root mean squared difference between ``grade`` and the other humans' grades."""
    return -math.sqrt(sum((float(grade) - float(h)) ** 2 for h in others) / len(others))


SCORINGS: dict[str, Scoring] = {"neg_rmse": neg_rmse, "accuracy": accuracy}
SCORING = "neg_rmse"


@dataclass(frozen=True)
class AnnotatorTest:
    """One held-out human's comparison with the LLM."""

    annotator: Hashable
    items: int
    llm_advantage: float  # rho^f_j
    human_advantage: float  # rho^h_j
    p_value: float
    corrected_p: float  # Benjamini-Yekutieli adjusted, capped at 1
    rejected: bool  # the LLM wins against this human

    def as_dict(self) -> dict[str, Any]:
        return {
            "annotator": self.annotator,
            "items": self.items,
            "llm_advantage": self.llm_advantage,
            "human_advantage": self.human_advantage,
            "p_value": self.p_value,
            "corrected_p": self.corrected_p,
            "rejected": self.rejected,
        }


@dataclass(frozen=True)
class AltTest:
    """The alt-test's outcome; ``omega``, ``rho`` and ``passes`` are None when not computable."""

    rows: tuple[AnnotatorTest, ...]
    skipped: tuple[tuple[Hashable, int], ...]  # (human, usable items) below min_items
    omega: float | None
    rho: float | None
    passes: bool | None
    epsilon: float
    q: float
    min_items: int
    scoring: str
    reason: str | None = None

    @property
    def computable(self) -> bool:
        return self.reason is None

    @property
    def below_recommended(self) -> bool:
        """Some tested human has fewer items than the paper's recommended 50 (computable, but weak)."""
        return any(r.items < RECOMMENDED_ITEMS[0] for r in self.rows)

    def as_dict(self) -> dict[str, Any]:
        return {
            "computable": self.computable,
            "reason": self.reason,
            "below_recommended": self.below_recommended,
            "omega": self.omega,
            "rho": self.rho,
            "passes": self.passes,
            "epsilon": self.epsilon,
            "q": self.q,
            "min_items": self.min_items,
            "scoring": self.scoring,
            "annotators": [r.as_dict() for r in self.rows],
            "skipped": [{"annotator": a, "items": n} for a, n in self.skipped],
        }


def _order(keys) -> list:
    try:
        return sorted(keys)
    except TypeError:  # mixed key types
        return sorted(keys, key=lambda k: (type(k).__name__, repr(k)))


def _one_sided_p(d: Sequence[int], epsilon: float) -> float:
    """p-value of the one-sample t-test of H0 mean(d) >= epsilon against mean(d) < epsilon."""
    if all(x == d[0] for x in d):
        return 0.0 if d[0] < epsilon else 1.0
    ttest_1samp = lazylibs.scipy_stats().ttest_1samp

    return float(ttest_1samp(d, epsilon, alternative="less").pvalue)


def _resolve_scoring(scoring: str | Scoring) -> tuple[Scoring, str]:
    if callable(scoring):
        return scoring, getattr(scoring, "__name__", "custom")
    if scoring not in SCORINGS:
        raise AssessError(f"unknown alt-test scoring {scoring!r}: expected one of {sorted(SCORINGS)} or a function")
    return SCORINGS[scoring], scoring


def alt_test(
    humans: Mapping[Hashable, Mapping[Hashable, Any]],
    llm: Mapping[Hashable, Any],
    *,
    epsilon: float = EPSILON,
    q: float = Q,
    min_items: int = MIN_ITEMS,
    scoring: str | Scoring = SCORING,
) -> AltTest:
    """Run the alt-test on human grades ``item -> {annotator: grade}`` and LLM grades ``item -> grade``."""
    if isinstance(epsilon, bool) or not (isinstance(epsilon, int | float) and 0 <= epsilon <= 1):
        raise AssessError(f"epsilon must be a number in [0, 1], found {epsilon!r}")
    if isinstance(q, bool) or not (isinstance(q, int | float) and 0 < q < 1):
        raise AssessError(f"q must be a number in (0, 1), found {q!r}")
    if isinstance(min_items, bool) or not isinstance(min_items, int) or min_items < 2:
        raise AssessError(f"min_items must be an integer of at least 2, found {min_items!r}")
    score, scoring_name = _resolve_scoring(scoring)
    epsilon, q = float(epsilon), float(q)

    # usable items: graded by the LLM and by at least two humans
    usable: dict[Hashable, Mapping[Hashable, Any]] = {}
    for item, grades in humans.items():
        if not isinstance(grades, Mapping):
            raise AssessError(
                f"human grades of item {item!r} must map annotator -> grade, found {type(grades).__name__}"
            )
        present = {a: g for a, g in grades.items() if g is not None}
        if len(present) >= 2 and item in llm and llm[item] is not None:
            usable[item] = present
    annotators = _order({a for grades in usable.values() for a in grades})

    rows_data = []
    skipped = []
    for j in annotators:
        items = _order(i for i, grades in usable.items() if j in grades)
        if len(items) < min_items:
            skipped.append((j, len(items)))
            continue
        w_llm, w_human = [], []
        for i in items:
            others = [g for a, g in usable[i].items() if a != j]
            try:
                s_llm, s_human = float(score(llm[i], others)), float(score(usable[i][j], others))
            except (TypeError, ValueError) as exc:
                raise AssessError(
                    f"item {i!r}: cannot score grades (LLM {llm[i]!r}, human {j!r} {usable[i][j]!r}, "
                    f"others {others!r}) with {scoring_name}: {exc}"
                ) from None
            w_llm.append(int(s_llm >= s_human))
            w_human.append(int(s_human >= s_llm))
        d = [h - f for h, f in zip(w_human, w_llm, strict=True)]
        rows_data.append((j, len(items), sum(w_llm) / len(items), sum(w_human) / len(items), _one_sided_p(d, epsilon)))

    common = {"epsilon": epsilon, "q": q, "min_items": min_items, "scoring": scoring_name}
    if not rows_data:
        most = max((n for _, n in skipped), default=0)
        reason = (
            f"not computable: needs at least 2 humans sharing at least {min_items} items that the LLM also "
            f"graded; found {len(annotators)} human(s) on shared items, the most any one has is {most}"
        )
        return AltTest((), tuple(skipped), None, None, None, reason=reason, **common)

    multipletests = lazylibs.statsmodels_stats().multitest.multipletests

    reject, corrected, _, _ = multipletests([r[4] for r in rows_data], alpha=q, method="fdr_by")
    rows = tuple(
        AnnotatorTest(j, n, rho_f, rho_h, p, float(c), bool(rej))
        for (j, n, rho_f, rho_h, p), c, rej in zip(rows_data, corrected, reject, strict=True)
    )
    omega = sum(r.rejected for r in rows) / len(rows)
    rho = math.fsum(r.llm_advantage for r in rows) / len(rows)  # fsum: exact, so independent of order
    return AltTest(rows, tuple(skipped), omega, rho, omega >= PASS_OMEGA, **common)
