"""A key press that meets a held write lock (issue 33): the page says "saving…", and at the limit keeps the press
with NOT SAVED and a Retry button instead of Streamlit's error page; Retry stores it."""

from __future__ import annotations

import contextlib
import threading

import pytest

from assess.ui import frame
from tests.app.test_rag_pages import cited_responses
from tests.helpers import open_app, rows


@pytest.fixture
def app_db(demo_target, monkeypatch):
    from store import open_db
    from store import responses as cited

    with open_db(demo_target) as db:
        cited.add_responses(db, "answers.jsonl", cited_responses())
    monkeypatch.setenv("ASSESS_DB", demo_target)
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    monkeypatch.setattr(frame, "SAVE_QUIET_S", 0.2)  # the page's 10 s, shortened for the test
    monkeypatch.setattr(frame, "SAVE_WAIT_S", 1.0)
    return demo_target


@contextlib.contextmanager
def lock_held(target):
    """Another connection holds the store's write lock (as an import's switch does) until the block ends."""
    from store import open_db
    from store.db import write

    held, done = threading.Event(), threading.Event()

    def hold():
        with open_db(target) as other, write(other):
            held.set()
            done.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    assert held.wait(10)
    try:
        yield
    finally:
        done.set()
        thread.join()


GRADE = "SELECT grade FROM passage_labels WHERE source = 'amy' AND turn_id = :t AND passage_id = :p"


def test_a_press_on_a_locked_store_is_kept_and_retry_stores_it(app_db):
    at = open_app("pages/judge.py", "amy")
    turn, passage = at.session_state["judge_key"]
    with lock_held(app_db):
        at.button(key="g3").click().run()
        assert not at.exception
        assert any("saving" in t.value for t in at.toast)
        assert any("NOT SAVED" in e.value and "Retry" in e.value for e in at.error), [e.value for e in at.error]
        assert at.button(key="_not_saved_retry")
        assert rows(app_db, GRADE, {"t": turn, "p": passage}) == []
        assert at.session_state["judge_key"] == (turn, passage)  # the item stays on screen
    at.button(key="_not_saved_retry").click().run()
    assert not at.exception and not any("NOT SAVED" in e.value for e in at.error)
    assert rows(app_db, GRADE, {"t": turn, "p": passage}) == [(3,)]
    assert at.session_state["judge_key"] != (turn, passage)  # stored: the cursor moves on
    assert not [b for b in at.button if b.key == "_not_saved_retry"]


def test_retry_still_refuses_a_label_stored_meanwhile(app_db):
    """The stale-label check applies to Retry: a label another tab stored while the press waited is not replaced."""
    at = open_app("pages/judge.py", "amy")
    other = open_app("pages/judge.py", "amy")
    turn, passage = at.session_state["judge_key"]
    with lock_held(app_db):
        at.button(key="g3").click().run()
    other.button(key="g1").click().run()
    at.button(key="_not_saved_retry").click().run()
    assert any("NOT SAVED: this item was labelled 1" in e.value for e in at.error), [e.value for e in at.error]
    assert rows(app_db, GRADE, {"t": turn, "p": passage}) == [(1,)]


def test_citations_a_press_on_a_locked_store_is_kept_and_retry_stores_it(app_db):
    """/citations (and /ntr, /battles) wrap their keys in a refusal handler of their own: a busy store still
    reaches the kept press and its Retry, not a plain "Not saved" after the first 0.2 s."""
    support = "SELECT support FROM citation_labels WHERE source = 'cia'"
    at = open_app("pages/citations.py", "cia")
    with lock_held(app_db):
        at.button(key="cite_2").click().run()
        assert not at.exception
        assert any("NOT SAVED" in e.value and "Retry" in e.value for e in at.error), [e.value for e in at.error]
        assert rows(app_db, support) == []
    at.button(key="_not_saved_retry").click().run()
    assert not any("NOT SAVED" in e.value for e in at.error)
    assert rows(app_db, support) == [(2,)]
