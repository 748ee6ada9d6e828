"""What the HTTP API does beyond the passage queue: the queues and labels of the other judging tasks, label
listings, topics and turns, assignments, exports, jobs and the audit's figures (docs/api.md).

Rights are the pages': a person judges and reads their own queue and labels; an organizer reads every source's
labels, assigns turns, exports, and reads jobs and the audit. The role is checked here for a clear 403 before
anything runs, and again by the store inside each write's transaction (``store.rights.check_writer``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from io import StringIO

from assess.errors import AssessError, UnknownItem
from assess.formats import format_qrels
from assess.services import api_judging, kinds
from assess.services.audit import agreement_from_store, verdict_view
from assess.services.exports import ExportRequest, export
from assess.services.jobs.reports import job_listing
from assess.tasks import JudgingMode, Role, Shown, label_kind
from store import api_reads, exports, labels, queue
from store import conversations as store_conversations
from store import jobs as store_jobs

# The tasks whose queue and labels the API serves: the keyboard queues of /judge and /ptkb (the person's
# assignments) and the registry kinds with an item source (every assessor sees every item, as their pages do).
QUEUE_TASKS: tuple[str, ...] = ("passage", "ptkb", "citation")
_SCOPED = ("passage", "ptkb")


class Forbidden(AssessError):
    """A request the token's current role may not make (HTTP 403)."""


class FieldRefused(AssessError):
    """A request value the store refuses (an unknown turn, a value off the task's scale): HTTP 422 naming
    ``loc``, the field's path in the request as FastAPI spells it."""

    def __init__(self, loc: Sequence[str | int], message: str) -> None:
        super().__init__(message)
        self.loc = tuple(loc)


class NotFound(AssessError):
    """No such topic, turn or job (HTTP 404)."""


def require_organizer(role: Role, what: str) -> None:
    if role is not Role.ORGANIZER:
        raise Forbidden(f"{what} is for organizers; this token's account is {role.value}")


# ------------------------------------------------------------------------------------------- queues and labels


def _order(db, name: str, task: str):
    return api_judging.queue_order(db, name, task) if task in _SCOPED else kinds.queue_order(db, task)


def next_items(db, name: str, task: str, *, limit: int) -> tuple[list[tuple[str, str]], int, int]:
    """(the next ``limit`` unjudged (turn, item id) pairs of ``name``'s ``task`` queue, judged, queue size)."""
    if task == "passage":
        return api_judging.next_items(db, name, task, limit=limit)
    order = _order(db, name, task)
    done = queue.labelled(db, name, task) if task in _SCOPED else kinds.labelled(db, task, name)
    items = [item for item in order.items if item not in done]
    return items[:limit], len(order.items) - len(items), len(order.items)


def check_value(task: str, value: object, field: str) -> None:
    """A value off the task's scale is a 422 naming ``field``."""
    try:
        label_kind(task).check(value)
    except AssessError as exc:
        raise FieldRefused(("body", field), str(exc)) from None


def save_label(db, name: str, task: str, turn_id: str, item_id: str, value: int | None, *, seen: Shown | None):
    """Store ``name``'s label of an item of their ``task`` queue through the page's write (``seen``: the stale-write
    rule, None: no check), recorded with ``via = 'api'``."""
    if task == "passage":
        api_judging.save_passage(db, name, turn_id, item_id, value, seen=seen)
        return
    check_value(task, value, "value")
    if (turn_id, item_id) not in _order(db, name, task).index:
        raise api_judging.NotInQueue(
            f"{task} item {item_id} of turn {turn_id} is not in {name}'s queue: nothing was saved"
        )
    if task == "ptkb":
        queue.save_ptkb_label(db, name, turn_id, item_id, value, mode=queue.judging_mode(db), via="api", expected=seen)
        return
    item = (turn_id, *label_kind(task).key.decode_id(item_id))
    labels.save(db, task, name, item, value, mode=JudgingMode.BLIND, via="api", expected=seen)


def undo_latest(db, name: str, task: str) -> tuple[str, str] | None:
    """Revert ``name``'s latest ``task`` label change; the (turn, item id) it touched, or None."""
    if task in _SCOPED:
        return queue.undo(db, name, task)
    return kinds.undo(db, task, name)


def list_labels(
    db, name: str, role: Role, task: str, *, source: str | None, turn_id: str | None, offset: int, limit: int
) -> list[dict]:
    """A page of ``task``'s labels (of ``source``, of ``turn_id``): a person reads their own, an organizer any."""
    if role is not Role.ORGANIZER:
        if source not in (None, name):
            raise Forbidden(f"{name} ({role.value}) may read their own labels only, not {source!r}'s")
        source = name
    kind = label_kind(task)
    found = api_reads.label_page(db, task, source=source, turn_id=turn_id, offset=offset, limit=limit)
    return [
        {
            "task": str(kind.task),
            "source": r["source"],
            "turn": r["turn_id"],
            "item": kind.key.encode_id(tuple(r[c] for c in kind.item_columns[1:])),
            "value": r["value"],
            "mode": r["mode"],
            "via": r["via"],
            "at": r["updated_at"],
        }
        for r in found
    ]


# ------------------------------------------------------------------------------------------- topics and turns


def topics(db) -> list[dict]:
    return store_conversations.conversations(db)


def topic_turns(db, conversation_id: str) -> list[dict]:
    found = api_reads.conversation_turns(db, conversation_id)
    if found is None:
        raise NotFound(f"no topic {conversation_id!r}")
    return found


def turn(db, turn_id: str) -> dict:
    try:
        ctx = store_conversations.turn_context(db, turn_id)
    except UnknownItem:
        raise NotFound(f"no turn {turn_id!r}") from None
    return {
        "id": ctx.turn_id,
        "topic": ctx.conversation_id,
        "title": ctx.title,
        "utterance": ctx.utterance,
        "resolved": ctx.resolved,
        "history": list(ctx.history),
        "ptkb": list(ctx.ptkb),
    }


# ------------------------------------------------------------------------------------------- assignments


def assignments(db, name: str, role: Role, assessor: str | None) -> list[dict]:
    """The assignments: a person's own, an organizer's view of anyone's (``assessor``) or everyone's."""
    if role is not Role.ORGANIZER:
        if assessor not in (None, name):
            raise Forbidden(f"{name} ({role.value}) may read their own assignments only")
        assessor = name
    return api_reads.assignment_rows(db, assessor)


def _known(db, turn_ids: Sequence[str]) -> None:
    known = api_reads.known_turns(db, turn_ids)
    for i, t in enumerate(turn_ids):
        if t not in known:
            raise FieldRefused(("body", "turns", i), f"unknown turn {t!r}: nothing was assigned")


def assign(db, name: str, role: Role, assessor: str, turn_ids: Sequence[str]) -> int:
    """Assign turns (an organizer's action, checked again in the write); how many are new."""
    require_organizer(role, "assigning turns")
    _known(db, turn_ids)
    try:
        return store_conversations.assign(db, assessor, turn_ids, by=name)
    except api_judging.NotAllowed:
        raise
    except AssessError as exc:  # the name rule of assessor sources (store.sources.sign_in), before any write
        raise FieldRefused(("body", "assessor"), str(exc)) from None


def unassign(db, name: str, role: Role, assessor: str, turn_id: str) -> bool:
    """Take one turn from an assessor; False when it was not assigned (nothing recorded)."""
    require_organizer(role, "taking turns away")
    if not any(r["turn_id"] == turn_id for r in api_reads.assignment_rows(db, assessor)):
        return False
    store_conversations.unassign(db, assessor, [turn_id], by=name)
    return True


# ------------------------------------------------------------------------------------------- exports


def check_source(db, source: str) -> None:
    """An unknown source is a 422 on ``source`` (checked before a stream starts: its status is sent first)."""
    try:
        exports.require_source(db, source)
    except AssessError as exc:
        raise FieldRefused(("query", "source"), str(exc)) from None


def qrels_chunks(target: str, source: str, task: str = "passage", *, lines: int = 2000) -> Iterator[str]:
    """The TREC qrels of ``source`` in chunks of ``lines`` lines, read from the store row by row on a handle of
    their own (a stream outlives the request's thread), so a million labels never sit in memory. Chunks, not
    lines: each chunk is one hop through the server's thread pool and one write to the socket."""
    db = api_judging.open_store(target)
    try:
        read = exports.passage_qrels if task == "passage" else exports.ptkb_qrels
        chunk: list[str] = []
        for line in format_qrels(read(db, source)):
            chunk.append(line)
            if len(chunk) >= lines:
                yield "".join(chunk)
                chunk.clear()
        if chunk:
            yield "".join(chunk)
    finally:
        db.close()


def export_text(db, kind: str, **options) -> str:
    """A small export (nuggets JSON, the battles table as CSV, a leaderboard) written whole, as ``data export``
    writes it."""
    out = StringIO()
    try:
        export(db, ExportRequest(kind=kind, **options), out)
    except AssessError as exc:
        raise FieldRefused(("query",), str(exc)) from None
    return out.getvalue()


# ------------------------------------------------------------------------------------------- jobs and audit


def jobs(db, limit: int) -> list[dict]:
    return job_listing(db, limit=limit)


def job(db, job_id: int) -> dict:
    found = store_jobs.job(db, job_id)
    if found is None:
        raise NotFound(f"no job {job_id}")
    return found


def finite(report):
    """A report as strict JSON takes it: NaN and infinities become null."""
    if isinstance(report, float):
        return report if math.isfinite(report) else None
    if isinstance(report, dict):
        return {str(k): finite(v) for k, v in report.items()}
    if isinstance(report, list | tuple):
        return [finite(v) for v in report]
    return report


def agreement(db, task: str, a: str, b: str, *, weights: str | None, threshold: float | None) -> dict:
    """`audit agreement --json`'s figures (`agreement --a A --b B`)."""
    try:
        return finite(agreement_from_store(db, task, a, b, weights=weights, threshold=threshold))
    except AssessError as exc:
        raise FieldRefused(("query",), str(exc)) from None


def verdict(db, reference: str | None, judge: str | None, *, epsilon: float | None, width: float | None) -> dict:
    """`audit verdict --json`'s figures."""
    try:
        return finite(verdict_view(db, reference, judge, epsilon=epsilon, width=width))
    except AssessError as exc:
        raise FieldRefused(("query",), str(exc)) from None
