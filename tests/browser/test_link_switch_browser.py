"""Login CSRF (issue 33): a sign-in link of another account, opened in a browser already signed in, asks
"You are signed in as X. Switch to Y?" instead of switching. Stay keeps X and leaves the link unused; only
Switch signs in as Y (and uses the link)."""

from __future__ import annotations

import re

import pytest

from tests.browser_support import (  # noqa: F401  (fixtures)
    LOAD_TIMEOUT_MS,
    browser,
    demo_with_accounts,
    expect,
    new_page,
    query,
    settled,
    sign_in_with_password,
    streamlit_server,
)

pytestmark = pytest.mark.browser
KEY = "link-switch-test-key-0123456789"
BOSS_PASSWORD = "organizer-passphrase-1"
AMY_PASSWORD = "assessor-passphrase-1"

_campaign = demo_with_accounts(("boss", "organizer", BOSS_PASSWORD), ("amy", "assessor", AMY_PASSWORD))


def _link(db_path, name: str, base: str, monkeypatch) -> str:
    from assess.services.accounts import make_link
    from store import open_db

    monkeypatch.setenv("ASSESS_SECRET_KEY", KEY)  # the server's key: its links are this process's links
    db = open_db(db_path, migrate=False)
    try:
        return make_link(db, name, base)
    finally:
        db.close()


def _signed_in_as(page, name: str) -> None:
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_role("button", name="Sign out")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    expect(sidebar.get_by_text(re.compile(rf"Signed in as\W*{name}\b"))).to_be_visible()


def _sessions(db_path, name: str) -> int:
    return query(db_path, "SELECT COUNT(*) FROM sign_in_sessions WHERE name = ?", (name,))[0][0]


def _links_used(db_path) -> list[tuple]:
    return query(db_path, "SELECT name FROM sign_in_links_used")


def _ask(page, link: str):
    """Open ``link`` in a new tab of ``page``'s browser (as a link clicked in a mail): the cookie signs the tab
    in, then the page reads the token from the address; return the tab once the question is shown."""
    tab = page.context.new_page()
    tab.goto(link)
    expect(tab.get_by_text(QUESTION)).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    settled(tab)
    return tab


QUESTION = "You are signed in as amy. Switch to boss?"


def test_another_accounts_link_asks_before_switching_and_only_switch_switches(tmp_path, new_page, monkeypatch):
    with streamlit_server(tmp_path, _campaign, ASSESS_OPEN="", ASSESS_SECRET_KEY=KEY) as (base, db_path):
        page = new_page()
        page.goto(f"{base}/judge")
        sign_in_with_password(page, "amy", AMY_PASSWORD)
        link = _link(db_path, "boss", base, monkeypatch)

        tab = _ask(page, link)
        _signed_in_as(tab, "amy")
        assert "signin" not in tab.url
        assert _sessions(db_path, "boss") == 0 and _links_used(db_path) == []
        expect(tab.get_by_test_id("stSidebar").get_by_role("link", name="Accounts")).to_have_count(0)

        tab.get_by_role("button", name="Stay").click()
        expect(tab.get_by_text(QUESTION)).to_have_count(0)
        settled(tab)
        _signed_in_as(tab, "amy")
        assert _sessions(db_path, "boss") == 0 and _links_used(db_path) == []  # Stay left the link unused
        tab.reload()  # still amy after a reload, and nothing is asked any more
        _signed_in_as(tab, "amy")
        settled(tab)
        expect(tab.get_by_text(QUESTION)).to_have_count(0)

        tab = _ask(page, link)  # the same link again (it was not used): asked again; this time Switch
        tab.get_by_role("button", name="Switch").click()
        _signed_in_as(tab, "boss")
        expect(tab.get_by_text(QUESTION)).to_have_count(0)
        expect(tab.get_by_test_id("stSidebar").get_by_role("link", name="Accounts")).to_be_visible()
        assert _sessions(db_path, "boss") == 1 and _links_used(db_path) == [("boss",)]

        page.reload()  # the browser's cookie now holds boss's session
        _signed_in_as(page, "boss")
