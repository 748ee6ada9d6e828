"""The organizer's review dashboard: progress of the current assignments, per assessor and per topic, with the
implausible-speed flags; one reader for the /review page and `python -m assess stats --json` ("review")."""

from __future__ import annotations

from typing import Any

from assess.services.audit import speed
from store.review import dashboard as figures


def dashboard(db) -> dict[str, Any]:
    """:func:`store.review.dashboard` with each listed assessor's speed flags (:func:`assess.services.audit.speed`:
    a task's median active time under the limit over enough labels), the figures the page shows."""

    out = figures(db)
    listed = {r["assessor"] for r in out["assessors"]}
    flags: dict[str, list[str]] = {}
    for flag in speed(db)["flags"]:
        if flag["assessor"] in listed:
            flags.setdefault(flag["assessor"], []).append(f"{flag['group']}: {flag['flag']}")
    for r in out["assessors"]:
        r["flags"] = flags.get(r["assessor"], [])
    return out
