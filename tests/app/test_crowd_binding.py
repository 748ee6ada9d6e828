"""A crowd worker id is bound to the browser that pressed Start (store.crowd.bind, migration 12; a view only
checks, store.crowd.check_binding, so a worker may preview on one device and start on another):
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
from assess.ui.crowd import CROWD_REFUSED
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
    from assess.crowd.entry import entry_from_params

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


def bound(path) -> list[tuple]:
    return rows(path, "SELECT study, worker, secret_hash FROM crowd_bindings")


def cookies_written(at) -> dict[str, str]:
    """The cookies this run of the crowd page writes (crowd_mark's component data), by name."""
    import json

    marks = [e for e in at.get("bidi_component") if e.proto.component_name == "assess_crowd_mark"]
    return {c["name"]: c["value"] for m in marks for c in json.loads(m.proto.json)["cookies"]}


def progress_text(at) -> str:
    return " ".join(str(p.proto.text) for p in at.get("progress"))


def test_viewing_binds_nothing_and_the_browser_that_presses_start_is_bound(crowd_app):
    """A worker previews the consent page on browser A and starts on browser B: B is bound at its Start (not A
    at its view); A's Start, pressed after B's, is refused with the plain message and writes nothing."""
    a = visit(study="demo", worker="eve")  # browser A only looks at the consent page
    assert a.checkbox(key="crowd_agree") is not None and not a.error
    a.checkbox(key="crowd_agree").check().run()  # A even ticks the box, but does not press Start yet
    assert not a.exception and not a.button(key="crowd_start").disabled
    assert bound(crowd_app) == []  # viewing binds nothing
    assert a.session_state["_crowd_secrets"] == {}
    assert not any(k.startswith("assess_crowd_id_") for k in cookies_written(a))  # and writes no binding cookie

    b = visit(study="demo", worker="eve")  # browser B (no cookie): not refused
    assert not b.error and b.checkbox(key="crowd_agree") is not None
    b.checkbox(key="crowd_agree").check().run()
    assert rows(crowd_app, "SELECT consented_at FROM crowd_assignments WHERE worker = 'eve'") == [(None,)]
    b.button(key="crowd_start").click().run()
    assert not b.exception and not b.error, b.error
    assert progress_text(b).startswith("Item 1 of")
    (secret,) = b.session_state["_crowd_secrets"].values()
    assert bound(crowd_app) == [("demo", "eve", hashlib.sha256(secret.encode()).hexdigest())]
    assert secret in cookies_written(b).values()  # B's binding cookie is written from now on
    consented = rows(crowd_app, "SELECT id, consented_at FROM crowd_assignments WHERE worker = 'eve'")
    assert len(consented) == 1 and consented[0][1] is not None

    a.button(key="crowd_start").click().run()  # A's page still shows Start: refused, nothing written
    assert not a.exception, a.exception
    assert [e.value for e in a.error] == [CROWD_REFUSED]
    assert not a.get("progress") and not a.checkbox and not a.button
    assert a.session_state["_crowd_secrets"] == {} and not any(
        k.startswith("assess_crowd_id_") for k in cookies_written(a)
    )
    assert bound(crowd_app) == [("demo", "eve", hashlib.sha256(secret.encode()).hexdigest())]
    assert rows(crowd_app, "SELECT id, consented_at FROM crowd_assignments WHERE worker = 'eve'") == consented
    b.button(key="crowd_yes").click().run()  # B goes on
    assert progress_text(b).startswith("Item 2 of")
    assert rows(crowd_app, "SELECT COUNT(*) FROM crowd_answers") == [(1,)]


def test_a_view_of_a_bound_id_is_still_refused_and_a_released_batch_binds_its_next_browser(crowd_app):
    b = visit(study="demo", worker="fay")
    b.checkbox(key="crowd_agree").check().run()
    b.button(key="crowd_start").click().run()
    assert progress_text(b).startswith("Item 1 of")
    a = visit(study="demo", worker="fay")  # a view of an id bound elsewhere: refused as before
    assert any("already in use in another browser" in e.value for e in a.error) and not a.checkbox
    assert run_cli("crowd", "release", "demo", "fay", db=crowd_app).returncode == 0
    c = visit(study="demo", worker="fay")  # a batch already started: the next browser continues it, bound
    assert progress_text(c).startswith("Item 1 of") and not c.error
    (secret,) = c.session_state["_crowd_secrets"].values()
    assert secret in cookies_written(c).values()
    assert bound(crowd_app) == [("demo", "fay", hashlib.sha256(secret.encode()).hexdigest())]
    assert any("already in use in another browser" in e.value for e in visit(study="demo", worker="fay").error)
