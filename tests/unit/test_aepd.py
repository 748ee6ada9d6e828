"""AEPD (assess.measures.aepd): the paper's Figure 2 inputs (docs/measures.md#aepd), degenerate turns,
the P-D trade-off, and bounds."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau

from assess.errors import FormatError
from assess.measures.aepd import score_aepd_document, score_aepd_turn, tradeoff
from tests.conftest import shared_file

ROUNDED = 5e-7


def test_figure_2_worked_example():
    # AEPD paper Figure 2 / Sections 3.2-3.3: 7 topic aspects, aspects 2, 3, 5 personal; the
    # response covers aspect 1 (46 words), 2 (65) and 3 (16). Values from Eqs. 1-15 (docs/measures.md#aepd).
    lengths = [46, 65, 16, 0, 0, 0, 0]
    personal = [False, True, True, False, True, False, False]
    s = score_aepd_turn(lengths, personal)
    assert s["NPP"] == pytest.approx(5 / 12, abs=1e-15)  # PP = 2/3, PP' = 3/7
    assert s["NPCL"] == 0.0  # L_per = 40.5 < L_nonper = 46
    assert s["P"] == 0.0
    assert s["AR"] == pytest.approx(3 / 7, abs=1e-15)
    ss = sum((x / 127 - 1 / 3) ** 2 for x in (46, 65, 16))
    assert s["CLU"] == pytest.approx(1 - math.sqrt(ss / 2), abs=1e-15)
    assert s["CLU"] == pytest.approx(0.805473, abs=ROUNDED)
    assert s["D"] == pytest.approx(0.345203, abs=ROUNDED)


def test_synthetic_turn():
    # docs/measures.md#aepd, second example: a1 (personal, 30 words) and a3 (10 words) of 4 aspects.
    s = score_aepd_turn([30, 0, 10, 0], [True, False, False, False])
    assert s == pytest.approx({"NPP": 1 / 3, "NPCL": 2 / 3, "P": 2 / 9, "AR": 0.5, "CLU": 0.75, "D": 0.375})


def test_case_file():
    data = json.loads(shared_file("cases", "aepd_paper_figure2.json").read_text())
    result = score_aepd_document(data)
    for tid, expected in data["expected"]["turns"].items():
        for key, value in expected.items():
            assert result["turns"][tid][key] == pytest.approx(value, abs=6e-7)


def test_text_and_length_give_the_same_scores():
    by_text = score_aepd_document(
        {
            "turns": [
                {
                    "id": "t",
                    "aspects": [
                        {"aspect": "a", "ptkb": [1], "text": "one two  three\nfour"},
                        {"aspect": "b", "ptkb": [], "text": "x y"},
                    ],
                }
            ]
        }
    )
    by_length = score_aepd_document(
        {
            "turns": [
                {
                    "id": "t",
                    "aspects": [{"aspect": "a", "ptkb": [1], "length": 4}, {"aspect": "b", "ptkb": [], "length": 2}],
                }
            ]
        }
    )
    assert by_text["turns"] == by_length["turns"]


def test_degenerate_turns():
    # Nothing covered: as the reference code, NPP = NPCL = P = AR = D = 0 and CLU = 1.
    assert score_aepd_turn([0, 0], [True, False]) == {
        "NPP": 0.0,
        "NPCL": 0.0,
        "P": 0.0,
        "AR": 0.0,
        "CLU": 1.0,
        "D": 0.0,
    }
    # No aspect listed at all.
    assert score_aepd_turn([], []) == {"NPP": 0.0, "NPCL": 0.0, "P": 0.0, "AR": 0.0, "CLU": 1.0, "D": 0.0}
    # Every aspect personal: PP' = 1 so NPP = 0 by definition (Eq. 3).
    assert score_aepd_turn([5, 5], [True, True])["NPP"] == 0.0
    # Only personal aspects covered: L_nonper = 0, NPCL = L_per / L_all.
    assert score_aepd_turn([10, 30, 0], [True, True, False])["NPCL"] == pytest.approx(20 / 40)
    # One covered aspect: perfectly uniform.
    assert score_aepd_turn([7, 0], [False, False])["CLU"] == 1.0


def test_tradeoff_uses_only_turns_with_both_scores_positive():
    p = [0.1, 0.2, 0.3, 0.0, 0.5, 0.4]
    d = [0.5, 0.4, 0.45, 0.9, 0.1, 0.0]
    result = tradeoff(p, d)
    expected = kendalltau([0.1, 0.2, 0.3, 0.5], [0.5, 0.4, 0.45, 0.1])
    assert result["n"] == 4
    assert result["kendall_tau"] == pytest.approx(expected.statistic)
    assert result["p_value"] == pytest.approx(expected.pvalue)


@pytest.mark.parametrize("p, d", [([], []), ([0.1], [0.2]), ([0.1, 0.1, 0.1], [0.2, 0.3, 0.4]), ([0, 0], [1, 1])])
def test_degenerate_tradeoff_is_none(p, d):
    result = tradeoff(p, d)
    assert result["kendall_tau"] is None and result["p_value"] is None


@pytest.mark.parametrize(
    "data, message",
    [
        ({"turns": {}}, "turns"),
        ({"turns": [{"aspects": []}]}, "with an id"),
        ({"turns": [{"id": 1, "aspects": [{"ptkb": [], "length": -1}]}]}, "non-negative integer length"),
        ({"turns": [{"id": 1, "aspects": [{"ptkb": "1", "length": 1}]}]}, "ptkb as a list"),
        ({"turns": [{"id": 1, "aspects": []}, {"id": 1, "aspects": []}]}, "distinct turn ids"),
    ],
)
def test_bad_documents(data, message):
    with pytest.raises(FormatError, match=message):
        score_aepd_document(data, source="x.json")


aspects = st.lists(st.tuples(st.integers(0, 200), st.booleans()), max_size=12)


@settings(max_examples=300, deadline=None)
@given(aspects)
def test_every_score_lies_in_unit_interval(rows):
    s = score_aepd_turn([n for n, _ in rows], [f for _, f in rows])
    assert all(0.0 <= v <= 1.0 for v in s.values()), s
    assert s["P"] == pytest.approx(s["NPP"] * s["NPCL"])
    assert s["D"] == pytest.approx(s["AR"] * s["CLU"])
