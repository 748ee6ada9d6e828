"""Read-only summaries of what is in the store (the home page and `python -m assess stats`)."""

from __future__ import annotations

from sqlite_utils import Database


def stats(db: Database) -> dict:
    """Counts of conversations, turns, passages, pooled pairs and labels per source."""
    c = db.conn
    one = lambda sql: c.execute(sql).fetchone()[0]  # noqa: E731
    out = {
        "conversations": one("SELECT COUNT(*) FROM conversations"),
        "turns": one("SELECT COUNT(*) FROM turns"),
        "passages": one("SELECT COUNT(*) FROM passages"),
        "passages_with_text": one("SELECT COUNT(*) FROM passages WHERE text IS NOT NULL"),
        "runs": one("SELECT COUNT(*) FROM runs"),
        "pooled_pairs": one("SELECT COUNT(*) FROM pool"),
        "pooled_turns": one("SELECT COUNT(DISTINCT turn_id) FROM pool"),
        "passage_labels": {},
        "ptkb_labels": {},
        "nuggets": {},
        "ntr_labels": {},
    }
    for source, count, turns, cannot in c.execute(
        "SELECT source, COUNT(grade), COUNT(DISTINCT turn_id), SUM(grade IS NULL) "
        "FROM passage_labels GROUP BY source ORDER BY source"
    ):
        out["passage_labels"][source] = {"count": count, "turns": turns, "grades": [0] * 5, "cannot_judge": cannot}
    for source, grade, n in c.execute(
        "SELECT source, grade, COUNT(*) FROM passage_labels WHERE grade IS NOT NULL GROUP BY source, grade"
    ):
        out["passage_labels"][source]["grades"][grade] = n
    for source, count, relevant, turns in c.execute(
        "SELECT source, COUNT(*), SUM(relevant > 0), COUNT(DISTINCT turn_id) FROM ptkb_labels "
        "GROUP BY source ORDER BY source"
    ):
        out["ptkb_labels"][source] = {"count": count, "relevant": relevant, "turns": turns}
    for source, count, turns, spans, dedup in c.execute(
        "SELECT source, COUNT(*), COUNT(DISTINCT turn_id), COUNT(start_char), SUM(in_dedup = 1) "
        "FROM nuggets GROUP BY source ORDER BY source"
    ):
        out["nuggets"][source] = {"count": count, "turns": turns, "with_span": spans, "deduplicated": dedup}
    for source, count, yes in c.execute(
        "SELECT source, COUNT(*), SUM(match) FROM ntr_labels GROUP BY source ORDER BY source"
    ):
        out["ntr_labels"][source] = {"count": count, "yes": yes}
    return out


def sources(db: Database) -> list[dict]:
    """Every label source with its kind, model and how many labels it holds per task."""
    rows = db.execute_returning_dicts(
        "SELECT s.name, s.kind, s.model, s.prompt_version, "
        "(SELECT COUNT(*) FROM passage_labels WHERE source = s.name) AS passage_labels, "
        "(SELECT COUNT(*) FROM ptkb_labels WHERE source = s.name) AS ptkb_labels, "
        "(SELECT COUNT(*) FROM nuggets WHERE source = s.name) AS nuggets, "
        "(SELECT COUNT(*) FROM ntr_labels WHERE source = s.name) AS ntr_labels "
        "FROM sources s ORDER BY s.kind, s.name"
    )
    return rows
