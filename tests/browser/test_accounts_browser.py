"""Accounts in a real browser: an organizer creates an account on /users, the new assessor signs in with that
password in a fresh browser context, judges one passage, and the label is stored under the account's name."""

from __future__ import annotations

import re

import pytest

from tests.browser_support import (  # noqa: F401  (fixtures)
    LOAD_TIMEOUT_MS,
    browser,
    demo_with_accounts,
    expect,
    new_page,
    press,
    query,
    settled,
    sign_in_with_password,
    streamlit_server,
)

pytestmark = pytest.mark.browser
BOSS_PASSWORD = "organizer-passphrase-1"


_campaign = demo_with_accounts(("boss", "organizer", BOSS_PASSWORD))


_sign_in = sign_in_with_password


def test_organizer_creates_an_account_and_the_assessor_judges_under_it(tmp_path, new_page):
    with streamlit_server(tmp_path, _campaign, ASSESS_OPEN="") as (base, db_path):
        boss = new_page()
        boss.goto(f"{base}/judge?assessor=boss")  # the URL parameter signs nobody in
        _sign_in(boss, "boss", BOSS_PASSWORD)
        expect(boss.get_by_text("Open mode")).to_have_count(0)
        menu = boss.get_by_test_id("stSidebar")
        if menu.get_by_role("button", name=re.compile(r"^View \d+ more$")).count():
            menu.get_by_role("button", name=re.compile(r"^View \d+ more$")).click()
        menu.get_by_role("link", name="Accounts").click()
        expect(boss.get_by_role("heading", name="Accounts")).to_be_visible()
        boss.get_by_label("Name (also the label source)").fill("newbie")
        boss.get_by_role("button", name="Add account").click()
        code = boss.get_by_test_id("stCode")
        expect(code).to_be_visible()
        password = code.inner_text().strip()
        assert re.fullmatch(r"[A-Za-z0-9_-]{20}", password), password
        assert query(db_path, "SELECT role, created_by FROM accounts WHERE name = 'newbie'") == [("assessor", "boss")]

        assessor = new_page()  # a fresh context: no cookie or session of the organizer's
        assessor.goto(f"{base}/judge")
        _sign_in(assessor, "newbie", password)
        expect(assessor.get_by_text(re.compile(r"^Passage .* \(1 of \d+\)$"))).to_be_visible(timeout=LOAD_TIMEOUT_MS)
        press(assessor, "3")
        expect(assessor.get_by_text(re.compile(r"\(2 of \d+\)$"))).to_be_visible()
        assert query(db_path, "SELECT source, grade, mode FROM passage_labels WHERE mode = 'blind'") == [
            ("newbie", 3, "blind")
        ]
        expect(assessor.get_by_test_id("stSidebar").get_by_role("link", name="Accounts")).to_have_count(0)
