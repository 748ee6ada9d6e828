"""Curated sets (issue 33, R4): an assessor account may not decide duplicate pairs of the ``gold`` nugget set
nor edit a nugget bank; the store refuses in the write's own transaction, and an organizer's decision is a
history row naming the organizer."""

from __future__ import annotations

import pytest

from assess.services import accounts as service
from store import history, open_db
from store.banks import save_answer, save_question
from store.db import rows
from store.nuggets import duplicates, gold
from store.rights import NotAllowed


@pytest.fixture
def campaign(demo_target):
    with open_db(demo_target) as db:
        service.add_account(db, "boss", "organizer", password="correct-horse-battery", by="setup")
        service.add_account(db, "amy", "assessor", password="correct-horse-battery", by="boss")
        yield db


def _pairs(db):
    return rows(db, "SELECT nugget_a, nugget_b, decision, decided_by FROM nugget_duplicates ORDER BY nugget_a")


def test_an_assessor_account_cannot_decide_pairs_of_the_gold_set(campaign):
    db = campaign
    a, b = (n["id"] for n in gold.turn_nuggets(db, "gold", "101_1")[:2])
    flags = rows(db, "SELECT id, in_dedup FROM nuggets WHERE source = 'gold' ORDER BY id")
    with pytest.raises(NotAllowed, match="curation"):
        duplicates.decide_duplicate(db, a, b, "same", by="amy")
    with pytest.raises(NotAllowed, match="curation"):
        duplicates.suggest_duplicates(db, "gold", "101_1", by="amy")
    assert _pairs(db) == []
    assert rows(db, "SELECT id, in_dedup FROM nuggets WHERE source = 'gold' ORDER BY id") == flags
    assert history.actions(db, "curation") == []


def test_an_organizers_decision_of_the_gold_set_names_them_in_the_history(campaign):
    db = campaign
    a, b = (n["id"] for n in gold.turn_nuggets(db, "gold", "101_1")[:2])
    duplicates.decide_duplicate(db, a, b, "same", by="boss")
    duplicates.decide_duplicate(db, a, b, None, by="boss")  # reopened: a second row, still naming boss
    assert _pairs(db) == [{"nugget_a": a, "nugget_b": b, "decision": None, "decided_by": None}]
    assert [(r["by"], r["item"], r["old"], r["new"], r["via"]) for r in history.actions(db, "curation")] == [
        ("boss", f"duplicate gold 101_1 {a} {b}", None, "same", "duplicates"),
        ("boss", f"duplicate gold 101_1 {a} {b}", "same", None, "duplicates"),
    ]


def test_an_assessor_decides_pairs_of_their_own_set(campaign):
    db = campaign
    n1 = gold.add_text_nugget(db, "amy", "101_1", "Most beginner plans last 10 to 12 weeks")
    n2 = gold.add_text_nugget(db, "amy", "101_1", "Beginner plans last 10-12 weeks mostly")
    assert duplicates.suggest_duplicates(db, "amy", "101_1", by="amy") == 1
    duplicates.decide_duplicate(db, n1, n2, "same", by="amy")
    assert _pairs(db) == [{"nugget_a": n1, "nugget_b": n2, "decision": "same", "decided_by": "amy"}]
    assert history.actions(db, "curation") == []  # their own set: the set's history row is theirs already


def test_bank_edits_are_organizer_actions(campaign, demo_target):
    from tests.helpers import ROOT, run_cli

    banks = ROOT / "assets" / "demo" / "banks"
    db = campaign
    run_cli("import", "rag-answers", str(banks / "answers.jsonl"), db=demo_target, check=True)
    run_cli("nuggets", "bank", "import", str(banks / "bank.jsonl"), db=demo_target, check=True)
    before = rows(db, "SELECT topic_id, nugget, question FROM bank_nuggets ORDER BY topic_id, nugget")
    with pytest.raises(NotAllowed, match="curation"):
        save_question(db, "101_2", None, "Should hills wait?", "AND", 3, by="amy")
    with pytest.raises(NotAllowed, match="curation"):
        save_answer(db, "101_2", 1, 1, "downhill running", ["demo-doc-001:0"], by="amy")
    assert rows(db, "SELECT topic_id, nugget, question FROM bank_nuggets ORDER BY topic_id, nugget") == before
    assert save_question(db, "101_2", None, "Should hills wait?", "AND", 3, by="boss") == 2
    assert rows(db, "SELECT source FROM label_history WHERE label_table = 'bank-nugget'") == [{"source": "boss"}]
