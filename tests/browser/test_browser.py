"""End-to-end tests of the Streamlit workbench in headless Chromium (Debian chromium + Playwright).

A Streamlit server is started for the module on a free port with a fresh temporary store
($ASSESS_DB), so its first session loads the embedded demo (2 conversations, 217 pooled pairs);
a second, never-visited server (with an organizer password) covers the very first visit.
Each test signs in under its own assessor name, so the tests do not see each other's labels.
Labels are checked in the SQLite file itself, opened read-only. Keys are pressed with
page.keyboard on the document body, as an assessor would.

Run:  .venv/bin/python -m pytest tests/browser/test_browser.py -q
Never downloads a browser: the tests skip when /usr/bin/chromium or playwright is absent.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.browser_support import (  # noqa: F401  (fixtures)
    LOAD_TIMEOUT_MS,
    ROOT,
    STEP_TIMEOUT_MS,
    browser,
    demo_passage_text,
    expect,
    focus_body,
    new_page,
    press,
    query,
    settled,
    streamlit_server,
)

TOTAL = 217  # pooled (turn, passage) pairs of the embedded demo

pytestmark = pytest.mark.browser

POSITION = re.compile(r"Passage (\S+) \((\d+) of (\d+)\)")


@pytest.fixture(scope="module")
def server(tmp_path_factory, browser):
    """The server the tests share, warmed up: its main page has run once, which loads the demo, so
    no test's timing depends on being first (the first visit is covered by the fresh-server tests)."""
    with streamlit_server(tmp_path_factory.mktemp("e2e")) as (url, db_path):
        context = browser.new_context()
        try:
            page = context.new_page()
            page.goto(url + "/")
            expect(page.get_by_text("Assessment workbench").first).to_be_visible(timeout=LOAD_TIMEOUT_MS)
            expect(page.get_by_text("Pooled pairs")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
            settled(page)
        finally:
            context.close()
        yield url, db_path


@pytest.fixture(scope="module")
def cold_server(tmp_path_factory):
    """A fresh server with an organizer password whose main page has never run."""
    with streamlit_server(tmp_path_factory.mktemp("e2e-cold"), ASSESS_ORGANIZER_PASSWORD="e2e-secret") as s:
        yield s


# ------------------------------------------------------------------------------------------- helpers


def passage_queue(db_path: Path) -> list[tuple[str, str]]:
    """The open-mode passage queue, written independently of store.queue: conversation, turn, passage id."""
    return [
        (t, p)
        for t, p in query(
            db_path,
            """
        SELECT p.turn_id, p.passage_id FROM pool p JOIN turns t ON t.id = p.turn_id
        JOIN conversations c ON c.id = t.conversation_id ORDER BY c.rowid, t.position, p.passage_id""",
        )
    ]


def wait_position(page, n: int | None, timeout: int = STEP_TIMEOUT_MS) -> tuple[str, int]:
    """Wait until the judge page shows "Passage `…` (n of 217)" (any n when None) and the run is over;
    return (passage id, n)."""
    number = r"\d+" if n is None else str(n)
    line = page.get_by_text(re.compile(rf"^Passage \S+ \({number} of {TOTAL}\)$")).first
    expect(line).to_be_visible(timeout=timeout)
    settled(page)
    text = page.get_by_text(POSITION).first.inner_text().strip()
    m = POSITION.fullmatch(text)
    assert m and (n is None or int(m.group(2)) == n) and int(m.group(3)) == TOTAL, text
    return m.group(1), int(m.group(2))


def open_judge(new_page, base: str, assessor: str, expected_position: int | None, **deep_link) -> tuple:
    """Open /judge signed in as ``assessor``; return (page, (passage id, position), dialogs seen)."""
    page = new_page()
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    params = "&".join(f"{k}={v}" for k, v in {"assessor": assessor, **deep_link}.items())
    page.goto(f"{base}/judge?{params}")
    passage = wait_position(page, expected_position, timeout=LOAD_TIMEOUT_MS)
    return page, passage, dialogs


def progress_text(page) -> str:
    bar = page.get_by_text(re.compile(r"^Turn \S+: \d+ / \d+ judged · all: \d+ / \d+$")).first
    expect(bar).to_be_visible()
    return bar.inner_text().strip()


# ------------------------------------------------------------------------------------------- tests


def test_keys_grade_store_and_resume(server, new_page):
    base, db_path = server
    page, (first, _n), _ = open_judge(new_page, base, "e2e1", 1)
    expected = passage_queue(db_path)
    assert len(expected) == TOTAL
    assert expected[0] == ("101_1", "demo-doc-001:0") and first == "demo-doc-001:0"
    assert progress_text(page).endswith(f"all: 0 / {TOTAL}")

    grades = [2, 0, 3]
    for n, g in enumerate(grades, start=1):
        press(page, str(g))
        shown, _ = wait_position(page, n + 1)
        assert shown == expected[n][1], f"after grading item {n} the page shows {shown}, not {expected[n]}"

    rows = query(db_path, "SELECT turn_id, passage_id, grade, mode, via FROM passage_labels WHERE source = 'e2e1'")
    assert sorted(rows, key=lambda r: expected.index((r[0], r[1]))) == [
        (t, p, g, "blind", "ui") for (t, p), g in zip(expected[:3], grades)
    ]
    # The history holds the three key presses, in the order they were made.
    history = query(db_path, "SELECT item, old_value, new_value FROM label_history WHERE source = 'e2e1' ORDER BY id")
    assert history == [(f"{t} {p}", None, str(g)) for (t, p), g in zip(expected[:3], grades)]

    turn_total = sum(1 for t, _p in expected if t == expected[0][0])
    resumed = f"Turn {expected[0][0]}: 3 / {turn_total} judged · all: 3 / {TOTAL}"

    page.reload()  # a new Streamlit session: it must resume from the store, not from session state
    assert wait_position(page, 4, timeout=LOAD_TIMEOUT_MS)[0] == expected[3][1]
    assert progress_text(page) == resumed

    other, (shown, _n), _ = open_judge(new_page, base, "e2e1", 4)  # a second, fresh browser context
    assert shown == expected[3][1]
    assert progress_text(other) == resumed


def test_thirty_grades_pressed_quickly_are_all_stored_in_order(server, new_page):
    """An assessor who knows the passages presses the next grade as soon as the next passage is shown,
    without waiting for the page's run to end. Every press is one label of the passage it was
    pressed on, in queue order (across a turn boundary too), with the history in the same order."""
    base, db_path = server
    expected = passage_queue(db_path)
    first_turn = sum(1 for t, _p in expected if t == expected[0][0])
    assert first_turn < 30, "the presses should cross into the second turn (a whole-page run)"
    page, (first, _n), _ = open_judge(new_page, base, "e2e-fast", 1)
    assert first == expected[0][1]
    grades = [(3 * n + 1) % 5 for n in range(30)]  # every grade, in no particular order
    for n, g in enumerate(grades, start=1):
        press(page, str(g))
        line = page.get_by_text(re.compile(rf"^Passage \S+ \({n + 1} of {TOTAL}\)$")).first
        expect(line).to_be_visible(timeout=LOAD_TIMEOUT_MS)  # the next passage is on screen: press again
    settled(page)
    stored = query(
        db_path,
        "SELECT item, new_value FROM label_history WHERE source = 'e2e-fast' ORDER BY id",
    )
    assert stored == [(f"{t} {p}", str(g)) for (t, p), g in zip(expected[:30], grades)]
    labels = query(db_path, "SELECT turn_id, passage_id, grade FROM passage_labels WHERE source = 'e2e-fast'")
    assert sorted(labels, key=lambda r: expected.index((r[0], r[1]))) == [
        (t, p, g) for (t, p), g in zip(expected[:30], grades)
    ]


def test_untrusted_passage_text_is_inert(server, new_page):
    base, db_path = server
    page, (shown, n), dialogs = open_judge(new_page, base, "e2e-xss", None, turn="101_4", passage="demo-doc-012:2")
    assert shown == "demo-doc-012:2"
    assert n == passage_queue(db_path).index(("101_4", "demo-doc-012:2")) + 1
    expect(page.get_by_text(re.compile(r"^Turn 101_4: "))).to_be_visible()
    box = page.locator("div.passage-text")
    expect(box).to_have_count(1)
    page.wait_for_timeout(500)  # give an injected onerror handler or script the chance to fire
    text = box.inner_text()
    for literal in [
        "<script>alert('x')</script>",
        '<img src=x onerror="alert(1)">',
        "[click here](javascript:alert(1))",
        "**Comfort matters more than the brand.**",
        "<b>html</b>",
    ]:
        assert literal in text, f"{literal!r} is not shown literally in the passage"
    for tag in ["script", "img", "a", "b", "strong", "em", "iframe", "svg", "code"]:
        assert box.locator(tag).count() == 0, f"a <{tag}> element was created from passage text"
    # Only query-term highlights and line breaks are markup inside the passage.
    assert box.locator("*:not(mark.qterm):not(br)").count() == 0
    assert page.locator('img[src="x"], a[href^="javascript:"]').count() == 0
    assert dialogs == [], f"a dialog fired: {dialogs}"
    # The whole passage, character for character.
    assert text == demo_passage_text("demo-doc-012:2")


def test_unicode_passage_shown_exactly(server, new_page):
    base, db_path = server
    page, (shown, n), _ = open_judge(new_page, base, "e2e-uni", None, turn="101_1", passage="demo-doc-022:0")
    assert shown == "demo-doc-022:0"
    assert n == passage_queue(db_path).index(("101_1", "demo-doc-022:0")) + 1
    expected = demo_passage_text("demo-doc-022:0")
    for piece in ["🏃\u200d♀️", "👍🏽", "初心者歓迎", "毎週少しずつ", "بالتوفيق", "cafe\u0301", "Zoe\u0308"]:
        assert piece in expected  # the demo still holds what this test is about
    text = page.locator("div.passage-text").inner_text()
    assert text == expected  # exact: no normalisation, no lost or replaced characters


def test_undo_removes_the_label_and_goes_back(server, new_page):
    base, db_path = server
    page, (first, _n), _ = open_judge(new_page, base, "e2e-undo", 1)
    press(page, "4")
    wait_position(page, 2)
    assert query(db_path, "SELECT turn_id, passage_id, grade FROM passage_labels WHERE source = 'e2e-undo'") == [
        ("101_1", first, 4)
    ]
    expect(page.get_by_text("Your label:")).to_have_count(0)  # moved on to an unjudged passage

    press(page, "u")
    assert wait_position(page, 1)[0] == first
    assert query(db_path, "SELECT * FROM passage_labels WHERE source = 'e2e-undo'") == []
    assert query(
        db_path, "SELECT item, old_value, new_value, via FROM label_history WHERE source = 'e2e-undo' ORDER BY id"
    ) == [(f"101_1 {first}", None, "4", "ui"), (f"101_1 {first}", "4", None, "undo")]
    assert progress_text(page).endswith(f"all: 0 / {TOTAL}")
    expect(page.get_by_text("Your label:")).to_have_count(0)


def test_ptkb_keys(server, new_page):
    base, db_path = server
    page = new_page()
    page.goto(f"{base}/ptkb?assessor=e2e2")

    def labelled(n, total=r"\d+"):
        expect(page.get_by_text(re.compile(rf"^Turn 101_1: {n} / {total} statements labelled$"))).to_be_visible(
            timeout=LOAD_TIMEOUT_MS if n == 0 else STEP_TIMEOUT_MS
        )
        settled(page)

    labelled(0)
    statements = [
        s
        for (s,) in query(
            db_path,
            """
        SELECT s.statement_id FROM ptkb_statements s JOIN turns t ON t.conversation_id = s.conversation_id
        WHERE t.id = '101_1' ORDER BY CAST(s.statement_id AS INTEGER), s.statement_id""",
        )
    ]
    assert len(statements) >= 2
    press(page, "1")
    labelled(1, len(statements))
    press(page, "0")
    labelled(2, len(statements))
    rows = query(
        db_path,
        "SELECT turn_id, statement_id, relevant, mode, via FROM ptkb_labels "
        "WHERE source = 'e2e2' ORDER BY CAST(statement_id AS INTEGER)",
    )
    assert rows == [("101_1", statements[0], 1, "blind", "ui"), ("101_1", statements[1], 0, "blind", "ui")]


# ------------------------------------------------------------------------------------------- fresh server
# Regression: with a ``pages/`` folder beside app.py, Streamlit runs its legacy multipage mode until a
# session has run st.navigation, so the first visitor of a just-started server got pages/judge.py or
# pages/data.py run alone: no sign-in, no demo, and the organizer page without the password.
# (Fixed by assess/ui.py frame_guard; these tests use a server whose main page has never run.)


def test_deep_link_on_a_fresh_server(cold_server, new_page):
    """The first visitor of a freshly started server follows /judge?assessor=NAME and is judging."""
    base, _db = cold_server
    page = new_page()
    page.goto(f"{base}/judge?assessor=e2e-cold")
    expect(page.get_by_text("Signed in as e2e-cold")).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    assert wait_position(page, 1, timeout=LOAD_TIMEOUT_MS)[0] == "demo-doc-001:0"


def test_organizer_page_needs_the_password_on_a_fresh_server(cold_server, new_page):
    base, _db = cold_server
    page = new_page()
    page.goto(f"{base}/data")
    expect(page.get_by_text("Organizer password").first).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    settled(page)
    expect(page.get_by_role("heading", name="Import & export")).to_have_count(0)
    expect(page.get_by_text("Import a file")).to_have_count(0)
    expect(page.locator('[data-testid="stFileUploader"]')).to_have_count(0)


def test_a_note_then_enter_gives_the_keys_back(server, new_page):
    base, db_path = server
    page = new_page()
    page.goto(f"{base}/judge?assessor=e2e-note")
    wait_position(page, 1, timeout=LOAD_TIMEOUT_MS)
    field = page.get_by_label(re.compile("^Note"))
    field.click()
    field.fill("contradicts the resolved utterance")
    field.press("Enter")
    settled(page)
    press(page, "2")
    wait_position(page, 2)
    first = passage_queue(db_path)[0]
    assert query(db_path, "SELECT turn_id, passage_id, grade, note FROM passage_labels WHERE source = 'e2e-note'") == [
        (*first, 2, "contradicts the resolved utterance")
    ]
