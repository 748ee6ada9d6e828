"""Where the workbench's LLM requests may go, and what of them it keeps: the endpoint guard and the redactor.

- :func:`redact` takes secrets out of a text before it is stored, printed or shown: the configured keys
  themselves (:func:`assess.settings.llm_secrets`), ``user:password@`` in URLs, ``Bearer`` tokens, ``sk-…`` keys
  and ``key=`` / ``token=`` / ``password=`` values of query strings and error bodies.
- :func:`check_destination` refuses a base URL whose host is link-local (169.254.0.0/16, fe80::/10: the cloud
  metadata services live there) or a cloud metadata name (``metadata.google.internal``, ...), by its address
  or by what its name resolves to, unless the deployment configured that very endpoint
  (:func:`assess.settings.configured_llm_urls`).
- :func:`same_endpoint` tells whether two base URLs name the same endpoint.

No ``openai`` here: the store redacts what it writes with :func:`redact`.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

from assess.errors import AssessError
from assess.settings import configured_llm_urls, llm_secrets

MASK = "***"
MIN_SECRET_CHARS = 6  # shorter configured "keys" (a placeholder) are not searched for in texts

METADATA_HOSTS = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.azure.internal",
        "metadata.tencentyun.com",
        "metadata.packet.net",
    }
)
METADATA_ADDRESSES = frozenset(
    {
        ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
        ipaddress.ip_address("fd00:ec2::254"),  # AWS over IPv6
    }
)
_LINK_LOCAL = (ipaddress.ip_network("169.254.0.0/16"), ipaddress.ip_network("fe80::/10"))

_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@?#]*@")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[^\s\"',;}\]]+")
_SK_KEY = re.compile(r"\bsk-[A-Za-z0-9_\-*]{6,}")
_NAMED_VALUE = re.compile(
    r"(?i)(\b(?:api[_-]?key|x-api-key|access[_-]?token|refresh[_-]?token|token|client[_-]?secret|secret|password"
    r"|passwd)[\"']?\s*[=:]\s*[\"']?)(?!\*\*\*)[^\s\"'&,;}\]]+"
)
_QUERY_VALUE = re.compile(r"(?i)([?&](?:key|sig|signature|code|auth)=)(?!\*\*\*)[^&\s#\"']+")


def redact(text: str | None, secrets: Iterable[str] | None = None) -> str | None:
    """``text`` without secrets (each replaced by ``***``); None stays None. ``secrets``: the values to take out
    wherever they occur (default: the keys this deployment configures, :func:`assess.settings.llm_secrets`)."""
    if text is None:
        return None
    text = str(text)
    if secrets is None:
        secrets = llm_secrets()
    for secret in sorted({s for s in secrets if s and len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    text = _USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)}{MASK}", text)
    text = _SK_KEY.sub(f"sk-{MASK}", text)
    text = _NAMED_VALUE.sub(lambda m: f"{m.group(1)}{MASK}", text)
    text = _QUERY_VALUE.sub(lambda m: f"{m.group(1)}{MASK}", text)
    return text


def redact_url(url: str | None) -> str | None:
    """A base URL as it may be stored or shown: no ``user:password@``, no key in its query (:func:`redact`)."""
    return redact(url)


def _normal(url: str) -> tuple[str, str, int | None, str]:
    parts = urlsplit(url.strip())
    try:
        port = parts.port
    except ValueError:
        port = None
    default = {"http": 80, "https": 443}.get(parts.scheme.lower())
    return parts.scheme.lower(), (parts.hostname or "").rstrip("."), port or default, parts.path.rstrip("/")


def same_endpoint(a: str | None, b: str | None) -> bool:
    """Whether two base URLs name the same endpoint (scheme, host, port and path; case of scheme and host,
    a default port and a trailing slash aside)."""
    if not a or not b:
        return False
    return _normal(a) == _normal(b)


def forbidden_address(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """A link-local address (169.254.0.0/16, fe80::/10, also as an IPv4-mapped IPv6 address) or a cloud
    metadata service's."""
    mapped = getattr(address, "ipv4_mapped", None)
    if mapped is not None:
        address = mapped
    return address in METADATA_ADDRESSES or any(address in net for net in _LINK_LOCAL)


_RESOLVED: dict[str, tuple[float, tuple[str, ...]]] = {}
_RESOLVED_LOCK = threading.Lock()
_RESOLVE_TTL_S = 60.0


def _addresses(host: str, resolve: Callable) -> tuple[str, ...]:
    now = time.monotonic()
    with _RESOLVED_LOCK:
        cached = _RESOLVED.get(host)
        if cached is not None and now - cached[0] < _RESOLVE_TTL_S and resolve is socket.getaddrinfo:
            return cached[1]
    try:
        found = tuple(sorted({info[4][0] for info in resolve(host, None)}))
    except (OSError, UnicodeError, ValueError):
        found = ()  # unknown name: the call fails to connect, and nothing is sent
    with _RESOLVED_LOCK:
        _RESOLVED[host] = (now, found)
    return found


class ForbiddenEndpoint(AssessError):
    """A base URL the workbench does not send requests to (link-local or a metadata service)."""


def check_destination(
    url: str | None, *, allowed: Iterable[str] | None = None, resolve: Callable | None = None
) -> None:
    """Refuse (:class:`ForbiddenEndpoint`, one line) a base URL whose host is a link-local or cloud metadata
    address or name, or a name that resolves to one, unless it is one of the ``allowed`` base URLs (default: the
    endpoints the deployment configures). ``None`` (the provider's own default URL) passes."""
    if not url:
        return
    if allowed is None:
        allowed = configured_llm_urls()
    if any(same_endpoint(url, a) for a in allowed):
        return
    host = (urlsplit(url.strip()).hostname or "").rstrip(".").lower()
    if not host:
        return
    why = None
    if host in METADATA_HOSTS:
        why = f"{host} is a cloud metadata name"
    else:
        try:
            literal = ipaddress.ip_address(host.split("%")[0])
        except ValueError:
            literal = None
        if literal is not None:
            if forbidden_address(literal):
                why = f"{host} is a link-local or cloud metadata address"
        else:
            for address in _addresses(host, resolve or socket.getaddrinfo):
                try:
                    if forbidden_address(ipaddress.ip_address(address.split("%")[0])):
                        why = f"{host} resolves to the link-local or cloud metadata address {address}"
                        break
                except ValueError:
                    continue
    if why:
        raise ForbiddenEndpoint(
            f"{redact_url(url)}: {why}; the workbench sends no request there unless the deployment configures "
            "that endpoint (ASSESS_LLM_BASE_URL or ASSESS_LLM_ENDPOINTS)"
        )
