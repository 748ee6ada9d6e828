"""/battles in headless Chromium at 1280x800 on an iKAT-like conversation with a long context (eight earlier turns
with long responses, fifteen PTKB statements): on every battle both answer boxes start inside the window and most
of each is visible without scrolling; each verdict key (← A, → L, T, N) stores its verdict in the order pressed,
with the run shown on the left as run_a (the order shown), checked in the SQLite file itself.

Never downloads a browser: the module skips when /usr/bin/chromium or playwright is absent.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.browser_support import (  # noqa: F401  (fixtures)
    LOAD_TIMEOUT_MS,
    STEP_TIMEOUT_MS,
    browser,
    expect,
    press,
    query,
    settled,
    streamlit_server,
)

pytestmark = pytest.mark.browser

WINDOW = {"width": 1280, "height": 800}
VISIBLE_PX = 250  # of each answer box, at least this much (or all of it) inside the window

_TEXT = (
    "the training plan keeps every week easy enough that a tired night-shift nurse can still finish it, with a long "
    "slow run at the weekend and two short runs between shifts when the knee allows it"
)
_WORDS = _TEXT.split()


def words(n: int, start: int = 0) -> str:
    return " ".join(_WORDS[(start + i) % len(_WORDS)] for i in range(n)).capitalize() + "."


def long_ikat_store(db_path) -> None:
    """One iKAT 2024-style conversation of eight turns (long utterances, responses of ~200 words each, fifteen
    PTKB statements), three runs answering its last three turns in four cited sentences each, and the plan ``p``
    of all pairs (9 battles, and 1 shown again swapped)."""
    from assess.services import battles
    from assess.services.loading import load_file
    from assess.tasks import CitedResponse, CitedSentence
    from store import open_db
    from store import responses as cited

    turns = [
        {
            "turn_id": t,
            "utterance": words(30, t),
            "resolved_utterance": words(35, t + 3),
            "response": " ".join(words(25, t + k) for k in range(8)),
            "response_provenance": [],
            "ptkb_provenance": [],
        }
        for t in range(1, 9)
    ]
    topics = [
        {
            "number": 7,
            "title": "A long conversation about training",
            "ptkb": {str(i): words(22, i) for i in range(1, 16)},
            "turns": turns,
        }
    ]
    path = db_path.parent / "long_topics.json"
    path.write_text(json.dumps(topics))
    answers = [
        CitedResponse(
            run=run,
            turn_id=f"7_{t}",
            sentences=tuple(CitedSentence(words(20, k + t), (f"doc-{run}-{k}:0",)) for k in range(4)),
        )
        for run in ("run-x", "run-y", "run-z")
        for t in (6, 7, 8)
    ]
    with open_db(db_path) as db:
        load_file(db, "topics", path, collection="long")
        cited.add_responses(db, "answers.jsonl", answers)
        battles.plan(db, "p", "all")


@pytest.fixture(scope="module")
def server(tmp_path_factory, browser):
    with streamlit_server(tmp_path_factory.mktemp("e2e-battles"), long_ikat_store) as s:
        yield s


def wait_judged(page, n: int, timeout: int = STEP_TIMEOUT_MS) -> None:
    expect(page.get_by_text(re.compile(rf"· {n} / \d+ battles judged")).first).to_be_visible(timeout=timeout)
    settled(page)


def answers_in_view(page, n: int) -> None:
    """Both answer boxes of the n-th battle (0-based) start inside the window, with most of each visible."""
    for side in ("left", "right"):
        box = page.locator(f".st-key-battle_box_{side}_{n}")
        expect(box).to_be_visible()
        found = box.bounding_box()
        assert 0 <= found["y"] < WINDOW["height"], (side, n, found)
        assert found["y"] + min(found["height"], VISIBLE_PX) <= WINDOW["height"], (side, n, found)
        expect(box.get_by_text(f"{side.capitalize()} answer")).to_be_in_viewport()


def test_answers_fit_the_window_and_each_key_stores_its_verdict(server, browser):
    from assess.services import battles
    from store import open_db

    base, db_path = server
    with open_db(db_path) as db:
        queue = battles.queue(db, "p", "kb1")
    assert len(queue) == 10 and queue[-1]["reshow"]
    context = browser.new_context(viewport=WINDOW, locale="en-GB")
    context.set_default_timeout(STEP_TIMEOUT_MS)
    try:
        page = context.new_page()
        page.goto(f"{base}/battles?assessor=kb1")
        wait_judged(page, 0, LOAD_TIMEOUT_MS)
        keys = ("ArrowLeft", "A", "ArrowRight", "L", "T", "N", "ArrowLeft", "N", "T", "ArrowRight")
        for n, key in enumerate(keys):
            answers_in_view(page, n)
            expect(page.get_by_text("Context: A long conversation about training")).to_be_visible()
            press(page, key)
            if n + 1 < len(keys):
                wait_judged(page, n + 1)
        expect(page.get_by_text(re.compile(r"All 10 battles of this plan judged"))).to_be_visible()
    finally:
        context.close()
    stored = query(db_path, "SELECT turn_id, run_a, run_b, outcome, reshow, via FROM battles WHERE source = 'kb1'")
    history = query(db_path, "SELECT item, new_value FROM label_history WHERE source = 'kb1' ORDER BY id")
    codes = {"ArrowLeft": 1, "A": 1, "ArrowRight": 2, "L": 2, "T": 0, "N": -1}  # left, right, tie, neither
    expected = [(q["turn_id"], q["run_a"], q["run_b"], codes[k], int(q["reshow"]), "key") for q, k in zip(queue, keys)]
    assert sorted(stored) == sorted(expected)
    assert history == [(f"{t} {a} {b} 0", str(c)) for t, a, b, c, _, _ in expected]  # in the order pressed
