"""One reader for the workbench's settings, all from ASSESS_* environment variables."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def db_target() -> str:
    """The store: $ASSESS_DB (a SQLite file path, ``sqlite:///path`` or a ``postgresql://`` URL), else the
    SQLite file data/assess.db under the project (git-ignored)."""
    return db_given() or str(PROJECT_ROOT / "data" / "assess.db")


def db_given() -> str | None:
    """$ASSESS_DB when it is set (None otherwise): the store named by the environment."""
    return os.environ.get("ASSESS_DB") or None


def nli_model() -> str | None:
    """The NLI model duplicates are suggested with: $ASSESS_NLI_MODEL (a Hugging Face name or a local folder)."""
    return os.environ.get("ASSESS_NLI_MODEL") or None


def organizer_password() -> str | None:
    """Legacy, open mode only: the shared organizer password ($ASSESS_ORGANIZER_PASSWORD); None means the
    organizer pages are open in open mode. With accounts only the organizer role opens them."""
    return os.environ.get("ASSESS_ORGANIZER_PASSWORD") or None


def open_mode() -> bool:
    """Queue scope: an assessor without assignments gets a queue over all pools (default on; ASSESS_OPEN=0
    turns it off). Whether anyone may sign in under a typed name is :func:`open_mode_setting` plus the store
    (``store.accounts.open_sign_in``)."""
    return os.environ.get("ASSESS_OPEN", "1") not in ("0", "false", "no")


def open_mode_setting() -> bool | None:
    """$ASSESS_OPEN as given: True (1/true/yes), False (0/false/no) or None when unset (the store decides:
    open on the embedded demo only)."""
    value = (os.environ.get("ASSESS_OPEN") or "").strip().lower()
    if not value:
        return None
    return value not in ("0", "false", "no")


def secret_key() -> str | None:
    """$ASSESS_SECRET_KEY, the key that signs personal sign-in links; None: a key file beside the store."""
    return os.environ.get("ASSESS_SECRET_KEY") or None


SESSION_HOURS = 10.0
"""How long a sign-in lasts by default: a working day."""


def session_hours() -> float:
    """$ASSESS_SESSION_HOURS: how long a sign-in lasts in a browser (reloads, bookmarks and other tabs
    included), from 0.1 to 720 hours; default :data:`SESSION_HOURS`. Any other value is refused."""
    given = (os.environ.get("ASSESS_SESSION_HOURS") or "").strip()
    if not given:
        return SESSION_HOURS
    try:
        hours = float(given)
    except ValueError:
        hours = float("nan")
    if not 0.1 <= hours <= 720:
        raise ValueError(f"ASSESS_SESSION_HOURS: expected a number of hours from 0.1 to 720, found {given!r}")
    return hours


def trust_forwarded_for() -> bool:
    """$ASSESS_TRUST_PROXY=1: the client address is the last X-Forwarded-For entry (behind our own proxy)."""
    return os.environ.get("ASSESS_TRUST_PROXY", "0") in ("1", "true", "yes")


def llm_settings() -> dict:
    """OpenAI-compatible endpoint settings: ASSESS_LLM_BASE_URL, ASSESS_LLM_MODEL, ASSESS_LLM_API_KEY."""
    return {
        "base_url": os.environ.get("ASSESS_LLM_BASE_URL") or os.environ.get("OPENAI_BASE_URL"),
        "model": os.environ.get("ASSESS_LLM_MODEL"),
        "api_key": os.environ.get("ASSESS_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY"),
    }


def anthropic_settings() -> dict:
    """Anthropic's batch API for ``prejudge --batch-submit --provider anthropic``: ASSESS_ANTHROPIC_BASE_URL (default
    Anthropic's own) and the key ANTHROPIC_API_KEY, sent there only."""
    return {"base_url": os.environ.get("ASSESS_ANTHROPIC_BASE_URL"), "api_key": named_secret("ANTHROPIC_API_KEY")}


_SECRET_NAMES: set[str] = set()  # every variable read as an endpoint's key: its value is redacted from texts


def named_secret(name: str) -> str | None:
    """The value of the environment variable ``name`` (an endpoint's key, named by ``--endpoint URL,key=NAME``),
    or None when it is unset or empty: keys never travel on the command line. Its value is a secret from now
    on (:func:`llm_secrets`)."""
    _SECRET_NAMES.add(name)
    return os.environ.get(name) or None


def llm_endpoint_entries() -> list[tuple[str, str]]:
    """$ASSESS_LLM_ENDPOINTS as (name, endpoint) pairs: the endpoints the deployment allows besides its own
    (``ASSESS_LLM_BASE_URL``), each ``NAME=URL[,key=ENV_VAR][,concurrency=N][,pause=S]``, separated by spaces,
    new lines or ``;``. An entry without ``NAME=`` has the name ``""`` (refused where it is read:
    :func:`assess.llm.endpoints.named_endpoints`)."""
    out = []
    for entry in (os.environ.get("ASSESS_LLM_ENDPOINTS") or "").replace(";", " ").split():
        name, sep, spec = entry.partition("=")
        out.append((name.strip(), spec.strip()) if sep and "://" not in name else ("", entry))
    return out


def configured_llm_urls() -> list[str]:
    """Every base URL the deployment configures: ASSESS_LLM_BASE_URL (or OPENAI_BASE_URL) and those of
    ASSESS_LLM_ENDPOINTS. Only these may be link-local addresses (:func:`assess.llm.guard.check_destination`)."""
    urls = [llm_settings()["base_url"]]
    urls += [spec.split(",")[0].strip() for _, spec in llm_endpoint_entries()]
    return [u for u in urls if u]


def llm_secrets() -> list[str]:
    """The values of every key the workbench may send: ASSESS_LLM_API_KEY, OPENAI_API_KEY, the variables named by
    ``key=`` in ASSESS_LLM_ENDPOINTS and every variable read by :func:`named_secret`. Texts are stored, printed
    and shown without them (:func:`assess.llm.guard.redact`)."""
    names = {"ASSESS_LLM_API_KEY", "OPENAI_API_KEY", *_SECRET_NAMES}
    for _, spec in llm_endpoint_entries():
        for option in spec.split(",")[1:]:
            key, sep, value = option.strip().partition("=")
            if sep and key == "key":
                names.add(value)
    return [v for v in (os.environ.get(n) for n in sorted(names)) if v]
