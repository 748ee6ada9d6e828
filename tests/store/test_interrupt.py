"""Issue 32: ``store.db.interrupt_all`` stops the statement an open store runs in another thread, on both
engines (SQLite's interrupt, PostgreSQL's cancel request), and the store works again afterwards."""

from __future__ import annotations

import threading
import time

from store import open_db
from store.db import interrupt_all, value

SLOW = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000000) SELECT COUNT(*) AS n FROM c"
)


def test_interrupt_all_stops_a_running_query_in_another_thread(store_target):
    db = open_db(store_target)
    outcome: dict = {}

    def slow():
        started = time.monotonic()
        try:
            outcome["value"] = value(db, SLOW)
        except Exception as exc:
            outcome["error"] = exc
        outcome["seconds"] = time.monotonic() - started

    worker = threading.Thread(target=slow, daemon=True)
    worker.start()
    time.sleep(0.5)  # inside the query
    assert worker.is_alive()
    assert interrupt_all() >= 1
    worker.join(5)
    assert not worker.is_alive(), "the query still runs 5 s after interrupt_all()"
    assert "value" not in outcome and outcome["seconds"] < 5
    assert "interrupt" in str(outcome["error"]).lower() or "cancel" in str(outcome["error"]).lower()
    assert value(db, "SELECT COUNT(*) AS n FROM sources") >= 0  # the store answers again
    db.close()


def test_idle_and_closed_stores_are_left_working(store_target):
    idle, closed = open_db(store_target), open_db(store_target)
    closed.close()
    interrupt_all()  # nothing runs on either: nothing to stop, nothing raised
    assert value(idle, "SELECT COUNT(*) AS n FROM sources") == value(closed, "SELECT COUNT(*) AS n FROM sources")
    idle.close()
    closed.close()
