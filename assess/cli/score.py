"""`python -m assess score ...`: compute evaluation measures from files.

Sub-commands: ``gfrc2`` (GFRC2 + original GFRC from a case document), ``aepd`` (AEPD per turn and
the P-D trade-off), ``runs`` (trec_eval-style run evaluation, optionally under a second qrels
source with Kendall/Spearman between the run orderings) and ``nuggets`` (CONE-RAG NtR recall
from yes/no match labels and/or NtN from entailment matches, and the TREC RAG AutoNuggetizer
All / Vital / Weighted scores, strict and lax, from ``nuggetizer`` assignment files; or NtR
recall, graded NtR recall strict / lax and All / Vital / Weighted from the labels stored for a source with
``--ntr-source``) and ``citations`` (ALCE citation recall and precision and the supported share from the
citation-support labels stored for a source; the same service functions as the RAG tab of /scores).

Every input file is checked against its documented shape before anything is scored (exit 2 with
one line naming the file, the line or JSON path, expected vs found). What the files hold but
scoring would leave out (labels of unknown turns or nuggets, unjudged gold nuggets, gold turns
without labels, labels against another nugget list) is reported: one ``warning:`` line each on
stderr and, with ``--json``, a ``warnings`` list (present only when there is something to say).

Heavy libraries are imported inside the handlers so that ``python -m assess --help`` stays fast.
``--json`` prints one JSON object (floats at full precision); otherwise a plain table.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, NamedTuple

from assess.cli import add_db_argument
from assess.errors import FormatError
from assess.measures.nugget_recall import UNJUDGED_DEFAULT

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
        help="compute evaluation measures (GFRC2, AEPD, runs, nuggets, citations)",
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
        "--threshold",
        type=int,
        default=2,
        help="binary relevance: label >= THRESHOLD (default 2, CAsT strict; trec_eval -l), for the default "
        "measures and every --measure given without its own rel",
    )
    p.add_argument(
        "--measure",
        action="append",
        dest="measures",
        metavar="M",
        help="ir_measures notation, e.g. 'nDCG@10' or 'P(rel=2)@10' (repeatable; replaces the defaults); P@10, AP, "
        "RR ... without rel count label >= --threshold and are named with it (P(rel=2)@10)",
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
        help="nugget scores per run: CONE-RAG NtR / NtN, TREC RAG All / Vital / Weighted",
        description="NtR recall per run from yes/no labels, and/or NtN from entailment matches, and/or the "
        "AutoNuggetizer All / Vital / Weighted scores (strict and lax) with NtR recall at both "
        "thresholds from nuggetizer assignment files, against a gold nugget set (and optionally its "
        "de-duplicated version). Files: --gold with --matches, --ntn and/or --assignments "
        "(--assignments alone scores each record against its own nugget list). Store: --ntr-source "
        "SOURCE scores the NtR labels stored for that source (an assessor of the NtR page, "
        "crowd:NAME, llm:MODEL, an import) against a stored nugget set: yes/no NtR recall (ntr_recall, "
        "when the source has yes/no labels) and, as the RAG tab of /scores computes them, NtR recall strict "
        "(support) and lax (support or partial support) and All / Vital / Weighted strict and lax "
        "(nugget_scores) from its graded labels, a yes/no label read as support / no support, with the "
        "importance labels of --importance-source (a gold nugget without one counts as okay). Every file is checked "
        "before scoring (exit 2 naming file, line or JSON path, expected vs found); labels of "
        "unknown turns or nuggets, unjudged gold nuggets and gold turns without labels are reported "
        "as warnings on stderr (and in the JSON output), never dropped silently.",
    )
    p.add_argument(
        "--gold",
        help='gold nuggets: CONE-RAG JSON {turn: {"[k]": {"text", "relevance"}}} or nuggetizer nugget JSONL '
        '({"qid", "nuggets": [{"text", "importance"}]} per line; see --gold-format)',
    )
    p.add_argument(
        "--gold-dedup",
        help="de-duplicated gold nuggets (same layout as --gold): also score against it; must be a subset of --gold",
    )
    p.add_argument(
        "--gold-format",
        choices=("auto", "cone-rag", "nuggetizer"),
        default="auto",
        help="layout of --gold/--gold-dedup: auto (default) reads nuggetizer JSONL when the first line is an "
        'object with "qid" and "nuggets", else CONE-RAG JSON',
    )
    p.add_argument(
        "--assignments",
        action="append",
        metavar="FILE",
        help="nuggetizer assignment JSONL ({qid, run_id, nuggets: [{text, importance, assignment: "
        "support|partial_support|not_support}]} per line; repeatable): All / Vital / Weighted strict and lax",
    )
    p.add_argument(
        "--per-turn", action="store_true", help="text output: also one row per turn (the JSON output always has them)"
    )
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
        "--importance-source",
        metavar="SOURCE",
        help="store: the nugget importance labels (vital / okay) the Vital and Weighted scores read (default: "
        "those of the nugget set's own source, when it has any, e.g. from import nuggetizer-nuggets); a gold "
        "nugget without an importance label counts as okay (as on /scores; their number is reported)",
    )
    p.add_argument(
        "--dedup", action="store_true", help="store: also score against the de-duplicated subset of the nugget set"
    )
    p.add_argument(
        "--unjudged",
        choices=("no", "ignore"),
        default=UNJUDGED_DEFAULT,
        help="gold nuggets without a label count as not captured / not supported (no, the default, as the "
        "library and the CONE-RAG reference code, which asks every gold nugget; their number is reported) "
        "or are left out of the denominators (ignore, for partially labelled studies)",
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

    p = commands.add_parser(
        "citations",
        help="citation recall, precision and supported share per run from stored citation labels",
        description="Citation support of generated responses from the citation labels stored for --source "
        "(the /citations page, an LLM's prejudge citation task): per run ALCE's citation recall and "
        "citation precision (Gao, Yen, Yu & Chen 2023, 'Enabling Large Language Models to Generate Text "
        "with Citations', section 2.3; a label stands for ALCE's NLI verdict: strict counts fully "
        "supported citations, lax also partially supported ones; docs/measures.md) and the share of "
        "sentences with at least one supporting citation, strict and lax; the numbers of the RAG tab of "
        "/scores. A response with an unlabelled citation is not scored, and while a run is partly labelled "
        "neither are its responses that cite nothing (they score 0 once every citation of the run is "
        "labelled, as in ALCE): they are reported as counts (unlabelled, uncited_left_out, "
        "unlabelled_citations) with the labelled share of the run's citations (coverage), never counted as "
        "zeros. Citations labelled 'cannot judge' count as labelled and are left out of every score, never "
        "read as 0 or unsupported (cannot_judge: how many). "
        "Unknown source or run: exit 2.",
    )
    add_db_argument(p)
    p.add_argument(
        "--source", required=True, metavar="SOURCE", help="the citation label source (an assessor, llm:MODEL)"
    )
    p.add_argument(
        "--run",
        action="append",
        dest="runs",
        metavar="RUN",
        help="only this run (repeatable; default: every run the source labelled)",
    )
    p.add_argument("--per-response", action="store_true", help="also one row per response")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_citations)


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


class _Gold(NamedTuple):
    """A gold nugget file: ``{turn: {"[k]": text}}`` and, when the layout has it, each nugget's importance."""

    path: str
    text: dict[str, dict[str, str]]
    importance: dict[str, dict[str, str]] | None

    def keys(self) -> dict[str, set[str]]:
        """``{turn: {"[k]", ...}}`` (turns without nuggets are left out)."""
        return {turn: set(nuggets) for turn, nuggets in self.text.items() if nuggets}


def _gold(path: str, layout: str = "auto") -> _Gold:
    """Gold nuggets from a CONE-RAG JSON or a nuggetizer nugget JSONL file (``--gold-format``)."""
    from assess.formats import parse_nuggets
    from assess.formats.nuggetizer import looks_like_nuggetizer, parse_nuggetizer_nuggets

    text: dict[str, dict[str, str]] = {}
    if layout == "nuggetizer" or (layout == "auto" and looks_like_nuggetizer(path)):
        importance: dict[str, dict[str, str]] = {}
        for n in parse_nuggetizer_nuggets(path):
            text.setdefault(n.qid, {})[n.key] = n.text
            importance.setdefault(n.qid, {})[n.key] = n.importance
        return _Gold(path, text, importance)
    for record in parse_nuggets(path):
        text.setdefault(record.turn_id, {})[record.key] = record.text
    return _Gold(path, text, None)


def _gold_sets(args: argparse.Namespace) -> tuple[_Gold, _Gold | None]:
    """``--gold`` and ``--gold-dedup``; a de-duplicated set that is not a subset of the full one is refused."""
    from assess.formats.nuggets import check_subset

    gold = _gold(args.gold, args.gold_format)
    if not args.gold_dedup:
        return gold, None
    dedup = _gold(args.gold_dedup, args.gold_format)
    if (gold.importance is None) != (dedup.importance is None):
        raise FormatError(args.gold_dedup, None, f"the layout of --gold {args.gold}", "the other nugget layout")
    triples = [(t, k, body) for t, nuggets in gold.text.items() for k, body in nuggets.items()]
    check_subset(
        triples,
        [(t, k, body) for t, nuggets in dedup.text.items() for k, body in nuggets.items()],
        args.gold,
        args.gold_dedup,
    )
    return gold, dedup


def _ntr_labels(path: str) -> tuple[dict[str, dict[str, dict[str, bool]]], dict[tuple[str, str, str], int]]:
    """``{run: {turn: {"[k]": captured}}}`` from the NtR labels TSV, and each label's line by (run, turn, key);
    two different labels for one nugget are refused."""
    from assess.formats import parse_ntr_labels

    labels: dict[str, dict[str, dict[str, bool]]] = {}
    lines: dict[tuple[str, str, str], int] = {}
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
        lines.setdefault((record.run, record.turn_id, record.nugget_key), record.line)
    return labels, lines


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
    from assess.errors import AssessError
    from assess.measures.rankings import (
        cast_measures,
        evaluate_runs,
        paired_t_tests,
        parse_measure,
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
        measures = [parse_measure(m, args.threshold) for m in args.measures]
        binary = f"label >= {args.threshold} unless a measure gives its own rel"
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
    ttest = None
    if args.ttest:
        # --ttest P@10 names the measure as --measure P@10 does: at the threshold when it gives no rel
        try:
            ttest = str(parse_measure(args.ttest, 1 if args.ptkb else args.threshold))
        except AssessError:
            ttest = args.ttest
        if ttest not in names:
            raise FormatError("--ttest", None, f"one of the evaluated measures {names}", repr(args.ttest))
        out["ttest"] = {
            "measure": ttest,
            "tests": paired_t_tests({r: v["per_query"][ttest] for r, v in first.items()}),
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
    if ttest:
        print(f"\npaired t-tests on {ttest} (Bonferroni over {len(out['ttest']['tests'])} pairs)")
        _table(
            ["run A", "run B", "queries", "mean diff", "t", "p", "p (Bonferroni)", "significant"],
            [
                [t["a"], t["b"], t["n"], t["mean_diff"], t["t"], t["p"], t["p_bonferroni"], t["significant"]]
                for t in out["ttest"]["tests"]
            ],
        )
    return 0


_NTN_SHAPE = '{run: {turn: {"response": [ids], "pairs": [[response id, gold id], ...]}}}'


def _read_ntn(path: str) -> dict[str, dict[str, Any]]:
    """NtN matches, checked value by value: ``{run: {turn: NtnTurn}}``.

    ``response`` is a list of distinct ids (a string is refused, not read as its characters),
    ``pairs`` (optional) a list of [response id, gold id] whose response id is in ``response``;
    no other field. Gold ids are compared with the gold set later (unknown ones are reported).
    """
    from assess.formats import load_json
    from assess.formats.reading import JsonChecker, short
    from assess.measures.nugget_recall import NtnTurn

    data, text = load_json(path)
    check = JsonChecker(path, text)
    if not isinstance(data, dict):
        check.fail((), f"an object {_NTN_SHAPE}", data)
    runs: dict[str, dict[str, Any]] = {}
    for run, turns in data.items():
        run_id = check.id(run, (run,), "a run name")
        if not isinstance(turns, dict):
            check.fail((run,), "an object {turn: {response, pairs}}", turns)
        runs[run_id] = {}
        for turn, entry in turns.items():
            at = (run, turn)
            turn_id = check.id(turn, at, "a turn id")
            if not isinstance(entry, dict):
                check.fail(at, 'an object {"response": [ids], "pairs": [[r, g], ...]}', entry)
            extra = sorted(set(entry) - {"response", "pairs"})
            if extra:
                check.fail(at, 'only the fields "response" and "pairs"', f"field {short(extra[0], 40)}")
            response = check.get(entry, "response", (list, str), at)
            if isinstance(response, str):  # would otherwise be read as one id per character
                check.fail((*at, "response"), "a list of response nugget ids", f"a string {short(response, 40)}")
            ids: list[str] = []
            for i, item in enumerate(response):
                rid = check.id(item, (*at, "response", i), "a response nugget id")
                if rid in ids:
                    check.fail((*at, "response", i), "distinct response nugget ids", f"{short(rid, 40)} twice")
                ids.append(rid)
            pairs = []
            for i, pair in enumerate(check.get(entry, "pairs", list, at, required=False) or []):
                where = (*at, "pairs", i)
                if not isinstance(pair, list) or len(pair) != 2:
                    check.fail(where, "a pair [response id, gold id]", pair)
                r, g = (check.id(x, where, "a nugget id") for x in pair)
                if r not in ids:
                    check.fail(where, f"a response id listed in {list(at)}['response']", short(r, 40))
                pairs.append((r, g))
            runs[run_id][turn_id] = NtnTurn(ids, pairs)
    return runs


def _assignments(paths: list[str], gold: _Gold | None, warn) -> tuple[dict, dict, dict, dict]:
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
    from assess.formats.nuggetizer import parse_nuggetizer_assignment_records
    from assess.formats.reading import short

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


def _nuggets(args: argparse.Namespace) -> int:
    from assess.measures.nugget_recall import ntn_run

    files = ("gold", "gold_dedup", "matches", "ntn", "assignments")
    if args.ntr_source:
        given = [f"--{n.replace('_', '-')}" for n in files if getattr(args, n)]
        if given:
            raise FormatError(
                "arguments",
                None,
                "either files (--gold ...) or the store (--ntr-source)",
                f"--ntr-source with {', '.join(given)}",
            )
        return _nuggets_from_store(args)
    if args.dedup or args.nugget_source or args.importance_source:
        raise FormatError(
            "arguments",
            None,
            "--dedup, --nugget-source and --importance-source with --ntr-source (files: --gold-dedup FILE)",
            "--dedup" if args.dedup else "--nugget-source" if args.nugget_source else "--importance-source",
        )
    if not args.gold and not args.assignments:
        raise FormatError(
            "arguments", None, "--gold FILE (with --matches/--ntn/--assignments) or --ntr-source SOURCE", "neither"
        )
    if not args.matches and not args.ntn and not args.assignments:
        raise FormatError(
            "arguments", None, "--matches (NtR labels), --ntn (NtN matches) and/or --assignments", "none of them"
        )
    if not args.gold and (args.matches or args.ntn or args.gold_dedup):
        raise FormatError("arguments", None, "--gold FILE with --matches, --ntn or --gold-dedup", "no --gold")
    if args.personal is _PERSONAL_DEFAULT:
        raise FormatError("--personal", None, "a PTKB qrels or topics file", "no file")

    # Every file is read and checked before anything is scored or printed.
    warnings: list[str] = []
    gold, dedup = _gold_sets(args) if args.gold else (None, None)
    gold_sets = {"original": gold.keys()} if gold else {}
    if dedup is not None:
        gold_sets["deduplicated"] = dedup.keys()
    labels = _ntr_labels(args.matches) if args.matches else None
    ntn = _read_ntn(args.ntn) if args.ntn else None
    assigned = _assignments(args.assignments, gold, warnings.append) if args.assignments else None
    personal = _personal_turns(args.personal) if args.personal else None
    if labels is not None:
        _check_labels(args.matches, labels, gold, args.unjudged, warnings.append)
    if ntn is not None:
        _check_ntn(args.ntn, ntn, gold, warnings.append)

    def summary(per_turn: dict, mean: float | None, n: int) -> dict[str, Any]:
        return _nugget_summary(per_turn, mean, n, personal)

    out: dict[str, Any] = {"gold": args.gold, "gold_dedup": args.gold_dedup}
    if labels is not None:
        out["ntr_recall"] = _ntr_recall(labels[0], gold_sets, args.unjudged, summary)
    if ntn is not None:
        out["ntn"] = {"empty_gold": args.empty_gold, "runs": {}}
        for run, responses in ntn.items():
            out["ntn"]["runs"][run] = {}
            for name, keys in gold_sets.items():
                res = ntn_run(responses, keys, empty_gold=args.empty_gold)
                out["ntn"]["runs"][run][name] = {
                    m: summary(res[m]["per_turn"], res[m]["mean"], res[m]["n"]) for m in ("recall", "precision")
                }
    if assigned is not None:
        out["assignments"] = args.assignments
        out["nugget_scores"] = _graded_scores(assigned, dedup, args.unjudged, personal, warnings.append)
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    if warnings:
        out["warnings"] = warnings
    if args.json:
        _print_json(out)
        return 0
    split_cols = ["personal", "non-personal"] if personal is not None else []
    sections = []
    if labels is not None:
        sections.append(lambda: _ntr_text(out, args, personal is not None))
    if ntn is not None:
        sections.append(
            lambda: (
                print(f"NtN (turns without gold nuggets: {args.empty_gold})"),
                _table(
                    ["run", "gold", "measure", "value", "turns", *split_cols],
                    [
                        [run, name, m, *_cells(row[m], personal is not None)]
                        for run, per in out["ntn"]["runs"].items()
                        for name, row in per.items()
                        for m in ("recall", "precision")
                    ],
                ),
            )
        )
    if assigned is not None:
        sections.append(lambda: _graded_text(out["nugget_scores"], args))
    for i, section in enumerate(sections):
        if i:
            print()
        section()
    return 0


def _ntr_text(out: dict, args: argparse.Namespace, split: bool) -> None:
    print(f"NtR recall (unjudged gold nuggets: {args.unjudged})")
    _ntr_table(out["ntr_recall"], split)
    if args.per_turn:
        print()
        _table(
            ["run", "gold", "turn", "recall"],
            [
                [run, name, turn, value]
                for run, per in out["ntr_recall"]["runs"].items()
                for name, row in per.items()
                for turn, value in row["per_turn"].items()
            ],
        )


def _check_labels(path: str, labels: tuple, gold: _Gold, unjudged: str, warn) -> None:
    """Report NtR labels the gold set does not know, unjudged gold nuggets and gold turns without labels."""
    from assess.measures.nugget_recall import label_coverage

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
            f"{unlabelled} (run, gold turn) pair(s) have no NtR label at all and are skipped as empty responses "
            f"(labels in {path}, gold {gold.path})"
        )


def _check_ntn(path: str, ntn: dict, gold: _Gold, warn) -> None:
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


_GRADED = ("all_strict", "all_lax", "vital_strict", "vital_lax", "weighted_strict", "weighted_lax")
_NTR = ("ntr_recall_strict", "ntr_recall_lax")


def _graded_scores(assigned: tuple, dedup: _Gold | None, unjudged: str, personal, warn) -> dict[str, Any]:
    """AutoNuggetizer scores and NtR recall (strict: support; lax: support or partial) per run and gold set."""
    from assess.measures.nugget_recall import LAX, STRICT, label_coverage, ntr_run, nugget_scores_run, split_personal

    support, importance, _, notes = assigned
    # Each record against its own list (no --gold): an empty list scores 0, as nuggetizer's metrics. With a
    # gold set, empty and missing records already hold "not supported" for every gold nugget; a turn
    # without gold nuggets (in the de-duplicated set, say) is skipped.
    empty = "zero" if notes["own_lists"] else "skip"
    unjudged_n = 0
    out: dict[str, Any] = {
        "unjudged": unjudged,
        "scores": [*_GRADED, *_NTR],
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
            per_turn = {t: {**v, **{m: ntr[m]["per_turn"].get(t) for m in _NTR}} for t, v in res["per_turn"].items()}
            row: dict[str, Any] = {
                "mean": {**res["mean"], **{m: ntr[m]["mean"] for m in _NTR}},
                "n_turns": res["n"],
                "per_turn": per_turn,
            }
            if personal is not None:
                for part in ("personal", "non_personal"):
                    row[part] = {
                        m: split_personal({t: v[m] for t, v in per_turn.items()}, personal)[part]["mean"]
                        for m in (*_GRADED, *_NTR)
                    }
            out["runs"][run][name] = row
    if unjudged_n:
        rule = "count as not supported" if unjudged == "no" else "are left out (--unjudged ignore)"
        warn(f"{unjudged_n} gold nugget(s) have no assignment in turns their run was assessed on and {rule}")
    return out


def _graded_text(scores: dict, args: argparse.Namespace) -> None:
    names = scores["scores"]
    print(
        f"TREC RAG nugget scores (strict: support only; lax: partial support counts 0.5, NtR lax counts it 1; "
        f"unjudged gold nuggets: {scores['unjudged']})"
    )
    _table(
        ["run", "gold", "turns", *names],
        [
            [run, name, row["n_turns"], *(row["mean"][m] for m in names)]
            for run, per in scores["runs"].items()
            for name, row in per.items()
        ],
    )
    if args.per_turn:
        print()
        _table(
            ["run", "gold", "turn", *names],
            [
                [run, name, turn, *(v[m] for m in names)]
                for run, per in scores["runs"].items()
                for name, row in per.items()
                for turn, v in row["per_turn"].items()
            ],
        )


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
    """``score nuggets --ntr-source SOURCE``: NtR recall and the graded nugget scores from the stored labels."""
    import os

    from assess.errors import AssessError, UnknownItem
    from assess.services import rag
    from assess.tasks import Task
    from store import labels, open_db
    from store.db import display
    from store.db import exists as store_exists
    from store.nuggets import ntr

    if not store_exists(args.db):
        where = display(args.db)
        raise AssessError(f"{where}: no such database (create it with: python -m assess init --db {where})")
    db = open_db(args.db)
    have = rag.ntr_sources(db)
    if args.ntr_source not in have:
        raise UnknownItem(
            f"no NtR labels of source {args.ntr_source!r}; sources with NtR labels: {', '.join(have) or 'none'}"
        )
    yes_no = args.ntr_source in labels.sources(db, Task.NTR)
    graded = args.ntr_source in labels.sources(db, Task.NTR_SUPPORT)
    ptkb_source, personal = None, None
    if args.personal:
        if args.personal not in labels.sources(db, "ptkb") and os.path.isfile(args.personal):
            personal = _personal_turns(args.personal)  # a PTKB qrels or topics file
        else:
            ptkb_source = str(args.personal)
    out: dict[str, Any] = {"db": display(args.db), "ntr_source": args.ntr_source}
    if yes_no:
        data = ntr.ntr_scoring_input(db, args.ntr_source, nugget_source=args.nugget_source, ptkb_source=ptkb_source)
        nugget_source = data["nugget_source"]
        if ptkb_source is not None:
            personal = data["personal"]
        gold_sets = {"original": data["gold"]}
        if args.dedup:
            if not data["gold_dedup"]:
                raise AssessError(rag.no_dedup_message(nugget_source))
            gold_sets["deduplicated"] = data["gold_dedup"]
    else:  # graded labels only: no yes/no NtR recall, the graded scores below
        nugget_source = _graded_nugget_source(db, args)
        if ptkb_source is not None:
            personal = rag.personal_turns(db, ptkb_source)
    importance_source = _importance_source(db, args.importance_source, nugget_source)
    scored = {
        name: rag.nugget_scores(
            db, args.ntr_source, nugget_source, importance_source, unjudged=args.unjudged, dedup=name != "original"
        )
        for name in ("original", "deduplicated")
        if name == "original" or args.dedup
    }
    notes = scored["original"]["notes"]

    def summary(per_turn: dict, mean: float | None, n: int) -> dict[str, Any]:
        return _nugget_summary(per_turn, mean, n, personal)

    out["nugget_source"] = nugget_source
    out["personal"] = str(args.personal) if args.personal else None
    if yes_no:  # the fields (and their order) of the yes/no form, then the graded scores
        out["labels"] = data["labels"]
        out["ignored_labels"] = {
            "other_nugget_sets": data["other_set_labels"],
            "empty_responses": data["empty_response_labels"],
        }
        out["ntr_recall"] = _ntr_recall(dict(sorted(data["matches"].items())), gold_sets, args.unjudged, summary)
        if args.dedup:
            out["dedup_unknown_turns"] = data["dedup_unknown_turns"]
    else:
        out["labels"] = notes["labels"]
        out["ignored_labels"] = {
            "other_nugget_sets": notes["other_set_labels"],
            "empty_responses": notes["empty_response_labels"],
        }
    out["importance_source"] = importance_source
    out["nugget_scores"] = _stored_graded(scored, args.unjudged, personal)
    if yes_no:
        _store_warnings(out, data, args.unjudged)
    if graded and notes["unjudged"]:
        rule = "count as not supported" if args.unjudged == "no" else "are left out (--unjudged ignore)"
        warning = (
            f"{notes['unjudged']} gold nugget(s) have no NtR label (yes/no or graded) of {args.ntr_source} in "
            f"turns it judged and {rule}"
        )
        print(f"warning: {warning}", file=sys.stderr)
        out.setdefault("warnings", []).append(warning)
    if args.json:
        _print_json(out)
        return 0
    if yes_no:
        print(
            f"NtR recall of {out['ntr_source']} on nugget set {out['nugget_source']} ({out['labels']} labels; "
            f"unjudged gold nuggets: {args.unjudged}"
            + (f"; personal = a relevant PTKB statement by {out['personal']}" if args.personal else "")
            + ")"
        )
        _ntr_table(out["ntr_recall"], personal is not None)
    else:
        print(f"Graded NtR labels of {out['ntr_source']} on nugget set {out['nugget_source']} ({out['labels']} labels)")
    ignored = out["ignored_labels"]
    if ignored["other_nugget_sets"] or ignored["empty_responses"]:
        print(
            f"\nleft out: {ignored['other_nugget_sets']} labels on nuggets of other sets, "
            f"{ignored['empty_responses']} on empty responses"
        )
    if args.dedup and yes_no and out["dedup_unknown_turns"]:
        print(
            f"\nde-duplication undecided in {len(out['dedup_unknown_turns'])} turn(s) "
            f"({', '.join(out['dedup_unknown_turns'][:10])}{' …' if len(out['dedup_unknown_turns']) > 10 else ''}): "
            f"their undecided nuggets are not in the de-duplicated set"
        )
    print()
    _graded_text(out["nugget_scores"], args)
    without = out["nugget_scores"]["notes"]["without_importance"]
    shown = f"importance: labels of {importance_source}" if importance_source else "importance: no labels"
    if without:
        shown += f" ({without} gold nugget(s) without an importance label count as okay)"
    print(shown)
    return 0


def _graded_nugget_source(db, args: argparse.Namespace) -> str:
    """The nugget set graded-only labels are scored on: --nugget-source, else the one set they refer to."""
    from assess.errors import AssessError, UnknownItem
    from assess.services import rag
    from store.nuggets import gold

    if args.nugget_source is not None:
        known = gold.nugget_sources(db)
        if args.nugget_source not in known:
            raise UnknownItem(
                f"no nuggets of source {args.nugget_source!r}; nugget sources: {', '.join(known) or 'none'}"
            )
        return args.nugget_source
    sets = rag.ntr_nugget_sets(db, args.ntr_source)
    if len(sets) != 1:
        raise AssessError(
            f"the labels of {args.ntr_source} refer to the nugget sets {', '.join(sets) or 'none'}: "
            "name one with --nugget-source"
        )
    return sets[0]


def _importance_source(db, given: str | None, nugget_source: str) -> str | None:
    """--importance-source (it must have importance labels), else the nugget set's own source when it has
    importance labels, else None (every gold nugget okay)."""
    from assess.errors import UnknownItem
    from assess.services.rag import default_importance_source
    from assess.tasks import Task
    from store import labels

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
    from assess.measures.nugget_recall import split_personal

    names = [*_GRADED, *_NTR]
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


def _citations(args: argparse.Namespace) -> int:
    """``score citations --db PATH --source SOURCE``: citation measures from the stored citation labels."""
    from assess.errors import AssessError
    from assess.services import rag
    from store import open_db
    from store.db import display
    from store.db import exists as store_exists

    if not store_exists(args.db):
        where = display(args.db)
        raise AssessError(f"{where}: no such database (create it with: python -m assess init --db {where})")
    report = rag.citation_report(open_db(args.db), args.source, list(dict.fromkeys(args.runs)) if args.runs else None)
    out: dict[str, Any] = {
        "db": display(args.db),
        "source": args.source,
        "scores": list(rag.CITATION_SCORES),
        "runs": {r["run"]: {k: v for k, v in r.items() if k != "run"} for r in report["runs"]},
    }
    if args.per_response:
        out["per_response"] = report["per_response"]
    unlabelled = sum(r["unlabelled_citations"] for r in report["runs"])
    if unlabelled:
        responses = sum(r["unlabelled"] for r in report["runs"])
        uncited = sum(r["uncited_left_out"] for r in report["runs"])
        warning = (
            f"{unlabelled} citation(s) have no label of {args.source}: {responses} response(s) with them and "
            f"{uncited} response(s) citing nothing (in partly labelled runs) are left out of the scores, never "
            "counted as zeros (see unlabelled, uncited_left_out, unlabelled_citations and coverage)"
        )
        print(f"warning: {warning}", file=sys.stderr)
        out["warnings"] = [warning]
    if args.json:
        _print_json(out)
        return 0
    print(
        f"Citation support labels of {args.source} (ALCE citation recall / precision; strict: fully supported, "
        "lax: fully or partially; supported: share of sentences with a supporting citation)"
    )
    counts = [
        "responses",
        "unlabelled",
        "uncited",
        "uncited_left_out",
        "unlabelled_citations",
        "coverage",
        "cannot_judge",
        "sentences",
        "citations",
    ]
    _table(
        ["run", *counts, *rag.CITATION_SCORES],
        [[run, *(r[c] for c in counts), *(r[m] for m in rag.CITATION_SCORES)] for run, r in out["runs"].items()],
    )
    if args.per_response:
        print()
        columns = ["labelled", "unlabelled_citations", "cannot_judge", "sentences", "citations"]
        _table(
            ["run", "turn", *columns, *rag.CITATION_SCORES],
            [
                [r["run"], r["turn"], *(r[c] for c in columns), *(r[m] for m in rag.CITATION_SCORES)]
                for r in out["per_response"]
            ],
        )
    return 0


def _store_warnings(out: dict, data: dict, unjudged: str) -> None:
    """Report unjudged gold nuggets of the stored labels (stderr, and ``warnings`` in the JSON output)."""
    from assess.measures.nugget_recall import label_coverage

    count = sum(label_coverage(turns, data["gold"]).unjudged for turns in data["matches"].values())
    if not count:
        return
    rule = "count as not captured" if unjudged == "no" else "are left out (--unjudged ignore)"
    warning = f"{count} gold nugget(s) have no NtR label of {data['ntr_source']} in turns it judged and {rule}"
    print(f"warning: {warning}", file=sys.stderr)
    out["warnings"] = [warning]
