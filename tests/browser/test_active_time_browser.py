"""Active time per judgment in headless Chromium: /judge measures in the browser how long each item was on screen
and active, and the key press (or click) that grades it stores that time with the label and its history event.
A wait of 2 s between two key presses is stored within 300 ms of the time the page itself saw between the item's
drawing and the press (at least the 2 s; a loaded machine adds the test's own steps, which the page's clock sees
too); time with the tab hidden (the page told so as a browser tells it: document.hidden and a visibilitychange
event) does not count.

Never downloads a browser: the module skips when /usr/bin/chromium or playwright is absent.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.browser_support import (  # noqa: F401  (fixtures)
    LOAD_TIMEOUT_MS,
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

TURN = "101_5"
ASSESSOR = "timer"


def seed(db_path) -> None:
    from assess.services.loading import load_demo
    from store import open_db
    from store.conversations import assign

    with open_db(db_path) as db:
        load_demo(db)
        assign(db, ASSESSOR, [TURN], by="setup")


@pytest.fixture(scope="module")
def server(tmp_path_factory, browser):
    with streamlit_server(tmp_path_factory.mktemp("e2e-active-time"), seed) as s:
        yield s


def show(page, n: int) -> tuple[tuple[str, str], float]:
    """Wait until item n is drawn and the browser's clock runs for it (its component has the item the page
    names); return the item and when, in the page's clock (performance.now()), its timing started."""
    line = page.get_by_text(re.compile(rf"^Passage \S+ \({n} of \d+\)$")).first
    expect(line).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    settled(page)
    item = (TURN, line.inner_text().split(" ")[1])
    page.wait_for_function(
        "item => window.__assessClock && window.__assessClock.mounted && window.__assessClock.item === item",
        arg=json.dumps(list(item), separators=(",", ":")),
    )
    return item, page.evaluate("() => window.__assessClock.since")


def ready(page, key: str) -> None:
    """Everything :func:`press` checks before it presses the key, done ahead so a timed wait ends at the press."""
    button = page.locator('[data-testid="stButton"] button').filter(
        has=page.locator(f'[aria-label="Shortcut {key.upper()}"]')
    )
    expect(button).to_be_enabled()
    focus_body(page)


WATCH = """() => {
    window.__inputs = [];
    const seen = (event) => window.__inputs.push(performance.now());
    window.addEventListener("keydown", seen, true);
    document.addEventListener("click", seen, true);
}"""
"""The test's own record of when each key press and click reached the page (the page's clock): the wall time a
step of Playwright takes on a loaded machine is no part of what the assessor's clock should count."""


def last_input(page) -> float:
    return page.evaluate("() => window.__inputs[window.__inputs.length - 1]")


def set_hidden(page, hidden: bool) -> float:
    """The tab goes to the background (or comes back) as the page sees it: document.hidden, visibilityState and
    one visibilitychange event; returns when, in the page's clock."""
    return page.evaluate(
        """hidden => {
            Object.defineProperty(document, "hidden", {configurable: true, get: () => hidden});
            Object.defineProperty(document, "visibilityState", {configurable: true,
                                  get: () => (hidden ? "hidden" : "visible")});
            document.dispatchEvent(new Event("visibilitychange"));
            return performance.now();
        }""",
        hidden,
    )


def stored_ms(db_path, item) -> tuple:
    label = query(
        db_path,
        "SELECT active_ms FROM passage_labels WHERE source = ? AND turn_id = ? AND passage_id = ?",
        (ASSESSOR, *item),
    )
    event = query(
        db_path,
        "SELECT active_ms FROM label_history WHERE source = ? AND label_table = 'passage' AND item = ?",
        (ASSESSOR, " ".join(item)),
    )
    return label[0][0], [ms for (ms,) in event]


def test_the_time_between_key_presses_is_stored_and_a_hidden_tab_does_not_count(server, new_page):
    base, db_path = server
    page = new_page()
    page.goto(f"{base}/judge?assessor={ASSESSOR}")
    first, _ = show(page, 1)
    page.evaluate(WATCH)
    press(page, "2")

    second, start = show(page, 2)
    ready(page, "3")
    page.wait_for_timeout(2000)  # the assessor reads for 2 s
    page.keyboard.press("3")
    read = last_input(page) - start  # from the item's drawing to the key press, in the page's clock

    third, start = show(page, 3)
    ready(page, "1")
    page.wait_for_timeout(1000)
    hidden_at = set_hidden(page, True)  # 1.5 s in another tab: not counted
    page.wait_for_timeout(1500)
    hidden = set_hidden(page, False) - hidden_at
    page.wait_for_timeout(500)
    page.keyboard.press("1")
    visible = last_input(page) - start - hidden

    fourth, start = show(page, 4)
    button = page.locator(".st-key-g0 button")
    button.hover()  # where the click lands is found before the wait; the click itself is one mouse press
    box = button.bounding_box()
    page.wait_for_timeout(1000)
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)  # a click carries the time too
    clicked = last_input(page) - start
    show(page, 5)

    label, events = stored_ms(db_path, second)
    assert label >= 2000 - 300 and abs(label - read) <= 300 and events == [label]
    label, events = stored_ms(db_path, third)
    assert hidden >= 1500 and abs(label - visible) <= 300 and events == [label]  # the hidden 1.5 s left out
    assert label >= 1500 - 300
    label, events = stored_ms(db_path, fourth)
    assert label >= 1000 - 300 and abs(label - clicked) <= 300 and events == [label]
    grades = query(db_path, "SELECT passage_id, grade FROM passage_labels WHERE source = ?", (ASSESSOR,))
    assert sorted(grades) == sorted([(first[1], 2), (second[1], 3), (third[1], 1), (fourth[1], 0)])
