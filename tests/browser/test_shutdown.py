"""Issue 32: SIGTERM stops a served app within 5 s even while a page is inside a query that would run for
minutes (SQLite: ``Connection.interrupt()``; PostgreSQL: a cancel request; ``ui.frame.interrupt_on_shutdown``).
Before, Streamlit's own handler stopped the runtime, and the process stayed until the query ended. The slow
query is put into /review's dashboard by a ``sitecustomize`` module of the server process only; the
page is opened over the websocket protocol (tests/benchmarks/st_client.py), no browser needed."""

from __future__ import annotations

import asyncio
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
        value(db, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000000) "
                  "SELECT COUNT(*) AS n FROM c")
        return original(db)

    review.dashboard = dashboard
"""


def test_sigterm_stops_the_server_within_5_s_mid_query(demo_target, tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(SLOW)
    mark = tmp_path / "in-query"
    processes: list = []
    env = {"PYTHONPATH": str(tmp_path / "site"), "SLOW_REVIEW_MARK": str(mark)}
    with app_server(demo_target, tmp_path / "streamlit.log", processes=processes, **env) as url:
        server = processes[0]

        async def open_review():
            client = StreamlitClient(url, "review", "assessor=boss", timeout=3)
            with pytest.raises(StreamlitTimeout):  # the run does not finish: it is inside the slow query
                await client.open()
            await client.close()

        asyncio.run(open_review())
        deadline = time.monotonic() + 30
        while not mark.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert mark.exists(), "the page never reached the slow query"
        time.sleep(1)  # well inside it
        assert server.poll() is None
        sent = time.monotonic()
        os.killpg(server.pid, signal.SIGTERM)
        while server.poll() is None and time.monotonic() - sent < 5:
            time.sleep(0.05)
        took = time.monotonic() - sent
        assert server.poll() is not None, "the server still runs 5 s after SIGTERM"
    log = (tmp_path / "streamlit.log").read_text()
    assert "interrupting the stores' running statements" in log
    assert took < 5
    if is_postgres(demo_target):  # cancelled on the server too, not only abandoned by the client
        with open_db(demo_target, migrate=False) as db:
            left = value(db, "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE query LIKE 'WITH RECURSIVE c(x)%' "
                             "AND pid != pg_backend_pid()")  # fmt: skip
        assert left == 0
