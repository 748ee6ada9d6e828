"""The crowd page in headless Chromium: a worker does one full batch with the keyboard (Y / N),
closes the tab midway and resumes, and ends with the completion code (and the MTurk submit form).

Same approach as tests/test_browser.py: a Streamlit server on 127.0.0.1 and a free port in its own
process group (killed at the end), Debian's chromium driven by Playwright, the store checked
through read-only connections. The store is prepared before the server starts (demo + demo study).
Never downloads a browser: skips when /usr/bin/chromium or playwright is absent.
"""

from __future__ import annotations

import re

import pytest

from tests.browser_support import (  # noqa: F401  (fixtures)
    LOAD_TIMEOUT_MS,
    STEP_TIMEOUT_MS,
    browser,
    expect,
    new_page,
    press,
    query,
    settled,
    streamlit_server,
)

BATCH = 11  # 10 items + 1 hidden test item

pytestmark = pytest.mark.browser


def _seed(db_path) -> None:
    """The demo and its NtR crowd study, written before the server starts."""
    from assess.services.loading import load_demo
    from store import crowd as store_crowd
    from store import open_db

    db = open_db(db_path)
    load_demo(db)
    store_crowd.create_demo_study(db)
    db.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with streamlit_server(tmp_path_factory.mktemp("crowd-e2e"), prepare=_seed) as s:
        yield s


def wait_item(page, n: int, timeout: int = STEP_TIMEOUT_MS) -> None:
    expect(page.get_by_text(re.compile(rf"^Item {n} of {BATCH}$")).first).to_be_visible(timeout=timeout)
    settled(page)


def press(page, key: str) -> None:
    """Press a button's shortcut once that button is mounted and enabled (a key pressed earlier is lost)."""
    button = page.locator('[data-testid="stButton"] button').filter(
        has=page.locator(f'[aria-label="Shortcut {key.upper()}"]')
    )
    expect(button).to_have_count(1)
    expect(button).to_be_enabled()
    page.evaluate(
        "() => { if (document.activeElement && document.activeElement !== document.body) "
        "document.activeElement.blur(); }"
    )
    page.keyboard.press(key)


def start_batch(new_page, url: str) -> object:
    page = new_page()
    page.goto(url)
    expect(page.get_by_text("I have read the information above and agree to take part")).to_be_visible(
        timeout=LOAD_TIMEOUT_MS
    )
    settled(page)
    expect(page.get_by_text("Page not found")).to_have_count(0)  # /crowd is the crowd page's own URL
    expect(page.get_by_role("link", name="Import & export")).to_have_count(0)  # no organizer page in sight
    page.get_by_text("I have read the information above and agree to take part").click()
    settled(page)
    page.get_by_role("button", name="Start").click()
    wait_item(page, 1)
    return page


def test_one_full_batch_with_the_keyboard(server, new_page):
    base, db_path = server
    url = f"{base}/crowd?study=demo&PROLIFIC_PID=e2e-prolific&STUDY_ID=st&SESSION_ID=se"
    page = start_batch(new_page, url)
    keys = ["y", "n", "y", "y"]
    for n, key in enumerate(keys, start=1):
        press(page, key)
        wait_item(page, n + 1)
    page.reload()  # closing the tab and coming back resumes the batch
    wait_item(page, len(keys) + 1, timeout=LOAD_TIMEOUT_MS)
    rest = ["n", "y", "n", "n", "y", "n", "y"]
    for n, key in enumerate(rest, start=len(keys) + 1):
        press(page, key)
        if n < BATCH:
            wait_item(page, n + 1)
    expect(page.get_by_text("you have answered every item of your batch")).to_be_visible()
    settled(page)
    code = query(db_path, "SELECT completion_code FROM crowd_assignments WHERE worker = 'e2e-prolific'")[0][0]
    assert code
    expect(page.locator("code").filter(has_text=code)).to_have_count(1)  # the code block mounts lazily
    answers = query(
        db_path,
        "SELECT x.value, x.seconds FROM crowd_answers x JOIN crowd_assignments a ON "
        "a.id = x.assignment_id WHERE a.worker = 'e2e-prolific' ORDER BY x.answered_at",
    )
    assert [v for v, _ in answers] == [1 if k == "y" else 0 for k in keys + rest]
    assert all(s is not None and s > 0 for _, s in answers)


def test_mturk_batch_ends_with_the_submit_form(server, new_page):
    base, db_path = server
    url = (
        f"{base}/crowd?study=demo&workerId=E2EMTURK&assignmentId=3E2EASSIGN&hitId=3HIT"
        "&turkSubmitTo=https%3A%2F%2Fworkersandbox.mturk.com"
    )
    page = start_batch(new_page, url)
    for n in range(1, BATCH + 1):
        press(page, "n")
        if n < BATCH:
            wait_item(page, n + 1)
    form = page.locator('form[method="POST"][action="https://workersandbox.mturk.com/mturk/externalSubmit"]')
    expect(form).to_have_count(1)
    assert form.locator('input[type="hidden"][name="assignmentId"]').get_attribute("value") == "3E2EASSIGN"
    code = query(db_path, "SELECT completion_code FROM crowd_assignments WHERE worker = 'E2EMTURK'")[0][0]
    assert form.locator('input[name="completion_code"]').get_attribute("value") == code
    expect(form.get_by_role("button", name="Submit the HIT")).to_be_visible()
