"""The crowd page in headless Chromium: a worker does one full batch with the keyboard (Y / N),
closes the tab midway and resumes, and ends with the completion code (and the MTurk submit form).

Same approach as tests/browser/test_browser.py: a Streamlit server on 127.0.0.1 and a free port in its own
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


def crowd_cookies(page) -> dict[str, str]:
    return {c["name"]: c["value"] for c in page.context.cookies() if c["name"].startswith("assess_crowd")}


def test_crowd_takeover_by_url_refused(server, new_page):
    """Bob's link opened in another browser: a plain refusal, no batch, no completion code; Bob's own browser
    (a new tab, a reload) goes on with his batch and ends with his code."""
    import hashlib

    base, db_path = server
    url = f"{base}/crowd?study=demo&worker=bob"
    bob = start_batch(new_page, url)
    press(bob, "y")
    wait_item(bob, 2)
    secret = next(v for k, v in crowd_cookies(bob).items() if k.startswith("assess_crowd_id_"))
    # the store holds the hash of the secret in Bob's cookie, never the secret
    assert query(db_path, "SELECT secret_hash FROM crowd_bindings WHERE study = 'demo' AND worker = 'bob'") == [
        (hashlib.sha256(secret.encode()).hexdigest(),)
    ]

    thief = new_page()  # another browser (a fresh context: no cookie)
    thief.goto(url)
    expect(thief.get_by_text("already in use in another browser")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    settled(thief)
    expect(thief.get_by_text(re.compile(r"^Item \d+ of"))).to_have_count(0)
    expect(thief.get_by_text("I have read the information above")).to_have_count(0)
    expect(thief.locator('[data-testid="stButton"]')).to_have_count(0)

    tab = bob.context.new_page()  # Bob's browser, a new tab: his batch, where he left it
    tab.goto(url)
    wait_item(tab, 2, timeout=LOAD_TIMEOUT_MS)
    for n in range(2, BATCH + 1):
        press(tab, "n")
        if n < BATCH:
            wait_item(tab, n + 1)
    expect(tab.get_by_text("you have answered every item of your batch")).to_be_visible()
    code = query(db_path, "SELECT completion_code FROM crowd_assignments WHERE worker = 'bob'")[0][0]
    expect(tab.locator("code").filter(has_text=code)).to_have_count(1)

    thief.goto(url)  # still refused once the batch is done, and never shown the code
    expect(thief.get_by_text("already in use in another browser")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    settled(thief)
    assert code not in thief.content()
    assert query(db_path, "SELECT COUNT(*) FROM crowd_assignments WHERE worker = 'bob'") == [(1,)]


def workbench(page) -> None:
    """The workbench's own home (not the crowd page): its title and the sidebar's sign-in."""
    expect(page.get_by_role("heading", name="Assessment workbench")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    settled(page)
    expect(page.get_by_text("I have read the information above")).to_have_count(0)


def test_the_crowd_cookie_never_traps_anyone_who_leaves_or_signs_in(server, new_page):
    base, _ = server
    url = f"{base}/crowd?study=demo&worker=carol"
    page = start_batch(new_page, url)
    press(page, "y")
    wait_item(page, 2)
    assert "assess_crowd" in crowd_cookies(page)
    page.goto(base + "/")  # unfinished batch: the address without ?study= brings the crowd page back
    wait_item(page, 2, timeout=LOAD_TIMEOUT_MS)
    page.goto(base + "/judge?assessor=organizer-olga")  # an address that signs someone in: the workbench
    expect(page.get_by_text("Signed in as")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    expect(page.get_by_text(re.compile(r"^Item \d+ of"))).to_have_count(0)
    page.goto(url)  # the study link still continues Carol's batch in this browser
    wait_item(page, 2, timeout=LOAD_TIMEOUT_MS)

    leave = page.get_by_role("link", name="Leave the study page")  # the explicit way out (/?leave-study=1)
    expect(leave).to_have_count(1)
    if leave.get_attribute("target") == "_blank":
        with page.context.expect_page() as opened:
            leave.click()
        page.close()
        page = opened.value
    else:
        leave.click()
    workbench(page)  # the workbench, and the crowd link forgotten
    assert "leave-study" not in page.url
    expect(page.get_by_text(re.compile(r"^Item \d+ of"))).to_have_count(0)
    page.wait_for_function("() => !document.cookie.split('; ').some((c) => c.startsWith('assess_crowd='))")
    page.goto(base + "/")
    workbench(page)
    assert "assess_crowd" not in crowd_cookies(page)
    assert any(k.startswith("assess_crowd_id_") for k in crowd_cookies(page))  # Carol's binding stays
    page.goto(url)
    wait_item(page, 2, timeout=LOAD_TIMEOUT_MS)


def test_a_finished_batch_no_longer_brings_the_crowd_page_back(server, new_page):
    base, _ = server
    page = start_batch(new_page, f"{base}/crowd?study=demo&worker=dora")
    for n in range(1, BATCH + 1):
        press(page, "y")
        if n < BATCH:
            wait_item(page, n + 1)
    expect(page.get_by_text("you have answered every item of your batch")).to_be_visible()
    page.wait_for_function("() => !document.cookie.split('; ').some((c) => c.startsWith('assess_crowd='))")
    page.goto(base + "/")
    workbench(page)


def test_a_signed_in_person_who_tries_a_crowd_link_gets_the_workbench_back(server, new_page):
    base, _ = server
    page = new_page()
    page.goto(base + "/judge?assessor=organizer-pat")
    expect(page.get_by_text("Signed in as")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    page.wait_for_function("() => document.cookie.split('; ').some((c) => c.startsWith('assess_session='))")
    page.goto(base + "/crowd?study=demo&worker=pat-trying")  # a study link is always its crowd page
    expect(page.get_by_text("I have read the information above")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    page.wait_for_function("() => document.cookie.split('; ').some((c) => c.startsWith('assess_crowd='))")
    page.goto(base + "/")  # the crowd cookie does not hold a browser whose person is signed in
    workbench(page)
    expect(page.get_by_text("Signed in as")).to_be_visible()
