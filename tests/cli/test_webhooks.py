"""Webhooks: signed bodies of committed label changes delivered to a local receiver by `webhooks deliver`,
retried with back-off after a failing receiver, and nothing delivered for a write that rolled back."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.helpers import run_cli, snapshot

pytestmark = pytest.mark.both_engines
SECRET = "a-receivers-secret-0123456789"


class Receiver:
    """A local HTTP receiver: records each request; answers 500 to the first ``failures`` of them."""

    def __init__(self, failures: int = 0):
        self.failures, self.got = failures, []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                data = self.rfile.read(int(self.headers["Content-Length"]))
                outer.got.append((dict(self.headers), data))
                code = 500 if len(outer.got) <= outer.failures else 204
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    made = []

    def make(failures=0):
        made.append(Receiver(failures))
        return made[-1]

    yield make
    for r in made:
        r.close()


@pytest.fixture
def demo_target(demo_target):
    """The demo with ann's account (her label source)."""
    run_cli("users", "add", "ann", "--role", "assessor", "--no-password", db=demo_target, check=True)
    return demo_target


def add_hook(target, url, event="label.saved"):
    done = run_cli("webhooks", "add", url, "--event", event, "--secret-stdin", db=target, stdin=SECRET + "\n")
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[1].rstrip(":"))


def deliver(target, *more):
    done = run_cli("webhooks", "deliver", "--once", *more, db=target, check=True)
    return json.loads(done.stdout)


def label(target, grade, source="ann", turn="101_1", passage="demo-doc-001:0"):
    from assess.services import judging
    from store import open_db

    with open_db(target) as db:
        judging.save_grade(db, source, turn, passage, grade, reshow=False, note=None, mode="blind")


def test_a_committed_label_is_delivered_signed(demo_target, receiver):
    hear = receiver()
    hook = add_hook(demo_target, hear.url)
    assert deliver(demo_target) == {"delivered": 0, "retry": 0, "gave-up": 0}  # nothing before the hook
    label(demo_target, 3)
    assert deliver(demo_target)["delivered"] == 1
    assert deliver(demo_target)["delivered"] == 0  # once
    ((headers, data),) = hear.got
    expected = "sha256=" + hmac.new(SECRET.encode(), data, hashlib.sha256).hexdigest()
    assert headers["X-Assess-Signature"] == expected and headers["X-Assess-Event"] == "label.saved"
    sent = json.loads(data)
    assert (sent["event"], sent["task"], sent["source"], sent["item"], sent["value"], sent["previous"]) == (
        "label.saved",
        "passage",
        "ann",
        "101_1 demo-doc-001:0",
        "3",
        None,
    )
    assert headers["X-Assess-Delivery"] == f"{hook}-{sent['id']}"
    listed = json.loads(run_cli("webhooks", "list", db=demo_target, check=True).stdout)
    assert [h["url"] for h in listed] == [hear.url] and SECRET not in json.dumps(listed)


def test_a_failing_receiver_is_retried_with_back_off_in_order(demo_target, receiver):
    from datetime import UTC, datetime, timedelta

    from assess.services.webhooks import deliver_once
    from store import open_db

    hear = receiver(failures=2)
    add_hook(demo_target, hear.url)
    label(demo_target, 1)
    label(demo_target, 2, passage="demo-doc-002:3")
    t0 = datetime.now(UTC)
    with open_db(demo_target) as db:  # the clock given: retries due after 1 s, then 2 s more (--backoff 1)
        rounds = [deliver_once(db, at=t0 + timedelta(seconds=s)) for s in (0, 0.9, 1.0, 2.9, 3.0)]
    assert [(r["delivered"], r["retry"]) for r in rounds] == [(0, 1), (0, 0), (0, 1), (0, 0), (2, 0)]
    values = [json.loads(data)["value"] for _, data in hear.got]
    assert values == ["1", "1", "1", "2"]  # the first event three times, then the second: in order
    log = json.loads(run_cli("webhooks", "log", db=demo_target, check=True).stdout)
    first = min(r["history_id"] for r in log)
    assert sorted((r["attempt"], r["status"], r["outcome"]) for r in log if r["history_id"] == first) == [
        (1, 500, "retry"),
        (2, 500, "retry"),
        (3, 204, "delivered"),
    ]


def test_nothing_is_delivered_for_a_write_that_rolled_back(demo_target, receiver):
    from assess.tasks import Shown
    from store import labels, open_db
    from store.db import write
    from store.labels import StaleLabel

    hear = receiver()
    add_hook(demo_target, hear.url)
    with open_db(demo_target) as db, pytest.raises(RuntimeError), write(db):
        labels.save(db, "passage", "ann", ("101_1", "demo-doc-001:0"), 4, mode="blind", via="ui")
        raise RuntimeError("the transaction fails after the label was written")
    label(demo_target, 2)
    with open_db(demo_target) as db, pytest.raises(StaleLabel):  # refused: it saw no label, one is stored
        labels.save(db, "passage", "ann", ("101_1", "demo-doc-001:0"), 0, mode="blind", via="ui", expected=Shown(False))
    assert deliver(demo_target)["delivered"] == 1
    assert [json.loads(data)["value"] for _, data in hear.got] == ["2"]


def test_undo_is_its_own_event(demo_target, receiver):
    from assess.services import api_judging
    from store import open_db

    saved, undone = receiver(), receiver()
    add_hook(demo_target, saved.url)
    add_hook(demo_target, undone.url, "label.undone")
    label(demo_target, 2)
    with open_db(demo_target) as db:
        api_judging.undo_latest(db, "ann")
    assert deliver(demo_target)["delivered"] == 2
    assert [json.loads(d)["value"] for _, d in saved.got] == ["2"]
    assert [(json.loads(d)["value"], json.loads(d)["via"]) for _, d in undone.got] == [(None, "undo")]


@pytest.mark.parametrize(
    ("url", "event", "secret", "said"),
    [
        ("http://169.254.169.254/latest", "label.saved", SECRET, "link-local or cloud metadata address"),
        ("http://metadata.google.internal/x", "label.saved", SECRET, "cloud metadata name"),
        ("ftp://example.org/x", "label.saved", SECRET, "expected an http:// or https:// address"),
        ("http://127.0.0.1:9/x", "job.done", SECRET, "expected one of label.saved, label.undone, job.finished"),
        ("http://127.0.0.1:9/x", "label.saved", "short", "at least 16 characters"),
        ("http://127.0.0.1:9/x", "label.saved", "", "found none"),
    ],
)
def test_refused_webhooks_change_nothing(demo_target, url, event, secret, said):
    before = snapshot(demo_target)
    done = run_cli("webhooks", "add", url, "--event", event, "--secret-stdin", db=demo_target, stdin=secret + "\n")
    assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert snapshot(demo_target) == before
