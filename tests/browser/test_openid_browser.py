"""OpenID Connect end to end, offline: a local OpenID provider (the ``oidc-provider-mock`` package, on a free
port of 127.0.0.1), a Streamlit server of app.py whose ``[auth]`` secrets point at it (a secrets file given by
``--secrets.files``, never the repository's .streamlit/), and Chromium clicking "Sign in with your
organization's account", answering the provider's page and coming back signed in to the account whose email
the provider reported. An identity without an account, and one whose display name is an account's name but
whose email is not, are refused with the plain message.

Never downloads a browser: skips when /usr/bin/chromium or playwright is absent.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.browser_support import (  # noqa: F401  (fixtures)
    LOAD_TIMEOUT_MS,
    ROOT,
    START_TIMEOUT_S,
    browser,
    expect,
    new_page,
    settled,
)
from tests.helpers import run_cli
from tests.processes import free_port, healthy, stop_process

pytestmark = pytest.mark.browser

oidc_provider_mock = pytest.importorskip("oidc_provider_mock", reason="the oidc-provider-mock package is not installed")
pytest.importorskip("authlib", reason="st.login needs Authlib")

OLGA = "olga@example.org"
STRANGER = "stranger@example.org"
MALLORY = "mallory@example.org"  # the provider calls her "olga": her display name is an account's name
UNVERIFIED = "amy-unverified"  # the provider reports amy's address for this subject but says it is not verified
# amy's address with email_verified absent, or not the JSON value true: none of them is amy
NOT_VERIFIED = {"absent": None, "string-false": "false", "zero": 0, "string-true": "true"}
LISTED = "amy-listed"  # the provider reports a list as the email claim
RITA = "rita@example.org"  # an account whose reset ends her OpenID sessions


@contextlib.contextmanager
def openid_provider():
    """The mock provider on a free port of 127.0.0.1 in a thread of this process; yields its base URL."""
    import werkzeug.serving

    server = werkzeug.serving.make_server("127.0.0.1", 0, oidc_provider_mock.app(), threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def put_user(provider: str, sub: str, claims: dict) -> None:
    """Tell the provider the claims it reports for the subject ``sub``."""
    request = urllib.request.Request(
        f"{provider}/users/{quote(sub)}",
        data=json.dumps(claims).encode(),
        method="PUT",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 204


@contextlib.contextmanager
def app_with_openid(tmp: Path, db_path: Path, provider: str):
    """``streamlit run app.py`` on a free port with ``[auth]`` secrets naming ``provider`` (the redirect URI needs
    the port, so the port is chosen here); yields the app's base URL. Stopped with its process group."""
    log_path = tmp / "streamlit.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSESS_")}
    env.update(
        ASSESS_DB=str(db_path),
        ASSESS_OPEN="0",  # accounts: nobody signs in by a typed name
        STREAMLIT_BROWSER_GATHER_USAGE_STATS="false",
        PYTHONUNBUFFERED="1",
    )
    for _attempt in range(3):  # a free port can be taken between probing and binding
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        secrets = tmp / f"secrets-{port}.toml"
        secrets.write_text(
            "[auth]\n"
            f'redirect_uri = "{url}/oauth2callback"\n'
            f'cookie_secret = "{os.urandom(24).hex()}"\n'
            'client_id = "assess-e2e"\n'
            'client_secret = "assess-e2e-secret"\n'
            f'server_metadata_url = "{provider}/.well-known/openid-configuration"\n',
            encoding="utf-8",
        )
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true"]
                + ["--server.port", str(port), "--server.address", "127.0.0.1"]
                + ["--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"]
                + ["--secrets.files", str(secrets)],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            while time.monotonic() < deadline and proc.poll() is None and not healthy(url):
                time.sleep(0.2)
            if proc.poll() is None and healthy(url):
                yield url
                return
        finally:
            stop_process(proc)
    pytest.fail(
        "the Streamlit server did not start; its log ends with:\n" + log_path.read_text(errors="replace")[-3000:]
    )


_STORES: dict[str, Path] = {}  # the store of each app the fixture started, by its URL


def servers_db(url: str) -> Path:
    return _STORES[url]


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("openid-e2e")
    db_path = tmp / "assess.db"
    for name, email in (("olga", OLGA), ("amy", "amy@example.org"), ("rita", RITA)):
        role = "organizer" if name == "olga" else "assessor"
        made = run_cli("users", "add", name, "--role", role, "--email", email, "--no-password", db=db_path)
        assert made.returncode == 0, made.stderr
    with openid_provider() as provider:
        put_user(provider, OLGA, {"email": OLGA, "email_verified": True, "name": "Olga Organizer"})
        put_user(provider, MALLORY, {"email": MALLORY, "email_verified": True, "name": "olga"})
        put_user(provider, STRANGER, {"email": STRANGER, "email_verified": True})  # verified, without an account
        put_user(provider, UNVERIFIED, {"email": "amy@example.org", "email_verified": False, "name": "amy"})
        for case, verified in NOT_VERIFIED.items():
            claims = {"email": "amy@example.org", "name": "amy"}
            if verified is not None:
                claims["email_verified"] = verified
            put_user(provider, f"amy-{case}", claims)
        put_user(provider, LISTED, {"email": ["amy@example.org", OLGA], "email_verified": True, "name": "amy"})
        put_user(provider, RITA, {"email": RITA, "email_verified": True, "name": "Rita"})
        with app_with_openid(tmp, db_path, provider) as url:
            _STORES[url] = db_path
            yield url, provider


def sign_in_at_the_provider(new_page, url: str, subject: str):
    """Open the app, click the sign-in button, answer the provider's page as ``subject``; the page back home."""
    page = new_page()
    page.goto(url)
    button = page.get_by_role("button", name="Sign in with your organization's account")
    expect(button).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    settled(page)
    button.click()
    page.get_by_placeholder("sub").fill(subject)  # the provider's own authorization page
    page.get_by_role("button", name="Authorize").click()
    page.wait_for_url(url + "/**", timeout=LOAD_TIMEOUT_MS)
    return page


def test_openid_sign_in_through_the_local_provider(servers, new_page):
    url, _ = servers
    page = sign_in_at_the_provider(new_page, url, OLGA)
    sidebar = page.locator('[data-testid="stSidebar"]')
    signed_in = sidebar.locator(".inert-line").filter(has_text="Signed in as")
    expect(signed_in).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    expect(signed_in).to_have_text(re.compile(r"^Signed in as:?\s*olga$"))  # the account's name, not the provider's
    expect(sidebar.get_by_text("Role: organizer")).to_be_visible()
    expect(page.get_by_role("link", name="Import & export")).to_be_visible()  # an organizer's menu
    expect(sidebar.get_by_role("button", name="Sign in with your organization's account")).to_have_count(0)


@pytest.mark.parametrize(
    ("subject", "shown"),
    [(STRANGER, STRANGER), (MALLORY, MALLORY), (UNVERIFIED, "this identity")]
    + [(f"amy-{case}", "this identity") for case in NOT_VERIFIED],
    ids=["no-account", "display-name-of-an-account", "unverified-email-of-an-account"]
    + [f"email-verified-{case}" for case in NOT_VERIFIED],
)
def test_an_identity_without_an_account_is_refused(servers, new_page, subject, shown):
    url, _ = servers
    page = sign_in_at_the_provider(new_page, url, subject)
    sidebar = page.locator('[data-testid="stSidebar"]')
    local, _, domain = shown.partition("@")  # the message shows an address inertly (a word joiner before the @)
    at = "\u2060?@" if domain else ""
    refusal = re.compile(
        re.escape(local)
        + at
        + re.escape(domain)
        + " has no account here \\(or the provider did not verify the address\\); ask an organizer"
    )
    expect(sidebar.get_by_text(refusal)).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    settled(page)
    expect(sidebar.get_by_text("Signed in as")).to_have_count(0)
    expect(page.get_by_role("link", name="Import & export")).to_have_count(0)


def signed_in_as(page, name: str) -> None:
    sidebar = page.locator('[data-testid="stSidebar"]')
    signed_in = sidebar.locator(".inert-line").filter(has_text="Signed in as")
    expect(signed_in).to_have_text(re.compile(rf"^Signed in as:?\s*{name}$"), timeout=LOAD_TIMEOUT_MS)


def signed_out_with(page, message: str) -> None:
    sidebar = page.locator('[data-testid="stSidebar"]')
    expect(sidebar.get_by_text(message)).to_be_visible(timeout=LOAD_TIMEOUT_MS)
    settled(page)
    expect(sidebar.get_by_text("Signed in as")).to_have_count(0)
    expect(sidebar.get_by_role("button", name="Sign in with your organization's account")).to_be_visible()


def test_a_list_valued_email_claim_is_refused_with_a_message_on_every_page(servers, new_page):
    url, _ = servers
    page = sign_in_at_the_provider(new_page, url, LISTED)
    signed_out_with(page, re.compile("the identity provider reported an e-mail address that is not one text"))
    for _ in range(2):  # the provider's cookie lives on: each load says so again, no page breaks
        page.reload()
        signed_out_with(page, re.compile("not one text"))
        expect(page.locator('[data-testid="stException"]')).to_have_count(0)


def test_sign_out_and_reset_end_openid_sessions_in_every_browser(servers, new_page):
    url, _ = servers
    first = sign_in_at_the_provider(new_page, url, RITA)
    second = sign_in_at_the_provider(new_page, url, RITA)  # another browser, its own provider cookie
    signed_in_as(first, "rita")
    signed_in_as(second, "rita")
    first.locator('[data-testid="stSidebar"]').get_by_role("button", name="Sign out").click()
    expect(first.locator('[data-testid="stSidebar"]').get_by_text("Signed in as")).to_have_count(0)
    deadline = time.monotonic() + 30  # st.logout: the browser goes to /auth/logout, which clears the cookie
    while [c for c in first.context.cookies() if c["name"].startswith("_streamlit_user")]:
        assert time.monotonic() < deadline, "signing out left Streamlit's login cookie in the browser"
        time.sleep(0.2)
    time.sleep(1.1)  # the provider's iat has whole seconds
    second.goto(url)  # a new page load brings only the provider's cookie: it no longer opens the account
    signed_out_with(second, re.compile("older than this account's last sign-out or reset"))
    # a fresh sign-in at the provider opens it again; then users reset ends that one too
    third = sign_in_at_the_provider(new_page, url, RITA)
    signed_in_as(third, "rita")
    time.sleep(1.1)
    reset = run_cli("users", "reset", "rita", "--no-password", db=servers_db(url))
    assert reset.returncode == 0, reset.stderr
    third.goto(url)
    signed_out_with(third, re.compile("older than this account's last sign-out or reset"))
