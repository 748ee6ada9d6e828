"""Every keyboard page's single keys work after any widget of the page is used, without a click on the page:
a toggle or a select keeps the focus after it is used, and Streamlit ignores a shortcut whose key comes from a
form control (assets/ui/key_release.js gives the key back to the page), a text field is left with Esc or Tab.
Each step uses one widget, then presses a label key with the focus wherever the widget left it, and the label
is stored (checked in the SQLite file).

/banks has no single keys (its forms save with buttons), so it has nothing to check here.

Never downloads a browser: the module skips when /usr/bin/chromium or playwright is absent.
"""

from __future__ import annotations

import pytest

from tests.browser_support import (  # noqa: F401  (fixtures)
    LOAD_TIMEOUT_MS,
    browser,
    expect,
    new_page,
    press_here,
    select,
    settled,
    stored,
    streamlit_server,
    toggle,
    typed,
)

pytestmark = pytest.mark.browser


def seed(db_path) -> None:
    """The demo, two cited responses (/citations), two battle plans (/battles), two sources to adjudicate."""
    from assess.services import battles
    from assess.services.loading import load_demo
    from store import open_db, review
    from store import responses as cited
    from tests.app.test_rag_pages import cited_responses

    with open_db(db_path) as db:
        load_demo(db)
        cited.add_responses(db, "answers.jsonl", cited_responses())
        battles.plan(db, "first", "random", per_topic=1, seed=1)
        battles.plan(db, "second", "random", per_topic=1, seed=2)
        review.set_adjudication_settings(db, ["demo-ann", "demo-ben"], False, by="setup")


@pytest.fixture(scope="module")
def server(tmp_path_factory, browser):
    with streamlit_server(tmp_path_factory.mktemp("e2e-keys-widgets"), seed) as s:
        yield s


def open_page(page, base: str, path: str, person: str, ready: str) -> None:
    page.goto(f"{base}/{path}?assessor={person}")
    expect(page.get_by_text(ready).first).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    settled(page)


SHORTCUTS = "Single-key shortcuts"


def test_judge_keys_after_the_switch_and_the_note_field(server, new_page):
    base, db_path = server
    page = new_page()
    open_page(page, base, "judge", "kwj", "Passage ")
    count = "SELECT COUNT(*) FROM passage_labels WHERE source = 'kwj'"
    steps = [
        lambda: (toggle(page, SHORTCUTS), toggle(page, SHORTCUTS)),  # off and on again
        lambda: typed(page, "Note (optional; Enter or Esc returns to the keys)", "seen", "Escape"),
        lambda: typed(page, "Note (optional; Enter or Esc returns to the keys)", "seen", "Tab"),
    ]
    for n, use in enumerate(steps, start=1):
        use()
        press_here(page, "2")
        stored(db_path, count, n)
        settled(page)


def test_ptkb_keys_after_the_switch(server, new_page):
    base, db_path = server
    page = new_page()
    open_page(page, base, "ptkb", "kwp", "Relevant")
    toggle(page, SHORTCUTS)
    toggle(page, SHORTCUTS)
    press_here(page, "1")
    stored(db_path, "SELECT COUNT(*) FROM ptkb_labels WHERE source = 'kwp'", 1)


def test_ntr_keys_after_graded_support_the_nugget_select_and_the_switch(server, new_page):
    base, db_path = server
    page = new_page()
    open_page(page, base, "ntr", "kwn", "Yes")
    toggle(page, "Graded support (2 / 1 / 0)")  # the reported case: no key worked after it until a click
    press_here(page, "2")
    stored(db_path, "SELECT COUNT(*) FROM ntr_support_labels WHERE source = 'kwn'", 1)
    settled(page)
    toggle(page, SHORTCUTS)
    toggle(page, SHORTCUTS)
    press_here(page, "1")
    stored(db_path, "SELECT COUNT(*) FROM ntr_support_labels WHERE source = 'kwn'", 2)
    settled(page)
    toggle(page, "Graded support (2 / 1 / 0)")  # back to yes / no
    press_here(page, "Y")
    stored(db_path, "SELECT COUNT(*) FROM ntr_labels WHERE source = 'kwn'", 1)
    settled(page)
    select(page, "Gold nuggets", "gold")
    press_here(page, "N")
    stored(db_path, "SELECT COUNT(*) FROM ntr_labels WHERE source = 'kwn'", 2)


def test_citation_keys_after_the_switch(server, new_page):
    base, db_path = server
    page = new_page()
    open_page(page, base, "citations", "kwc", "Citation ")
    toggle(page, SHORTCUTS)
    toggle(page, SHORTCUTS)
    press_here(page, "2")
    stored(db_path, "SELECT COUNT(*) FROM citation_labels WHERE source = 'kwc'", 1)


def test_battle_keys_after_the_plan_select_and_the_switch(server, new_page):
    base, db_path = server
    page = new_page()
    open_page(page, base, "battles", "kwb", "Left answer")
    count = "SELECT COUNT(*) FROM battles WHERE source = 'kwb'"
    select(page, "Battle plan", "first")
    press_here(page, "T")
    stored(db_path, count, 1)
    settled(page)
    toggle(page, SHORTCUTS)
    toggle(page, SHORTCUTS)
    press_here(page, "ArrowLeft")
    stored(db_path, count, 2)


def test_adjudication_keys_after_the_switch_and_the_reason_field(server, new_page):
    base, db_path = server
    page = new_page()
    open_page(page, base, "adjudicate", "kwa", "Passage ")
    count = "SELECT COUNT(*) FROM passage_labels WHERE source = 'adjudication'"
    reason = "Reason (optional; stored with the grade; Enter or Esc returns to the keys)"
    steps = [
        lambda: (toggle(page, SHORTCUTS), toggle(page, SHORTCUTS)),
        lambda: typed(page, reason, "because", "Escape"),
        lambda: typed(page, reason, "because", "Tab"),
    ]
    for n, use in enumerate(steps, start=1):
        use()
        press_here(page, "3")
        stored(db_path, count, n)
        settled(page)
