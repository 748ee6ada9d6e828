"""The breakdowns of the audit's figures: each turn's topic (its conversation), its depth, and whether it is
personal by a PTKB source's labels."""

from __future__ import annotations

from typing import Any

from assess.errors import AssessError
from store.audit import task_labels, turn_places
from store.labels import sources

BREAKDOWNS = ("topic", "depth", "personal")
PTKB_DEFAULT = "organizers"
DEPTH_RULE = "turn depth: the turn's position in its conversation, 1 = the first turn"
TOPIC_RULE = "topic: the turn's conversation"


def _ptkb_source(db, given: str | None) -> str | None:
    with_ptkb = sources(db, "ptkb")
    if given is not None:
        if given not in with_ptkb:
            raise AssessError(
                f"PTKB source {given!r} has no PTKB labels; sources with PTKB labels: {', '.join(with_ptkb) or 'none'}"
            )
        return given
    if PTKB_DEFAULT in with_ptkb:
        return PTKB_DEFAULT
    return with_ptkb[0] if len(with_ptkb) == 1 else None


def personal_turns(db, ptkb_source: str | None = None) -> dict[str, Any]:
    """Which turns are personal: ``{"source", "rule", "turns": {turn: bool}}``.

    A turn is personal when the PTKB source marks at least one of its conversation's statements relevant
    (label > 0) for the turn, non-personal when it labelled the turn's statements and marked none; turns it
    did not label are unknown (left out of the personal breakdown). The source: ``ptkb_source`` when given,
    else 'organizers' (the topics' PTKB provenance) when it has PTKB labels, else the only source with PTKB
    labels; with none, no turn is known.
    """

    source = _ptkb_source(db, ptkb_source)
    rule = "personal: at least one PTKB statement marked relevant (> 0) for the turn by the PTKB source"
    if source is None:
        return {"source": None, "rule": rule + " (no PTKB source: no turn is known)", "turns": {}}
    turns: dict[str, bool] = {}
    for (turn, _statement), value in task_labels(db, "ptkb", [source])[source].items():
        turns[turn] = turns.get(turn, False) or value > 0
    return {"source": source, "rule": rule, "turns": turns}


def turn_groups(db, breakdowns, ptkb_source: str | None) -> tuple[dict, dict]:
    """{breakdown: {turn: group}} of every known turn, and how each breakdown is defined."""

    unknown = [b for b in breakdowns if b not in BREAKDOWNS]
    if unknown:
        raise AssessError(f"unknown breakdown {unknown[0]!r}; expected one of {', '.join(BREAKDOWNS)}")
    places = turn_places(db) if {"topic", "depth"} & set(breakdowns) else {}
    groups, rules = {}, {}
    if "topic" in breakdowns:
        groups["topic"] = {turn: conversation for turn, (conversation, _) in places.items()}
        rules["topic"] = TOPIC_RULE
    if "depth" in breakdowns:
        groups["depth"] = {turn: position + 1 for turn, (_, position) in places.items()}
        rules["depth"] = DEPTH_RULE
    if "personal" in breakdowns:
        personal = personal_turns(db, ptkb_source)
        groups["personal"] = dict(personal["turns"])
        rules["personal"] = {"rule": personal["rule"], "ptkb_source": personal["source"]}
    return groups, rules


def item_groups(db, items, breakdowns, ptkb_source: str | None) -> tuple[dict, dict]:
    """{breakdown: {item: group}} for the items (turn first) and how each breakdown is defined."""
    by_turn, rules = turn_groups(db, breakdowns, ptkb_source)
    groups = {name: {i: mapping[i[0]] for i in items if i[0] in mapping} for name, mapping in by_turn.items()}
    return groups, rules
