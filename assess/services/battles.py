"""Side-by-side battles: imports and exports of battle files, plans, the Bradley-Terry ranking with its
companions (win rates, Elo, swapped-order consistency, agreement between sources) and the battle page's
queue and screens. The command line (``battles``), the ``/battles`` page and the Bradley-Terry tab of
``/scores`` call these, so they show the same figures."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from assess.errors import AssessError
from assess.formats.battles import BattleRecord, iter_battles, write_battles
from assess.measures import battles as measures
from assess.tasks import source_kind
from store import battles as store
from store.db import Store


def import_file(db: Store, path: str | Path, source: str, *, by: str | None = None) -> dict[str, int]:
    """Read a battle file whole (a FormatError names file, line and field; nothing is written) and store its
    battles as labels of ``source`` in one transaction."""
    records = list(iter_battles(path))
    return store.import_battles(db, source, records, file=Path(path).name, by=by)


def export_file(db: Store, source: str, out: IO[str]) -> int:
    """Write the source's battles as a battle file (the import layout), in the order judged; return how many."""
    store.require_battle_source(db, source)
    return write_battles(
        out,
        (
            BattleRecord(b["turn_id"], b["run_a"], b["run_b"], b["winner"], b["occurrence"], b["note"], b["reshow"])
            for b in store.battles(db, source)
        ),
    )


def _battles(db: Store, source: str) -> list[measures.Battle]:
    store.require_battle_source(db, source)
    return [
        measures.Battle(b["turn_id"], b["run_a"], b["run_b"], b["winner"], b["reshow"])
        for b in store.battles(db, source)
    ]


def ranking(
    db: Store,
    source: str,
    *,
    replicates: int = measures.DEFAULT_REPLICATES,
    level: float = measures.DEFAULT_LEVEL,
    seed: int = measures.DEFAULT_SEED,
) -> dict[str, Any]:
    """``{"model": ..., "runs": {run: {strength, low, high, win_rate, battles}}}``: what ``battles rank --json``
    prints and the Bradley-Terry tab shows (runs by strength, strongest first, then by name)."""
    ranked = measures.rank(_battles(db, source), replicates=replicates, level=level, seed=seed)
    order = sorted(ranked, key=lambda r: (-ranked[r].strength, r))
    return {
        "model": measures.model_text(replicates, level, seed),
        "runs": {r: ranked[r]._asdict() for r in order},
    }


def report(
    db: Store,
    source: str,
    *,
    replicates: int = measures.DEFAULT_REPLICATES,
    level: float = measures.DEFAULT_LEVEL,
    seed: int = measures.DEFAULT_SEED,
) -> dict[str, Any]:
    """:func:`ranking` with Elo ratings (in the order judged), the count of both_bad battles, and the source's
    swapped-order consistency (its position bias when it is an LLM)."""
    battles = _battles(db, source)
    out = ranking(db, source, replicates=replicates, level=level, seed=seed)
    out["elo"] = measures.elo(battles)
    out["both_bad"] = sum(b.winner == "both_bad" for b in battles)
    out["swapped_order"] = measures.swapped_order(battles)
    return out


def agreement(db: Store, source: str, other: str) -> dict[str, Any]:
    """Agreement of two battle sources on the battles both judged (:func:`assess.measures.battles.source_agreement`),
    with each source's kind (``assessor``, ``llm``, ...)."""
    kinds = {s["name"]: source_kind(s["name"], s["kind"]).value for s in store.battle_sources(db)}
    out = measures.source_agreement(_battles(db, source), _battles(db, other))
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
    if method not in measures.PLAN_METHODS:
        raise AssessError(f"a plan's method is one of {', '.join(measures.PLAN_METHODS)}, not {method!r}")
    runs = {t: r for t, r in store.response_runs(db).items() if len(r) > 1}
    details: dict[str, Any] = {}
    if method == "all":
        pairs = measures.all_pairs(runs)
    elif method == "random":
        if per_topic is None:
            raise AssessError("a random plan needs --pairs (pairs per topic)")
        pairs = measures.random_pairs(runs, per_topic, seed)
        details = {"pairs_per_topic": per_topic, "seed": seed}
    else:
        if budget is None:
            raise AssessError("an adaptive plan needs --budget (battles to spend)")
        strengths: dict[str, float] = {}
        judged: dict[tuple[str, str, str], int] = {}
        if source is not None:
            battles = _battles(db, source)
            strengths = {r: s.strength for r, s in measures.rank(battles, replicates=0).items()}
            for b in battles:
                key = (b.topic_id, *sorted((b.run_a, b.run_b)))
                judged[key] = judged.get(key, 0) + 1
        pairs = measures.adaptive_pairs(runs, strengths, judged, budget, seed)
        details = {"budget": budget, "seed": seed, "source": source}
    count = store.create_plan(db, name, method, pairs, details=details, by=by)
    return {"plan": name, "method": method, "pairs": count, "topics": len({p[0] for p in pairs})}


# ------------------------------------------------------------------------------------------- the battle page


def _digest(*parts: str) -> int:
    text = "\x1f".join(parts).encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "big")


RESHOW_SHARE = 0.1
"""The share of a person's battles shown again later, in swapped order, to measure their consistency."""


def queue(db: Store, plan: str, person: str, *, reshow_share: float = RESHOW_SHARE) -> list[dict[str, Any]]:
    """A person's battles of ``plan`` in their own order: ``{turn_id, run_a, run_b, reshow}``, ``run_a`` on the
    left. The order of the battles and which run is on the left are drawn per person (a hash of the person, the
    topic and the pair: stable across sessions, different between people); a ``reshow_share`` of them come again
    after all the others, in swapped order."""
    out, again = [], []
    for turn, x, y in store.plan_pairs(db, plan):
        h = _digest(person, turn, x, y)
        left, right = (x, y) if h & 1 else (y, x)
        out.append((h >> 1, {"turn_id": turn, "run_a": left, "run_b": right, "reshow": False}))
        if (h >> 8) % 1000 < reshow_share * 1000:
            again.append((h >> 1, {"turn_id": turn, "run_a": right, "run_b": left, "reshow": True}))
    return [item for _, item in sorted(out, key=lambda p: p[0])] + [
        item for _, item in sorted(again, key=lambda p: p[0])
    ]


def pending(db: Store, plan: str, person: str) -> tuple[list[dict[str, Any]], int]:
    """The person's battles of ``plan`` not judged yet, in queue order, and how many the queue holds in all."""
    items = queue(db, plan, person)
    done = store.judged(db, person)
    return [i for i in items if (i["turn_id"], i["run_a"], i["run_b"]) not in done], len(items)


def save(
    db: Store,
    person: str,
    item: dict[str, Any],
    winner: str,
    *,
    active_ms: int | None = None,
    note: str | None = None,
) -> None:
    """Store a person's verdict on the battle ``item`` of their queue (rights checked in the write)."""
    store.save_battle(
        db,
        person,
        item["turn_id"],
        item["run_a"],
        item["run_b"],
        winner,
        reshow=bool(item["reshow"]),
        active_ms=active_ms,
        note=note,
    )


def screen(db: Store, item: dict[str, Any]) -> dict[str, Any]:
    """What the battle page shows for one battle: the turn's context (conversation and PTKB for an iKAT turn;
    title and utterance, the narrative, for a RAG topic) and the two answers, each with its sentences and the
    passages they cite: ``{"context", "left", "right"}``."""
    from store.conversations import turn_contexts
    from store.responses import stored_responses

    contexts = turn_contexts(db, [item["turn_id"]])
    answers = {r.run: r for r in stored_responses(db, turn_id=item["turn_id"], runs=(item["run_a"], item["run_b"]))}
    missing = [r for r in (item["run_a"], item["run_b"]) if r not in answers]
    if missing:
        raise AssessError(f"no stored response of run {missing[0]!r} to {item['turn_id']!r}")
    return {
        "context": contexts.get(item["turn_id"]),
        "left": answers[item["run_a"]],
        "right": answers[item["run_b"]],
    }


def plan_names(db: Store) -> Sequence[str]:
    """The names of the stored battle plans, oldest first."""
    return [p["name"] for p in store.plans(db)]
