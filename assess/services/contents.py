"""What the store holds, as the pages list it: conversations, turns, passage texts, label sources and their
counts, the items two sources label differently, the qrels of a source, an item's label history, and assigning
turns. Each function is the store's reader or writer of the same name (the front ends reach the store only through
services, so one place says what a page or command may touch)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from assess.errors import AssessError
from assess.queueing import ReshowRule
from assess.services import session
from assess.tasks import TurnContext
from store import (
    Store,
    audit,
    compare,
    exports,
    history,
    labels,
    overlap,
    overlap_adaptive,
    prejudgments,
    reshows,
    review,
    screens,
)
from store import conversations as store_conversations
from store import samples as store_samples
from store import stats as store_stats


def location(target: str | Path) -> str:
    """Where the store lives, as it may be shown (:func:`assess.services.session.location`: no password)."""
    return session.location(target)


def stats(db: Store) -> dict:
    """The store's counts (:func:`store.stats.stats`)."""
    return store_stats.stats(db)


def counts(db: Store) -> dict[str, int]:
    """The home page's counts: conversations, turns, passages (with text) and pooled pairs
    (:func:`store.stats.counts`)."""
    return store_stats.counts(db)


def source_stats(db: Store) -> list[dict]:
    """Every label source with its kind, model and label counts (:func:`store.stats.sources`)."""
    return store_stats.sources(db)


def conversations(db: Store) -> list[dict]:
    """Conversations with their turn and pool counts."""
    return store_conversations.conversations(db)


def conversation_ids(db: Store) -> list[str]:
    return store_conversations.conversation_ids(db)


def all_turns(db: Store) -> list[str]:
    return store_conversations.all_turns(db)


def pooled_turns(db: Store) -> list[str]:
    return store_conversations.pooled_turns(db)


def turn_context(db: Store, turn_id: str) -> TurnContext:
    return store_conversations.turn_context(db, turn_id)


def passage_text(db: Store, passage_id: str) -> str | None:
    return store_conversations.passage_text(db, passage_id)


def assign_turns(db: Store, assessor: str, topics: Sequence[str], turn_ids: Sequence[str], *, by: str | None) -> int:
    """Assign the pooled turns of ``topics`` and the single ``turn_ids`` to ``assessor``; how many are new."""
    return assign_listed_turns(db, assessor, turns_to_assign(db, topics, turn_ids), by=by)


def turns_to_assign(db: Store, topics: Sequence[str], turn_ids: Sequence[str]) -> list[str]:
    """The pooled turns of the conversations ``topics``, then the single ``turn_ids`` not already among them."""
    return store_conversations.turns_to_assign(db, topics, turn_ids)


def assign_listed_turns(db: Store, assessor: str, turn_ids: Sequence[str], *, by: str | None) -> int:
    """Assign exactly ``turn_ids`` to ``assessor`` (an organizer action); how many are new."""
    return store_conversations.assign(db, assessor, turn_ids, by=by)


def unassign_listed_turns(db: Store, assessor: str, turn_ids: Sequence[str], *, by: str | None) -> None:
    """Take ``turn_ids`` away from ``assessor`` (an organizer action)."""
    store_conversations.unassign(db, assessor, turn_ids, by=by)


def item_history(db: Store, item: str, task: str, *, source: str | None = None) -> list[dict]:
    """Every change of one item's ``task`` label (``item``: ``'<turn> <item id>'``), oldest first: of ``source``
    (refused when the store has no such source), or of every source when None."""
    if source is None:
        return history.item_history_all(db, item, task)
    exports.require_source(db, source)
    return history.item_history(db, source, item, task)


def label_sources(db: Store, table: str = "passage_labels") -> list[str]:
    """The sources holding labels in the label table ``table``."""
    return exports.label_sources(db, table)


def task_sources(db: Store, task: str) -> list[str]:
    """The sources with at least one label of ``task``."""
    return labels.sources(db, task)


def qrels_text(db: Store, source: str, task: str = "passage") -> str:
    """TREC qrels of one source (passage or PTKB)."""
    return exports.qrels_text(db, source, task)


def disagreements(db: Store, task: str, a: str, b: str, *, limit: int = 500) -> list[dict]:
    """Items ``a`` and ``b`` label differently, with both labels and each LLM source's raw answer."""
    return prejudgments.disagreements(db, task, a, b, limit=limit)


# What the pages' caches key on: each changes whenever what it stands for is written.


def topics_version(db: Store) -> str:
    return screens.topics_version(db)


def labels_version(db: Store, task: str, source: str) -> tuple:
    return screens.labels_version(db, task, source)


def rankings_version(db: Store) -> tuple:
    return compare.rankings_version(db)


def progress_version(db: Store) -> tuple:
    return review.progress_version(db)


# Sources, LLM answers and samples as the organizer panels list them, and the plans that shape queues.


def source_kinds(db: Store) -> dict[str, str]:
    """{source name: its kind} of every source."""
    return audit.source_kinds(db)


def assessor_names(db: Store) -> list[str]:
    return overlap.assessor_names(db)


def source_model(db: Store, source: str) -> str | None:
    """The model an LLM source records (None for another source)."""
    return prejudgments.source_model(db, source)


def stored_answers(db: Store, source: str, task: str | None = None, limit: int = 1000) -> list[dict]:
    """A source's stored LLM answers, newest first (:func:`store.prejudgments.stored`)."""
    return prejudgments.stored(db, source, task, limit)


def samples(db: Store) -> list[dict]:
    """Every recorded budgeted sample, newest first."""
    return store_samples.samples(db)


def reshow_rule(db: Store, task: str = "passage") -> ReshowRule | None:
    """The task's re-show rule (/judge's: passage), or None when items are not re-shown."""
    return reshows.rule(db, task)


def create_overlap_plan(
    db: Store,
    name: str,
    assessors: Sequence[str],
    *,
    topics: Sequence[str],
    share: float,
    copies: int,
    unit: str,
    seed: int,
    by: str | None,
    turns: Sequence[str] = (),
    task: str = "passage",
    margin: float | None = None,
    judge: str | None = None,
) -> dict:
    """Assign the conversations' (and the single ``turns``') items to ``assessors`` with a planned share judged
    more than once (an organizer action, :func:`store.overlap.create_plan`; adaptive with ``margin``)."""
    return overlap.create_plan(
        db,
        name,
        assessors,
        topics=topics,
        turns=turns,
        share=share,
        copies=copies,
        unit=unit,
        seed=seed,
        task=task,
        by=by,
        margin=margin,
        judge=judge,
    )


def advance_overlap_plan(db: Store, name: str) -> dict:
    """Take the steps due on an adaptive plan's items now (a judge's labels stored after the people's);
    {step: items}. An unknown plan, or one that is not adaptive, is an error."""
    found = [p for p in overlap.plans(db) if p["name"] == name]
    if not found:
        raise AssessError(f"no overlap plan named {name!r}")
    if found[0]["margin"] is None:
        raise AssessError(f"overlap plan {name!r} is not adaptive: its extra items were all planned when it was made")
    return overlap_adaptive.advance(db, name)


def set_reshow_rule(db: Store, share: float, *, gap: int, seed: int, by: str | None, task: str = "passage") -> None:
    """Set the task's re-show rule (share 0: none; /judge's: passage), an organizer action."""
    reshows.set_rule(db, share, gap=gap, seed=seed, task=task, by=by)
