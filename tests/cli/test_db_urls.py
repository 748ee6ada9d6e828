"""Malformed --db / ASSESS_DB URLs: one line on stderr, exit 2, no traceback, and never any part of a password
(store.db._url, display)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from assess.errors import AssessError
from store.db import Store, display
from tests.helpers import run_cli, run_cli_process

# (URL, pieces that must never be shown: the password or any part of it)
MALFORMED = [
    ("postgresql://u:p@zqx@host/db", ["p@zqx", "zqx"]),  # an unencoded '@' in the password
    ("postgresql://u:pa@zqx@host:notaport/db", ["pa@zqx", "zqx"]),
    ("postgresql://u:kjw@vqy@xzh@127.0.0.1/db", ["kjw", "vqy", "xzh"]),
    ("postgresql://[::1", []),  # the port read from the IPv6 address
    ("postgresql://u:kjwvqy/db", ["kjwvqy"]),  # the password read as a port
    ("postgresql://u:kjwvqy@host:99999/db", ["kjwvqy"]),
    ("postgresql://a/b:kjwvqy@host/db", ["kjwvqy"]),  # a '/' in the user part: the password read as the path
    ("postgresql://h/db?host=/tmp&port=abc", []),  # a port in the query that is no number
    ("postgresql://u:kjwvqy@h/db?host=h1,h2&port=1,x", ["kjwvqy"]),
    ("mysql://u:p@zqx@h/d", ["p@zqx", "zqx"]),
    ("postgresql://u:kjw%zzvqy@h:0/db", ["kjw", "vqy"]),
]


@pytest.mark.parametrize(("url", "secrets"), MALFORMED)
def test_opening_a_malformed_url_is_one_clear_error_without_the_password(url, secrets):
    with pytest.raises(AssessError) as caught:
        Store(url)
    message = str(caught.value)
    assert "not a valid postgresql:// URL" in message or "a store is a SQLite file" in message
    for secret in secrets:
        assert secret not in message


@pytest.mark.parametrize(("url", "secrets"), MALFORMED)
def test_the_command_line_says_one_line_exits_2_and_shows_no_password(url, secrets):
    runner = run_cli_process if url == MALFORMED[0][0] else run_cli  # the first also as a real process
    proc = runner("users", "list", "--db", url)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr and not proc.stdout
    for secret in secrets:
        assert secret not in proc.stderr


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:secret@host:5432/db", "postgresql://u:***@host:5432/db"),
        ("postgresql://u@host/db?sslpassword=secret&sslmode=require", "postgresql://u@host/db?sslmode=require"),
        ("postgresql://u@host/db?PASSWORD=secret&passfile=/x", "postgresql://u@host/db"),
        ("postgresql+psycopg://u:p%40ss@host/db", "postgresql://u:***@host/db"),  # an encoded '@' is fine
        ("postgresql://u:p/ss@host/db", "postgresql://u:***@host/db"),  # a '/' in the password
        ("postgresql://u:p@ss@host/db", "postgresql://(a URL that cannot be read)"),
        ("postgresql://a/b:hidden@host/db", "postgresql://(a URL that cannot be read)"),
        ("postgresql://u:secret/db", "postgresql://(a URL that cannot be read)"),
        ("data/assess.db", "data/assess.db"),
        ("sqlite:///data/assess.db", "data/assess.db"),
    ],
)
def test_display_hides_every_password_or_the_whole_url(url, shown):
    assert display(url) == shown


def test_a_password_with_an_unencoded_at_sign_never_reaches_the_driver(pg_url):
    # The driver's own message used to name the host it could not resolve: 'zqx@host', a piece of the password.
    import sqlalchemy as sa

    url = sa.make_url(pg_url)
    bad = f"postgresql://{url.username}:p@zqx@{url.host}:{url.port}/{url.database}"
    proc = run_cli("stats", "--db", bad)
    assert proc.returncode == 2 and "more than one '@'" in proc.stderr and "zqx" not in proc.stderr
    good = f"postgresql://{url.username}:p%40ss@{url.host}:{url.port}/{url.database}"
    assert run_cli("init", "--db", good).returncode in (0, 2)  # read as a URL; the server decides the rest


@pytest.mark.parametrize("url", ["postgresql://u:p@zqx@host/db", "postgresql://[::1", "mysql://u:zqx@h/d"])
def test_the_app_shows_neither_a_traceback_nor_the_password(url, monkeypatch):
    # A store that cannot be opened on the first start stops the app with Streamlit's redacted message (the
    # detail goes to the server log); later runs say plainly that the store cannot be reached.
    from tests.helpers import ROOT

    monkeypatch.setenv("ASSESS_DB", url)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    shown = [e.value for e in at.error] + [e.message for e in at.exception]
    assert shown and all("zqx" not in s and "Traceback" not in s for s in shown), shown
    assert all("redacted" in e.message and not e.stack_trace for e in at.exception)


def test_assess_db_is_read_at_each_call_not_when_the_parser_was_built(tmp_path, monkeypatch):
    # the parser is built once per process (assess.cli.build_parser); the store a call names by $ASSESS_DB is
    # the one set at that call
    from assess.cli import main

    for name in ("first.db", "second.db"):
        monkeypatch.setenv("ASSESS_DB", str(tmp_path / name))
        assert main(["init"]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.db")) == ["first.db", "second.db"]
