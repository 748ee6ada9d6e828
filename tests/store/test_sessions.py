"""Sessions, the failure limit under concurrency, sign-in timing and writes checked against the account's
state now (issue 21), on both engines."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from assess.services import accounts as service
from assess.tasks import Label, Task
from store import accounts, labels, open_db
from store.rights import NotAllowed

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
PASSWORD = "correct-horse-battery"


@pytest.fixture
def db(demo_target):
    database = open_db(demo_target)
    yield database
    database.close()


@pytest.mark.argon2_defaults
def test_concurrent_wrong_passwords_get_five_checks_and_the_right_one_after_them_is_refused(db, store_target):
    """19 wrong sign-ins at once for one account (the race the issue found: all 19 were checked), then the
    right password: 5 of the 19 are checked (the others are refused before any hash is verified: an
    account's checks in flight and failures together never pass the limit), and the right one is refused."""
    service.add_account(db, "amy", "assessor", password=PASSWORD, by="boss")
    outcomes: list[str] = []
    start = threading.Barrier(19)

    def attempt(i: int) -> None:
        own = open_db(store_target, migrate=False)
        try:
            start.wait()
            service.check_password(own, "amy", f"wrong-{i:02d}-password", address="198.51.100.7", at=T0)
            outcomes.append("signed in")
        except service.SignInRefused as exc:
            outcomes.append("wrong" if "wrong name or password" in str(exc) else "refused unchecked")
        finally:
            own.close()

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(19)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert sorted(outcomes) == ["refused unchecked"] * 14 + ["wrong"] * 5
    with pytest.raises(service.SignInRefused, match="too many failed sign-ins for this account"):
        service.check_password(db, "amy", PASSWORD, address="198.51.100.8", at=T0 + timedelta(seconds=1))
    with pytest.raises(service.SignInRefused, match="too many failed sign-ins for this address"):
        service.check_password(db, "someone-else", PASSWORD, address="198.51.100.7", at=T0 + timedelta(seconds=1))


@pytest.mark.argon2_defaults
def test_a_class_signing_in_at_once_from_one_address_is_not_turned_away(db, store_target):
    """20 people behind one address (a lab's NAT, a proxy without ASSESS_TRUST_PROXY) sign in at the same
    moment with their right passwords: every one is signed in (attempts being checked are no failures), and
    the address has no failure left."""
    names = [f"student{i:02d}" for i in range(20)]
    for name in names:
        service.add_account(db, name, "assessor", password=PASSWORD, by="boss")
    outcomes: dict[str, str] = {}
    start = threading.Barrier(len(names))

    def attempt(name: str) -> None:
        own = open_db(store_target, migrate=False)
        try:
            start.wait()
            outcomes[name] = service.check_password(own, name, PASSWORD, address="203.0.113.5", at=T0).name
        except service.SignInRefused as exc:
            outcomes[name] = str(exc)
        finally:
            own.close()

    threads = [threading.Thread(target=attempt, args=(name,)) for name in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert outcomes == {name: name for name in names}
    assert accounts.failures_since(db, "address:203.0.113.5", T0 - service.WINDOW, at=T0)[0] == 0


def test_an_attempt_left_pending_counts_as_a_failure_once_stale(db):
    """A process that dies while checking leaves its attempt pending: while fresh it holds one of the account's
    checks in flight (not a failure); after a minute it is a failure, so killing checks cannot dodge the limit
    (nor the back-off that follows it)."""
    service.add_account(db, "amy", "assessor", password=PASSWORD, by="boss")
    for i in range(service.MAX_FAILURES):
        limit = accounts.Limit("account:amy", service.MAX_FAILURES, service.ACCOUNT_MEMORY)
        reserved = accounts.reserve_attempt(db, [limit], T0 + timedelta(seconds=i))
        assert reserved.ids and reserved.refused_by is None
    assert accounts.failures_since(db, "account:amy", T0 - service.WINDOW, at=T0 + timedelta(seconds=10))[0] == 0
    with pytest.raises(service.SignInRefused, match="being checked: try again in a moment"):
        service.check_password(db, "amy", PASSWORD, at=T0 + timedelta(seconds=10))
    stale = T0 + accounts.PENDING_STALE + timedelta(seconds=10)
    assert accounts.failures_since(db, "account:amy", T0 - service.WINDOW, at=stale)[0] == service.MAX_FAILURES
    # Five failures: the account backs off (its minute after the last has passed), one check, then two minutes.
    with pytest.raises(service.SignInRefused, match="wrong name or password"):
        service.check_password(db, "amy", "guess", at=stale)
    with pytest.raises(
        service.SignInRefused, match="too many failed sign-ins for this account: try again in 119 seconds"
    ):
        service.check_password(db, "amy", PASSWORD, at=stale + timedelta(seconds=1))


def test_an_account_backs_off_exponentially_and_a_success_resets_it(db):
    """After 5 failures an account waits 1 minute after the last one, then 2, 4, … at most an hour; every
    refusal says how long; a refused attempt is no failure (it does not double the wait); the right password
    after the wait signs in and clears the account's failures, so the next mistake starts afresh."""
    service.add_account(db, "amy", "assessor", password=PASSWORD, by="boss")
    at = T0
    for i in range(service.MAX_FAILURES):
        at = T0 + timedelta(seconds=i)
        with pytest.raises(service.SignInRefused, match="wrong name or password"):
            service.check_password(db, "amy", "guess", address=f"192.0.2.{i}", at=at)
    waits = []
    for _ in range(8):
        wait = service.BACKOFF_FIRST * 2 ** len(waits)
        wait = min(wait, service.BACKOFF_LONGEST)
        waits.append(wait)
        early = at + wait - timedelta(seconds=1)
        with pytest.raises(
            service.SignInRefused, match="too many failed sign-ins for this account: try again in 1 second$"
        ):
            service.check_password(db, "amy", PASSWORD, address="192.0.2.99", at=early)
        at += wait
        with pytest.raises(service.SignInRefused, match="wrong name or password"):
            service.check_password(db, "amy", "guess", address=f"198.51.100.{len(waits)}", at=at)
    assert [w // timedelta(minutes=1) for w in waits] == [1, 2, 4, 8, 16, 32, 60, 60]
    with pytest.raises(service.SignInRefused, match=r"try again in 60 minutes \(at 16:03 UTC\)"):
        service.check_password(db, "amy", PASSWORD, at=at)
    assert service.check_password(db, "amy", PASSWORD, at=at + service.BACKOFF_LONGEST).name == "amy"
    assert accounts.failures_since(db, "account:amy", T0, at=at + service.BACKOFF_LONGEST)[0] == 0
    with pytest.raises(service.SignInRefused, match="wrong name or password"):  # a fresh start: 5 allowed again
        service.check_password(db, "amy", "guess", at=at + service.BACKOFF_LONGEST)
    assert service.check_password(db, "amy", PASSWORD, at=at + service.BACKOFF_LONGEST).name == "amy"


def test_users_reset_clears_the_accounts_back_off_but_not_the_addresses(db):
    """An account backing off after its own failures signs in with the new password right after a reset;
    the address that made the failures keeps them."""
    service.add_account(db, "amy", "assessor", password=PASSWORD, by="boss")
    for i in range(service.MAX_FAILURES + 1):
        with pytest.raises(service.SignInRefused):
            service.check_password(db, "amy", "guess", address="192.0.2.7", at=T0 + timedelta(seconds=i))
    at = T0 + timedelta(seconds=10)
    with pytest.raises(service.SignInRefused, match="too many failed sign-ins for this account"):
        service.check_password(db, "amy", PASSWORD, at=at)
    service.reset_account(db, "amy", password="a-new-battery-staple", by="boss")
    assert accounts.failures_since(db, "account:amy", T0, at=at)[0] == 0
    assert service.check_password(db, "amy", "a-new-battery-staple", address="198.51.100.1", at=at).name == "amy"
    assert accounts.failures_since(db, "address:192.0.2.7", T0, at=at)[0] == service.MAX_FAILURES


def test_an_account_past_its_limit_gets_one_check_at_a_time(db):
    """When the wait is over, one attempt is checked while others are refused unchecked: a crowd of guessers
    gets one guess per wait, not one each."""
    service.add_account(db, "amy", "assessor", password=PASSWORD, by="boss")
    for i in range(service.MAX_FAILURES):
        with pytest.raises(service.SignInRefused, match="wrong"):
            service.check_password(db, "amy", "guess", at=T0)
    after = T0 + service.BACKOFF_FIRST
    limit = accounts.Limit(
        "account:amy",
        service.MAX_FAILURES,
        service.ACCOUNT_MEMORY,
        backoff=(service.BACKOFF_FIRST, service.BACKOFF_LONGEST),
    )
    held = accounts.reserve_attempt(db, [limit], after)
    assert held.ids and held.refused_by is None
    second = accounts.reserve_attempt(db, [limit], after)
    assert (second.refused_by, second.reason, second.ids) == ("account:amy", "in_flight", ())
    accounts.attempt_failed(db, held, after)
    third = accounts.reserve_attempt(db, [limit], after + timedelta(seconds=30))
    assert (third.reason, third.retry_at) == ("failures", after + 2 * service.BACKOFF_FIRST)


def test_an_unknown_name_is_checked_against_a_dummy_hash(db, monkeypatch):
    """No timing difference by construction: an unknown name verifies one Argon2 hash, as a known one does."""
    from argon2 import PasswordHasher

    service.add_account(db, "amy", "assessor", password=PASSWORD, by="boss")
    verified: list[str] = []
    real = PasswordHasher.verify

    def counting(self, hash_, password):
        verified.append(hash_)
        return real(self, hash_, password)

    monkeypatch.setattr(PasswordHasher, "verify", counting)
    for name in ("amy", "nobody"):
        with pytest.raises(service.SignInRefused, match="wrong name or password"):
            service.check_password(db, name, "not-the-password", at=T0)
    assert len(verified) == 2 and all(h.startswith("$argon2id$") for h in verified)
    assert verified[1] != accounts.get(db, "amy")["password_hash"]


def test_sessions_follow_the_account_role_disable_reset_and_sign_out(db):
    service.add_account(db, "boss", "organizer", password=PASSWORD, by="setup")
    first = service.start_session(db, "boss", kind="account", via="password", at=T0)
    second = service.start_session(db, "boss", kind="account", via="link", at=T0)
    holder = service.session_holder(db, first, at=T0)
    assert (holder.name, holder.role.value) == ("boss", "organizer")
    assert accounts.get(db, "boss") and first not in str(accounts.live_session(db, holder.session, T0))

    accounts.set_role(db, "boss", "assessor", by="os:admin")  # a demotion is seen at the next read
    assert service.session_holder(db, first, at=T0).role.value == "assessor"
    assert service.session_holder(db, "not-a-session", at=T0) is None

    assert service.end_session(db, first, everywhere=True, at=T0) == 2  # sign-out ends every tab and browser
    assert service.session_holder(db, first, at=T0) is None
    assert service.session_holder(db, second, at=T0) is None

    third = service.start_session(db, "boss", kind="account", via="password", at=T0)
    accounts.set_disabled(db, "boss", True, by="os:admin")
    assert service.session_holder(db, third, at=T0) is None
    accounts.set_disabled(db, "boss", False, by="os:admin")
    assert service.session_holder(db, third, at=T0) is None  # enabling again starts no old session

    fourth = service.start_session(db, "boss", kind="account", via="password", at=T0)
    service.reset_account(db, "boss", by="os:admin")
    assert service.session_holder(db, fourth, at=T0) is None

    fifth = service.start_session(db, "boss", kind="account", via="password", at=T0)
    assert service.session_holder(db, fifth, at=T0 + timedelta(hours=9, minutes=59)) is not None
    assert service.session_holder(db, fifth, at=T0 + timedelta(hours=10, minutes=1)) is None  # a working day


def test_session_length_is_a_setting_and_a_bad_value_is_refused(db, monkeypatch):
    from assess.errors import AssessError

    service.add_account(db, "amy", "assessor", password=PASSWORD, by="setup")
    monkeypatch.setenv("ASSESS_SESSION_HOURS", "1")
    secret = service.start_session(db, "amy", kind="account", via="password", at=T0)
    assert service.session_holder(db, secret, at=T0 + timedelta(minutes=61)) is None
    monkeypatch.setenv("ASSESS_SESSION_HOURS", "a day")
    with pytest.raises(AssessError, match="ASSESS_SESSION_HOURS: expected a number of hours from 0.1 to 720"):
        service.start_session(db, "amy", kind="account", via="password", at=T0)


def test_a_disabled_account_saves_no_label_and_a_demoted_organizer_takes_no_action(db):
    service.add_account(db, "amy", "assessor", password=PASSWORD, by="setup")
    service.add_account(db, "boss", "organizer", password=PASSWORD, by="setup")
    item = ("101_1", "demo-doc-001:0")
    turn, passage = next(iter(labels.values(db, "passage", "demo-ann")))
    item = (turn, passage)
    labels.save(db, "passage", "amy", item, 3, mode="blind", via="ui")
    accounts.set_disabled(db, "amy", True, by="boss")
    for write in (
        lambda: labels.save(db, "passage", "amy", item, 1, mode="blind", via="ui"),
        lambda: labels.set_note(db, "passage", "amy", item, "late"),
        lambda: labels.undo(db, "passage", "amy"),
        lambda: labels.delete(db, "passage", "amy", item),
    ):
        with pytest.raises(NotAllowed, match="'amy' is disabled: nothing was saved"):
            write()
    assert labels.get(db, "passage", "amy", item) == Label(Task.PASSAGE, "amy", item, 3, None, "blind", "ui")

    accounts.set_role(db, "boss", "assessor", by="os:admin")
    before = accounts.accounts(db)
    with pytest.raises(NotAllowed, match="'boss' is now assessor, which may not do this"):
        service.add_account(db, "mallory", "organizer", password=PASSWORD, by="boss")
    with pytest.raises(NotAllowed):
        accounts.set_role(db, "boss", "organizer", by="boss")
    assert accounts.accounts(db) == before


@pytest.mark.parametrize("name", ["a\x00b", "amy\u202e", "", "   "])
def test_a_name_no_account_can_have_is_a_wrong_sign_in_not_a_crash(db, name):
    """A NUL in a name broke password sign-in on PostgreSQL; such names are counted and refused plainly."""
    service.add_account(db, "amy", "assessor", password=PASSWORD, by="setup")
    with pytest.raises(service.SignInRefused, match="wrong name or password"):
        service.check_password(db, name, PASSWORD, at=T0)


def test_an_organizer_cannot_disable_or_demote_their_own_account_and_is_told_so(db):
    """Neither locks the last organizer out; the message says what happened (the review found a misleading
    'is disabled' refusal)."""
    service.add_account(db, "boss", "organizer", password=PASSWORD, by="setup")
    with pytest.raises(accounts.AccountError, match="'boss' cannot disable their own account"):
        accounts.set_disabled(db, "boss", True, by="boss")
    with pytest.raises(accounts.AccountError, match="'boss' cannot take the organizer role from their own"):
        accounts.set_role(db, "boss", "assessor", by="boss")
    found = accounts.get(db, "boss")
    assert (found["role"], found["disabled"]) == ("organizer", 0)
    assert accounts.set_role(db, "boss", "assessor", by="os:admin")  # someone else may
