"""What the arenas learned, on stored battles: rankings controlled for style and citations, fragility of the
top rank, provisional ranks, and preference pairs for DPO. ``battles rank --control / --fragility``, ``battles
export --layout dpo|hf`` and the Bradley-Terry tab of /scores call these."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from assess.errors import AssessError, UnknownItem
from assess.formats import preferences
from assess.measures import battle_controls as bc
from assess.measures import battles as bt
from assess.measures import fragility as fr
from assess.tasks import source_kind
from store import battles as battle_store
from store.conversations import turn_context
from store.db import Store
from store.responses import response, responses

FEATURES = bc.FEATURES

MIN_BATTLES = 50
"""A run's rank is provisional until it has this many counted battles (both_bad left out)."""

_CODE = {"a": 0, "b": 1, "tie": 2}
_Y = {"a": 1.0, "b": 0.0, "tie": 0.5}


def _counted(db: Store, source: str) -> list[dict[str, Any]]:
    battle_store.require_battle_source(db, source)
    return [b for b in battle_store.battles(db, source) if b["winner"] != "both_bad"]


def _features(db: Store, source: str, found: list[dict], controls: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per battle and control, the left and right answers' feature: from the battle file where it gave them,
    else computed from the stored answers; a battle with neither is refused, naming it."""
    given = battle_store.battle_features(db, source)
    stored: dict[tuple[str, str], dict[str, float]] = {}
    if any((b["turn_id"], b["run_a"], b["run_b"], b["occurrence"]) not in given for b in found):
        support = battle_store.citation_support(db) if "supported_share" in controls else {}
        for r in responses(db):
            cited = [c for s in r["sentences"] for c in s["citations"]] + list(r["citations"])
            key = (r["turn_id"], r["run"])
            stored[(r["run"], r["turn_id"])] = bc.answer_features(r["text"], cited, support.get(key, []))
    sides = np.zeros((2, len(found), len(controls)))
    for i, b in enumerate(found):
        pair = given.get((b["turn_id"], b["run_a"], b["run_b"], b["occurrence"]))
        if pair is None:
            pair = (stored.get((b["run_a"], b["turn_id"])), stored.get((b["run_b"], b["turn_id"])))
        for side, features in enumerate(pair):
            missing = [c for c in controls if features is None or c not in features]
            if missing:
                raise AssessError(
                    f"battle {b['turn_id']} {b['run_a']} vs {b['run_b']}: no {missing[0]!r} for "
                    f"{(b['run_a'], b['run_b'])[side]!r} (give features_a / features_b in the battle file, or "
                    "import the answers)"
                )
            sides[side, i] = [features[c] for c in controls]
    return sides[0], sides[1]


def _indices(found: list[dict]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    runs = sorted({r for b in found for r in (b["run_a"], b["run_b"])})
    index = {r: i for i, r in enumerate(runs)}
    left = np.array([index[b["run_a"]] for b in found], dtype=np.int64)
    right = np.array([index[b["run_b"]] for b in found], dtype=np.int64)
    y = np.array([_Y[b["winner"]] for b in found])
    return runs, left, right, y


def _check_controls(controls: Sequence[str]) -> list[str]:
    unknown = [c for c in controls if c not in bc.FEATURES]
    if unknown:
        raise AssessError(f"a control is one of {', '.join(bc.FEATURES)}, not {unknown[0]!r}")
    return list(dict.fromkeys(controls))


def controlled(
    db: Store,
    source: str,
    controls: Sequence[str],
    *,
    replicates: int = bt.DEFAULT_REPLICATES,
    level: float = bt.DEFAULT_LEVEL,
    seed: int = bt.DEFAULT_SEED,
) -> dict[str, Any]:
    """The ranking of :func:`assess.services.battles.ranking` controlled for ``controls``: runs' strengths and
    intervals from the controlled model (win rates and battle counts as before) and ``controls``: ``{name:
    {coef, low, high}}`` (the effect of one standard deviation of the feature's difference on the log-odds)."""
    controls = _check_controls(controls)
    found = _counted(db, source)
    if not found:
        return {"model": model_text(controls, replicates, level, seed), "runs": {}, "controls": {}}
    runs, left, right, y = _indices(found)
    fa, fb = _features(db, source, found, controls)
    got = bc.rank_controlled(
        left, right, y, bc.differences(fa, fb), len(runs), controls, replicates=replicates, level=level, seed=seed
    )
    plain = bt.rank([bt.Battle(b["turn_id"], b["run_a"], b["run_b"], b["winner"]) for b in found], replicates=0)
    order = sorted(range(len(runs)), key=lambda i: (-got["strength"][i], runs[i]))
    return {
        "model": model_text(controls, replicates, level, seed),
        "runs": {
            runs[i]: {
                "strength": float(got["strength"][i]),
                "low": float(got["low"][i]),
                "high": float(got["high"][i]),
                "win_rate": plain[runs[i]].win_rate,
                "battles": plain[runs[i]].battles,
            }
            for i in order
        },
        "controls": {
            c: {"coef": float(got["coef"][k]), "low": float(got["coef_low"][k]), "high": float(got["coef_high"][k])}
            for k, c in enumerate(controls)
        },
    }


def model_text(controls: Sequence[str], replicates: int, level: float, seed: int) -> str:
    return (
        f"Bradley-Terry maximum-likelihood log-strengths controlled for {', '.join(controls)} (LMArena's style "
        "control: each control's (left - right) / (left + right), z-scored over the battles, a covariate of the "
        "logistic regression), centred to mean 0; a tie counts half a win for each side; both_bad battles are left "
        f"out; {level:.0%} percentile intervals from {replicates} score-bootstrap replicates (Gaussian multipliers, "
        f"seed {seed})"
    )


def provisional(runs: dict[str, dict], min_battles: int = MIN_BATTLES) -> list[str]:
    """The runs whose rank is provisional: fewer than ``min_battles`` counted battles."""
    return [r for r, figures in runs.items() if figures["battles"] < min_battles]


def fragility(db: Store, source: str, controls: Sequence[str] = (), *, adjacent: bool = False) -> dict[str, Any]:
    """``{"top": {battles, count, share, runs, new_top}}``: a small set of the source's battles whose removal changes
    the top-ranked run (verified by refitting; the model of ``controls``); ``adjacent``: also ``pairs``, one entry
    per adjacent pair of the ranking. An entry is None where no set was found (or there is no second run)."""
    controls = _check_controls(controls)
    found = _counted(db, source)
    runs, left, right, y = _indices(found)
    if controls:
        fa, fb = _features(db, source, found, controls)
        d = bc.differences(fa, fb)
    else:
        d = np.zeros((len(found), 0))
    if len(runs) < 2:
        return {"top": None, **({"pairs": []} if adjacent else {})}
    z = bc.standardise(d, controls)[0] if controls else d
    rank = fr.order(bc.fit(left, right, y, z, len(runs)).strength)

    def entry(first: int, second: int) -> dict[str, Any] | None:
        chosen = fr.flip_set(left, right, y, d, len(runs), first, second)
        if chosen is None:
            return None
        listed = [
            {k: found[i][k] for k in ("turn_id", "run_a", "run_b", "winner", "occurrence")} for i in chosen.tolist()
        ]
        for b in listed:
            b["topic_id"] = b.pop("turn_id")
        return {
            "battles": [{k: b[k] for k in ("topic_id", "run_a", "run_b", "winner", "occurrence")} for b in listed],
            "count": len(listed),
            "share": len(listed) / len(found),
            "runs": [runs[first], runs[second]],
        }

    out: dict[str, Any] = {"top": entry(int(rank[0]), int(rank[1]))}
    if adjacent:
        out["pairs"] = [entry(int(a), int(b)) for a, b in zip(rank[:-1], rank[1:])]
    return out


def export_preferences(
    db: Store, source: str, out: IO[str] | None, *, layout: str, folder: str | Path | None = None
) -> dict[str, int]:
    """Decisive battles of ``source`` as ``{prompt, chosen, rejected}`` pairs (the topic's text as prompt, the
    answers' text): JSONL to ``out`` (``dpo``) or a Hugging Face datasets folder (``hf``, ``folder``). Battles
    whose topic or answers are not stored are left out and counted, as are ties and both_bad."""
    battle_store.require_battle_source(db, source)
    texts: dict[tuple[str, str], str | None] = {}
    prompts: dict[str, str | None] = {}
    pairs, counts = [], {"pairs": 0, "ties": 0, "both_bad": 0, "missing_text": 0}
    for b in battle_store.battles(db, source):
        if b["winner"] in ("tie", "both_bad"):
            counts["ties" if b["winner"] == "tie" else "both_bad"] += 1
            continue
        turn = b["turn_id"]
        if turn not in prompts:
            try:
                prompts[turn] = turn_context(db, turn).query
            except UnknownItem:  # a topic judged elsewhere: no prompt to give
                prompts[turn] = None
        for run in (b["run_a"], b["run_b"]):
            if (run, turn) not in texts:
                found = response(db, run, turn)
                texts[(run, turn)] = found["text"] if found else None
        winner, loser = (b["run_a"], b["run_b"]) if b["winner"] == "a" else (b["run_b"], b["run_a"])
        chosen, rejected = texts[(winner, turn)], texts[(loser, turn)]
        if not prompts[turn] or chosen is None or rejected is None:
            counts["missing_text"] += 1
            continue
        pairs.append(preferences.Pair(prompts[turn], chosen, rejected, turn, winner, loser))
    counts["pairs"] = len(pairs)
    if layout == "dpo":
        preferences.write_jsonl(out, pairs)
    elif layout == "hf":
        preferences.write_hf_folder(folder, pairs)
    else:
        raise AssessError(f"a preference layout is dpo or hf, not {layout!r}")
    return counts


SWAY_CONTROLS = ("citations", "supported_share", "length")
"""What :func:`sway` estimates per source: citation count, supported-citation share and length, together."""


def sway(
    db: Store,
    sources: Sequence[str] | None = None,
    *,
    replicates: int = bt.DEFAULT_REPLICATES,
    level: float = bt.DEFAULT_LEVEL,
    seed: int = bt.DEFAULT_SEED,
) -> dict[str, Any]:
    """Whether citations sway each source's verdicts, side by side (people and LLM judges): per source its kind,
    counted battles, the coefficients with intervals of :data:`SWAY_CONTROLS` fitted together (a control the
    source's battles cannot estimate -- no features, or the same difference everywhere -- is None, with the
    reason in ``left_out``), and its position bias (:func:`assess.measures.battles.swapped_order`)."""
    kinds = {s["name"]: source_kind(s["name"], s["kind"]).value for s in battle_store.battle_sources(db)}
    out: dict[str, Any] = {}
    for source in sources or list(kinds):
        found = _counted(db, source)
        usable, left_out = [], {}
        for control in SWAY_CONTROLS:
            try:
                fa, fb = _features(db, source, found, [control])
                bc.standardise(bc.differences(fa, fb), [control])
                usable.append(control)
            except AssessError as exc:
                left_out[control] = str(exc)
        figures: dict[str, Any] = {}
        try:
            if usable:
                figures = controlled(db, source, usable, replicates=replicates, level=level, seed=seed)
        except AssessError as exc:  # e.g. too few battles: the other sources are still compared
            left_out = {c: str(exc) for c in usable} | left_out
        battles = [
            bt.Battle(b["turn_id"], b["run_a"], b["run_b"], b["winner"], b["reshow"])
            for b in battle_store.battles(db, source)
        ]
        out[source] = {
            "kind": kinds.get(source),
            "battles": len(found),
            "controls": {c: figures.get("controls", {}).get(c) for c in SWAY_CONTROLS},
            "left_out": left_out,
            "position": bt.swapped_order(battles),
        }
    return {"controls": list(SWAY_CONTROLS), "sources": out}
