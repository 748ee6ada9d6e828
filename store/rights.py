"""Who may write now: every write by an account checks, in its own transaction, that the account is
enabled and that its current role may take the action (a role changed meanwhile changes nothing)."""

from __future__ import annotations

from assess.errors import AssessError
from store.db import Store, row


class NotAllowed(AssessError):
    """A write by someone whose account is disabled (or gone), or whose role no longer allows it."""


ACTION_ROLES: dict[str, tuple[str, ...]] = {
    "account": ("organizer",),
    "assignment": ("organizer",),
    "judging-mode": ("organizer",),
    "import": ("organizer",),
    "adjudication": ("organizer", "adjudicator"),
    "guideline": ("organizer",),
    "curation": ("organizer",),
    "drop-demo": ("organizer",),
}
"""The roles whose accounts may take each organizer action (checked in the action's own transaction).
``curation``: a change of a curated set -- a duplicate decision in a nugget set that is not the actor's own
(``gold``, an imported or adjudicated set), a nugget bank's questions and answers."""


def check_writer(db: Store, name: str | None, *, action: str | None = None) -> None:
    """Inside a write transaction: refuse a write by an account that is disabled now, or (``action``) whose
    current role may not take that action. Names that are no account (imported sources, LLMs, open-mode
    names, ``os:USER`` of the command line) are not accounts' writes and pass."""
    if not name:
        return
    found = row(db, "SELECT role, disabled FROM accounts WHERE name = :name", {"name": name})
    if found is None:
        return
    if found["disabled"]:
        raise NotAllowed(f"the account {name!r} is disabled: nothing was saved")
    allowed = ACTION_ROLES.get(action or "")
    if allowed and found["role"] not in allowed:
        raise NotAllowed(f"{name!r} is now {found['role']}, which may not do this ({action}): nothing was saved")
