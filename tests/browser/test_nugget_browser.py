"""The span-selection component in headless Chromium: select passage text, press N, find the exact span stored.

A Streamlit server with a fresh demo store is started for the module (the helpers of
tests/browser/test_browser.py). Selections are made the two ways a user makes them: a DOM Range set on
the rendered text (for exact UTF-16 boundaries, incl. astral characters) and a real mouse drag;
then the real key N (or the component's button) sends the selection. The stored nugget must be
``passage[start:end]`` in code points and equal the selected text, in the Unicode passage
demo-doc-022:0 (emoji with ZWJ and skin tone, combining accents, CJK, Arabic) as well.
"""

from __future__ import annotations

import re
import time

import pytest

from tests.browser_support import (  # noqa: F401  (browser fixture)
    LOAD_TIMEOUT_MS,
    STEP_TIMEOUT_MS,
    browser,
    demo_passage_text,
    query,
    settled,
    streamlit_server,
)

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect

pytestmark = pytest.mark.browser

UNICODE_PASSAGE = "demo-doc-022:0"

# Select the UTF-16 range [s, e) of the concatenated text nodes of the picker's text box.
SELECT_RANGE = """([s, e, passage]) => {
  const box = document.querySelector(passage ? `.sp-text[data-passage="${CSS.escape(passage)}"]` : '.sp-text');
  if (!box) return null;
  const range = document.createRange();
  const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
  let pos = 0, node, started = false;
  while ((node = walker.nextNode())) {
    const len = node.data.length;
    if (!started && s <= pos + len) { range.setStart(node, s - pos); started = true; }
    if (e <= pos + len) { range.setEnd(node, e - pos); break; }
    pos += len;
  }
  const sel = window.getSelection();
  sel.removeAllRanges();
  sel.addRange(range);
  return sel.toString();
}"""

# Client rectangles of the first and last characters of UTF-16 range [s, e) (for a mouse drag).
CHAR_RECTS = """([s, e, firstLen, lastLen]) => {
  const box = document.querySelector('.sp-text');
  function rangeAt(a, b) {
    const range = document.createRange();
    const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
    let pos = 0, node, started = false;
    while ((node = walker.nextNode())) {
      const len = node.data.length;
      if (!started && a < pos + len) { range.setStart(node, a - pos); started = true; }
      if (b <= pos + len) { range.setEnd(node, b - pos); break; }
      pos += len;
    }
    const r = range.getClientRects()[0];
    return { left: r.left, right: r.right, top: r.top, bottom: r.bottom };
  }
  return [rangeAt(s, s + firstLen), rangeAt(e - lastLen, e)];
}"""


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@pytest.fixture(scope="module")
def server(tmp_path_factory, browser):
    with streamlit_server(tmp_path_factory.mktemp("e2e-nuggets")) as (url, db_path):
        context = browser.new_context()
        try:
            page = context.new_page()
            page.goto(url + "/")
            expect(page.get_by_text("Pooled pairs")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
            settled(page)
        finally:
            context.close()
        yield url, db_path


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="en-GB")
    context.set_default_timeout(STEP_TIMEOUT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


def open_picker(page, base: str, assessor: str, passage: str, turn: str = "101_1") -> str:
    """Open the nuggets page on one passage; return the text the picker shows."""
    page.goto(f"{base}/nuggets?assessor={assessor}&turn={turn}&passage={passage}")
    box = page.locator(f'.sp-text[data-passage="{passage}"]')
    expect(box).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    settled(page)
    return box.evaluate("b => b.textContent")


def select(page, s16: int, text: str, passage: str | None = None) -> None:
    """Select ``text`` starting at UTF-16 offset ``s16`` (of ``passage``'s text; default the first passage
    shown). The component re-renders after each stored nugget (or a mode change), and under load another
    passage's box may be drawn first meanwhile: select again until the selection holds."""
    deadline = time.monotonic() + STEP_TIMEOUT_MS / 1000
    while True:
        settled(page)  # no rerun in flight
        if page.evaluate(SELECT_RANGE, [s16, s16 + utf16(text), passage]) == text:
            time.sleep(0.3)  # a redraw that was already under way would drop it: it must still hold
            if page.evaluate("() => window.getSelection().toString()") == text:
                return
        if time.monotonic() > deadline:
            break
        time.sleep(0.25)
    assert page.evaluate("() => window.getSelection().toString()") == text


def stored(db_path, assessor: str) -> list[tuple]:
    return query(
        db_path,
        "SELECT passage_id, start_char, end_char, text, span_method FROM nuggets WHERE source = ? ORDER BY id",
        (assessor,),
    )


def wait_rows(db_path, assessor: str, n: int) -> list[tuple]:
    deadline = time.monotonic() + STEP_TIMEOUT_MS / 1000
    while time.monotonic() < deadline:
        rows = stored(db_path, assessor)
        if len(rows) >= n:
            return rows
        time.sleep(0.1)
    raise AssertionError(f"{assessor}: expected {n} nuggets, the store has {stored(db_path, assessor)}")


def test_range_selection_and_key_n_store_exact_unicode_spans(server, page):
    base, db_path = server
    passage = demo_passage_text(UNICODE_PASSAGE)
    shown = open_picker(page, base, "e2e-nug", UNICODE_PASSAGE)
    assert shown == passage  # rendered as text, character for character
    assert page.locator(".sp-text *:not(mark.sp-nugget)").count() == 0  # no element made from passage text
    needles = [
        "group 🏃\u200d♀️ — new intake",
        "behind — a run leader always stays at the back 👍🏽",
        "Zoe\u0308, wrote her",
        "初心者歓迎 (beginners welcome)",
        "بالتوفيق",
        "cafe\u0301",
    ]
    for n, needle in enumerate(needles, start=1):
        start = passage.index(needle)
        s16 = utf16(passage[:start])
        select(page, s16, needle, UNICODE_PASSAGE)
        page.keyboard.press("n")
        rows = wait_rows(db_path, "e2e-nug", n)
        assert rows[-1] == (UNICODE_PASSAGE, start, start + len(needle), needle, "selected")
        assert passage[rows[-1][1] : rows[-1][2]] == needle
        settled(page)
    # the stored spans are highlighted in the re-rendered passage, which is still the same text
    marks = page.locator(".sp-text mark.sp-nugget")
    expect(marks.first).to_be_visible()
    assert page.locator(".sp-text").evaluate("b => b.textContent") == passage


def test_mouse_drag_then_key_n(server, page):
    base, db_path = server
    passage = demo_passage_text(UNICODE_PASSAGE)
    open_picker(page, base, "e2e-drag", UNICODE_PASSAGE)
    needle = "初心者歓迎 (beginners welcome)"
    start = passage.index(needle)
    s16 = utf16(passage[:start])
    settled(page)  # no rerun in flight: a redraw during the drag would drop the selection (seen under load)
    first, last = page.evaluate(CHAR_RECTS, [s16, s16 + utf16(needle), 1, 1])
    y0 = (first["top"] + first["bottom"]) / 2
    y1 = (last["top"] + last["bottom"]) / 2
    page.mouse.move(first["left"] + 1, y0)
    page.mouse.down()
    page.mouse.move(last["right"] - 1, y1, steps=12)
    page.mouse.up()
    assert page.evaluate("() => window.getSelection().toString()") == needle
    page.keyboard.press("N")
    rows = wait_rows(db_path, "e2e-drag", 1)
    assert rows == [(UNICODE_PASSAGE, start, start + len(needle), needle, "selected")]


def test_button_adds_the_selection_and_whitespace_is_trimmed(server, page):
    base, db_path = server
    passage_id = "demo-doc-001:0"
    passage = demo_passage_text(passage_id)
    open_picker(page, base, "e2e-button", passage_id)
    words = passage.split()
    needle = " ".join(words[3:8])
    start = passage.index(needle)
    s16 = utf16(passage[:start])
    # select one space more on each side: the stored span leaves it out
    page.evaluate(SELECT_RANGE, [s16 - 1, s16 + utf16(needle) + 1])
    page.locator("button.sp-add").click()
    rows = wait_rows(db_path, "e2e-button", 1)
    assert rows == [(passage_id, start, start + len(needle), needle, "selected")]
    expect(page.get_by_text("Nugget added")).to_be_visible()


def test_key_n_without_selection_stores_nothing(server, page):
    base, db_path = server
    open_picker(page, base, "e2e-empty", "demo-doc-001:0")
    page.keyboard.press("n")
    page.wait_for_timeout(800)
    assert stored(db_path, "e2e-empty") == []
    page.locator("button.sp-add").click()
    expect(page.get_by_text("Select some passage text first.")).to_be_visible()
    assert stored(db_path, "e2e-empty") == []


def test_long_passage_with_many_nuggets_stays_responsive(server, page):
    """A 450-word passage with 60 nuggets already marked: select, press N, stored and re-rendered quickly."""
    from store import nuggets as store
    from store import open_db
    from store.db import run, write

    base, db_path = server
    passage_id = "demo-doc-002:3"
    long_text = " ".join(f"Step {i}: run 🏃 then walk, café au lait, 初心者 {i}." for i in range(50))
    assert len(long_text.split()) >= 250
    db = open_db(db_path)
    with write(db):
        run(db, "UPDATE passages SET text = :text WHERE id = :id", {"text": long_text, "id": passage_id})
    for i in range(60):
        needle = f"Step {i}:" if i < 50 else f"初心者 {i - 50}."
        at = long_text.index(needle)
        store.gold.add_span_nugget(db, "e2e-perf", "101_1", passage_id, at, at + len(needle), needle)
    db.close()
    shown = open_picker(page, base, "e2e-perf", passage_id)
    assert shown == long_text
    assert page.locator(".sp-text mark.sp-nugget").count() == 60
    needle = "walk, café au lait, 初心者 48"
    start = long_text.index(needle)
    s16 = utf16(long_text[:start])
    assert page.evaluate(SELECT_RANGE, [s16, s16 + utf16(needle)]) == needle
    began = time.monotonic()
    page.keyboard.press("n")
    rows = wait_rows(db_path, "e2e-perf", 61)
    expect(page.locator(".sp-text mark.sp-nugget")).to_have_count(61)
    settled(page)
    elapsed = time.monotonic() - began
    assert rows[-1] == (passage_id, start, start + len(needle), needle, "selected")
    assert elapsed < 5, f"adding a nugget took {elapsed:.1f} s"


def test_move_span_reselects_an_existing_nugget(server, page):
    """Move span: the next selection + N moves the chosen nugget (same key) instead of adding one;
    the old span stays in the history."""
    import json

    from store import nuggets as store
    from store import open_db

    base, db_path = server
    passage_id = "demo-doc-001:0"
    passage = demo_passage_text(passage_id)
    words = list(re.finditer(r"\S+", passage))
    at, start = words[0].start(), words[6].start()
    old, new = passage[at : words[2].end()], passage[start : words[10].end()]
    db = open_db(db_path)
    store.gold.add_span_nugget(db, "e2e-move", "101_1", passage_id, at, at + len(old), old)
    db.close()
    open_picker(page, base, "e2e-move", passage_id)
    page.get_by_role("button", name="Move span").click()
    expect(page.get_by_text("Moving nugget [1]")).to_be_visible()
    expect(page.locator("button.sp-add")).to_have_text("Move nugget [1] to the selection (N)")
    settled(page)
    select(page, utf16(passage[:start]), new)
    page.keyboard.press("n")
    expect(page.get_by_text("Nugget [1] moved")).to_be_visible()
    assert stored(db_path, "e2e-move") == [(passage_id, start, start + len(new), new, "selected")]
    history = query(
        db_path,
        "SELECT old_value, new_value FROM label_history WHERE source = 'e2e-move' AND "
        "label_table = 'nugget' ORDER BY id",
    )
    assert [(json.loads(o)["start"] if o else None, json.loads(n)["start"]) for o, n in history] == [
        (None, at),
        (at, start),
    ]
    expect(page.get_by_role("button", name="Move span")).to_be_visible()  # back to adding nuggets
    expect(page.locator("button.sp-add")).to_have_text("Add selection as nugget (N)")


def test_ntr_keys_y_and_n(server, page):
    from tests.browser.test_browser import press

    base, db_path = server
    page.goto(f"{base}/ntr?assessor=e2e-ntr")
    expect(page.get_by_text("Is the gold nugget of information covered in the response?")).to_be_visible(
        timeout=LOAD_TIMEOUT_MS
    )
    expect(page.get_by_text("Item 1 of")).to_be_visible()
    settled(page)
    press(page, "y")
    expect(page.get_by_text("Item 2 of")).to_be_visible()
    settled(page)
    press(page, "n")
    expect(page.get_by_text("Item 3 of")).to_be_visible()
    settled(page)
    assert [
        r[0] for r in query(db_path, "SELECT match FROM ntr_labels WHERE source = 'e2e-ntr' ORDER BY updated_at")
    ] == [1, 0]
