"""Leaderboards in the three layouts TREC AutoJudge 2026 reads (``trec-auto-judge/auto-judge-base``,
``src/autojudge_base/leaderboard/leaderboard.py``, ``Leaderboard.write`` / ``Leaderboard.load``):

``tot``
    ``run <TAB> measure <TAB> topic <TAB> value``
``ir_measures``
    ``run <TAB> topic <TAB> measure <TAB> value``
``trec_eval``
    ``measure <TAB> topic <TAB> value``: one run per file; AutoJudge reads a directory of such files and takes
    each file's name as its run id, so :func:`write_leaderboard` writes one file per run, named by the run.

A line per (run, topic, measure), tab-separated, ending in a newline; a value is Python's shortest float text
(``str(float)``, as AutoJudge writes it). Each run has its per-topic lines, then its ``all`` lines (topic id
:data:`ALL`: the mean of the run's topic values of that measure, AutoJudge's ``LeaderboardBuilder``
aggregate). The reader splits on any whitespace, as AutoJudge's loader does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from assess.errors import FormatError
from assess.formats.reading import id_problem, iter_lines, short

LEADERBOARD_LAYOUTS = ("tot", "trec_eval", "ir_measures")
ALL = "all"  # the topic id of a run's aggregate row
_COLUMNS = {"tot": ("run", "measure", "topic", "value"), "ir_measures": ("run", "topic", "measure", "value")}
_COLUMNS["trec_eval"] = ("measure", "topic", "value")


class Entry(NamedTuple):
    """One value of a leaderboard: a run's ``measure`` on ``topic`` (:data:`ALL` for the run's aggregate)."""

    run: str
    topic: str
    measure: str
    value: float


def with_all_rows(entries: Iterable[Entry]) -> list[Entry]:
    """The entries grouped by run (runs in first-seen order, each run's entries in their order), each run
    followed by its :data:`ALL` rows: per measure (in first-seen order) the mean of its topic values. Given
    ``all`` rows are dropped and recomputed."""
    by_run: dict[str, list[Entry]] = {}
    for entry in entries:
        if entry.topic != ALL:
            by_run.setdefault(entry.run, []).append(entry)
    out: list[Entry] = []
    for run, rows in by_run.items():
        out += rows
        values: dict[str, list[float]] = {}
        for row in rows:
            values.setdefault(row.measure, []).append(row.value)
        out += [Entry(run, ALL, measure, math.fsum(v) / len(v)) for measure, v in values.items()]
    return out


def line_of(entry: Entry, layout: str) -> str:
    """One tab-separated line (without its newline) of ``entry`` in ``layout``."""
    fields = {"run": entry.run, "topic": entry.topic, "measure": entry.measure, "value": str(float(entry.value))}
    return "\t".join(fields[c] for c in _columns(layout))


def _columns(layout: str) -> tuple[str, ...]:
    try:
        return _COLUMNS[layout]
    except KeyError:
        raise ValueError(
            f"unknown leaderboard layout {layout!r}; choose one of {', '.join(LEADERBOARD_LAYOUTS)}"
        ) from None


def leaderboard_text(entries: Sequence[Entry], layout: str) -> str:
    """The lines of ``entries`` in ``layout`` (``tot`` or ``ir_measures``; one run for ``trec_eval``)."""
    if layout == "trec_eval" and len({e.run for e in entries}) > 1:
        raise ValueError("the trec_eval layout holds one run per file")
    return "".join(line_of(e, layout) + "\n" for e in entries)


def run_file_name(run: str) -> str:
    """The name of a run's ``trec_eval`` file: the run id itself (AutoJudge takes it from the name); a run id
    that is no plain file name (a ``/``, a leading ``.``, which AutoJudge skips as hidden) is refused."""
    if "/" in run or "\\" in run or run.startswith(".") or id_problem(run):
        raise FormatError("the trec_eval layout", None, "a run id that is a plain file name", short(run))
    return run


def write_leaderboard(path: str | Path, entries: Sequence[Entry], layout: str) -> dict[str, int]:
    """Write ``entries`` to ``path`` in ``layout``: one file (``tot``, ``ir_measures``), or for ``trec_eval`` a
    directory (created; it may exist) with one file per run named by the run. Returns ``{runs, lines, files}``."""
    runs = list(dict.fromkeys(e.run for e in entries))
    if layout != "trec_eval":
        Path(path).write_text(leaderboard_text(entries, layout), encoding="utf-8", newline="\n")
        return {"runs": len(runs), "lines": len(entries), "files": 1}
    names = {run: run_file_name(run) for run in runs}  # refused before anything is written
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    for run in runs:
        text = leaderboard_text([e for e in entries if e.run == run], layout)
        (folder / names[run]).write_text(text, encoding="utf-8", newline="\n")
    return {"runs": len(runs), "lines": len(entries), "files": len(runs)}


def read_leaderboard(path: str | Path, layout: str) -> list[Entry]:
    """The entries of a leaderboard file in ``layout`` (for ``trec_eval`` a file, whose name is its run id, or
    a directory of such files, read in name order, hidden files skipped). Refused, naming the file and line:
    a line with another number of fields, a value that is not a finite number, an empty file."""
    columns = _columns(layout)
    target = Path(path)
    files = (
        sorted(f for f in target.iterdir() if f.is_file() and not f.name.startswith("."))
        if target.is_dir()
        else [target]
    )
    out: list[Entry] = []
    for file in files:
        found = 0
        for number, text in iter_lines(file):
            parts = text.split()
            if len(parts) != len(columns):
                raise FormatError(
                    file,
                    number,
                    f"{len(columns)} whitespace-separated fields ({' '.join(columns)})",
                    f"{len(parts)} fields",
                )
            row = dict(zip(columns, parts, strict=True))
            try:
                value = float(row["value"])
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                raise FormatError(file, number, "a finite number in the value field", short(row["value"], 40))
            out.append(Entry(row.get("run", file.name), row["topic"], row["measure"], value))
            found += 1
        if not found:
            raise FormatError(file, None, "at least one leaderboard line", "an empty file")
    return out
