"""/battles in headless Chromium: an assessor judges battles by keyboard (A, L, T, B, ArrowLeft); each verdict is
stored in the order pressed, with the run shown on the left as run_a (the order shown), checked in the SQLite
file itself.

Never downloads a browser: the module skips when /usr/bin/chromium or playwright is absent.
"""

from __future__ import annotations

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


def seed(db_path) -> None:
    """The demo and a plan of one random pair per turn, written before the server's first session."""
    from assess.services import battles
    from assess.services.loading import load_demo
    from store import open_db

    with open_db(db_path) as db:
        load_demo(db)
        battles.plan(db, "p", "random", per_topic=1, seed=1)


@pytest.fixture(scope="module")
def server(tmp_path_factory, browser):
    with streamlit_server(tmp_path_factory.mktemp("e2e-battles"), seed) as s:
        yield s


def wait_judged(page, n: int, timeout: int = STEP_TIMEOUT_MS) -> None:
    expect(page.get_by_text(re.compile(rf"^{n} / \d+ battles judged")).first).to_be_visible(timeout=timeout)
    settled(page)


def press_arrow(page, key: str, label: str) -> None:
    button = page.locator('[data-testid="stButton"] button').filter(
        has=page.locator(f'[aria-label="Shortcut {label}"]')
    )
    expect(button).to_have_count(1)
    expect(button).to_be_enabled()
    focus_body(page)
    page.keyboard.press(key)


def test_keys_store_battles_in_order_with_the_order_shown(server, new_page):
    from assess.services import battles
    from store import open_db

    base, db_path = server
    with open_db(db_path) as db:
        queue = [q for q in battles.queue(db, "p", "kb1") if not q["reshow"]]
    page = new_page()
    page.goto(f"{base}/battles?assessor=kb1")
    wait_judged(page, 0, LOAD_TIMEOUT_MS)
    expect(page.get_by_text("Left answer").first).to_be_visible()
    for n, key in enumerate(("A", "L", "T", "B"), start=1):
        press(page, key)
        wait_judged(page, n)
    press_arrow(page, "ArrowLeft", "←")
    wait_judged(page, 5)
    stored = query(db_path, "SELECT turn_id, run_a, run_b, outcome, reshow, via FROM battles WHERE source = 'kb1'")
    history = query(db_path, "SELECT item, new_value FROM label_history WHERE source = 'kb1' ORDER BY id")
    codes = [1, 2, 0, -1, 1]  # A left, L right, T tie, B both bad, ArrowLeft left
    expected = [(q["turn_id"], q["run_a"], q["run_b"], c, 0, "key") for q, c in zip(queue, codes)]
    assert sorted(stored) == sorted(expected)
    assert history == [(f"{t} {a} {b} 0", str(c)) for t, a, b, c, _, _ in expected]  # in the order pressed
