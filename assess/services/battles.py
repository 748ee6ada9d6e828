"""Side-by-side battles: imports and exports of battle files, plans, the Bradley-Terry ranking with its
companions (win rates, Elo, swapped-order consistency, agreement between sources) and the battle page's
queue and screens. The command line (``battles``), the ``/battles`` page and the Bradley-Terry tab of
``/scores`` call these, so they show the same figures."""

from __future__ import annotations

import hashlib
import hmac
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple

from assess.errors import AssessError, UnknownItem
from assess.formats.battles import BattleRecord, iter_battles, write_battles
from assess.measures import battles as bt
from assess.tasks import TurnContext, source_kind
from store import battles as battle_store
from store.conversations import passage_text, turn_context
from store.db import Store
from store.responses import response
from store.screens import labels_version


def import_file(db: Store, path: str | Path, source: str, *, by: str | None = None) -> dict[str, int]:
    """Read a battle file a record at a time (a FormatError names file, line and field; nothing is written) and
    store its battles as labels of ``source``, staged and made visible in one switch."""
    return battle_store.import_battles(db, source, iter_battles(path), file=Path(path).name, by=by)


def export_file(db: Store, source: str, out: IO[str]) -> int:
    """Write the source's battles as a battle file (the import layout), in the order judged; return how many."""
    battle_store.require_battle_source(db, source)
    return write_battles(
        out,
        (
            BattleRecord(b["turn_id"], b["run_a"], b["run_b"], b["winner"], b["occurrence"], b["note"], b["reshow"])
            for b in battle_store.battles(db, source)
        ),
    )


def _battles(db: Store, source: str) -> list[bt.Battle]:
    battle_store.require_battle_source(db, source)
    return [
        bt.Battle(b["turn_id"], b["run_a"], b["run_b"], b["winner"], b["reshow"])
        for b in battle_store.battles(db, source)
    ]


def ranking(
    db: Store,
    source: str,
    *,
    replicates: int = bt.DEFAULT_REPLICATES,
    level: float = bt.DEFAULT_LEVEL,
    seed: int = bt.DEFAULT_SEED,
) -> dict[str, Any]:
    """``{"model": ..., "runs": {run: {strength, low, high, win_rate, battles}}}``: what ``battles rank --json``
    prints and the Bradley-Terry tab shows (runs by strength, strongest first, then by name)."""
    ranked = bt.rank(_battles(db, source), replicates=replicates, level=level, seed=seed)
    order = sorted(ranked, key=lambda r: (-ranked[r].strength, r))
    return {
        "model": bt.model_text(replicates, level, seed),
        "runs": {r: ranked[r]._asdict() for r in order},
    }


def report(
    db: Store,
    source: str,
    *,
    replicates: int = bt.DEFAULT_REPLICATES,
    level: float = bt.DEFAULT_LEVEL,
    seed: int = bt.DEFAULT_SEED,
) -> dict[str, Any]:
    """:func:`ranking` with Elo ratings (in the order judged), the count of both_bad battles, and the source's
    swapped-order consistency (its position bias when it is an LLM)."""
    battles = _battles(db, source)
    out = ranking(db, source, replicates=replicates, level=level, seed=seed)
    out["elo"] = bt.elo(battles)
    out["both_bad"] = sum(b.winner == "both_bad" for b in battles)
    out["swapped_order"] = bt.swapped_order(battles)
    return out


def agreement(db: Store, source: str, other: str) -> dict[str, Any]:
    """Agreement of two battle sources on the battles both judged (:func:`assess.measures.battles.source_agreement`),
    with each source's kind (``assessor``, ``llm``, ...)."""
    kinds = {s["name"]: source_kind(s["name"], s["kind"]).value for s in battle_store.battle_sources(db)}
    out = bt.source_agreement(_battles(db, source), _battles(db, other))
    return {"sources": {source: kinds[source], other: kinds[other]}, **out}


def plan(
    db: Store,
    name: str,
    method: str,
    *,
    per_topic: int | None = None,
    budget: int | None = None,
    source: str | None = None,
    seed: int = 0,
    by: str | None = None,
) -> dict[str, Any]:
    """Make and store the battle plan ``name`` over the stored responses: ``all`` pairs per topic, ``random``
    (``per_topic`` pairs per topic, seeded) or ``adaptive`` (``budget`` battles where the outcome under
    ``source``'s current strengths is least certain). Returns ``{"plan", "method", "pairs", "topics"}``."""
    if method not in bt.PLAN_METHODS:
        raise AssessError(f"a plan's method is one of {', '.join(bt.PLAN_METHODS)}, not {method!r}")
    runs = {t: r for t, r in battle_store.response_runs(db).items() if len(r) > 1}
    details: dict[str, Any] = {}
    if method == "all":
        pairs = bt.all_pairs(runs)
    elif method == "random":
        if per_topic is None:
            raise AssessError("a random plan needs --pairs (pairs per topic)")
        pairs = bt.random_pairs(runs, per_topic, seed)
        details = {"pairs_per_topic": per_topic, "seed": seed}
    else:
        if budget is None:
            raise AssessError("an adaptive plan needs --budget (battles to spend)")
        strengths: dict[str, float] = {}
        judged: dict[tuple[str, str, str], int] = {}
        if source is not None:
            battles = _battles(db, source)
            strengths = {r: s.strength for r, s in bt.rank(battles, replicates=0).items()}
            for b in battles:
                key = (b.topic_id, *sorted((b.run_a, b.run_b)))
                judged[key] = judged.get(key, 0) + 1
        pairs = bt.adaptive_pairs(runs, strengths, judged, budget, seed)
        details = {"budget": budget, "seed": seed, "source": source}
    count = battle_store.create_plan(db, name, method, pairs, details=details, by=by)
    return {"plan": name, "method": method, "pairs": count, "topics": len({p[0] for p in pairs})}


# ------------------------------------------------------------------------------------------- the battle page


def _digest(secret: bytes, *parts: str) -> int:
    """HMAC-SHA256 of the parts under the store's blinding secret: no one without the store can compute it."""
    text = "\x1f".join(parts).encode()
    return int.from_bytes(hmac.new(secret, text, hashlib.sha256).digest()[:8], "big")


RESHOW_SHARE = 0.1
"""The share of a person's battles shown again later, in swapped order, to measure their consistency."""


def queue(
    db: Store,
    plan: str,
    person: str,
    *,
    reshow_share: float = RESHOW_SHARE,
    shown: Mapping[tuple[str, str, str], bool] | None = None,
) -> list[dict[str, Any]]:
    """A person's battles of ``plan`` in their own order: ``{turn_id, run_a, run_b, reshow}``, ``run_a`` on the
    left. The order of the battles and which run is on the left are drawn per person: an HMAC-SHA256 under the
    store's own secret (:func:`store.battles.blinding_secret`) of the person, the topic and the pair -- stable
    across sessions, different between people, and not computable from the public facts alone. A battle the
    person already judged keeps the sides its stored verdict was given in (``shown``: the person's
    :func:`store.battles.shown_sides`, read when not given), so verdicts given under an earlier draw keep their
    meaning and are not asked again. Exactly ``ceil(reshow_share x n)`` of the plan's n battles (those of the
    smallest second hash, after any the person already saw again) come again after all the others, in swapped
    order, so that even a small plan gives each person a consistency figure."""
    secret = battle_store.blinding_secret(db)
    if shown is None:
        shown = battle_store.shown_sides(db, person)
    first = {(t, frozenset((a, b))): (a, b) for (t, a, b), again in shown.items() if not again}
    second = {(t, frozenset((a, b))): (a, b) for (t, a, b), again in shown.items() if again}
    out, drawn = [], []
    for turn, x, y in battle_store.plan_pairs(db, plan):
        h = _digest(secret, person, turn, x, y)
        key = (turn, frozenset((x, y)))
        if key in first:
            left, right = first[key]
        elif key in second:
            right, left = second[key]
        else:
            left, right = (x, y) if h & 1 else (y, x)
        out.append((h >> 1, {"turn_id": turn, "run_a": left, "run_b": right, "reshow": False}))
        drawn.append(
            (
                key not in second,
                (h >> 8) % 1_000_003,
                h >> 1,
                {"turn_id": turn, "run_a": right, "run_b": left, "reshow": True},
            )
        )
    count = math.ceil(reshow_share * len(out) - 1e-9) if reshow_share > 0 else 0
    count = max(count, sum(not d[0] for d in drawn))
    again = sorted(drawn, key=lambda d: d[:2])[:count]
    return [item for _, item in sorted(out, key=lambda p: p[0])] + [
        item for *_, item in sorted(again, key=lambda d: d[2])
    ]


def pending(db: Store, plan: str, person: str) -> tuple[list[dict[str, Any]], int]:
    """The person's battles of ``plan`` not judged yet, in queue order, and how many the queue holds in all."""
    shown = battle_store.shown_sides(db, person)
    items = queue(db, plan, person, shown=shown)
    return [i for i in items if (i["turn_id"], i["run_a"], i["run_b"]) not in shown], len(items)


def save(
    db: Store,
    person: str,
    item: dict[str, Any],
    winner: str,
    *,
    active_ms: int | None = None,
    note: str | None = None,
    fresh: bool = False,
) -> None:
    """Store a person's verdict on the battle ``item`` of their queue (rights checked in the write); ``fresh``:
    a key press on a battle the page drew without a verdict (one stored meanwhile elsewhere is kept:
    :class:`store.labels.StaleLabel`)."""
    battle_store.save_battle(
        db,
        person,
        item["turn_id"],
        item["run_a"],
        item["run_b"],
        winner,
        reshow=bool(item["reshow"]),
        active_ms=active_ms,
        note=note,
        fresh=fresh,
    )


class Answer(NamedTuple):
    """One side of a battle: the answer's text cut into sentences, each with the passages it cites, the passages
    the answer cites as a whole, and the text of every cited passage (None: the store has no text for it)."""

    text: str
    sentences: tuple[tuple[str, tuple[str, ...]], ...]
    citations: tuple[str, ...]
    passages: Mapping[str, str | None]


class BattleScreen(NamedTuple):
    """What the battle page shows: the topic's context (conversation and PTKB of an iKAT turn; a RAG topic's
    text as its utterance), the narrative a RAG answer file gave, and the two answers, left and right."""

    context: TurnContext
    narrative: str | None
    left: Answer
    right: Answer


def _answer(db: Store, found: dict) -> Answer:
    sentences = tuple((s["text"], tuple(s["citations"])) for s in found["sentences"])
    cited = [p for _, c in sentences for p in c] + list(found["citations"])
    passages = {p: passage_text(db, p) for p in dict.fromkeys(cited)}
    return Answer(found["text"], sentences, tuple(found["citations"]), passages)


def _narrative(fields: Mapping | None) -> str | None:
    """The narrative (or topic text) a TREC RAG answer file gave with the answer, when it gave one."""
    if not fields:
        return None
    meta = fields.get("metadata")
    for value in ((meta or {}).get("narrative") if isinstance(meta, Mapping) else None, fields.get("topic")):
        if isinstance(value, str) and value.strip():
            return value
    return None


def screen(db: Store, item: Mapping[str, Any]) -> BattleScreen:
    """The screen of one battle of a queue (``run_a`` on the left); a response no longer stored is refused."""

    found = {}
    for run in (item["run_a"], item["run_b"]):
        found[run] = response(db, run, item["turn_id"])
        if found[run] is None:
            raise UnknownItem(f"no stored response of run {run!r} to {item['turn_id']!r}")
    left, right = found[item["run_a"]], found[item["run_b"]]
    return BattleScreen(
        turn_context(db, item["turn_id"]),
        _narrative(left["file_fields"]) or _narrative(right["file_fields"]),
        _answer(db, left),
        _answer(db, right),
    )


def undo(db: Store, person: str) -> tuple | None:
    """Take back the person's latest battle verdict (rights checked in the write); the battle or None."""
    return battle_store.undo_battle(db, person)


def exposure_warning(db: Store, plan: str, *, judges_only: bool = False) -> str | None:
    """The organizer's warning when people who judge (or, ``judges_only`` False, may judge) the battles of
    ``plan`` have seen the same responses with their run names on /ntr, /citations or /banks; None when nobody
    has. Blinding is then weaker for them: give the battles to other people, or keep them off those pages."""
    exposed = battle_store.run_name_exposure(db, plan)
    if judges_only:
        judges = set(battle_store.battle_judges(db, plan))
        exposed = {name: pages for name, pages in exposed.items() if name in judges}
    if not exposed:
        return None
    who = "; ".join(f"{name} ({', '.join(pages)})" for name, pages in exposed.items())
    doing = "judge" if judges_only else "may judge"
    return (
        f"{len(exposed)} person(s) who {doing} the battles of plan {plan!r} saw the same responses with their "
        f"run names: {who}. The battles are not blind for them; give the battles to other people."
    )


def plan_names(db: Store) -> Sequence[str]:
    """The names of the stored battle plans, oldest first."""
    return [p["name"] for p in battle_store.plans(db)]


def sources(db: Store) -> list[str]:
    """The names of the sources with battles."""
    return [s["name"] for s in battle_store.battle_sources(db)]


def default_source(db: Store, names: list[str]) -> str | None:
    """The battle source a picker opens on: the one with the most battles (ties by name), None without any."""
    counts = battle_store.battle_counts(db)
    return min(names, key=lambda n: (-counts.get(n, 0), n), default=None)


def version(db: Store, source: str) -> tuple:
    """Changes whenever the source's battles change (what a cached ranking is keyed by)."""

    return labels_version(db, "battle", source)
