"""The demo never locks its user out (issue 21): on a demo store in open mode, the first account on /users and
topics of one's own on /data are held back until the person has made their own organizer account, which signs
them in and shows its generated password once."""

from __future__ import annotations

import pytest

from assess.services import accounts as service
from store import accounts, open_db
from tests.helpers import open_app


@pytest.fixture
def demo(tmp_path, monkeypatch):
    path = tmp_path / "demo.db"
    monkeypatch.setenv("ASSESS_DB", str(path))
    monkeypatch.delenv("ASSESS_OPEN", raising=False)
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    return path


def test_the_first_account_is_the_persons_own_and_its_password_is_shown_once(demo):
    at = open_app("pages/users.py")
    assert any("switches it to accounts" in w.value for w in at.warning)
    assert not [b for b in at.button if b.key == "add_account_button"]  # no other account before one's own
    at.text_input(key="first_organizer_name").input("me")
    at.button(key="first_organizer_button").click().run()
    assert not at.exception
    shown = at.code[0].value
    assert any("signed in as me (organizer)" in s.value for s in at.success)
    database = open_db(demo)
    assert service.check_password(database, "me", shown).role == "organizer"
    assert [(a["name"], a["role"], a["created_by"]) for a in accounts.accounts(database)] == [
        ("me", "organizer", "open:me")
    ]
    assert at.session_state["assessor"] == "me" and at.session_state["role"] == "organizer"
    at.run()  # the password is shown once; the organizer page stays open to its organizer
    assert not at.code and any(h.value == "Accounts" for h in at.title)
    assert [b for b in at.button if b.key == "add_account_button"]


def test_importing_topics_on_the_demo_waits_for_ones_own_organizer_account(demo):
    at = open_app("pages/data.py")
    at.selectbox(key="import_kind").select("topics").run()
    assert any("Importing topics of your own switches it to accounts" in w.value for w in at.warning)
    assert [b for b in at.button if b.label == "Import"][0].disabled
    at.selectbox(key="import_kind").select("qrels").run()  # qrels leave the demo in open mode
    assert not any("switches it to accounts" in w.value for w in at.warning)
    at.selectbox(key="import_kind").select("topics").run()
    at.text_input(key="first_organizer_name").input("boss")
    at.text_input(key="first_pw").input("short")
    at.button(key="first_organizer_button").click().run()
    assert any("at least 10 characters" in e.value for e in at.error)
    assert accounts.accounts(open_db(demo)) == []
    at.text_input(key="first_pw").input("a long passphrase")
    at.button(key="first_organizer_button").click().run()
    assert at.session_state["role"] == "organizer" and not at.code  # a chosen password is not shown back
    at.selectbox(key="import_kind").select("topics").run()
    assert not any("switches it to accounts" in w.value for w in at.warning)
