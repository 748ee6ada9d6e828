"""/adjudicate in headless Chromium (Debian chromium + Playwright): an adjudicator account signs in, clears ten
disagreements between the demo's two LLM judges by keyboard (grades, one "cannot judge", one undo, a reason),
blind to the sources' names; the adjudicated labels and the actions naming who are checked in the SQLite
file itself.

Never downloads a browser: the module skips when /usr/bin/chromium or playwright is absent.
"""

from __future__ import annotations

import re

import pytest

from tests.browser_support import (
    LOAD_TIMEOUT_MS,
    expect,
    press,
    query,
    settled,
    streamlit_server,
)

pytestmark = pytest.mark.browser
PASSWORD = "adjudicator-passphrase-1"
COMPARED = ["llm:demo-gpt", "llm:demo-llama"]


def _campaign(db_path):
    """The demo, an organizer who chose the compared sources and blind adjudication, and an adjudicator."""
    from assess.services.accounts import add_account
    from assess.services.loading import load_demo
    from store import open_db, review

    with open_db(db_path) as db:
        load_demo(db)
        add_account(db, "boss", "organizer", password=PASSWORD, by="setup")
        add_account(db, "ada", "adjudicator", password=PASSWORD, by="boss")
        review.set_adjudication_settings(db, COMPARED, True, by="boss")


def disagreements(db_path) -> list[tuple[str, str]]:
    """The items the two sources grade differently, in queue order, written independently of store.review."""
    return query(
        db_path,
        "SELECT a.turn_id, a.passage_id FROM passage_labels a JOIN passage_labels b "
        "ON b.turn_id = a.turn_id AND b.passage_id = a.passage_id "
        "JOIN turns t ON t.id = a.turn_id JOIN conversations c ON c.id = t.conversation_id "
        "WHERE a.source = ? AND b.source = ? AND a.grade IS NOT b.grade ORDER BY c.rowid, t.position, a.passage_id",
        tuple(COMPARED),
    )


def test_an_adjudicator_clears_ten_disagreements_by_keyboard(tmp_path, new_page):
    with streamlit_server(tmp_path, _campaign, ASSESS_OPEN="") as (base, db_path):
        items = disagreements(db_path)
        total = len(items)
        assert total > 10
        page = new_page()
        page.goto(f"{base}/")  # the adjudication page is in the menu once an adjudicator has signed in
        sidebar = page.get_by_test_id("stSidebar")
        expect(sidebar.get_by_label("Account name")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
        sidebar.get_by_label("Account name").fill("ada")
        sidebar.get_by_label("Password", exact=True).fill(PASSWORD)
        sidebar.get_by_role("button", name="Sign in").click()
        expect(sidebar.get_by_role("button", name="Sign out")).to_be_visible()
        settled(page)
        sidebar.get_by_role("link", name="Adjudicate").click()

        def at(n: int):
            line = page.get_by_text(re.compile(rf"^Passage \S+ of turn \S+ \({n} of {total}\)$")).first
            expect(line).to_be_visible(timeout=LOAD_TIMEOUT_MS)
            settled(page)
            return line.inner_text()

        assert items[0][1] in at(1)
        main = page.get_by_test_id("stMain")
        expect(main.get_by_text("Source A", exact=True)).to_be_visible()
        expect(main.get_by_text("Source B", exact=True)).to_be_visible()
        assert "demo-gpt" not in main.inner_text() and "demo-llama" not in main.inner_text()  # blind
        expect(main.get_by_text(re.compile(r"^\d / \d+ disagreements adjudicated$"))).to_have_text(
            f"0 / {total} disagreements adjudicated"
        )

        keys = ["4", "3", "X", "0", "2", "1", "4", "3", "2", "1"]
        for n, key in enumerate(keys, start=1):
            if n == 5:  # a reason, typed before the grade, Enter gives the keys back
                field = page.get_by_label(re.compile("^Reason"))
                field.click()
                field.fill("the passage names the race but not the plan")
                field.press("Enter")
                settled(page)
            press(page, key)
            at(n + 1)
            if n == 3:  # undo the "cannot judge" and decide it again
                press(page, "U")
                at(3)
                press(page, "2")
                at(4)
        expect(main.get_by_text(f"10 / {total} disagreements adjudicated")).to_be_visible()

        decided = [None if k == "X" else int(k) for k in keys]
        decided[2] = 2
        stored = query(
            db_path,
            "SELECT turn_id, passage_id, grade, note, mode FROM passage_labels WHERE source = ?",
            ("adjudication",),
        )
        assert sorted(stored, key=lambda r: items.index((r[0], r[1]))) == [
            (t, p, g, "by ada" + (": the passage names the race but not the plan" if n == 5 else ""), "adjudication")
            for n, ((t, p), g) in enumerate(zip(items, decided), start=1)
        ]
        actions = query(
            db_path,
            "SELECT source, item, old_value, new_value, via FROM label_history WHERE label_table = 'adjudication' ORDER BY id",
        )
        assert all(who == "ada" for who, *_ in actions) and len(actions) == 12  # 10 decisions, the undo, the redo
        assert actions[2:5] == [
            ("ada", " ".join(items[2]), None, "cannot-judge", "adjudication"),
            ("ada", " ".join(items[2]), "cannot-judge", None, "undo"),
            ("ada", " ".join(items[2]), None, "2", "adjudication"),
        ]
