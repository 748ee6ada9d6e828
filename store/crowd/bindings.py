"""A worker id bound to the browser that pressed Start: binding, checking and releasing it."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from typing import NamedTuple

from assess.errors import UnknownItem
from store import db as sql
from store.crowd.studies import get_study
from store.db import Store, now, write


class Binding(NamedTuple):
    allowed: bool  # this browser may act as the worker
    secret: str | None  # the secret this browser keeps in its cookie (None when refused)
    new: bool  # the binding was made by this call


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def bind(db: Store, study: str, worker: str, presented: Iterable[str | None] = ()) -> Binding:
    """Bind ``worker`` of ``study`` to the browser that first arrives with that id, or check a later arrival (the
    worker page calls it at the worker's Start; a mere view only checks, :func:`check_binding`).

    The first arrival makes a random secret, stores its SHA-256 and returns it (the worker page puts it in a
    cookie of that browser); the insert is one statement on the (study, worker) key, so of two browsers
    arriving at once exactly one wins and the other is checked against the winner's secret. A later arrival
    is allowed when one of the ``presented`` secrets (the page's session, the browser's cookie) matches the
    stored hash, else refused. Nothing is written for a refused arrival."""
    params = {"study": study, "worker": worker}
    query = "SELECT secret_hash FROM crowd_bindings WHERE study = :study AND worker = :worker"
    stored = sql.value(db, query, params)
    if stored is None:
        get_study(db, study)  # an unknown study is one clear error, not a foreign-key failure
        secret = secrets.token_urlsafe(32)
        with write(db):
            made = sql.run(
                db,
                "INSERT INTO crowd_bindings (study, worker, secret_hash, created_at) "
                "VALUES (:study, :worker, :hash, :at) ON CONFLICT DO NOTHING",
                {**params, "hash": _digest(secret), "at": now()},
            )
        if made:
            return Binding(True, secret, True)
        stored = sql.value(db, query, params)  # another browser was faster
    return _match(stored, presented)


def _match(stored: str, presented: Iterable[str | None]) -> Binding:
    """Allowed with the first of the ``presented`` secrets whose hash is ``stored``, else refused."""
    for candidate in presented:
        if isinstance(candidate, str) and candidate and hmac.compare_digest(_digest(candidate), stored):
            return Binding(True, candidate, False)
    return Binding(False, None, False)


def check_binding(db: Store, study: str, worker: str, presented: Iterable[str | None] = ()) -> Binding:
    """Check a browser arriving as ``worker`` of ``study`` without binding anything (a view of the consent page
    binds nothing; :func:`bind` does, at the worker's explicit start). Allowed with no secret while the id is
    bound to no browser; allowed with the matching secret when one of ``presented`` is the bound browser's;
    refused when another browser holds the id. Writes nothing."""
    stored = sql.value(
        db,
        "SELECT secret_hash FROM crowd_bindings WHERE study = :study AND worker = :worker",
        {"study": study, "worker": worker},
    )
    return Binding(True, None, False) if stored is None else _match(stored, presented)


def release(db: Store, study: str, worker: str) -> None:
    """Forget the browser ``worker`` of ``study`` is bound to (the worker changed browser, or lost its cookie):
    the next browser that arrives with that id is bound afresh. Their batch and answers stay."""
    get_study(db, study)
    with write(db):
        if not sql.run(
            db,
            "DELETE FROM crowd_bindings WHERE study = :study AND worker = :worker",
            {"study": study, "worker": worker},
        ):
            raise UnknownItem(f"worker {worker!r} of study {study!r} is bound to no browser")
