"""Issue 32: SIGTERM stops a served app within 5 s even while a page is inside a query that would run for
minutes (SQLite: ``Connection.interrupt()``; PostgreSQL: a cancel request; ``ui.frame.interrupt_on_shutdown``).
Before, Streamlit's own handler stopped the runtime, and the process stayed until the query ended. The slow
query is put into /review's dashboard by a ``sitecustomize`` module of the server process only; the
page is opened over the websocket protocol (tests/benchmarks/st_client.py), no browser needed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time

import pytest

from store import open_db
from store.db import is_postgres, value
from tests.benchmarks.st_client import StreamlitClient, StreamlitTimeout, app_server

pytestmark = pytest.mark.both_engines

SLOW = """
import os, sys
if os.environ.get("SLOW_REVIEW_MARK"):
    sys.path.insert(0, os.getcwd())
    import store.review as review
    from store.db import value

    original = review.dashboard

    def dashboard(db):
        open(os.environ["SLOW_REVIEW_MARK"], "w").close()  # the page is about to enter the query
        try:
            value(db, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000000) "
                      "SELECT COUNT(*) AS n FROM c")
        finally:
            open(os.environ["SLOW_REVIEW_MARK"] + ".ended", "w").close()  # returned, or interrupted
        return original(db)

    review.dashboard = dashboard
"""


@contextlib.contextmanager
def slow_review_app(demo_target, tmp_path):
    """The app whose /review runs the slow query (SLOW) first; yields (URL, server process, the mark file that
    says a page has entered it)."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(SLOW)
    mark = tmp_path / "in-query"
    processes: list = []
    env = {"PYTHONPATH": str(tmp_path / "site"), "SLOW_REVIEW_MARK": str(mark)}
    with app_server(demo_target, tmp_path / "streamlit.log", processes=processes, **env) as url:
        yield url, processes[0], mark


async def inside_the_slow_query(client: StreamlitClient, mark) -> None:
    """Open /review with ``client``; return a second after its run has entered the slow query."""
    with pytest.raises(StreamlitTimeout):  # the run does not finish: it is inside the slow query
        await client.open()
    deadline = time.monotonic() + 30
    while not mark.exists() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert mark.exists(), "the page never reached the slow query"
    await asyncio.sleep(1)  # well inside it


def test_sigterm_stops_the_server_within_5_s_mid_query(demo_target, tmp_path):
    with slow_review_app(demo_target, tmp_path) as (url, server, mark):

        async def review_open_at_sigterm() -> float:
            # the tab stays connected until the end: a session that ends has its query interrupted at once
            # (ui.frame.interrupt_ended_sessions, tests/app/test_reload_cancel.py), which is not what is tested here
            client = StreamlitClient(url, "review", "assessor=boss", timeout=3)
            try:
                await inside_the_slow_query(client, mark)
                assert server.poll() is None
                sent = time.monotonic()
                os.killpg(server.pid, signal.SIGTERM)
                while server.poll() is None and time.monotonic() - sent < 5:
                    await asyncio.sleep(0.05)
                return time.monotonic() - sent
            finally:
                await client.close()

        took = asyncio.run(review_open_at_sigterm())
        assert server.poll() is not None, "the server still runs 5 s after SIGTERM"
    log = (tmp_path / "streamlit.log").read_text()
    # ours stopped it: the watch saw the runtime stop, or the server closed the tab first and the watch interrupted
    # the ended session's read (which of the two comes first varies with Streamlit's uvicorn shutdown)
    assert "interrupting the stores' running statements" in log or "ended session(s)" in log, log
    assert took < 5
    if is_postgres(demo_target):  # cancelled on the server too, not only abandoned by the client
        with open_db(demo_target, migrate=False) as db:
            left = value(db, "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE query LIKE 'WITH RECURSIVE c(x)%' "
                             "AND pid != pg_backend_pid()")  # fmt: skip
        assert left == 0


def test_a_closed_or_reloaded_tab_cancels_its_running_query(demo_target, tmp_path):
    """Issue 32: the tab inside the slow query is closed (a reload closes it too); within seconds the query has
    ended (interrupted) and PostgreSQL no longer runs it. Before, it ran on
    for minutes after the tab was gone."""
    with slow_review_app(demo_target, tmp_path) as (url, server, mark):

        async def open_review_then_leave():
            client = StreamlitClient(url, "review", "assessor=boss", timeout=3)
            try:
                await inside_the_slow_query(client, mark)
            finally:
                await client.close()

        asyncio.run(open_review_then_leave())
        left = time.monotonic()
        ended = tmp_path / "in-query.ended"
        while not ended.exists() and time.monotonic() - left < 10:  # the watch thread polls each 0.2 s
            time.sleep(0.1)
        assert ended.exists(), "the closed tab's query still runs 10 s later"
        if is_postgres(demo_target):  # cancelled on the server too
            with open_db(demo_target, migrate=False) as db:
                running = value(db, "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE query LIKE 'WITH RECURSIVE c(x)%' "
                                    "AND state = 'active' AND pid != pg_backend_pid()")  # fmt: skip
            assert running == 0
        assert server.poll() is None  # the server itself goes on
