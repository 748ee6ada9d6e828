"""ICC(2,1) and ICC(3,1) against Shrout & Fleiss (1979) and against statsmodels' two-way ANOVA (the peer: pingouin,
whose `intraclass_corr` computes the same from the same mean squares, pulls matplotlib, seaborn and xarray)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from statsmodels.stats.anova import anova_lm

from assess.measures.agreement import agreement_matrix, agreement_report, icc

# Shrout & Fleiss (1979), Psychological Bulletin 86(2), Table 2: 6 targets rated by 4 judges; their Table 4 gives
# ICC(1,1) = .17, ICC(2,1) = .29, ICC(3,1) = .71
SHROUT_FLEISS = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]


def statsmodels_icc(table) -> dict[str, float]:
    """ICC from the mean squares of statsmodels' OLS two-way ANOVA (items and raters as factors, no interaction)."""
    y = np.asarray(table, dtype=float)
    n, k = y.shape
    long = pd.DataFrame(
        {
            "score": y.ravel(),
            "item": np.repeat(np.arange(n), k).astype(str),
            "rater": np.tile(np.arange(k), n).astype(str),
        }
    )
    anova = anova_lm(smf.ols("score ~ C(item) + C(rater)", data=long).fit())
    ms = anova["sum_sq"] / anova["df"]
    msr, msc, mse = ms["C(item)"], ms["C(rater)"], ms["Residual"]
    return {
        "icc_2_1": (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n),
        "icc_3_1": (msr - mse) / (msr + (k - 1) * mse),
    }


def test_shrout_fleiss_table():
    ours = icc(SHROUT_FLEISS)
    assert (round(ours["icc_2_1"], 2), round(ours["icc_3_1"], 2)) == (0.29, 0.71)
    assert ours == pytest.approx(statsmodels_icc(SHROUT_FLEISS), abs=1e-12)


def test_random_tables_and_undefined_cases():
    rng = np.random.default_rng(5)
    for n, k in ((30, 2), (12, 5)):
        table = rng.integers(0, 5, size=(n, k)) + rng.integers(0, 2, size=(n, 1))
        assert icc(table) == pytest.approx(statsmodels_icc(table), abs=1e-12)
    assert icc([[2, 2], [2, 2]]) == {"icc_2_1": None, "icc_3_1": None}  # no variance at all
    assert icc([[1, 2]]) == {"icc_2_1": None, "icc_3_1": None}  # one item
    report = agreement_report(["a", "b"], ["a", "a"], scale=("a", "b"), ci=False)
    assert (report["icc_2_1"], report["icc_3_1"]) == (None, None)  # labels that are not numbers


def test_agreement_matrix_icc_from_confusion_cells():
    rng = np.random.default_rng(1)
    a = {i: int(rng.integers(0, 4)) for i in range(60)}
    b = {i: min(3, a[i] + int(rng.integers(0, 2))) for i in range(60)}  # b grades up to one higher
    pair = agreement_matrix({"x": a, "y": b}, scale=(0, 1, 2, 3), bootstrap=0)["pairs"][0]
    peer = statsmodels_icc([[a[i], b[i]] for i in range(60)])
    assert (pair["icc_2_1"], pair["icc_3_1"]) == pytest.approx((peer["icc_2_1"], peer["icc_3_1"]), abs=1e-12)
    words = agreement_matrix({"x": {1: "a"}, "y": {1: "a"}}, scale=("a", "b"), threshold=None, bootstrap=0)
    assert words["pairs"][0]["icc_2_1"] is None
