"""An organizer plans adaptive overlap on /review in headless Chromium (issue 37 item 3): the form's Adaptive box,
margin and judge make the plan the CLI's `overlap --adaptive` makes; a judge who is also an assessor of the plan is
refused on the page with nothing stored.

Never downloads a browser: the module skips when /usr/bin/chromium or playwright is absent."""

from __future__ import annotations

import pytest

from tests.browser_support import (
    LOAD_TIMEOUT_MS,
    demo_with_accounts,
    expect,
    no_exception,
    query,
    select,
    settled,
    sign_in_with_password,
    streamlit_server,
)

pytestmark = pytest.mark.browser

PEOPLE = (("boss", "organizer", "boss-pass-1"), ("amy", "assessor", "amy-pass-1"), ("bob", "assessor", "bob-pass-1"))


def _choose(page, label: str, *options: str) -> None:
    """Pick ``options`` in the multiselect ``label`` by typing each and pressing Enter."""
    box = page.get_by_test_id("stMultiSelect").filter(has_text=label)
    field = box.locator("input")
    for option in options:
        field.click()
        field.press_sequentially(option)
        exact = page.get_by_role("option", name=option, exact=True)
        if exact.count():  # a typed name may match other options too: pick the exact one
            exact.first.click()
        else:  # a name not offered yet (accept_new_options)
            field.press("Enter")
    field.press("Escape")
    for option in options:
        expect(box.get_by_text(option, exact=True)).to_be_visible()


def _plan(page, name: str, judge: str) -> None:
    """Fill the whole form (the first time), or only the name and judge (a form keeps its other values)."""
    form = page.get_by_test_id("stForm")
    form.get_by_label("Plan name (a word)").fill(name)
    box = form.get_by_test_id("stCheckbox").filter(has_text="Adaptive")
    if not box.locator("input").is_checked():
        _choose(page, "Assessors (2 or more)", "amy", "bob")
        _choose(page, "Conversations", "101")
        box.click()
        form.get_by_label("Margin (grade difference)").fill("1.5")
    select(page, "Judge compared with (optional)", judge)
    form.get_by_role("button", name="Assign with overlap").click()
    settled(page)


def test_an_organizer_plans_adaptive_overlap_on_review(new_page, tmp_path):
    with streamlit_server(tmp_path, demo_with_accounts(*PEOPLE), ASSESS_OPEN="") as (base, db):
        page = new_page(1280, 900)
        page.goto(f"{base}/review")
        sign_in_with_password(page, "boss", "boss-pass-1")
        expect(page.get_by_text("Planned overlap: items judged by two or three assessors")).to_be_visible(
            timeout=LOAD_TIMEOUT_MS
        )
        _plan(page, "first", "amy")  # amy is planned to judge: she cannot also be the judge
        expect(page.get_by_text("is also an assessor of the plan")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
        assert query(db, "SELECT COUNT(*) FROM overlap_plans") == [(0,)]
        _plan(page, "adapt", "llm:demo-gpt")
        expect(page.get_by_text("Plan adapt:")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
        no_exception(page)
        assert query(db, "SELECT name, margin, judge FROM overlap_plans") == [("adapt", 1.5, "llm:demo-gpt")]
        assert query(db, "SELECT COUNT(*) FROM overlap_decisions WHERE plan = 'adapt' AND step = 'base'")[0][0] > 0
