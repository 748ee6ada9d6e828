"""Assessor queues, single-label writes, undo, and the context a judging screen needs.

An assessor's queue is the pool of the turns assigned to them (or, in open mode with no
assignment, every pooled turn), in a fixed order: conversation (import order), turn position,
then passage id, so passages of one document sit together as at NIST. Each label is written
in its own transaction the moment it is given; the history triggers record every change.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from assess.errors import AssessError, UnknownItem
from assess.queueing import QueueOrder, QueueState
from assess.tasks import (
    PTKB_KEYS,
    RESERVED_SOURCE_PREFIXES,
    RESERVED_SOURCES,
    STUDY_MODES,
    JudgingMode,
    Task,
    label_kind,
    reserved_source,
)
from assess.text import look_alike, name_problem, normal_name
from store import labels
from store.db import IntegrityError, Store, column, each, now, row, rows, run, run_many, value, write
from store.imports import ensure_source

MODES = tuple(m.value for m in STUDY_MODES)


class QueueItem(NamedTuple):
    turn_id: str
    item_id: str  # passage id (passage task) or statement id (PTKB task)


# ------------------------------------------------------------------------------------------- assessors


def sign_in(db: Store, name: str, *, guest: bool = False) -> str:
    """Register ``name`` as an assessor source (idempotent) and return it as kept (NFKC-normalised, see
    :func:`assess.text.normal_name`). Refused: a name breaking the name rule (:func:`assess.text.name_problem`:
    printable characters only, checked before the name reaches the database), a reserved name or a look-alike
    of one (:func:`assess.tasks.reserved_source`, :func:`assess.text.look_alike`), the name of another kind
    of source, and a new name that looks like an existing source or account name. ``guest``: a name typed
    in open mode, refused when it belongs to an account (nobody acts under another person's name)."""
    name = normal_name(name)
    problems = []
    if reserved_source(name) or (alike := look_alike(name, RESERVED_SOURCES, RESERVED_SOURCE_PREFIXES)):
        shown = "" if reserved_source(name) else f" (it looks like {alike!r})"
        problems.append(f"{name!r} is reserved for the workbench's own label sources{shown}")
    if rule := name_problem(name):
        problems.append(rule)  # nothing is asked of the database about such a name (PostgreSQL refuses NUL)
        raise AssessError("; ".join(problems) + "; choose another assessor name")
    if guest and row(db, "SELECT 1 AS taken FROM accounts WHERE name = :name", {"name": name}):
        raise AssessError(f"{name!r} belongs to an account: sign in with its password or sign-in link")
    found = row(db, "SELECT kind FROM sources WHERE name = :name", {"name": name})
    if found and found["kind"] != "assessor":
        problems.append(f"{name!r} is the name of a {found['kind']} label source")
    if not found and not problems:
        taken = column(db, "SELECT name FROM sources UNION SELECT name FROM accounts")
        if alike := look_alike(name, taken):
            problems.append(f"{name!r} looks like the existing name {alike!r}")
    if problems:
        raise AssessError("; ".join(problems) + "; choose another assessor name")
    if not found:
        with write(db):
            ensure_source(db, name, "assessor")
    return name


def get_setting(db: Store, key: str, default: str) -> str:
    found = row(db, "SELECT value FROM settings WHERE key = :key", {"key": key})
    return default if found is None else found["value"]


def set_setting(db: Store, key: str, value: str) -> None:
    with write(db):
        run(
            db,
            "INSERT INTO settings (key, value) VALUES (:key, :value) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            {"key": key, "value": value},
        )


def judging_mode(db: Store) -> str:
    """The study's judging mode: 'blind' (default: no other source's label is ever shown),
    'reveal' (blind-then-reveal: LLM labels appear only after one's own label is committed), or
    'shown' (LLM labels are shown before judging)."""
    return get_setting(db, "judging_mode", JudgingMode.BLIND.value)


def set_judging_mode(db: Store, mode: str, *, by: str | None = None) -> bool:
    """Set the study's judging mode (recorded in the history as ``by``'s action); False when it already was
    ``mode``."""
    from store.accounts import record_action

    if mode not in MODES:
        raise AssessError(f"mode is one of {', '.join(MODES)}, not {mode!r}")
    with write(db):
        before = judging_mode(db)
        if before == mode:
            return False
        set_setting(db, "judging_mode", mode)
        record_action(db, by, "judging-mode", "judging_mode", before, mode, via="set")
    return True


# ------------------------------------------------------------------------------------------- queues

_ITEMS = {
    # the items a task's queue holds, as (turn_id, item_id) rows
    Task.PASSAGE: "SELECT p.turn_id AS turn_id, p.passage_id AS item_id FROM pool p",
    Task.PTKB: (
        "SELECT t0.id AS turn_id, s.statement_id AS item_id FROM turns t0 "
        "JOIN ptkb_statements s ON s.conversation_id = t0.conversation_id"
    ),
}


def assessor_scope(db: Store, assessor: str, open_mode: bool) -> tuple[str, dict]:
    if row(db, "SELECT 1 AS assigned FROM assignments WHERE assessor = :assessor LIMIT 1", {"assessor": assessor}):
        return "q.turn_id IN (SELECT turn_id FROM assignments WHERE assessor = :assessor)", {"assessor": assessor}
    if open_mode:
        return "1 = 1", {}
    return "1 = 0", {}


def _ordered(db: Store, task: str, where: str, params: dict) -> QueueOrder:
    """The task's items matching ``where``: conversation import order, turn position, then item id
    (statement ids numerically)."""
    task = Task(task)
    order_item = "q.item_id" if task is Task.PASSAGE else "int_prefix(q.item_id), q.item_id"
    sql = (
        f"SELECT q.turn_id AS turn_id, q.item_id AS item_id FROM ({_ITEMS[task]}) q "
        f"JOIN turns t ON t.id = q.turn_id JOIN conversations c ON c.id = t.conversation_id "
        f"WHERE {where} ORDER BY c.rowid, t.position, {order_item}"
    )
    return QueueOrder.of((r["turn_id"], r["item_id"]) for r in each(db, sql, params))


def queue_order(db: Store, assessor: str, *, task: str = "passage", open_mode: bool = True) -> QueueOrder:
    """The assessor's items in judging order (cacheable until :func:`queue_version` changes): the items of
    samples given to them (:func:`create_sample`) first, in the samples' order, then the rest of their queue."""
    sampled = sampled_order(db, assessor, task=task)
    where, params = assessor_scope(db, assessor, open_mode)
    usual = _ordered(db, task, where, params)
    if not sampled.items:
        return usual
    return QueueOrder.of([*sampled.items, *(it for it in usual.items if it not in sampled.index)])


def queue_version(db: Store, assessor: str) -> tuple:
    """Changes whenever the pool, the turns or the assessor's assignments change."""
    found = row(
        db,
        "SELECT (SELECT COUNT(*) FROM pool) AS pooled, (SELECT MAX(added_at) FROM pool) AS pooled_at, "
        "(SELECT COUNT(*) FROM turns) AS turns, (SELECT COUNT(*) FROM ptkb_statements) AS statements, "
        "(SELECT COUNT(*) FROM assignments WHERE assessor = :assessor) AS assigned, "
        "(SELECT MAX(assigned_at) FROM assignments WHERE assessor = :assessor) AS assigned_at, "
        "(SELECT COUNT(*) FROM sample_items WHERE assessor = :assessor) AS sampled",
        {"assessor": assessor},
    )
    return tuple(found.values())


def labelled(db: Store, assessor: str, task: str = "passage") -> frozenset:
    """The (turn, item) pairs the source has labelled (any value, 'cannot judge' included)."""
    return labels.labelled(db, task, assessor)


def load_queue(
    db: Store, assessor: str, *, task: str = "passage", open_mode: bool = True, order: QueueOrder | None = None
) -> QueueState:
    """The assessor's queue with what they have judged (pass a cached ``order`` to skip the ordering query)."""
    order = order if order is not None else queue_order(db, assessor, task=task, open_mode=open_mode)
    return QueueState(order, labelled(db, assessor, task))


def queue(db: Store, assessor: str, *, task: str = "passage", open_mode: bool = True) -> list[tuple]:
    """The assessor's queue as [(turn_id, item_id, judged)] in queue order."""
    state = load_queue(db, assessor, task=task, open_mode=open_mode)
    return [state.item(i) for i in range(len(state))]


def turn_items(db: Store, assessor: str, turn_id: str, *, task: str = "passage") -> list[tuple]:
    """One turn's items: [(turn_id, item_id, judged)] in queue order."""
    order = _ordered(db, task, "q.turn_id = :turn_id", {"turn_id": turn_id})
    done = labelled(db, assessor, task)
    return [(t, i, (t, i) in done) for t, i in order.items]


def resume_position(items: list[tuple]) -> int | None:
    """Where an assessor resumes in a [(turn, item, judged)] list: the first unjudged item."""
    for i, item in enumerate(items):
        if not item[2]:
            return i
    return len(items) - 1 if items else None


# ------------------------------------------------------------------------------------------- labels
# An assessor's writes: the queue's own rules (study modes, pool membership, the two PTKB keys),
# then store.labels, which checks the value against the task's scale and writes.


def _check_mode(mode: str) -> None:
    if mode not in (*MODES, JudgingMode.ADJUDICATION):
        raise AssessError(f"mode is one of {', '.join(MODES)}, not {mode!r}")


def save_passage_label(
    db: Store,
    source: str,
    turn_id: str,
    passage_id: str,
    grade: int | None,
    *,
    note: str | None = None,
    mode: str = "blind",
    via: str = "key",
) -> None:
    """Write one passage judgment (grade 0-4, or None for 'cannot judge') in its own transaction; the passage
    is in the turn's pool or in a sample given to ``source``."""
    label_kind(Task.PASSAGE).check(grade)
    _check_mode(mode)
    with write(db):
        key = {"turn_id": turn_id, "passage_id": passage_id, "assessor": source, "task": Task.PASSAGE.value}
        if not row(
            db,
            "SELECT 1 AS pooled FROM pool WHERE turn_id = :turn_id AND passage_id = :passage_id "
            "UNION ALL SELECT 1 AS pooled FROM sample_items i JOIN samples s ON s.name = i.sample "
            "WHERE i.assessor = :assessor AND i.turn_id = :turn_id AND i.item_id = :passage_id AND s.task = :task",
            key,
        ):
            raise UnknownItem(f"passage {passage_id} is not in the pool of turn {turn_id}")
        labels.save(db, Task.PASSAGE, source, (turn_id, passage_id), grade, note=note, mode=mode, via=via)


def save_ptkb_label(
    db: Store,
    source: str,
    turn_id: str,
    statement_id: str,
    relevant: int,
    *,
    note: str | None = None,
    mode: str = "blind",
    via: str = "key",
) -> None:
    """Write one PTKB statement label (1 relevant, 0 not relevant) in its own transaction."""
    PTKB_KEYS.check(relevant, what="a PTKB label")
    labels.save(db, Task.PTKB, source, (turn_id, statement_id), relevant, note=note, mode=mode, via=via)


def save_note(db: Store, source: str, task: str, turn_id: str, item_id: str, note: str) -> bool:
    """Attach a note to an existing label; False when there is no label yet."""
    return labels.set_note(db, task, source, (turn_id, item_id), note)


def label_of(db: Store, source: str, task: str, turn_id: str, item_id: str) -> dict | None:
    """The source's own label for one item (value, note, mode, via), or None."""
    return labels.get(db, task, source, (turn_id, item_id))


def undo(db: Store, source: str, task: str = "passage") -> tuple[str, str] | None:
    """Revert the source's latest label change not yet undone; return the (turn, item) it touched.

    Repeated undos walk further back (see :func:`store.labels.undo`).
    """
    return labels.undo(db, task, source)


# ------------------------------------------------------------------------------------------- reveal


def revealed_labels(db: Store, assessor: str, task: str, turn_id: str, item_id: str) -> list[dict]:
    """Other sources' labels for an item, for 'shown' mode or after the assessor's own label exists.

    Blind by default: returns [] in 'blind' mode, and in 'reveal' mode until the assessor has
    committed a label for this item, so nothing leaks into the page before that.
    """
    mode = judging_mode(db)
    if mode == "blind" or (mode == "reveal" and label_of(db, assessor, task, turn_id, item_id) is None):
        return []
    return labels.others(db, task, (turn_id, item_id), kinds=("llm",), exclude=assessor)


# ------------------------------------------------------------------------------------------- samples
# A budgeted human sample: items drawn from a population (e.g. every item an LLM labelled) by a design
# (stratified by the LLM's label, by judges' disagreement, ...), each with the probability it had of being
# drawn, so that estimates from the humans' labels of the sample stay unbiased. Its items sit in the
# assessors' queues ahead of the rest. The drawing itself is pure logic (assess.measures); this is its record.


class SampledItem(NamedTuple):
    """One drawn item: the turn, the task's item after the turn (spelled as in prejudgments and the history:
    passage id, statement id, '<nugget id> <run>', ...), its inclusion probability, stratum and assessor."""

    turn_id: str
    item_id: str
    inclusion: float
    stratum: str | None = None
    assessor: str | None = None


def create_sample(
    db: Store,
    name: str,
    *,
    task: str,
    design: str,
    population: int,
    items: Sequence[SampledItem],
    details: Mapping | None = None,
    by: str | None = None,
) -> dict:
    """Record a drawn sample and put its items in their assessors' queues (in the order given), in one
    transaction; ``by``'s action is in the history. Returns ``{"sample", "items", "assessors"}``.

    Refused (nothing written): a name in use or blank, an unknown task, a population smaller than the sample,
    an item twice, an inclusion probability outside (0, 1], a turn the store does not have, an assessor name
    that is not an assessor source.
    """
    from store.accounts import record_action

    kind = label_kind(task)
    name = (name or "").strip()
    if not name or any(c.isspace() for c in name):
        raise AssessError(f"a sample's name is a non-empty word without spaces, not {name!r}")
    if isinstance(population, bool) or not isinstance(population, int) or population < len(items):
        raise AssessError(f"the population ({population!r}) must be a whole number of at least {len(items)} items")
    seen: set[tuple[str, str]] = set()
    for n, it in enumerate(items, start=1):
        key = (it.turn_id, it.item_id)
        if key in seen:
            raise AssessError(f"item {n} of sample {name!r} ({it.turn_id} {it.item_id}) is drawn twice")
        seen.add(key)
        p = it.inclusion
        if isinstance(p, bool) or not isinstance(p, int | float) or not math.isfinite(p) or not 0 < p <= 1:
            raise AssessError(f"item {n} of sample {name!r}: inclusion probability must be in (0, 1], not {p!r}")
    position: dict[str | None, int] = {}
    records = []
    for it in items:
        place = position.get(it.assessor, 0)
        position[it.assessor] = place + 1
        records.append({**it._asdict(), "sample": name, "inclusion": float(it.inclusion), "position": place})
    assessors = sorted(a for a in position if a is not None)
    with write(db):
        if row(db, "SELECT 1 AS taken FROM samples WHERE name = :name", {"name": name}):
            raise AssessError(f"a sample named {name!r} exists already; choose another name")
        for assessor in assessors:
            if value(db, "SELECT kind FROM sources WHERE name = :name", {"name": assessor}) != "assessor":
                raise AssessError(f"{assessor!r} is not an assessor; sign them in (or create their account) first")
        known = {r["id"] for r in rows(db, "SELECT id FROM turns")}
        unknown = sorted({it.turn_id for it in items} - known)
        if unknown:
            raise UnknownItem(f"sample {name!r} names turn {unknown[0]!r}, which the store does not have")
        run(
            db,
            "INSERT INTO samples (name, task, design, population, budget, details, created_by, created_at) "
            "VALUES (:name, :task, :design, :population, :budget, :details, :by, :at)",
            {
                "name": name,
                "task": kind.task.value,
                "design": str(design),
                "population": population,
                "budget": len(items),
                "details": json.dumps(dict(details or {}), sort_keys=True),
                "by": by,
                "at": now(),
            },
        )
        try:
            run_many(
                db,
                "INSERT INTO sample_items (sample, turn_id, item_id, stratum, inclusion, assessor, position) "
                "VALUES (:sample, :turn_id, :item_id, :stratum, :inclusion, :assessor, :position)",
                records,
            )
        except IntegrityError as e:  # a last line of defence: the checks above should have caught it
            raise AssessError(f"sample {name!r} was refused by the store: {e.orig}") from None
        summary = {"sample": name, "items": len(items), "assessors": assessors}
        record_action(db, by, "assignment", f"sample {name}", None, summary, via=str(design))
    return summary


def samples(db: Store) -> list[dict]:
    """Every recorded sample (newest first): name, task, design, population, budget, details (parsed), who, when."""
    found = rows(
        db,
        "SELECT name, task, design, population, budget, details, created_by, created_at FROM samples "
        "ORDER BY created_at DESC, name",
    )
    for r in found:
        r["details"] = json.loads(r["details"]) if r["details"] else {}
    return found


def sample_items(db: Store, sample: str) -> list[dict]:
    """The items of a sample: turn_id, item_id, stratum, inclusion, assessor, position (by assessor and place)."""
    return rows(
        db,
        "SELECT turn_id, item_id, stratum, inclusion, assessor, position FROM sample_items WHERE sample = :sample "
        "ORDER BY assessor, position, turn_id, item_id",
        {"sample": sample},
    )


def inclusion_probabilities(db: Store, sample: str) -> dict[tuple[str, str], float]:
    """{(turn, item): the probability the item had of being drawn} of a sample (what an unbiased estimate
    weighs each human label by); an unknown sample is an error."""
    if not row(db, "SELECT 1 AS known FROM samples WHERE name = :name", {"name": sample}):
        raise AssessError(f"no sample named {sample!r}")
    return {
        (r["turn_id"], r["item_id"]): float(r["inclusion"])
        for r in each(
            db, "SELECT turn_id, item_id, inclusion FROM sample_items WHERE sample = :sample", {"sample": sample}
        )
    }


def sampled_order(db: Store, assessor: str, *, task: str = "passage") -> QueueOrder:
    """The items of the samples of ``task`` given to the assessor, oldest sample first, each in its order."""
    return QueueOrder.of(
        dict.fromkeys(  # an item drawn by two samples is in the queue once, at its first place
            (r["turn_id"], r["item_id"])
            for r in each(
                db,
                "SELECT i.turn_id AS turn_id, i.item_id AS item_id FROM sample_items i JOIN samples s ON s.name = i.sample "
                "WHERE i.assessor = :assessor AND s.task = :task ORDER BY s.created_at, s.name, i.position",
                {"assessor": assessor, "task": label_kind(task).task.value},
            )
        )
    )
