"""Read-only summaries of what is in the store (the home page and `python -m assess stats`)."""

from __future__ import annotations

from assess.tasks import GRADES, LABEL_KINDS, Task
from store import responses
from store.db import Store, each, rows, value

_COUNTS = {
    "conversations": "SELECT COUNT(*) AS n FROM conversations",
    "turns": "SELECT COUNT(*) AS n FROM turns",
    "passages": "SELECT COUNT(*) AS n FROM passages",
    "passages_with_text": "SELECT COUNT(*) AS n FROM passages WHERE text IS NOT NULL",
    "runs": "SELECT COUNT(*) AS n FROM runs",
    "pooled_pairs": "SELECT COUNT(*) AS n FROM pool",
    "pooled_turns": "SELECT COUNT(DISTINCT turn_id) AS n FROM pool",
}


def is_empty(db: Store) -> bool:
    """True when no conversation has been imported yet."""
    return value(db, "SELECT COUNT(*) AS n FROM conversations") == 0


HOME_COUNTS = ("conversations", "turns", "passages", "passages_with_text", "pooled_pairs")


def counts(db: Store, names=HOME_COUNTS) -> dict[str, int]:
    """Some of :func:`stats`' plain counts (``_COUNTS``' names), without its per-source label scans: the home page
    shows five of them on every run (at ten times iKAT 2024 the whole of :func:`stats` took 0.2-0.4 s a run)."""
    return {name: value(db, _COUNTS[name]) for name in names}


def stats(db: Store) -> dict:
    """Counts of conversations, turns, passages, pooled pairs, labels per source and generated responses
    (``responses``: ``{count, with_citations, citations}``, :func:`store.responses.counts`)."""
    out: dict = {key: value(db, sql) for key, sql in _COUNTS.items()}
    passage, ptkb, ntr = (LABEL_KINDS[t].table for t in (Task.PASSAGE, Task.PTKB, Task.NTR))
    out.update({passage: {}, ptkb: {}, "nuggets": {}, ntr: {}})
    # one scan for the counts and the grade distribution (a second GROUP BY source, grade sorted every label again)
    per_grade = "".join(f", COUNT(*) FILTER (WHERE grade = {int(g)}) AS g{n}" for n, g in enumerate(GRADES.values))
    for r in each(
        db,
        "SELECT source, COUNT(grade) AS count, COUNT(DISTINCT turn_id) AS turns, COUNT(*) FILTER (WHERE grade IS NULL) AS cannot"
        f"{per_grade} FROM {passage} GROUP BY source ORDER BY source",
    ):
        out[passage][r["source"]] = {
            "count": r["count"],
            "turns": r["turns"],
            "grades": [r[f"g{n}"] for n in range(len(GRADES.values))],
            "cannot_judge": r["cannot"],
        }
    for r in each(
        db,
        "SELECT source, COUNT(*) AS count, COUNT(*) FILTER (WHERE relevant > 0) AS relevant, COUNT(DISTINCT turn_id) AS turns "
        f"FROM {ptkb} GROUP BY source ORDER BY source",
    ):
        out[ptkb][r.pop("source")] = r
    for r in each(
        db,
        "SELECT source, COUNT(*) AS count, COUNT(DISTINCT turn_id) AS turns, COUNT(start_char) AS with_span, "
        "COUNT(*) FILTER (WHERE in_dedup = 1) AS deduplicated FROM nuggets GROUP BY source ORDER BY source",
    ):
        out["nuggets"][r.pop("source")] = r
    for r in each(
        db, f"SELECT source, COUNT(*) AS count, SUM(match) AS yes FROM {ntr} GROUP BY source ORDER BY source"
    ):
        out[ntr][r.pop("source")] = r
    out["responses"] = responses.counts(db)
    return out


def sources(db: Store) -> list[dict]:
    """Every label source with its kind, model and how many labels it holds per task."""
    return rows(
        db,
        "SELECT s.name, s.kind, s.model, s.prompt_version, "
        "(SELECT COUNT(*) FROM passage_labels WHERE source = s.name) AS passage_labels, "
        "(SELECT COUNT(*) FROM ptkb_labels WHERE source = s.name) AS ptkb_labels, "
        "(SELECT COUNT(*) FROM nuggets WHERE source = s.name) AS nuggets, "
        "(SELECT COUNT(*) FROM ntr_labels WHERE source = s.name) AS ntr_labels "
        "FROM sources s ORDER BY s.kind, s.name",
    )
