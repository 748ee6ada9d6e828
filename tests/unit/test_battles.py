"""Battle measures against hand-worked cases and an implementation we did not write (choix), the battle file
reader, and the plans."""

from __future__ import annotations

import math

import numpy as np
import pytest

from assess.errors import AssessError, FormatError
from assess.formats.battles import parse_battles
from assess.measures import battles as bt
from assess.measures.battles import Battle


def _battles(*spec: tuple[str, str, str, int]) -> list[Battle]:
    """(left, right, winner, times) -> that many battles on topic t."""
    return [Battle("t", a, b, w) for a, b, w, times in spec for _ in range(times)]


def test_two_runs_by_hand():
    # A beats B 2 times, B beats A 0 times, 2 ties: W[A,B] = 3, W[B,A] = 1, so sigma(tA - tB) = 3/4:
    # tA - tB = ln 3, centred: +-ln(3)/2. A's win rate: (2 + 2/2) / 4 = 0.75.
    ranked = bt.rank(_battles(("A", "B", "a", 2), ("B", "A", "tie", 2), ("A", "B", "both_bad", 5)), replicates=0)
    assert ranked["A"].strength == pytest.approx(math.log(3) / 2, abs=1e-12)
    assert ranked["B"].strength == pytest.approx(-math.log(3) / 2, abs=1e-12)
    assert ranked["A"].win_rate == 0.75 and ranked["B"].win_rate == 0.25
    assert ranked["A"].battles == 4  # both_bad left out


def test_a_chain_by_hand():
    # A-B 2:1 and B-C 2:1, A and C never met: the likelihood splits, tA - tB = tB - tC = ln 2; centred: ln 2, 0, -ln 2
    ranked = bt.rank(
        _battles(("A", "B", "a", 2), ("A", "B", "b", 1), ("C", "B", "b", 2), ("C", "B", "a", 1)), replicates=0
    )
    assert [ranked[r].strength for r in "ABC"] == pytest.approx([math.log(2), 0.0, -math.log(2)], abs=1e-12)


def test_a_cycle_is_all_equal_and_a_run_that_never_loses_stays_finite():
    cycle = bt.rank(_battles(("A", "B", "a", 2), ("B", "C", "a", 2), ("C", "A", "a", 2)), replicates=0)
    assert [cycle[r].strength for r in "ABC"] == pytest.approx([0.0, 0.0, 0.0], abs=1e-12)
    w = np.array([[0.0, 2.0], [0.0, 0.0]])  # A always wins: no MLE
    assert not bt.mle_exists(w)
    t = bt.bradley_terry(w)
    assert np.all(np.isfinite(t)) and t[0] > 0 > t[1] and t.sum() == pytest.approx(0.0, abs=1e-12)
    assert bt.rank([], replicates=0) == {}


def test_strengths_match_choix_on_a_seeded_simulation():
    """choix's ILSR (Maystre & Grossglauser 2015) converges to the same MLE; a tie enters choix as one win each
    way with every decisive battle counted twice (the same likelihood, doubled)."""
    import choix

    rng = np.random.default_rng(7)
    n, m = 12, 4000
    true = rng.normal(size=n)
    left = rng.integers(0, n, m)
    right = (left + rng.integers(1, n, m)) % n
    p = 1 / (1 + np.exp(true[right] - true[left]))
    u = rng.random(m)
    winner = np.where(u < 0.15, 2, np.where(u < 0.15 + 0.85 * p, 0, 1))
    got = bt.rank_indices(left, right, winner, n, replicates=0)["strength"]
    data = []
    for a, b, w in zip(left.tolist(), right.tolist(), winner.tolist()):
        data += [(a, b), (a, b)] if w == 0 else [(b, a), (b, a)] if w == 1 else [(a, b), (b, a)]
    reference = choix.ilsr_pairwise(n, data, alpha=0.0, tol=1e-13, max_iter=10000)
    assert np.abs(got - (reference - reference.mean())).max() < 1e-6
    assert got.mean() == pytest.approx(0.0, abs=1e-12)


def test_bootstrap_is_seeded_and_brackets_the_estimate():
    battles = _battles(
        ("A", "B", "a", 30),
        ("B", "A", "a", 10),
        ("B", "C", "a", 25),
        ("C", "B", "a", 15),
        ("C", "A", "a", 12),
        ("A", "C", "a", 20),
    )
    one = bt.rank(battles, replicates=200, seed=3)
    two = bt.rank(battles, replicates=200, seed=3)
    assert one == two
    for r in one.values():
        assert r.low < r.strength < r.high
    assert bt.rank(battles, replicates=200, seed=4) != one


def test_elo_by_hand():
    # K = 4, start 1000: equal ratings expect 1/2, so A gains 4 * (1 - 1/2) = 2; then B beats A:
    # expected for B = 1 / (1 + 10 ** ((1002 - 998) / 400)), B gains 4 * (1 - that)
    ratings = bt.elo([Battle("t", "A", "B", "a"), Battle("t", "A", "B", "b"), Battle("t", "A", "B", "both_bad")])
    e = 1 / (1 + 10 ** (4 / 400))
    assert ratings["B"] == pytest.approx(998 + 4 * (1 - e), abs=1e-12)
    assert ratings["A"] == pytest.approx(1002 - 4 * (1 - e), abs=1e-12)


def test_swapped_order_counted_by_hand():
    battles = [
        Battle("t1", "A", "B", "a"),
        Battle("t1", "B", "A", "b", reshow=True),  # A both times: consistent
        Battle("t2", "A", "C", "a"),
        Battle("t2", "C", "A", "a", reshow=True),  # the left one both times: a flip
        Battle("t3", "B", "C", "tie"),
        Battle("t3", "C", "B", "tie", reshow=True),  # consistent
        Battle("t4", "B", "C", "b"),  # shown once: not a pair
    ]
    got = bt.swapped_order(battles)
    # 3 pairs, 1 flip; decisive verdicts a, b, a, a, b: the left one 3 of 5 times
    assert got == {"pairs": 3, "flips": 1, "flip_share": 1 / 3, "consistent_share": 2 / 3, "left_share": 3 / 5}
    assert bt.swapped_order([])["flip_share"] is None


def test_source_agreement_by_hand():
    first = [
        Battle("1", "A", "B", "a"),
        Battle("2", "A", "B", "a"),
        Battle("3", "B", "A", "a"),
        Battle("4", "A", "B", "tie"),
    ]
    second = [
        Battle("1", "B", "A", "b"),
        Battle("2", "A", "B", "b"),
        Battle("3", "A", "B", "b"),
        Battle("4", "A", "B", "tie"),
    ]
    second.append(Battle("9", "A", "B", "a"))  # only one source judged it
    got = bt.source_agreement(first, second)
    # verdicts by run: first A, A, B, tie; second A, B, B, tie: 3 of 4 agree. Margins first (1/2, 1/4, 1/4),
    # second (1/4, 1/2, 1/4): chance 1/8 + 1/8 + 1/16 = 5/16; kappa = (3/4 - 5/16) / (11/16) = 7/11
    assert got["common"] == 4 and got["agree"] == 3 and got["share"] == 0.75
    assert got["kappa"] == pytest.approx(7 / 11, abs=1e-12)


def test_plans():
    runs = {"t1": ["c", "a", "b"], "t2": ["a", "b"]}
    assert bt.all_pairs(runs) == [("t1", "a", "b"), ("t1", "a", "c"), ("t1", "b", "c"), ("t2", "a", "b")]
    one = bt.random_pairs(runs, 2, seed=5)
    assert one == bt.random_pairs(runs, 2, seed=5)
    assert [p[0] for p in one] == ["t1", "t1", "t2"] and set(one) <= set(bt.all_pairs(runs))
    # adaptive: a and b are known to differ a lot, c is unseen (strength 0 like b): b-c and a-c come first,
    # b-c (p = 1/2, the most uncertain) before a-c; the judged cell (t2, a, b) is never taken again
    strengths = {"a": 3.0, "b": 0.0}
    got = bt.adaptive_pairs(runs, strengths, {("t2", "a", "b"): 1}, budget=3, seed=0)
    assert got == [("t1", "b", "c"), ("t1", "a", "c"), ("t1", "a", "b")]
    with pytest.raises(AssessError):
        bt.adaptive_pairs(runs, strengths, {}, budget=0, seed=0)


def test_the_reader_names_file_line_and_field(tmp_path):
    good = tmp_path / "b.jsonl"
    good.write_text(
        '{"topic_id": "12-1_3", "run_a": "x", "run_b": "y", "winner": "a"}\n'
        '{"topic_id": 2024, "run_a": "x", "run_b": "y", "winner": "both_bad", "reason": "both wrong"}\n'
        '{"topic_id": "12-1_3", "run_a": "x", "run_b": "y", "winner": "tie"}\n'
    )
    records = parse_battles(good)
    assert [(r.topic_id, r.winner, r.occurrence, r.line) for r in records] == [
        ("12-1_3", "a", 0, 1),
        ("2024", "both_bad", 0, 2),
        ("12-1_3", "tie", 1, 3),
    ]
    assert records[1].reason == "both wrong"
    cases = {
        '{"topic_id": "t", "run_a": "x", "run_b": "y", "winner": "left"}': "'winner' a, b, tie or both_bad",
        '{"topic_id": "t", "run_a": "x", "winner": "a"}': "a field 'run_b'",
        '{"topic_id": "t", "run_a": "x", "run_b": "x", "winner": "a"}': "'run_b' another run than 'run_a'",
        '{"topic_id": "t", "run_a": "x y", "run_b": "z", "winner": "a"}': "'run_a'",
        '["t", "x", "y", "a"]': "one JSON object per line",
    }
    for line, expected in cases.items():
        bad = tmp_path / "bad.jsonl"
        bad.write_text('{"topic_id": "t", "run_a": "x", "run_b": "y", "winner": "a"}\n' + line + "\n")
        with pytest.raises(FormatError) as caught:
            parse_battles(bad)
        assert caught.value.line == 2 and expected in caught.value.expected, line


def test_the_existence_check_agrees_with_scipys_strong_components():
    from scipy.sparse.csgraph import connected_components

    rng = np.random.default_rng(11)
    for density in (0.1, 0.2, 0.4):
        graphs = rng.random((200, 9, 9)) < density
        ours = bt._strongly_connected(graphs)
        reference = [connected_components(g, directed=True, connection="strong")[0] == 1 for g in graphs]
        assert ours.tolist() == reference
        assert [bt.mle_exists(g.astype(float)) for g in graphs[:20]] == reference[:20]
