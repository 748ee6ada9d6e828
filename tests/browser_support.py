"""Shared pieces of the headless-Chromium tests: a Streamlit server on a free port with its own
store, Debian chromium through Playwright, and small page helpers.

Never downloads a browser: importing this module skips the test module when /usr/bin/chromium or
the playwright package is absent.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from pathlib import Path

import pytest

from tests.processes import free_port as _free_port  # noqa: F401  (used by test_deploy)
from tests.processes import streamlit_app

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path(os.environ.get("ASSESS_E2E_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
START_TIMEOUT_S = 60  # server start-up
LOAD_TIMEOUT_MS = 60_000  # first page: the first session loads the demo into the empty store
STEP_TIMEOUT_MS = 20_000  # one rerun after a key press

if not CHROMIUM.exists():
    pytest.skip(
        f"{CHROMIUM} is absent (Debian chromium is needed; no browser is ever downloaded)", allow_module_level=True
    )
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the playwright Python package is not installed in this environment"
)
expect = sync_api.expect

# ------------------------------------------------------------------------------------------- server


# ------------------------------------------------------------------------------------------- browser


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
    """Factory for pages in fresh browser contexts (no shared cookies or session); all closed at the end."""
    contexts = []

    def make(width: int = 1400, height: int = 1000):
        context = browser.new_context(viewport={"width": width, "height": height}, locale="en-GB")
        context.set_default_timeout(STEP_TIMEOUT_MS)
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


@contextlib.contextmanager
def streamlit_server(tmp: Path, prepare=None, *, db: Path | None = None, **extra_env: str):
    """``prepare(db_path)``, when given, runs before the server starts.

    Run ``streamlit run app.py`` on a free port with an empty store in ``tmp`` (or the store ``db``,
    which several servers may share, as the processes behind a proxy do); yield (base URL, db path).

    The server runs in its own process group, which is killed on exit (no orphan is left).
    """
    db_path = tmp / "assess.db" if db is None else db
    if prepare is not None:  # e.g. seed the store before the server's first session
        prepare(db_path)
    log_path = tmp / "streamlit.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSESS_")}
    env.update(
        ASSESS_DB=str(db_path),
        ASSESS_OPEN="1",
        STREAMLIT_BROWSER_GATHER_USAGE_STATS="false",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra_env)  # a test may override the defaults above (ASSESS_OPEN="" for sign-in by account)
    with contextlib.ExitStack() as stack:
        try:
            url, _proc = stack.enter_context(streamlit_app("app.py", log_path, env, start_timeout=START_TIMEOUT_S))
        except RuntimeError as exc:
            pytest.fail(str(exc))
        yield url, db_path


def server_per_module(name: str, prepare=None, **extra_env: str):
    """A module-scoped ``server`` fixture: one :func:`streamlit_server` for the module's tests, in a folder
    named after ``name``; it yields (base URL, db path)."""

    @pytest.fixture(scope="module")
    def server(tmp_path_factory):
        with streamlit_server(tmp_path_factory.mktemp(name), prepare, **extra_env) as served:
            yield served

    return server


def demo_store(db_path) -> None:
    """A ``prepare`` for :func:`streamlit_server`: the demo, loaded before the server starts (the first session
    would load it into the empty store while the test waits)."""
    from assess.services.loading import load_demo
    from store import open_db

    with open_db(db_path) as db:
        load_demo(db)


def query(db_path: Path, sql: str, params=()) -> list[tuple]:
    """Read the store the server writes, through a read-only connection opened for this one query."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=10)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def settled(page) -> None:
    """Wait until the script run behind the page has finished (no rerun in flight)."""
    page.wait_for_selector(
        '[data-testid="stApp"][data-test-script-state="notRunning"]', state="attached", timeout=STEP_TIMEOUT_MS
    )


def open_app(page, url: str) -> None:
    """Go to ``url`` and wait until the app is drawn and its script run has finished."""
    page.goto(url)
    expect(page.locator('[data-testid="stApp"]')).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    settled(page)


def focus_body(page) -> None:
    """Make sure key presses go to the document (shortcuts are ignored while a text input has focus)."""
    page.evaluate(
        "() => { if (document.activeElement && document.activeElement !== document.body) "
        "document.activeElement.blur(); }"
    )
    assert page.evaluate("() => document.activeElement === document.body || !document.activeElement")


SHORTCUT_LABELS = {"Left": "←", "Right": "→", "ArrowLeft": "←", "ArrowRight": "→"}


def press(page, key: str) -> None:
    """Press a button's keyboard shortcut once its button is on screen and enabled.

    Streamlit binds a shortcut when the button component mounts (its code is loaded lazily): a key
    pressed before that is silently lost (seen once in 5 runs without this wait), so wait for the
    button that shows the shortcut first.
    """
    label = SHORTCUT_LABELS.get(key, key.upper())
    button = page.locator('[data-testid="stButton"] button').filter(
        has=page.locator(f'[aria-label="Shortcut {label}"]')
    )
    expect(button).to_have_count(1)
    expect(button).to_be_visible()
    expect(button).to_be_enabled()
    focus_body(page)
    page.keyboard.press(key)


DEMO_PASSAGES = ROOT / "assets" / "demo" / "passages.jsonl"


def demo_passage_text(passage_id: str) -> str:
    doc_id, number = passage_id.rsplit(":", 1)
    with open(DEMO_PASSAGES, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row["doc_id"] == doc_id and str(row["passage_id"]) == number:
                return row["passage_text"]
    raise LookupError(passage_id)


# ------------------------------------------------------------------------------------------- accounts


def demo_with_accounts(*accounts: tuple[str, str, str]):
    """A ``prepare`` for :func:`streamlit_server`: the demo store with these (name, role, password) accounts,
    so the app signs in by account (not open mode)."""

    def prepare(db_path) -> None:
        from assess.services.accounts import add_account
        from assess.services.loading import load_demo
        from store import open_db

        db = open_db(db_path)
        load_demo(db)
        for name, role, password in accounts:
            add_account(db, name, role, password=password, by="setup")
        db.close()

    return prepare


def sign_in_with_password(page, name: str, password: str) -> None:
    """Sign in with the sidebar's account form and wait until the page shows the person signed in."""
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_label("Account name")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    sidebar.get_by_label("Account name").fill(name)
    sidebar.get_by_label("Password", exact=True).fill(password)
    sidebar.get_by_role("button", name="Sign in").click()
    # the password check (Argon2) and the page's run it starts: seconds on a loaded 2-core machine
    expect(sidebar.get_by_role("button", name="Sign out")).to_be_visible(timeout=STEP_TIMEOUT_MS)
    settled(page)


# ------------------------------------------------------------------------------------------- widgets, then keys
# The steps of a journey that uses a page's widgets and then its keys with the focus where the widget left it
# (tests/browser/test_ikat_campaign_journey_browser.py).


def no_exception(page) -> None:
    """The page's script run has finished without an exception box or Streamlit's "Page not found"."""
    settled(page)
    expect(page.get_by_test_id("stException")).to_have_count(0)
    expect(page.get_by_text("Page not found")).to_have_count(0)


def toggle(page, label: str) -> None:
    """Click a sidebar toggle: its input keeps the focus."""
    page.get_by_test_id("stSidebar").get_by_text(label).click()
    settled(page)
    assert page.evaluate("() => document.activeElement.tagName") == "INPUT"


def select(page, label: str, option: str) -> None:
    """Choose ``option`` of the select ``label`` with the mouse: its input keeps the focus."""
    box = page.get_by_test_id("stSelectbox").filter(has_text=label)
    expect(box).to_be_visible()
    box.locator("input").click()
    if box.locator('input[aria-expanded="false"]').count():  # a click on the field does not always open it
        box.get_by_role("button", name="Open").click()
    page.get_by_role("option", name=option, exact=True).click()
    settled(page)
    assert page.evaluate("() => document.activeElement.tagName") == "INPUT"


def typed(page, label: str, text: str, leave: str) -> None:
    """Type into a text field and leave it with ``leave`` (Escape or Tab)."""
    field = page.get_by_label(label)
    field.click()
    field.press_sequentially(text)
    field.press(leave)
    settled(page)


def press_here(page, key: str) -> None:
    """Press a shortcut once its button is on screen, with the focus where the last widget left it."""
    label = SHORTCUT_LABELS.get(key, key.upper())
    button = page.locator('[data-testid="stButton"] button').filter(
        has=page.locator(f'[aria-label="Shortcut {label}"]')
    )
    expect(button.first).to_be_visible()
    expect(button.first).to_be_enabled()
    page.keyboard.press(key)


def stored(db_path, sql: str, n: int, params=()) -> None:
    """Wait until the query counts ``n`` rows (a key's write lands after its rerun starts)."""
    import time

    deadline = time.monotonic() + STEP_TIMEOUT_MS / 1000
    while (found := query(db_path, sql, params)[0][0]) != n and time.monotonic() < deadline:
        time.sleep(0.2)
    assert found == n, (sql, params, found, n)


def answers_in_view(page, n: int, height: int, visible_px: int = 250) -> None:
    """Both answer boxes of the n-th battle (0-based) start inside a window ``height`` px high, with at least
    ``visible_px`` of each (or all of it) visible without scrolling."""
    for side in ("left", "right"):
        box = page.locator(f".st-key-battle_box_{side}_{n}")
        expect(box).to_be_visible()
        found = box.bounding_box()
        assert 0 <= found["y"] < height, (side, n, found)
        assert found["y"] + min(found["height"], visible_px) <= height, (side, n, found)
        expect(box.get_by_text(f"{side.capitalize()} answer")).to_be_in_viewport()


def submit_sign_in(page, name: str, password: str) -> None:
    """Fill and send the sidebar's account form; the caller waits for what the page should show then (a
    heavy page's first run after the sign-in may take longer than the default wait of ``sign_in_with_password``)."""
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_label("Account name")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    sidebar.get_by_label("Account name").fill(name)
    sidebar.get_by_label("Password", exact=True).fill(password)
    sidebar.get_by_role("button", name="Sign in").click()
