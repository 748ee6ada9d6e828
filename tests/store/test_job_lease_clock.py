"""Leases without trusting clocks (issue 33, R10): a shared job's block leases and heartbeats are judged by the
database's clock, so a worker whose own clock runs an hour ahead claims only free blocks and reaps nobody."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from store import jobs as store_jobs
from store import open_db, prejudgments
from store.db import db_clock, rows

AHEAD = timedelta(hours=1)


class _AheadClock(datetime):
    @classmethod
    def now(cls, tz=None):
        return datetime.now(tz) + AHEAD


def _ahead_now() -> str:
    return (datetime.now(UTC) + AHEAD).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@pytest.fixture
def ahead(monkeypatch):
    """Make this process's clock (every clock the job code could read in Python) run an hour ahead."""

    def on():
        monkeypatch.setattr(store_jobs, "datetime", _AheadClock)
        monkeypatch.setattr(store_jobs, "now", _ahead_now, raising=False)
        monkeypatch.setattr("store.db.now", _ahead_now)

    return on


@pytest.fixture
def job(store_target):
    with open_db(store_target) as db:
        prejudgments.ensure_llm_source(db, "llm:stub", "stub-1", "v")
        job_id, role = store_jobs.open_shared_job(
            db, source="llm:stub", task="passage", model="stub-1", prompt_version="v", options="{}",
            base_url=None, concurrency=1, lease_s=600, block_size=1, stale_after_s=60,
        )  # fmt: skip
        assert role == "start"
        for block in range(3):
            store_jobs.queue_block(
                db, job_id, block, [(block, "101_1", f"item-{block}", 0, f"h{block}", "{}", None)],
                planned=block + 1, items_queued=block + 1, scanned=0, already=0, skipped=0, deferred=0, calls=0,
                chars=0,
            )  # fmt: skip
    return store_target, job_id


def test_a_worker_an_hour_ahead_claims_only_free_blocks(job, ahead):
    target, job_id = job
    with open_db(target) as db:
        punctual = store_jobs.add_worker(db, job_id)
        assert store_jobs.claim_block(db, job_id, punctual, lease_s=600)["block"] == 0  # leased for 10 minutes
        ahead()
        hasty = store_jobs.add_worker(db, job_id)
        assert store_jobs.claim_block(db, job_id, hasty, lease_s=600)["block"] == 1
        assert store_jobs.claim_block(db, job_id, hasty, lease_s=600)["block"] == 2
        assert store_jobs.claim_block(db, job_id, hasty, lease_s=600) is None  # block 0's lease is live
        assert store_jobs.holds_block(db, job_id, 0, punctual)
        store_jobs.beat_worker(db, job_id, hasty, lease_s=600)  # its heartbeat is written by the database's clock
        store_jobs.reap_stale_jobs(db)  # and reaps no live worker
        assert {w["id"]: w["status"] for w in store_jobs.workers(db, job_id)} == {
            punctual: "running",
            hasty: "running",
        }
        (lease,) = [r["lease_until"] for r in rows(db, "SELECT lease_until FROM job_blocks WHERE block = 1")]
        assert lease < db_clock(db, 601)  # leased for 10 minutes of the database's time, not 70


def test_an_expired_lease_is_taken_by_the_database_clock(job):
    target, job_id = job
    with open_db(target) as db:
        first = store_jobs.add_worker(db, job_id)
        assert store_jobs.claim_block(db, job_id, first, lease_s=-1)["block"] == 0  # a lease already over
        second = store_jobs.add_worker(db, job_id)
        assert store_jobs.claim_block(db, job_id, second, lease_s=600)["block"] == 0
