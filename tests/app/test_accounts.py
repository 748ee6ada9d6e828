"""Accounts and roles: the store, the `users` command line, sign-in through AppTest (password, link, roles)."""

from __future__ import annotations

import html
import re
import stat
from datetime import UTC, datetime, timedelta
from urllib.parse import unquote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assess.errors import AssessError
from assess.services import accounts as service
from store import accounts, history, open_db
from store.conversations import assign
from store.queue import set_judging_mode
from store.review import adjudicate
from store.sources import sign_in
from tests.helpers import open_app, rows, run_cli, run_cli_process, snapshot

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
PASSWORD = "correct-horse-battery"


@pytest.fixture
def db(demo_target):
    database = open_db(demo_target)
    yield database
    database.close()


# ------------------------------------------------------------------------------------------- store and service


@pytest.mark.argon2_defaults
def test_password_is_stored_as_an_argon2_hash_and_verifies(db):
    from argon2 import PasswordHasher

    made = service.add_account(db, "amy", "assessor", by="boss")
    assert len(made) >= 20
    stored = accounts.get(db, "amy")["password_hash"]
    assert stored.startswith("$argon2id$") and made not in stored
    assert PasswordHasher().verify(stored, made)
    assert service.check_password(db, "amy", made) == service.Person("amy", "assessor")
    with pytest.raises(service.SignInRefused, match="wrong name or password"):
        service.check_password(db, "amy", made + "x")
    with pytest.raises(service.SignInRefused, match="wrong name or password"):  # unknown: the same message
        service.check_password(db, "nobody", made)
    assert "password_hash" not in accounts.accounts(db)[0]


@pytest.mark.both_engines
def test_account_changes_are_history_rows_naming_who(db):
    service.add_account(db, "amy", "assessor", password=PASSWORD, by="boss")
    accounts.set_disabled(db, "amy", True, by="boss")
    accounts.set_role(db, "amy", "adjudicator", by="chief")
    service.reset_account(db, "amy", by="chief")
    got = [(a["by"], a["item"], a["via"]) for a in history.actions(db, "account")]
    assert got == [
        ("boss", "amy", "add"),
        ("boss", "amy", "disable"),
        ("chief", "amy", "role"),
        ("chief", "amy", "reset"),
    ]
    text = " ".join(str(v) for a in history.actions(db) for v in a.values())
    assert "argon2" not in text and PASSWORD not in text


def test_assignments_adjudication_and_judging_mode_name_who(db):
    assign(db, "amy", ["101_1"], by="boss")
    set_judging_mode(db, "reveal", by="boss")
    adjudicate(db, "101_1", "demo-doc-001:0", 3, by="judy")
    got = [(a["kind"], a["by"], a["item"], a["new"]) for a in history.actions(db)]
    assert got == [
        ("assignment", "boss", "amy", '["101_1"]'),
        ("judging-mode", "boss", "judging_mode", "reveal"),
        ("adjudication", "judy", "101_1 demo-doc-001:0", "3"),
    ]


def test_failed_sign_ins_lock_an_account_for_a_minute_then_longer(db):
    service.add_account(db, "amy", "assessor", password=PASSWORD, by="boss")
    for i in range(service.MAX_FAILURES):
        with pytest.raises(service.SignInRefused, match="wrong"):
            service.check_password(db, "amy", "guess", address="10.0.0.1", at=T0 + timedelta(seconds=i))
    last = T0 + timedelta(seconds=service.MAX_FAILURES - 1)
    with pytest.raises(
        service.SignInRefused, match="too many failed sign-ins for this account: try again in 50 seconds"
    ):
        service.check_password(db, "amy", PASSWORD, address="10.0.0.2", at=last + timedelta(seconds=10))
    later = last + service.BACKOFF_FIRST
    assert service.check_password(db, "amy", PASSWORD, address="10.0.0.2", at=later).name == "amy"


def test_failed_sign_ins_are_limited_per_address(db):
    service.add_account(db, "amy", "assessor", password=PASSWORD, by="boss")
    for i in range(service.MAX_FAILURES):
        with pytest.raises(service.SignInRefused):
            service.check_password(db, f"who{i}", "guess", address="10.0.0.9", at=T0)
    with pytest.raises(service.SignInRefused, match="for this address"):
        service.check_password(db, "amy", PASSWORD, address="10.0.0.9", at=T0)
    assert service.check_password(db, "amy", PASSWORD, address="10.0.0.8", at=T0).name == "amy"


def test_sign_in_link_valid_expired_tampered_and_after_reset(db, monkeypatch):
    monkeypatch.delenv("ASSESS_SECRET_KEY", raising=False)
    service.add_account(db, "amy", "assessor", password=PASSWORD, by="boss")
    if not db.sqlite:  # no file beside the store to keep a key in: $ASSESS_SECRET_KEY is needed
        with pytest.raises(AssessError, match="set ASSESS_SECRET_KEY"):
            service.make_link(db, "amy", "https://assess.example.org/", at=T0)
        monkeypatch.setenv("ASSESS_SECRET_KEY", "a-key-for-the-tests-of-sign-in-links")
    link = service.make_link(db, "amy", "https://assess.example.org/", minutes=60, at=T0)
    # the token travels in the fragment, which browsers send to no server (no request line or proxy log)
    assert link.startswith("https://assess.example.org/#signin=")
    token = unquote(link.split("signin=", 1)[1])
    assert service.check_link(db, token, at=T0 + timedelta(minutes=59)).name == "amy"
    with pytest.raises(service.SignInRefused, match="used already"):  # a link signs in once
        service.check_link(db, token, at=T0 + timedelta(minutes=59))
    with pytest.raises(service.SignInRefused, match="expired on 2026-03-01 13:00 UTC"):
        service.check_link(db, token, at=T0 + timedelta(minutes=61))
    with pytest.raises(service.SignInRefused, match="not valid"):
        service.check_link(db, token[:-2] + ("AA" if not token.endswith("AA") else "BB"), at=T0)
    if db.sqlite:
        key = service.key_file(db)
        assert key.name == "store.db.secret" and stat.S_IMODE(key.stat().st_mode) == 0o600
        assert key.read_text() not in snapshot(db.target)
    service.reset_account(db, "amy", by="boss")
    with pytest.raises(service.SignInRefused, match="replaced"):
        service.check_link(db, token, at=T0)
    accounts.set_disabled(db, "amy", True, by="boss")
    with pytest.raises(service.SignInRefused, match="disabled"):
        service.make_link(db, "amy", "https://assess.example.org", at=T0)


@pytest.fixture(scope="module")
def forge_db(tmp_path_factory):
    """One store for every forged token (a refused token changes nothing a later one could use)."""
    return open_db(tmp_path_factory.mktemp("forge") / "f.db")


@settings(max_examples=40, deadline=None)
@given(st.text(max_size=120))
def test_no_forged_token_signs_anyone_in(forge_db, token):
    with pytest.raises(service.SignInRefused):
        service.check_link(forge_db, token)


def test_a_name_typed_in_open_mode_cannot_take_an_accounts_name(db):
    service.add_account(db, "amy", "assessor", password=PASSWORD, by="boss")
    with pytest.raises(AssessError, match="belongs to an account"):
        sign_in(db, "amy", guest=True)
    assert sign_in(db, "amy") == "amy"  # the store itself (assignments) may still name the account


def test_demo_store_is_open_by_default_and_any_other_is_not(db):
    assert accounts.open_sign_in(db, None)
    assert not accounts.open_sign_in(db, False)
    service.add_account(db, "boss", "organizer", password=PASSWORD, by="setup")
    assert not accounts.open_sign_in(db, None)
    assert accounts.open_sign_in(db, True)


# ------------------------------------------------------------------------------------------- command line


def test_cli_add_list_disable_reset_link(store_target, monkeypatch):
    path = store_target
    if not store_target.endswith(".db"):
        monkeypatch.setenv("ASSESS_SECRET_KEY", "a-key-for-the-tests-of-sign-in-links")
    added = run_cli("users", "add", "boss", "--role", "organizer", db=path)
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith("added boss (organizer)\npassword: ")
    password = added.stdout.split("password: ")[1].strip()
    assert password not in snapshot(path)
    listed = run_cli("users", "list", "--json", db=path, check=True)
    assert '"role": "organizer"' in listed.stdout and "argon2" not in listed.stdout
    assert run_cli("users", "disable", "boss", "--by", "chief", db=path, check=True).stdout == "boss disabled\n"
    assert rows(path, "SELECT source, item, via FROM label_history WHERE label_table = 'account' ORDER BY id") == [
        (added_by(path), "boss", "add"),
        ("chief", "boss", "disable"),
    ]
    reset = run_cli("users", "reset", "boss", db=path, check=True)
    assert "earlier sign-in links no longer work" in reset.stdout and "password: " in reset.stdout
    assert run_cli("users", "enable", "boss", db=path, check=True).stdout == "boss enabled\n"
    link = run_cli("users", "link", "boss", "--base-url", "http://127.0.0.1:8501", "--minutes", "5", db=path)
    assert link.returncode == 0 and link.stdout.startswith("http://127.0.0.1:8501/#signin=")


def added_by(path) -> str:
    return rows(path, "SELECT created_by FROM accounts WHERE name = 'boss'")[0][0]


@pytest.mark.parametrize(
    ("argv", "stdin", "message"),
    [
        (["users", "add", "amy", "--role", "assessor", "--password-stdin"], "short\n", "at least 10 characters"),
        (["users", "add", "amy", "--role", "assessor", "--password-stdin"], "", "expected a password"),
        (["users", "add", "two words", "--role", "assessor"], "", "an assessor name is 1-64 characters"),
        (["users", "add", "nist", "--role", "assessor"], "", "reserved"),
        (["users", "add", "boss", "--role", "assessor"], "", "exists already"),
        (["users", "disable", "zed"], "", "no account 'zed'"),
        (["users", "link", "boss", "--base-url", "ftp://x"], "", "--base-url: expected"),
        (["users", "link", "boss", "--base-url", "http://x", "--minutes", "0"], "", "--minutes: expected"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line_and_the_store_unchanged(tmp_path, argv, stdin, message):
    path = tmp_path / "bad.db"
    run_cli("users", "add", "boss", "--role", "organizer", db=path, check=True)
    before = snapshot(path)
    # In process; the first case also as a real process, its password piped to the command's standard input.
    runner = run_cli_process if message == "at least 10 characters" else run_cli
    proc = runner(*argv, db=path, stdin=stdin)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
    assert snapshot(path) == before


# ------------------------------------------------------------------------------------------- the app


@pytest.fixture
def campaign(store_target, monkeypatch):
    """The demo store with accounts (so not open by default): an organizer and an assessor."""
    from assess.services.loading import load_demo

    path = store_target
    with open_db(path) as database:
        load_demo(database)
        service.add_account(database, "boss", "organizer", password=PASSWORD, by="setup")
        service.add_account(database, "amy", "assessor", password=PASSWORD, by="boss")
        if not database.sqlite:
            monkeypatch.setenv("ASSESS_SECRET_KEY", "a-key-for-the-tests-of-sign-in-links")
    monkeypatch.setenv("ASSESS_DB", str(path))
    monkeypatch.delenv("ASSESS_OPEN", raising=False)
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    return path


def password_sign_in(at, name, password):
    at.text_input(key="account_name").input(name)
    at.text_input(key="account_password").input(password)
    at.button(key="account_sign_in").click().run()
    return at


def test_assessor_url_parameter_signs_nobody_in_with_accounts(campaign):
    at = open_app("pages/judge.py", assessor="amy")
    assert "assessor" not in at.session_state
    assert not any("Passage `" in m.value for m in at.markdown)  # nothing to judge without signing in
    assert not any("Open mode" in w.value for w in at.sidebar.warning)


def test_password_sign_in_then_judging_stores_under_the_account(campaign):
    at = password_sign_in(open_app(), "amy", "wrong-password")
    assert any("wrong name or password" in e.value for e in at.sidebar.error)
    at = password_sign_in(at, "amy", PASSWORD)
    assert at.session_state["assessor"] == "amy" and at.session_state["role"] == "assessor"
    at.query_params["assessor"] = "boss"  # a URL parameter does not change who acts
    at.switch_page("pages/judge.py")
    at.run()
    at.button(key="g2").click().run()
    assert rows(campaign, "SELECT source, grade FROM passage_labels WHERE mode = 'blind'") == [("amy", 2)]
    at.switch_page("pages/users.py").run()  # an assessor has no organizer pages: the guard says so
    assert any("This page is for organizers: you are signed in as amy (assessor)" in w.value for w in at.warning)
    assert not at.get("dataframe")


def test_the_sign_in_box_says_when_a_backed_off_account_may_try_again(campaign):
    """Five wrong passwords: the sixth attempt, the right password, is refused in the sidebar with the wait
    (the account's minute, in seconds), nobody is signed in, and the account has no session."""
    at = open_app()
    for _ in range(service.MAX_FAILURES):
        at = password_sign_in(at, "amy", "wrong-password")
    at = password_sign_in(at, "amy", PASSWORD)
    shown = [e.value for e in at.sidebar.error]
    assert any(re.search(r"too many failed sign-ins for this account: try again in \d\d? seconds$", e) for e in shown)
    assert not at.exception and "assessor" not in at.session_state
    assert rows(campaign, "SELECT COUNT(*) FROM sign_in_sessions WHERE name = 'amy'") == [(0,)]


def test_organizer_adds_an_account_on_the_accounts_page(campaign):
    at = password_sign_in(open_app(), "boss", PASSWORD)
    at.switch_page("pages/users.py")
    at.run()
    at.text_input(key="new_name").input("cam")
    at.selectbox(key="new_role").select("adjudicator")
    at.button(key="add_account_button").click().run()
    assert not at.exception
    shown = at.code[0].value
    assert service.check_password(open_db(campaign), "cam", shown).role == "adjudicator"
    assert rows(campaign, "SELECT source, via FROM label_history WHERE label_table = 'account' AND item = 'cam'") == [
        ("boss", "add")
    ]


def test_the_accounts_page_refuses_an_escape_in_the_email_and_a_mixed_script_name(campaign):
    """Issue 33 N11 on the page: the refusal is an error box naming the character, and no account is added."""
    at = password_sign_in(open_app(), "boss", PASSWORD)
    at.switch_page("pages/users.py")
    at.run()
    before = rows(campaign, "SELECT name FROM accounts ORDER BY name")
    for name, email, words in (
        ("cam", "cam\x1b[31m@x.org", "found U+001B"),
        ("cam", "\u202egro.x@mac", "U+202E RIGHT-TO-LEFT OVERRIDE"),
        ("c\u13aam", "", "mixes the letters of two scripts (Cherokee and Latin)"),
    ):
        at.text_input(key="new_name").input(name)
        at.text_input(key="new_email").input(email)
        at.button(key="add_account_button").click().run()
        assert not at.exception
        shown = " ".join(html.unescape(e.value) for e in at.error)
        assert words in shown and "\x1b" not in shown and "\u202e" not in shown, shown
    assert rows(campaign, "SELECT name FROM accounts ORDER BY name") == before


def test_sign_in_link_in_the_address_and_a_bad_one(campaign):
    link = service.make_link(open_db(campaign), "amy", "http://localhost:8501")
    at = open_app(signin=unquote(link.split("signin=")[1]))
    assert at.session_state["assessor"] == "amy"
    bad = open_app(signin="not-a-token")
    assert "assessor" not in bad.session_state
    assert any("not valid" in e.value for e in bad.sidebar.error)


def test_disabled_account_is_refused_and_signed_out(campaign):
    at = password_sign_in(open_app(), "amy", PASSWORD)
    accounts.set_disabled(open_db(campaign), "amy", True, by="boss")
    at.run()
    assert "assessor" not in at.session_state
    assert any("signed out" in e.value for e in at.sidebar.error)
    at = password_sign_in(open_app(), "amy", PASSWORD)
    assert any("disabled" in e.value for e in at.sidebar.error)


def test_open_mode_is_said_on_every_page_of_the_demo(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSESS_DB", str(tmp_path / "demo.db"))
    monkeypatch.delenv("ASSESS_OPEN", raising=False)
    at = open_app("pages/judge.py", assessor="newcomer")
    assert at.session_state["assessor"] == "newcomer"
    assert any("Open mode" in w.value for w in at.sidebar.warning)


def test_an_organizer_page_left_open_after_a_demotion_writes_nothing(campaign):
    """The browser race of tests/browser/test_review_sessions.py made certain: a run after the demotion has
    already taken the new role into the session, yet the organizer page's button is still on screen."""
    at = password_sign_in(open_app(), "boss", PASSWORD)
    at.switch_page("pages/aspects.py")
    at.run()
    box = next(t for t in at.text_input if t.label == "New aspect")
    box.input("added while organizer")
    at.button(key="asp_add").click().run()
    assert rows(campaign, "SELECT text FROM aspects") == [("added while organizer",)]
    box = next(t for t in at.text_input if t.label == "New aspect")
    box.set_value("added after the change")
    accounts.set_role(open_db(campaign), "boss", "assessor", by="os:admin")
    at.session_state["role"] = "assessor"  # what the run in between took from the store
    at.button(key="asp_add").click().run()
    assert rows(campaign, "SELECT text FROM aspects") == [("added while organizer",)]
    assert not at.exception


def test_a_key_press_reads_the_session_once_and_a_disable_stops_the_next_press(campaign):
    """One read of the session and account per run (the key's callback reads before its write; the run it
    starts does not read again), and still none that could let a disabled account write: the next press
    reads again, saves nothing and says so."""
    from store.db import traced

    at = password_sign_in(open_app(), "amy", PASSWORD)
    at.switch_page("pages/judge.py")
    at.run()
    reads: list[str] = []

    def count(statement):
        if "FROM sign_in_sessions" in statement:
            reads.append(statement)

    with traced(count):
        at.button(key="g2").click().run()
        assert len(reads) == 1, reads
        assert rows(campaign, "SELECT source, grade FROM passage_labels WHERE source = 'amy'") == [("amy", 2)]
        accounts.set_disabled(open_db(campaign), "amy", True, by="boss")
        reads.clear()
        at.button(key="g3").click().run()
        assert reads, "the press after the disable read the session again"
    assert rows(campaign, "SELECT source, grade FROM passage_labels WHERE source = 'amy'") == [("amy", 2)]
    assert "assessor" not in at.session_state
