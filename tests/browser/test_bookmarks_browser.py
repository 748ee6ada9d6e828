"""Bookmarks: a page's address opened while signed out shows the sign-in box and that page's guard (never
Streamlit's "Page not found"), and after signing in, that page: an organizer gets /review itself, an assessor
a plain "this page is for organizers".

Never downloads a browser: the module skips when /usr/bin/chromium or playwright is absent.
"""

from __future__ import annotations

import pytest

from tests.browser_support import (  # noqa: F401  (fixtures)
    LOAD_TIMEOUT_MS,
    browser,
    demo_with_accounts,
    expect,
    new_page,
    settled,
    sign_in_with_password,
    streamlit_server,
)

pytestmark = pytest.mark.browser

BOSS, ANN = "boss-pass-1234", "ann-pass-1234"


@pytest.fixture(scope="module")
def server(tmp_path_factory, browser):
    prepare = demo_with_accounts(("boss", "organizer", BOSS), ("ann", "assessor", ANN))
    with streamlit_server(tmp_path_factory.mktemp("e2e-bookmarks"), prepare, ASSESS_OPEN="") as s:
        yield s


def open_signed_out(page, base: str, path: str) -> None:
    page.goto(f"{base}/{path}")
    expect(page.get_by_test_id("stSidebar").get_by_label("Account name")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    settled(page)
    expect(page.get_by_text("Page not found")).to_have_count(0)


def test_an_organizer_bookmark_opens_after_sign_in(server, new_page):
    base, _ = server
    page = new_page()
    open_signed_out(page, base, "review")
    expect(page.get_by_text("This page is for organizers: sign in with an organizer account")).to_be_visible()
    expect(page.get_by_test_id("stSidebar").get_by_text("Review", exact=True)).to_have_count(0)  # not listed
    sign_in_with_password(page, "boss", BOSS)
    expect(page.get_by_role("heading", name="Review")).to_be_visible()
    assert page.url.rstrip("/").endswith("/review")
    expect(page.get_by_text("This page is for organizers")).to_have_count(0)


def test_an_assessor_signing_in_from_an_organizer_bookmark_is_told_so(server, new_page):
    base, _ = server
    page = new_page()
    open_signed_out(page, base, "review")
    sign_in_with_password(page, "ann", ANN)
    expect(page.get_by_text("This page is for organizers: you are signed in as ann (assessor)")).to_be_visible()
    expect(page.get_by_role("heading", name="Review")).to_have_count(0)


def test_an_assessor_bookmark_opens_after_sign_in(server, new_page):
    base, _ = server
    page = new_page()
    open_signed_out(page, base, "ptkb")
    expect(page.get_by_text("Sign in with your account in the sidebar")).to_be_visible()
    sign_in_with_password(page, "ann", ANN)
    assert page.url.split("?")[0].rstrip("/").endswith("/ptkb")
    expect(page.get_by_text("Sign in with your account in the sidebar")).to_have_count(0)
