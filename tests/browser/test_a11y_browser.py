"""Accessibility in headless Chromium (Debian chromium + Playwright + axe-core from axe-playwright-python):
every page of the workbench has no serious or critical axe violation caused by our markup: every rule in the
light theme, and in the dark theme the rules about colour (the theme changes colours only, not the markup); and a person can turn the single-key shortcuts off (WCAG 2.1.4), a choice kept for
them in the store.

The one exclusion is Streamlit's own sidebar menu, whose section headings are ``div``s inside its ``ul``
(axe's ``list`` / ``listitem`` rules): that markup is Streamlit's, drawn the same for every app with
navigation sections, and is named in the assertion message should it ever change.

Never downloads a browser: the module skips when /usr/bin/chromium or playwright is absent.
"""

from __future__ import annotations

import re

import pytest

from assess.ui.frame import menu
from tests.browser_support import (  # noqa: F401  (fixtures)
    LOAD_TIMEOUT_MS,
    browser,
    expect,
    focus_body,
    press,
    query,
    settled,
    streamlit_server,
)

pytestmark = pytest.mark.browser

axe_module = pytest.importorskip("axe_playwright_python.sync_playwright", reason="axe-playwright-python is absent")

PAGES = [page.url_path for pages in menu() for page in pages]
"""Every page of the menu (assess.ui.frame.menu), by address, in menu order."""

STREAMLIT_MENU = ("list", "listitem")
COLOUR_RULES = {
    "resultTypes": ["violations"],
    "runOnly": {"type": "rule", "values": ["color-contrast", "link-in-text-block"]},
}
"""The axe rules a theme can change: the dark theme's run checks only these."""


def seed(db_path) -> None:
    """The demo plus cited responses, so /citations has items."""
    from assess.services.loading import load_demo
    from store import open_db
    from store import responses as cited
    from tests.app.test_rag_pages import cited_responses

    with open_db(db_path) as db:
        load_demo(db)
        cited.add_responses(db, "answers.jsonl", cited_responses())


@pytest.fixture(scope="module")
def server(tmp_path_factory, browser):
    with streamlit_server(tmp_path_factory.mktemp("e2e-a11y"), seed) as s:
        yield s


def ours(page, violation: dict) -> list[str]:
    """The nodes of an axe violation that are not Streamlit's sidebar menu (see the module's docstring)."""
    found = []
    for node in violation["nodes"]:
        in_menu = violation["id"] in STREAMLIT_MENU and page.evaluate(
            "(target) => { const el = document.querySelector(target);"
            " return !!(el && el.closest('[data-testid=\"stSidebarNav\"]')); }",
            node["target"][-1],
        )
        if not in_menu:
            found.append(f"{node['html'][:160]} :: {(node.get('failureSummary') or '').strip()[:300]}")
    return found


DARK_APP = (
    "() => { const c = getComputedStyle(document.querySelector('[data-testid=\"stApp\"]')).backgroundColor;"
    " const [r, g, b] = c.match(/\\d+/g).map(Number); return r + g + b < 200; }"
)
"""True once the app is drawn in the dark theme (its background nearly black)."""
TRANSITIONS_OVER = (
    "() => document.getAnimations().every(a => !(a instanceof CSSTransition) || a.playState !== 'running')"
)
"""True once no CSS transition runs (Streamlit's expanders fade their background in 0.15 s: mid-fade colours are
not what anyone reads)."""


def test_every_page_has_no_serious_axe_violation(server, browser):
    """Each page is opened once, in the light theme (every rule), then switched to the dark theme as a system
    setting would switch it (Streamlit follows ``prefers-color-scheme`` as it changes) for the colour rules."""
    base, _db = server
    axe = axe_module.Axe()
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, color_scheme="light")
    context.set_default_timeout(LOAD_TIMEOUT_MS)
    try:
        page = context.new_page()
        problems = []
        for name in PAGES:
            page.emulate_media(color_scheme="light")
            page.goto(f"{base}/{name}?assessor=a11y")
            expect(page.get_by_test_id("stSidebar").get_by_text("Signed in as")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
            settled(page)
            assert name == "home" or page.url.split("?")[0].endswith(f"/{name}"), (name, page.url)
            page.wait_for_timeout(500)  # lazily loaded widgets (the buttons' shortcut hints) have drawn
            settled(page)
            if name == "judge":  # the query-term highlights are what this page is about
                expect(page.locator("div.passage-text mark.qterm").first).to_be_visible(timeout=LOAD_TIMEOUT_MS)
            for scheme, options in (("light", {"resultTypes": ["violations"]}), ("dark", COLOUR_RULES)):
                if scheme == "dark":
                    page.emulate_media(color_scheme="dark")
                    page.wait_for_function(DARK_APP, timeout=LOAD_TIMEOUT_MS)
                    settled(page)
                    page.wait_for_function(TRANSITIONS_OVER, timeout=LOAD_TIMEOUT_MS)
                for violation in axe.run(page, options=options).response["violations"]:
                    if violation["impact"] in ("serious", "critical"):
                        problems += [f"/{name} ({scheme}) {violation['id']}: {node}" for node in ours(page, violation)]
        assert problems == [], "\n".join(problems)
    finally:
        context.close()


def test_a_person_turns_single_key_shortcuts_off_and_it_holds(server, browser):
    base, db_path = server
    shortcuts = '[data-testid="stMain"] [aria-label^="Shortcut"]'
    first = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = first.new_page()
        page.goto(f"{base}/judge?assessor=a11y-keys")
        expect(page.get_by_text(re.compile(r"^Passage \S+ \(1 of \d+\)$"))).to_be_visible(timeout=LOAD_TIMEOUT_MS)
        settled(page)
        expect(page.locator(shortcuts).first).to_be_visible()
        page.get_by_test_id("stSidebar").get_by_text("Single-key shortcuts").click()
        settled(page)
        expect(page.locator(shortcuts)).to_have_count(0)
        focus_body(page)
        page.keyboard.press("2")
        page.wait_for_timeout(1000)  # a key that did something would start a run: none may
        settled(page)
        assert query(db_path, "SELECT 1 FROM passage_labels WHERE source = 'a11y-keys'") == []
        expect(page.get_by_text(re.compile(r"^Passage \S+ \(1 of \d+\)$"))).to_be_visible()
        page.get_by_role("button", name=re.compile(r"^2 · Moderately meets")).click()  # the buttons do it
        expect(page.get_by_text(re.compile(r"^Passage \S+ \(2 of \d+\)$"))).to_be_visible()
        assert query(db_path, "SELECT grade FROM passage_labels WHERE source = 'a11y-keys'") == [(2,)]
    finally:
        first.close()
    second = browser.new_context(viewport={"width": 1400, "height": 1000})  # another browser, later
    try:
        page = second.new_page()
        page.goto(f"{base}/?assessor=a11y-keys")
        sidebar = page.get_by_test_id("stSidebar")
        expect(sidebar.get_by_text("Signed in as")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
        settled(page)
        sidebar.get_by_role("link", name="PTKB relevance").click()
        expect(page.get_by_text(re.compile(r"statements labelled$")).first).to_be_visible(timeout=LOAD_TIMEOUT_MS)
        settled(page)
        expect(page.get_by_role("button", name=re.compile(r"^1 · Relevant"))).to_be_visible()
        expect(page.locator(shortcuts)).to_have_count(0)  # still off for this person, on another page
        page.get_by_test_id("stSidebar").get_by_text("Single-key shortcuts").click()
        settled(page)
        press(page, "1")  # on again: the key labels the statement
        expect(page.get_by_text(re.compile(r": 1 / \d+ statements labelled$")).first).to_be_visible()
        assert query(db_path, "SELECT relevant FROM ptkb_labels WHERE source = 'a11y-keys'") == [(1,)]
    finally:
        second.close()
