"""GFRC2 and GFRC (assess.measures.gfrc): golden values from the GFRC2 paper's Tables 1-5 (topic R112,
docs/measures.md#gfrc2 and #gfrc), an independent word-by-word reference implementation, and properties."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from assess.errors import AssessError, FormatError
from assess.measures.divergence import distr_sim
from assess.measures.gfrc import gfrc2_scores, nugget_table, parse_attributes, score_gfrc2_document
from tests.conftest import shared_file

ATTRIBUTES = [
    {"name": "PRONOUN", "kind": "nominal", "groups": ["he", "she", "other"]},
    {"name": "HINDEX", "kind": "ordinal", "groups": ["G1", "G2", "G3", "G4"], "divergence": "RNOD"},
]


def nugget(turn, start, end, pronoun, level=2, hindex="G4"):
    return {"turn": turn, "start": start, "end": end, "level": level, "groups": {"PRONOUN": pronoun, "HINDEX": hindex}}


# Spans from the paper's Figures 2-3 and the GWCrel/WCnonrel columns (docs/measures.md#gfrc2).
COPWA = [
    nugget(1, 32, 33, "he"),
    nugget(1, 34, 36, "he"),
    nugget(1, 37, 39, "he"),
    nugget(1, 52, 54, "she"),
    nugget(1, 61, 63, "he"),
    nugget(1, 85, 87, "he"),
]
ORG = [
    nugget(1, 37, 39, "he"),
    nugget(1, 40, 42, "he"),
    nugget(1, 43, 45, "he"),
    nugget(2, 103, 105, "he"),
    nugget(2, 106, 108, "she"),
]


def document(*conversations, attributes=ATTRIBUTES, **extra):
    return {
        "L": 1000,
        "max_level": 2,
        "attributes": attributes,
        **extra,
        "conversations": [{"id": cid, "nuggets": ns} for cid, ns in conversations],
    }


@pytest.fixture(scope="module")
def r112():
    return score_gfrc2_document(document(("COPWA", COPWA), ("ORG", ORG)))


# GFRC2 paper Table 1 (COPWA-CS-QD-MN-2): wc, GWCrel, WCnonrel, GNP, 1-JSD, 1-RNOD, Experience.
TABLE_1 = [
    (33, 4, 31, 0.114286, 0.540852, 0.404881, 0.353340),
    (36, 10, 31, 0.243902, 0.540852, 0.404881, 0.396545),
    (39, 16, 31, 0.340426, 0.540852, 0.404881, 0.428720),
    (54, 22, 43, 0.338462, 0.769708, 0.404881, 0.504350),
    (63, 28, 49, 0.363636, 0.749772, 0.404881, 0.506096),
    (87, 34, 70, 0.326923, 0.733061, 0.404881, 0.488288),
]
# GFRC2 paper Table 2 (ORG-CS-D-MN-1).
TABLE_2 = [
    (39, 6, 36, 0.142857, 0.540852, 0.404881, 0.362863),
    (42, 12, 36, 0.250000, 0.540852, 0.404881, 0.398578),
    (45, 18, 36, 0.333333, 0.540852, 0.404881, 0.426355),
    (105, 24, 93, 0.205128, 0.540852, 0.404881, 0.383620),
    (108, 30, 93, 0.243902, 0.749772, 0.404881, 0.466185),
]
ROUNDED = 5e-7  # the paper prints 6 decimals


@pytest.mark.parametrize("run, table", [("COPWA", TABLE_1), ("ORG", TABLE_2)])
def test_cluster_tables_1_and_2(r112, run, table):
    clusters = r112[run]["clusters"]
    assert len(clusters) == len(table)
    for cluster, (wc, gw, nonrel, gnp, pronoun, hindex, experience) in zip(clusters, table):
        assert (cluster["wc"], cluster["GWCrel"], cluster["WCnonrel"]) == (wc, gw, nonrel)
        assert cluster["GNP"] == pytest.approx(gnp, abs=ROUNDED)
        assert cluster["GF"]["PRONOUN"] == pytest.approx(pronoun, abs=ROUNDED)
        assert cluster["GF"]["HINDEX"] == pytest.approx(hindex, abs=ROUNDED)
        assert cluster["Experience"] == pytest.approx(experience, abs=ROUNDED)


def test_achieved_distributions_of_table_1():
    attributes = parse_attributes(ATTRIBUTES)
    table = nugget_table([{"id": "COPWA", "nuggets": COPWA}], attributes)
    d = gfrc2_scores(table, attributes)["D"]
    assert d["PRONOUN"] == pytest.approx(
        np.array([[1, 0, 0]] * 3 + [[3 / 4, 1 / 4, 0], [4 / 5, 1 / 5, 0], [5 / 6, 1 / 6, 0]])
    )
    assert d["HINDEX"] == pytest.approx(np.array([[0, 0, 0, 1]] * 6))


# GFRC2 paper Table 3: EGNP, EGF(PRONOUN, JSD), EGF(HINDEX, RNOD), GFRC2.
@pytest.mark.parametrize(
    "run, egnp, pronoun, hindex, gfrc2",
    [
        ("COPWA", 0.001728, 0.003875, 0.002429, 0.002677),
        ("ORG", 0.001175, 0.002913, 0.002024, 0.002038),
    ],
)
def test_totals_table_3(r112, run, egnp, pronoun, hindex, gfrc2):
    result = r112[run]
    assert result["EGNP"] == pytest.approx(egnp, abs=ROUNDED)
    assert result["EGF"]["PRONOUN"] == pytest.approx(pronoun, abs=ROUNDED)
    assert result["EGF"]["HINDEX"] == pytest.approx(hindex, abs=ROUNDED)
    assert result["GFRC2"] == pytest.approx(gfrc2, abs=ROUNDED)
    # Eq. 19 = the equal-weight mean of Eqs. 20-21.
    assert result["GFRC2"] == pytest.approx((result["EGNP"] + sum(result["EGF"].values())) / 3, abs=1e-15)


# GFRC2 paper Tables 4-5 (original GFRC with Eq. 6, g(L2) = 3/4, per-turn GF, three-way mean).
@pytest.mark.parametrize(
    "run, r, pronoun, hindex, total",
    [
        ("COPWA", 0.008532, 0.733061, 0.404881, 0.382158),
        ("ORG", 0.006992, 0.674989, 0.404881, 0.362287),
    ],
)
def test_original_gfrc_tables_4_and_5(r112, run, r, pronoun, hindex, total):
    gfrc = r112[run]["GFRC"]
    assert gfrc["R"] == pytest.approx(r, abs=ROUNDED)
    assert gfrc["GF"]["PRONOUN"] == pytest.approx(pronoun, abs=ROUNDED)
    assert gfrc["GF"]["HINDEX"] == pytest.approx(hindex, abs=ROUNDED)
    assert gfrc["GFRC"] == pytest.approx(total, abs=ROUNDED)


def test_table_4_position_weights_times_gain():
    # Table 4a, COPWA: pw = 0.968 ... 0.914 at the nugget ends; R = 2/(L+1) * sum pw * 0.75.
    pw = [1 - (n["end"] - 1) / 1000 for n in COPWA]
    assert pw == pytest.approx([0.968, 0.965, 0.962, 0.947, 0.938, 0.914])
    result = score_gfrc2_document(document(("COPWA", COPWA)))
    assert result["COPWA"]["GFRC"]["R"] == pytest.approx(2 / 1001 * 0.75 * sum(pw), abs=1e-15)


def test_nmd_variant_for_hindex():
    # docs/measures.md#gfrc2 (not published): EGF(HINDEX, NMD) = 0.003000 (COPWA) and 0.002500 (ORG).
    attributes = [ATTRIBUTES[0], {**ATTRIBUTES[1], "divergence": "NMD"}]
    result = score_gfrc2_document(document(("COPWA", COPWA), ("ORG", ORG), attributes=attributes))
    assert result["COPWA"]["EGF"]["HINDEX"] == pytest.approx(0.003, abs=1e-12)
    assert result["ORG"]["EGF"]["HINDEX"] == pytest.approx(0.0025, abs=1e-12)


def test_default_divergences_and_targets():
    attributes = parse_attributes(
        [
            {"name": "A", "kind": "nominal", "groups": ["x", "y"]},
            {"name": "B", "kind": "ordinal", "groups": ["1", "2", "3"]},
        ]
    )
    assert [a.divergence for a in attributes] == ["JSD", "RNOD"]
    assert attributes[1].target == pytest.approx((1 / 3, 1 / 3, 1 / 3))


def test_case_file_matches_the_library(r112):
    data = json.loads(shared_file("cases", "gfrc2_fairweb2_r112.json").read_text())
    result = score_gfrc2_document(data)
    assert result["COPWA-CS-QD-MN-2"]["GFRC2"] == pytest.approx(r112["COPWA"]["GFRC2"], abs=1e-15)
    assert result["ORG-CS-D-MN-1"]["GFRC"]["GFRC"] == pytest.approx(r112["ORG"]["GFRC"]["GFRC"], abs=1e-15)


# ---------------------------------------------------------------------------------------------
# Degenerate and edge cases


def test_conversation_without_nuggets_scores_zero():
    result = score_gfrc2_document(document(("empty", [])))["empty"]
    assert result["EGNP"] == result["GFRC2"] == 0.0
    assert result["EGF"] == {"PRONOUN": 0.0, "HINDEX": 0.0}
    assert result["GFRC"] == {"R": 0.0, "GF": {"PRONOUN": 0.0, "HINDEX": 0.0}, "GFRC": 0.0}
    assert result["clusters"] == []


def test_nuggets_after_word_L_carry_no_weight_but_count_for_later_clusters():
    early = [nugget(1, 5, 6, "he")]
    late = early + [nugget(1, 1001, 1002, "she")]
    a = score_gfrc2_document(document(("a", early)))["a"]
    b = score_gfrc2_document(document(("b", late)))["b"]
    assert b["GFRC2"] == a["GFRC2"] and b["EGNP"] == a["EGNP"]
    assert len(b["clusters"]) == 2  # the cluster is still reported
    assert b["GFRC"]["R"] == a["GFRC"]["R"]  # pw = max(0, 1 - 1001/1000) = 0


def test_level_one_gain_and_linear_level_weight():
    # Eq. 16: GWCrel weighs a word by its level; GFRC gain (2^l - 1)/2^max_level = 1/4 for L1.
    result = score_gfrc2_document(document(("x", [nugget(1, 1, 2, "he", level=1)])))["x"]
    assert result["clusters"][0]["GWCrel"] == 2 and result["clusters"][0]["GNP"] == 1.0
    assert result["GFRC"]["R"] == pytest.approx(2 / 1001 * (1 - 1 / 1000) * 0.25)


def test_soft_memberships_are_averaged_per_nugget():
    soft = [nugget(1, 1, 1, [0.5, 0.5, 0.0]), nugget(1, 3, 3, "other")]
    cluster = score_gfrc2_document(document(("x", soft)))["x"]["clusters"][1]
    assert cluster["GF"]["PRONOUN"] == pytest.approx(distr_sim([0.25, 0.25, 0.5], [1 / 3] * 3, "JSD"))


def test_order_of_nuggets_in_the_input_does_not_matter(r112):
    shuffled = score_gfrc2_document(document(("COPWA", COPWA[::-1])))["COPWA"]
    assert shuffled["GFRC2"] == pytest.approx(r112["COPWA"]["GFRC2"], abs=1e-15)
    assert [c["wc"] for c in shuffled["clusters"]] == [33, 36, 39, 54, 63, 87]


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["conversations"][0]["nuggets"][1].update(start=33), "non-overlapping"),
        (lambda d: d["conversations"][0]["nuggets"][0]["groups"].update(PRONOUN="it"), "PRONOUN group"),
        (lambda d: d["conversations"][0]["nuggets"][0]["groups"].pop("HINDEX"), "HINDEX membership"),
        (lambda d: d["conversations"][0]["nuggets"][0].update(level=3), "max_level"),
        (lambda d: d["conversations"][0]["nuggets"][0].update(start=0), "start >= 1"),
        (lambda d: d["conversations"][0]["nuggets"][0].update(end=1), "end >= start"),
        (lambda d: d["conversations"][0]["nuggets"][0].pop("end"), "start, end, level and groups"),
        (lambda d: d["conversations"][0]["nuggets"][0]["groups"].update(PRONOUN=[0.5, 0.6, 0]), "summing to 1"),
        (lambda d: d["conversations"].append({"id": "COPWA", "nuggets": []}), "distinct conversation ids"),
        (lambda d: d["attributes"][0].update(kind="ratio"), "nominal or ordinal"),
        (lambda d: d.update(L=0), "positive integer"),
    ],
)
def test_bad_documents_raise_format_errors(change, message):
    data = json.loads(json.dumps(document(("COPWA", COPWA))))
    change(data)
    with pytest.raises(FormatError, match=message):
        score_gfrc2_document(data, source="case.json")


def test_format_errors_are_value_errors():
    assert issubclass(FormatError, AssessError) and issubclass(FormatError, ValueError)


# ---------------------------------------------------------------------------------------------
# An independent, word-by-word implementation of Eqs. 13-21 and 4-10, for random cross-checks.


def reference_scores(nuggets, attributes, L=1000, max_level=2):
    nuggets = sorted(nuggets, key=lambda n: n["end"])
    owner = {}
    for i, n in enumerate(nuggets):
        for w in range(n["start"], n["end"] + 1):
            owner[w] = i
    targets = {a["name"]: [1 / len(a["groups"])] * len(a["groups"]) for a in attributes}

    def vector(a, value):
        return [1.0 if g == value else 0.0 for g in a["groups"]] if isinstance(value, str) else list(value)

    egnp, egf, experience_sum = 0.0, {a["name"]: 0.0 for a in attributes}, 0.0
    for j, n in enumerate(nuggets):
        wc = n["end"]
        g = sum(nuggets[owner[w]]["level"] for w in range(1, wc + 1) if w in owner)
        nonrel = sum(1 for w in range(1, wc + 1) if w not in owner)
        gnp = g / (nonrel + g)
        sims = {}
        for a in attributes:
            vectors = [vector(a, m["groups"][a["name"]]) for m in nuggets[: j + 1]]
            mean = [sum(col) / len(vectors) for col in zip(*vectors)]
            sims[a["name"]] = distr_sim(
                mean, targets[a["name"]], a.get("divergence") or ("JSD" if a["kind"] == "nominal" else "RNOD")
            )
        if wc <= L:
            egnp += gnp / L
            for name, s in sims.items():
                egf[name] += s / L
            experience_sum += (gnp + sum(sims.values())) / (len(attributes) + 1) / L
    r = 2 / (L + 1) * sum(max(0.0, 1 - (n["end"] - 1) / L) * (2 ** n["level"] - 1) / 2**max_level for n in nuggets)
    gf = {}
    for a in attributes:
        turns = {}
        for n in nuggets:
            turns.setdefault(n["turn"], []).append(vector(a, n["groups"][a["name"]]))
        per_turn = [
            distr_sim(
                [sum(c) / len(v) for c in zip(*v)],
                targets[a["name"]],
                a.get("divergence") or ("JSD" if a["kind"] == "nominal" else "RNOD"),
            )
            for v in turns.values()
        ]
        gf[a["name"]] = sum(per_turn) / len(per_turn) if per_turn else 0.0
    return {
        "EGNP": egnp,
        "EGF": egf,
        "GFRC2": experience_sum,
        "GFRC": {"R": r, "GF": gf, "GFRC": (r + sum(gf.values())) / (len(attributes) + 1)},
    }


@st.composite
def conversations(draw, max_nuggets=8):
    count = draw(st.integers(0, max_nuggets))
    pos, nuggets = 1, []
    for _ in range(count):
        start = pos + draw(st.integers(0, 200))
        end = start + draw(st.integers(0, 6))
        nuggets.append(
            {
                "turn": draw(st.integers(1, 3)),
                "start": start,
                "end": end,
                "level": draw(st.integers(1, 2)),
                "groups": {
                    "PRONOUN": draw(st.sampled_from(["he", "she", "other"])),
                    "HINDEX": draw(st.sampled_from(["G1", "G2", "G3", "G4"])),
                },
            }
        )
        pos = end + 1
    return nuggets


@settings(max_examples=60, deadline=None)
@given(st.lists(conversations(), min_size=1, max_size=4))
def test_vectorised_scores_match_the_reference_and_lie_in_unit_interval(convs):
    result = score_gfrc2_document(document(*((f"c{i}", ns) for i, ns in enumerate(convs))))
    for i, ns in enumerate(convs):
        got, want = result[f"c{i}"], reference_scores(ns, ATTRIBUTES)
        assert got["EGNP"] == pytest.approx(want["EGNP"], abs=1e-12)
        assert got["GFRC2"] == pytest.approx(want["GFRC2"], abs=1e-12)
        for name in ("PRONOUN", "HINDEX"):
            assert got["EGF"][name] == pytest.approx(want["EGF"][name], abs=1e-12)
            assert got["GFRC"]["GF"][name] == pytest.approx(want["GFRC"]["GF"][name], abs=1e-12)
        assert got["GFRC"]["R"] == pytest.approx(want["GFRC"]["R"], abs=1e-12)
        assert got["GFRC"]["GFRC"] == pytest.approx(want["GFRC"]["GFRC"], abs=1e-12)
        values = [
            got["EGNP"],
            got["GFRC2"],
            *got["EGF"].values(),
            got["GFRC"]["R"],
            got["GFRC"]["GFRC"],
            *got["GFRC"]["GF"].values(),
        ]
        values += [v for c in got["clusters"] for v in (c["GNP"], c["Experience"], *c["GF"].values())]
        assert all(0.0 <= v <= 1.0 for v in values)


# ---------------------------------------------------------------------------------------------
# Monotonicity. Moving one relevant nugget earlier WITHOUT passing another relevant nugget (the
# skipped non-relevant words move behind it) keeps every prefix's set of relevant nuggets, so D^m
# and GF^m are unchanged at every cluster, the moved nugget's GNP rises (fewer non-relevant words
# before its end) and all other clusters are unchanged: EGNP, every EGF^m and GFRC2 never drop,
# and GFRC's R never drops either (pw grows). Passing another nugget can lower all of them:
# see test_passing_another_nugget_can_lower_gfrc2.


@settings(max_examples=80, deadline=None)
@given(conversations(max_nuggets=6).filter(len), st.data())
def test_moving_a_nugget_earlier_without_passing_never_lowers_scores(nuggets, data):
    nuggets = sorted(nuggets, key=lambda n: n["end"])
    j = data.draw(st.integers(0, len(nuggets) - 1))
    previous_end = nuggets[j - 1]["end"] if j else 0
    room = nuggets[j]["start"] - previous_end - 1
    assume(room > 0)
    shift = data.draw(st.integers(1, room))
    moved = [dict(n) for n in nuggets]
    moved[j] = {**moved[j], "start": moved[j]["start"] - shift, "end": moved[j]["end"] - shift}
    before = score_gfrc2_document(document(("c", nuggets)))["c"]
    after = score_gfrc2_document(document(("c", moved)))["c"]
    eps = 1e-12
    assert after["GFRC2"] >= before["GFRC2"] - eps
    assert after["EGNP"] >= before["EGNP"] - eps
    for name in ("PRONOUN", "HINDEX"):
        assert after["EGF"][name] >= before["EGF"][name] - eps
    assert after["GFRC"]["R"] >= before["GFRC"]["R"] - eps


def test_passing_another_nugget_can_lower_gfrc2():
    # he, she, he -> he, he, she: the middle cluster's PRONOUN distribution goes from (1/2,1/2,0)
    # (DistrSim 0.809) to (1,0,0) (0.541); the small GNP gain does not compensate.
    before = [nugget(1, 1, 1, "he"), nugget(1, 5, 5, "she"), nugget(1, 7, 7, "he")]
    after = [nugget(1, 1, 1, "he"), nugget(1, 3, 3, "he"), nugget(1, 7, 7, "she")]
    b = score_gfrc2_document(document(("c", before)))["c"]
    a = score_gfrc2_document(document(("c", after)))["c"]
    assert a["GFRC2"] < b["GFRC2"]
    # EGNP alone can drop too: a 1-word L1 nugget jumping ahead of a long L2 nugget.
    long_first = [nugget(1, 11, 110, "he", level=2), nugget(1, 111, 111, "he", level=1)]
    jumped = [nugget(1, 11, 11, "he", level=1), nugget(1, 12, 111, "he", level=2)]
    assert (
        score_gfrc2_document(document(("c", jumped)))["c"]["EGNP"]
        < score_gfrc2_document(document(("c", long_first)))["c"]["EGNP"]
    )


def test_weights_of_eq_12_are_configurable():
    attributes = parse_attributes(ATTRIBUTES)
    table = nugget_table([{"id": "COPWA", "nuggets": COPWA}], attributes)
    only_gnp = gfrc2_scores(table, attributes, weights=[1, 0, 0])
    assert only_gnp["GFRC2"][0] == pytest.approx(only_gnp["EGNP"][0])
    with pytest.raises(FormatError):
        gfrc2_scores(table, attributes, weights=[0.5, 0.5])


def test_many_conversations_score_like_single_ones():
    rng = np.random.default_rng(3)
    convs = []
    for c in range(50):
        pos, ns = 1, []
        for _ in range(int(rng.integers(0, 10))):
            start = pos + int(rng.integers(0, 50))
            end = start + int(rng.integers(0, 4))
            ns.append(
                nugget(
                    int(rng.integers(1, 4)),
                    start,
                    end,
                    str(rng.choice(["he", "she", "other"])),
                    level=int(rng.integers(1, 3)),
                    hindex=str(rng.choice(["G1", "G2", "G3", "G4"])),
                )
            )
            pos = end + 1
        convs.append((f"c{c}", ns))
    together = score_gfrc2_document(document(*convs))
    for cid, ns in convs:
        alone = score_gfrc2_document(document((cid, ns)))[cid]
        assert together[cid]["GFRC2"] == pytest.approx(alone["GFRC2"], abs=1e-12)
        assert together[cid]["GFRC"]["GFRC"] == pytest.approx(alone["GFRC"]["GFRC"], abs=1e-12)
    assert math.isfinite(sum(r["GFRC2"] for r in together.values()))
