"""Self-agreement over re-shown items (assess.services.audit.self_agreement_view), worked by hand."""

from __future__ import annotations

import pytest

from assess.services import audit
from store import open_db, queue, reshows, sources
from store.exports import qrels_text

# (first label, second answer) of seven re-shown items; the last second answer is 'cannot judge'.
PAIRS = [(0, 0), (1, 1), (2, 3), (4, 4), (0, 1), (3, 3), (2, None)]


@pytest.fixture
def answered(demo_target):
    with open_db(demo_target) as db:
        sources.sign_in(db, "amy")
        reshows.set_rule(db, 1.0, gap=1, seed=0, by="boss")  # share 1: every new label comes back
        items = [(t, p) for t, p, _ in queue.queue(db, "amy")[: len(PAIRS)]]
        for (turn, passage), (first, _) in zip(items, PAIRS):
            queue.save_passage_label(db, "amy", turn, passage, first)
        for (turn, passage), (_, second) in zip(items, PAIRS):
            reshows.answer(db, "amy", "passage", (turn, passage), second, mode="blind")
        yield db, items


def test_self_agreement_equals_the_kappas_worked_by_hand(answered):
    db, _ = answered
    view = audit.self_agreement_view(db, threshold=2, bootstrap=200, seed=3)
    (amy,) = view["assessors"]
    # Quadratic kappa by hand (scale 0..4, weights (i - j)^2, n = 6 graded pairs):
    #   observed disagreement (1 + 1) / 6 = 12/36 (the pairs 2-3 and 0-1);
    #   margins of the first labels 2,1,1,1,1 and of the second 1,2,0,2,1 give an expected disagreement
    #   sum_ij a_i b_j (i - j)^2 / 36 = (72 + 18 + 12 + 18 + 36) / 36 = 156/36;  kappa = 1 - 12/156 = 12/13.
    # Unweighted: observed agreement 4/6 = 24/36, chance (2*1 + 1*2 + 1*0 + 1*2 + 1*1) / 36 = 7/36:
    #   kappa = (24 - 7) / (36 - 7) = 17/29.
    # Binarised at 2 (relevant = grade >= 2): both read no, no, yes, yes, no, yes: kappa 1.
    assert view["statistic"] == "kappa_quadratic"
    assert (amy["answered"], amy["n"], amy["cannot_judge"], amy["changed"]) == (7, 6, 1, 2)
    assert amy["agreement"] == pytest.approx(4 / 6)
    assert amy["value"] == amy["kappa_quadratic"] == pytest.approx(12 / 13)
    assert amy["kappa_unweighted"] == pytest.approx(17 / 29)
    assert amy["kappa_binary"] == pytest.approx(1.0)
    low, high = amy["ci"]
    assert low <= amy["value"] <= high <= 1
    assert view["pending"] == [{"assessor": "amy", "picked": 7, "answered": 7, "pending": 0}]


def test_consistency_labels_never_reach_the_primary_labels(answered):
    db, items = answered
    # the primary labels are the first answers, and qrels hold only them
    assert queue.labelled(db, "amy") == frozenset(items)
    lines = qrels_text(db, "amy").splitlines()
    assert lines == [f"{t} 0 {p} {first}" for (t, p), (first, _) in zip(items, PAIRS)]
    # a later change of the primary label leaves the recorded pair as it was answered
    queue.save_passage_label(db, "amy", *items[0], 4)
    (amy,) = audit.self_agreement_view(db, threshold=2, bootstrap=0)["assessors"]
    assert amy["kappa_quadratic"] == pytest.approx(12 / 13)
    # and the agreement matrix reads the label tables only: amy's 7 labels, no second answers
    assert audit.agreement_view(db, "passage", ["amy", "llm:demo-gpt"], threshold=2, bootstrap=0)["labels"] == {
        "amy": 7,
        "llm:demo-gpt": 214,
    }
