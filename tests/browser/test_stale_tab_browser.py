"""Two tabs of one assessor on /judge in headless Chromium (issue 32): tab A grades the first passage 4; tab B, still
showing it unjudged, presses 0: nothing is stored, tab B says what is stored, by whom and when, and shows it; a
second 0 in tab B replaces it, and the history holds both writes. Labels are checked in the SQLite file itself.

Never downloads a browser: the module skips when /usr/bin/chromium or playwright is absent.
"""

from __future__ import annotations

import re

import pytest

from tests.browser_support import LOAD_TIMEOUT_MS, demo_store, expect, press, query, server_per_module, settled

pytestmark = pytest.mark.browser

ASSESSOR = "twotabs"
server = server_per_module("e2e-stale-tab", demo_store)


def first_line(page):
    return page.get_by_text(re.compile(r"^Passage \S+ \(1 of \d+\)$")).first


def test_a_stale_tab_does_not_overwrite_a_label_and_a_second_press_replaces_it(server, browser):
    base, db_path = server
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="en-GB")  # one browser, two tabs
    try:
        tab_a, tab_b = context.new_page(), context.new_page()
        for tab in (tab_a, tab_b):
            tab.goto(f"{base}/judge?assessor={ASSESSOR}")
            expect(first_line(tab)).to_be_visible(timeout=LOAD_TIMEOUT_MS)
            settled(tab)
        grade = "SELECT grade FROM passage_labels WHERE source = ?"
        press(tab_a, "4")
        expect(tab_a.get_by_text(re.compile(r"^Passage \S+ \(2 of \d+\)$")).first).to_be_visible()
        assert query(db_path, grade, (ASSESSOR,)) == [(4,)]

        press(tab_b, "0")  # drawn before A's label
        refusal = tab_b.get_by_text(re.compile(r"NOT SAVED: this item was labelled 4 · Fully meets by twotabs at "))
        expect(refusal).to_be_visible()
        assert "press again to replace it" in refusal.inner_text()
        expect(tab_b.get_by_text("Your label: 4 (Fully meets)")).to_be_visible()  # what is stored, shown
        expect(first_line(tab_b)).to_be_visible()  # still on the item
        settled(tab_b)
        assert query(db_path, grade, (ASSESSOR,)) == [(4,)]

        press(tab_b, "0")  # the second press replaces it
        expect(tab_b.get_by_text(re.compile(r"^Passage \S+ \(2 of \d+\)$")).first).to_be_visible()
        settled(tab_b)
        assert query(db_path, grade, (ASSESSOR,)) == [(0,)]
        assert query(
            db_path, "SELECT old_value, new_value FROM label_history WHERE source = ? ORDER BY id", (ASSESSOR,)
        ) == [(None, "4"), ("4", "0")]
    finally:
        context.close()
