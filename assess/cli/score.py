"""`python -m assess score ...`: compute evaluation measures from files.

Sub-commands: ``gfrc2`` (GFRC2 + original GFRC from a case document), ``aepd`` (AEPD per turn and
the P-D trade-off), ``runs`` (trec_eval-style run evaluation, optionally under a second qrels
source with Kendall/Spearman between the run orderings) and ``nuggets`` (CONE-RAG NtR recall
from yes/no match labels and/or NtN from entailment matches, from files; or NtR recall from the
labels stored for a source with ``--ntr-source``).

Heavy libraries are imported inside the handlers so that ``python -m assess --help`` stays fast.
``--json`` prints one JSON object (floats at full precision); otherwise a plain table.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from assess.cli import add_db_argument
from assess.errors import FormatError

_ORGANIZERS = "organizers"  # the PTKB label source the topics' ptkb_provenance is imported as


class _Default(str):
    """``--personal`` given without a value (the store form then uses the organizers' PTKB labels)."""


_PERSONAL_DEFAULT = _Default(_ORGANIZERS)


def _nugget_summary(per_turn: dict, mean, n: int, personal) -> dict[str, Any]:
    """One run's nugget score: mean over turns, the per-turn values and, when known, the personal split."""
    from assess.measures.nugget_recall import split_personal

    row: dict[str, Any] = {"mean": mean, "n_turns": n, "per_turn": per_turn}
    if personal is not None:
        split = split_personal(per_turn, personal)
        row["personal"], row["non_personal"] = split["personal"], split["non_personal"]
    return row


def add_commands(sub) -> None:
    """Register the ``score`` command group on the top-level sub-parsers."""
    score = sub.add_parser(
        "score",
        help="compute evaluation measures (GFRC2, AEPD, runs, nuggets)",
        description="Compute evaluation measures from files.",
    )
    commands = score.add_subparsers(dest="score_command", metavar="MEASURE")
    commands.required = True

    p = commands.add_parser(
        "gfrc2",
        help="GFRC2 and GFRC of conversations with relevant-nugget spans",
        description="Score a GFRC2 case document: {L, max_level, attributes, conversations}.",
    )
    p.add_argument("file", help="JSON document (see ../shared/cases/gfrc2_fairweb2_r112.json)")
    p.add_argument("--clusters", action="store_true", help="also print the per-cluster table (text output)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_gfrc2)

    p = commands.add_parser(
        "aepd",
        help="AEPD personalization/diversification scores per turn",
        description='Score an AEPD document: {"turns": [{"id", "aspects": [...]}]}.',
    )
    p.add_argument("file", help="JSON document (see ../shared/cases/aepd_paper_figure2.json)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_aepd)

    p = commands.add_parser(
        "runs",
        help="evaluate TREC runs against qrels (trec_eval semantics)",
        description="Evaluate TREC run files with ir_measures/pytrec_eval. Default measures: "
        "nDCG@3, nDCG@5, P@20, R@20, AP, RR (binary at --threshold).",
    )
    p.add_argument("--qrels", required=True, help="TREC qrels: <qid> <iter> <docid> <label>")
    p.add_argument(
        "--run",
        required=True,
        action="append",
        dest="runs",
        metavar="RUN",
        help="TREC run: <qid> Q0 <docid> <rank> <score> <tag> (repeatable)",
    )
    p.add_argument("--qrels-b", help="second qrels source: also correlate the run orderings (Kendall, Spearman)")
    p.add_argument(
        "--threshold", type=int, default=2, help="binary relevance: label >= THRESHOLD (default 2, CAsT strict)"
    )
    p.add_argument(
        "--measure",
        action="append",
        dest="measures",
        metavar="M",
        help="ir_measures notation, e.g. 'nDCG@10' or 'P(rel=2)@10' (repeatable; replaces the defaults)",
    )
    p.add_argument(
        "--ptkb", action="store_true", help="PTKB statement ranking measures: nDCG@3, P@3, R@3, MRR (label >= 1)"
    )
    p.add_argument(
        "--all-queries", action="store_true", help="average over all qrels queries, missing = 0 (trec_eval -c)"
    )
    p.add_argument("--ttest", metavar="M", help="paired t-tests between runs on measure M, Bonferroni-corrected")
    p.add_argument("--per-query", action="store_true", help="include per-query values in the JSON output")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_runs)

    p = commands.add_parser(
        "nuggets",
        help="CONE-RAG nugget recall (NtR) / recall and precision (NtN) per run",
        description="NtR recall per run from yes/no labels, and/or NtN from entailment matches, against a gold "
        "nugget set (and optionally its de-duplicated version). Files: --gold with --matches and/or "
        "--ntn. Store: --ntr-source SOURCE scores the NtR labels stored for that source (an "
        "assessor of the NtR page, crowd:NAME, llm:MODEL, an import) against a stored nugget set.",
    )
    p.add_argument("--gold", help='gold nuggets JSON {turn: {"[k]": {"text", "relevance"}}}')
    p.add_argument("--gold-dedup", help="de-duplicated gold nuggets JSON (same layout): also score against it")
    p.add_argument("--matches", help="NtR labels TSV: <batch>_<conv>_<turn>_<k>_<run> TAB <0|1>")
    p.add_argument(
        "--ntn", help='NtN matches JSON {run: {turn: {"response": [ids], "pairs": [[response id, gold id], ...]}}}'
    )
    add_db_argument(p)
    p.add_argument(
        "--ntr-source",
        metavar="SOURCE",
        help="store: score the NtR labels of this source (assessor, crowd:NAME, llm:MODEL) from --db",
    )
    p.add_argument(
        "--nugget-source",
        metavar="SOURCE",
        help="store: the gold nugget set (default: the one set the labels refer to)",
    )
    p.add_argument(
        "--dedup", action="store_true", help="store: also score against the de-duplicated subset of the nugget set"
    )
    p.add_argument(
        "--unjudged",
        choices=("ignore", "no"),
        default="ignore",
        help="NtR: gold nuggets without a label are left out (ignore, default) or count as not captured (no)",
    )
    p.add_argument(
        "--empty-gold",
        choices=("zero", "skip"),
        default="zero",
        help="NtN: a turn without gold nuggets counts 0 for recall (zero, as the reference code) or is skipped",
    )
    p.add_argument(
        "--personal",
        nargs="?",
        const=_PERSONAL_DEFAULT,
        metavar="FILE|SOURCE",
        help="split personal / non-personal turns (a turn with >= 1 relevant PTKB statement). Files: PTKB "
        "qrels (<turn> 0 <statement> <0|1>) or iKAT topics JSON (turns with ptkb_provenance). "
        "Store: a PTKB label source (default organizers, the topics' provenance) or such a file",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_nuggets)


# ----------------------------------------------------------------------------------------------
# Inputs: the readers of assess.formats, turned into the plain dicts the scorers take


def _read_json(path: str) -> Any:
    from assess.formats import load_json

    return load_json(path)[0]


def _qrels(path: str, *, ptkb: bool = False) -> dict[str, dict[str, int]]:
    """``{turn: {item: grade}}`` from TREC qrels (passage or PTKB statement qrels)."""
    from assess.formats import parse_ptkb_qrels, parse_qrels

    qrels: dict[str, dict[str, int]] = {}
    for row in parse_ptkb_qrels(path) if ptkb else parse_qrels(path):
        qrels.setdefault(row.turn_id, {})[row.item_id] = row.grade
    return qrels


def _run_file(path: str) -> dict[str, dict[str, dict[str, float]]]:
    """``{tag: {turn: {passage: score}}}`` from a TREC run (the rank column is ignored, as in trec_eval)."""
    from assess.formats import parse_run

    runs: dict[str, dict[str, dict[str, float]]] = {}
    for row in parse_run(path):
        runs.setdefault(row.tag, {}).setdefault(row.turn_id, {})[row.passage_id] = row.score
    return runs


def _gold(path: str) -> dict[str, set[str]]:
    """``{turn: {"[k]", ...}}`` from CONE-RAG gold nuggets (turns without nuggets are left out)."""
    from assess.formats import parse_nuggets

    gold: dict[str, set[str]] = {}
    for record in parse_nuggets(path):
        gold.setdefault(record.turn_id, set()).add(record.key)
    return gold


def _ntr_labels(path: str) -> dict[str, dict[str, dict[str, bool]]]:
    """``{run: {turn: {"[k]": captured}}}`` from the NtR labels TSV; two different labels for one nugget are refused."""
    from assess.formats import parse_ntr_labels

    labels: dict[str, dict[str, dict[str, bool]]] = {}
    for record in parse_ntr_labels(path):
        judged = labels.setdefault(record.run, {}).setdefault(record.turn_id, {})
        value = bool(record.match)
        if judged.get(record.nugget_key, value) != value:
            raise FormatError(
                path,
                record.line,
                f"one label per nugget ({record.turn_id} {record.nugget_key} {record.run} is already {int(not value)})",
                str(record.match),
            )
        judged[record.nugget_key] = value
    return labels


def _personal_turns(path: str) -> set[str]:
    """Personal turns: iKAT topics JSON (turns with relevant PTKB statements) or PTKB qrels (a grade > 0)."""
    from assess.formats import parse_topics
    from assess.formats.reading import open_regular

    with open_regular(path) as handle:
        head = handle.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")
    if head[:1] in (b"[", b"{"):
        return {t.id for conv in parse_topics(path) for t in conv.turns if t.relevant_ptkb}
    return {turn for turn, grades in _qrels(path, ptkb=True).items() if any(g > 0 for g in grades.values())}


# ----------------------------------------------------------------------------------------------
# Output helpers


def _print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, ensure_ascii=False, allow_nan=False)
    sys.stdout.write("\n")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6f}"
    return str(value)


def _table(headers: list[str], rows: list[list[Any]]) -> None:
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
    for row in cells:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())


# ----------------------------------------------------------------------------------------------
# Handlers


def _gfrc2(args: argparse.Namespace) -> int:
    from assess.measures.gfrc import score_gfrc2_document

    results = score_gfrc2_document(_read_json(args.file), source=args.file)
    if args.json:
        _print_json(results)
        return 0
    attrs = list(next(iter(results.values()))["EGF"]) if results else []
    _table(
        ["conversation", "EGNP"] + [f"EGF {a}" for a in attrs] + ["GFRC2", "R"] + [f"GF {a}" for a in attrs] + ["GFRC"],
        [
            [
                cid,
                r["EGNP"],
                *r["EGF"].values(),
                r["GFRC2"],
                r["GFRC"]["R"],
                *r["GFRC"]["GF"].values(),
                r["GFRC"]["GFRC"],
            ]
            for cid, r in results.items()
        ],
    )
    if args.clusters:
        for cid, r in results.items():
            print(f"\n{cid}")
            _table(
                ["wc", "GWCrel", "WCnonrel", "GNP"] + [f"GF {a}" for a in attrs] + ["Experience"],
                [
                    [c["wc"], c["GWCrel"], c["WCnonrel"], c["GNP"], *c["GF"].values(), c["Experience"]]
                    for c in r["clusters"]
                ],
            )
    return 0


def _aepd(args: argparse.Namespace) -> int:
    from assess.measures.aepd import SCORE_KEYS, score_aepd_document

    results = score_aepd_document(_read_json(args.file), source=args.file)
    if args.json:
        _print_json(results)
        return 0
    _table(["turn", *SCORE_KEYS], [[tid, *(s[k] for k in SCORE_KEYS)] for tid, s in results["turns"].items()])
    t = results["tradeoff"]
    print(
        f"\nP-D trade-off over {t['n']} turns with P > 0 and D > 0: Kendall tau = {_cell(t['kendall_tau'])}, "
        f"p = {_cell(t['p_value'])}"
    )
    return 0


def _runs(args: argparse.Namespace) -> int:
    from assess.measures.rankings import (
        cast_measures,
        evaluate_runs,
        paired_t_tests,
        ptkb_measures,
        ranking_correlation,
    )

    qrels = _qrels(args.qrels, ptkb=args.ptkb)
    runs: dict[str, dict] = {}
    for path in args.runs:
        for tag, run in _run_file(path).items():
            if tag in runs:
                raise FormatError(path, None, "distinct run tags across run files", f"{tag!r} again")
            runs[tag] = run
    if args.ptkb:
        measures, binary = ptkb_measures(), "PTKB measures, label >= 1"
    elif args.measures:
        measures, binary = args.measures, "as given by each measure"
    else:
        measures, binary = cast_measures(args.threshold), f"label >= {args.threshold}"
    first = evaluate_runs(qrels, runs, measures, threshold=args.threshold, all_queries=args.all_queries)
    names = list(next(iter(first.values()))["mean"])
    out: dict[str, Any] = {
        "qrels": args.qrels,
        "binary_relevance": binary,
        "measures": names,
        "averaging": "all qrels queries (-c)" if args.all_queries else "queries in qrels and run",
        "runs": {r: {"n_queries": v["n_queries"], "mean": v["mean"]} for r, v in first.items()},
    }
    if args.per_query:
        for r, v in first.items():
            out["runs"][r]["per_query"] = v["per_query"]
    if args.qrels_b:
        second = evaluate_runs(
            _qrels(args.qrels_b, ptkb=args.ptkb), runs, measures, threshold=args.threshold, all_queries=args.all_queries
        )
        out["qrels_b"] = args.qrels_b
        out["runs_b"] = {r: {"n_queries": v["n_queries"], "mean": v["mean"]} for r, v in second.items()}
        out["correlation"] = {
            m: ranking_correlation({r: first[r]["mean"][m] for r in runs}, {r: second[r]["mean"][m] for r in runs})
            for m in names
        }
    if args.ttest:
        if args.ttest not in names:
            raise FormatError("--ttest", None, f"one of the evaluated measures {names}", repr(args.ttest))
        out["ttest"] = {
            "measure": args.ttest,
            "tests": paired_t_tests({r: v["per_query"][args.ttest] for r, v in first.items()}),
        }
    if args.json:
        _print_json(out)
        return 0
    print(f"qrels {args.qrels} (binary relevance: {binary}; mean over {out['averaging']})")
    _table(["run", "queries", *names], [[r, v["n_queries"], *v["mean"].values()] for r, v in out["runs"].items()])
    if args.qrels_b:
        print(f"\nqrels B {args.qrels_b}")
        _table(["run", "queries", *names], [[r, v["n_queries"], *v["mean"].values()] for r, v in out["runs_b"].items()])
        print("\nrun orderings, qrels A vs B")
        _table(
            ["measure", "runs", "kendall_tau", "p", "spearman_rho", "p"],
            [
                [m, c["n"], c["kendall_tau"], c["kendall_p"], c["spearman_rho"], c["spearman_p"]]
                for m, c in out["correlation"].items()
            ],
        )
    if args.ttest:
        print(f"\npaired t-tests on {args.ttest} (Bonferroni over {len(out['ttest']['tests'])} pairs)")
        _table(
            ["run A", "run B", "queries", "mean diff", "t", "p", "p (Bonferroni)", "significant"],
            [
                [t["a"], t["b"], t["n"], t["mean_diff"], t["t"], t["p"], t["p_bonferroni"], t["significant"]]
                for t in out["ttest"]["tests"]
            ],
        )
    return 0


def _read_ntn(path: str) -> dict[str, dict[str, Any]]:
    from assess.measures.nugget_recall import NtnTurn

    data = _read_json(path)
    if not isinstance(data, dict):
        raise FormatError(path, None, "an object {run: {turn: {response, pairs}}}", type(data).__name__)
    runs: dict[str, dict[str, Any]] = {}
    for run, turns in data.items():
        if not isinstance(turns, dict):
            raise FormatError(path, None, f"an object of turns for run {run!r}", type(turns).__name__)
        runs[run] = {}
        for turn, entry in turns.items():
            try:
                pairs = [(str(r), str(g)) for r, g in entry.get("pairs", [])]
                runs[run][str(turn)] = NtnTurn([str(x) for x in entry["response"]], pairs)
            except (AttributeError, KeyError, TypeError, ValueError):
                raise FormatError(
                    path,
                    None,
                    f'{{"response": [ids], "pairs": [[r, g], ...]}} for run {run!r} turn {turn!r}',
                    repr(entry)[:60],
                ) from None
    return runs


def _nuggets(args: argparse.Namespace) -> int:
    from assess.measures.nugget_recall import ntn_run

    if args.ntr_source:
        given = [f"--{n.replace('_', '-')}" for n in ("gold", "gold_dedup", "matches", "ntn") if getattr(args, n)]
        if given:
            raise FormatError(
                "arguments",
                None,
                "either files (--gold ...) or the store (--ntr-source)",
                f"--ntr-source with {', '.join(given)}",
            )
        return _nuggets_from_store(args)
    if args.dedup or args.nugget_source:
        raise FormatError(
            "arguments",
            None,
            "--dedup and --nugget-source with --ntr-source (files: --gold-dedup FILE)",
            "--dedup" if args.dedup else "--nugget-source",
        )
    if not args.gold:
        raise FormatError("arguments", None, "--gold FILE (with --matches/--ntn) or --ntr-source SOURCE", "neither")
    if not args.matches and not args.ntn:
        raise FormatError("arguments", None, "--matches (NtR labels) and/or --ntn (NtN matches)", "neither")
    if args.personal is _PERSONAL_DEFAULT:
        raise FormatError("--personal", None, "a PTKB qrels or topics file", "no file")
    gold_sets = {"original": _gold(args.gold)}
    if args.gold_dedup:
        gold_sets["deduplicated"] = _gold(args.gold_dedup)
    personal = _personal_turns(args.personal) if args.personal else None

    def summary(per_turn: dict, mean: float | None, n: int) -> dict[str, Any]:
        return _nugget_summary(per_turn, mean, n, personal)

    out: dict[str, Any] = {"gold": args.gold, "gold_dedup": args.gold_dedup}
    if args.matches:
        out["ntr_recall"] = _ntr_recall(_ntr_labels(args.matches), gold_sets, args.unjudged, summary)
    if args.ntn:
        out["ntn"] = {"empty_gold": args.empty_gold, "runs": {}}
        for run, responses in _read_ntn(args.ntn).items():
            out["ntn"]["runs"][run] = {}
            for name, gold in gold_sets.items():
                res = ntn_run(responses, gold, empty_gold=args.empty_gold)
                out["ntn"]["runs"][run][name] = {
                    m: summary(res[m]["per_turn"], res[m]["mean"], res[m]["n"]) for m in ("recall", "precision")
                }
    if args.json:
        _print_json(out)
        return 0
    split_cols = ["personal", "non-personal"] if personal is not None else []
    if args.matches:
        print(f"NtR recall (unjudged gold nuggets: {args.unjudged})")
        _ntr_table(out["ntr_recall"], personal is not None)
    if args.ntn:
        print(
            f"\nNtN (turns without gold nuggets: {args.empty_gold})"
            if args.matches
            else f"NtN (turns without gold nuggets: {args.empty_gold})"
        )
        _table(
            ["run", "gold", "measure", "value", "turns", *split_cols],
            [
                [run, name, m, *_cells(row[m], personal is not None)]
                for run, per in out["ntn"]["runs"].items()
                for name, row in per.items()
                for m in ("recall", "precision")
            ],
        )
    return 0


def _ntr_recall(labels: dict, gold_sets: dict, unjudged: str, summary) -> dict[str, Any]:
    """NtR recall per run and gold set (docs/measures.md#ntr: macro over turns, skip rules of ``NtR.py``)."""
    from assess.measures.nugget_recall import ntr_run

    out: dict[str, Any] = {"unjudged": unjudged, "runs": {}}
    for run, matches in labels.items():
        out["runs"][run] = {}
        for name, gold in gold_sets.items():
            res = ntr_run(matches, gold, unjudged=unjudged)
            out["runs"][run][name] = summary(res["per_turn"], res["mean"], res["n"])
    return out


def _cells(row: dict, split: bool) -> list:
    extra = [row["personal"]["mean"], row["non_personal"]["mean"]] if split else []
    return [row["mean"], row["n_turns"], *extra]


def _ntr_table(ntr: dict, split: bool) -> None:
    _table(
        ["run", "gold", "recall", "turns", *(["personal", "non-personal"] if split else [])],
        [[run, name, *_cells(row, split)] for run, per in ntr["runs"].items() for name, row in per.items()],
    )


def _nuggets_from_store(args: argparse.Namespace) -> int:
    """``score nuggets --ntr-source SOURCE``: NtR recall from the labels stored in the database."""
    import os

    from assess.errors import AssessError
    from store import labels, open_db
    from store.db import display
    from store.db import exists as store_exists
    from store.nuggets import ntr

    if not store_exists(args.db):
        where = display(args.db)
        raise AssessError(f"{where}: no such database (create it with: python -m assess init --db {where})")
    db = open_db(args.db)
    ptkb_source, personal = None, None
    if args.personal:
        if args.personal not in labels.sources(db, "ptkb") and os.path.isfile(args.personal):
            personal = _personal_turns(args.personal)  # a PTKB qrels or topics file
        else:
            ptkb_source = str(args.personal)
    data = ntr.ntr_scoring_input(db, args.ntr_source, nugget_source=args.nugget_source, ptkb_source=ptkb_source)
    if ptkb_source is not None:
        personal = data["personal"]
    gold_sets = {"original": data["gold"]}
    if args.dedup:
        if not data["gold_dedup"]:
            raise AssessError(
                f"nugget set {data['nugget_source']} has no de-duplicated set: import one with "
                f"`import nuggets FILE --source {data['nugget_source']} --dedup` or decide duplicates "
                f"on the Duplicates page"
            )
        gold_sets["deduplicated"] = data["gold_dedup"]

    def summary(per_turn: dict, mean: float | None, n: int) -> dict[str, Any]:
        return _nugget_summary(per_turn, mean, n, personal)

    out: dict[str, Any] = {
        "db": display(args.db),
        "ntr_source": data["ntr_source"],
        "nugget_source": data["nugget_source"],
        "personal": str(args.personal) if args.personal else None,
        "labels": data["labels"],
        "ignored_labels": {
            "other_nugget_sets": data["other_set_labels"],
            "empty_responses": data["empty_response_labels"],
        },
        "ntr_recall": _ntr_recall(dict(sorted(data["matches"].items())), gold_sets, args.unjudged, summary),
    }
    if args.dedup:
        out["dedup_unknown_turns"] = data["dedup_unknown_turns"]
    if args.json:
        _print_json(out)
        return 0
    print(
        f"NtR recall of {out['ntr_source']} on nugget set {out['nugget_source']} ({out['labels']} labels; "
        f"unjudged gold nuggets: {args.unjudged}"
        + (f"; personal = a relevant PTKB statement by {out['personal']}" if args.personal else "")
        + ")"
    )
    _ntr_table(out["ntr_recall"], personal is not None)
    ignored = out["ignored_labels"]
    if ignored["other_nugget_sets"] or ignored["empty_responses"]:
        print(
            f"\nleft out: {ignored['other_nugget_sets']} labels on nuggets of other sets, "
            f"{ignored['empty_responses']} on empty responses"
        )
    if args.dedup and out["dedup_unknown_turns"]:
        print(
            f"\nde-duplication undecided in {len(out['dedup_unknown_turns'])} turn(s) "
            f"({', '.join(out['dedup_unknown_turns'][:10])}{' …' if len(out['dedup_unknown_turns']) > 10 else ''}): "
            f"their undecided nuggets are not in the de-duplicated set"
        )
    return 0
