"""What a keyboard judging screen shows for one item, read in as few queries as the blindness rules allow.

A key press on /judge or /ptkb re-runs only the item panel; it asks here once for the item's text, the
assessor's own label and, when the judging mode allows it, the LLM labels to reveal.
"""

from __future__ import annotations

from dataclasses import dataclass

from assess.queueing import QueueOrder
from assess.tasks import JudgingMode, Label, Passage, Shown
from store import conversations, labels, overlap_adaptive, prejudgments, queue, reshows, review
from store.nuggets import ntr


@dataclass(frozen=True)
class ItemScreen:
    mode: str
    own: Label | None  # the assessor's label, or None
    revealed: tuple[Label, ...]  # other sources' labels with their rationale (empty while blind)
    passage: Passage | None = None  # the passage (passage screens); its text None when only its id is known


def _revealed(db, assessor: str, task: str, turn_id: str, item_id: str, mode: str, own) -> tuple[Label, ...]:
    # Blind, or blind-then-reveal before the assessor's own label: nothing of another source is read.
    if mode == JudgingMode.BLIND or (mode == JudgingMode.REVEAL and own is None):
        return ()
    return tuple(prejudgments.revealed_with_rationale(db, assessor, task, turn_id, item_id))


def item_screen(db, assessor: str, task: str, turn_id: str, item_id: str, *, passage=None) -> ItemScreen:
    """The judging mode, the assessor's own label and what may be revealed of one item; ``passage``: a
    function giving the item's :class:`~assess.tasks.Passage` (e.g. :func:`read_passage`, or one that has it
    ready)."""
    mode = queue.judging_mode(db)
    own = queue.label_of(db, assessor, task, turn_id, item_id)
    shown = passage(item_id) if passage else None
    return ItemScreen(mode, own, _revealed(db, assessor, task, turn_id, item_id, mode, own), shown)


def due_reshow(db, assessor: str, task: str = "passage", *, complete: bool = False, held: int | None = None):
    """The re-shown item to draw in place of the next unjudged one (a :class:`store.reshows.Reshow`), or None;
    ``held``: how many labels of the task the assessor holds, when the page knows it."""

    return reshows.due(db, assessor, task, complete=complete, held=held)


def reshow_screen(db, task: str, item_id: str, *, passage=None) -> ItemScreen:
    """A re-shown item's screen: what a first showing of an unjudged item in blind mode shows (no own label,
    nothing revealed), so nothing says it is a repeat or what was answered before; ``passage`` as for
    :func:`item_screen`."""
    return ItemScreen(JudgingMode.BLIND.value, None, (), passage(item_id) if passage else None)


def passage_screen(db, assessor: str, turn_id: str, passage_id: str, *, reshow: bool, passage=None) -> ItemScreen:
    """The screen of the passage drawn on /judge: a re-shown item's (:func:`reshow_screen`: drawn as a fresh
    item, no earlier label, nothing revealed), else :func:`item_screen`'s."""
    if reshow:
        return reshow_screen(db, "passage", passage_id, passage=passage)
    return item_screen(db, assessor, "passage", turn_id, passage_id, passage=passage)


def save_grade(
    db,
    assessor: str,
    turn_id: str,
    passage_id: str,
    grade,
    *,
    reshow: bool,
    note,
    mode: str,
    active_ms=None,
    expected: Shown | None = None,
    via: str = "ui",
) -> bool:
    """Store a grade key's answer: a re-shown item's second (consistency) answer, or the passage label with its
    active time (``active_ms``; a consistency answer keeps none). Returns whether the answer is
    blind-then-reveal's first label of the item (it stays on screen: the LLM's label is revealed now).
    ``expected``: what the page showed of the assessor's label (:class:`store.labels.StaleLabel` when the stored
    one differs: another tab or device labelled the item meanwhile). ``via``: 'ui', or 'api' for the HTTP API."""
    if reshow:
        reshows.answer(db, assessor, "passage", (turn_id, passage_id), grade, mode=JudgingMode.BLIND.value)
        return False
    first = _first_revealed(db, assessor, "passage", turn_id, passage_id, mode, expected)
    queue.save_passage_label(
        db, assessor, turn_id, passage_id, grade, note=note, mode=mode, via=via, active_ms=active_ms, expected=expected
    )
    return first


def save_ptkb(
    db, assessor: str, turn_id: str, statement_id: str, relevant, *, mode: str, active_ms=None, expected=None
) -> bool:
    """Store a PTKB key's answer with its active time; whether it is blind-then-reveal's first label of the
    statement (it stays on screen: the LLM's label is revealed now). ``expected`` as for :func:`save_grade`."""
    first = _first_revealed(db, assessor, "ptkb", turn_id, statement_id, mode, expected)
    queue.save_ptkb_label(
        db, assessor, turn_id, statement_id, relevant, mode=mode, via="ui", active_ms=active_ms, expected=expected
    )
    return first


def _first_revealed(db, assessor: str, task: str, turn_id: str, item_id: str, mode: str, expected=None) -> bool:
    """Whether a label about to be stored is the assessor's first of the item under blind-then-reveal. With
    ``expected`` (what the page showed) no query: the write succeeds only when the stored label is the one shown."""
    if mode != JudgingMode.REVEAL:
        return False
    if expected is not None:
        return not expected.labelled
    return queue.label_of(db, assessor, task, turn_id, item_id) is None


def postpone_reshow(db, assessor: str, turn_id: str, item_id: str, task: str = "passage") -> None:
    """Skip a re-shown item for now (it comes back after the next label)."""

    reshows.postpone(db, assessor, task, (turn_id, item_id))


def read_passage(db, passage_id: str) -> Passage:
    """A passage with its text (None when only its id is known)."""
    return conversations.passage(db, passage_id)


def turn_labels(db, assessor: str, task: str, turn_id: str) -> dict[str, int | None]:
    """The assessor's labels of one turn's items as {item id: value}, in one query."""
    return {item[-1]: value for item, value in labels.values(db, task, assessor, turn_id=turn_id).items()}


def ntr_done(db, assessor: str) -> frozenset:
    """The NtR items the assessor has answered, as queue keys (turn, '<nugget id> <run>')."""
    return frozenset((turn, ntr.item_key(nid, run)) for turn, nid, run in labels.labelled(db, "ntr", assessor))


# The keyboard queues' orders and what they are cached on (``ui.cursor`` keeps them between runs): the store's
# functions of the same names.


def queue_order(db, assessor: str, task: str, *, open_mode: bool):
    """The assessor's items in judging order (:func:`store.queue.queue_order`)."""
    return queue.queue_order(db, assessor, task=task, open_mode=open_mode)


def queue_version(db, assessor: str) -> tuple:
    """Changes whenever the pool, the turns or the assessor's assignments change."""
    return queue.queue_version(db, assessor)


def load_queue(db, assessor: str, task: str, order):
    """The assessor's queue over ``order`` with what they have judged (:func:`store.queue.load_queue`)."""
    return queue.load_queue(db, assessor, task=task, order=order)


def ntr_order(db, assessor: str, nugget_source: str, *, open_mode: bool):
    """The NtR items in judging order (:func:`store.nuggets.ntr.ntr_order`)."""
    return ntr.ntr_order(db, assessor, nugget_source, open_mode=open_mode)


def ntr_order_version(db, assessor: str, nugget_source: str) -> tuple:
    """Changes whenever :func:`ntr_order`'s result may; its last two entries count the assessor's assignments."""
    return ntr.ntr_order_version(db, assessor, nugget_source)


# ------------------------------------------------------------------------------------------- adjudication


@dataclass(frozen=True)
class AdjudicationScreen:
    own: Label | None  # the adjudicated label, or None
    labels: tuple[dict, ...]  # per source, a card: shown_as (its name, or a letter when blind), grade, note, rationale
    passage: Passage


def adjudication_sources(db) -> tuple[list[str], bool]:
    """The sources the adjudication queue compares and whether their names are hidden from adjudicators."""
    chosen, blind = review.adjudication_settings(db)
    every = [s for s in labels.sources(db, "passage") if s != review.ADJUDICATION]
    sources = every if chosen is None else [s for s in chosen if s in every]
    return sources, blind


def disputed_count(db) -> int:
    """How many items adaptive overlap has routed to adjudication (a part of the queue's cache version)."""
    return len(overlap_adaptive.disputed(db))


def adjudication_order(db, sources):
    """The disputed items of adaptive overlap, then the disagreements among ``sources``, as a queue order."""

    return QueueOrder.of(review.adjudication_order(db, sources))


def _letters(turn_id: str, passage_id: str, n: int) -> list[str]:
    """Letters for ``n`` sources in an order drawn per item (the same each time the item is shown), so that a
    letter says nothing about which source it is across items."""
    import hashlib
    import random
    import string

    seed = int.from_bytes(hashlib.sha256(f"{turn_id}\0{passage_id}".encode()).digest()[:8], "big")
    letters = list(string.ascii_uppercase[:n]) if n <= 26 else [str(i + 1) for i in range(n)]
    random.Random(seed).shuffle(letters)
    return letters


def _card(label: Label, shown_as: str, *, named: bool) -> dict:
    """What a source card shows of a label; the source's name only when ``named`` (a blind card has none)."""
    card = {"source": label.source} if named else {}
    return {**card, "grade": label.value, "note": label.note, "rationale": label.rationale, "shown_as": shown_as}


def adjudication_screen(db, turn_id: str, passage_id: str, sources, *, blind: bool, passage=None) -> AdjudicationScreen:
    """One disagreement: the adjudicated label so far, every compared source's grade, note and rationale
    (named, or when ``blind`` lettered in an order drawn per item and listed by letter) and the passage;
    ``passage``: a function giving it (default :func:`read_passage`)."""
    routed = [a for a in overlap_adaptive.item_assessors(db, turn_id, passage_id) if a not in sources]
    found = review.item_labels(db, turn_id, passage_id, [*sources, *routed])  # a disputed item shows its people
    if blind:
        letters = _letters(turn_id, passage_id, len(found))
        shown = sorted(
            (_card(label, f"Source {letter}", named=False) for label, letter in zip(found, letters)),
            key=lambda card: card["shown_as"],
        )
    else:
        shown = [_card(label, label.source, named=True) for label in found]
    own = queue.label_of(db, review.ADJUDICATION, "passage", turn_id, passage_id)
    read = passage(passage_id) if passage else read_passage(db, passage_id)
    return AdjudicationScreen(own, tuple(shown), read)


# What the keyboard pages write besides a grade, and the settings they read: the store's functions of the same
# names, here so that the pages reach the store through this one module.
StaleLabel = labels.StaleLabel  # a label stored meanwhile from another tab (the keyboard pages say NOT SAVED)
ADJUDICATION = review.ADJUDICATION
MODES = queue.MODES


def labelled(db, assessor: str, task: str = "passage") -> frozenset:
    """The (turn, item) pairs ``assessor`` has labelled (:func:`store.queue.labelled`)."""
    return queue.labelled(db, assessor, task)


def undo(db, assessor: str, task: str = "passage") -> tuple[str, str] | None:
    """Revert ``assessor``'s latest label change (:func:`store.queue.undo`); the (turn, item) it touched."""
    return queue.undo(db, assessor, task)


def save_note(db, assessor: str, task: str, turn_id: str, item_id: str, note: str) -> bool:
    """Attach a note to ``assessor``'s label; False when there is no label yet."""
    return queue.save_note(db, assessor, task, turn_id, item_id, note)


def judging_mode(db) -> str:
    return queue.judging_mode(db)


def set_judging_mode(db, mode: str, *, by: str | None) -> bool:
    """Set the study's judging mode (an organizer action); False when it already was ``mode``."""
    return queue.set_judging_mode(db, mode, by=by)


def adjudication_candidates(db) -> list[str]:
    """Every source with passage labels except the adjudicated one: what the adjudication may compare."""
    return [s for s in labels.sources(db, "passage") if s != review.ADJUDICATION]


def set_adjudication_settings(db, sources, blind: bool, *, by: str | None) -> None:
    review.set_adjudication_settings(db, sources, blind, by=by)


def adjudicated(db) -> frozenset:
    return review.adjudicated(db)


def adjudicate(db, turn_id: str, passage_id: str, grade: int | None, *, by: str, reason=None, expected=None) -> None:
    """Record an adjudicated grade (:func:`store.review.adjudicate`; a stale ``expected`` is :data:`StaleLabel`)."""
    review.adjudicate(db, turn_id, passage_id, grade, by=by, reason=reason, expected=expected)


def undo_adjudication(db, by: str) -> tuple[str, str] | None:
    return review.undo_adjudication(db, by)


def adjudication_reason(note: str | None, by: str) -> str:
    return review.adjudication_reason(note, by)


def set_adjudication_reason(db, turn_id: str, passage_id: str, reason: str, *, by: str) -> bool:
    return review.set_reason(db, turn_id, passage_id, reason, by=by)
