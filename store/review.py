"""Organizer review: progress per topic and assessor, judging speed, grade distributions,
disagreements between two sources and adjudication."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from datetime import datetime

from assess.tasks import GRADES, LABEL_KINDS, JudgingMode, Label, Shown, SourceKind, Task, source_kind
from store import labels, overlap_adaptive
from store.db import Store, column, each, row, rows, tuples, write
from store.history import actions, record_action
from store.prejudgments import rationale
from store.queue import queue_progress_many
from store.settings import get_setting, set_setting
from store.sources import ensure_source

BREAK_SECONDS = 300  # a gap longer than this between two labels is a pause, not judging time


# Every assessor's labels: an IN list, which SQLite reads source by source through the primary key (a join on
# sources lets its planner scan the whole label table and look each row's source up).
_ASSESSORS = "SELECT name FROM sources WHERE kind = 'assessor'"
_ASSESSOR_LABELS = f"FROM {{table}} l WHERE l.source IN ({_ASSESSORS})"


def assessor_summary(db: Store, *, open_mode: bool = True) -> list[dict]:
    """Per assessor: progress over their queue (judged / total), passage labels, turns touched, grade
    counts 0..4, cannot-judge, PTKB labels, median and mean seconds per passage label.

    Each figure is one grouped query over every assessor's labels (their primary key starts with the
    source), not a few queries per assessor; the queues' progress is :func:`store.queue.queue_progress_many`."""
    names = column(db, "SELECT name FROM sources WHERE kind = 'assessor' ORDER BY name")
    passages = _ASSESSOR_LABELS.format(table="passage_labels")
    grades: dict[str, dict] = {name: dict.fromkeys(GRADES.values, 0) for name in names}
    for r in each(
        db, f"SELECT l.source, l.grade, COUNT(*) AS n {passages} AND l.grade IS NOT NULL GROUP BY l.source, l.grade"
    ):
        grades[r["source"]][r["grade"]] = r["n"]
    counts = {
        r["source"]: r
        for r in each(
            db,
            "SELECT l.source, COUNT(*) AS labels, COUNT(DISTINCT l.turn_id) AS turns, "
            f"COUNT(*) FILTER (WHERE l.grade IS NULL) AS cannot {passages} GROUP BY l.source",
        )
    }
    ptkb = {
        r["source"]: r["n"]
        for r in each(
            db, f"SELECT l.source, COUNT(*) AS n {_ASSESSOR_LABELS.format(table='ptkb_labels')} GROUP BY l.source"
        )
    }
    speeds = _seconds_per_label(db, f"h.source IN ({_ASSESSORS})", {}, "passage")
    progress = queue_progress_many(db, names, open_mode=open_mode)
    out = []
    for name in names:
        judged, total = progress[name]
        found = counts.get(name, {})
        speed = speeds.get(name, _NO_SPEED)
        out.append(
            {
                "assessor": name,
                "queue_judged": judged,
                "queue_total": total,
                "passage_labels": found.get("labels", 0),
                "turns": found.get("turns", 0),
                "cannot_judge": found.get("cannot") or 0,
                **{f"grade_{g}": grades[name][g] for g in GRADES.values},
                "ptkb_labels": ptkb.get(name, 0),
                "median_seconds": speed["median"],
                "mean_seconds": speed["mean"],
            }
        )
    return out


_NO_SPEED = {"n": 0, "median": None, "mean": None}


def _seconds_per_label(db: Store, which: str, params: dict, task: str) -> dict[str, dict]:
    """:func:`seconds_per_label` of every source matching ``which`` (a condition on ``label_history h``), one query."""
    stamps: dict[str, list[datetime]] = {}
    _, found = tuples(  # a bulk read: a campaign's history holds every assessor's every label
        db,
        f"SELECT h.source, h.at FROM label_history h WHERE {which} AND h.label_table = :label_table "
        "AND h.via IS DISTINCT FROM 'bulk' AND (h.via IS NULL OR h.via != 'undo') ORDER BY h.source, h.id",
        {**params, "label_table": str(task)},
    )
    for source, at in found:
        stamps.setdefault(source, []).append(datetime.fromisoformat(at.replace("Z", "+00:00")))
    out = {}
    for source, times in stamps.items():
        gaps = [(b - a).total_seconds() for a, b in zip(times, times[1:])]
        gaps = [g for g in gaps if 0 <= g <= BREAK_SECONDS]
        if gaps:
            out[source] = {"n": len(gaps), "median": statistics.median(gaps), "mean": statistics.fmean(gaps)}
    return out


def seconds_per_label(db: Store, source: str, task: str = "passage") -> dict:
    """Seconds between consecutive label writes of ``source`` for one task (from the history), pauses
    > 5 min left out."""
    return _seconds_per_label(db, "h.source = :source", {"source": source}, task).get(source, dict(_NO_SPEED))


def topic_progress(db: Store, source: str | None = None) -> list[dict]:
    """Per conversation: pooled pairs and how many carry a label of ``source`` (any assessor if None).

    Two aggregates joined on the conversation, not a subquery per pooled pair: the labelled pairs are read
    from the chosen sources' labels (the primary key starts with the source) once, each pair once."""
    if source is None:
        cond, params = "s.kind = 'assessor'", {}
    else:
        cond, params = "s.name = :source", {"source": source}
    return rows(
        db,
        "SELECT c.id AS conversation, pooled.n AS pooled, COALESCE(judged.n, 0) AS judged FROM conversations c "
        "JOIN (SELECT t.conversation_id, COUNT(*) AS n FROM pool p JOIN turns t ON t.id = p.turn_id "
        "GROUP BY t.conversation_id) pooled ON pooled.conversation_id = c.id "
        "LEFT JOIN (SELECT t.conversation_id, COUNT(*) AS n FROM (SELECT DISTINCT l.turn_id, l.passage_id "
        f"FROM passage_labels l WHERE l.source IN (SELECT s.name FROM sources s WHERE {cond})) j "
        "JOIN pool p ON p.turn_id = j.turn_id AND p.passage_id = j.passage_id JOIN turns t ON t.id = p.turn_id "
        "GROUP BY t.conversation_id) judged ON judged.conversation_id = c.id "
        "ORDER BY c.rowid",
        params,
    )


def progress_version(db: Store) -> tuple:
    """Changes whenever :func:`assessor_summary` or :func:`topic_progress` may answer differently: the label
    history, the pool, the turns, the sources, accounts (who is listed), assignments, samples and overlap plans.
    Every label change writes a history row (a key press, an undo, a rewrite; a source's first bulk import its one
    event, :data:`store.labels.BULK_EVENT`), so the history's newest id stands for the labels: counting them per
    assessor read every label on each run of /review (0.2-0.5 s at ten times iKAT 2024). A label pressed again with
    the same value writes no history; the timeline shows it at its earlier hour until the next change."""
    found = row(
        db,
        "SELECT (SELECT MAX(id) FROM label_history) AS history, (SELECT COUNT(*) FROM pool) AS pooled, "
        "(SELECT MAX(added_at) FROM pool) AS pooled_at, (SELECT COUNT(*) FROM turns) AS turns, "
        "(SELECT COUNT(*) FROM ptkb_statements) AS statements, (SELECT COUNT(*) FROM sources) AS sources, "
        "(SELECT COUNT(*) FROM assignments) AS assigned, (SELECT MAX(assigned_at) FROM assignments) AS assigned_at, "
        "(SELECT COUNT(*) FROM sample_items) AS sampled, (SELECT COUNT(*) FROM overlap_items) AS overlapping, "
        "(SELECT COUNT(*) FROM accounts) AS accounts, (SELECT MAX(changed_at) FROM accounts) AS accounts_at",
    )
    return tuple(found.values())


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


ADJUDICATION = "adjudication"
"""The source of adjudicated labels (kind 'adjudication')."""


def _in_list(names: Sequence[str], prefix: str = "s") -> tuple[str, dict]:
    params = {f"{prefix}{i}": str(n) for i, n in enumerate(names)}
    return ", ".join(":" + k for k in params) or "NULL", params


def adjudication_order(db: Store, sources: Sequence[str]) -> list[tuple[str, str]]:
    """The passage items an adaptive overlap plan found disputed (store/overlap_adaptive.py), first, then the
    items at least two of ``sources`` labelled differently ('cannot judge' differs from every grade), as a queue:
    conversation import order, turn position, passage id."""
    listed, params = _in_list(sources)
    found = rows(
        db,
        "SELECT l.turn_id, l.passage_id FROM passage_labels l JOIN turns t ON t.id = l.turn_id "
        "JOIN conversations c ON c.id = t.conversation_id "
        f"WHERE l.source IN ({listed}) GROUP BY l.turn_id, l.passage_id, c.rowid, t.position "
        "HAVING COUNT(*) >= 2 AND (COUNT(DISTINCT l.grade) > 1 OR (COUNT(l.grade) BETWEEN 1 AND COUNT(*) - 1)) "
        "ORDER BY c.rowid, t.position, l.passage_id",
        params,
    )
    routed = overlap_adaptive.disputed(db)
    return list(dict.fromkeys([*routed, *((r["turn_id"], r["passage_id"]) for r in found)]))


def adjudicated(db: Store, source: str = ADJUDICATION) -> frozenset:
    """The passage items that hold an adjudicated label (a grade or 'cannot judge')."""
    return labels.labelled(db, Task.PASSAGE, source)


def item_labels(db: Store, turn_id: str, passage_id: str, sources: Sequence[str]) -> list[Label]:
    """Each of ``sources``' label of one passage item, in the order given (value None: cannot judge), an LLM
    source's with its raw answer as the rationale; sources without a label are left out."""
    listed, params = _in_list(sources)
    found = {
        r["source"]: r
        for r in rows(
            db,
            f"SELECT source, grade, note, mode, via FROM passage_labels WHERE source IN ({listed}) "
            "AND turn_id = :turn_id AND passage_id = :passage_id",
            {**params, "turn_id": turn_id, "passage_id": passage_id},
        )
    }
    out = []
    for source in sources:
        if source in found:
            said = (
                rationale(db, source, Task.PASSAGE, turn_id, passage_id)
                if source_kind(source) is SourceKind.LLM
                else None
            )
            r = found[source]
            out.append(
                Label(
                    Task.PASSAGE,
                    source,
                    (turn_id, passage_id),
                    r["grade"],
                    r["note"],
                    r["mode"],
                    r["via"],
                    rationale=said,
                )
            )
    return out


def _action_value(grade: int | None) -> str:
    return "cannot-judge" if grade is None else str(grade)


def adjudicate(
    db: Store,
    turn_id: str,
    passage_id: str,
    grade: int | None,
    *,
    by: str,
    reason: str | None = None,
    source: str = ADJUDICATION,
    expected: Shown | None = None,
) -> None:
    """Record an adjudicated grade (None: the adjudicator cannot judge it, e.g. no text): a label of its own
    source (kind 'adjudication') whose note names who decided and their reason ("by NAME: reason"), and an
    organizer action in the history naming who, the label before and after. ``expected``: what the page showed
    of the adjudicated label (:func:`store.labels.save`): a decision stored meanwhile by another adjudicator or
    tab is not replaced silently (:class:`store.labels.StaleLabel`, naming who decided it)."""
    if grade is not None:
        GRADES.check(grade, what="an adjudicated grade")
    reason = (reason or "").strip() or None
    with write(db):
        ensure_source(db, source, "adjudication")
        before = labels.get(db, Task.PASSAGE, source, (turn_id, passage_id))
        if expected is not None and expected != Shown.of(before):  # the row this write reads already
            stored = row(
                db,
                "SELECT updated_at FROM passage_labels WHERE source = :source AND turn_id = :turn_id "
                "AND passage_id = :passage_id",
                {"source": source, "turn_id": turn_id, "passage_id": passage_id},
            )
            decider = (before.note or "").removeprefix("by ").split(": ", 1)[0] if before is not None else source
            raise labels.StaleLabel(
                LABEL_KINDS[Task.PASSAGE], decider or source, before, stored and stored["updated_at"]
            )
        labels.save(
            db,
            Task.PASSAGE,
            source,
            (turn_id, passage_id),
            grade,
            note=adjudication_note(by, reason),
            mode=JudgingMode.ADJUDICATION.value,
            via="click",
            expected=expected,
        )
        old = None if before is None else _action_value(before.value)
        item = LABEL_KINDS[Task.PASSAGE].key.encode((turn_id, passage_id))
        record_action(db, by, "adjudication", item, old, _action_value(grade), via=source)


def undo_adjudication(db: Store, by: str, source: str = ADJUDICATION) -> tuple[str, str] | None:
    """Revert ``by``'s latest adjudication not yet undone whose label still stands (another adjudicator's later
    change of the item is left alone); return the (turn, passage) it touched. Repeated undos walk further back.
    The undo is itself an organizer action (via 'undo')."""
    with write(db):
        mine = [a for a in actions(db, "adjudication") if a["by"] == by and a["via"] in (source, "undo")]
        pending_undos = 0
        for action in reversed(mine):
            if action["via"] == "undo":
                pending_undos += 1
                continue
            if pending_undos:
                pending_undos -= 1
                continue
            turn_id, passage_id = LABEL_KINDS[Task.PASSAGE].key.decode(action["item"])
            current = labels.get(db, Task.PASSAGE, source, (turn_id, passage_id))
            if current is None or _action_value(current.value) != action["new"]:
                continue  # changed since by someone else (or gone): not this person's to undo
            old = action["old"]
            if old is None:
                labels.delete(db, Task.PASSAGE, source, (turn_id, passage_id))
            else:
                restored = None if old == "cannot-judge" else int(old)
                labels.save(
                    db,
                    Task.PASSAGE,
                    source,
                    (turn_id, passage_id),
                    restored,
                    mode=JudgingMode.ADJUDICATION.value,
                    via="undo",
                )
            record_action(db, by, "adjudication", action["item"], action["new"], old, via="undo")
            return turn_id, passage_id
    return None


_ADJ_SOURCES, _ADJ_BLIND = "adjudication_sources", "adjudication_blind"


def adjudication_settings(db: Store) -> tuple[list[str] | None, bool]:
    """The organizer's choice for the adjudication queue: the sources compared (None: every source of
    passage labels but the adjudication itself) and whether adjudicators see the sources' names (False)
    or only letters (True)."""
    import json

    chosen = get_setting(db, _ADJ_SOURCES, "")
    return (json.loads(chosen) if chosen else None), get_setting(db, _ADJ_BLIND, "0") == "1"


def set_adjudication_settings(db: Store, sources: Sequence[str] | None, blind: bool, *, by: str | None) -> None:
    """Keep the adjudication queue's sources and blindness (an organizer action in the history)."""
    import json

    chosen = "" if sources is None else json.dumps([str(s) for s in sources])
    with write(db):
        before = adjudication_settings(db)
        set_setting(db, _ADJ_SOURCES, chosen)
        set_setting(db, _ADJ_BLIND, "1" if blind else "0")
        after = adjudication_settings(db)
        if after != before:
            record_action(db, by, "judging-mode", "adjudication", list(before), list(after), via="set")


def set_reason(db: Store, turn_id: str, passage_id: str, reason: str, *, by: str, source: str = ADJUDICATION) -> bool:
    """The reason of an item's adjudicated label, typed after its grade (the note names ``by``); False when
    the item has no adjudicated label yet."""
    reason = (reason or "").strip()
    return labels.set_note(db, Task.PASSAGE, source, (turn_id, passage_id), adjudication_note(by, reason))


def adjudication_note(by: str, reason: str | None) -> str:
    """The note of an adjudicated label: who decided and their reason ("by NAME: reason")."""
    return f"by {by}" + (f": {reason}" if reason else "")


def adjudication_reason(note: str | None, by: str) -> str:
    """The reason ``by`` gave in an adjudicated label's note (:func:`adjudication_note`); "" when someone
    else decided it or no reason was given."""
    note = note or ""
    if note == f"by {by}" or note.startswith(f"by {by}: "):
        return note.removeprefix(f"by {by}").removeprefix(": ")
    return ""


# ------------------------------------------------------------------------------------------- active time


def timed_version(db: Store) -> tuple:
    """Changes whenever :func:`timed_events` may: a label event (the history's newest id; a replaced passage text
    is a history row too) or a passage text stored where there was none."""
    found = row(
        db,
        "SELECT (SELECT MAX(id) FROM label_history) AS history, "
        "(SELECT COUNT(*) FROM passages WHERE text IS NOT NULL) AS texts",
    )
    return tuple(found.values())


def timed_events(db: Store, *, assessor: str | None = None) -> list[dict]:
    """Every assessor's label events (from the history, oldest first; one assessor's with ``assessor``) that
    carry an active time: assessor, task, item (as the history spells it), value (new), mode, active_ms,
    guideline_version, at, and for passage events ``length``, the passage text's length in characters (None:
    no text stored). Undos carry no time; bulk imports none either."""
    sql = (
        "SELECT h.source AS assessor, h.label_table AS task, h.item AS item, h.new_value AS value, h.mode AS mode, "
        "h.active_ms AS active_ms, h.guideline_version AS guideline_version, h.at AS at "
        "FROM label_history h JOIN sources s ON s.name = h.source AND s.kind = 'assessor' "
        "WHERE h.active_ms IS NOT NULL"
    )
    params: dict[str, str] = {}
    if assessor is not None:
        sql, params = sql + " AND h.source = :assessor", {"assessor": assessor}
    found = rows(db, sql + " ORDER BY h.id", params)
    decode = LABEL_KINDS[Task.PASSAGE].key.decode
    passages = {decode(e["item"])[1] for e in found if e["task"] == Task.PASSAGE.value}
    lengths = passage_lengths(db, passages)
    for e in found:
        e["length"] = lengths.get(decode(e["item"])[1]) if e["task"] == Task.PASSAGE.value else None
    return found


def passage_lengths(db: Store, passage_ids) -> dict[str, int | None]:
    """{passage id: its text's length in characters, None when no text is stored} of the given passages."""
    ids = sorted(passage_ids)
    out: dict[str, int | None] = {}
    for start in range(0, len(ids), 500):
        listed, params = _in_list(ids[start : start + 500], "p")
        for r in each(db, f"SELECT id, length(text) AS chars FROM passages WHERE id IN ({listed})", params):
            out[r["id"]] = r["chars"]
    return out


# ------------------------------------------------------------------------------------------- the dashboard
# The review page's figures (and `python -m assess stats --json`'s "review"): the current assignments only.
# Listed: accounts with the assessor role, and names given turns without an account (a store without sign-in);
# organizers, adjudicators and open-mode names that were never assigned anything are left out.
_LISTED = (
    "SELECT name FROM accounts WHERE role = 'assessor' UNION SELECT DISTINCT assessor FROM assignments "
    "WHERE assessor NOT IN (SELECT name FROM accounts WHERE role <> 'assessor')"
)
# An assigned item is a pooled pair of an assigned turn; it counts as judged once its assessor labelled it.
_ASSIGNED_LABELS = (
    "FROM passage_labels l JOIN assignments a ON a.assessor = l.source AND a.turn_id = l.turn_id "
    "JOIN pool p ON p.turn_id = l.turn_id AND p.passage_id = l.passage_id"
)
HOURLY_UP_TO = 72
"""The timeline counts per hour while the assigned labels span at most this many hours, else per day."""


def dashboard(db: Store) -> dict:
    """The review dashboard's figures over the current assignments (``_LISTED`` assessors):

    - ``assessors``: per assessor, items assigned (pooled pairs of assigned turns) and judged of them, every
      passage label they hold, its grades 0..4 and cannot-judge, the active time summed over their timed
      passage labels (minutes) and how many carry one;
    - ``topics``: per conversation with assignments, items assigned and judged (old labels of other sources
      or campaigns do not count);
    - ``timeline``: ``{"unit": "hour" | "day", "assigned", "points": [{"at", "judged", "cumulative"}]}``,
      the assigned items judged per hour (per day beyond HOURLY_UP_TO hours) by the label's last write.

    Grouped aggregates over the listed assessors' labels (an IN list: their primary key starts with the source),
    joined in Python; no subquery per row."""
    names = sorted(column(db, _LISTED))
    listed, params = _in_list(names, "a")
    assigned: dict[str, int] = dict.fromkeys(names, 0)
    topic_assigned: dict[str, int] = {}
    for r in each(
        db,
        "SELECT a.assessor, t.conversation_id, COUNT(*) AS n FROM assignments a JOIN pool p ON p.turn_id = a.turn_id "
        f"JOIN turns t ON t.id = a.turn_id WHERE a.assessor IN ({listed}) GROUP BY a.assessor, t.conversation_id",
        params,
    ):
        assigned[r["assessor"]] += r["n"]
        topic_assigned[r["conversation_id"]] = topic_assigned.get(r["conversation_id"], 0) + r["n"]
    judged: dict[str, int] = dict.fromkeys(names, 0)
    topic_judged: dict[str, int] = {}
    for r in each(
        db,
        f"SELECT l.source, t.conversation_id, COUNT(*) AS n {_ASSIGNED_LABELS} JOIN turns t ON t.id = l.turn_id "
        f"WHERE l.source IN ({listed}) GROUP BY l.source, t.conversation_id",
        params,
    ):
        judged[r["source"]] += r["n"]
        topic_judged[r["conversation_id"]] = topic_judged.get(r["conversation_id"], 0) + r["n"]
    own: dict[str, dict] = {}
    for r in each(
        db,
        "SELECT l.source, l.grade, COUNT(*) AS n, COUNT(l.active_ms) AS timed, SUM(l.active_ms) AS active_ms "
        f"FROM passage_labels l WHERE l.source IN ({listed}) GROUP BY l.source, l.grade",
        params,
    ):
        mine = own.setdefault(
            r["source"], {"labels": 0, "grades": [0] * len(GRADES.values), "cannot": 0, "ms": 0, "timed": 0}
        )
        mine["labels"] += r["n"]
        mine["ms"] += r["active_ms"] or 0
        mine["timed"] += r["timed"]
        if r["grade"] is None:
            mine["cannot"] += r["n"]
        else:
            mine["grades"][r["grade"] - GRADES.low] += r["n"]
    assessors = []
    for name in names:
        mine = own.get(name, {})
        assessors.append(
            {
                "assessor": name,
                "assigned": assigned[name],
                "judged": judged[name],
                "labels": mine.get("labels", 0),
                "grades": mine.get("grades", [0] * len(GRADES.values)),
                "cannot_judge": mine.get("cannot", 0),
                "active_minutes": round(mine.get("ms", 0) / 60000, 1),
                "timed_labels": mine.get("timed", 0),
            }
        )
    order = {c: i for i, c in enumerate(column(db, "SELECT id FROM conversations ORDER BY rowid"))}
    topics = [
        {"conversation": c, "assigned": n, "judged": topic_judged.get(c, 0)}
        for c, n in sorted(topic_assigned.items(), key=lambda item: order.get(item[0], len(order)))
    ]
    return {"assessors": assessors, "topics": topics, "timeline": _timeline(db, listed, params, sum(assigned.values()))}


def _timeline(db: Store, listed: str, params: dict, assigned: int) -> dict:
    hours = {
        r["hour"]: r["n"]
        for r in each(
            db,
            f"SELECT substr(l.updated_at, 1, 13) AS hour, COUNT(*) AS n {_ASSIGNED_LABELS} "
            f"WHERE l.source IN ({listed}) GROUP BY substr(l.updated_at, 1, 13) ORDER BY hour",
            params,
        )
    }
    unit = "hour"
    if hours:
        first, last = (datetime.fromisoformat(h + ":00:00+00:00") for h in (min(hours), max(hours)))
        if (last - first).total_seconds() > HOURLY_UP_TO * 3600:
            unit, days = "day", {}
            for hour, n in hours.items():
                days[hour[:10]] = days.get(hour[:10], 0) + n
            hours = days
    points, total = [], 0
    for at in sorted(hours):
        total += hours[at]
        points.append({"at": at + (":00" if unit == "hour" else ""), "judged": hours[at], "cumulative": total})
    return {"unit": unit, "assigned": assigned, "points": points}
