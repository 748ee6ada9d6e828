"""Hostile strings in data, in the URL and in error texts stay inert in a real browser.

A store whose conversation title, passage id, response run, LLM source name and nugget key each carry a
markdown image and link, an HTML image and bare autolinks (tests.helpers.hostile_store) is served by
``streamlit run app.py``; Debian chromium opens every page that shows one of them. Every request the page
makes is intercepted: none may leave for another host or port than the app's, and no ``<a href>`` or
``<img>`` built from the data may appear, while the hostile text itself is shown literally.
"""

from __future__ import annotations

import re

import pytest

from tests.browser_support import (
    LOAD_TIMEOUT_MS,
    expect,
    open_app,
    press,
    query,
    server_per_module,
    settled,
    streamlit_server,
)
from tests.helpers import (
    HOSTILE_KEY,
    HOSTILE_LLM,
    HOSTILE_PASSAGE,
    HOSTILE_RUN,
    HOSTILE_STUDY,
    HOSTILE_TITLE,
    TRAP,
    hostile_store,
)

pytestmark = pytest.mark.browser

BAD_URL = re.compile(r"evil\.example|127\.0\.0\.1:9/")


server = server_per_module("inert", hostile_store)


class Guarded:
    """A page in a fresh browser context whose every request outside the app's origin is recorded and
    aborted (so a hostile image or link cannot even reach the network)."""

    def __init__(self, new_page, origin: str):
        self.page = new_page()
        self.origin = origin
        self.escaped: list[str] = []
        self.page.context.route("**/*", self._route)

    def _route(self, route):
        url = route.request.url
        if url.startswith(self.origin + "/") or url == self.origin:
            route.continue_()
        else:
            self.escaped.append(url)
            route.abort()

    def open(self, path: str):
        open_app(self.page, self.origin + path)
        self.page.wait_for_timeout(500)  # images and fonts the last render asked for
        settled(self.page)
        return self.page

    def text(self) -> str:
        """The page's text as a reader sees it (the invisible word joiners that break autolinks dropped)."""
        return self.page.locator('[data-testid="stApp"]').inner_text().replace("\u2060", "")

    def check_inert(self, *shown: str) -> None:
        """Nothing left the origin; no link or image from the data exists; each string of ``shown`` is
        on the page as literal text; no traceback or server path is shown."""
        page = self.page
        assert self.escaped == [], f"requests left the app: {self.escaped}"
        links = page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))")
        images = page.eval_on_selector_all("img[src]", "els => els.map(e => e.getAttribute('src'))")
        sources = page.eval_on_selector_all("[srcset], [background]", "els => els.map(e => e.outerHTML)")
        assert not [h for h in links if BAD_URL.search(h)], links
        assert not [s for s in images if BAD_URL.search(s)], images
        assert not [s for s in sources if BAD_URL.search(s)], sources
        text = self.text()
        for literal in shown:
            assert literal in text, f"{literal!r} is not shown literally"
        assert "Traceback" not in text and "/work/" not in text and "site-packages" not in text


def eventually(condition, seconds: float = 20) -> None:
    """Wait until ``condition()`` holds (a rerun writes the store a moment after the key press)."""
    import time

    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the store never reached the expected state"
        time.sleep(0.1)


def fragment(value: str) -> str:
    """A piece of a hostile string the page must show verbatim (its link target, which markdown would hide)."""
    return re.search(r"\(http://[^)]*\)", value).group(0)


def test_judge_shows_hostile_title_passage_id_and_llm_source_inertly(server, new_page):
    url, db_path = server
    from store import open_db
    from store.queue import set_judging_mode

    set_judging_mode(open_db(db_path), "reveal")  # the LLM's label appears after one's own grade
    guarded = Guarded(new_page, url)
    page = guarded.open("/judge?assessor=ina")
    expect(page.get_by_text("(1 of 218)", exact=False)).to_be_visible()
    guarded.check_inert(fragment(HOSTILE_TITLE), HOSTILE_PASSAGE, "www.evil.example", ":red[alarm]")
    press(page, "3")
    settled(page)
    expect(page.locator('[data-testid="stExpander"]').filter(has_text="says 3")).to_have_count(1)
    page.wait_for_timeout(300)
    guarded.check_inert(HOSTILE_LLM + " says 3", HOSTILE_PASSAGE)
    set_judging_mode(open_db(db_path), "shown")


def test_ptkb_shows_hostile_title_and_llm_source_inertly(server, new_page):
    url, _ = server
    guarded = Guarded(new_page, url)
    guarded.open("/ptkb?assessor=ina")
    guarded.check_inert(fragment(HOSTILE_TITLE), HOSTILE_LLM + " says relevant")


def test_ntr_handles_a_run_name_with_spaces_and_links(server, new_page):
    url, db_path = server
    guarded = Guarded(new_page, url)
    page = guarded.open("/ntr?assessor=ina")
    guarded.check_inert(HOSTILE_RUN, fragment(HOSTILE_TITLE))
    press(page, "Y")  # the first item is the hostile run's: answered and stored under its parts
    answered = "SELECT run, match FROM ntr_labels WHERE source = 'ina'"
    eventually(lambda: query(db_path, answered) == [(HOSTILE_RUN, 1)])
    expect(page.get_by_text("Item 2 of", exact=False)).to_be_visible()
    settled(page)
    press(page, "U")  # undo finds the label by its stored columns, whatever the run name holds
    eventually(lambda: query(db_path, answered) == [])
    expect(page.get_by_text("Item 1 of", exact=False)).to_be_visible()
    settled(page)
    guarded.check_inert(HOSTILE_RUN)


def test_nuggets_and_gold_response_pages(server, new_page):
    url, _ = server
    guarded = Guarded(new_page, url)
    guarded.open("/nuggets?assessor=ina&turn=101_1")
    guarded.check_inert(fragment(HOSTILE_TITLE))
    guarded.open("/gold-response?assessor=ina&turn=101_1")
    guarded.check_inert(fragment(HOSTILE_KEY), HOSTILE_PASSAGE)


def test_crowd_link_with_a_hostile_study_name(server, new_page):
    from urllib.parse import urlencode

    url, _ = server
    guarded = Guarded(new_page, url)
    page = guarded.open("/crowd?" + urlencode({"study": HOSTILE_STUDY, "worker": "w1"}))
    expect(page.locator('[data-testid="stAlertContentError"]')).to_have_count(1)
    guarded.check_inert("This study link does not work")


def test_data_page_refuses_an_upload_named_dot_dot(server, new_page):
    url, db_path = server

    before = query(db_path, "SELECT COUNT(*) FROM passage_labels")
    guarded = Guarded(new_page, url)
    page = guarded.open("/data")
    page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(
        {"name": "..", "mimeType": "text/plain", "buffer": b"101_1 0 demo-doc-001:0 3\n"}
    )
    page.get_by_text("Keep the demo beside my topics").click()  # topics into the demo's store: asked first
    button = page.get_by_role("button", name="Import", exact=True)
    expect(button).to_be_enabled()
    button.click()
    settled(page)
    error = page.locator('[data-testid="stAlertContentError"]')
    expect(error).to_have_count(1)
    assert "not usable as a file name" in error.inner_text()
    guarded.check_inert()
    assert query(db_path, "SELECT COUNT(*) FROM passage_labels") == before


def test_home_lists_the_hostile_sources_inertly_to_an_organizer(server, new_page):
    url, _ = server
    guarded = Guarded(new_page, url)
    guarded.open("/")
    guarded.check_inert()


def test_a_crowd_link_confines_the_browser_after_the_url_is_edited(server, new_page):
    url, _ = server
    guarded = Guarded(new_page, url)
    page = guarded.open("/crowd?study=demo&worker=wz")
    expect(page.get_by_text("I have read the information above", exact=False)).to_be_visible()
    page = guarded.open("/judge")  # the worker edits the URL: a new session, same browser
    expect(page.get_by_text("I have read the information above", exact=False)).to_be_visible()
    assert "Judge passages" not in guarded.text() and "Import & export" not in guarded.text()
    assert TRAP not in guarded.text()


@pytest.mark.parametrize("path", ["/judge?assessor=cold", "/data"])
def test_the_first_request_after_a_cold_start_gets_the_app_frame(tmp_path, new_page, path):
    """A fresh server's first session starts in Streamlit's legacy pages mode (a pages/ folder beside
    app.py); the visitor must end in the app frame at the address asked for, with its navigation."""
    with streamlit_server(tmp_path) as (url, _):
        page = new_page()
        # Record every navigation text the page ever shows, from its first paint on.
        page.add_init_script(
            """window.__navSeen = [];
            new MutationObserver(() => {
                for (const nav of document.querySelectorAll('[data-testid="stSidebarNav"]'))
                    window.__navSeen.push(nav.innerText);
            }).observe(document, {subtree: true, childList: true, characterData: true});"""
        )
        page.goto(url + path)
        nav = page.locator('[data-testid="stSidebarNav"]')
        expect(nav).to_contain_text("Judge passages", timeout=LOAD_TIMEOUT_MS)
        settled(page)
        expect(nav).not_to_contain_text("response nuggets")  # no raw file names left
        if path.startswith("/judge"):
            expect(page.get_by_text("(1 of 217)", exact=False)).to_be_visible()
        else:
            expect(page.get_by_role("heading", name="Import & export")).to_be_visible()
        assert "Traceback" not in page.locator('[data-testid="stApp"]').inner_text()
        seen = page.evaluate("window.__navSeen")
        assert seen and not [s for s in seen if "response nuggets" in s or "Judge passages" not in s]
