"""GFRC2 studies and the relevant nuggets organizers mark in systems' responses (word ranges).

A mark is a 1-based inclusive range of whitespace words of one response; the ``score gfrc2`` input
numbers words over the whole conversation (:func:`assess.nuggets.documents.gfrc2_document`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from assess.errors import AssessError, InvalidSpan, UnknownItem
from assess.nuggets import documents
from store import conversations
from store.db import Store, column, now, returning, row, rows, run, write


def save_study(db: Store, name: str, attributes: Sequence[dict], *, max_level: int = 2, L: int = 1000) -> dict:
    """Create or update a GFRC2 study: its attribute sets (validated), level range and L."""
    name = (name or "").strip()
    if not name or "/" in name:
        raise AssessError("a study name is non-empty and has no '/'")
    if not isinstance(max_level, int) or max_level < 1 or not isinstance(L, int) or L < 1:
        raise AssessError("max_level and L are positive integers")
    clean = documents.validate_attributes(attributes)
    with write(db):
        run(
            db,
            'INSERT INTO gfrc_studies (name, attributes, max_level, "L", created_at) '
            "VALUES (:name, :attributes, :max_level, :L, :at) "
            "ON CONFLICT(name) DO UPDATE SET attributes = excluded.attributes, max_level = excluded.max_level, "
            '"L" = excluded."L"',
            {"name": name, "attributes": json.dumps(clean), "max_level": max_level, "L": L, "at": now()},
        )
    return study(db, name)


def studies(db: Store) -> list[str]:
    return column(db, "SELECT name FROM gfrc_studies ORDER BY created_at, name")


def study(db: Store, name: str) -> dict:
    found = row(db, 'SELECT attributes, max_level, "L" FROM gfrc_studies WHERE name = :name', {"name": name})
    if found is None:
        raise UnknownItem(f"no GFRC2 study named {name!r}")
    return {
        "name": name,
        "attributes": json.loads(found["attributes"]),
        "max_level": found["max_level"],
        "L": found["L"],
    }


def response_runs(db: Store) -> list[str]:
    return column(db, "SELECT DISTINCT run FROM responses ORDER BY run")


def turn_runs(db: Store, turn_id: str) -> list[str]:
    """The runs with a response to the turn, by name."""
    return column(db, "SELECT DISTINCT run FROM responses WHERE turn_id = :turn_id ORDER BY run", {"turn_id": turn_id})


def response_text(db: Store, run_name: str, turn_id: str) -> str | None:
    """A run's response to a turn; None when the run has none."""
    found = row(
        db, "SELECT text FROM responses WHERE run = :run AND turn_id = :turn_id", {"run": run_name, "turn_id": turn_id}
    )
    return None if found is None else found["text"]


def system_conversation(db: Store, run_name: str, conversation_id: str) -> list[documents.TurnText]:
    """The conversation as the run had it: each turn's user utterance and the run's response, in order."""
    return [
        documents.TurnText(r["id"], r["position"] + 1, r["utterance"], r["text"])
        for r in rows(
            db,
            "SELECT t.id AS id, t.position AS position, t.utterance AS utterance, r.text AS text FROM turns t "
            "LEFT JOIN responses r ON r.turn_id = t.id AND r.run = :run WHERE t.conversation_id = :conversation_id "
            "ORDER BY t.position",
            {"run": run_name, "conversation_id": conversation_id},
        )
    ]


def mark_response_nugget(
    db: Store, study_name: str, run_name: str, turn_id: str, start_word: int, end_word: int, level: int, groups: dict
) -> int:
    """Mark words ``start_word..end_word`` (1-based, inclusive) of a run's response as a relevant nugget."""
    config = study(db, study_name)
    if not isinstance(level, int) or not 1 <= level <= config["max_level"]:
        raise AssessError(f"a level is 1..{config['max_level']}, not {level!r}")
    for a in config["attributes"]:
        if groups.get(a["name"]) not in a["groups"]:
            raise AssessError(f"{a['name']} is one of {', '.join(a['groups'])}, not {groups.get(a['name'])!r}")
    response = response_text(db, run_name, turn_id)
    if response is None:
        raise UnknownItem(f"run {run_name} has no response to turn {turn_id}")
    toks = documents.words(response)
    if not 1 <= start_word <= end_word <= len(toks):
        raise InvalidSpan(f"words {start_word}-{end_word} are not inside the response ({len(toks)} words)")
    with write(db):
        clash = row(
            db,
            "SELECT start_word, end_word FROM response_nuggets WHERE study = :study AND run = :run "
            "AND turn_id = :turn_id AND start_word <= :end AND end_word >= :start",
            {"study": study_name, "run": run_name, "turn_id": turn_id, "end": end_word, "start": start_word},
        )
        if clash:
            raise InvalidSpan(
                f"words {start_word}-{end_word} overlap the nugget at words {clash['start_word']}-{clash['end_word']}"
            )
        return returning(
            db,
            "INSERT INTO response_nuggets (study, run, turn_id, start_word, end_word, level, groups, text, updated_at) "
            "VALUES (:study, :run, :turn_id, :start, :end, :level, :groups, :text, :at) RETURNING id",
            {
                "study": study_name,
                "run": run_name,
                "turn_id": turn_id,
                "start": start_word,
                "end": end_word,
                "level": level,
                "groups": json.dumps({a["name"]: groups[a["name"]] for a in config["attributes"]}),
                "text": " ".join(toks[start_word - 1 : end_word]),
                "at": now(),
            },
        )["id"]


def response_marks(db: Store, study_name: str, run_name: str, conversation_id: str | None = None) -> list[dict]:
    sql = (
        "SELECT m.id AS id, m.turn_id AS turn_id, m.start_word AS start_word, m.end_word AS end_word, "
        "m.level AS level, m.groups AS groups, m.text AS text FROM response_nuggets m "
        "JOIN turns t ON t.id = m.turn_id WHERE m.study = :study AND m.run = :run"
    )
    params = {"study": study_name, "run": run_name}
    if conversation_id is not None:
        sql += " AND t.conversation_id = :conversation_id"
        params["conversation_id"] = conversation_id
    marks = rows(db, sql + " ORDER BY t.position, m.start_word", params)
    for m in marks:
        m["groups"] = json.loads(m["groups"])
    return marks


def delete_mark(db: Store, mark_id: int) -> None:
    with write(db):
        run(db, "DELETE FROM response_nuggets WHERE id = :id", {"id": mark_id})


def gfrc2_export(
    db: Store, study_name: str, *, runs: Sequence[str] | None = None, conversation_ids: Sequence[str] | None = None
) -> dict:
    """The ``score gfrc2`` input of a study: one conversation '<run>/<conversation>' per run and conversation."""
    config = study(db, study_name)
    runs = list(runs) if runs else response_runs(db)
    convs = list(conversation_ids) if conversation_ids else conversations.conversation_ids(db)
    built = []
    for run_name in runs:
        for conv in convs:
            turns = system_conversation(db, run_name, conv)
            if not any(t.response for t in turns):
                continue
            built.append(
                {"id": f"{run_name}/{conv}", "turns": turns, "marks": response_marks(db, study_name, run_name, conv)}
            )
    return documents.gfrc2_document(
        config,
        built,
        about=f"GFRC2 study {study_name}: response nuggets marked in the "
        "assessment workbench; conversation id '<run>/<conversation>'; positions are "
        "1-based inclusive word positions over U1 S1 U2 S2 ... split on whitespace.",
    )
