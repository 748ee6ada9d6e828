"""A key press that meets a held write lock, in headless Chromium (issue 33): the page says "saving…", then keeps
the press with NOT SAVED and a Retry button once the wait (10 s) is over; Retry stores the label after the lock
is released. The lock is held from the test by another process's connection (BEGIN IMMEDIATE on the SQLite
file, as an import's switch holds it); labels are checked in the file itself.

Never downloads a browser: the module skips when /usr/bin/chromium or playwright is absent.
"""

from __future__ import annotations

import re
import sqlite3

import pytest

from tests.browser_support import LOAD_TIMEOUT_MS, demo_store, expect, press, query, server_per_module, settled

pytestmark = pytest.mark.browser

ASSESSOR = "busy-amy"
ID_LINE = re.compile(r"^Passage (\S+) \(1 of \d+\)$")
server = server_per_module("e2e-busy", demo_store)


def test_a_press_meeting_a_held_lock_is_kept_and_retry_stores_it(server, new_page):
    base, db_path = server
    page = new_page()
    page.goto(f"{base}/judge?assessor={ASSESSOR}")
    line = page.get_by_text(ID_LINE).first
    expect(line).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    settled(page)
    passage = ID_LINE.match(line.inner_text()).group(1)
    labels = "SELECT passage_id, grade FROM passage_labels WHERE source = ?"

    holder = sqlite3.connect(db_path, isolation_level=None, timeout=1)
    holder.execute("BEGIN IMMEDIATE")  # the store's write lock, held by another connection
    try:
        press(page, "3")
        expect(page.get_by_text("saving… (the store is busy)")).to_be_visible(timeout=5_000)  # after 0.3 s
        not_saved = page.get_by_text(re.compile("NOT SAVED"))
        expect(not_saved).to_be_visible(timeout=20_000)  # after the 10 s wait
        retry = page.get_by_role("button", name=re.compile("Retry"))
        expect(retry).to_be_visible()
        settled(page)
        assert query(db_path, labels, (ASSESSOR,)) == []
        expect(page.get_by_text(ID_LINE).first).to_have_text(re.compile(re.escape(passage)))  # the item stays
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    retry.click()
    expect(not_saved).to_have_count(0)
    settled(page)
    assert query(db_path, labels, (ASSESSOR,)) == [(passage, 3)]
