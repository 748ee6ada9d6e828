"""Anchoring after reveal: did assessors move toward an LLM's label once it was shown? (pure logic)"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping


def anchoring(
    history: Iterable[Mapping],
    llm: Mapping[tuple[str, str], Mapping[str, int]],
    *,
    reveal_mode: str,
    cannot_judge: str,
    decode: Callable[[str], tuple],
) -> list[dict]:
    """Per assessor and LLM source, over items first labelled in ``reveal_mode`` and later changed (final
    label differs from the first; 'cannot judge' and removed labels left out): how many changes moved toward
    the LLM's grade (closer than before), away, or kept the distance, how many landed on it, and the share
    that moved toward it (None when nothing changed).

    ``history``: the assessors' history rows oldest first (source, item '<turn> <item>', old, new, mode);
    ``llm``: {(turn, item): {LLM source: value}}; ``cannot_judge``: how the history writes 'cannot judge';
    ``decode``: a history item as (turn, item).
    """
    first: dict[tuple, str | None] = {}
    last: dict[tuple, str | None] = {}
    for h in history:
        key = (h["source"], h["item"])
        if key not in first:
            if h["old"] is None and h["mode"] == reveal_mode:
                first[key] = h["new"]
            else:
                first[key] = "-"  # first labelled in another mode: not part of the study
        last[key] = h["new"]
    report: dict[tuple, dict] = {}
    for (source, item), start in first.items():
        end = last[(source, item)]
        if start in ("-", None, cannot_judge) or end in (None, cannot_judge) or start == end:
            continue
        turn, item_id = decode(item)
        for src, grade in llm.get((turn, item_id), {}).items():
            r = report.setdefault(
                (source, src),
                {
                    "assessor": source,
                    "llm": src,
                    "changed": 0,
                    "toward": 0,
                    "away": 0,
                    "same_distance": 0,
                    "landed_on_llm": 0,
                },
            )
            before, after = abs(int(start) - grade), abs(int(end) - grade)
            r["changed"] += 1
            r["toward" if after < before else "away" if after > before else "same_distance"] += 1
            r["landed_on_llm"] += int(int(end) == grade)
    for r in report.values():
        r["toward_share"] = r["toward"] / r["changed"] if r["changed"] else None
    return sorted(report.values(), key=lambda r: (r["assessor"], r["llm"]))
