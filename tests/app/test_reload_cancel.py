"""Issue 32: a reload cancels the run it replaces. A reload (or a closed tab) ends the page's Streamlit session; the
served app's watch thread (ui.frame._interrupt_when_stopping) then interrupts the running read of that session's
store (ui.frame.interrupt_ended_sessions), so the old run's query stops at once instead of holding the connection
and a core until it ends. A session still open, and a write in progress, are left alone."""

from __future__ import annotations

import threading
import time

import pytest

from assess.ui import frame
from store import open_db
from store.db import rows, run, value, write
from tests.helpers import open_app

pytestmark = pytest.mark.both_engines

# one SQL text for both engines that runs for as long as :top says (about a second per million rows on SQLite)
COUNT_TO = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :top) SELECT COUNT(*) FROM n"


class Running:
    """``work(db)`` in a thread, its result or exception and how long it took."""

    def __init__(self, db, work):
        self.result = self.error = None
        self.started = time.monotonic()
        self.ended: float | None = None

        def target():
            try:
                self.result = work(db)
            except Exception as exc:
                self.error = exc
            self.ended = time.monotonic()

        self.thread = threading.Thread(target=target, daemon=True)
        self.thread.start()
        time.sleep(0.5)  # the statement is running
        assert self.thread.is_alive(), (self.result, self.error)

    def join(self, timeout: float) -> float:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the query still runs"
        return self.ended - self.started


@pytest.fixture
def noted(monkeypatch):
    """The registry of session stores, empty for the test."""
    monkeypatch.setattr(frame, "_SESSION_STORES", type(frame._SESSION_STORES)())
    return frame._SESSION_STORES


def test_an_ended_sessions_read_is_interrupted_and_an_open_ones_is_not(store_target, noted):
    with open_db(store_target) as old, open_db(store_target) as kept:
        noted["old-tab"], noted["open-tab"] = old, kept
        slow = Running(old, lambda db: value(db, COUNT_TO, {"top": 10**12}))  # hours, if nothing stops it
        bounded = Running(kept, lambda db: value(db, COUNT_TO, {"top": 2_000_000}))

        assert frame.interrupt_ended_sessions(lambda sid: sid == "open-tab") == ["old-tab"]

        assert slow.join(10) < 5
        assert slow.error is not None and slow.result is None
        assert bounded.join(60) and bounded.error is None and bounded.result == 2_000_000
        assert dict(noted) == {"open-tab": kept}
        assert value(old, "SELECT 1 AS one") == 1  # a resumed session goes on with its store
        assert frame.interrupt_ended_sessions(lambda sid: sid == "open-tab") == []


def test_a_write_in_progress_is_not_interrupted(store_target, noted):
    with open_db(store_target) as db:
        noted["old-tab"] = db

        def save(db):
            with write(db):
                found = value(db, COUNT_TO, {"top": 2_000_000})
                run(db, "INSERT INTO settings (key, value) VALUES ('bench-written', :v)", {"v": str(found)})
            return found

        writing = Running(db, save)
        assert frame.interrupt_ended_sessions(lambda sid: False) == ["old-tab"]
        assert writing.join(60) and writing.error is None
        assert rows(db, "SELECT value FROM settings WHERE key = 'bench-written'") == [{"value": "2000000"}]


def test_every_run_notes_its_sessions_store(demo_target, monkeypatch, noted):
    monkeypatch.setenv("ASSESS_DB", demo_target)
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    at = open_app("pages/judge.py", assessor="ann")
    held = at.session_state["_store"]
    assert list(noted.values()) == [held] and held.target == demo_target
    (session,) = noted
    assert frame.interrupt_ended_sessions(lambda sid: sid == session) == []
    assert frame.interrupt_ended_sessions(lambda sid: False) == [session] and not noted
    at.run()  # the next run of the (resumed) session notes it again
    assert not at.exception and dict(noted) == {session: held}
