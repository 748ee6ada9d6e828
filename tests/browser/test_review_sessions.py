"""Review of issue 21's sessions, as an attacker would try them: rights lost in the store must stop the next
write of an open page, including a button's callback on an organizer page (Streamlit runs a callback before
the script run that re-reads the session)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.browser_support import (  # noqa: F401  (fixtures)
    LOAD_TIMEOUT_MS,
    ROOT,
    browser,
    expect,
    new_page,
    query,
    settled,
    streamlit_server,
)

pytestmark = pytest.mark.browser
BOSS_PASSWORD = "organizer-passphrase-1"


def _campaign(db_path):
    from assess.services.accounts import add_account
    from assess.services.loading import load_demo
    from store import open_db

    db = open_db(db_path)
    load_demo(db)
    add_account(db, "boss", "organizer", password=BOSS_PASSWORD, by="setup")
    db.raw.close()


def _cli(db_path, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "assess", *args, "--db", str(db_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def _add_aspect(page, text: str) -> None:
    box = page.get_by_label("New aspect")
    expect(page.get_by_text(re.compile(r"^Aspects of the topic"))).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    settled(page)  # the expander drawn as this run leaves it (looking earlier would click it shut)
    usable = "e => e.offsetParent !== null && !e.closest('[inert]')"  # a closed expander's content is inert
    if not box.evaluate(usable):  # the expander is closed once the turn has an aspect
        page.get_by_text(re.compile(r"^Aspects of the topic")).click()
    for _ in range(100):  # until the expander's opening has finished
        if box.evaluate(usable):
            break
        page.wait_for_timeout(100)
    box.fill(text)
    page.get_by_role("button", name="Add", exact=True).click()
    settled(page)


@pytest.mark.parametrize(
    "change", [("role", "boss", "--role", "assessor"), ("disable", "boss")], ids=["demoted", "disabled"]
)
def test_an_open_organizer_page_writes_nothing_after_the_account_is_demoted_or_disabled(tmp_path, new_page, change):
    with streamlit_server(tmp_path, _campaign, ASSESS_OPEN="") as (base, db_path):
        page = new_page()
        page.goto(f"{base}/judge")
        sidebar = page.get_by_test_id("stSidebar")
        expect(sidebar.get_by_label("Account name")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
        settled(page)
        sidebar.get_by_label("Account name").fill("boss")
        sidebar.get_by_label("Password", exact=True).fill(BOSS_PASSWORD)
        sidebar.get_by_role("button", name="Sign in").click()
        expect(sidebar.get_by_role("button", name="Sign out")).to_be_visible()
        page.goto(f"{base}/aspects")
        expect(page.get_by_role("heading", name="Aspects (AEPD)")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
        _add_aspect(page, "added while organizer")
        # the run the click starts draws the count (settled() may look before that run has begun)
        expect(page.get_by_text(re.compile(r"^Aspects of the topic \(1\)"))).to_be_visible()
        assert query(db_path, "SELECT text FROM aspects") == [("added while organizer",)]
        settled(page)

        _cli(db_path, "users", *change, "--by", "os:admin")
        _add_aspect(page, "added after the change")  # the page is still open, its button still there
        expect(page.get_by_role("heading", name="Aspects (AEPD)")).to_have_count(0)  # the run after it leaves
        assert query(db_path, "SELECT text FROM aspects") == [("added while organizer",)]


def test_an_organizer_who_resets_their_own_password_on_the_page_is_shown_the_new_one(tmp_path, new_page):
    with streamlit_server(tmp_path, ASSESS_OPEN="") as (base, db_path):  # a fresh store: the demo, open mode
        page = new_page()
        page.goto(f"{base}/users")
        expect(page.get_by_label("Your account name")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
        settled(page)
        page.get_by_label("Your account name").fill("me")
        page.get_by_role("button", name="Create my organizer account and sign in").click()
        expect(page.get_by_text("Keep this password")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
        page.goto(f"{base}/users")
        # the reload resumes the session from its cookie (one more run): click once that run is over
        expect(page.get_by_test_id("stSidebar").get_by_role("button", name="Sign out")).to_be_visible(
            timeout=LOAD_TIMEOUT_MS
        )
        settled(page)
        page.get_by_role("tab", name="Disable, role, reset").click()
        page.get_by_role("button", name="Reset password").click()
        expect(page.get_by_text("New password of me")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
        assert query(db_path, "SELECT link_version FROM accounts WHERE name = 'me'") == [(1,)]  # the reset happened


def test_a_disabled_accounts_open_gold_response_page_saves_nothing(tmp_path, new_page):
    def campaign(db_path):
        from assess.services.accounts import add_account
        from assess.services.loading import load_demo
        from store import open_db

        db = open_db(db_path)
        load_demo(db)
        add_account(db, "amy", "assessor", password="assessor-passphrase-1", by="setup")
        db.raw.close()

    with streamlit_server(tmp_path, campaign, ASSESS_OPEN="") as (base, db_path):
        page = new_page()
        page.goto(f"{base}/judge")
        sidebar = page.get_by_test_id("stSidebar")
        expect(sidebar.get_by_label("Account name")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
        settled(page)
        sidebar.get_by_label("Account name").fill("amy")
        sidebar.get_by_label("Password", exact=True).fill("assessor-passphrase-1")
        sidebar.get_by_role("button", name="Sign in").click()
        expect(sidebar.get_by_role("button", name="Sign out")).to_be_visible()
        page.goto(f"{base}/gold-response")
        response = page.locator("textarea").first
        expect(response).to_be_visible(timeout=LOAD_TIMEOUT_MS)
        settled(page)
        response.fill("typed before the account was disabled")
        response.blur()
        settled(page)

        _cli(db_path, "users", "disable", "amy", "--by", "os:admin")
        page.get_by_role("button", name="Save gold response").click()
        settled(page)
        expect(sidebar.get_by_label("Account name")).to_be_visible()  # the run after the click signs amy out
        assert query(db_path, "SELECT COUNT(*) FROM gold_responses WHERE source = 'amy'") == [(0,)]


def test_an_open_mode_session_ends_when_an_account_takes_its_name(tmp_path, new_page):
    with streamlit_server(tmp_path) as (base, db_path):  # ASSESS_OPEN=1: anyone types a name
        page = new_page()
        page.goto(f"{base}/judge")
        sidebar = page.get_by_test_id("stSidebar")
        expect(sidebar.get_by_label("Assessor name")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
        settled(page)
        sidebar.get_by_label("Assessor name").fill("carl")
        sidebar.get_by_role("button", name="Sign in").first.click()
        expect(sidebar.get_by_text(re.compile(r"Signed in as\W*carl\b"))).to_be_visible(timeout=LOAD_TIMEOUT_MS)
        settled(page)
        page.wait_for_function("() => document.cookie.includes('assess_session=')")  # written by the next run
        done = subprocess.run(
            [sys.executable, "-m", "assess", "users", "add", "carl", "--role", "assessor", "--password-stdin"]
            + ["--db", str(db_path)],
            cwd=ROOT,
            input="carls-own-passphrase\n",
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert query(db_path, "SELECT name FROM accounts") == [("carl",)]
        page.reload()  # a page load: the cookie of the typed name's session
        settled(page)
        expect(sidebar.get_by_label("Assessor name")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
        expect(sidebar.get_by_text(re.compile(r"Signed in as\W*carl\b"))).to_have_count(0)
