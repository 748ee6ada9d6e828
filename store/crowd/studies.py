"""Crowd studies: creating one from stored responses and nuggets (its items, hidden tests and batches), reading
it, opening or closing it, and the organizer's decision on a worker."""

from __future__ import annotations

import json
import secrets
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from assess.crowd.guideline import merge_guideline
from assess.crowd.rules import (
    KnownAnswer,
    StudyConfig,
    check_study_name,
    demo_config,
    demo_known,
    demo_name,
    make_batches,
)
from assess.errors import AssessError, UnknownItem
from assess.tasks import Task
from store import db as sql
from store.db import Store, now, write


class Study(NamedTuple):
    name: str
    task: str
    source: str
    config: StudyConfig
    guideline: dict
    status: str


def get_study(db: Store, name: str) -> Study:
    """The study ``name`` (settings and guideline); AssessError when there is none."""
    found = sql.row(
        db, "SELECT name, task, source, config, guideline, status FROM crowd_studies WHERE name = :name", {"name": name}
    )
    if found is None:
        raise UnknownItem(f"there is no crowd study {name!r}")
    return Study(
        found["name"],
        found["task"],
        found["source"],
        StudyConfig.from_json(found["config"]),
        json.loads(found["guideline"]),
        found["status"],
    )


def list_studies(db: Store) -> list[dict]:
    """Every study (name, task, status, source, creation time) and whether it is a graded NtR study."""
    return [
        {**r, "graded": StudyConfig.from_json(r.pop("config")).graded}
        for r in sql.rows(
            db, "SELECT name, task, status, source, created_at, config FROM crowd_studies ORDER BY created_at"
        )
    ]


def _candidates(db: Store, task: str, nugget_source: str, criteria: Sequence[str]) -> list[tuple]:
    """Every possible item of the stored data: (turn, run, nugget id, nugget key, criterion), in
    conversation, turn, run, nugget order."""
    responses = [
        (r["turn_id"], r["run"], r["conversation_id"])
        for r in sql.each(
            db,
            "SELECT r.turn_id AS turn_id, r.run AS run, t.conversation_id AS conversation_id FROM responses r "
            "JOIN turns t ON t.id = r.turn_id JOIN conversations c ON c.id = t.conversation_id "
            "ORDER BY c.rowid, t.position, r.run",
        )
    ]
    if task == Task.RESPONSE:
        return [(turn, run_, None, None, c, conv) for turn, run_, conv in responses for c in criteria]
    nuggets = defaultdict(list)
    for n in sql.each(
        db, "SELECT id, turn_id, key FROM nuggets WHERE source = :source ORDER BY id", {"source": nugget_source}
    ):
        nuggets[n["turn_id"]].append((n["id"], n["key"]))
    return [(turn, run_, nid, key, None, conv) for turn, run_, conv in responses for nid, key in nuggets[turn]]


def create_study(
    db: Store,
    name: str,
    config: StudyConfig,
    *,
    runs: Sequence[str] | None = None,
    turns: Sequence[str] | None = None,
    conversations: Sequence[str] | None = None,
    nugget_source: str = "gold",
    known: Iterable[KnownAnswer] = (),
    guideline: dict | None = None,
) -> dict:
    """Create a study from stored data, in one transaction: the items (NtR: each chosen run's response
    x each gold nugget of ``nugget_source`` for that turn; response quality: each response x each
    criterion), the known-answer items as hidden tests (one per batch, seeded), and the batches.

    Known-answer items are used only as tests (they are not regular items of any batch).
    """
    check_study_name(name)
    if sql.row(db, "SELECT 1 AS one FROM crowd_studies WHERE name = :name", {"name": name}):
        raise AssessError(f"a crowd study {name!r} exists already; choose another name")
    known = list(known)
    everything = _candidates(db, config.task, nugget_source, config.criteria)
    if not everything:
        what = f"responses and nuggets of source {nugget_source!r}" if config.task == "ntr" else "responses"
        raise AssessError(f"no items: the store has no {what} (import them first)")
    for label, wanted, position in (("run", runs, 1), ("turn", turns, 0), ("conversation", conversations, 5)):
        present = {c[position] for c in everything}
        missing = sorted(set(wanted or ()) - present)
        if missing:
            raise AssessError(
                f"{label} {missing[0]!r} has no stored items to judge (e.g. {', '.join(sorted(present)[:3])})"
            )
    by_key = {(c[0], c[1], c[3] if config.task == "ntr" else c[4]): c for c in everything}
    tests = {}
    for k in known:
        item = by_key.get((k.turn_id, k.run, k.key))
        where = f"line {k.line}: " if k.line else ""
        if item is None:
            raise AssessError(f"{where}known answer {k.turn_id} {k.run} {k.key}: no such item in the stored data")
        if k.value not in config.scale:
            raise AssessError(
                f"{where}known answer {k.turn_id} {k.run} {k.key}: value {k.value} is not on the "
                f"scale {list(config.scale)}"
            )
        tests[item] = k.value
    if config.qc != "none" and not tests:
        raise AssessError(
            f"the qc rule {config.qc!r} needs known-answer items (--known or --known-file), or choose --qc none"
        )
    if config.qc == "known-bad" and not any(v < config.bad_threshold for v in tests.values()):
        raise AssessError(f"the known-bad rule needs a known answer below {config.bad_threshold}")
    regular = [
        c
        for c in everything
        if c not in tests
        and (not runs or c[1] in runs)
        and (not turns or c[0] in turns)
        and (not conversations or c[5] in conversations)
    ]
    if not regular:
        raise AssessError("no items left to judge after the filters and the known-answer items")
    guide = merge_guideline(config, guideline)
    stamp = now()
    with write(db):
        sql.run(
            db,
            "INSERT INTO crowd_studies (name, task, source, config, guideline, secret, status, created_at) "
            "VALUES (:name, :task, :source, :config, :guideline, :secret, 'open', :at)",
            {
                "name": name,
                "task": config.task,
                "source": f"crowd:{name}",
                "config": config.to_json(),
                "guideline": json.dumps(guide),
                "secret": secrets.token_hex(16),
                "at": stamp,
            },
        )
        ids = {}
        for cand in [*regular, *tests]:
            ids[cand] = sql.returning(
                db,
                "INSERT INTO crowd_items (study, turn_id, run, nugget_id, criterion, known_answer) "
                "VALUES (:study, :turn, :run, :nugget, :criterion, :known) RETURNING id",
                {
                    "study": name,
                    "turn": cand[0],
                    "run": cand[1],
                    "nugget": cand[2],
                    "criterion": cand[4],
                    "known": tests.get(cand),
                },
            )["id"]
        batches = make_batches(
            [ids[x] for x in regular], [ids[x] for x in tests], batch_size=config.batch_size, seed=config.seed
        )
        for number, batch in enumerate(batches, start=1):
            bid = add_batch(db, name, number, str(number))
            sql.run_many(
                db,
                "INSERT INTO crowd_batch_items (batch_id, position, item_id, is_test) VALUES (:batch, :pos, :item, :test)",
                [
                    {"batch": bid, "pos": pos, "item": item, "test": int(is_test)}
                    for pos, (item, is_test) in enumerate(batch)
                ],
            )
    return {
        "study": name,
        "task": config.task,
        "items": len(regular),
        "tests": len(tests),
        "batches": len(batches),
        "k": config.k,
        "assignments_needed": len(batches) * config.k,
        "source": f"crowd:{name}",
    }


def create_demo_study(db: Store, task: str = "ntr", name: str | None = None, **overrides) -> dict:
    """The demo study on the embedded demo: NtR over all 3 runs x 12 turns x gold nuggets (186 pairs,
    19 batches, 6 obvious known-answer items as tests; ``graded=True``: the same items answered
    support / partial support / no support, study demo-graded), or response quality (relevance and
    completeness of the 36 responses, 3 known-bad tests)."""
    graded = bool(overrides.get("graded"))
    return create_study(
        db,
        name or demo_name(task, graded=graded),
        demo_config(task, **overrides),
        nugget_source="gold",
        known=demo_known(task, graded=graded),
    )


def set_status(db: Store, study: str, status: str) -> None:
    """Open or close a study (a closed study gives no new batches; started ones can be finished)."""
    if status not in ("open", "closed"):
        raise AssessError(f"status is open or closed, not {status!r}")
    get_study(db, study)
    with write(db):
        sql.run(
            db,
            "UPDATE crowd_studies SET status = :status WHERE name = :study AND status != 'imported'",
            {"status": status, "study": study},
        )


def set_decision(db: Store, study: str, worker: str, decision: str | None) -> None:
    """Record the organizer's approve/reject decision (rejected workers' labels are left out)."""
    if decision not in ("approved", "rejected", None):
        raise AssessError(f"decision is approved or rejected, not {decision!r}")
    with write(db):
        changed = sql.run(
            db,
            "UPDATE crowd_workers SET decision = :decision WHERE study = :study AND worker = :worker",
            {"decision": decision, "study": study, "worker": worker},
        )
        if changed == 0:
            raise UnknownItem(f"no worker {worker!r} in study {study!r}")


def add_batch(db: Store, study: str, number: int, label: str) -> int:
    """Add batch ``number`` (shown as ``label``) to ``study`` inside the caller's write; its id."""
    return sql.returning(
        db,
        "INSERT INTO crowd_batches (study, number, label) VALUES (:study, :number, :label) RETURNING id",
        {"study": study, "number": number, "label": label},
    )["id"]
