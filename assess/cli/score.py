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

Each handler parses its arguments, calls one function of :mod:`assess.services.scores` (which reads the files
with :mod:`assess.formats` and scores them) and prints the document it returns: with ``--json`` as one JSON
object (floats at full precision), otherwise as plain tables. Heavy libraries are imported inside the handlers
so that ``python -m assess --help`` stays fast.
"""

from __future__ import annotations

import argparse

from assess.cli import rag_scores
from assess.cli.common import cell, print_json, table
from assess.measures import aepd
from assess.services import scores


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

    rag_scores.add_nuggets(commands)
    rag_scores.add_citations(commands)


# ----------------------------------------------------------------------------------------------
# Handlers: the arguments, one call of assess.services.scores, the output


def _gfrc2(args: argparse.Namespace) -> int:
    results = scores.gfrc2_file(args.file)
    if args.json:
        print_json(results)
        return 0
    attrs = list(next(iter(results.values()))["EGF"]) if results else []
    table(
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
            table(
                ["wc", "GWCrel", "WCnonrel", "GNP"] + [f"GF {a}" for a in attrs] + ["Experience"],
                [
                    [c["wc"], c["GWCrel"], c["WCnonrel"], c["GNP"], *c["GF"].values(), c["Experience"]]
                    for c in r["clusters"]
                ],
            )
    return 0


def _aepd(args: argparse.Namespace) -> int:
    results = scores.aepd_file(args.file)
    if args.json:
        print_json(results)
        return 0
    table(["turn", *aepd.SCORE_KEYS], [[tid, *(s[k] for k in aepd.SCORE_KEYS)] for tid, s in results["turns"].items()])
    t = results["tradeoff"]
    print(
        f"\nP-D trade-off over {t['n']} turns with P > 0 and D > 0: Kendall tau = {cell(t['kendall_tau'])}, "
        f"p = {cell(t['p_value'])}"
    )
    return 0


def _runs(args: argparse.Namespace) -> int:
    out = scores.run_scores(
        args.qrels,
        args.runs,
        qrels_b=args.qrels_b,
        threshold=args.threshold,
        measures=args.measures,
        ptkb=args.ptkb,
        all_queries=args.all_queries,
        ttest=args.ttest,
        per_query=args.per_query,
    )
    if args.json:
        print_json(out)
        return 0
    names = out["measures"]
    print(f"qrels {args.qrels} (binary relevance: {out['binary_relevance']}; mean over {out['averaging']})")
    table(["run", "queries", *names], [[r, v["n_queries"], *v["mean"].values()] for r, v in out["runs"].items()])
    if args.qrels_b:
        print(f"\nqrels B {args.qrels_b}")
        table(["run", "queries", *names], [[r, v["n_queries"], *v["mean"].values()] for r, v in out["runs_b"].items()])
        print("\nrun orderings, qrels A vs B")
        table(
            ["measure", "runs", "kendall_tau", "p", "spearman_rho", "p"],
            [
                [m, c["n"], c["kendall_tau"], c["kendall_p"], c["spearman_rho"], c["spearman_p"]]
                for m, c in out["correlation"].items()
            ],
        )
    if "ttest" in out:
        print(f"\npaired t-tests on {out['ttest']['measure']} (Bonferroni over {len(out['ttest']['tests'])} pairs)")
        table(
            ["run A", "run B", "queries", "mean diff", "t", "p", "p (Bonferroni)", "significant"],
            [
                [t["a"], t["b"], t["n"], t["mean_diff"], t["t"], t["p"], t["p_bonferroni"], t["significant"]]
                for t in out["ttest"]["tests"]
            ],
        )
    return 0
