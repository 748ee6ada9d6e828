"""An assessor's whole queue in headless Chromium (Debian chromium + Playwright): 40 long passages over two
turns of two conversations, judged by key, one undone and judged again, one with a note, and the end screen.
Before every key press the assessor has scrolled to the end of the long passage; the next item must open
with its id line in view (it used to open at the old scroll position). Labels are checked in the SQLite
file itself.

Never downloads a browser: the module skips when /usr/bin/chromium or playwright is absent.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.browser_support import (  # noqa: F401  (fixtures)
    LOAD_TIMEOUT_MS,
    STEP_TIMEOUT_MS,
    browser,
    expect,
    focus_body,
    new_page,
    press,
    query,
    settled,
    streamlit_server,
)

pytestmark = pytest.mark.browser


def press_left(page) -> None:
    """The Left arrow (Playwright's ArrowLeft) once the button bound to it (shown as ←) is ready."""
    button = page.locator('[data-testid="stButton"] button').filter(has=page.locator('[aria-label="Shortcut ←"]'))
    expect(button).to_have_count(1)
    expect(button).to_be_enabled()
    focus_body(page)
    page.keyboard.press("ArrowLeft")


TURNS = ("101_5", "102_3")  # 20 + 20 pooled passages of the demo: a queue of 40 over two conversations
ASSESSOR = "journey"
LONG = 12  # each passage's text repeated this many times: several screens long


def seed(db_path) -> None:
    """The demo with the passages of TURNS made long, and TURNS assigned to the assessor."""
    from assess.services.loading import load_demo, load_file
    from store import open_db
    from store.conversations import assign
    from store.db import rows

    with open_db(db_path) as db:
        load_demo(db)
        found = rows(
            db,
            "SELECT p.id, p.text FROM passages p WHERE p.text IS NOT NULL AND p.id IN "
            f"(SELECT passage_id FROM pool WHERE turn_id IN ('{TURNS[0]}', '{TURNS[1]}'))",
        )
        longer = db_path.parent / "long-passages.jsonl"
        with open(longer, "w", encoding="utf-8") as f:
            for r in found:
                doc_id, number = r["id"].rsplit(":", 1)
                text = "\n\n".join([r["text"]] * LONG)
                f.write(json.dumps({"doc_id": doc_id, "passage_id": number, "passage_text": text}) + "\n")
        load_file(db, "passages", longer, replace=True)
        assign(db, ASSESSOR, list(TURNS), by="setup")


@pytest.fixture(scope="module")
def server(tmp_path_factory, browser):
    with streamlit_server(tmp_path_factory.mktemp("e2e-journey"), seed) as s:
        yield s


def queue(db_path) -> list[tuple[str, str]]:
    """The assessor's queue, written independently of store.queue: turn position, then passage id."""
    return query(
        db_path,
        "SELECT p.turn_id, p.passage_id FROM pool p JOIN turns t ON t.id = p.turn_id "
        "JOIN conversations c ON c.id = t.conversation_id "
        f"WHERE p.turn_id IN ('{TURNS[0]}', '{TURNS[1]}') ORDER BY c.rowid, t.position, p.passage_id",
    )


def id_line(page, n: int, total: int):
    return page.get_by_text(re.compile(rf"^Passage \S+ \({n} of {total}\)$")).first


def read_to_the_end(page, n: int, total: int) -> None:
    """Scroll down as an assessor reading a long passage does; the id line leaves the screen."""
    page.mouse.move(900, 500)
    page.mouse.wheel(0, 20_000)
    expect(id_line(page, n, total)).not_to_be_in_viewport()


def test_an_assessor_judges_a_queue_of_long_passages_to_the_end(server, new_page):
    base, db_path = server
    items = queue(db_path)
    total = len(items)
    assert total == 40
    page = new_page()
    page.goto(f"{base}/judge?assessor={ASSESSOR}")
    expect(id_line(page, 1, total)).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    settled(page)
    assert len(page.locator("div.passage-text").inner_text()) > 3000  # long: several screens

    grades, undone, noted = {}, 12, 21  # positions (1-based) of the item undone and of the note
    n, undone_once = 1, set()
    while n <= total:
        read_to_the_end(page, n, total)
        if n == noted:
            field = page.get_by_label(re.compile("^Note"))
            field.click()
            field.fill("only the last paragraph answers it")
            field.press("Enter")
            settled(page)
        grade = (n * 3) % 5
        press(page, str(grade))
        grades[items[n - 1]] = grade
        if n == total:
            break
        line = id_line(page, n + 1, total)
        expect(line).to_be_visible(timeout=LOAD_TIMEOUT_MS if n == 20 else STEP_TIMEOUT_MS)  # 20: a new turn
        settled(page)
        expect(line).to_be_in_viewport()  # the new item opens at its top
        if n == undone and items[n - 1] not in undone_once:
            undone_once.add(items[n - 1])
            read_to_the_end(page, n + 1, total)
            press(page, "U")
            back = id_line(page, n, total)
            expect(back).to_be_visible()
            settled(page)
            expect(back).to_be_in_viewport()
            del grades[items[n - 1]]
            assert len(query(db_path, "SELECT 1 FROM passage_labels WHERE source = ?", (ASSESSOR,))) == n - 1
            continue  # judge item n again
        n += 1

    done = page.get_by_text(re.compile(rf"^You're done: all {total} passages of your queue judged"))
    expect(done).to_be_visible()
    settled(page)
    expect(done).to_be_in_viewport()
    stored = query(db_path, "SELECT turn_id, passage_id, grade, note FROM passage_labels WHERE source = ?", (ASSESSOR,))
    assert {(t, p): g for t, p, g, _ in stored} == grades and len(stored) == total
    assert [(t, p, note) for t, p, _, note in stored if note] == [
        (*items[noted - 1], "only the last paragraph answers it")
    ]
    undo_rows = query(db_path, "SELECT item FROM label_history WHERE source = ? AND via = 'undo'", (ASSESSOR,))
    assert undo_rows == [(" ".join(items[undone - 1]),)]
    # The end screen's Left key goes back to the last item.
    press_left(page)
    expect(id_line(page, total, total)).to_be_visible()
