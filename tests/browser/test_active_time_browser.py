"""Active time per judgment in headless Chromium: /judge measures in the browser how long each item was on screen
and active, and the key press (or click) that grades it stores that time with the label and its history event.
A wait of 2 s between two key presses is stored as 2000 ms within 300 ms; time with the tab hidden (the page told
so as a browser tells it: document.hidden and a visibilitychange event) does not count.

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


def show(page, n: int) -> tuple[str, str]:
    """Wait until item n is drawn and the browser's clock runs for it (its component has the item the page
    names); return the item."""
    line = page.get_by_text(re.compile(rf"^Passage \S+ \({n} of \d+\)$")).first
    expect(line).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    settled(page)
    passage = line.inner_text().split(" ")[1]
    item = (TURN, passage)
    page.wait_for_function(
        "item => window.__assessClock && window.__assessClock.mounted && window.__assessClock.item === item",
        arg=json.dumps(list(item), separators=(",", ":")),
    )
    return item


def ready(page, key: str) -> None:
    """Everything :func:`press` checks before it presses the key, done ahead so a timed wait ends at the press."""
    button = page.locator('[data-testid="stButton"] button').filter(
        has=page.locator(f'[aria-label="Shortcut {key.upper()}"]')
    )
    expect(button).to_be_enabled()
    focus_body(page)


def on_screen_ms(page) -> float:
    """How long the clock has already run for the item on screen (the steps between its drawing and the test's
    wait: a few round trips, more on a loaded machine), so the wait's own time can be compared exactly."""
    return page.evaluate("() => performance.now() - window.__assessClock.since")


def set_hidden(page, hidden: bool) -> None:
    """The tab goes to the background (or comes back) as the page sees it: document.hidden, visibilityState and
    one visibilitychange event."""
    page.evaluate(
        """hidden => {
            Object.defineProperty(document, "hidden", {configurable: true, get: () => hidden});
            Object.defineProperty(document, "visibilityState", {configurable: true,
                                  get: () => (hidden ? "hidden" : "visible")});
            document.dispatchEvent(new Event("visibilitychange"));
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
    queue = [show(page, 1)]
    press(page, "2")

    queue.append(show(page, 2))
    ready(page, "3")
    lead = [on_screen_ms(page)]
    page.wait_for_timeout(2000)  # the assessor reads for 2 s
    page.keyboard.press("3")

    queue.append(show(page, 3))
    ready(page, "1")
    lead.append(on_screen_ms(page))
    page.wait_for_timeout(1000)
    set_hidden(page, True)  # 1.5 s in another tab: not counted
    page.wait_for_timeout(1500)
    set_hidden(page, False)
    page.wait_for_timeout(500)
    page.keyboard.press("1")

    queue.append(show(page, 4))
    button = page.locator(".st-key-g0 button")
    button.hover()
    lead.append(on_screen_ms(page))
    page.wait_for_timeout(1000)
    button.click()  # a click carries the time as a key press does
    show(page, 5)

    label, events = stored_ms(db_path, queue[1])
    assert abs(label - lead[0] - 2000) <= 300 and events == [label]
    label, events = stored_ms(db_path, queue[2])
    assert abs(label - lead[1] - 1500) <= 300 and events == [label]  # 1 s + 0.5 s visible; not the hidden 1.5 s
    label, events = stored_ms(db_path, queue[3])
    assert abs(label - lead[2] - 1000) <= 300 and events == [label]
    assert max(lead) < 1000  # the waits, not the steps before them, make up the times
    grades = query(db_path, "SELECT passage_id, grade FROM passage_labels WHERE source = ?", (ASSESSOR,))
    assert sorted(grades) == sorted([(queue[0][1], 2), (queue[1][1], 3), (queue[2][1], 1), (queue[3][1], 0)])
