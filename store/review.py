"""Organizer review: progress per topic and assessor, judging speed, grade distributions,
disagreements between two sources and adjudication."""

from __future__ import annotations

import statistics
from datetime import datetime

from assess.errors import AssessError
from assess.tasks import GRADES, LABEL_KINDS, JudgingMode, Task
from store import labels
from store.db import Store, column, each, row, rows, value, write
from store.imports import ensure_source

BREAK_SECONDS = 300  # a gap longer than this between two labels is a pause, not judging time


def assessor_summary(db: Store, *, open_mode: bool = True) -> list[dict]:
    """Per assessor: progress over their queue (judged / total), passage labels, turns touched, grade
    counts 0..4, cannot-judge, PTKB labels, median and mean seconds per passage label."""
    from store.queue import load_queue

    out = []
    for name in column(db, "SELECT name FROM sources WHERE kind = 'assessor' ORDER BY name"):
        state = load_queue(db, name, open_mode=open_mode)
        progress = state.progress()
        grades = dict.fromkeys(GRADES.values, 0)
        for r in each(
            db,
            "SELECT grade, COUNT(*) AS n FROM passage_labels WHERE source = :source AND grade IS NOT NULL "
            "GROUP BY grade",
            {"source": name},
        ):
            grades[r["grade"]] = r["n"]
        counts = row(
            db,
            "SELECT COUNT(*) AS labels, COUNT(DISTINCT turn_id) AS turns, "
            "COUNT(*) FILTER (WHERE grade IS NULL) AS cannot FROM passage_labels WHERE source = :source",
            {"source": name},
        )
        ptkb = value(db, "SELECT COUNT(*) AS n FROM ptkb_labels WHERE source = :source", {"source": name})
        speed = seconds_per_label(db, name)
        out.append(
            {
                "assessor": name,
                "queue_judged": progress["judged"],
                "queue_total": progress["total"],
                "passage_labels": counts["labels"],
                "turns": counts["turns"],
                "cannot_judge": counts["cannot"] or 0,
                **{f"grade_{g}": grades[g] for g in GRADES.values},
                "ptkb_labels": ptkb,
                "median_seconds": speed["median"],
                "mean_seconds": speed["mean"],
            }
        )
    return out


def seconds_per_label(db: Store, source: str, task: str = "passage") -> dict:
    """Seconds between consecutive label writes of ``source`` for one task (from the history), pauses
    > 5 min left out."""
    stamps = [
        datetime.fromisoformat(at.replace("Z", "+00:00"))
        for at in column(
            db,
            "SELECT at FROM label_history WHERE source = :source AND label_table = :label_table "
            "AND via IS DISTINCT FROM 'bulk' AND (via IS NULL OR via != 'undo') ORDER BY id",
            {"source": source, "label_table": str(task)},
        )
    ]
    gaps = [(b - a).total_seconds() for a, b in zip(stamps, stamps[1:])]
    gaps = [g for g in gaps if 0 <= g <= BREAK_SECONDS]
    if not gaps:
        return {"n": 0, "median": None, "mean": None}
    return {"n": len(gaps), "median": statistics.median(gaps), "mean": statistics.fmean(gaps)}


def item_history(db: Store, source: str, item: str, kind: str = "passage") -> list[dict]:
    """Every change of one label, oldest first: ``at``, ``old``, ``new``, ``mode``, ``via``.

    ``item`` is written as in the history ('turn passage' for passages, 'turn statement' for PTKB,
    'turn key' for nuggets, e.g. '0_8 [3]', whose values are JSON with text, relevance and span).
    A label that arrived with its source's first bulk import has no history row of its own; its first
    entry is rebuilt from the import event (item '*'): the imported value is the old value of the
    item's first later change, or its current value if it never changed.
    """
    changes = rows(
        db,
        "SELECT at, old_value AS old, new_value AS new, mode, via FROM label_history "
        "WHERE source = :source AND label_table = :label_table AND item = :item ORDER BY id",
        {"source": source, "label_table": str(kind), "item": item},
    )
    if kind not in {t.value for t in LABEL_KINDS}:  # nuggets, duplicate decisions, gold responses: never bulk
        return changes
    imports = column(
        db,
        "SELECT at FROM label_history WHERE source = :source AND label_table = :label_table AND item = '*' "
        "AND via = 'bulk' ORDER BY id",
        {"source": source, "label_table": str(kind)},
    )
    if not imports or (changes and changes[0]["old"] is None):
        return changes  # no bulk import, or the item's own first row is its creation
    if changes:
        imported = changes[0]["old"]
    else:
        current = labels.get_by_history_item(db, kind, source, item)
        if current is None:
            return changes
        imported = labels.history_text(kind, current["value"])
    event = {"at": imports[0], "old": None, "new": imported, "mode": "import", "via": "bulk"}
    return [event] + changes


def topic_progress(db: Store, source: str | None = None) -> list[dict]:
    """Per conversation: pooled pairs and how many carry a label of ``source`` (any assessor if None)."""
    if source is None:
        cond, params = "s.kind = 'assessor'", {}
    else:
        cond, params = "s.name = :source", {"source": source}
    return rows(
        db,
        "SELECT t.conversation_id AS conversation, COUNT(*) AS pooled, "
        "COUNT(*) FILTER (WHERE EXISTS (SELECT 1 FROM sources s JOIN passage_labels l ON l.source = s.name "
        f"AND l.turn_id = p.turn_id AND l.passage_id = p.passage_id WHERE {cond})) AS judged "
        "FROM pool p JOIN turns t ON t.id = p.turn_id JOIN conversations c ON c.id = t.conversation_id "
        "GROUP BY t.conversation_id, c.rowid ORDER BY c.rowid",
        params,
    )


def disagreements(db: Store, a: str, b: str, *, limit: int = 500) -> list[dict]:
    """Passage items both sources labelled with different grades, largest difference first."""
    return rows(
        db,
        "SELECT la.turn_id, la.passage_id, la.grade AS grade_a, lb.grade AS grade_b, "
        "(SELECT grade FROM passage_labels x WHERE x.source = 'adjudication' AND x.turn_id = la.turn_id "
        " AND x.passage_id = la.passage_id) AS adjudicated "
        "FROM passage_labels la JOIN passage_labels lb ON lb.turn_id = la.turn_id AND lb.passage_id = la.passage_id "
        "WHERE la.source = :a AND lb.source = :b AND la.grade IS DISTINCT FROM lb.grade "
        "ORDER BY ABS(COALESCE(la.grade, -1) - COALESCE(lb.grade, -1)) DESC, la.turn_id, la.passage_id LIMIT :limit",
        {"a": a, "b": b, "limit": int(limit)},
    )


def adjudicate(db: Store, turn_id: str, passage_id: str, grade: int, *, by: str, source: str = "adjudication") -> None:
    """Record an adjudicated grade: a label of its own source (kind 'adjudication'), noting who decided (in
    the label's note and as an organizer action in the history)."""
    from store.accounts import record_action

    if grade is None:  # an adjudicator decides a grade; 'cannot judge' is not a decision
        raise AssessError(f"a grade is {GRADES.low}-{GRADES.high}, not None")
    GRADES.check(grade, what="an adjudicated grade")
    with write(db):
        ensure_source(db, source, "adjudication")
        labels.save(
            db,
            Task.PASSAGE,
            source,
            (turn_id, passage_id),
            grade,
            note=f"by {by}",
            mode=JudgingMode.ADJUDICATION.value,
            via="click",
        )
        record_action(db, by, "adjudication", f"{turn_id} {passage_id}", None, str(grade), via=source)
