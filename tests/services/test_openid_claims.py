"""OpenID Connect strictly (issue 33, R2/R12/R7): only ``email_verified`` as the JSON value true lets an address
match an account (absent, false, "false", "true", 0 and 1 do not); a claim of the wrong type is refused with one
line instead of an exception; a provider sign-in older than the account's last sign-out or reset opens nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from assess.services import accounts as service
from store import open_db

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
AMY = "amy@example.org"


@pytest.fixture
def db(store_target):
    database = open_db(store_target)
    service.add_account(database, "amy", "assessor", password=None, by="boss", email=AMY)
    yield database
    database.close()


def claims(**given):
    return {"email": AMY, "email_verified": True, "iat": int(T0.timestamp()), "sub": "amy-sub"} | given


def test_only_a_json_true_email_verified_matches_an_account(db):
    assert service.openid_sign_in(db, claims()).name == "amy"
    for verified in ("absent", False, "false", "true", 0, 1, None, [True], {"value": True}):
        given = claims()
        if verified == "absent":
            del given["email_verified"]
        else:
            given["email_verified"] = verified
        with pytest.raises(service.SignInRefused, match="^this identity has no account here"):
            service.openid_sign_in(db, given)


@pytest.mark.parametrize("email", [[AMY], {"address": AMY}, 7, True], ids=["list", "object", "number", "boolean"])
def test_an_email_claim_of_the_wrong_type_is_refused_with_one_line(db, email):
    with pytest.raises(service.SignInRefused, match="not one text") as refused:
        service.openid_sign_in(db, claims(email=email))
    assert "\n" not in str(refused.value)


def test_a_provider_sign_in_older_than_a_sign_out_or_reset_opens_nothing(db):
    secret = service.start_session(db, "amy", kind="account", via="openid", at=T0 + timedelta(seconds=5))
    assert service.openid_sign_in(db, claims()).name == "amy"  # no session has ended yet
    service.end_session(db, secret, everywhere=True, at=T0 + timedelta(minutes=1))  # signed out in one browser
    with pytest.raises(service.SignInRefused, match="older than this account's last sign-out or reset"):
        service.openid_sign_in(db, claims())  # the provider's cookie of another browser
    later = int((T0 + timedelta(minutes=1)).timestamp())
    assert service.openid_sign_in(db, claims(iat=later)).name == "amy"  # a fresh sign-in at the provider
    service.start_session(db, "amy", kind="account", via="openid", at=T0 + timedelta(minutes=2))
    service.reset_account(db, "amy", by="boss", generate=False)  # now: ends every session of amy
    with pytest.raises(service.SignInRefused, match="older than"):
        service.openid_sign_in(db, claims(iat=later + 120))
    for iat in (None, "1767000000", True):
        with pytest.raises(service.SignInRefused):
            service.openid_sign_in(db, claims(iat=iat))
