"""The Alternative Annotator Test (assess/measures/alt_test.py): by hand, against the authors' code, by
simulation, and its invariants."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from assess.errors import AssessError
from assess.measures import alt_test as at
from assess.measures.alt_test import alt_test


def _fixture(name: str) -> Path:
    root = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
    return root / "tests" / "fixtures" / name


# ---------------------------------------------------------------------------------------- by hand

# Three humans and an LLM on five items (0-4 grades), scored by exact-match accuracy:
#   item  a  b  c  LLM
#     1   2  2  2   2
#     2   3  3  1   3
#     3   0  1  1   1
#     4   4  3  3   4
#     5   1  2  2   2
# Held out a: others (b,c) per item [2,2] [3,1] [1,1] [3,3] [2,2];
#   S(LLM) = 1 .5 1 0 1, S(a) = 1 .5 0 0 0  ->  W^f = 1 1 1 1 1, W^h = 1 1 0 1 0, d_a = 0 0 -1 0 -1
# Held out b: others (a,c) [2,2] [3,1] [0,1] [4,3] [1,2]; LLM and b score the same on every item,
#   d_b = 0 0 0 0 0 (no variance: p = 0 since 0 < epsilon)
# Held out c: others (a,b) [2,2] [3,3] [0,1] [4,3] [1,2]; S(LLM) = 1 1 .5 .5 .5, S(c) = 1 0 .5 .5 .5,
#   d_c = 0 -1 0 0 0
# rho^f = 1 for all three; rho^h = 3/5, 1, 4/5.
# d_a: mean -2/5, sample variance 3/10 -> t = (-2/5 - eps) / sqrt(3/50), 4 df
# d_c: mean -1/5, sample variance 1/5  -> t = (-1/5 - eps) / sqrt(1/25), 4 df
HAND_HUMANS = {
    1: {"a": 2, "b": 2, "c": 2},
    2: {"a": 3, "b": 3, "c": 1},
    3: {"a": 0, "b": 1, "c": 1},
    4: {"a": 4, "b": 3, "c": 3},
    5: {"a": 1, "b": 2, "c": 2},
}
HAND_LLM = {1: 2, 2: 3, 3: 1, 4: 4, 5: 2}
H3 = 1 + 1 / 2 + 1 / 3  # the Benjamini-Yekutieli harmonic factor for m = 3


def _by_adjusted(p: dict[str, float]) -> dict[str, float]:
    """Benjamini-Yekutieli adjusted p-values written out: min over l >= k of m H_m p_(l) / l, capped at 1."""
    order = sorted(p, key=p.get)
    m = len(order)
    h = sum(1 / k for k in range(1, m + 1))
    raw = [m * h * p[name] / (k + 1) for k, name in enumerate(order)]
    return {name: min(1.0, min(raw[k:])) for k, name in enumerate(order)}


def test_hand_worked_case_at_epsilon_0_2():
    out = alt_test(HAND_HUMANS, HAND_LLM, epsilon=0.2, min_items=5, scoring="accuracy")
    p_a = stats.t.cdf((-0.4 - 0.2) / math.sqrt(0.3 / 5), df=4)
    p_c = stats.t.cdf((-0.2 - 0.2) / math.sqrt(0.2 / 5), df=4)
    assert p_a == pytest.approx(0.0352419985, abs=1e-9)  # t = -2.449490
    assert p_c == pytest.approx(0.0580582618, abs=1e-9)  # t = -2
    rows = {r.annotator: r for r in out.rows}
    assert [r.annotator for r in out.rows] == ["a", "b", "c"]
    assert {n: r.items for n, r in rows.items()} == {"a": 5, "b": 5, "c": 5}
    assert {n: r.llm_advantage for n, r in rows.items()} == {"a": 1.0, "b": 1.0, "c": 1.0}
    assert {n: r.human_advantage for n, r in rows.items()} == pytest.approx({"a": 0.6, "b": 1.0, "c": 0.8})
    assert rows["a"].p_value == pytest.approx(p_a, rel=1e-12)
    assert rows["b"].p_value == 0.0
    assert rows["c"].p_value == pytest.approx(p_c, rel=1e-12)
    # BY thresholds k/3 * 0.05 / H3 = 0.00909, 0.01818, 0.02727: only b (p = 0) is rejected
    adjusted = _by_adjusted({"a": p_a, "b": 0.0, "c": p_c})
    assert adjusted["a"] == pytest.approx(3 * H3 / 2 * p_a)  # 0.0969155
    assert adjusted["c"] == pytest.approx(H3 * p_c)  # 0.1064401
    assert {n: r.corrected_p for n, r in rows.items()} == pytest.approx(adjusted, rel=1e-12)
    assert {n: r.rejected for n, r in rows.items()} == {"a": False, "b": True, "c": False}
    assert out.omega == pytest.approx(1 / 3)
    assert out.rho == 1.0
    assert out.passes is False
    assert out.computable and out.reason is None and out.skipped == ()
    assert out.below_recommended  # 5 items < 50
    assert (out.epsilon, out.q, out.min_items, out.scoring) == (0.2, 0.05, 5, "accuracy")


def test_hand_worked_case_passes_at_a_larger_margin():
    out = alt_test(HAND_HUMANS, HAND_LLM, epsilon=0.5, min_items=5, scoring="accuracy")
    p_a = stats.t.cdf((-0.4 - 0.5) / math.sqrt(0.3 / 5), df=4)  # 0.010656
    p_c = stats.t.cdf((-0.2 - 0.5) / math.sqrt(0.2 / 5), df=4)  # 0.012448
    rows = {r.annotator: r for r in out.rows}
    assert rows["a"].p_value == pytest.approx(p_a, rel=1e-12)
    assert rows["c"].p_value == pytest.approx(p_c, rel=1e-12)
    # sorted 0, 0.010656, 0.012448 against 0.00909, 0.01818, 0.02727: the largest k = 3 passes, all rejected
    assert {n: r.corrected_p for n, r in rows.items()} == pytest.approx(
        _by_adjusted({"a": p_a, "b": 0.0, "c": p_c}), rel=1e-12
    )
    assert all(r.rejected for r in out.rows)
    assert (out.omega, out.rho, out.passes) == (1.0, 1.0, True)


def test_neg_rmse_scores_by_hand():
    assert at.neg_rmse(2, [2, 4]) == pytest.approx(-math.sqrt(2))
    assert at.neg_rmse(3, [1]) == -2.0
    assert at.accuracy(2, [2, 4, 2]) == pytest.approx(2 / 3)
    # grades equally far on either side of the others score the same (a tie, counted for both)
    assert at.neg_rmse(4, [4, 3]) == at.neg_rmse(3, [4, 3]) == -math.sqrt(1 / 2)


def test_default_scoring_is_neg_rmse():
    out = alt_test(HAND_HUMANS, HAND_LLM, min_items=5)
    assert (out.scoring, out.epsilon, out.q) == ("neg_rmse", at.EPSILON, at.Q) == ("neg_rmse", 0.2, 0.05)
    assert at.MIN_ITEMS == 30
    # by neg_rmse the hand case gives the same wins: held out a, the LLM wins items 3 and 5 (0 vs -1);
    # held out c, item 2 (0 vs -2); item 4 held out c: LLM 4 and c 3 against [4, 3] tie at -sqrt(1/2)
    assert {r.annotator: r.human_advantage for r in out.rows} == pytest.approx({"a": 0.6, "b": 1.0, "c": 0.8})


# ---------------------------------------------------------------------------------------- not computable


def test_one_human_is_not_computable():
    humans = {i: {"a": i % 5} for i in range(60)}
    out = alt_test(humans, dict.fromkeys(range(60), 1))
    assert not out.computable
    assert (out.omega, out.rho, out.passes, out.rows) == (None, None, None, ())
    assert out.reason == (
        "not computable: needs at least 2 humans sharing at least 30 items that the LLM also graded; "
        "found 0 human(s) on shared items, the most any one has is 0"
    )
    assert out.as_dict()["computable"] is False and out.as_dict()["omega"] is None


def test_too_few_shared_items_is_not_computable():
    humans = {i: {"a": 1, "b": 2} for i in range(29)}
    humans.update({100 + i: {"a": 1} for i in range(40)})  # a alone: not shared
    llm = dict.fromkeys([*range(29), *range(100, 140)], 1)
    out = alt_test(humans, llm)
    assert out.reason.startswith("not computable: needs at least 2 humans sharing at least 30 items")
    assert out.reason.endswith("found 2 human(s) on shared items, the most any one has is 29")
    assert out.skipped == (("a", 29), ("b", 29))
    assert out.omega is None and out.passes is None


def test_items_the_llm_did_not_grade_do_not_count():
    humans = {i: {"a": 1, "b": 1} for i in range(40)}
    llm = dict.fromkeys(range(29), 1)  # 11 items without an LLM grade
    out = alt_test(humans, llm)
    assert not out.computable and out.skipped == (("a", 29), ("b", 29))
    llm = {i: (1 if i < 30 else None) for i in range(40)}
    out = alt_test(humans, llm)
    assert [r.items for r in out.rows] == [30, 30]


def test_a_human_below_min_items_is_skipped_and_not_counted():
    rng = np.random.default_rng(7)
    humans = {i: {"a": int(g), "b": int(g), "c": int(g)} for i, g in enumerate(rng.integers(0, 5, 40))}
    for i in range(10):
        humans[i]["d"] = humans[i]["a"]
    llm = {i: g["a"] for i, g in humans.items()}
    out = alt_test(humans, llm)
    assert [r.annotator for r in out.rows] == ["a", "b", "c"]
    assert out.skipped == (("d", 10),)
    # LLM agrees with everyone: d = 0 everywhere, p = 0, all three rejected
    assert (out.omega, out.rho, out.passes) == (1.0, 1.0, True)
    assert out.below_recommended and out.as_dict()["below_recommended"] is True  # 40 items < 50
    assert out.as_dict()["skipped"] == [{"annotator": "d", "items": 10}]


# ---------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"epsilon": -0.1}, "epsilon must be a number in [0, 1], found -0.1"),
        ({"epsilon": 1.5}, "epsilon must be a number in [0, 1], found 1.5"),
        ({"epsilon": True}, "epsilon must be a number in [0, 1], found True"),
        ({"q": 0}, "q must be a number in (0, 1), found 0"),
        ({"min_items": 1}, "min_items must be an integer of at least 2, found 1"),
        ({"scoring": "kappa"}, "unknown alt-test scoring 'kappa': expected one of ['accuracy', 'neg_rmse']"),
    ],
)
def test_bad_parameters_are_refused(kwargs, message):
    with pytest.raises(AssessError) as err:
        alt_test(HAND_HUMANS, HAND_LLM, **kwargs)
    assert str(err.value).startswith(message)


def test_unscorable_grades_name_the_item():
    humans = {i: {"a": 1, "b": 2} for i in range(3)}
    humans[1] = {"a": "high", "b": 2}
    with pytest.raises(AssessError, match=r"^item 1: cannot score grades \(LLM 1, human 'a' 'high'"):
        alt_test(humans, dict.fromkeys(range(3), 1), min_items=2)
    with pytest.raises(AssessError, match="human grades of item 0 must map annotator -> grade, found list"):
        alt_test({0: [1, 2]}, {0: 1})


def test_custom_scoring_function():
    def neg_abs(grade, others):
        return -sum(abs(grade - h) for h in others) / len(others)

    out = alt_test(HAND_HUMANS, HAND_LLM, min_items=5, scoring=neg_abs)
    assert out.scoring == "neg_abs"
    assert len(out.rows) == 3


# ---------------------------------------------------------------------------------------- the authors' code


ITEMS = {  # items per tested human (d in four_humans_partial has 28 and is skipped)
    "three_humans_neg_rmse": [60, 60, 60],
    "three_humans_accuracy": [60, 60, 60],
    "four_humans_partial": [80, 80, 56],
    "noisy_llm_fails": [70, 70, 70],
}


def test_agrees_with_the_authors_reference_code():
    data = json.loads(_fixture("alt_test_reference.json").read_text())
    assert "18428b1f4f34ac61c4978bc180263b90111e7337" in data["provenance"]["reference"]
    assert len(data["cases"]) == 4
    for case in data["cases"]:
        out = alt_test(case["humans"], case["llm"], epsilon=case["epsilon"], scoring=case["scoring"])
        want = case["expected"]
        assert out.omega == pytest.approx(want["omega"], abs=1e-12), case["name"]
        assert out.rho == pytest.approx(want["rho"], abs=1e-12), case["name"]
        assert out.passes is want["passes"], case["name"]
        assert {r.annotator: r.p_value for r in out.rows} == pytest.approx(want["p_values"], rel=1e-9, abs=1e-15)
        assert {r.annotator: r.llm_advantage for r in out.rows} == pytest.approx(want["llm_advantage"], abs=1e-12)
        assert [r.items for r in out.rows] == ITEMS[case["name"]], case["name"]
        assert not out.below_recommended, case["name"]
    assert [c["expected"]["passes"] for c in data["cases"]] == [True, False, False, False]
    skipped = alt_test(data["cases"][2]["humans"], data["cases"][2]["llm"], epsilon=0.15).skipped
    assert skipped == (("d", 28),)  # the reference printed "Skipping annotator d with only 28 instances < 30."


# ---------------------------------------------------------------------------------------- simulation


def _simulate(seed: int, items: int, humans: int, human_noise: float, llm_noise: float, categories: int = 5):
    """The authors' noise model (paper appendix C): a gold label from Dirichlet(1) priors; each annotator
    draws from (1 - noise) * onehot(gold) + noise * priors."""
    rng = np.random.default_rng(seed)
    priors = rng.dirichlet(np.ones(categories))

    def label(gold: int, noise: float) -> int:
        p = noise * priors
        p[gold] += 1 - noise
        return int(rng.choice(categories, p=p / p.sum()))

    grades, llm = {}, {}
    for i in range(items):
        gold = int(rng.choice(categories, p=priors))
        grades[f"i{i}"] = {f"h{k}": label(gold, human_noise) for k in range(humans)}
        llm[f"i{i}"] = label(gold, llm_noise)
    return grades, llm


@pytest.mark.parametrize("seed", range(5))
def test_an_llm_like_one_more_human_passes_and_a_noisy_one_fails(seed):
    # 200 items: at 100 such an LLM passes in 8 of seeds 0-9 (the t-tests' power grows with the items,
    # as in the paper's simulations), at 200 in all ten
    humans, llm = _simulate(seed, items=200, humans=3, human_noise=0.3, llm_noise=0.3)
    for scoring in ("accuracy", "neg_rmse"):
        like_human = alt_test(humans, llm, epsilon=at.EPSILON, scoring=scoring)
        assert like_human.passes, (scoring, like_human)
        # with no margin the same LLM cannot beat humans it merely equals
        assert alt_test(humans, llm, epsilon=0.0, scoring=scoring).omega <= 1 / 3
    same_humans, noisy = _simulate(seed, items=200, humans=3, human_noise=0.3, llm_noise=1.0)  # LLM guesses
    assert same_humans == humans
    noisy_out = alt_test(humans, noisy, epsilon=at.EPSILON)
    assert noisy_out.omega == 0.0 and noisy_out.passes is False
    assert noisy_out.rho < like_human.rho


# ---------------------------------------------------------------------------------------- invariants

grades = st.integers(0, 4)


@st.composite
def labelled(draw):
    n_items = draw(st.integers(2, 25))
    names = draw(st.lists(st.text("abcdef", min_size=1, max_size=3), min_size=2, max_size=4, unique=True))
    humans = {i: {a: draw(grades) for a in names if draw(st.booleans()) or a in names[:2]} for i in range(n_items)}
    llm = {i: draw(grades) for i in range(n_items)}
    return humans, llm, names


@settings(max_examples=80, deadline=None)
@given(labelled(), st.sampled_from(["accuracy", "neg_rmse"]), st.floats(0, 1))
def test_omega_and_rho_lie_in_0_1(data, scoring, epsilon):
    humans, llm, _ = data
    out = alt_test(humans, llm, epsilon=epsilon, min_items=2, scoring=scoring)
    assert out.computable  # the first two names grade every item
    assert 0 <= out.omega <= 1 and 0 <= out.rho <= 1
    assert out.passes == (out.omega >= 0.5)
    for r in out.rows:
        assert 0 <= r.p_value <= 1 and r.p_value <= r.corrected_p <= 1
        assert r.llm_advantage + r.human_advantage >= 1  # every item is a win, a loss or a tie (both win)


@settings(max_examples=60, deadline=None)
@given(labelled(), st.randoms(use_true_random=False), st.sampled_from(["accuracy", "neg_rmse"]))
def test_relabelling_annotators_changes_nothing(data, rnd, scoring):
    humans, llm, names = data
    new = [f"x{k}" for k in range(len(names))]
    rnd.shuffle(new)
    rename = dict(zip(names, new, strict=True))
    renamed = {i: {rename[a]: g for a, g in row.items()} for i, row in humans.items()}
    a = alt_test(humans, llm, min_items=2, scoring=scoring)
    b = alt_test(renamed, llm, min_items=2, scoring=scoring)
    assert (a.omega, a.rho, a.passes) == (b.omega, b.rho, b.passes)
    assert {rename[r.annotator]: (r.p_value, r.rejected) for r in a.rows} == {
        r.annotator: (r.p_value, r.rejected) for r in b.rows
    }


@settings(max_examples=60, deadline=None)
@given(labelled(), st.floats(0, 1), st.floats(0, 1), st.sampled_from(["accuracy", "neg_rmse"]))
def test_a_larger_margin_never_turns_a_pass_into_a_fail(data, e1, e2, scoring):
    humans, llm, _ = data
    low, high = sorted((e1, e2))
    a = alt_test(humans, llm, epsilon=low, min_items=2, scoring=scoring)
    b = alt_test(humans, llm, epsilon=high, min_items=2, scoring=scoring)
    assert a.omega <= b.omega
    assert not a.passes or b.passes
    assert {r.annotator for r in a.rows if r.rejected} <= {r.annotator for r in b.rows if r.rejected}
