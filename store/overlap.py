"""Planned overlap: turns assigned round a group of assessors, with a share of items judged by two or three.

An organizer's plan (:func:`assess.queueing.plan_overlap`) gives every turn a primary assessor (an
assignment, as ``assign`` writes) and draws a share of the items (or whole turns) that the next one or two
assessors of the group judge too. Those extra items are kept here and spread through their queues
(:func:`assess.queueing.interleave`, by :func:`store.queue.queue_order`); their labels are ordinary
labels of each assessor, so the audit's human ceiling and the alternative annotator test read them as any
other. The plan records every judge of each drawn item, which is what the ceiling compares.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from assess.errors import AssessError
from assess.queueing import OVERLAP_UNITS, plan_overlap
from assess.tasks import Task, label_kind
from store import accounts, conversations, labels, overlap_adaptive, queue, sources
from store.db import Store, each, now, row, rows, run, run_many, write
from store.history import record_action

TASKS = (Task.PASSAGE.value, Task.PTKB.value)
"""The tasks whose queues are built from assigned turns (store.queue)."""

RULE = (
    "turns in queue order go round the assessors (turn i to assessor i mod A); round(share x units) units "
    "(items, or whole turns) drawn by random.Random(seed) also go to the copies - 1 assessors after the "
    "primary (wrapping); in each of their queues the extra blocks are spread evenly: block j after own item "
    "floor((j + 1) L / (E + 1)), moved on to the end of that item's turn"
)


def _require_accounts(db: Store, names: Sequence[str]) -> None:
    """With accounts on (any account exists), a plan names only enabled accounts: a queue planned for a name
    nobody can sign in as would never be judged (open mode has no accounts, so any name goes there)."""

    if not accounts.count(db):
        return
    missing = [n for n in names if not (acc := accounts.get(db, n)) or acc["disabled"]]
    if missing:
        raise AssessError(
            f"no enabled account {', '.join(map(repr, missing))}: with accounts on, overlap is planned for "
            "accounts only (python -m assess users list shows them)"
        )


def create_plan(
    db: Store,
    name: str,
    assessors: Sequence[str],
    *,
    topics: Sequence[str] = (),
    turns: Sequence[str] = (),
    share: float,
    copies: int = 2,
    unit: str = "item",
    seed: int = 0,
    task: str = "passage",
    by: str | None = None,
    margin: float | None = None,
    judge: str | None = None,
) -> dict:
    """Plan overlap over the pooled turns of ``topics`` and the single ``turns``, in one transaction: each
    turn assigned to its primary assessor, the drawn items recorded with every judge, ``by``'s action in the
    history. Returns ``{"plan", "task", "unit", "turns", "items", "chosen", "population", "copies",
    "assignments": {assessor: turns}, "extra": {assessor: items}}``.

    Refused (nothing written): a blank name or one in use, a task without turn queues, no turns, an unknown
    conversation or turn, an assessor name that cannot be signed in (with accounts on: a name that is no
    enabled account), and every refusal of
    :func:`assess.queueing.plan_overlap` (fewer assessors than copies, a share outside (0, 1], ...).

    With ``margin`` the plan is adaptive (store/overlap_adaptive.py): the share drawn goes to a second
    assessor at once (the base share), every other item only when the grades disagree by ``margin`` (with
    ``judge``'s), a third (``copies`` 3) when two people do; refused besides: a margin outside (0, 4], a task
    other than passages, whole turns, a judge with no passage labels or among the assessors.
    """

    name = (name or "").strip()
    if not name or any(c.isspace() for c in name):
        raise AssessError(f"a plan's name is a non-empty word without spaces, not {name!r}")
    if task not in TASKS:
        raise AssessError(f"overlap is planned for the {', '.join(TASKS)} queues, not {task!r}")
    if unit not in OVERLAP_UNITS:
        raise AssessError(f"the overlap unit is one of {', '.join(OVERLAP_UNITS)}, not {unit!r}")
    chosen_turns = conversations.turns_to_assign(db, list(topics), list(turns))
    if not chosen_turns:
        raise AssessError("an overlap plan needs turns: give --conversation or --turn (pooled turns)")
    items = queue.ordered_items(db, task, chosen_turns)
    if margin is not None:
        _check_adaptive(db, margin, judge, task, unit, assessors)
    elif judge is not None:
        raise AssessError("--judge belongs to an adaptive plan: give --adaptive --margin M too")
    try:  # an adaptive plan's base draw gives an item one more assessor; the rule adds the third
        base = 2 if margin is not None else copies
        plan = plan_overlap(items, list(assessors), share=share, copies=base, unit=unit, seed=seed)
        if copies not in (2, 3) or len(assessors) < copies:
            plan_overlap(items, list(assessors), share=share, copies=copies, unit=unit, seed=seed)  # its refusal
    except ValueError as exc:
        raise AssessError(str(exc)) from None
    with write(db):
        if row(db, "SELECT 1 AS taken FROM overlap_plans WHERE name = :name", {"name": name}):
            raise AssessError(f"an overlap plan named {name!r} exists already; choose another name")
        names = [sources.sign_in(db, a) for a in assessors]
        _require_accounts(db, names)
        primary = {turn: names[list(assessors).index(a)] for turn, a in plan.primary.items()}
        own: dict[str, list[str]] = {a: [] for a in names}
        for turn in chosen_turns:
            if turn in primary:
                own[primary[turn]].append(turn)
        run(
            db,
            "INSERT INTO overlap_plans (name, task, unit, share, copies, seed, assessors, chosen, population, rule, "
            "created_by, created_at, margin, judge) VALUES (:name, :task, :unit, :share, :copies, :seed, :assessors, "
            ":chosen, :population, :rule, :by, :at, :margin, :judge)",
            {
                "name": name,
                "task": label_kind(task).task.value,
                "unit": unit,
                "share": float(share),
                "copies": copies,
                "seed": seed,
                "assessors": json.dumps(names),
                "chosen": plan.chosen,
                "population": plan.population,
                "rule": RULE if margin is None else RULE + ADAPTIVE_RULE.format(margin=margin, judge=judge or "none"),
                "by": by,
                "at": now(),
                "margin": None if margin is None else float(margin),
                "judge": judge,
            },
        )
        records = []
        extra_count = {}
        for given, blocks in plan.extra.items():
            assessor = names[list(assessors).index(given)]
            position = 0
            for b, block in enumerate(blocks):
                for turn, item in block:
                    records.append((assessor, turn, item, 1, b, position))
                    records.append((primary[turn], turn, item, 0, b, position))
                    position += 1
            extra_count[assessor] = position
        run_many(
            db,
            "INSERT INTO overlap_items (plan, assessor, turn_id, item_id, extra, block, position) "
            "VALUES (:plan, :assessor, :turn_id, :item_id, :extra, :block, :position) ON CONFLICT DO NOTHING",
            [
                dict(zip(("assessor", "turn_id", "item_id", "extra", "block", "position"), r), plan=name)
                for r in records
            ],
        )
        if margin is not None:  # every item with its primary, for the rule to follow; the base draw's seconds
            run_many(
                db,
                "INSERT INTO overlap_items (plan, assessor, turn_id, item_id, extra, block, position) "
                "VALUES (:plan, :assessor, :turn_id, :item_id, 0, 0, :position) ON CONFLICT DO NOTHING",
                [
                    {"plan": name, "assessor": primary[t], "turn_id": t, "item_id": i, "position": n}
                    for n, (t, i) in enumerate(items)
                ],
            )
            overlap_adaptive.record_base(db, name, {(r[1], r[2]): r[0] for r in records if r[3]})
        for assessor, assigned in own.items():
            if assigned:
                conversations.assign(db, assessor, assigned, by=by)
        steps = overlap_adaptive.advance(db, name) if margin is not None else None
        summary = {
            "plan": name,
            "task": label_kind(task).task.value,
            "unit": unit,
            "turns": len(chosen_turns),
            "items": len(items),
            "chosen": plan.chosen,
            "population": plan.population,
            "copies": copies,
            "assignments": {a: len(t) for a, t in own.items()},
            "extra": extra_count,
            "adaptive": None if margin is None else {"margin": float(margin), "judge": judge, "steps": steps},
        }
        record_action(db, by, "assignment", f"overlap {name}", None, summary, via="overlap")
    return summary


ADAPTIVE_RULE = (
    "; adaptive (margin {margin}, judge {judge}): the drawn items are the base share (copies 2); any other item "
    "goes to the next assessor when its first grade and the judge's differ by >= margin, an item to the next "
    "again when all its human grades differ pairwise by >= margin (up to copies), and to adjudication when they "
    "still do with every copy judged"
)


def _check_adaptive(db: Store, margin, judge: str | None, task: str, unit: str, assessors: Sequence[str]) -> None:
    if isinstance(margin, bool) or not isinstance(margin, int | float) or not 0 < margin <= 4:
        raise AssessError(f"--margin: a grade difference in (0, 4], not {margin!r}")
    if task != Task.PASSAGE.value or unit != "item":
        raise AssessError(f"an adaptive plan decides passage items one by one, not {task} {unit}s")
    if judge is not None:
        if judge in assessors:
            raise AssessError(f"--judge {judge!r} is also an assessor of the plan: the judge is another source")
        if judge not in (known := labels.sources(db, "passage")):
            raise AssessError(
                f"--judge {judge!r} has no passage labels; sources with passage labels: {', '.join(known) or 'none'}"
            )


def plans(db: Store, task: str | None = None) -> list[dict]:
    """Every overlap plan (oldest first): name, task, unit, share, copies, seed, assessors (parsed), chosen,
    population, rule, who, when."""
    sql = (
        "SELECT name, task, unit, share, copies, seed, assessors, chosen, population, rule, created_by, created_at, "
        "margin, judge FROM overlap_plans"
    )
    params = {}
    if task is not None:
        sql += " WHERE task = :task"
        params["task"] = task
    found = rows(db, sql + " ORDER BY created_at, name", params)
    for r in found:
        r["assessors"] = json.loads(r["assessors"])
    return found


def planned_judges(db: Store, task: str = "passage", plan: str | None = None) -> dict[tuple[str, str], list[str]]:
    """{(turn, item): the assessors planned to judge it} over the items drawn for overlap (of one plan, or
    every plan of ``task``); an unknown plan is an error. Of an adaptive plan only the base share counts, with
    the two assessors the draw gave it: the items and assessors its rule added were chosen because grades
    disagree (:func:`store.overlap_adaptive.decisions` lists them)."""
    if plan is not None and not row(db, "SELECT 1 AS known FROM overlap_plans WHERE name = :name", {"name": plan}):
        raise AssessError(f"no overlap plan named {plan!r}")
    sql = (
        "SELECT i.turn_id AS turn_id, i.item_id AS item_id, i.assessor AS assessor FROM overlap_items i "
        "JOIN overlap_plans p ON p.name = i.plan WHERE p.task = :task AND (p.margin IS NULL OR EXISTS ("
        "SELECT 1 FROM overlap_decisions b WHERE b.plan = i.plan AND b.turn_id = i.turn_id AND b.item_id = i.item_id "
        "AND b.step = 'base') AND NOT EXISTS (SELECT 1 FROM overlap_decisions d WHERE d.plan = i.plan "
        "AND d.turn_id = i.turn_id AND d.item_id = i.item_id AND d.assessor = i.assessor AND d.step <> 'base'))"
    )
    params = {"task": task}
    if plan is not None:
        sql += " AND p.name = :plan"
        params["plan"] = plan
    out: dict[tuple[str, str], list[str]] = {}
    for r in each(db, sql + " ORDER BY i.turn_id, i.item_id, i.assessor", params):
        judges = out.setdefault((r["turn_id"], r["item_id"]), [])
        if r["assessor"] not in judges:
            judges.append(r["assessor"])
    return out


def assessor_names(db: Store) -> list[str]:
    """Every assessor source, by name (whom a plan may name without signing anyone new in)."""
    return [r["name"] for r in rows(db, "SELECT name FROM sources WHERE kind = 'assessor' ORDER BY name")]
