"""Budgeted human samples and their inclusion probabilities.

A budgeted human sample: items drawn from a population (e.g. every item an LLM labelled) by a design
(stratified by the LLM's label, by judges' disagreement, ...), each with the probability it had of being
drawn, so that estimates from the humans' labels of the sample stay unbiased. Its items sit in the
assessors' queues ahead of the rest. The drawing itself is pure logic (assess.measures); this is its record.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from assess.errors import AssessError, UnknownItem
from assess.queueing import QueueOrder
from assess.tasks import label_kind
from store.db import IntegrityError, Store, each, now, row, rows, run, run_many, value, write
from store.history import record_action


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


def extend_sample(
    db: Store,
    name: str,
    items: Sequence[SampledItem],
    *,
    inclusion: Mapping[str, float],
    details: Mapping,
    expected: int,
    by: str | None = None,
) -> dict:
    """Add a sequential sample's next round: ``items`` after each assessor's last place, every stratum's
    inclusion probability set to ``inclusion[stratum]`` (the nested sample's n_h/N_h), the budget and details
    replaced, in one transaction; ``by``'s action in the history. Refused (nothing written) when the sample
    holds other than ``expected`` items by then (another round was added meanwhile) or an item is drawn twice."""
    for p in inclusion.values():
        if isinstance(p, bool) or not isinstance(p, int | float) or not math.isfinite(p) or not 0 < p <= 1:
            raise AssessError(f"sample {name!r}: inclusion probability must be in (0, 1], not {p!r}")
    with write(db):
        held = {(r["turn_id"], r["item_id"]): r for r in rows(db, "SELECT turn_id, item_id, assessor, position "
                "FROM sample_items WHERE sample = :sample", {"sample": name})}  # fmt: skip
        if len(held) != expected:
            raise AssessError(
                f"sample {name!r} holds {len(held)} items, not {expected}: another round was added meanwhile"
            )
        position: dict[str | None, int] = {}
        for r in held.values():
            position[r["assessor"]] = max(position.get(r["assessor"], 0), r["position"] + 1)
        records = []
        for it in items:
            if (it.turn_id, it.item_id) in held:
                raise AssessError(f"sample {name!r} holds {it.turn_id} {it.item_id} already")
            place = position.get(it.assessor, 0)
            position[it.assessor] = place + 1
            records.append({**it._asdict(), "sample": name, "inclusion": float(it.inclusion), "position": place})
        run_many(
            db,
            "UPDATE sample_items SET inclusion = :inclusion WHERE sample = :sample AND stratum = :stratum",
            [{"sample": name, "stratum": h, "inclusion": float(p)} for h, p in inclusion.items()],
        )
        if records:
            run_many(
                db,
                "INSERT INTO sample_items (sample, turn_id, item_id, stratum, inclusion, assessor, position) "
                "VALUES (:sample, :turn_id, :item_id, :stratum, :inclusion, :assessor, :position)",
                records,
            )
        run(
            db,
            "UPDATE samples SET budget = :budget, details = :details WHERE name = :name",
            {"name": name, "budget": len(held) + len(records), "details": json.dumps(dict(details), sort_keys=True)},
        )
        summary = {"sample": name, "items": len(held) + len(records), "added": len(records)}
        record_action(db, by, "assignment", f"sample {name}", None, summary, via="sequential round")
    return summary
