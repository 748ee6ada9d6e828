"""Adaptive overlap: a plan's items get a second and third assessor only where grades disagree.

An adaptive plan (:func:`store.overlap.create_plan` with a margin) records every item of its turns with its
primary assessor (``overlap_items``, ``extra`` 0) and, as a planned plan does, gives a base share of them to
a second assessor at once (``overlap_decisions`` step 'base'). The rest follows the labels
(:func:`assess.queueing.adaptive_step`): when an item's first grade and the judge's differ by the margin, the
next assessor of the plan gets it ('judge'); when its human grades are all that far apart, the next one again
('humans', up to the plan's copies); when they still are with every copy judged, it is 'disputed' and goes to
the adjudication queue. An added assessor is the next in the plan's order after the last one given the item
(the base draw's rule), and the copy is an ``overlap_items`` row like any planned extra, so the queue spreads
it among their own turns. Decisions are never taken back (an undone label leaves them).

:func:`after_label` runs inside the write of every passage label (one probe of an index when the item is in no
adaptive plan of its assessor); :func:`advance` re-reads a whole plan (when the plan is made, and for a judge
whose labels came after the people's: ``python -m assess overlap --name N --advance``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from assess.queueing import adaptive_step
from store.db import Store, each, now, row, rows, run, write


def _plan(db: Store, name: str) -> dict:
    found = row(
        db, "SELECT name, assessors, copies, margin, judge FROM overlap_plans WHERE name = :name", {"name": name}
    )
    found["assessors"] = json.loads(found["assessors"])
    return found


def _items(db: Store, plan: str, item: tuple[str, str] | None = None) -> dict[tuple[str, str], dict]:
    """{(turn, item): {"given": {assessor: answer or MISSING}, "primary"}} of the plan (or one item of it)."""
    where, params = "i.plan = :plan", {"plan": plan}
    if item is not None:
        where += " AND i.turn_id = :turn AND i.item_id = :item"
        params.update(turn=item[0], item=item[1])
    out: dict[tuple[str, str], dict] = {}
    for r in each(
        db,
        "SELECT i.turn_id AS turn_id, i.item_id AS item_id, i.assessor AS assessor, i.extra AS extra, "
        "l.grade AS grade, l.source AS labelled FROM overlap_items i LEFT JOIN passage_labels l "
        "ON l.source = i.assessor AND l.turn_id = i.turn_id AND l.passage_id = i.item_id "
        f"WHERE {where} ORDER BY i.turn_id, i.item_id",
        params,
    ):
        entry = out.setdefault((r["turn_id"], r["item_id"]), {"given": {}, "primary": None})
        entry["given"][r["assessor"]] = r["grade"] if r["labelled"] is not None else _MISSING
        if not r["extra"]:
            entry["primary"] = r["assessor"]
    return out


_MISSING = object()


def _judge_grades(db: Store, plan: str, judge: str, item: tuple[str, str] | None) -> dict[tuple[str, str], int]:
    where, params = "i.plan = :plan AND i.extra = 0", {"plan": plan, "judge": judge}
    if item is not None:
        where += " AND i.turn_id = :turn AND i.item_id = :item"
        params.update(turn=item[0], item=item[1])
    return {
        (r["turn_id"], r["passage_id"]): r["grade"]
        for r in each(
            db,
            "SELECT l.turn_id AS turn_id, l.passage_id AS passage_id, l.grade AS grade FROM overlap_items i "
            "JOIN passage_labels l ON l.source = :judge AND l.turn_id = i.turn_id AND l.passage_id = i.item_id "
            f"WHERE {where} AND l.grade IS NOT NULL",
            params,
        )
    }


def _ordered(people: Sequence[str], primary: str, given) -> list[str]:
    """The assessors given an item, in the order they got it: the plan's order from the primary on."""
    start = people.index(primary)
    return [people[(start + k) % len(people)] for k in range(len(people)) if people[(start + k) % len(people)] in given]


def _decide(db: Store, plan: dict, item: tuple[str, str] | None = None) -> dict[str, int]:
    """Take every step due on the plan's items (or one item); {step: items} taken. Inside a write."""
    people = plan["assessors"]
    found = _items(db, plan["name"], item)
    judged = _judge_grades(db, plan["name"], plan["judge"], item) if plan["judge"] else {}
    taken = {"judge": 0, "humans": 0, "disputed": 0}
    for key, entry in found.items():
        if entry["primary"] is None:
            continue
        order = _ordered(people, entry["primary"], entry["given"])
        answers = [entry["given"][a] for a in order if entry["given"][a] is not _MISSING]
        step = adaptive_step(
            answers, len(order), judged.get(key), margin=plan["margin"], copies=min(plan["copies"], len(people))
        )
        if step is None:
            continue
        grades = {a: entry["given"][a] for a in order}
        if step == "judge":
            grades[plan["judge"]] = judged[key]
        added = None if step == "disputed" else people[(people.index(order[-1]) + 1) % len(people)]
        stored = run(
            db,
            "INSERT INTO overlap_decisions (plan, turn_id, item_id, step, assessor, grades, decided_at) "
            "VALUES (:plan, :turn, :item, :step, :assessor, :grades, :at) ON CONFLICT DO NOTHING",
            {
                "plan": plan["name"],
                "turn": key[0],
                "item": key[1],
                "step": step,
                "assessor": added,
                "grades": json.dumps(grades, sort_keys=True),
                "at": now(),
            },
        )
        if not stored:
            continue
        taken[step] += 1
        if added is not None:
            _give(db, plan["name"], added, key)
    return taken


def _give(db: Store, plan: str, assessor: str, item: tuple[str, str]) -> None:
    """A copy of ``item`` at the end of ``assessor``'s extra items of the plan (a block of its own)."""
    last = row(
        db,
        "SELECT MAX(block) AS block, MAX(position) AS position FROM overlap_items "
        "WHERE plan = :plan AND assessor = :assessor AND extra = 1",
        {"plan": plan, "assessor": assessor},
    )
    run(
        db,
        "INSERT INTO overlap_items (plan, assessor, turn_id, item_id, extra, block, position) "
        "VALUES (:plan, :assessor, :turn, :item, 1, :block, :position) ON CONFLICT DO NOTHING",
        {
            "plan": plan,
            "assessor": assessor,
            "turn": item[0],
            "item": item[1],
            "block": 0 if last["block"] is None else last["block"] + 1,
            "position": 0 if last["position"] is None else last["position"] + 1,
        },
    )


def advance(db: Store, plan: str) -> dict[str, int]:
    """Take every step due on an adaptive plan's items, in one transaction; {step: items taken}."""
    with write(db):
        return _decide(db, _plan(db, plan))


def after_label(db: Store, assessor: str, turn_id: str, item_id: str) -> None:
    """The steps a new passage label of ``assessor`` makes due, in the label's own transaction."""
    for r in rows(
        db,
        "SELECT i.plan AS plan FROM overlap_items i JOIN overlap_plans p ON p.name = i.plan "
        "WHERE i.assessor = :assessor AND i.turn_id = :turn AND i.item_id = :item AND p.margin IS NOT NULL",
        {"assessor": assessor, "turn": turn_id, "item": item_id},
    ):
        _decide(db, _plan(db, r["plan"]), (turn_id, item_id))


def record_base(db: Store, plan: str, seconds: dict[tuple[str, str], str]) -> None:
    """The base draw's items, each with the second assessor it went to (at the plan's making, in its write)."""
    at = now()
    for (turn, item), assessor in seconds.items():
        run(
            db,
            "INSERT INTO overlap_decisions (plan, turn_id, item_id, step, assessor, grades, decided_at) "
            "VALUES (:plan, :turn, :item, 'base', :assessor, '{}', :at)",
            {"plan": plan, "turn": turn, "item": item, "assessor": assessor, "at": at},
        )


def decisions(db: Store, plan: str | None = None, task: str = "passage") -> list[dict]:
    """Every decision of the adaptive plans of ``task`` (or one plan): plan, turn_id, item_id, step,
    assessor, grades (parsed), decided_at; in plan, turn, item order."""
    sql = (
        "SELECT d.plan AS plan, d.turn_id AS turn_id, d.item_id AS item_id, d.step AS step, d.assessor AS assessor, "
        "d.grades AS grades, d.decided_at AS decided_at FROM overlap_decisions d JOIN overlap_plans p "
        "ON p.name = d.plan WHERE p.task = :task"
    )
    params = {"task": task}
    if plan is not None:
        sql += " AND d.plan = :plan"
        params["plan"] = plan
    found = rows(db, sql + " ORDER BY d.plan, d.turn_id, d.item_id, d.decided_at", params)
    for r in found:
        r["grades"] = json.loads(r["grades"])
    return found


def primaries(db: Store, plan: str | None = None, task: str = "passage") -> dict[tuple[str, str], str]:
    """{(turn, item): its primary assessor} over the items of the adaptive plans of ``task`` (or one plan)."""
    sql = (
        "SELECT i.turn_id AS turn_id, i.item_id AS item_id, i.assessor AS assessor FROM overlap_items i "
        "JOIN overlap_plans p ON p.name = i.plan WHERE p.task = :task AND p.margin IS NOT NULL AND i.extra = 0"
    )
    params = {"task": task}
    if plan is not None:
        sql += " AND p.name = :plan"
        params["plan"] = plan
    return {(r["turn_id"], r["item_id"]): r["assessor"] for r in each(db, sql, params)}


def disputed(db: Store) -> list[tuple[str, str]]:
    """The passage items an adaptive plan routed to adjudication, in turn and item order."""
    return [
        (r["turn_id"], r["item_id"])
        for r in rows(
            db,
            "SELECT DISTINCT turn_id, item_id FROM overlap_decisions WHERE step = 'disputed' ORDER BY turn_id, item_id",
        )
    ]


def item_assessors(db: Store, turn_id: str, item_id: str) -> list[str]:
    """The assessors an adaptive plan gave a disputed item (what its adjudication screen shows besides the
    compared sources)."""
    return [
        r["assessor"]
        for r in rows(
            db,
            "SELECT DISTINCT i.assessor AS assessor FROM overlap_items i JOIN overlap_decisions d ON d.plan = i.plan "
            "AND d.turn_id = i.turn_id AND d.item_id = i.item_id AND d.step = 'disputed' "
            "WHERE i.turn_id = :turn AND i.item_id = :item ORDER BY i.assessor",
            {"turn": turn_id, "item": item_id},
        )
    ]
