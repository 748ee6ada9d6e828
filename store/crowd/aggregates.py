"""A study's aggregated labels written as its crowd label source."""

from __future__ import annotations

from collections import defaultdict

from assess.tasks import JudgingMode, Task, label_kind
from store import db as sql
from store import labels as label_store
from store.crowd.reports import aggregated_rows, machine_workers, study_items
from store.crowd.studies import get_study
from store.db import Store, write
from store.sources import ensure_source


def write_aggregate(db: Store, study: str) -> dict:
    """Write the study's majority labels as the label source ``crowd:<study>`` (ntr_labels, the
    graded ntr_support_labels of a graded NtR study, or response_labels; mode 'crowd', via
    'majority'), in one transaction; undecided items get no label (a label written by an earlier run
    is removed)."""
    s = get_study(db, study)
    task = s.config.label_task
    decided = [r for r in aggregated_rows(db, study) if r["label"] is not None]
    items = study_items(db, study)
    if task in (Task.NTR, Task.NTR_SUPPORT):
        by_item = {(r["turn_id"], items[r["item_id"]]["nugget_id"], r["run"]): r for r in decided}
    else:
        by_item = {(r["turn_id"], r["run"], r["criterion"]): r for r in decided}
    with write(db):
        ensure_source(
            db,
            s.source,
            "crowd",
            description=f"majority vote of crowd study {study} (qc {s.config.qc}, ties {s.config.tie})",
        )
        for item, r in by_item.items():
            extra = {"batch": r["batch"]} if task is Task.NTR else None  # ntr_support_labels keep no batch
            label_store.save_changed(
                db, task, s.source, item, r["label"], mode=JudgingMode.CROWD, via="majority", extra=extra
            )
        stale = [item for item in _labelled_items(db, task, s.source) if item not in by_item]
        for item in stale:
            label_store.delete(db, task, s.source, item)
    values = defaultdict(int)
    for r in decided:
        values[r["label"]] += 1
    return {
        "source": s.source,
        "labels": len(decided),
        "removed": len(stale),
        "values": dict(sorted(values.items())),
        "machines_left_out": sorted(machine_workers(db, study)),
    }


def _labelled_items(db: Store, task: Task, source: str) -> list[tuple]:
    """The items ``source`` has labels of, in the order of the table's key."""
    kind = label_kind(task)
    order = ", ".join(c for c in kind.conflict_columns if c != "source")
    return [
        tuple(r.values())
        for r in sql.each(
            db,
            f"SELECT {', '.join(kind.item_columns)} FROM {kind.table} WHERE source = :source ORDER BY {order}",
            {"source": source},
        )
    ]
