"""Open mode's legacy organizer password (issue 33, N18): any text is compared (as UTF-8 bytes, no crash on
non-ASCII input), each entry counts once, and failures are limited per address as accounts' sign-ins are."""

from __future__ import annotations

import pytest

from assess.services import accounts as service
from tests.helpers import open_app, rows

PASSWORD = "s3cret-Pässwort"


@pytest.fixture
def open_demo(store_target, monkeypatch):
    monkeypatch.setenv("ASSESS_DB", str(store_target))
    monkeypatch.setenv("ASSESS_ORGANIZER_PASSWORD", PASSWORD)
    monkeypatch.setattr("assess.ui.frame._client_address", lambda: "10.0.0.7")  # AppTest has no client address
    return store_target


def organizer_pages(at) -> bool:
    """Whether the review page opens as an organizer's (every page's address is known: a visitor who may not
    use it gets the page's guard instead)."""
    try:
        at.switch_page("pages/review.py").run()
    except ValueError:  # the menu has no organizer page
        return False
    guarded = any("This page is for organizers" in w.value for w in at.warning)
    return not at.exception and not guarded


def test_non_ascii_entries_are_refused_cleanly_and_the_right_one_opens(open_demo):
    at = open_app()
    at.text_input(key="org_pw").input("wrong-Pässwort ☃").run()
    assert not at.exception, at.exception
    assert [e.value for e in at.sidebar.error] == ["Wrong organizer password"]
    at.run()  # a rerun with the same entry does not count it again
    assert rows(open_demo, "SELECT scope, pending FROM sign_in_failures") == [("organizer-password:10.0.0.7", 0)]
    at.text_input(key="org_pw").input(PASSWORD).run()
    assert not at.exception and at.session_state["organizer"] is True
    assert rows(open_demo, "SELECT COUNT(*) FROM sign_in_failures") == [(0,)]  # a right entry forgets them
    assert organizer_pages(at)


def test_wrong_entries_are_limited_like_sign_ins(open_demo):
    at = open_app()
    for i in range(service.MAX_FAILURES):
        at.text_input(key="org_pw").input(f"guess-{i}").run()
        assert [e.value for e in at.sidebar.error] == ["Wrong organizer password"]
    at.text_input(key="org_pw").input(PASSWORD).run()  # right, but too late: refused until the window passes
    assert not at.exception, at.exception
    (message,) = [e.value for e in at.sidebar.error]
    assert message.startswith("too many wrong organizer passwords from this address: try again in ")
    assert "organizer" not in at.session_state and not organizer_pages(at)
