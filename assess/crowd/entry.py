"""How a crowd worker arrives and leaves: the platforms' entry parameters (Prolific, MTurk, a direct pilot link),
MTurk's submit form and the completion code. Pure (no SQL, no Streamlit); the rules of a study live in
:mod:`assess.crowd.rules`."""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
from collections.abc import Mapping
from typing import NamedTuple
from urllib.parse import urlsplit

from assess.crowd.rules import WORKER_ID, check_study_name
from assess.errors import AssessError

# Query parameters the worker page reads. Prolific appends PROLIFIC_PID, STUDY_ID, SESSION_ID to
# the study URL; MTurk (ExternalQuestion) appends workerId, assignmentId, hitId, turkSubmitTo.
STUDY_PARAM = "study"
ENTRY_PARAMS = (
    "study",
    "worker",
    "session",
    "PROLIFIC_PID",
    "STUDY_ID",
    "SESSION_ID",
    "workerId",
    "assignmentId",
    "hitId",
    "turkSubmitTo",
)


MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"


MTURK_HOSTS = ("www.mturk.com", "workersandbox.mturk.com")


PROLIFIC_COMPLETE = "https://app.prolific.com/submissions/complete?cc="


class Entry(NamedTuple):
    """Who arrives at the worker page, read from the platform's URL parameters."""

    study: str
    worker: str | None
    platform: str  # prolific | mturk | direct
    session: str  # Prolific SESSION_ID / MTurk assignmentId ('' when not given)
    hit: str | None  # Prolific STUDY_ID / MTurk hitId
    submit_to: str | None  # MTurk turkSubmitTo, checked against the MTurk hosts
    preview: bool  # MTurk preview (the HIT is not accepted yet)


def entry_from_params(params: Mapping[str, str | None]) -> Entry:
    """Read the worker page's query parameters: Prolific (PROLIFIC_PID, STUDY_ID, SESSION_ID), MTurk
    (workerId, assignmentId, hitId, turkSubmitTo) or a direct pilot link (worker, session)."""
    get = lambda k: (params.get(k) or "").strip() or None  # noqa: E731
    study = check_study_name(get("study") or "")
    if get("PROLIFIC_PID"):
        platform, worker, session, hit, submit_to = (
            "prolific",
            get("PROLIFIC_PID"),
            get("SESSION_ID"),
            get("STUDY_ID"),
            None,
        )
    elif get("assignmentId") or get("workerId"):
        platform, worker, session, hit = "mturk", get("workerId"), get("assignmentId"), get("hitId")
        submit_to = check_submit_to(get("turkSubmitTo")) if get("turkSubmitTo") else None
    else:
        platform, worker, session, hit, submit_to = "direct", get("worker"), get("session"), None, None
    preview = platform == "mturk" and session == MTURK_PREVIEW
    if worker is not None and not WORKER_ID.match(worker):
        raise AssessError("the worker id in this link is not valid (letters, digits and ._:@- only)")
    for value in (session, hit):
        if value is not None and not WORKER_ID.match(value):
            raise AssessError("a session or study id in this link is not valid (letters, digits and ._:@- only)")
    return Entry(study, worker, platform, "" if preview or session is None else session, hit, submit_to, preview)


def check_submit_to(url: str) -> str:
    """MTurk's turkSubmitTo: only the MTurk hosts over https (the form must not post anywhere else)."""
    parts = urlsplit(url)
    if (
        parts.scheme != "https"
        or parts.hostname not in MTURK_HOSTS
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or parts.username
        or parts.port
    ):
        raise AssessError(f"turkSubmitTo must be https://{MTURK_HOSTS[0]} or https://{MTURK_HOSTS[1]}")
    return f"https://{parts.hostname}"


def mturk_form_html(submit_to: str, assignment_id: str, code: str) -> str:
    """The form that submits an MTurk HIT: POST assignmentId (and the completion code) to
    ``<turkSubmitTo>/mturk/externalSubmit``."""
    action = check_submit_to(submit_to) + "/mturk/externalSubmit"
    return (
        f'<form method="POST" action="{html.escape(action)}" id="mturk_form">'
        f'<input type="hidden" name="assignmentId" value="{html.escape(assignment_id)}">'
        f'<input type="hidden" name="completion_code" value="{html.escape(code)}">'
        '<button type="submit">Submit the HIT</button></form>'
    )


def completion_code(secret: str, study: str, worker: str, batch: str) -> str:
    """The completion code of one worker's batch: 10 characters of HMAC-SHA256(secret, study|worker|batch)
    in base32, so an organizer can check a pasted code (``crowd status`` lists them)."""
    digest = hmac.new(secret.encode(), f"{study}\x1f{worker}\x1f{batch}".encode(), hashlib.sha256).digest()
    return base64.b32encode(digest).decode()[:10]


def entry_urls(base_url: str, study: str) -> dict[str, str]:
    """The links to give the platforms: Prolific's study URL (with its placeholders), MTurk's
    ExternalQuestion URL (MTurk appends its own parameters) and a direct pilot link."""
    base = base_url.rstrip("/") + f"/crowd?study={study}"
    return {
        "prolific": base + "&PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}",
        "mturk": base,
        "direct": base + "&worker=NAME",
    }
