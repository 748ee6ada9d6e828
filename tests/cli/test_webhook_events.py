"""Webhook events that are not label changes (issue 38): job.finished, import.finished and assignment.done,
written to the outbox in the transaction of the write they report and delivered signed after the commit by
`webhooks deliver`, to a local receiver; retried after a failing receiver; nothing for a write that rolled back."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from tests.cli.test_webhooks import SECRET, add_hook, deliver, receiver  # noqa: F401 (a fixture)
from tests.helpers import rows, run_cli

pytestmark = pytest.mark.both_engines


@pytest.fixture
def demo_target(demo_target):
    run_cli("users", "add", "ann", "--role", "assessor", "--no-password", db=demo_target, check=True)
    return demo_target


def signed(got) -> list[dict]:
    """The bodies received, each checked against its signature."""
    out = []
    for headers, data in got:
        assert headers["X-Assess-Signature"] == "sha256=" + hmac.new(SECRET.encode(), data, hashlib.sha256).hexdigest()
        out.append(json.loads(data))
    return out


def start_job(db, source: str = "llm:demo-gpt") -> int:
    from store import jobs

    return jobs.start_job(
        db, source=source, task="passage", model="m", prompt_version="v1", base_url=None,
        concurrency=1, planned=5, skipped=0,
    )  # fmt: skip


def test_a_finished_job_is_delivered_once_signed(demo_target, receiver):
    from store import jobs, open_db

    hear = receiver()
    hook = add_hook(demo_target, hear.url, "job.finished")
    with open_db(demo_target) as db:
        job = start_job(db)
        assert deliver(demo_target)["delivered"] == 0  # running: nothing yet
        jobs.finish_job(db, job, "done", "5 labels")
    assert deliver(demo_target)["delivered"] == 1
    assert deliver(demo_target)["delivered"] == 0
    (sent,) = signed(hear.got)
    assert (sent["event"], sent["job"], sent["status"], sent["source"], sent["planned"]) == (
        "job.finished", job, "done", "llm:demo-gpt", 5,
    )  # fmt: skip
    assert hear.got[0][0]["X-Assess-Delivery"] == f"{hook}-{sent['id']}"


def test_an_import_is_delivered_after_its_commit_and_a_failed_one_never(demo_target, receiver, tmp_path):
    hear = receiver()
    add_hook(demo_target, hear.url, "import.finished")
    bad = tmp_path / "bad.qrels"
    bad.write_text("101_1 0 demo-doc-001:0 2\n101_1 0 demo-doc-002:3 nine\n", encoding="utf-8")
    assert run_cli("import", "qrels", bad, "--source", "nist", db=demo_target).returncode == 2
    good = tmp_path / "good.qrels"
    good.write_text("101_1 0 demo-doc-001:0 2\n101_2 0 demo-doc-002:3 1\n", encoding="utf-8")
    run_cli("import", "qrels", good, "--source", "nist", db=demo_target, check=True)
    assert deliver(demo_target)["delivered"] == 1
    (sent,) = signed(hear.got)
    assert {k: sent[k] for k in ("event", "kind", "file", "source", "labels", "turns")} == {
        "event": "import.finished", "kind": "qrels", "file": "good.qrels", "source": "nist", "labels": 2, "turns": 2,
    }  # fmt: skip


def test_every_staged_import_reports_its_finish_battles_included(demo_target, receiver, tmp_path):
    hear = receiver()
    add_hook(demo_target, hear.url, "import.finished")
    lines = [
        {"topic_id": "101_1", "run_a": "A", "run_b": "B", "winner": "a"},
        {"topic_id": "101_2", "run_a": "B", "run_b": "A", "winner": "tie"},
    ]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(x) + "\n" for x in [*lines, {**lines[0], "winner": "left"}]), encoding="utf-8")
    assert run_cli("battles", "import", bad, "--source", "arena", db=demo_target).returncode == 2
    good = tmp_path / "good.jsonl"
    good.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    run_cli("battles", "import", good, "--source", "arena", db=demo_target, check=True)
    assert deliver(demo_target)["delivered"] == 1  # the refused file sent nothing
    (sent,) = signed(hear.got)
    assert {k: sent[k] for k in ("event", "kind", "file", "source", "battles", "new")} == {
        "event": "import.finished", "kind": "battles", "file": "good.jsonl", "source": "arena", "battles": 2, "new": 2,
    }  # fmt: skip


def test_an_assignment_is_done_when_its_last_passage_is_labelled(demo_target, receiver):
    from assess.services import judging
    from store import open_db

    hear = receiver()
    add_hook(demo_target, hear.url, "assignment.done")
    run_cli("assign", "--assessor", "ann", "--turn", "101_1", db=demo_target, check=True)
    pool = [
        r[0] for r in rows(demo_target, "SELECT passage_id FROM pool WHERE turn_id = '101_1' ORDER BY passage_id", {})
    ]
    with open_db(demo_target) as db:
        for passage in pool[:-1]:
            judging.save_grade(db, "ann", "101_1", passage, 1, reshow=False, note=None, mode="blind")
        judging.save_grade(db, "ann", "101_2", "demo-doc-002:3", 1, reshow=False, note=None, mode="blind")
        assert deliver(demo_target)["delivered"] == 0  # one passage left; 101_2 is not hers
        judging.save_grade(db, "ann", "101_1", pool[-1], None, reshow=False, note=None, mode="blind")
        judging.save_grade(db, "ann", "101_1", pool[0], 3, reshow=False, note=None, mode="blind")  # a change: no more
    assert deliver(demo_target)["delivered"] == 1
    (sent,) = signed(hear.got)
    assert (sent["event"], sent["assessor"], sent["turn"], sent["task"]) == (
        "assignment.done",
        "ann",
        "101_1",
        "passage",
    )


def test_outbox_events_are_retried_and_rolled_back_writes_leave_none(demo_target, receiver):
    from datetime import UTC, datetime, timedelta

    from assess.services.webhooks import deliver_once
    from store import jobs, open_db
    from store.db import write

    hear = receiver(failures=1)
    add_hook(demo_target, hear.url, "job.finished")
    with open_db(demo_target) as db:
        rolled = start_job(db)
        with pytest.raises(RuntimeError), write(db):
            jobs.finish_job(db, rolled, "done")
            raise RuntimeError("the transaction fails after the job was marked")
        kept = start_job(db, "llm:demo-llama")  # the other still runs: its finish rolled back
        jobs.finish_job(db, kept, "failed", "stopped")
        t0 = datetime.now(UTC)
        rounds = [deliver_once(db, at=t0 + timedelta(seconds=s)) for s in (0, 0.5, 1.0)]
    assert [(r["delivered"], r["retry"]) for r in rounds] == [(0, 1), (0, 0), (1, 0)]
    assert [b["job"] for b in signed(hear.got)] == [kept, kept]  # the rolled-back finish was never sent
    log = json.loads(run_cli("webhooks", "log", db=demo_target, check=True).stdout)
    assert sorted((r["attempt"], r["status"], r["outcome"]) for r in log) == [(1, 500, "retry"), (2, 204, "delivered")]
