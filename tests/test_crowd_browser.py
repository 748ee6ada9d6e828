"""The crowd page in headless Chromium: a worker does one full batch with the keyboard (Y / N),
closes the tab midway and resumes, and ends with the completion code (and the MTurk submit form).

Same approach as tests/test_browser.py: a Streamlit server on 127.0.0.1 and a free port in its own
process group (killed at the end), Debian's chromium driven by Playwright, the store checked
through read-only connections. The store is prepared before the server starts (demo + demo study).
Never downloads a browser: skips when /usr/bin/chromium or playwright is absent.
"""
from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path(os.environ.get("ASSESS_E2E_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
START_TIMEOUT_S = 60
LOAD_TIMEOUT_MS = 60_000
STEP_TIMEOUT_MS = 20_000
BATCH = 11                  # 10 items + 1 hidden test item

if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} is absent (Debian chromium is needed; no browser is ever downloaded)",
                allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="the playwright Python package is not installed in this environment")
expect = sync_api.expect

pytestmark = pytest.mark.browser


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the server's process group, then SIGKILL whatever is left; reap the leader last."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and \
                os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("crowd-e2e")
    db_path = tmp / "assess.db"
    sys.path.insert(0, str(ROOT))
    from store import crowd as store_crowd
    from store import open_db
    from store.loading import load_demo

    db = open_db(db_path)
    load_demo(db)
    store_crowd.create_demo_study(db)
    db.conn.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSESS_")}
    env.update(ASSESS_DB=str(db_path), STREAMLIT_BROWSER_GATHER_USAGE_STATS="false", PYTHONUNBUFFERED="1")
    log_path = tmp / "streamlit.log"
    for _attempt in range(3):     # a free port can be taken between probing and binding: retry
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                 "--server.port", str(port), "--server.address", "127.0.0.1",
                 "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            while time.monotonic() < deadline and proc.poll() is None and not _healthy(url):
                time.sleep(0.2)
            if proc.poll() is None and _healthy(url):
                yield url, db_path
                return
        finally:
            _stop(proc)
    pytest.fail("the Streamlit server did not become healthy; its log ends with:\n"
                + log_path.read_text(errors="replace")[-3000:])


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def new_page(browser):
    contexts = []

    def make():
        context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="en-GB")
        context.set_default_timeout(STEP_TIMEOUT_MS)
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


def query(db_path: Path, sql: str, params=()) -> list[tuple]:
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=10)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def settled(page) -> None:
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]',
                           state="attached", timeout=STEP_TIMEOUT_MS)


def wait_item(page, n: int, timeout: int = STEP_TIMEOUT_MS) -> None:
    expect(page.get_by_text(re.compile(rf"^Item {n} of {BATCH}$")).first).to_be_visible(timeout=timeout)
    settled(page)


def press(page, key: str) -> None:
    """Press a button's shortcut once that button is mounted and enabled (a key pressed earlier is lost)."""
    button = page.locator('[data-testid="stButton"] button').filter(
        has=page.locator(f'[aria-label="Shortcut {key.upper()}"]'))
    expect(button).to_have_count(1)
    expect(button).to_be_enabled()
    page.evaluate("() => { if (document.activeElement && document.activeElement !== document.body) "
                  "document.activeElement.blur(); }")
    page.keyboard.press(key)


def start_batch(new_page, url: str) -> object:
    page = new_page()
    page.goto(url)
    expect(page.get_by_text("I have read the information above and agree to take part")).to_be_visible(
        timeout=LOAD_TIMEOUT_MS)
    settled(page)
    expect(page.get_by_text("Page not found")).to_have_count(0)   # /crowd is the crowd page's own URL
    expect(page.get_by_role("link", name="Import & export")).to_have_count(0)   # no organizer page in sight
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
    page.reload()                         # closing the tab and coming back resumes the batch
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
    expect(page.locator("code").filter(has_text=code)).to_have_count(1)   # the code block mounts lazily
    answers = query(db_path, "SELECT x.value, x.seconds FROM crowd_answers x JOIN crowd_assignments a ON "
                             "a.id = x.assignment_id WHERE a.worker = 'e2e-prolific' ORDER BY x.answered_at")
    assert [v for v, _ in answers] == [1 if k == "y" else 0 for k in keys + rest]
    assert all(s is not None and s > 0 for _, s in answers)


def test_mturk_batch_ends_with_the_submit_form(server, new_page):
    base, db_path = server
    url = (f"{base}/crowd?study=demo&workerId=E2EMTURK&assignmentId=3E2EASSIGN&hitId=3HIT"
           "&turkSubmitTo=https%3A%2F%2Fworkersandbox.mturk.com")
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
