"""Nugget span agreement (assess.measures.span_agreement): a hand-worked case, and kappa against
scikit-learn's ``cohen_kappa_score`` on the same unit labels."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from assess.measures.span_agreement import Mark, span_agreement, unit_labels

TEXTS = {"p1": "0123456789", "p2": "abcdefghij", "p3": "aa bb  cc d"}


def test_hand_worked_pair():
    # turn t1, passages p1 and p2 (10 characters each). a marks p1 0..3 and 5..8; b marks p1 0..3 and 6..10
    # and p2 2..4. c marks only in t2, a turn neither a nor b marked: no pair with c. a's t3 span is left
    # out too (b did not mark t3).
    # exact: one shared span (p1 0..3) of 2 + 3: F1 = 2*1/5 = 0.4.
    # overlap: both of a's spans touch one of b's (P = 1); b's p2 span touches none of a's (R = 2/3):
    # F1 = 2 * 1 * 2/3 / (1 + 2/3) = 0.8.
    # characters: a 1110011100 0000000000, b 1110001111 0011000000: 15 of 20 agree (p_o = 0.75);
    # p(a=1) = 6/20, p(b=1) = 9/20, p_e = 0.3*0.45 + 0.7*0.55 = 0.52; kappa = 0.23 / 0.48 = 0.4791666...
    marks = [
        Mark("a", "t1", "p1", 0, 3),
        Mark("a", "t1", "p1", 5, 8),
        Mark("a", "t3", "p3", 0, 2),
        Mark("b", "t1", "p1", 0, 3),
        Mark("b", "t1", "p1", 6, 10),
        Mark("b", "t1", "p2", 2, 4),
        Mark("c", "t2", "p3", 0, 2),
    ]
    (pair,) = span_agreement(marks, TEXTS)
    assert pair == {
        "a": "a",
        "b": "b",
        "turns": 1,
        "passages": 2,
        "spans_a": 2,
        "spans_b": 3,
        "exact_f1": pytest.approx(0.4),
        "overlap_f1": pytest.approx(0.8),
        "unit": "char",
        "units": 20,
        "kappa": pytest.approx(0.23 / 0.48),
    }


def test_word_units_hand_worked():
    # "aa bb  cc d": words aa, bb, cc, d. A span touching any character of a word marks the word.
    assert unit_labels(TEXTS["p3"], [(1, 4)], "word") == [1, 1, 0, 0]
    assert unit_labels(TEXTS["p3"], [(5, 7)], "word") == [0, 0, 0, 0]  # the two spaces alone: no word
    assert unit_labels(TEXTS["p3"], [(5, 8)], "word") == [0, 0, 1, 0]  # the spaces and c
    (pair,) = span_agreement([Mark("a", "t", "p3", 1, 4), Mark("b", "t", "p3", 0, 2)], TEXTS, "word")
    # words a 1100, b 1000: 3 of 4 agree; p_e = 0.5*0.25 + 0.5*0.75 = 0.5; kappa = 0.25/0.5 = 0.5
    assert (pair["units"], pair["kappa"]) == (4, pytest.approx(0.5))


SPANS = st.lists(
    st.tuples(st.sampled_from(["p1", "p2", "p3"]), st.integers(0, 9), st.integers(1, 10)).filter(lambda s: s[1] < s[2]),
    min_size=1,
    max_size=5,
)


@settings(max_examples=80, deadline=None)
@given(SPANS, SPANS, st.sampled_from(["char", "word"]))
def test_kappa_equals_sklearn_on_the_unit_labels(spans_a, spans_b, unit):
    marks = [Mark("a", "t", p, s, e) for p, s, e in spans_a] + [Mark("b", "t", p, s, e) for p, s, e in spans_b]
    (pair,) = span_agreement(marks, TEXTS, unit)
    places = sorted({p for p, _, _ in spans_a + spans_b})
    a = [x for p in places for x in unit_labels(TEXTS[p], [(s, e) for q, s, e in spans_a if q == p], unit)]
    b = [x for p in places for x in unit_labels(TEXTS[p], [(s, e) for q, s, e in spans_b if q == p], unit)]
    assert pair["units"] == len(a)
    if len(set(a) | set(b)) == 1:  # one label throughout: sklearn's kappa is nan (0/0), ours None
        assert pair["kappa"] is None
    else:
        assert pair["kappa"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    exact = len({(p, s, e) for p, s, e in spans_a} & {(p, s, e) for p, s, e in spans_b})
    assert pair["exact_f1"] == pytest.approx(2 * exact / (len(set(spans_a)) + len(set(spans_b))))
