"""A crowd NtR file checked against the store's turns and nuggets, and the study it makes (pure logic).

The store writes what :func:`plan_ntr_import` returns (:func:`store.crowd.write_imported_study`); this
module decides whether the file can be imported and how: which answers count, the batches in order, and
the study's configuration inferred from the file.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import NamedTuple

from assess.crowd.files import CrowdNtrRow, support_word
from assess.crowd.rules import StudyConfig
from assess.errors import FormatError


class ImportPlan(NamedTuple):
    """What a checked crowd NtR file imports."""

    raw: bool  # one row per worker answer (three columns), not one aggregated label per pair
    first: dict[tuple, CrowdNtrRow]  # the first row of each (batch, turn, nugget key, run[, worker])
    batches: list[str]  # the batch labels, numbers first in numeric order, then the others
    config: StudyConfig  # the study's configuration as the file implies it


def plan_ntr_import(
    file: str,
    rows: Sequence[CrowdNtrRow],
    known_turns: Collection[str],
    nuggets: Mapping[tuple[str, str], int],
    nugget_source: str,
) -> ImportPlan:
    """Check the rows of a crowd NtR file against the store's turns and ``nuggets`` ({(turn, key): id} of
    ``nugget_source``) and plan its study. Refused (a FormatError naming the line): an unknown turn or
    nugget, a worker (or, aggregated, a pair) labelled twice with two values, an aggregated file that gives
    one nugget and run two values across batches.

    Two columns (the public CONE-RAG file): one label per (batch, turn, nugget, run), already aggregated.
    Three columns: one row per worker answer; the batch size and k (workers per batch) come from the file.
    """
    for r in rows:
        if r.turn_id not in known_turns:
            raise FormatError(file, r.line, "a turn id present in the store (import the topics first)", repr(r.turn_id))
        if (r.turn_id, r.nugget_key) not in nuggets:
            raise FormatError(
                file,
                r.line,
                f"a nugget {r.nugget_key} of source {nugget_source!r} in turn {r.turn_id} (import the nuggets first)",
                "no such nugget",
            )
    raw = rows[0].worker is not None
    first: dict[tuple, CrowdNtrRow] = {}
    for r in rows:
        key = (r.batch, r.turn_id, r.nugget_key, r.run) + ((r.worker,) if raw else ())
        if key in first and first[key].value != r.value:
            raise FormatError(
                file,
                r.line,
                f"one label per {'worker and ' if raw else ''}pair (line {first[key].line} says {first[key].value})",
                str(r.value),
            )
        first.setdefault(key, r)
    if not raw:
        pairs: dict[tuple, CrowdNtrRow] = {}
        for r in first.values():
            prev = pairs.setdefault((r.turn_id, r.nugget_key, r.run), r)
            if prev.value != r.value:
                raise FormatError(
                    file, r.line, f"one label per nugget and run (line {prev.line} says {prev.value})", str(r.value)
                )
    batches = sorted({r.batch for r in rows}, key=lambda b: (not b.isdigit(), int(b) if b.isdigit() else 0, b))
    per_batch = defaultdict(set)
    for r in first.values():
        if raw:
            per_batch[r.batch].add(r.worker)
    k = max((len(v) for v in per_batch.values()), default=3)
    graded = rows[0].graded  # a file answered with support words (parse_crowd_ntr keeps one kind per file)
    config = StudyConfig(
        task="ntr",
        k=k,
        qc="none",
        tie="mean" if graded else "undecided",
        batch_size=max(sum(1 for _ in g) for g in _group(first.values(), raw)),
        graded=graded,
    )
    return ImportPlan(raw, first, batches, config)


def answered(plan: ImportPlan) -> dict[str, int]:
    """How many of the plan's answers say each value: ``answers_<support word>`` for a graded file,
    ``answers_yes`` / ``answers_no`` for a yes/no one."""
    first = plan.first.values()
    if plan.config.graded:
        return {f"answers_{support_word(v)}": sum(r.value == v for r in first) for v in sorted(plan.config.scale)}
    yes = sum(r.value for r in first)
    return {"answers_yes": yes, "answers_no": len(first) - yes}


def _group(rows: Iterable[CrowdNtrRow], raw: bool) -> list[list[CrowdNtrRow]]:
    """Rows per batch (per batch and worker for raw files): the largest group is the batch size."""
    groups = defaultdict(list)
    for r in rows:
        groups[(r.batch, r.worker) if raw else r.batch].append(r)
    return list(groups.values())
