"""Conversations, turns, passages, PTKB statements, pools and assignments: what gets judged.

Turns are ordered everywhere as the queues order them: conversations in import order, then turn
position within the conversation.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from assess.errors import AssessError, UnknownItem
from assess.tasks import Passage, TurnContext
from store.db import Store, column, each, now, row, rows, run, run_many, value, write
from store.history import record_action
from store.sources import sign_in

_TURN_ORDER = "ORDER BY c.rowid, t.position"


def conversations(db: Store) -> list[dict]:
    """Conversations with their turn counts and how many pooled pairs they hold."""
    return rows(
        db,
        "SELECT c.id, c.title, c.collection, COUNT(DISTINCT t.id) AS turns, "
        "(SELECT COUNT(*) FROM pool p JOIN turns t2 ON t2.id = p.turn_id WHERE t2.conversation_id = c.id) "
        "AS pooled FROM conversations c LEFT JOIN turns t ON t.conversation_id = c.id "
        "GROUP BY c.id, c.title, c.collection, c.number ORDER BY c.collection IS NOT NULL, c.collection, int_prefix(c.number), c.number",
    )


def conversation_ids(db: Store) -> list[str]:
    """Every conversation id, in import order."""
    return column(db, "SELECT id FROM conversations ORDER BY rowid")


def all_turns(db: Store) -> list[str]:
    """Every turn, conversations in import order, then turn position."""
    return column(db, f"SELECT t.id AS id FROM turns t JOIN conversations c ON c.id = t.conversation_id {_TURN_ORDER}")


def pooled_turns(db: Store, conversation_ids: Sequence[str] | None = None) -> list[str]:
    """Turns with pooled passages (of the given conversations, or all): conversation import order, then position.

    This is what assigning a topic assigns and what the nugget pages offer.
    """
    where, params = "", {}
    if conversation_ids is not None:
        if not conversation_ids:
            return []
        params = {f"c{i}": c for i, c in enumerate(conversation_ids)}
        where = f"t.conversation_id IN ({', '.join(':' + name for name in params)}) AND "
    return column(
        db,
        "SELECT t.id AS id FROM turns t JOIN conversations c ON c.id = t.conversation_id "
        f"WHERE {where}EXISTS (SELECT 1 FROM pool p WHERE p.turn_id = t.id) {_TURN_ORDER}",
        params,
    )


def turn_contexts(db: Store, conversation_id: str | None = None) -> dict[str, TurnContext]:
    """Every turn's context (of one conversation, or of all): the conversation so far, the utterances, the
    PTKB. One query per table, not per turn; what a judging screen shows and what the prompts are given."""
    where, params = ("WHERE t.conversation_id = :conversation_id", {"conversation_id": conversation_id})
    if conversation_id is None:
        where, params = "", {}
    ptkb: dict[str, list] = {}
    for s in each(
        db,
        f"SELECT t.conversation_id AS conversation_id, t.statement_id AS id, t.text AS text FROM ptkb_statements t "
        f"{where} ORDER BY t.conversation_id, int_prefix(t.statement_id), t.statement_id",
        params,
    ):
        ptkb.setdefault(s["conversation_id"], []).append({"id": s["id"], "text": s["text"]})
    out: dict[str, TurnContext] = {}
    history: dict[str, list] = {}
    for t in each(
        db,
        "SELECT t.id AS id, t.conversation_id AS conversation_id, t.utterance AS utterance, "
        "t.resolved_utterance AS resolved, t.response AS response, c.title AS title "
        f"FROM turns t JOIN conversations c ON c.id = t.conversation_id {where} ORDER BY t.conversation_id, t.position",
        params,
    ):
        past = history.setdefault(t["conversation_id"], [])
        out[t["id"]] = TurnContext(
            turn_id=t["id"],
            conversation_id=t["conversation_id"],
            title=t["title"],
            utterance=t["utterance"],
            resolved=t["resolved"],
            history=tuple(past),
            ptkb=tuple(ptkb.get(t["conversation_id"], ())),
        )
        past.append({"turn_id": t["id"], "utterance": t["utterance"], "response": t["response"]})
    return out


def turn_context(db: Store, turn_id: str) -> TurnContext:
    """What a judging screen shows for a turn (:func:`turn_contexts` of its conversation); an unknown turn is
    :class:`UnknownItem`."""
    conversation_id = value(db, "SELECT conversation_id FROM turns WHERE id = :turn_id", {"turn_id": turn_id})
    if conversation_id is None:
        raise UnknownItem(f"unknown turn {turn_id!r}")
    return turn_contexts(db, conversation_id)[turn_id]


def ptkb_statements(db: Store, conversation_id: str) -> list[dict]:
    """A conversation's PTKB statements as [{"id", "text"}], in statement number order."""
    return rows(
        db,
        "SELECT statement_id AS id, text FROM ptkb_statements WHERE conversation_id = :conversation_id "
        "ORDER BY int_prefix(statement_id), statement_id",
        {"conversation_id": conversation_id},
    )


def passage(db: Store, passage_id: str) -> Passage:
    """A passage as the judging screens show it; its text None when only its id is known (judged iKAT texts
    are licensed).

    An id the store has never seen is an error (:class:`UnknownItem`), not a missing text.
    """
    found = row(db, "SELECT id, text FROM passages WHERE id = :id", {"id": passage_id})
    if found is None:
        raise UnknownItem(f"unknown passage {passage_id!r}")
    return Passage(found["id"], found["text"])


def passage_text(db: Store, passage_id: str) -> str | None:
    """:func:`passage`'s text alone (for code that only quotes or searches it)."""
    return passage(db, passage_id).text


def response_provenance(db: Store, turn_id: str) -> list[str]:
    """The passage ids the turn's canonical response was built from ([] when none are recorded)."""
    stored = value(db, "SELECT response_provenance FROM turns WHERE id = :id", {"id": turn_id})
    return json.loads(stored) if stored else []


# ------------------------------------------------------------------------------------------- assignments


def turns_to_assign(db: Store, topics: Sequence[str], turn_ids: Sequence[str]) -> list[str]:
    """The pooled turns of the conversations ``topics``, then the single turns not already among them."""
    known = set(conversation_ids(db)) if topics else set()
    for topic in topics:
        if topic not in known:
            raise AssessError(f"unknown conversation {topic!r}")
    turns = pooled_turns(db, topics) if topics else []
    return turns + [t for t in turn_ids if t not in turns]


def assign(db: Store, assessor: str, turn_ids: Sequence[str], *, by: str | None = None) -> int:
    """Assign turns to an assessor (topics: pass all their turn ids); return how many are new. The
    assignment is recorded in the history as ``by``'s action."""
    sign_in(db, assessor)
    known = set(column(db, "SELECT id FROM turns"))
    missing = [t for t in turn_ids if t not in known]
    if missing:
        raise UnknownItem(f"unknown turn id {missing[0]!r}")
    with write(db):
        added = 0
        at = now()
        for turn_id in turn_ids:
            added += run(
                db,
                "INSERT INTO assignments (assessor, turn_id, assigned_at) VALUES (:assessor, :turn_id, :at) "
                "ON CONFLICT DO NOTHING",
                {"assessor": assessor, "turn_id": turn_id, "at": at},
            )
        if added:
            record_action(db, by, "assignment", assessor, None, sorted(turn_ids), via="assign")
        return added


def unassign(db: Store, assessor: str, turn_ids: Sequence[str], *, by: str | None = None) -> None:
    """Take turns away from an assessor, recorded in the history as ``by``'s action."""
    with write(db):
        run_many(
            db,
            "DELETE FROM assignments WHERE assessor = :assessor AND turn_id = :turn_id",
            [{"assessor": assessor, "turn_id": t} for t in turn_ids],
        )
        record_action(db, by, "assignment", assessor, sorted(turn_ids), None, via="unassign")
