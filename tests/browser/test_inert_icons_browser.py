"""In Chromium: a conversation title's ``:material/…:`` and emoji shortcodes are shown as written (no icon), and
a crowd study's consent text and instructions load no image (an image becomes a plain link)."""

from __future__ import annotations

import pytest

from tests.browser import test_inert_browser as base
from tests.browser_support import (  # noqa: F401  (fixtures)
    LOAD_TIMEOUT_MS,
    browser,
    expect,
    new_page,
    streamlit_server,
)
from tests.helpers import TRAP

pytestmark = pytest.mark.browser

TITLE = "Night runs :material/home: and :material/lock_open: :smile: :rocket:"
CONSENT = f"**Consent.** ![c](http://{TRAP}/consent.png) ![ref][r]\n\n[r]: http://{TRAP}/ref.png"
INSTRUCTIONS = f"Judge each pair. ![i](http://{TRAP}/instructions.png) [the manual](https://example.org/m)"


def _prepare(path) -> None:
    from assess.crowd.rules import StudyConfig
    from assess.services.loading import load_demo
    from store import crowd as store_crowd
    from store import open_db
    from store.db import run, write

    with open_db(path) as db:
        load_demo(db)
        with write(db):
            run(
                db,
                "UPDATE conversations SET title = :t WHERE id = (SELECT conversation_id FROM turns WHERE id = '101_1')",
                {"t": TITLE},
            )
        store_crowd.create_study(
            db,
            "pix",
            StudyConfig(qc="none", batch_size=2, platform="prolific", prolific_code="C1A2B3C4"),
            runs=["demo-dense"],
            guideline={"consent": CONSENT, "instructions": INSTRUCTIONS},
        )


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with streamlit_server(tmp_path_factory.mktemp("icons"), prepare=_prepare) as (url, db_path):
        yield url, db_path


def _icons(page) -> list[str]:
    return page.eval_on_selector_all(
        '[data-testid="stMain"] [data-testid="stIconMaterial"], [data-testid="stMain"] .material-icons',
        "els => els.map(e => e.textContent)",
    )


def test_a_title_shows_its_icon_shortcodes_as_text(server, new_page):
    url, _ = server
    guarded = base.Guarded(new_page, url)
    page = guarded.open("/judge?assessor=ina")
    expect(page.get_by_text("Night runs", exact=False).first).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    text = guarded.text()
    assert ":material/home:" in text and ":material/lock_open:" in text and ":smile:" in text
    assert not [i for i in _icons(page) if i in ("home", "lock_open")]
    assert "\U0001f604" not in text and "\U0001f680" not in text  # no emoji drawn for :smile: / :rocket:


def test_crowd_consent_and_instructions_load_no_image(server, new_page):
    url, _ = server
    guarded = base.Guarded(new_page, url)
    page = guarded.open("/crowd?study=pix&PROLIFIC_PID=w0rker1&STUDY_ID=s1&SESSION_ID=x1")
    expect(page.get_by_text("Consent.", exact=False).first).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    page.wait_for_timeout(500)
    images = page.eval_on_selector_all("img[src]", "els => els.map(e => e.getAttribute('src'))")
    assert not [s for s in images if TRAP in s], images
    assert not [u for u in guarded.escaped if TRAP in u], guarded.escaped  # nothing was even asked for
    links = page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))")
    assert "https://example.org/m" in links  # the instructions keep their own formatting
