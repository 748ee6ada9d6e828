"""Crowd NtR files imported as a study of their own: the study, its batches, answers and aggregate."""

from __future__ import annotations

import json
import secrets
from collections import defaultdict
from collections.abc import Sequence

from assess.crowd.files import CrowdNtrRow
from assess.crowd.guideline import default_guideline
from assess.crowd.imported import ImportPlan
from assess.tasks import JudgingMode
from store import db as sql
from store import labels as label_store
from store.crowd.aggregates import write_aggregate
from store.crowd.studies import add_batch
from store.db import Store, now, write
from store.sources import ensure_source


def nugget_ids(db: Store, source: str) -> dict[tuple[str, str], int]:
    """{(turn, nugget key): nugget id} of the nuggets of ``source``."""
    return {
        (n["turn_id"], n["key"]): n["id"]
        for n in sql.each(db, "SELECT id, turn_id, key FROM nuggets WHERE source = :source", {"source": source})
    }


def study_state(db: Store, study: str) -> dict | None:
    """The study's status and config (JSON), or None when there is no such study."""
    return sql.row(db, "SELECT status, config FROM crowd_studies WHERE name = :name", {"name": study})


def write_imported_study(
    db: Store, file: str, study: str, plan: ImportPlan, rows: Sequence[CrowdNtrRow], nuggets: dict, *, replace: bool
) -> tuple[dict, int]:
    """Write a checked crowd NtR file (``plan``: :func:`assess.crowd.imported.plan_ntr_import`) as the imported
    study ``study``, in one transaction (``replace``: the imported study of that name goes first): its items,
    batches and, for a file of worker answers, workers, assignments, answers and their majority labels; for
    an aggregated file, its labels as source ``crowd:<study>``. Returns the label summary and the number of
    items."""
    config, first, raw = plan.config, plan.first, plan.raw
    stamp = now()
    source = f"crowd:{study}"
    with write(db):
        if replace:
            sql.run(db, "DELETE FROM crowd_studies WHERE name = :name", {"name": study})
        sql.run(
            db,
            "INSERT INTO crowd_studies (name, task, source, config, guideline, secret, status, created_at) "
            "VALUES (:name, 'ntr', :source, :config, :guideline, :secret, 'imported', :at)",
            {
                "name": study,
                "source": source,
                "config": config.to_json(),
                "guideline": json.dumps({**default_guideline(config), "file": str(file)}),
                "secret": secrets.token_hex(16),
                "at": stamp,
            },
        )
        sql.run_many(
            db,
            "INSERT INTO runs (name, kind, file, imported_at) VALUES (:name, 'response', :file, :at) "
            "ON CONFLICT (name) DO NOTHING",
            [{"name": run_name, "file": str(file), "at": stamp} for run_name in sorted({r.run for r in rows})],
        )
        item_ids = {}
        for r in rows:
            pair = (r.turn_id, r.run, nuggets[(r.turn_id, r.nugget_key)])
            if pair not in item_ids:
                item_ids[pair] = sql.returning(
                    db,
                    "INSERT INTO crowd_items (study, turn_id, run, nugget_id) VALUES (:study, :turn, :run, :nugget) "
                    "RETURNING id",
                    {"study": study, "turn": pair[0], "run": pair[1], "nugget": pair[2]},
                )["id"]
        batch_ids = {}
        for number, label in enumerate(plan.batches, start=1):
            batch_ids[label] = add_batch(db, study, number, label)
        placed: dict[str, list[int]] = defaultdict(list)
        for r in rows:
            item = item_ids[(r.turn_id, r.run, nuggets[(r.turn_id, r.nugget_key)])]
            if item not in placed[r.batch]:
                placed[r.batch].append(item)
        sql.run_many(
            db,
            "INSERT INTO crowd_batch_items (batch_id, position, item_id, is_test) VALUES (:batch, :pos, :item, 0)",
            [
                {"batch": batch_ids[b], "pos": pos, "item": item}
                for b, items in placed.items()
                for pos, item in enumerate(items)
            ],
        )
        if raw:
            sql.run_many(
                db,
                "INSERT INTO crowd_workers (study, worker, platform, first_seen) VALUES (:study, :worker, 'import', :at)",
                [{"study": study, "worker": w, "at": stamp} for w in sorted({r.worker for r in rows})],
            )
            assignment = {}
            for b, w in sorted({(r.batch, r.worker) for r in rows}):
                assignment[(b, w)] = sql.returning(
                    db,
                    "INSERT INTO crowd_assignments (study, worker, batch_id, status, started_at, last_seen, "
                    "consented_at, completed_at) VALUES (:study, :worker, :batch, 'completed', :at, :at, :at, :at) "
                    "RETURNING id",
                    {"study": study, "worker": w, "batch": batch_ids[b], "at": stamp},
                )["id"]
            sql.run_many(
                db,
                "INSERT INTO crowd_answers (assignment_id, item_id, value, via, answered_at) "
                "VALUES (:assignment, :item, :value, 'import', :at)",
                [
                    {
                        "assignment": assignment[(r.batch, r.worker)],
                        "item": item_ids[(r.turn_id, r.run, nuggets[(r.turn_id, r.nugget_key)])],
                        "value": r.value,
                        "at": stamp,
                    }
                    for r in first.values()
                ],
            )
            summary = write_aggregate(db, study)
        else:
            ensure_source(db, source, "crowd", description=f"crowd NtR labels imported from {file}")
            for r in first.values():
                label_store.save_changed(
                    db,
                    config.label_task,
                    source,
                    (r.turn_id, nuggets[(r.turn_id, r.nugget_key)], r.run),
                    r.value,
                    mode=JudgingMode.IMPORT,
                    via=None,
                    extra=None if config.graded else {"batch": r.batch},
                )
            summary = {"source": source, "labels": len(first)}
    return summary, len(item_ids)
