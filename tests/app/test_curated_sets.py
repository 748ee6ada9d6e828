"""Curated sets on the pages (issue 33, R4): an assessor on /duplicates of ``gold`` and on /banks reads
only; an organizer decides, and the history names the organizer."""

from __future__ import annotations

import pytest

from assess.services import accounts as service
from store import history, open_db
from store.nuggets import duplicates, gold
from tests.helpers import ROOT, open_app, rows, run_cli

PASSWORD = "correct-horse-battery"


@pytest.fixture
def campaign(demo_target, monkeypatch):
    """The demo with accounts (not open): an organizer, an assessor, and a suggested pair in ``gold``."""
    with open_db(demo_target) as database:
        service.add_account(database, "boss", "organizer", password=PASSWORD, by="setup")
        service.add_account(database, "amy", "assessor", password=PASSWORD, by="boss")
        assert duplicates.suggest_duplicates(database, "gold", "101_1", lambda a, b: 0.9, threshold=0.5) > 0
    monkeypatch.setenv("ASSESS_DB", str(demo_target))
    monkeypatch.delenv("ASSESS_OPEN", raising=False)
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    monkeypatch.delenv("ASSESS_NLI_MODEL", raising=False)
    return demo_target


def signed_in(name: str, page: str):
    at = open_app()
    at.text_input(key="account_name").input(name)
    at.text_input(key="account_password").input(PASSWORD)
    at.button(key="account_sign_in").click().run()
    assert at.session_state["assessor"] == name
    at.switch_page(page)
    at.run()
    assert not at.exception, at.exception
    return at


def stored_pairs(target):
    return rows(target, "SELECT nugget_a, nugget_b, decision, decided_by FROM nugget_duplicates ORDER BY 1, 2")


def test_an_assessor_reads_the_gold_set_on_duplicates_and_writes_nothing(campaign):
    before, flags = stored_pairs(campaign), rows(campaign, "SELECT id, in_dedup FROM nuggets ORDER BY id")
    at = signed_in("amy", "pages/duplicates.py")
    assert at.selectbox(key="dup_source").value == "gold"
    assert any("curated by the organizers" in i.value for i in at.info)
    assert at.button(key="dup_suggest").disabled
    decision_keys = {"dup_same", "dup_a_covers_b", "dup_b_covers_a", "dup_distinct", "dup_manual_save"}
    assert not decision_keys & {b.key for b in at.button}
    assert "Pair 1 of" in " ".join(h.value for h in at.subheader)  # the open pair is still shown, to read
    at.run()
    assert not at.exception, at.exception
    assert stored_pairs(campaign) == before
    assert rows(campaign, "SELECT id, in_dedup FROM nuggets ORDER BY id") == flags


def test_a_forged_decision_by_an_assessor_is_refused_by_the_store(campaign):
    """The page hides the buttons; were it to call the store anyway (an old page, a script), nothing is saved."""
    from store.rights import NotAllowed

    with open_db(campaign) as database:
        (pair, *_) = duplicates.duplicate_pairs(database, "gold", "101_1")
        with pytest.raises(NotAllowed):
            duplicates.decide_duplicate(database, pair["a"], pair["b"], "same", by="amy")
        assert duplicates.duplicate_pairs(database, "gold", "101_1")[0]["decision"] is None


def test_an_organizer_decides_a_gold_pair_and_the_history_names_them(campaign):
    at = signed_in("boss", "pages/duplicates.py")
    assert not any("curated by the organizers" in i.value for i in at.info)
    (first, *_) = [p for p in stored_pairs(campaign) if p[2] is None]
    at.button(key="dup_same").click().run()
    assert not at.exception, at.exception
    assert (first[0], first[1], "same", "boss") in stored_pairs(campaign)
    with open_db(campaign) as database:
        (action,) = history.actions(database, "curation")
        kept = {n["id"]: n["in_dedup"] for n in gold.turn_nuggets(database, "gold", "101_1")}
    assert (action["by"], action["item"], action["new"]) == (
        "boss",
        f"duplicate gold 101_1 {first[0]} {first[1]}",
        "same",
    )
    assert 0 in kept.values()  # the de-duplicated set changed


def test_an_assessor_reads_a_bank_and_an_organizer_edits_it(campaign):
    banks = ROOT / "assets" / "demo" / "banks"
    run_cli("import", "rag-answers", str(banks / "answers.jsonl"), db=campaign, check=True)
    run_cli("nuggets", "bank", "import", str(banks / "bank.jsonl"), db=campaign, check=True)
    at = signed_in("amy", "pages/banks.py")
    assert any("curated by the organizers" in i.value for i in at.info)
    assert not [t for t in at.text_input if t.key in ("bank_q_text", "bank_a_text")]
    at = signed_in("boss", "pages/banks.py")
    at.text_input(key="bank_q_text").set_value("Should hills wait after surgery?")
    at.button[0].click().run()  # Save question
    assert not at.exception, at.exception
    assert rows(campaign, "SELECT source, item FROM label_history WHERE label_table = 'bank-nugget'") == [
        ("boss", "101_1 3")
    ]
