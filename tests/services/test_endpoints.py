"""A job spread over several endpoints, over real HTTP to local stubs: an endpoint down for a while (429 or 500)
is paused and its calls go to the other, one with a refused key is left out, both down stops the job; the
judged, failed and pending counts are exact afterwards and each endpoint's figures are stored in the job."""

from __future__ import annotations

import json

import pytest

from assess.services import jobs
from assess.services.endpoints import build_pool
from tests.helpers import rows, run_cli
from tests.stub_llm import Reply, StubLLM, failing_for

ITEMS = 40


def pool_over(*stubs, pause=0.3, concurrency=4):
    return build_pool(
        "stub-1",
        [f"{s.base_url},concurrency={concurrency},pause={pause}" for s in stubs],
        concurrency=16,
        timeout=5,
        retries=2,
        temperature=0,
    )


def figures(db):
    return rows(
        db,
        "SELECT position, requests, ok, failed, pauses, paused_s, last_error FROM prejudge_job_endpoints "
        "ORDER BY job_id, position",
    )


@pytest.fixture
def demo(tmp_path, demo_copy):
    return demo_copy(tmp_path / "demo.db")


@pytest.mark.parametrize("status", [429, 500])
def test_an_endpoint_down_for_a_while_is_paused_and_its_calls_go_elsewhere(demo, status):
    from store import open_db

    down = failing_for(0.5, status)
    with StubLLM(latency=0.02, reply=down) as a, StubLLM(latency=0.02) as b, open_db(demo) as db:
        pool = pool_over(a, b)
        plan = jobs.plan(db, "passage", "llm:stub-1", "stub-1", limit=ITEMS)
        summary = jobs.run(db, plan, pool, concurrency=pool.concurrency, base_url=pool.base_url)
        sent_a, sent_b = len(a.requests), len(b.requests)
    assert (summary["ok"] + summary["unparseable"], summary["error"], summary["asked"]) == (ITEMS, 0, ITEMS)
    assert rows(
        demo,
        "SELECT COUNT(*) AS n, COUNT(DISTINCT turn_id || ' ' || item_id) AS items FROM prejudgments WHERE parse_status != 'error'",
    ) == [(ITEMS, ITEMS)]
    assert rows(demo, "SELECT status, base_url, concurrency, planned, done, errors FROM prejudge_jobs") == [
        ("done", f"{a.base_url} {b.base_url}", 8, ITEMS, ITEMS, 0)
    ]
    (one, two) = figures(demo)
    assert one[:4] == (1, sent_a, sent_a - down.failed, down.failed) and down.failed >= 3
    assert one[4] >= 1 and one[5] >= 0.3 and f"HTTP {status}" in one[6]
    assert two == (2, sent_b, sent_b, 0, 0, 0.0, None)
    assert one[2] + two[2] == ITEMS  # every answer came from one of them, once
    with open_db(demo) as db:
        again = jobs.plan(db, "passage", "llm:stub-1", "stub-1")
    assert (again.already, len(again.items)) == (ITEMS, 214 - ITEMS)  # judged once; nothing failed, the rest pending


def test_a_refused_key_leaves_the_endpoint_out_and_both_down_stops_the_job(demo_target):
    from store import open_db

    demo = demo_target  # each engine
    with StubLLM(reply=lambda r: Reply(401, "bad key")) as a, StubLLM() as b, open_db(demo) as db:
        pool = pool_over(a, b)
        summary = jobs.run(db, jobs.plan(db, "passage", "llm:stub-1", "stub-1", limit=10), pool, concurrency=8)
    assert (summary["asked"], summary["error"]) == (10, 0)
    (one, two) = figures(demo)
    assert one[1:4] == (len(a.requests), 0, len(a.requests)) and 1 <= len(a.requests) <= 4
    assert "HTTP 401" in one[6] and two[2] == 10

    with StubLLM(reply=lambda r: Reply(500)) as a, StubLLM(reply=lambda r: Reply(503)) as b:
        proc = run_cli(
            "prejudge", "--task", "passage", "--model", "stub-1", "--no-progress", "--retries", "0",
            "--endpoint", f"{a.base_url},concurrency=2,pause=0", "--endpoint", f"{b.base_url},concurrency=2,pause=0",
            db=demo,
        )  # fmt: skip
    assert proc.returncode == 2 and "10 calls in a row failed" in proc.stderr
    stopped = rows(demo, "SELECT status, planned, done, errors FROM prejudge_jobs WHERE id = 2")
    assert stopped == [("failed", 204, 10, 10)]
    assert rows(demo, "SELECT COUNT(*) FROM prejudgments WHERE job_id = 2 AND parse_status = 'error'") == [(10,)]
    assert rows(demo, "SELECT COUNT(*) FROM prejudgments WHERE parse_status != 'error'") == [(10,)]  # judged
    as_json = json.loads(run_cli("jobs", "--json", db=demo).stdout)
    assert [e["base_url"] for e in as_json[0]["endpoints"]] == [a.base_url, b.base_url]
    for e in as_json[0]["endpoints"]:  # nothing answered; a call still in flight when the job stopped is not counted
        assert e["ok"] == 0 and 0 <= e["requests"] - e["failed"] <= e["concurrency"]
    assert sum(e["requests"] for e in as_json[0]["endpoints"]) >= 10 * 2  # every failed call tried on both
    listed = run_cli("jobs", db=demo)
    assert f"  endpoint 1 {a.base_url} (concurrency 2): " in listed.stdout
    assert "failed, paused" not in listed.stdout.split("job 1 ")[1]  # the first job: endpoint 2 never paused
    with open_db(demo) as db:
        pending = jobs.plan(db, "passage", "llm:stub-1", "stub-1")
    assert len(pending.items) == 214 - 10  # the 10 failed ones are asked again, with the rest
