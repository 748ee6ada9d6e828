"""``prejudge --batch-submit`` in-process against local stubs of both providers' batch APIs (real HTTP), on both
engines: the job split to the limits, every item stored once through the batch-in path, failed and expired
requests asked again in a new round, the last round's failures stored as failed calls, and the batches listed."""

from __future__ import annotations

from pathlib import Path

import pytest

from assess.llm import batch_api
from assess.services import provider_batches
from store import open_db
from tests.batch_stubs import BatchStub
from tests.helpers import rows

POOL_WITH_TEXT = 214  # the demo's pooled pairs with a passage text


@pytest.fixture
def demo(request, tmp_path, demo_copy):
    if "store_target" in request.fixturenames:
        target = request.getfixturevalue("store_target")
        return demo_copy(Path(target) if target.endswith(".db") else target)
    return demo_copy(tmp_path / "demo.db")


LIMITS = batch_api.Limits(60, 10**9)  # blocks of 60 requests, no byte limit to speak of


def submit(demo, stub, provider, *, limits=LIMITS, rounds=3, **options):
    db = open_db(str(demo))
    api = batch_api.connect(provider, base_url=stub.base_url, api_key="sk-test-key-123456", sleep=lambda s: None)
    settings = provider_batches.Settings(provider, limits=limits, poll_s=0.01, max_rounds=rounds)
    try:
        return provider_batches.run_batches(db, "passage", "llm:stub", "stub-1", api, settings, **options)
    finally:
        api.close()
        db.close()


def stored_once(demo) -> None:
    assert rows(demo, "SELECT COUNT(*) AS n, COUNT(DISTINCT turn_id || ' ' || item_id) AS items FROM prejudgments") == [
        (POOL_WITH_TEXT, POOL_WITH_TEXT)
    ]
    assert rows(demo, "SELECT COUNT(*) FROM job_items WHERE state = 'open'") == [(0,)]


@pytest.mark.both_engines
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_job_is_split_sent_polled_and_stored_once(store_target, demo, provider):
    with BatchStub(polls=2) as stub:
        s = submit(demo, stub, provider)
    stored_once(demo)
    # 214 items in blocks of 60 (the request limit): 4 batches of 60, 60, 60, 34, each polled until it ended
    assert [b["requests"] for b in stub.batches] == [60, 60, 60, 34]
    assert all(b["polled"] == 3 for b in stub.batches)
    assert max(stub.received.values()) == 1 and len(stub.received) == POOL_WITH_TEXT
    assert stub.keys == ["sk-test-key-123456"]
    assert s["status"] == "done" and s["job_done"] == POOL_WITH_TEXT and s["sent"] == 4
    assert [(b["state"], b["requests"], b["succeeded"]) for b in s["batches"]] == [
        ("stored", 60, 60), ("stored", 60, 60), ("stored", 60, 60), ("stored", 34, 34)
    ]  # fmt: skip
    assert rows(demo, "SELECT status FROM prejudge_jobs") == [("done",)]
    # parsed as a live answer: grades became labels of llm:stub
    assert rows(demo, "SELECT COUNT(*) FROM passage_labels WHERE source = 'llm:stub'")[0][0] > 0


def test_the_byte_limit_splits_a_block_into_several_batches(demo):
    with BatchStub() as stub:
        submit(demo, stub, "openai", limits=batch_api.Limits(1000, 200_000))
    stored_once(demo)
    sizes = [b["bytes"] for b in stub.batches]
    assert len(sizes) > 1 and max(sizes) <= 200_000 and sum(b["requests"] for b in stub.batches) == POOL_WITH_TEXT


@pytest.mark.both_engines
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_failed_and_expired_requests_go_into_a_new_round(store_target, demo, provider):
    def fate(batch, cid):  # the first round: every 3rd request fails, every 5th expires, every 7th is lost
        seq = int(cid.split("-")[1])
        if batch >= 4:
            return "ok"
        return "error" if seq % 3 == 0 else "expire" if seq % 5 == 0 else "missing" if seq % 7 == 0 else "ok"

    with BatchStub(fate=fate) as stub:
        submit(demo, stub, provider)
    stored_once(demo)
    first = sum(b["requests"] for b in stub.batches[:4])
    again = [b["requests"] for b in stub.batches[4:]]
    left = sum(1 for s in range(POOL_WITH_TEXT) if s % 3 == 0 or s % 5 == 0 or s % 7 == 0)
    assert first == POOL_WITH_TEXT and sum(again) == left  # only what failed, expired or was lost, once more
    assert rows(demo, "SELECT COUNT(*) FROM prejudgments WHERE parse_status = 'error'") == [(0,)]
    assert rows(demo, "SELECT round, COUNT(*) AS n FROM provider_batches GROUP BY round ORDER BY round") == [
        (1, 4),
        (2, 4),
    ]


def test_requests_failing_every_round_are_stored_as_failed_calls(demo):
    def fate(batch, cid):
        return "error" if int(cid.split("-")[1]) < 5 else "ok"

    with BatchStub(fate=fate) as stub:
        s = submit(demo, stub, "openai", rounds=2)
    assert [b["requests"] for b in stub.batches[4:]] == [5]  # round 2: the five failures only
    assert rows(demo, "SELECT COUNT(*) FROM prejudgments WHERE parse_status = 'error'") == [(5,)]
    assert rows(demo, "SELECT COUNT(*) FROM job_items WHERE state = 'open'") == [(0,)]
    assert s["error"] == 5 and s["status"] == "done"
    note = rows(demo, "SELECT message FROM provider_batches WHERE round = 2")[0][0]
    assert note == "0 answered, 5 failed (stored as failed calls)"


def test_answers_the_cache_holds_are_copied_and_nothing_is_sent(demo):
    with BatchStub() as stub:
        submit(demo, stub, "openai")
        sent = len(stub.batches)
        db = open_db(str(demo))
        api = batch_api.connect("openai", base_url=stub.base_url, api_key="sk-test-key-123456")
        settings = provider_batches.Settings("openai", limits=LIMITS, poll_s=0.01)
        try:  # another source, same model and prompt: every answer is in the cache
            s = provider_batches.run_batches(db, "passage", "llm:copy", "stub-1", api, settings)
        finally:
            api.close()
            db.close()
    assert len(stub.batches) == sent and s["sent"] == 0
    assert s["copied"] == POOL_WITH_TEXT and s["status"] == "done"
    assert rows(demo, "SELECT COUNT(*) FROM prejudgments WHERE source = 'llm:copy'") == [(POOL_WITH_TEXT,)]
