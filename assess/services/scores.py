"""Evaluation measures from files and from stored labels: what `python -m assess score ...` computes.

Each function returns one JSON-ready document (the ``--json`` output of its command); what the inputs hold
but scoring leaves out (labels of unknown turns or nuggets, unjudged gold nuggets, gold turns without labels,
labels against another nugget list) is listed under ``warnings`` (present only when there is something to
say), in the order it was found. Every input file is read and checked before anything is scored. The scores
of stored labels are those of the RAG tab of /scores (:mod:`assess.services.rag`).
"""

from __future__ import annotations

import os
from typing import Any

from assess.errors import AssessError, FormatError, UnknownItem
from assess.formats import load_json
from assess.formats.ikat import personal_turns
from assess.formats.nuggetizer import parse_nuggetizer_assignment_records
from assess.formats.nuggets import GoldNuggets, ntr_label_table, read_gold_sets, read_ntn
from assess.formats.reading import short
from assess.formats.trec import qrels_table, runs_table
from assess.measures.aepd import score_aepd_document
from assess.measures.gfrc import score_gfrc2_document
from assess.measures.nugget_recall import (
    LAX,
    STRICT,
    UNJUDGED_DEFAULT,
    NtnTurn,
    label_coverage,
    ntn_run,
    ntr_run,
    nugget_scores_run,
    split_personal,
)
from assess.measures.rankings import (
    cast_measures,
    evaluate_runs,
    measure_name,
    paired_t_tests,
    parse_measure,
    ptkb_measures,
    ranking_correlation,
)
from assess.services import rag
from assess.services.rag import default_importance_source
from assess.tasks import Task
from store import labels
from store.nuggets import gold as gold_store
from store.nuggets import ntr

GRADED = ("all_strict", "all_lax", "vital_strict", "vital_lax", "weighted_strict", "weighted_lax")
NTR = ("ntr_recall_strict", "ntr_recall_lax")
"""The graded nugget scores per run and gold set (``nugget_scores``): AutoNuggetizer, then NtR recall."""


# ----------------------------------------------------------------------------------------------
# Case documents and runs


def gfrc2_file(path: str) -> dict[str, Any]:
    """GFRC2 and GFRC per conversation of a case document (:func:`assess.measures.gfrc.score_gfrc2_document`)."""

    return score_gfrc2_document(load_json(path)[0], source=path)


def aepd_file(path: str) -> dict[str, Any]:
    """AEPD per turn and the P-D trade-off of a case document (:func:`assess.measures.aepd.score_aepd_document`)."""

    return score_aepd_document(load_json(path)[0], source=path)


def run_scores(
    qrels_path: str,
    run_paths: list[str],
    *,
    qrels_b: str | None = None,
    threshold: int = 2,
    measures: list[str] | None = None,
    ptkb: bool = False,
    all_queries: bool = False,
    ttest: str | None = None,
    per_query: bool = False,
) -> dict[str, Any]:
    """trec_eval-style evaluation of TREC runs against qrels: ``{qrels, binary_relevance, measures, averaging,
    runs}``; with ``qrels_b`` also the runs under it and Kendall / Spearman between the run orderings, with
    ``ttest`` the Bonferroni-corrected paired t-tests between runs on that measure."""

    qrels = qrels_table(qrels_path, ptkb=ptkb)
    runs: dict[str, dict] = {}
    for path in run_paths:
        for tag, run in runs_table(path).items():
            if tag in runs:
                raise FormatError(path, None, "distinct run tags across run files", f"{tag!r} again")
            runs[tag] = run
    if ptkb:
        chosen, binary = ptkb_measures(), "PTKB measures, label >= 1"
    elif measures:
        chosen = [parse_measure(m, threshold) for m in measures]
        binary = f"label >= {threshold} unless a measure gives its own rel"
    else:
        chosen, binary = cast_measures(threshold), f"label >= {threshold}"
    named_at = 1 if ptkb else threshold  # the threshold the header states: a measure at another rel says it
    first = evaluate_runs(qrels, runs, chosen, threshold=threshold, all_queries=all_queries, named_at=named_at)
    names = list(next(iter(first.values()))["mean"])
    out: dict[str, Any] = {
        "qrels": qrels_path,
        "binary_relevance": binary,
        "measures": names,
        "averaging": "all qrels queries (-c)" if all_queries else "queries in qrels and run",
        "runs": {r: {"n_queries": v["n_queries"], "mean": v["mean"]} for r, v in first.items()},
    }
    if per_query:
        for r, v in first.items():
            out["runs"][r]["per_query"] = v["per_query"]
    if qrels_b:
        second = evaluate_runs(
            qrels_table(qrels_b, ptkb=ptkb),
            runs,
            chosen,
            threshold=threshold,
            all_queries=all_queries,
            named_at=named_at,
        )
        out["qrels_b"] = qrels_b
        out["runs_b"] = {r: {"n_queries": v["n_queries"], "mean": v["mean"]} for r, v in second.items()}
        out["correlation"] = {
            m: ranking_correlation({r: first[r]["mean"][m] for r in runs}, {r: second[r]["mean"][m] for r in runs})
            for m in names
        }
    if ttest:
        # --ttest P@10 names the measure as --measure P@10 does: at the threshold when it gives no rel
        try:
            measure = measure_name(parse_measure(ttest, named_at), named_at)
        except AssessError:
            measure = ttest
        if measure not in names:
            raise FormatError("--ttest", None, f"one of the evaluated measures {names}", repr(ttest))
        out["ttest"] = {
            "measure": measure,
            "tests": paired_t_tests({r: v["per_query"][measure] for r, v in first.items()}),
        }
    return out


# ----------------------------------------------------------------------------------------------
# Nugget scores from files


def _nugget_summary(per_turn: dict, mean, n: int, personal) -> dict[str, Any]:
    """One run's nugget score: mean over turns, the per-turn values and, when known, the personal split."""

    row: dict[str, Any] = {"mean": mean, "n_turns": n, "per_turn": per_turn}
    if personal is not None:
        split = split_personal(per_turn, personal)
        row["personal"], row["non_personal"] = split["personal"], split["non_personal"]
    return row


def nugget_file_scores(
    *,
    gold: str | None = None,
    gold_dedup: str | None = None,
    gold_format: str = "auto",
    matches: str | None = None,
    ntn: str | None = None,
    assignments: list[str] | None = None,
    personal: str | None = None,
    unjudged: str = UNJUDGED_DEFAULT,
    empty_gold: str = "zero",
) -> dict[str, Any]:
    """Nugget scores per run from files: ``{gold, gold_dedup}`` and, for the inputs given, ``ntr_recall`` (NtR
    recall from the yes/no labels of ``matches``), ``ntn`` (NtN recall and precision from ``ntn``) and
    ``nugget_scores`` (All / Vital / Weighted and NtR recall, strict and lax, from nuggetizer
    ``assignments``), each per run and gold set (``original``, and ``deduplicated`` with ``gold_dedup``);
    ``personal`` (a PTKB qrels or topics file) adds the personal / non-personal split."""

    warnings: list[str] = []
    gold_set, dedup = read_gold_sets(gold, gold_dedup, gold_format) if gold else (None, None)
    gold_sets = {"original": gold_set.keys()} if gold_set else {}
    if dedup is not None:
        gold_sets["deduplicated"] = dedup.keys()
    labels = ntr_label_table(matches) if matches else None
    ntn_runs = ntn_matches(ntn) if ntn else None
    assigned = _assignments(assignments, gold_set, warnings.append) if assignments else None
    split = personal_turns(personal) if personal else None
    if labels is not None:
        _check_labels(matches, labels, gold_set, unjudged, warnings.append)
    if ntn_runs is not None:
        _check_ntn(ntn, ntn_runs, gold_set, warnings.append)

    def summary(per_turn: dict, mean: float | None, n: int) -> dict[str, Any]:
        return _nugget_summary(per_turn, mean, n, split)

    out: dict[str, Any] = {"gold": gold, "gold_dedup": gold_dedup}
    if labels is not None:
        out["ntr_recall"] = _ntr_recall(labels[0], gold_sets, unjudged, summary, warnings.append)
    if ntn_runs is not None:
        out["ntn"] = {"empty_gold": empty_gold, "runs": {}}
        for run, responses in ntn_runs.items():
            out["ntn"]["runs"][run] = {}
            for name, keys in gold_sets.items():
                res = ntn_run(responses, keys, empty_gold=empty_gold)
                out["ntn"]["runs"][run][name] = {
                    m: summary(res[m]["per_turn"], res[m]["mean"], res[m]["n"]) for m in ("recall", "precision")
                }
    if assigned is not None:
        out["assignments"] = assignments
        out["nugget_scores"] = _graded_scores(assigned, dedup, unjudged, split, warnings.append)
    if warnings:
        out["warnings"] = warnings
    return out


def ntn_matches(path: str) -> dict[str, dict[str, Any]]:
    """The NtN matches file (:func:`assess.formats.nuggets.read_ntn`, checked value by value) as the measure
    reads it: ``{run: {turn: NtnTurn(response ids, pairs)}}``."""

    return {run: {t: NtnTurn(*entry) for t, entry in turns.items()} for run, turns in read_ntn(path).items()}


def _assignments(paths: list[str], gold: GoldNuggets | None, warn) -> tuple[dict, dict, dict, dict]:
    """Nuggetizer assignments as ``({run: {turn: {nugget: level}}}, {run: {turn: {nugget: importance}}},
    {turn: {nugget ids}}, {"empty_records": {run: [qids]}, "missing_qids": {run: [qids]}})``.

    With ``--gold``, nuggets are matched to the gold nuggets of their qid by text (ids ``[k]`` of the
    gold file) and the gold file's nuggets are the denominators; assigned nuggets the gold set does
    not have, and qids it does not have, are reported and left out. Without it, each record is scored
    against its own list (as ``nuggetizer``'s metrics do) and runs that list different nuggets for one
    qid are reported. A record whose ``nuggets`` list is empty stays, scored 0 (as ``nuggetizer``'s
    ``calculate_nugget_scores``); with ``--gold`` so does every gold qid (with nuggets) a run has no
    record for: a missing response captures nothing, as trec_eval -c counts a missing topic. Both are
    reported (``empty_records``, ``missing_qids``).
    """

    support: dict[str, dict[str, dict[str, int]]] = {}
    importance: dict[str, dict[str, dict[str, str]]] = {}
    by_text = {t: {body: k for k, body in nuggets.items()} for t, nuggets in gold.text.items()} if gold else {}
    unknown_qids: dict[str, tuple[str, int]] = {}
    other_set: list[tuple[str, int, str, str]] = []
    lists: dict[str, tuple[frozenset, str]] = {}
    seen: dict[tuple[str, str], str] = {}
    empty: dict[str, list[str]] = {}
    for path in paths:
        for record in parse_nuggetizer_assignment_records(path):
            first = seen.setdefault((record.run, record.qid), path)
            if first != path:
                raise FormatError(
                    path,
                    record.line,
                    f"run {record.run!r} qid {record.qid!r} in one assignment file only",
                    f"it in {first} too",
                )
            if gold is not None and record.qid not in gold.text:
                unknown_qids.setdefault(record.qid, (path, record.line))
                continue
            # the record is a response to the qid even when it lists no nugget
            support.setdefault(record.run, {}).setdefault(record.qid, {})
            importance.setdefault(record.run, {}).setdefault(record.qid, {})
            if not record.nuggets:
                empty.setdefault(record.run, []).append(record.qid)
            for a in record.nuggets:
                if gold is None:
                    support[a.run][a.qid][a.text] = a.support
                    importance[a.run][a.qid][a.text] = a.importance
                    continue
                key = by_text[a.qid].get(a.text)
                gold_importance = gold.importance.get(a.qid, {}).get(key) if gold.importance and key else None
                if key is None or (gold_importance is not None and gold_importance != a.importance):
                    other_set.append((path, a.line, a.qid, a.text))
                    continue
                support[a.run][a.qid][key] = a.support
                importance[a.run][a.qid][key] = gold_importance or a.importance
    notes: dict[str, Any] = {"empty_records": empty, "missing_qids": {}, "own_lists": gold is None}
    if empty:
        first_run = next(iter(empty))
        warn(
            f"{sum(map(len, empty.values()))} assignment record(s) have an empty nuggets list and score 0 on "
            f"every score, as nuggetizer's calculate_nugget_scores (first: run {first_run} qid {empty[first_run][0]!r})"
        )
    if gold is None:
        for run, turns in importance.items():
            for qid, nuggets in turns.items():
                first = lists.setdefault(qid, (frozenset(nuggets.items()), run))
                if first[0] != frozenset(nuggets.items()):
                    warn(
                        f"runs {first[1]} and {run} list different nuggets for qid {qid!r}: their scores on it "
                        "are not comparable (give --gold to score both against one set)"
                    )
        gold_keys = {qid: set(n) for turns in importance.values() for qid, n in turns.items()}
        return support, importance, gold_keys, notes
    if unknown_qids:
        qid, (path, line) = next(iter(unknown_qids.items()))
        warn(
            f"{len(unknown_qids)} qid(s) of the assignments are not in the gold set {gold.path} and are left out "
            f"(first: {qid!r} at {path}:{line})"
        )
    if other_set:
        path, line, qid, body = other_set[0]
        warn(
            f"{len(other_set)} assigned nugget(s) are not nuggets of the gold set {gold.path} (another nugget set?) "
            f"and are left out (first: qid {qid!r} {short(body, 40)} at {path}:{line})"
        )
    # The denominators are the gold file's nuggets: importance from the gold file (nuggetizer layout),
    # else from the assignments that name the nugget; one that no assignment names counts as okay.
    full: dict[str, dict[str, str]] = {}
    unknown_importance = 0
    for turn, nuggets in gold.text.items():
        for key in nuggets:
            given = gold.importance.get(turn, {}).get(key) if gold.importance else None
            if given is None:
                given = next((imp[turn][key] for imp in importance.values() if key in imp.get(turn, {})), None)
            if given is None:
                unknown_importance += 1
            full.setdefault(turn, {})[key] = given or "okay"
    if unknown_importance:
        warn(
            f"{unknown_importance} gold nugget(s) of {gold.path} have no importance (no assignment names them): "
            "counted as okay in the Vital and Weighted scores"
        )
    # A response without assignments (an empty record, or no record) supports none of the gold nuggets: they
    # are scored as not supported, whatever --unjudged says of the nuggets a record leaves out.
    keys = gold.keys()
    missing = {}
    for run, turns in support.items():
        absent = [turn for turn, nuggets in gold.text.items() if nuggets and turn not in turns]
        if absent:
            missing[run] = absent
        for turn in [*absent, *empty.get(run, ())]:
            turns[turn] = dict.fromkeys(keys.get(turn, ()), 0)
    notes["missing_qids"] = missing
    if missing:
        first_run = next(iter(missing))
        warn(
            f"{sum(map(len, missing.values()))} (run, gold qid) pair(s) of {gold.path} have no assignment record "
            f"and score 0 on every score, as a missing response (first: run {first_run} qid "
            f"{missing[first_run][0]!r}; runs: {', '.join(f'{r} {len(q)}' for r, q in missing.items())})"
        )
    return support, dict.fromkeys(support, full), gold.keys(), notes


def _check_labels(path: str, labels: tuple, gold: GoldNuggets, unjudged: str, warn) -> None:
    """Report NtR labels the gold set does not know, unjudged gold nuggets and gold turns without labels."""

    matches, lines = labels
    keys = gold.keys()
    unknown_turns, unknown_nuggets, unjudged_n, unlabelled = [], [], 0, 0
    for run, turns in matches.items():
        cov = label_coverage(turns, keys)
        unknown_turns += [(run, t, k) for t, k in cov.unknown_turns]
        unknown_nuggets += [(run, t, k) for t, k in cov.unknown_nuggets]
        unjudged_n += cov.unjudged
        unlabelled += len(cov.unlabelled_turns)
    for found, what in (
        (unknown_turns, f"are on turns without gold nuggets in {gold.path} and are left out"),
        (unknown_nuggets, f"name nuggets that {gold.path} does not have for their turn and are left out"),
    ):
        if found:
            run, turn, key = found[0]
            warn(f"{len(found)} NtR label(s) {what} (first: {path}:{lines[run, turn, key]} {turn} {key} {run})")
    if unjudged_n:
        rule = "count as not captured" if unjudged == "no" else "are left out (--unjudged ignore)"
        warn(f"{unjudged_n} gold nugget(s) have no NtR label in turns their run was judged on and {rule}")
    if unlabelled:
        warn(
            f"{unlabelled} (run, gold turn) pair(s) have no NtR label at all: on a turn no run was judged on they "
            f"are not evaluated, on one judged for another run they score 0 (labels in {path}, gold {gold.path})"
        )


def _check_ntn(path: str, ntn: dict, gold: GoldNuggets, warn) -> None:
    """Report NtN pairs on gold nuggets the gold set does not have and turns without gold nuggets."""
    keys = gold.keys()
    unknown = [
        (run, turn, g)
        for run, turns in ntn.items()
        for turn, entry in turns.items()
        for _, g in entry.pairs
        if g not in keys.get(turn, ())
    ]
    if unknown:
        run, turn, g = unknown[0]
        warn(
            f"{len(unknown)} NtN pair(s) in {path} name gold nuggets that {gold.path} does not have and are left "
            f"out (first: [{run!r}][{turn!r}] {g})"
        )
    empty = sorted({turn for turns in ntn.values() for turn in turns if not keys.get(turn)})
    if empty:
        warn(
            f"{len(empty)} NtN turn(s) have no gold nuggets in {gold.path} (first: {empty[0]}): "
            "see --empty-gold for how they count"
        )


def _graded_scores(assigned: tuple, dedup: GoldNuggets | None, unjudged: str, personal, warn) -> dict[str, Any]:
    """AutoNuggetizer scores and NtR recall (strict: support; lax: support or partial) per run and gold set."""

    support, importance, _, notes = assigned
    # Each record against its own list (no --gold): an empty list scores 0, as nuggetizer's metrics. With a
    # gold set, empty and missing records already hold "not supported" for every gold nugget; a turn
    # without gold nuggets (in the de-duplicated set, say) is skipped.
    empty = "zero" if notes["own_lists"] else "skip"
    unjudged_n = 0
    out: dict[str, Any] = {
        "unjudged": unjudged,
        "scores": [*GRADED, *NTR],
        "runs": {},
        "empty_records": notes["empty_records"],
        "missing_qids": notes["missing_qids"],
    }
    for run, turns in support.items():
        full = importance[run]
        sets = {"original": full}
        if dedup is not None:
            kept = dedup.keys()
            sets["deduplicated"] = {t: {k: v for k, v in n.items() if k in kept.get(t, ())} for t, n in full.items()}
        unjudged_n += label_coverage(turns, {t: set(n) for t, n in full.items()}).unjudged
        out["runs"][run] = {}
        for name, weights in sets.items():
            keys = {t: set(n) for t, n in weights.items()}
            res = nugget_scores_run(turns, weights, unjudged=unjudged, empty=empty)
            ntr = {
                m: ntr_run(turns, keys, unjudged=unjudged, threshold=threshold, empty=empty)
                for m, threshold in (("ntr_recall_strict", STRICT), ("ntr_recall_lax", LAX))
            }
            per_turn = {t: {**v, **{m: ntr[m]["per_turn"].get(t) for m in NTR}} for t, v in res["per_turn"].items()}
            row: dict[str, Any] = {
                "mean": {**res["mean"], **{m: ntr[m]["mean"] for m in NTR}},
                "n_turns": res["n"],
                "per_turn": per_turn,
            }
            if personal is not None:
                for part in ("personal", "non_personal"):
                    row[part] = {
                        m: split_personal({t: v[m] for t, v in per_turn.items()}, personal)[part]["mean"]
                        for m in (*GRADED, *NTR)
                    }
            out["runs"][run][name] = row
    if unjudged_n:
        rule = "count as not supported" if unjudged == "no" else "are left out (--unjudged ignore)"
        warn(f"{unjudged_n} gold nugget(s) have no assignment in turns their run was assessed on and {rule}")
    return out


def _ntr_recall(labels: dict, gold_sets: dict, unjudged: str, summary, warn=None) -> dict[str, Any]:
    """NtR recall per run and gold set (docs/measures.md#ntr: macro over turns, skip rules of ``NtR.py``).

    The evaluated turns are those the labels judge for some run and the gold set has nuggets for: a run
    without labels on one of them scores 0 there (``missing_turns``, reported through ``warn``), as
    ``--assignments`` scores a gold qid a run has no record for (trec_eval -c); a turn no run was judged on
    is not evaluated. ``warn`` None (the store): such turns are skipped, as ``NtR.py`` skips an empty response."""

    judged = {turn for matches in labels.values() for turn in matches}
    out: dict[str, Any] = {"unjudged": unjudged, "runs": {}}
    missing: dict[str, list[str]] = {}
    for run, matches in labels.items():
        out["runs"][run] = {}
        for name, gold in gold_sets.items():
            evaluated = sorted(t for t in judged if gold.get(t)) if warn is not None else []
            absent = [t for t in evaluated if t not in matches]
            if absent and name == "original":
                missing[run] = absent
            res = ntr_run(matches, gold, unjudged=unjudged, evaluated=evaluated)
            out["runs"][run][name] = summary(res["per_turn"], res["mean"], res["n"])
    if missing and warn is not None:
        out["missing_turns"] = missing
        first = next(iter(missing))
        warn(
            f"{sum(map(len, missing.values()))} (run, turn) pair(s) judged for other runs have no label of the "
            f"run and score 0, as a missing response (first: run {first} turn {missing[first][0]!r})"
        )
    return out


# ----------------------------------------------------------------------------------------------
# Scores of stored labels


def stored_nugget_scores(
    db,
    ntr_source: str,
    *,
    nugget_source: str | None = None,
    importance_source: str | None = None,
    personal: str | None = None,
    dedup: bool = False,
    unjudged: str = UNJUDGED_DEFAULT,
) -> dict[str, Any]:
    """NtR recall and the graded nugget scores of the NtR labels stored for ``ntr_source``: ``{db,
    ntr_source, nugget_source, personal, labels, ignored_labels, [ntr_recall, dedup_unknown_turns,]
    importance_source, nugget_scores}`` (``ntr_recall`` when the source has yes/no labels). ``personal``: a
    PTKB label source, or a PTKB qrels or topics file, whose relevant statements make a turn personal."""

    have = rag.ntr_sources(db)
    if ntr_source not in have:
        raise UnknownItem(
            f"no NtR labels of source {ntr_source!r}; sources with NtR labels: {', '.join(have) or 'none'}"
        )
    yes_no = ntr_source in labels.sources(db, Task.NTR)
    graded = ntr_source in labels.sources(db, Task.NTR_SUPPORT)
    ptkb_source, split = None, None
    if personal:
        if personal not in labels.sources(db, "ptkb") and os.path.isfile(personal):
            split = personal_turns(personal)  # a PTKB qrels or topics file
        else:
            ptkb_source = str(personal)
    out: dict[str, Any] = {"db": db.location, "ntr_source": ntr_source}
    if yes_no:
        data = ntr.ntr_scoring_input(db, ntr_source, nugget_source=nugget_source, ptkb_source=ptkb_source)
        nugget_source = data["nugget_source"]
        if ptkb_source is not None:
            split = data["personal"]
        gold_sets = {"original": data["gold"]}
        if dedup:
            if not data["gold_dedup"]:
                raise AssessError(rag.no_dedup_message(nugget_source))
            gold_sets["deduplicated"] = data["gold_dedup"]
    else:  # graded labels only: no yes/no NtR recall, the graded scores below
        nugget_source = _graded_nugget_source(db, ntr_source, nugget_source)
        if ptkb_source is not None:
            split = rag.personal_turns(db, ptkb_source)
    importance_source = _importance_source(db, importance_source, nugget_source)
    scored = {
        name: rag.nugget_scores(
            db, ntr_source, nugget_source, importance_source, unjudged=unjudged, dedup=name != "original"
        )
        for name in ("original", "deduplicated")
        if name == "original" or dedup
    }
    notes = scored["original"]["notes"]

    def summary(per_turn: dict, mean: float | None, n: int) -> dict[str, Any]:
        return _nugget_summary(per_turn, mean, n, split)

    out["nugget_source"] = nugget_source
    out["personal"] = str(personal) if personal else None
    if yes_no:  # the fields (and their order) of the yes/no form, then the graded scores
        out["labels"] = data["labels"]
        out["ignored_labels"] = {
            "other_nugget_sets": data["other_set_labels"],
            "empty_responses": data["empty_response_labels"],
        }
        # the store knows its responses: a run's unlabelled turn is judging still to do, not a missing response
        out["ntr_recall"] = _ntr_recall(dict(sorted(data["matches"].items())), gold_sets, unjudged, summary)
        if dedup:
            out["dedup_unknown_turns"] = data["dedup_unknown_turns"]
    else:
        out["labels"] = notes["labels"]
        out["ignored_labels"] = {
            "other_nugget_sets": notes["other_set_labels"],
            "empty_responses": notes["empty_response_labels"],
        }
    out["importance_source"] = importance_source
    out["nugget_scores"] = _stored_graded(scored, unjudged, split)
    if yes_no:
        _store_warnings(out, data, unjudged)
    if graded and notes["unjudged"]:
        rule = "count as not supported" if unjudged == "no" else "are left out (--unjudged ignore)"
        warning = (
            f"{notes['unjudged']} gold nugget(s) have no NtR label (yes/no or graded) of {ntr_source} in "
            f"turns it judged and {rule}"
        )
        out.setdefault("warnings", []).append(warning)
    return out


def _graded_nugget_source(db, ntr_source: str, given: str | None) -> str:
    """The nugget set graded-only labels are scored on: ``given`` (--nugget-source), else the one set they
    refer to."""

    if given is not None:
        known = gold_store.nugget_sources(db)
        if given not in known:
            raise UnknownItem(f"no nuggets of source {given!r}; nugget sources: {', '.join(known) or 'none'}")
        return given
    sets = rag.ntr_nugget_sets(db, ntr_source)
    if len(sets) != 1:
        raise AssessError(
            f"the labels of {ntr_source} refer to the nugget sets {', '.join(sets) or 'none'}: "
            "name one with --nugget-source"
        )
    return sets[0]


def _importance_source(db, given: str | None, nugget_source: str) -> str | None:
    """--importance-source (it must have importance labels), else the nugget set's own source when it has
    importance labels, else None (every gold nugget okay)."""

    if given is None:
        return default_importance_source(db, nugget_source)
    have = labels.sources(db, Task.IMPORTANCE)
    if given not in have:
        raise UnknownItem(
            f"no importance labels of source {given!r}; sources with importance labels: {', '.join(have) or 'none'}"
        )
    return given


def _stored_graded(scored: dict[str, dict], unjudged: str, personal) -> dict[str, Any]:
    """The rows of :func:`assess.services.rag.nugget_scores` (one result per gold set) in the shape of the
    file form's ``nugget_scores``: ``{unjudged, scores, runs: {run: {set: {mean, n_turns, per_turn}}}, notes}``."""

    names = [*GRADED, *NTR]
    out: dict[str, Any] = {"unjudged": unjudged, "scores": names, "runs": {}, "notes": scored["original"]["notes"]}
    for name, result in scored.items():
        per_turn: dict[str, dict[str, dict]] = {}
        for r in result["per_turn"]:
            per_turn.setdefault(r["run"], {})[r["turn"]] = {m: r[m] for m in names}
        for r in result["runs"]:
            turns = per_turn.get(r["run"], {})
            row: dict[str, Any] = {"mean": {m: r[m] for m in names}, "n_turns": r["turns"], "per_turn": turns}
            if personal is not None:
                for part in ("personal", "non_personal"):
                    row[part] = {
                        m: split_personal({t: v[m] for t, v in turns.items()}, personal)[part]["mean"] for m in names
                    }
            out["runs"].setdefault(r["run"], {})[name] = row
    return out


def _store_warnings(out: dict, data: dict, unjudged: str) -> None:
    """Report unjudged gold nuggets of the stored labels (``warnings`` of the document)."""

    count = sum(label_coverage(turns, data["gold"]).unjudged for turns in data["matches"].values())
    if not count:
        return
    rule = "count as not captured" if unjudged == "no" else "are left out (--unjudged ignore)"
    warning = f"{count} gold nugget(s) have no NtR label of {data['ntr_source']} in turns it judged and {rule}"
    out["warnings"] = [warning]


def citation_scores(db, source: str, runs: list[str] | None = None, *, per_response: bool = False) -> dict[str, Any]:
    """Citation recall, precision and supported share per run of the citation labels stored for ``source``
    (:func:`assess.services.rag.citation_report`): ``{db, source, scores, runs: {run: {...}}}``, with
    ``per_response`` also one row per response; unlabelled citations are reported under ``warnings``."""

    report = rag.citation_report(db, source, list(dict.fromkeys(runs)) if runs else None)
    out: dict[str, Any] = {
        "db": db.location,
        "source": source,
        "scores": list(rag.CITATION_SCORES),
        "runs": {r["run"]: {k: v for k, v in r.items() if k != "run"} for r in report["runs"]},
    }
    if per_response:
        out["per_response"] = report["per_response"]
    unlabelled = sum(r["unlabelled_citations"] for r in report["runs"])
    if unlabelled:
        responses = sum(r["unlabelled"] for r in report["runs"])
        uncited = sum(r["uncited_left_out"] for r in report["runs"])
        warning = (
            f"{unlabelled} citation(s) have no label of {source}: {responses} response(s) with them and "
            f"{uncited} response(s) citing nothing (in partly labelled runs) are left out of the scores, never "
            "counted as zeros (see unlabelled, uncited_left_out, unlabelled_citations and coverage)"
        )
        out["warnings"] = [warning]
    return out
