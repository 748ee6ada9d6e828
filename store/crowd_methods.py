"""A crowd study's labels aggregated by a method other than our majority vote (crowd-kit's Dawid-Skene,
MACE), written as the study's label source as :func:`store.crowd.write_aggregate` writes the majority."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from assess.errors import AssessError
from assess.tasks import JudgingMode, Task
from store import labels as label_store
from store.crowd import get_study, study_items
from store.db import Store, write
from store.sources import ensure_source


def write_labels(db: Store, study: str, labels: Mapping[int, int], *, method: str) -> dict:
    """Write ``labels`` {crowd item id: value} as the source ``crowd:<study>`` (mode 'crowd', via
    ``method``) in one transaction; labels of items not in ``labels`` are removed, as an undecided
    majority's are. Each label's ``via`` names the method that wrote it."""
    s = get_study(db, study)
    task = s.config.label_task
    items = study_items(db, study)
    unknown = sorted(set(labels) - set(items))
    if unknown:
        raise AssessError(f"items {unknown[:5]} are not items of crowd study {study!r}")

    def key(it: Mapping) -> tuple:
        if task in (Task.NTR, Task.NTR_SUPPORT):
            return (it["turn_id"], it["nugget_id"], it["run"])
        return (it["turn_id"], it["run"], it["criterion"])

    by_key = {key(items[i]): (items[i], value) for i, value in labels.items()}
    with write(db):
        ensure_source(
            db, s.source, "crowd", description=f"{method} (crowd-kit) of crowd study {study} (qc {s.config.qc})"
        )
        for item, (it, value) in by_key.items():
            extra = {"batch": it["batch"]} if task is Task.NTR else None  # ntr_support_labels keep no batch
            label_store.save_changed(db, task, s.source, item, value, mode=JudgingMode.CROWD, via=method, extra=extra)
        stale = sorted(label_store.labelled(db, task, s.source) - set(by_key))
        for item in stale:
            label_store.delete(db, task, s.source, item)
    values: dict[int, int] = defaultdict(int)
    for value in labels.values():
        values[value] += 1
    return {"source": s.source, "labels": len(by_key), "removed": len(stale), "values": dict(sorted(values.items()))}
