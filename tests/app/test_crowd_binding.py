"""A crowd worker id is bound to the browser that first arrived with it (store.crowd.bind, migration 12):
the store keeps only the secret's hash, a second browser is refused without a write, two browsers
arriving at once bind exactly one, ``release`` lets the next browser bind afresh; through AppTest (each
run a new browser without cookies) another browser with someone's link gets no batch and no code, and the
crowd page never traps a signed-in person or one who asks to leave."""

from __future__ import annotations

import hashlib
import threading

import pytest
from streamlit.testing.v1 import AppTest

from assess.errors import AssessError
from assess.services.loading import load_demo
from store import crowd as store_crowd
from store import db as sql
from store import open_db
from tests.helpers import ROOT, rows, run_cli

APP = str(ROOT / "app.py")


@pytest.fixture
def study_db(demo_target):
    db = open_db(demo_target)
    store_crowd.create_demo_study(db)
    yield db
    db.close()


def bindings(db) -> list[tuple]:
    return [tuple(r.values()) for r in sql.rows(db, "SELECT study, worker, secret_hash FROM crowd_bindings")]


def test_first_browser_binds_and_only_its_secret_is_let_in_again(study_db):
    first = store_crowd.bind(study_db, "demo", "bob")
    assert first.allowed and first.new and len(first.secret) >= 40
    # only the hash is stored
    assert bindings(study_db) == [("demo", "bob", hashlib.sha256(first.secret.encode()).hexdigest())]
    again = store_crowd.bind(study_db, "demo", "bob", (None, first.secret))  # the cookie shows the secret
    assert again.allowed and not again.new and again.secret == first.secret
    other = store_crowd.bind(study_db, "demo", "bob", ("guess", first.secret[:-1], None, ""))
    assert not other.allowed and other.secret is None
    assert store_crowd.bind(study_db, "demo", "bob").allowed is False  # no secret at all
    assert len(bindings(study_db)) == 1  # a refused arrival writes nothing
    # another worker id, or the same id in another study, is its own binding
    assert store_crowd.bind(study_db, "demo", "amy").new
    with pytest.raises(AssessError, match="no crowd study"):
        store_crowd.bind(study_db, "nope", "bob")


def test_release_lets_the_next_browser_bind_and_keeps_the_batch(study_db):
    from assess.crowd.rules import entry_from_params

    first = store_crowd.bind(study_db, "demo", "bob")
    assignment = store_crowd.enter(study_db, entry_from_params({"study": "demo", "worker": "bob"}))
    store_crowd.release(study_db, "demo", "bob")
    assert bindings(study_db) == []
    second = store_crowd.bind(study_db, "demo", "bob")
    assert second.allowed and second.new and second.secret != first.secret
    assert not store_crowd.bind(study_db, "demo", "bob", (first.secret,)).allowed  # the old browser is out now
    assert store_crowd.enter(study_db, entry_from_params({"study": "demo", "worker": "bob"})).id == assignment.id
    with pytest.raises(AssessError, match="bound to no browser"):
        store_crowd.release(study_db, "demo", "nobody")


def test_two_browsers_arriving_at_once_bind_exactly_one(store_target):
    db = open_db(store_target)
    load_demo(db)
    store_crowd.create_demo_study(db)
    db.close()
    results, start = [], threading.Barrier(6)

    def arrive():
        own = open_db(store_target)
        try:
            start.wait()
            results.append(store_crowd.bind(own, "demo", "bob"))
        finally:
            own.close()

    threads = [threading.Thread(target=arrive) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.allowed for r in results) == [False] * 5 + [True]
    winner = next(r for r in results if r.allowed)
    db = open_db(store_target)
    assert bindings(db) == [("demo", "bob", hashlib.sha256(winner.secret.encode()).hexdigest())]
    db.close()


def test_cli_release_lets_the_worker_bind_another_browser(tmp_path):
    path = tmp_path / "store.db"
    db = open_db(path)
    load_demo(db)
    store_crowd.create_demo_study(db)
    first = store_crowd.bind(db, "demo", "bob")
    db.close()
    done = run_cli("crowd", "release", "demo", "bob", db=path)
    assert done.returncode == 0, done.stderr
    assert "worker bob released" in done.stdout
    assert rows(path, "SELECT COUNT(*) FROM crowd_bindings") == [(0,)]
    again = run_cli("crowd", "release", "demo", "bob", db=path)  # nothing bound: one line, exit 2
    assert again.returncode == 2 and again.stderr.strip().count("\n") == 0
    assert "bound to no browser" in again.stderr and "Traceback" not in again.stderr
    assert run_cli("crowd", "release", "nope", "bob", db=path).returncode == 2
    db = open_db(path)
    assert store_crowd.bind(db, "demo", "bob", (first.secret,)).new  # the next browser binds afresh
    db.close()


# ------------------------------------------------------------------------------------------- the page (AppTest)


@pytest.fixture
def crowd_app(tmp_path, monkeypatch, demo_copy):
    path = demo_copy(tmp_path / "store.db")
    db = open_db(path)
    store_crowd.create_demo_study(db)
    db.close()
    monkeypatch.setenv("ASSESS_DB", str(path))
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    return path


def visit(**params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def page_text(at) -> str:
    return " ".join(str(e.value) for e in at.main if hasattr(e, "value"))


def test_another_browser_with_a_workers_link_gets_no_batch_and_no_code(crowd_app):
    bob = visit(study="demo", worker="bob")
    bob.checkbox(key="crowd_agree").check().run()
    bob.button(key="crowd_start").click().run()
    for _ in range(11):
        bob.button(key="crowd_yes").click().run()
    code = bob.code[0].value
    assert code and any("answered every item" in s.value for s in bob.success)
    bob.run()  # the same browser session keeps its binding: the code again
    assert bob.code[0].value == code

    thief = visit(study="demo", worker="bob")  # a new session without bob's cookie
    assert any("already in use in another browser" in e.value for e in thief.error)
    assert code not in page_text(thief) and not thief.code and not thief.button
    # the same id under another platform's parameters (or a new MTurk assignment) is still bob's
    for params in (
        {"PROLIFIC_PID": "bob", "STUDY_ID": "s", "SESSION_ID": "x"},
        {"workerId": "bob", "assignmentId": "A9"},
    ):
        other = visit(study="demo", **params)
        assert any("already in use in another browser" in e.value for e in other.error)
        assert code not in page_text(other) and not other.code
    assert rows(crowd_app, "SELECT worker, status FROM crowd_assignments") == [("bob", "completed")]


def test_a_refused_browser_changes_nothing(crowd_app):
    amy = visit(study="demo", worker="amy")
    amy.checkbox(key="crowd_agree").check().run()
    amy.button(key="crowd_start").click().run()
    amy.button(key="crowd_no").click().run()
    before = rows(crowd_app, "SELECT id, status, consented_at, last_seen FROM crowd_assignments")
    answers = rows(crowd_app, "SELECT assignment_id, item_id, value FROM crowd_answers")
    other = visit(study="demo", worker="amy")
    assert any("already in use in another browser" in e.value for e in other.error)
    assert not other.get("progress") and not other.checkbox
    assert rows(crowd_app, "SELECT id, status, consented_at, last_seen FROM crowd_assignments") == before
    assert rows(crowd_app, "SELECT assignment_id, item_id, value FROM crowd_answers") == answers
    assert rows(crowd_app, "SELECT COUNT(*) FROM crowd_bindings") == [(1,)]


def test_leave_study_gives_the_workbench_and_signed_in_people_are_never_trapped(crowd_app):
    at = visit(study="demo", worker="carl")
    assert at.checkbox(key="crowd_agree") is not None and len(at.sidebar) == 0
    at.query_params.clear()  # the URL without ?study=: this session still shows the crowd page
    at.run()
    assert at.checkbox(key="crowd_agree") is not None and len(at.sidebar) == 0
    at.query_params.clear()  # the crowd page put the link back into the URL
    at.query_params["leave-study"] = "1"
    at.run()
    assert not at.exception, at.exception
    assert {m.label for m in at.metric} >= {"Conversations", "Turns"}  # the workbench's home
    assert len(at.sidebar) > 0 and "leave-study" not in at.query_params
    at.query_params.clear()
    at.run()  # the session forgot the crowd link
    assert {m.label for m in at.metric} >= {"Conversations", "Turns"}

    dan = visit(study="demo", worker="dan")
    dan.query_params.clear()
    dan.query_params["assessor"] = "dan-organizer"  # an address that signs someone in (open mode)
    dan.run()
    assert not dan.exception, dan.exception
    assert {m.label for m in dan.metric} >= {"Conversations", "Turns"}
    assert dan.session_state["assessor"] == "dan-organizer"
