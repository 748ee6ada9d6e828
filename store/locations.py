"""A store's location as it may be shown (no password), and what makes a postgresql:// URL unusable."""

from __future__ import annotations

import re
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

# Query parameters that carry a secret (libpq's password, password file and client key's password).
_SECRET_PARAMETERS = ("password", "passfile", "sslpassword")


def _readable(text: str) -> sa.URL | None:
    """The URL ``text`` parsed, when where its user part ends is certain (so its password can be hidden): at
    most one '@', and that one ending a user part; None otherwise (an unencoded '@' in a password made
    part of the password read as the host), or when it cannot be parsed at all."""
    rest = text.split("://", 1)[1]
    if rest.count("@") > 1:
        return None
    try:
        url = sa.make_url(text)
    except (sa_exc.ArgumentError, ValueError, TypeError):  # ValueError: a port that is no number
        return None
    if "@" in rest and url.username is None:
        return None
    return url


def url_problem(text: str) -> str | None:
    """What makes the URL ``text`` unusable, in words that quote none of it (it may hold a password)."""
    rest = text.split("://", 1)[1]
    if rest.count("@") > 1:
        return "it has more than one '@' (write an '@' inside a user name or password as %40)"
    url = _readable(text)
    if url is None and "@" in rest:
        try:
            sa.make_url(text)
        except (sa_exc.ArgumentError, ValueError, TypeError):
            return "expected postgresql://USER:PASSWORD@HOST:PORT/DATABASE"
        return "its '@' does not end a user name (write an '@' elsewhere as %40)"
    if url is None:
        try:
            sa.make_url(text)
        except ValueError:
            return "the port is not a number from 1 to 65535"
        except (sa_exc.ArgumentError, TypeError):
            pass
        return "expected postgresql://USER:PASSWORD@HOST:PORT/DATABASE"
    if url.port is not None and not 0 < url.port < 65536:
        return "the port is not a number from 1 to 65535"
    return _host_problem(url)


def _host_problem(url: sa.URL) -> str | None:
    """A host no resolver accepts (a name over 253 characters or with a part over 63; the driver's IDNA
    codec raised a bare UnicodeError on it), named by its length only."""
    listed = url.query.get("host") or ()  # ?host=a,b or ?host=a&host=b
    hosts = [url.host or "", *",".join([listed] if isinstance(listed, str) else listed).split(",")]
    for host in hosts:
        if host.startswith("/") or host.startswith("["):  # a socket folder, an IPv6 address
            continue
        if len(host) > 253:
            return f"a host name of at most 253 characters, found {len(host):,}"
        if any(len(part) > 63 for part in host.split(".")):
            return "a host name whose parts between dots are at most 63 characters"
    return None


def display(target: str | Path) -> str:
    """The store's location as it may be shown or logged: a file path, or the URL without its password
    (in the user part or as a ``password=``, ``sslpassword=`` or ``passfile=`` query parameter). A URL
    whose password cannot be told apart with certainty shows only its scheme."""
    text = str(target)
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", text) and not text.startswith("sqlite:///"):
        url = _readable(text)
        if url is None:
            return text.split("://", 1)[0] + "://(a URL that cannot be read)"
        url = url.difference_update_query([k for k in url.query if k.lower() in _SECRET_PARAMETERS])
        if url.drivername.lower().startswith(("postgresql", "postgres")):
            url = url.set(drivername="postgresql")
        return url.render_as_string(hide_password=True)
    return text.removeprefix("sqlite:///")
