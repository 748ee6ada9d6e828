"""/citations in headless Chromium (Debian chromium + Playwright): an assessor labels citation support with
the keys 2, 1, X (cannot judge, stored as the assessor's label), I (irrelevant), undoes with U, reloads, resumes
and sees its 'cannot judge' again; the labels are checked in the SQLite file itself.

Never downloads a browser: the module skips when /usr/bin/chromium or playwright is absent.
"""

from __future__ import annotations

import re

import pytest

from tests.app.test_rag_pages import cited_responses
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


LINE = re.compile(r"^Citation (\d+) of (\d+)")


def seed(db_path) -> None:
    """The demo plus two cited responses, written before the server's first session."""
    from assess.services.loading import load_demo
    from store import open_db
    from store import responses as cited

    with open_db(db_path) as db:
        load_demo(db)
        cited.add_responses(db, "answers.jsonl", cited_responses())


@pytest.fixture(scope="module")
def server(tmp_path_factory, browser):
    with streamlit_server(tmp_path_factory.mktemp("e2e-cite"), seed) as s:
        yield s


def citations(db_path) -> list[tuple]:
    """The citation queue, written independently of the store's readers: conversation, turn, run, sentence,
    citing position."""
    return query(
        db_path,
        "SELECT x.turn_id, x.run, x.sentence, x.passage_id FROM response_citations x "
        "JOIN turns t ON t.id = x.turn_id JOIN conversations c ON c.id = t.conversation_id "
        "GROUP BY x.turn_id, x.run, x.sentence, x.passage_id "
        "ORDER BY c.rowid, t.position, x.run, x.sentence, MIN(x.position)",
    )


def wait_item(page, n: int, total: int, timeout: int = STEP_TIMEOUT_MS) -> None:
    expect(page.get_by_text(re.compile(rf"^Citation {n} of {total} ")).first).to_be_visible(timeout=timeout)
    settled(page)


def test_keys_label_citations_undo_and_resume(server, new_page):
    base, db_path = server
    items = citations(db_path)
    total = len(items)
    assert items[:3] == [
        ("101_1", "rag-a", 1, "demo-doc-001:0"),
        ("101_1", "rag-a", 1, "demo-doc-002:3"),
        ("101_1", "rag-a", 2, "no-text-doc:7"),
    ]
    page = new_page()
    page.goto(f"{base}/citations?assessor=cb1")
    wait_item(page, 1, total, LOAD_TIMEOUT_MS)
    expect(page.get_by_text("Start with walk-run intervals.").first).to_be_visible()
    press(page, "2")
    wait_item(page, 2, total)
    press(page, "1")
    wait_item(page, 3, total)
    expect(page.get_by_text(re.compile("^Passage text not available")).first).to_be_visible()
    press(page, "X")  # cannot judge, as on /judge: stored as cb1's label without support, the next citation
    wait_item(page, 4, total)
    assert query(db_path, "SELECT source, support, via FROM citation_labels WHERE sentence = 2") == [
        (
            "cb1",
            None,
            "key",
        )
    ]
    press_left(page)
    wait_item(page, 3, total)
    expect(page.get_by_text("Your label: cannot judge").first).to_be_visible()
    press(page, "I")  # the citation is irrelevant
    wait_item(page, 4, total)
    expect(page.get_by_text("The response as a whole").first).to_be_visible()
    stored = query(
        db_path, "SELECT turn_id, run, sentence, passage_id, support, via FROM citation_labels WHERE source = 'cb1'"
    )
    assert sorted(stored, key=lambda r: items.index(r[:4])) == [
        (*items[0], 2, "key"),
        (*items[1], 1, "key"),
        (*items[2], -1, "key"),
    ]
    history = query(db_path, "SELECT new_value FROM label_history WHERE source = 'cb1' ORDER BY id")
    assert history == [("2",), ("1",), ("cannot-judge",), ("-1",)]  # one write per key press, in order
    press(page, "U")  # back to 'cannot judge', not to no label
    wait_item(page, 3, total)
    assert query(db_path, "SELECT support, via FROM citation_labels WHERE source = 'cb1' AND sentence = 2") == [
        (None, "undo")
    ]
    page.reload()  # a new session resumes at the first unlabelled citation: 'cannot judge' is a label
    wait_item(page, 4, total, LOAD_TIMEOUT_MS)
    press_left(page)
    wait_item(page, 3, total)
    expect(page.get_by_text("Your label: cannot judge").first).to_be_visible()
    press(page, "0")
    wait_item(page, 4, total)
    assert query(db_path, "SELECT support FROM citation_labels WHERE source = 'cb1' AND sentence = 2") == [(0,)]


def test_graded_ntr_keys_after_the_sidebar_toggle(server, new_page):
    base, db_path = server
    page = new_page()
    page.goto(f"{base}/ntr?assessor=cb2")
    expect(page.get_by_text(re.compile(r"^Item 1 of \d+ ")).first).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    settled(page)
    page.get_by_text("Graded support (2 / 1 / 0)").click()
    expect(page.get_by_text("How far does the response support the gold nugget of information?")).to_be_visible()
    settled(page)
    press(page, "2")
    expect(page.get_by_text(re.compile(r"^Item 2 of \d+ ")).first).to_be_visible()
    settled(page)
    press(page, "1")
    expect(page.get_by_text(re.compile(r"^Item 3 of \d+ ")).first).to_be_visible()
    settled(page)
    stored = query(db_path, "SELECT support FROM ntr_support_labels WHERE source = 'cb2' ORDER BY updated_at")
    assert stored == [(2,), (1,)]
    assert query(db_path, "SELECT 1 FROM ntr_labels WHERE source = 'cb2'") == []
