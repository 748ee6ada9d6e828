"""Battle files: one JSON object per line, one battle each (``battles import`` / ``battles export``)::

    {"topic_id": "12-1_3", "run_a": "bm25-gpt", "run_b": "dense-llama", "winner": "a"}

``run_a`` is the run whose answer was shown on the left. ``winner``: ``a``, ``b``, ``tie`` or ``both_bad``.
``topic_id``: an iKAT turn id (``12-1_3``) or a TREC RAG topic id (``2024-145979``; an integer is read as its
digits). Optional: ``reason`` (a string), ``reshow`` (true: a re-show in swapped order of an earlier battle) and
``features_a`` / ``features_b``: objects of the two answers' features (``{"length": 212, "citations": 4}``, numbers
>= 0, the same names on both sides) for battles whose answers are not in the store (controlled rankings).
Other fields are ignored. Runs and topics follow the id rule of :mod:`assess.formats.reading`. A battle given
twice is two battles (arenas repeat battles); the n-th line of one topic, ``run_a`` and ``run_b`` is its
``occurrence`` n - 1.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, NamedTuple

from assess.errors import FormatError
from assess.formats.reading import check_id, iter_lines, parse_json_text, short
from assess.tasks import BATTLE_WINNERS


class BattleRecord(NamedTuple):
    """One battle as a file gives it (``occurrence``: its place among the file's battles of the same key)."""

    topic_id: str
    run_a: str
    run_b: str
    winner: str
    occurrence: int = 0
    reason: str | None = None
    reshow: bool = False
    line: int | None = None
    features_a: dict[str, float] | None = None
    features_b: dict[str, float] | None = None


def _field(path, number: int, obj: dict, key: str) -> object:
    if key not in obj:
        raise FormatError(path, number, f"a field {key!r}", f"fields {sorted(obj)}")
    return obj[key]


def _features(path, number: int, obj: dict, key: str) -> dict[str, float] | None:
    found = obj.get(key)
    if found is None:
        return None
    if not isinstance(found, dict):
        raise FormatError(path, number, f"{key!r} an object of feature numbers", short(json.dumps(found), 40))
    out = {}
    for name, value in found.items():
        check_id(name, path, number, f"a feature name of {key!r}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or value == float("inf"):
            raise FormatError(path, number, f"{key}.{name} a number >= 0", short(json.dumps(value), 40))
        out[name] = float(value)
    return out


def iter_battles(path: str | Path) -> Iterator[BattleRecord]:
    """Read a battle file line by line (layout in the module docstring); a FormatError names the file, the line
    and the field. An empty file is refused."""
    seen: dict[tuple[str, str, str], int] = {}
    for number, text in iter_lines(path):
        try:
            obj = parse_json_text(path, text)
        except FormatError as exc:
            raise FormatError(path, number, f"one JSON object per line ({exc.expected})", exc.found) from None
        if not isinstance(obj, dict):
            raise FormatError(path, number, "one JSON object per line", short(text, 40))
        topic = _field(path, number, obj, "topic_id")
        if isinstance(topic, int) and not isinstance(topic, bool):
            topic = str(topic)
        topic = check_id(topic, path, number, "'topic_id'")
        run_a = check_id(_field(path, number, obj, "run_a"), path, number, "'run_a'")
        run_b = check_id(_field(path, number, obj, "run_b"), path, number, "'run_b'")
        if run_a == run_b:
            raise FormatError(path, number, "'run_b' another run than 'run_a'", repr(run_b))
        winner = _field(path, number, obj, "winner")
        if winner not in BATTLE_WINNERS:
            shown = winner if isinstance(winner, str) else json.dumps(winner)
            raise FormatError(path, number, "'winner' a, b, tie or both_bad", short(str(shown), 40))
        reason = obj.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise FormatError(path, number, "'reason' as a string", type(reason).__name__)
        reshow = obj.get("reshow", False)
        if not isinstance(reshow, bool):
            raise FormatError(path, number, "'reshow' true or false", short(json.dumps(reshow), 40))
        fa, fb = _features(path, number, obj, "features_a"), _features(path, number, obj, "features_b")
        if (fa is None) != (fb is None) or (fa is not None and sorted(fa) != sorted(fb)):
            raise FormatError(
                path,
                number,
                "features_a and features_b with the same names",
                f"{sorted(fa or [])} / {sorted(fb or [])}",
            )
        key = (topic, run_a, run_b)
        occurrence = seen.get(key, 0)
        seen[key] = occurrence + 1
        yield BattleRecord(topic, run_a, run_b, winner, occurrence, reason or None, reshow, number, fa, fb)
    if not seen:
        raise FormatError(path, None, "at least one battle", "an empty file")


def parse_battles(path: str | Path) -> list[BattleRecord]:
    """Every battle of a battle file (see :func:`iter_battles`)."""
    return list(iter_battles(path))


def _numbers(features: dict[str, float]) -> dict[str, float | int]:
    return {k: int(v) if float(v).is_integer() else v for k, v in features.items()}


def write_battles(out: IO[str], records: Iterable[BattleRecord]) -> int:
    """Write battles as JSONL (``reason`` and ``reshow`` only where given); return how many."""
    count = 0
    for r in records:
        obj: dict[str, object] = {"topic_id": r.topic_id, "run_a": r.run_a, "run_b": r.run_b, "winner": r.winner}
        if r.reason:
            obj["reason"] = r.reason
        if r.reshow:
            obj["reshow"] = True
        if r.features_a is not None:
            obj["features_a"], obj["features_b"] = _numbers(r.features_a), _numbers(r.features_b)
        out.write(json.dumps(obj, ensure_ascii=False) + "\n")
        count += 1
    return count
