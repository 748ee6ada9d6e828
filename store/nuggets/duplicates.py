"""Duplicate pairs of a nugget set: suggestions (scores both ways) and the assessors' decisions.

A decision changes the set's ``in_dedup`` flags in the same transaction (:func:`store.nuggets.gold.refresh_dedup`).
Who may write: anyone in their own set; in any other set (``gold``, an imported or adjudicated set) only an
organizer (the ``curation`` action of :mod:`store.rights`, checked in the write's own transaction), whose
decision is also an organizer-action history row naming them (``curation``, item ``'duplicate SET TURN A B'``).
"""

from __future__ import annotations

from assess.errors import AssessError
from assess.nuggets import dedup
from store.db import Store, now, row, rows, run, value, write
from store.history import record_action
from store.nuggets.gold import nugget, refresh_dedup, turn_nuggets
from store.rights import check_writer


def check_curator(db: Store, source: str, by: str | None) -> None:
    """Inside a write transaction: ``by`` may change the duplicate pairs of the nugget set ``source`` -- their
    own set, or any set for an organizer (an account's current role decides; :func:`store.rights.check_writer`)."""
    check_writer(db, by, action=None if by == source else "curation")


def suggest_duplicates(
    db: Store,
    source: str,
    turn_id: str,
    judge: dedup.Entailment | None = None,
    *,
    threshold: float = 0.5,
    by: str | None = None,
) -> int:
    """Score every pair of the turn's nuggets both ways and store the pairs at or above ``threshold``.

    Decisions already made are kept; scores are refreshed. ``by``: who asks (a page's signed-in person, checked
    as :func:`check_curator`; None: the command line). Returns the number of suggested pairs.
    """
    judge = dedup.as_entailment(judge)
    nuggets = turn_nuggets(db, source, turn_id)
    found = dedup.suggest_duplicates([(r["id"], r["text"]) for r in nuggets], judge, threshold=threshold)
    name = dedup.judge_name(judge)
    stamp = now()
    with write(db):
        if by is not None:
            check_curator(db, source, by)
        for s in found:
            a, b, ab, ba = (s.a, s.b, s.score_ab, s.score_ba) if s.a < s.b else (s.b, s.a, s.score_ba, s.score_ab)
            run(
                db,
                "INSERT INTO nugget_duplicates (nugget_a, nugget_b, turn_id, source, score_ab, score_ba, suggested_by, "
                "updated_at) VALUES (:a, :b, :turn_id, :source, :ab, :ba, :by, :at) ON CONFLICT(nugget_a, nugget_b) "
                "DO UPDATE SET score_ab = excluded.score_ab, score_ba = excluded.score_ba, "
                "suggested_by = excluded.suggested_by",
                {"a": a, "b": b, "turn_id": turn_id, "source": source, "ab": ab, "ba": ba, "by": name, "at": stamp},
            )
    return len(found)


def duplicate_pairs(db: Store, source: str, turn_id: str) -> list[dict]:
    """The turn's stored pairs with both texts, open ones first, most mutual first."""
    pairs = rows(
        db,
        "SELECT d.nugget_a AS a, na.key AS key_a, na.text AS text_a, d.nugget_b AS b, nb.key AS key_b, "
        "nb.text AS text_b, d.score_ab AS score_ab, d.score_ba AS score_ba, d.suggested_by AS suggested_by, "
        "d.decision AS decision, d.decided_by AS decided_by FROM nugget_duplicates d "
        "JOIN nuggets na ON na.id = d.nugget_a JOIN nuggets nb ON nb.id = d.nugget_b "
        "WHERE d.source = :source AND d.turn_id = :turn_id",
        {"source": source, "turn_id": turn_id},
    )
    return sorted(
        pairs, key=lambda r: (r["decision"] is not None, -min(r["score_ab"] or 0, r["score_ba"] or 0), r["a"], r["b"])
    )


def decide_duplicate(db: Store, a: int, b: int, decision: str | None, *, by: str) -> None:
    """Confirm (``same``, ``a_covers_b``, ``b_covers_a``), reject (``distinct``) or reopen (None) a pair;
    the turn's ``in_dedup`` flags follow at once. ``by`` may decide in their own set; in another set only as an
    organizer (:func:`check_curator`, refused with :class:`store.rights.NotAllowed` and nothing written), and
    such a decision is also a ``curation`` history row whose ``source`` is ``by``."""
    dedup.check_decision(decision)
    if a == b:
        raise AssessError("a nugget cannot duplicate itself")
    na, nb = nugget(db, a), nugget(db, b)
    if (na["source"], na["turn_id"]) != (nb["source"], nb["turn_id"]):
        raise AssessError("duplicates are pairs of nuggets of one set and one turn")
    if a > b:
        a, b, decision = b, a, dedup.flipped(decision)
    with write(db):
        check_curator(db, na["source"], by)
        before = row(
            db, "SELECT decision FROM nugget_duplicates WHERE nugget_a = :a AND nugget_b = :b", {"a": a, "b": b}
        )
        run(
            db,
            "INSERT INTO nugget_duplicates (nugget_a, nugget_b, turn_id, source, suggested_by, decision, decided_by, "
            "updated_at) VALUES (:a, :b, :turn_id, :source, 'manual', :decision, :by, :at) "
            "ON CONFLICT(nugget_a, nugget_b) DO UPDATE SET decision = excluded.decision, "
            "decided_by = excluded.decided_by, updated_at = excluded.updated_at",
            {
                "a": a,
                "b": b,
                "turn_id": na["turn_id"],
                "source": na["source"],
                "decision": decision,
                "by": by if decision else None,
                "at": now(),
            },
        )
        refresh_dedup(db, na["source"], na["turn_id"])
        old = before["decision"] if before else None
        if by != na["source"] and old != decision:
            record_action(
                db,
                by,
                "curation",
                f"duplicate {na['source']} {na['turn_id']} {a} {b}",
                old,
                decision,
                via="duplicates",
                writer_checked=True,
            )


def dedup_counts(db: Store, source: str, turn_id: str) -> dict:
    """How many nuggets the turn's set has, keeps, does not know about, and how many pairs are open."""
    counts = rows(
        db,
        "SELECT COUNT(*) AS nuggets, COUNT(*) FILTER (WHERE in_dedup = 1) AS kept, "
        "COUNT(*) FILTER (WHERE in_dedup IS NULL) AS unknown FROM nuggets WHERE source = :source AND turn_id = :turn_id",
        {"source": source, "turn_id": turn_id},
    )[0]
    open_pairs = value(
        db,
        "SELECT COUNT(*) AS n FROM nugget_duplicates WHERE source = :source AND turn_id = :turn_id "
        "AND decision IS NULL",
        {"source": source, "turn_id": turn_id},
    )
    return {
        "nuggets": counts["nuggets"],
        "kept": counts["kept"] or 0,
        "unknown": counts["unknown"] or 0,
        "open_pairs": open_pairs,
    }
