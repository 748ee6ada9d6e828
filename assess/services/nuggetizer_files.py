"""The ``nuggetizer`` package's nugget and assignment layouts in and out of the store
(``import`` / ``export nuggetizer-nuggets`` and ``nuggetizer-assignments``).

The files are read and written by :mod:`assess.formats.nuggetizer` (layouts and their source there). What
the store keeps of them:

- **nuggets** (``create`` output): a record's ``qid`` is a turn id (the turn must exist); its nuggets become
  gold nuggets of the named source with the keys ``[1]``, ``[2]``, ... in the record's order (as ``import
  nuggets`` stores CONE-RAG keys; no relevance grade) and their ``importance`` becomes an ``importance``
  label of that same source (1 vital, 0 okay). The record's ``query`` is not kept.
- **assignments** (``assign`` output): each nugget of a record is matched by its text to the gold nugget of
  the record's turn in the named nugget set; its ``assignment`` becomes an ``ntr-support`` label of the
  named source for that nugget and the record's run (support 2, partial_support 1, not_support 0). The
  run's response to the turn must be stored (``import rag-answers`` first). A nugget the set does not have
  for that turn, or whose importance differs from the set's importance label (a nugget of another nugget
  set), is not stored: it is counted (``unknown_nuggets``) and the first one named with its line
  (``warnings``). A gold nugget without an importance label gets the file's importance as a label of the
  nugget set's source (``importance_added``). ``answer_text`` and ``query`` are not kept. A record whose
  ``nuggets`` list is empty has nothing to store: it is counted (``empty_records``) and named (``warnings``).

Exports write the stored nuggets (with the importance labels of the set's source; a nugget without one is
written ``okay`` and counted) and the stored graded NtR labels of a source (a yes/no label is written
``support`` / ``not_support``), turns in conversation order and nuggets in their set's key order, so a file
read in goes back out equal up to that order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from assess.errors import AssessError, FormatError, UnknownItem
from assess.formats.nuggetizer import (
    IMPORTANCE,
    AssignmentRecord,
    format_nuggetizer_assignments,
    format_nuggetizer_nuggets,
    iter_nuggetizer_assignment_records,
    iter_nuggetizer_nuggets,
)
from assess.formats.nuggets import NuggetRecord
from assess.formats.reading import short
from assess.services.rag import ntr_nugget_sets, ntr_sources
from assess.tasks import NUGGETIZER_FILE_KINDS, Task
from store import Store, label_imports, labels, rag_imports
from store import responses as cited
from store.label_imports import SupportBlock
from store.nuggets import gold

NUGGETS, ASSIGNMENTS = NUGGETIZER_FILE_KINDS
KINDS = NUGGETIZER_FILE_KINDS
_VITAL, _OKAY = IMPORTANCE  # the layout's words, importance labels 1 and 0
_LABEL = {_VITAL: 1, _OKAY: 0}
_WORD = {1: _VITAL, 0: _OKAY}


def _set_nuggets(db: Store, source: str) -> dict[str, list[dict]]:
    """The nugget set of a source per turn, turns in conversation order and nuggets in key order."""
    return {t: gold.turn_nuggets(db, source, t) for t in gold.nugget_turns(db, source)}


def _check_nugget_source(db: Store, source: str) -> None:
    known = gold.nugget_sources(db)
    if source not in known:
        raise UnknownItem(f"no nuggets of source {source!r}; nugget sources: {', '.join(known) or 'none'}")


def import_nuggets(db: Store, path: str | Path, *, source: str) -> dict:
    """Store a nuggetizer nugget file as gold nuggets of ``source`` with their importance labels (nothing
    written on a refusal). Summary: ``nuggets``, ``turns``, ``vital``, ``okay``, ``source``.

    The file is read line by line (:func:`~assess.formats.nuggetizer.iter_nuggetizer_nuggets`) and staged in
    the blocks of :func:`store.rag_imports.import_nuggets`, each nugget's importance with it, then made visible
    in one switch: memory holds a block, not the file, and other writers wait for the switch alone."""
    file = str(path)
    importance: dict[tuple[str, str], str] = {}  # of the nuggets read and not yet staged: about a block
    counts = {"vital": 0, "okay": 0}

    def records() -> Iterator[NuggetRecord]:
        for n in iter_nuggetizer_nuggets(path):
            importance[n.qid, n.key] = n.importance
            counts["vital" if n.importance == _VITAL else "okay"] += 1
            yield NuggetRecord(n.qid, n.key, n.text, None, n.line)

    def level(n: NuggetRecord) -> int:
        return _LABEL[importance.pop((n.turn_id, n.key))]

    summary = rag_imports.import_nuggets(db, file, records(), source=source, importance=level)
    return {
        "nuggets": summary["nuggets"],
        "turns": summary["turns"],
        "vital": counts["vital"],
        "okay": counts["okay"],
        "source": source,
    }


ASSIGNMENTS_PER_BLOCK = 2_000
"""Assignment records checked and staged together (:func:`store.label_imports.import_support_labels`)."""


def import_assignments(db: Store, path: str | Path, *, source: str | None, nugget_source: str) -> dict:
    """Store a nuggetizer assignment file as ``ntr-support`` labels of ``source`` on the gold nuggets of
    ``nugget_source`` (matched by text), staged a block of records at a time and made visible in one switch
    (nothing written on a refusal).

    Summary: ``labels``, ``support``, ``partial_support``, ``not_support``, ``runs``, ``unknown_nuggets``,
    ``importance_added``, ``source`` and, when nuggets were left out, ``warnings`` (one line naming the
    first)."""
    if not source:
        raise AssessError(
            f"import {ASSIGNMENTS} needs --source NAME (whose labels these are: an assessor, llm:MODEL, ...)"
        )
    file = str(path)
    _check_nugget_source(db, nugget_source)
    responses: dict[str, set[str]] = {}
    for r in cited.responses(db):
        responses.setdefault(r["run"], set()).add(r["turn_id"])
    importance = {int(nid): v for (_, nid), v in labels.values(db, Task.IMPORTANCE, nugget_source).items()}
    by_text: dict[str, dict[str, int]] = {}
    counts = {"labels": 0, 2: 0, 1: 0, 0: 0, "added": 0}
    runs: set[str] = set()
    unknown: list[tuple[int, str, str]] = []  # (line, qid, text) of the first; the rest counted
    unknown_count = 0
    empty: list[AssignmentRecord] = []  # the first empty record; the rest counted
    empty_count = 0

    def checked(block: list[AssignmentRecord]) -> SupportBlock:
        nonlocal unknown_count
        support: dict[tuple[str, int, str], int] = {}
        added: dict[tuple[str, int], int] = {}
        for a in (a for record in block for a in record.nuggets):
            if a.qid not in responses.get(a.run, ()):
                have = "no responses" if a.run not in responses else f"no response to turn {a.qid}"
                raise FormatError(
                    file,
                    a.line,
                    f"a run_id and qid whose response is stored (import the run's answers first: run {a.run!r} has {have})",
                    f"run_id {short(a.run, 40)} qid {short(a.qid, 40)}",
                )
            texts = by_text.get(a.qid)
            if texts is None:
                texts = by_text[a.qid] = {n["text"]: n["id"] for n in gold.turn_nuggets(db, nugget_source, a.qid)}
            nid = texts.get(a.text)
            level = _LABEL[a.importance]
            stored = importance.get(nid) if nid is not None else None
            if nid is None or (stored is not None and stored != level):
                unknown_count += 1
                if not unknown:
                    unknown.append((a.line, a.qid, a.text))
                continue
            support[a.qid, nid, a.run] = a.support
            if stored is None:
                added[a.qid, nid] = level
        importance.update({nid: level for (_, nid), level in added.items()})
        counts["labels"] += len(support)
        counts["added"] += len(added)
        for value in support.values():
            counts[value] += 1
        runs.update(run for _, _, run in support)
        return support, added

    def blocks() -> Iterator[SupportBlock]:  # read and checked between two staged blocks, outside any transaction
        nonlocal empty_count
        block: list[AssignmentRecord] = []
        for record in iter_nuggetizer_assignment_records(path):
            if not record.nuggets:
                empty_count += 1
                if not empty:
                    empty.append(record)
            block.append(record)
            if len(block) >= ASSIGNMENTS_PER_BLOCK:
                yield checked(block)
                block = []
        yield checked(block)

    label_imports.import_support_labels(db, blocks(), source=source, nugget_source=nugget_source, file=str(path))
    summary: dict = {
        "labels": counts["labels"],
        "support": counts[2],
        "partial_support": counts[1],
        "not_support": counts[0],
        "runs": len(runs),
        "unknown_nuggets": unknown_count,
        "importance_added": counts["added"],
        "source": source,
    }
    warnings = []
    if unknown:
        line, qid, text = unknown[0]
        warnings.append(
            f"{unknown_count} assigned nugget(s) are not nuggets of {nugget_source} for their qid (or have another "
            f"importance there) and were not stored (first: {file}:{line} qid {qid} {short(text, 60)})"
        )
    if empty:  # nothing to store, but never dropped unsaid: nuggetizer scores such a response 0
        summary["empty_records"] = empty_count
        warnings.append(
            f"{empty_count} record(s) have an empty nuggets list: no label to store for them (nuggetizer scores "
            f"such a response 0; first: {file}:{empty[0].line} qid {short(empty[0].qid, 40)})"
        )
    if warnings:
        summary["warnings"] = warnings
    return summary


def export_nuggets(db: Store, path: str | Path, *, source: str, dedup: bool = False) -> dict:
    """Write the gold nuggets of ``source`` (only its de-duplicated subset with ``dedup``) as a nuggetizer
    nugget file. Summary: ``records``, ``nuggets``, ``without_importance`` (written ``okay``)."""
    _check_nugget_source(db, source)
    importance = {int(nid): v for (_, nid), v in labels.values(db, Task.IMPORTANCE, source).items()}
    kept = [
        (turn, n)
        for turn, nuggets in _set_nuggets(db, source).items()
        for n in nuggets
        if not dedup or n["in_dedup"] == 1
    ]
    if not kept:
        raise AssessError(f"nugget set {source} has no de-duplicated nuggets to export")
    rows = [(turn, n["text"], _WORD.get(importance.get(n["id"]), _OKAY)) for turn, n in kept]
    without = sum(1 for _, n in kept if n["id"] not in importance)
    _write(path, format_nuggetizer_nuggets(rows))
    return {"records": len({r[0] for r in rows}), "nuggets": len(rows), "without_importance": without}


def export_assignments(
    db: Store, path: str | Path, *, source: str, nugget_source: str | None = None, runs: Sequence[str] = ()
) -> dict:
    """Write the NtR labels of ``source`` (graded, a yes/no one read as support / not_support) on the gold
    nuggets of ``nugget_source`` (default: the one set they refer to) as a nuggetizer assignment file, one
    record per run and turn (of ``runs``, all when none is named). Summary: ``records``, ``labels``,
    ``runs``, ``other_set_labels`` (labels on nuggets of other sets, not written)."""

    have = ntr_sources(db)
    if source not in have:
        raise UnknownItem(f"no NtR labels of source {source!r}; sources with NtR labels: {', '.join(have) or 'none'}")
    if nugget_source is None:
        sets = ntr_nugget_sets(db, source)
        if len(sets) != 1:
            raise AssessError(
                f"the labels of {source} refer to the nugget sets {', '.join(sets)}: name one with --nugget-source"
            )
        nugget_source = sets[0]
    _check_nugget_source(db, nugget_source)
    given = labels.ntr_support(db, source)
    labelled_runs = sorted({run for _, _, run in given})
    unknown = [r for r in runs if r not in labelled_runs]
    if unknown:
        raise UnknownItem(
            f"no NtR labels of {source} for run {unknown[0]!r}; runs it labelled: {', '.join(labelled_runs)}"
        )
    importance = {int(nid): v for (_, nid), v in labels.values(db, Task.IMPORTANCE, nugget_source).items()}
    nuggets = _set_nuggets(db, nugget_source)
    in_set = {n["id"] for found in nuggets.values() for n in found}
    rows = []
    for run in runs or labelled_runs:
        for turn, found in nuggets.items():
            for n in found:
                value = given.get((turn, n["id"], run))
                if value is not None:
                    rows.append((run, turn, n["text"], _WORD.get(importance.get(n["id"]), _OKAY), value))
    if not rows:
        raise AssessError(f"no NtR labels of {source} on the nuggets of {nugget_source} to export")
    _write(path, format_nuggetizer_assignments(rows))
    chosen = set(runs or labelled_runs)
    return {
        "records": len({(r[0], r[1]) for r in rows}),
        "labels": len(rows),
        "runs": len({r[0] for r in rows}),
        "other_set_labels": sum(1 for (_, nid, run) in given if run in chosen and nid not in in_set),
    }


def _write(path: str | Path, lines) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        for line in lines:
            handle.write(line + "\n")
