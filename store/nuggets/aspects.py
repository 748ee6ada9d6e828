"""AEPD aspects of a turn's topic: their PTKB links and each run's content per aspect.

Contents are stored as words only (selections appended with a space, or typed); an LLM's
``prejudge --task aepd`` answer can pre-fill a turn's aspects for the organizer to edit.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from assess.errors import AssessError, UnknownItem
from assess.nuggets import documents, spans
from assess.tasks import LABELLED_STATUSES
from store.conversations import all_turns, ptkb_statements
from store.db import IntegrityError, Store, column, each, now, returning, rows, run, run_many, value, write
from store.nuggets.responses import response_runs, response_text

# The parse statuses of an answer with labels, as named parameters (:status0, :status1, ...).
_STATUSES = {f"status{i}": s.value for i, s in enumerate(LABELLED_STATUSES)}
_STATUS_NAMES = ", ".join(f":{name}" for name in _STATUSES)


def _conversation(db: Store, turn_id: str, statements: Sequence[str]) -> str:
    """The turn's conversation, after checking that it has every PTKB statement named."""
    conv = value(db, "SELECT conversation_id FROM turns WHERE id = :id", {"id": turn_id})
    if conv is None:
        raise UnknownItem(f"unknown turn {turn_id!r}")
    known = {s["id"] for s in ptkb_statements(db, conv)}
    for s in statements:
        if str(s) not in known:
            raise UnknownItem(f"conversation {conv} has no PTKB statement {s!r}")
    return conv


def turn_aspects(db: Store, turn_id: str) -> list[dict]:
    """The turn's aspects in order, each with its PTKB statement ids and content per run."""
    out = []
    for a in rows(
        db, "SELECT id, text FROM aspects WHERE turn_id = :turn_id ORDER BY position, id", {"turn_id": turn_id}
    ):
        ptkb = column(db, "SELECT statement_id FROM aspect_ptkb WHERE aspect_id = :id", {"id": a["id"]})
        content = {
            r["run"]: r["text"]
            for r in each(db, "SELECT run, text FROM aspect_content WHERE aspect_id = :id", {"id": a["id"]})
        }
        out.append({"id": a["id"], "aspect": a["text"], "ptkb": documents.ptkb_sorted(ptkb), "content": content})
    return out


def save_aspect(db: Store, turn_id: str, text: str, ptkb: Sequence[str] = (), *, aspect_id: int | None = None) -> int:
    """Add an aspect to a turn (or edit one when ``aspect_id`` is given) with the PTKB statements it relates to."""
    text = (text or "").strip()
    if not text:
        raise AssessError("an aspect needs a description")
    ptkb = [str(s) for s in ptkb]
    with write(db):
        conv = _conversation(db, turn_id, ptkb)
        try:
            with write(db):  # a savepoint: a refused row must not abort the whole transaction (PostgreSQL)
                if aspect_id is None:
                    position = value(
                        db,
                        "SELECT COALESCE(MAX(position), -1) + 1 AS position FROM aspects WHERE turn_id = :turn_id",
                        {"turn_id": turn_id},
                    )
                    aspect_id = returning(
                        db,
                        "INSERT INTO aspects (turn_id, position, text, updated_at) "
                        "VALUES (:turn_id, :position, :text, :at) RETURNING id",
                        {"turn_id": turn_id, "position": position, "text": text, "at": now()},
                    )["id"]
                elif not run(
                    db,
                    "UPDATE aspects SET text = :text, updated_at = :at WHERE id = :id AND turn_id = :turn_id",
                    {"text": text, "at": now(), "id": aspect_id, "turn_id": turn_id},
                ):
                    raise UnknownItem(f"turn {turn_id} has no aspect {aspect_id}")
        except IntegrityError:
            raise AssessError(f"turn {turn_id} already has this aspect") from None
        run(db, "DELETE FROM aspect_ptkb WHERE aspect_id = :id", {"id": aspect_id})
        run_many(
            db,
            "INSERT INTO aspect_ptkb (aspect_id, conversation_id, statement_id) VALUES (:aspect_id, :conv, :statement)",
            [{"aspect_id": aspect_id, "conv": conv, "statement": s} for s in dict.fromkeys(ptkb)],
        )
        return aspect_id


def delete_aspect(db: Store, aspect_id: int) -> None:
    with write(db):
        run(db, "DELETE FROM aspects WHERE id = :id", {"id": aspect_id})


def set_aspect_content(db: Store, aspect_id: int, run_name: str, text: str) -> None:
    """Record the words of a run's response about an aspect ('' = the response does not cover it)."""
    with write(db):
        turn_id = value(db, "SELECT turn_id FROM aspects WHERE id = :id", {"id": aspect_id})
        if turn_id is None:
            raise UnknownItem(f"unknown aspect {aspect_id}")
        if response_text(db, run_name, turn_id) is None:
            raise UnknownItem(f"run {run_name} has no response to turn {turn_id}")
        run(
            db,
            "INSERT INTO aspect_content (aspect_id, run, text, updated_at) VALUES (:aspect_id, :run, :text, :at) "
            "ON CONFLICT(aspect_id, run) DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at",
            {"aspect_id": aspect_id, "run": run_name, "text": (text or "").strip(), "at": now()},
        )


def add_to_content(db: Store, aspect_id: int, run_name: str, words: str) -> None:
    """Append selected words to a run's content of an aspect, in one transaction."""
    with write(db):
        before = value(
            db,
            "SELECT text FROM aspect_content WHERE aspect_id = :aspect_id AND run = :run",
            {"aspect_id": aspect_id, "run": run_name},
        )
        set_aspect_content(db, aspect_id, run_name, f"{before or ''} {words}".strip())


def llm_aspect_sources(db: Store, turn_id: str, run_name: str) -> list[str]:
    """Sources with a parsed ``prejudge --task aepd`` answer for a run's response to a turn."""
    return column(
        db,
        "SELECT DISTINCT source FROM prejudgments WHERE task = 'aepd' AND turn_id = :turn_id AND item_id = :run "
        f"AND parse_status IN ({_STATUS_NAMES}) AND parsed IS NOT NULL ORDER BY source",
        {"turn_id": turn_id, "run": run_name, **_STATUSES},
    )


def llm_aspects(db: Store, source: str, turn_id: str, run_name: str) -> list[dict]:
    """The aspects of the source's latest parsed AEPD answer for (run, turn): [{aspect, ptkb, text}]
    (the text is the response's words the model gave for the aspect, '' = not covered)."""
    parsed = value(
        db,
        "SELECT parsed FROM prejudgments WHERE source = :source AND task = 'aepd' AND turn_id = :turn_id "
        f"AND item_id = :run AND parse_status IN ({_STATUS_NAMES}) AND parsed IS NOT NULL "
        "ORDER BY id DESC LIMIT 1",
        {"source": source, "turn_id": turn_id, "run": run_name, **_STATUSES},
    )
    if parsed is None:
        raise UnknownItem(f"{source} has no AEPD aspects for run {run_name} on turn {turn_id}")
    return documents.proposed_aspects(json.loads(parsed))


def prefill_aspects(db: Store, source: str, turn_id: str, run_name: str) -> dict:
    """Copy an LLM's AEPD aspects for (run, turn) into the turn's aspect list, as the organizer's, to edit.

    One transaction. An aspect whose description the turn already has (ignoring case) is kept as it is;
    its content for ``run`` is filled only when it has none yet. A new aspect gets the LLM's PTKB links
    (statement ids the conversation lacks are dropped) and its content for ``run``. Returns counts.
    """
    proposed = llm_aspects(db, source, turn_id, run_name)
    counts = {"added": 0, "existing": 0, "content": 0, "dropped_ptkb": 0}
    with write(db):
        conv = _conversation(db, turn_id, [])
        known = {s["id"] for s in ptkb_statements(db, conv)}
        have = {a["aspect"].casefold(): a for a in turn_aspects(db, turn_id)}
        for a in proposed:
            old = have.get(a["aspect"].casefold())
            if old is None:
                links = [p for p in a["ptkb"] if p in known]
                counts["dropped_ptkb"] += len(a["ptkb"]) - len(links)
                aid = save_aspect(db, turn_id, a["aspect"], links)
                have[a["aspect"].casefold()] = {"id": aid, "content": {}}
                counts["added"] += 1
            else:
                aid = old["id"]
                counts["existing"] += 1
                if run_name in old["content"]:
                    continue
            set_aspect_content(db, aid, run_name, a["text"])
            have[a["aspect"].casefold()]["content"][run_name] = a["text"]
            counts["content"] += 1
    return counts


def content_spans(db: Store, turn_id: str, run_name: str) -> list[tuple[int, int]]:
    """Where the turn's aspect contents for ``run`` are in the run's response (code points, for highlighting).

    Contents are stored as words only; they are located with :func:`assess.nuggets.spans.locate_pieces`."""
    response = response_text(db, run_name, turn_id) or ""
    return [
        (s.start, s.end)
        for a in turn_aspects(db, turn_id)
        for s in spans.locate_pieces(response, a["content"].get(run_name, ""))
    ]


def aepd_export(db: Store, *, runs: Sequence[str] | None = None, turn_ids: Sequence[str] | None = None) -> dict:
    """The ``score aepd`` input: one entry '<run>/<turn>' per run with a response to a turn that has aspects."""
    runs = list(runs) if runs else response_runs(db)
    with_aspects = set(column(db, "SELECT DISTINCT turn_id FROM aspects"))
    turns = list(turn_ids) if turn_ids else [t for t in all_turns(db) if t in with_aspects]
    entries = []
    for run_name in runs:
        for turn in turns:
            if response_text(db, run_name, turn) is None:
                continue
            listed = turn_aspects(db, turn)
            if not listed:
                continue
            conv = value(db, "SELECT conversation_id FROM turns WHERE id = :id", {"id": turn})
            entries.append(
                {
                    "id": f"{run_name}/{turn}",
                    "system": run_name,
                    "conversation": conv,
                    "aspects": [
                        {
                            "aspect": a["aspect"],
                            "ptkb": documents.ptkb_ids(a["ptkb"]),
                            "text": a["content"].get(run_name, ""),
                        }
                        for a in listed
                    ],
                }
            )
    return documents.aepd_document(entries)
