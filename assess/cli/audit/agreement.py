"""CLI: agreement between two label sources of the store (`agreement`), and the judge audit (`audit ...`)."""

from __future__ import annotations

import functools
import json

from assess.cli import add_db_argument
from assess.cli.common import fmt_num, open_store, print_report, text_table
from assess.cli.simulate import add_command as add_simulate
from assess.errors import AssessError


def _add_agreement(sub) -> None:
    p = sub.add_parser(
        "agreement",
        help="agreement (Cohen's kappa and more) between two label sources",
        description="Compare two label sources over the items both labelled: observed agreement, "
        "Cohen's kappa (unweighted/linear/quadratic over the full scale), binarised "
        "kappa, ICC(2,1) and ICC(3,1) (grades read as numbers), confusion matrix, per-topic kappa, "
        "bootstrap 95%% interval.",
    )
    add_db_argument(p)
    p.add_argument("--task", choices=("passage", "ptkb", "ntr"), default="passage")
    p.add_argument("--a", required=True, help="first source (rows of the confusion matrix)")
    p.add_argument("--b", required=True, help="second source (columns)")
    p.add_argument("--threshold", type=float, help="also binarise at label >= T (e.g. 2 for 0-4 grades)")
    p.add_argument(
        "--weights",
        choices=("none", "linear", "quadratic"),
        default="none",
        help="weights of the headline kappa (default none)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_agreement)


def cmd_agreement(args) -> int:

    weights = None if args.weights == "none" else args.weights
    from assess.services.audit import agreement_from_store

    report = agreement_from_store(
        open_store(args), args.task, args.a, args.b, weights=weights, threshold=args.threshold
    )
    if args.json:
        print(json.dumps(report, default=str))
        return 0
    print(f"{args.task}: {args.a} vs {args.b} over {report['n']} shared items")
    for key in ("agreement", "kappa", "kappa_linear", "kappa_quadratic", "kappa_binary", "icc_2_1", "icc_3_1"):
        if report.get(key) is not None:
            print(f"  {key:16} {report[key]:.4f}")
    print("  confusion (rows a, columns b):")
    for label, row in zip(report["labels"], report["confusion"]):
        print(f"    {label}: " + " ".join(f"{v:6d}" for v in row))
    return 0


# ------------------------------------------------------------------------------------------ audit ...
# `python -m assess audit agreement|systems|bias|consistency|alt-test|verdict|persona|estimate|coverage|sample|plan`: the
# judge audit's numbers (assess/services/audit.py), as the /audit page shows them. --json prints one JSON
# object; without it a readable table.


def add_commands(sub) -> None:
    """The top-level `agreement` command (two sources), then the `audit` group."""
    from assess.cli import add_by_argument

    _add_agreement(sub)
    group = sub.add_parser(
        "audit",
        help="the judge audit: several sources, system level, bias, consistency, corrected estimates, samples",
        description="The judge audit (docs/cli.md#the-judge-audit): agreement of several sources with a human "
        "ceiling and breakdowns, system-level agreement, bias and consistency probes, corrected (PPI) "
        "estimates with intervals, coverage of those intervals, budgeted human samples.",
    )
    commands = group.add_subparsers(dest="audit_command", metavar="ACTION")
    commands.required = True

    def command(name: str, help_text: str, func, description: str):
        p = commands.add_parser(name, help=help_text, description=description)
        add_db_argument(p)
        p.add_argument("--json", action="store_true", help="print one JSON object")
        p.set_defaults(func=func)
        return p

    def pair(p, other: str = "--judge", other_help: str = "the judge (default: an LLM source)") -> None:
        p.add_argument(
            "--reference", help="the reference source (default: a human one: an assessor, else imported qrels)"
        )
        p.add_argument(other, help=other_help)

    p = command(
        "agreement",
        "agreement matrix of several sources with a human ceiling",
        cmd_matrix,
        "Every pair of the chosen sources over the items both labelled: observed agreement, kappa "
        "unweighted/linear/quadratic, binarised kappa, Krippendorff's alpha, ICC(2,1) and ICC(3,1), bootstrap "
        "intervals, the "
        "human<->human ceiling, by topic, turn depth and personal turn.",
    )
    p.add_argument("--task", default="passage", choices=("passage", "ptkb", "ntr", "ntr-support", "importance"))
    p.add_argument("--source", action="append", help="a source to include (repeat; default: every source)")
    p.add_argument("--threshold", type=float, help="binarise at label >= T (default 2 for passages, else none)")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap replicates (default 1000; 0: none)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ptkb-source", help="whose PTKB labels make a turn personal (default: organizers)")
    p.add_argument(
        "--statistic", default="kappa_quadratic", help="the statistic of the table (default kappa_quadratic)"
    )
    _min_shared(p)

    p = command(
        "systems",
        "run rankings under two sources: tau, tau_AP, rho, r, top-k, significance preservation",
        cmd_systems,
        "Score the stored runs under each source's qrels and compare: Kendall tau, tau_AP, Spearman rho, "
        "Pearson r, top-k overlap (topic bootstrap intervals), which significant differences survive, "
        "whether the leading run changes.",
    )
    pair(p, "--other", "the source compared with the reference (default: an LLM source)")
    p.add_argument("--measure", default="nDCG@5", help="ir_measures notation (default nDCG@5)")
    p.add_argument("--threshold", type=int, default=2, help="relevant = grade >= T for binary measures (default 2)")
    p.add_argument("--k", type=int, action="append", help="top-k overlap at k (repeat; default 1, 3, 5)")
    p.add_argument("--correction", choices=("holm", "bonferroni"), default="holm")
    p.add_argument("--bootstrap", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)

    p = command(
        "bias",
        "judge - reference differences by length, rank, depth, personal turn and run",
        cmd_bias,
        "The judge's grade minus the reference's on the passages both graded, against passage length "
        "(words), best rank in the runs, turn depth, personal turns, and per run over its top k.",
    )
    pair(p)
    p.add_argument("--k", type=int, default=10, help="a run's top k for the per-run probe (default 10)")

    p = command(
        "consistency",
        "how well a judge agrees with itself over its K stored answers",
        cmd_consistency,
        "Self-consistency of the K answers per item stored by prejudge --samples K.",
    )
    p.add_argument("--source", required=True, help="the LLM source")
    p.add_argument("--task", default="passage")

    p = command(
        "alt-test",
        "can the judge replace the human assessors? the alternative annotator test",
        cmd_alt_test,
        "The alternative annotator test (Calderon, Reichart and Dror 2025): each human left out in turn, the "
        "judge's and that human's agreement with the other humans compared per item with a one-sided paired "
        "t-test and a cost-benefit margin epsilon; p-values corrected by Benjamini-Yekutieli at q; the judge "
        "passes when it wins against at least half of the humans (omega >= 0.5). Needs 2 or more humans "
        "sharing items with the judge (at least --min-items each; 50-100 recommended).",
    )
    p.add_argument("--human", action="append", required=True, help="a human source (repeat: at least 2)")
    p.add_argument("--judge", required=True, help="the source that would replace them (an LLM)")
    p.add_argument("--task", default="passage", choices=("passage", "ptkb", "ntr"))
    p.add_argument("--epsilon", type=float, help="the margin granted to the judge (default 0.2, expert assessors)")
    p.add_argument("--q", type=float, help="the false discovery rate (default 0.05)")
    p.add_argument("--min-items", type=int, help="items a human needs to be tested (default 30)")
    p.add_argument(
        "--scoring",
        choices=("neg_rmse", "accuracy"),
        help="agreement of a grade with the other humans' (default neg_rmse, for ordinal grades)",
    )

    p = command(
        "verdict",
        "can the judge replace the reference here? every criterion, its figure, threshold and pass/fail",
        cmd_verdict,
        "One answer to 'can the judge replace the reference on this store?': item agreement against the human "
        "ceiling, the alternative annotator test, system-level agreement, bias by turn depth and personal turn, "
        "and, when it cannot replace, the corrected-estimate alternative with the human budget that reaches an "
        "interval width; each figure with the `audit` command it comes from, each criterion that cannot be "
        "computed with what is missing and how to get it. Verdict: replace, pre-filter or assist only "
        "(docs/llm.md#the-verdict).",
    )
    pair(p)
    p.add_argument("--epsilon", type=float, help="the alternative annotator test's margin (default 0.2, experts)")
    p.add_argument("--width", type=float, help="the 95%% interval width the human budget should reach (default 0.1)")

    p = command(
        "retest",
        "test-retest: each assessor's agreement with themselves over re-shown items",
        cmd_self_agreement,
        "Each assessor's second answers of re-shown items (python -m assess reshow) against their first "
        "labels as they stood then: observed agreement, kappa unweighted/linear/quadratic, binarised kappa, "
        "ordinal alpha, with percentile bootstrap intervals over items; the headline is quadratic kappa "
        "(unweighted on a yes/no scale).",
    )
    p.add_argument("--task", default="passage", choices=("passage",))
    p.add_argument("--assessor", help="one assessor (default: every assessor with answered re-shows)")
    p.add_argument("--threshold", type=float, help="binarise at label >= T (default 2 for passages)")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap replicates (default 1000; 0: none)")
    p.add_argument("--seed", type=int, default=0)

    p = command(
        "overlap",
        "the human ceiling over planned overlap (items judged by 2 or 3 assessors)",
        cmd_overlap,
        "The items an overlap plan (python -m assess overlap) gave to two or three assessors, each with "
        "the labels of its planned assessors: every pair and the ceiling pooled over them (observed agreement, "
        "kappa unweighted/linear/quadratic, binarised kappa, ordinal alpha, percentile bootstrap intervals), "
        "and how many items two and all of their assessors have judged.",
    )
    p.add_argument("--task", default="passage", choices=("passage", "ptkb"))
    p.add_argument("--plan", help="one plan (default: every plan of the task)")
    p.add_argument("--threshold", type=float, help="binarise at label >= T (default 2 for passages)")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap replicates (default 1000; 0: none)")
    p.add_argument("--seed", type=int, default=0)
    _min_shared(p)

    p = command(
        "persona",
        "grades with and without the PTKB in the prompt",
        cmd_persona,
        "Persona sensitivity: the same items answered under a prompt version with the PTKB statements and "
        "one without; how many grades change and in which direction.",
    )
    p.add_argument("--source", required=True, help="the LLM source")
    p.add_argument("--with", dest="with_version", required=True, help="the prompt version with the PTKB")
    p.add_argument("--without", dest="without_version", required=True, help="the prompt version without it")
    p.add_argument("--task", default="passage")

    p = command(
        "estimate",
        "corrected (PPI) estimates of run measures and topic shares beside the human-only ones",
        cmd_estimate,
        "Each run's P@k, nDCG@k and NtR recall and each topic's share of relevant items, estimated from the "
        "judge's labels on every item and the reference's on a sample (one drawn by `audit sample`, or every "
        "item the reference graded, assumed a uniform sample of the judge's items and refused where it cannot "
        "be one), with intervals, beside the human-only estimate; a topic or run with nothing sampled is not "
        "estimable. The JSON's design says which.",
    )
    pair(p)
    p.add_argument("--sample", help="a stored sample (audit sample) whose graded items are the human sample")
    p.add_argument("--threshold", type=int, default=2)
    p.add_argument("--k", type=int, default=5, help="cutoff of P@k and nDCG@k (default 5)")
    p.add_argument(
        "--measure",
        action="append",
        choices=("P@k", "nDCG@k", "ntr"),
        help="repeat; default all (ntr alone needs NtR labels of both sources, not passage grades)",
    )
    p.add_argument("--seed", type=int, default=0)

    p = command(
        "coverage",
        "how often the intervals hold the full-reference value, PPI vs human-only",
        cmd_coverage,
        "Repeatedly sample N reference labels among the items both sources labelled, estimate the share at "
        "or above the threshold with and without the judge, and count how often each interval holds the "
        "value computed from all reference labels.",
    )
    pair(p)
    p.add_argument("--threshold", type=float, default=2)
    p.add_argument("--sample", type=int, required=True, help="reference labels per repeat")
    p.add_argument("--repeats", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)

    p = command(
        "sample",
        "draw a budgeted human sample and queue it for an assessor",
        cmd_sample,
        "Draw --budget of the judge's graded passages (stratified by its grade with Neyman allocation, or "
        "by disagreement with a second judge), store each item's inclusion probability, and put the items "
        "at the head of the assessor's queue.",
    )
    p.add_argument("--name", required=True, help="the sample's name (one word)")
    p.add_argument("--judge", required=True)
    p.add_argument("--budget", type=int, required=True)
    p.add_argument("--design", choices=("stratified", "disagreement", "active"), default="stratified")
    p.add_argument("--second", help="the second judge (disagreement design; the active design weighs it)")
    p.add_argument("--k", type=int, default=5, help="active design: the stored runs' P@k it serves (default 5)")
    p.add_argument("--assessor", required=True, help="who judges the sample (an existing assessor)")
    p.add_argument("--threshold", type=float, default=2)
    p.add_argument("--seed", type=int, default=0)
    add_by_argument(p)

    p = command(
        "plan",
        "expected interval width for several budgets, before anyone judges",
        cmd_plan,
        "Expected width of the interval of the share at the threshold for each budget: uniform human-only, "
        "uniform PPI, stratified by the judge's grade, by disagreement with --second when given.",
    )
    p.add_argument("--judge", help="the judge whose items are sampled (default: an LLM source)")
    p.add_argument("--budget", type=int, action="append", help="repeat; default 100, 200, 500, 1000")
    p.add_argument("--design", choices=("stratified", "disagreement"), default="stratified")
    p.add_argument("--second", help="the second judge (disagreement design)")
    p.add_argument("--threshold", type=float, default=2)

    add_simulate(command)

    p = command(
        "speed",
        "each assessor's active time per judgment: by task, passage length and hour; implausible speed",
        cmd_speed,
        "Active time per label event (measured in the browser: tab visible and focused, idle stretches over "
        "60 s cut): median and quartiles per assessor by task, by passage length and by hour of the day (UTC); "
        "a flag where the median of a task is under 1500 ms over 20 or more labels. --labels prints every "
        "timed label event as CSV instead.",
    )
    p.add_argument("--assessor", help="one assessor (default all)")
    p.add_argument("--labels", action="store_true", help="print every timed label event as CSV")

    p = command(
        "rubber-stamp",
        "shown LLM labels accepted, by time taken; Potato's rubber-stamping flag; anchoring with time",
        cmd_rubber_stamp,
        "Over labels written with an LLM's label on screen ('shown' mode, and changes after a 'reveal'): the "
        "share that equals the LLM's label, by time taken; flagged (Potato's rule) at 5 or more accepted with "
        "a median under 500 ms and at most 5%% of them corrected later; then the anchoring report with the "
        "active time of the changes after a reveal.",
    )
    p.add_argument("--task", choices=("passage", "ptkb"), default="passage")
    p.add_argument("--assessor", help="one assessor (default all)")


def cmd_speed(args) -> int:
    from assess.cli import data_output
    from assess.services.audit import speed, timed_labels_csv

    db = open_store(args)
    if args.labels:
        data_output().write(timed_labels_csv(db, assessor=args.assessor))
        return 0
    report = speed(db, assessor=args.assessor)
    if args.json:
        return print_report(report)
    rules = report["rules"]
    print(
        f"active time per label (idle over {rules['idle_limit_ms'] // 1000} s cut; flag: median under "
        f"{rules['fast_median_ms']} ms over {rules['fast_min_labels']}+ labels of a task)"
    )
    if not report["rows"]:
        print("no timed label yet")
        return 0
    text_table(
        ["assessor", "by", "group", "n", "median_ms", "q1_ms", "q3_ms", "iqr_ms", "flag"],
        [
            [
                r["assessor"],
                r["by"],
                r["group"],
                r["n"],
                fmt_num(r["median"], 0),
                fmt_num(r["q1"], 0),
                fmt_num(r["q3"], 0),
                fmt_num(r["iqr"], 0),
                r["flag"] or "",
            ]
            for r in report["rows"]
        ],
    )
    return 0


def cmd_rubber_stamp(args) -> int:
    from assess.services.audit import rubber_stamping

    report = rubber_stamping(open_store(args), args.task, assessor=args.assessor)
    if args.json:
        return print_report(report)
    rules = report["rules"]
    print(
        f"{args.task}: labels written with an LLM label on screen (flag: {rules['min_accepted']}+ accepted, median "
        f"under {rules['median_ms_below']} ms, at most {rules['max_corrected_share']:.0%} corrected; {rules['source']})"
    )
    if not report["rows"]:
        print("no label was written with an LLM label on screen")
    for r in report["rows"]:
        print(
            f"{r['assessor']} vs {r['llm']}: {r['accepted']} of {r['events']} equal the LLM "
            f"({fmt_num(r['accepted_share'], 2)}), median {fmt_num(r['accepted_median_ms'], 0)} ms over "
            f"{r['timed_accepted']} timed, {r['corrected']} corrected{'; ' + r['flag'] if r['flag'] else ''}"
        )
        for bucket, b in r["by_time"].items():
            print(f"  {bucket:8} {b['accepted']} of {b['events']} equal ({fmt_num(b['share'], 2)})")
    for r in report["anchoring"]:
        print(
            f"anchoring {r['assessor']} vs {r['llm']}: {r['changed']} changed after reveal, {r['toward']} toward; "
            f"median {fmt_num(r['change_median_ms'], 0)} ms over {r['timed_changes']} timed changes"
        )
    return 0


def _ci(ci) -> str:
    return "" if not ci else f" [{fmt_num(ci[0])}, {fmt_num(ci[1])}]"


def _min_shared(p) -> None:
    p.add_argument(
        "--min-shared",
        type=int,
        help="items two humans must share for their pair to enter the human ceiling (default 30; pairs below are "
        "listed, not pooled)",
    )


def _below_minimum(pairs, minimum: int) -> None:
    for a, b, n in pairs:
        print(f"  not in the ceiling: {a} and {b} share {n} item(s), fewer than {minimum}")


def cmd_matrix(args) -> int:
    from assess.measures.agreement import MATRIX_STATISTICS
    from assess.services.audit import agreement_view

    if args.statistic not in MATRIX_STATISTICS:
        raise AssessError(f"--statistic: expected one of {', '.join(MATRIX_STATISTICS)}, found {args.statistic!r}")
    threshold = args.threshold if args.threshold is not None else (2 if args.task == "passage" else None)
    report = agreement_view(
        open_store(args),
        args.task,
        args.source,
        threshold=threshold,
        bootstrap=args.bootstrap,
        seed=args.seed,
        ptkb_source=args.ptkb_source,
        min_shared=args.min_shared,
    )
    if args.json:
        return print_report(report)
    print(f"{args.task}: {len(report['sources'])} sources, {len(report['pairs'])} pairs sharing items")
    rows = [
        [
            p["a"],
            p["b"],
            p["n"],
            fmt_num(p["agreement"]),
            fmt_num(p["kappa_unweighted"]),
            fmt_num(p["kappa_quadratic"]) + _ci(p["ci"]["kappa_quadratic"] if p["ci"] else None),
            fmt_num(p["kappa_binary"]),
            fmt_num(p["alpha"]),
        ]
        for p in report["pairs"]
    ]
    text_table(["a", "b", "n", "agreement", "kappa", "kappa_quadratic [95%]", "kappa_binary", "alpha"], rows)
    ceiling = report["ceiling"]
    if ceiling:
        print(
            f"human ceiling over {len(ceiling['pairs'])} human pair(s), n {ceiling['n']}: "
            f"kappa_quadratic {fmt_num(ceiling['kappa_quadratic'])}{_ci(ceiling.get('kappa_quadratic_ci'))}"
        )
    else:
        print(f"human ceiling: no two human sources share {report['ceiling_min_shared']} items or more")
    _below_minimum(report["ceiling_below_minimum"], report["ceiling_min_shared"])
    grid = report["grids"][args.statistic]
    print(f"{args.statistic}:")
    text_table(
        [""] + grid["sources"], [[s] + [fmt_num(v) for v in row] for s, row in zip(grid["sources"], grid["values"])]
    )
    return 0


def cmd_systems(args) -> int:
    from assess.services.audit import systems_view

    report = systems_view(
        open_store(args),
        args.reference,
        args.other,
        measure=args.measure,
        threshold=args.threshold,
        k=tuple(args.k or (1, 3, 5)),
        correction=args.correction,
        bootstrap=args.bootstrap,
        seed=args.seed,
    )
    if args.json:
        return print_report(report)
    print(
        f"{report['measure']}: {report['n_runs']} runs over {report['n_topics']} topics, "
        f"{report['reference']} (reference) vs {report['other']}"
    )
    for name, figure in report["correlations"].items():
        print(f"  {name:18} {fmt_num(figure['value'])}{_ci(figure['ci'])}")
    for row in report["top_k"]:
        print(f"  top-{row['k']} overlap{'':7} {fmt_num(row['overlap'])}{_ci(row['ci'])}")
    sig = report["significance"]
    if sig:
        print(
            f"  significant under the reference ({sig['correction']}, alpha {sig['alpha']}): "
            f"{sig['significant_reference']} of {sig['pairs']} pairs; same {sig['same']}, lost {sig['lost']}, "
            f"flipped {sig['flipped']}; gained {sig['gained']}"
        )
    leader = report["leader"]
    if leader:
        print(f"  leader: {leader['reference']} -> {leader['other']} ({'changes' if leader['changed'] else 'same'})")
    return 0


def _bias_rows(title: str, probe) -> None:
    if not probe:
        return
    print(f"{title}:")
    groups = probe["groups"] if isinstance(probe, dict) else probe
    key = "group" if isinstance(probe, dict) else "run"
    text_table(
        ["", "n", "mean diff", "95%"],
        [[g[key], g["n"], fmt_num(g["mean_diff"]), _ci(g.get("ci")).strip()] for g in groups],
    )


def cmd_bias(args) -> int:
    from assess.services.audit import bias_view

    report = bias_view(open_store(args), args.reference, args.judge, k=args.k)
    if args.json:
        return print_report(report)
    overall = report["overall"]
    print(
        f"{report['judge']} - {report['reference']} over {report['n_shared']} shared passages: mean "
        f"{fmt_num(overall['mean_diff'])}{_ci(overall.get('ci'))} ({report['length_unknown']} without text)"
    )
    for name in ("length", "rank", "depth", "personal"):
        _bias_rows(name, report[name])
    _bias_rows(f"runs (top {args.k})", report["runs"])
    return 0


def cmd_consistency(args) -> int:
    from assess.services.audit import consistency_view

    report = consistency_view(open_store(args), args.source, args.task)
    if args.json:
        return print_report(report)
    print(
        f"{args.source} ({args.task}): {report['n_items']} items, {report['n_multi']} with 2+ answers; "
        f"alpha {fmt_num(report['alpha'])}, unanimous {fmt_num(report['unanimous'])}, pairwise {fmt_num(report['pairwise'])}; "
        f"{report['changed_by_consensus']} labels differ from the first answer"
    )
    return 0


def cmd_self_agreement(args) -> int:
    from assess.services.audit import self_agreement_view

    threshold = args.threshold if args.threshold is not None else (2 if args.task == "passage" else None)
    report = self_agreement_view(
        open_store(args),
        args.task,
        assessor=args.assessor,
        threshold=threshold,
        bootstrap=args.bootstrap,
        seed=args.seed,
    )
    if args.json:
        return print_report(report)
    print(f"{args.task}: self-agreement over re-shown items ({report['statistic']}, 95% bootstrap interval)")
    rows = [
        [
            r["assessor"],
            r["answered"],
            r["n"],
            r["changed"],
            fmt_num(r["agreement"]),
            fmt_num(r["value"]) + _ci(r["ci"]),
        ]
        for r in report["assessors"]
    ]
    text_table(["assessor", "answered", "graded", "changed", "agreement", report["statistic"]], rows)
    for r in report["pending"]:
        if r["pending"]:
            print(f"  {r['assessor']}: {r['pending']} of {r['picked']} re-shown items still to come")
    return 0


def cmd_overlap(args) -> int:
    from assess.services.audit import overlap_view

    threshold = args.threshold if args.threshold is not None else (2 if args.task == "passage" else None)
    report = overlap_view(
        open_store(args),
        args.task,
        plan=args.plan,
        threshold=threshold,
        bootstrap=args.bootstrap,
        seed=args.seed,
        min_shared=args.min_shared,
    )
    if args.json:
        return print_report(report)
    print(
        f"{args.task}: {report['items']} items planned for overlap, {report['judged_by_two']} judged by two "
        f"assessors, {report['judged_by_all']} by all planned"
    )
    ceiling = report["ceiling"]
    _below_minimum(report["below_minimum"], report["min_shared"])
    if ceiling is None:
        print(f"  no human ceiling yet: no two planned assessors have judged {report['min_shared']} shared items")
        return 0
    stat = report["statistic"]
    print(
        f"  human ceiling over {ceiling['n']} shared labels (pairs pooled): {stat} {fmt_num(ceiling[stat])}{_ci(ceiling['ci'][stat])}, "
        f"alpha {fmt_num(ceiling['alpha'])}{_ci(ceiling['ci']['alpha'])}"
    )
    rows = [
        [p["a"], p["b"], p["n"], fmt_num(p[stat]) + _ci(p["ci"][stat]), fmt_num(p["alpha"])] for p in report["pairs"]
    ]
    text_table(["a", "b", "n", stat, "alpha"], rows)
    return 0


def cmd_alt_test(args) -> int:
    from assess.services.audit import alt_test_view

    report = alt_test_view(
        open_store(args),
        args.human,
        args.judge,
        task=args.task,
        epsilon=args.epsilon,
        q=args.q,
        min_items=args.min_items,
        scoring=args.scoring,
    )
    if args.json:
        return print_report(report)
    if not report["computable"]:
        print(f"{args.judge} ({args.task}): {report['reason']}")
        return 0
    verdict = "passes" if report["passes"] else "does not pass"
    print(
        f"{args.judge} ({args.task}) {verdict}: omega {fmt_num(report['omega'])} ({report['pass_rule']}), "
        f"rho {fmt_num(report['rho'])}, epsilon {report['epsilon']}, q {report['q']}, scoring {report['scoring']}"
    )
    for row in report["annotators"]:
        won = "judge wins" if row["rejected"] else "judge does not win"
        print(
            f"  {row['annotator']}: {row['items']} items, advantage judge {fmt_num(row['llm_advantage'])} vs "
            f"human {fmt_num(row['human_advantage'])}, p {fmt_num(row['p_value'], 4)}, BY-corrected "
            f"{fmt_num(row['corrected_p'], 4)}: {won}"
        )
    for row in report["skipped"]:
        print(f"  {row['annotator']}: {row['items']} items, fewer than {report['min_items']}: not tested")
    if report["too_few_humans"]:
        print(f"  {report['too_few_humans']}")
    if report["below_recommended"]:
        print("  (a tested human has fewer than the 50 items the authors recommend)")
    return 0


def _figure_text(entry: dict) -> str:
    value = entry["value"]
    text = fmt_num(value) if isinstance(value, float) else str(value)
    if entry.get("low") is not None:
        text += _ci([entry["low"], entry["high"]])
    return text


def cmd_verdict(args) -> int:
    from assess.services.audit import verdict_view

    report = verdict_view(open_store(args), args.reference, args.judge, epsilon=args.epsilon, width=args.width)
    if args.json:
        return print_report(report)
    print(f"can {report['judge']} replace {report['reference']} here? {report['verdict']}: {report['reason']}")
    print(f"  rule: {report['rule']}")
    for item in report["criteria"]:
        print(f"{item['name']}: {item['status']}")
        print(f"  rule: {item['rule']}")
        rows = [
            [f["name"], _figure_text(f), f.get("threshold", ""), {True: "pass", False: "fail"}.get(f.get("passes"), "")]
            for f in item["figures"]
        ]
        if rows:
            text_table(["  figure", "value", "threshold", ""], [["  " + r[0], *r[1:]] for r in rows])
        for name, command in item["commands"].items():
            if any(f["from"] == name for f in item["figures"]):
                print(f"  from: {command}")
        for note in (item["missing"], item.get("refused")):
            if note:
                print(f"  {'too few' if item['status'] == 'too few' else 'missing'}: {note}")
    return 0


def cmd_persona(args) -> int:
    from assess.services.audit import persona_view

    report = persona_view(open_store(args), args.source, args.with_version, args.without_version, args.task)
    if args.json:
        return print_report(report)
    print(
        f"{args.source}: {report['n']} items answered with ({args.with_version}) and without "
        f"({args.without_version}) the PTKB; changed {report['changed']} (up {report['up']}, down {report['down']}), "
        f"mean change {fmt_num(report['mean_change'])}"
    )
    return 0


def cmd_estimate(args) -> int:
    from assess.services.audit import ESTIMATE_MEASURES, estimate_view

    report = estimate_view(
        open_store(args),
        args.reference,
        args.judge,
        sample=args.sample,
        threshold=args.threshold,
        k=args.k,
        measures=tuple(args.measure or ESTIMATE_MEASURES),
        seed=args.seed,
    )
    if args.json:
        return print_report(report)
    design = report["design"]
    what = "passages" if "topic_shares" in report else "NtR items"
    print(
        f"{report['reference']} (reference) vs {report['judge']} (judge), {design['kind']}: {design['graded']} "
        f"reference labels of {design['population']} judge-labelled {what}"
    )
    print(f"  {design['statement']}")

    def show(title: str, entries: dict) -> None:
        rows = []
        for name, entry in entries.items():
            est = entry.get("estimate", entry)
            if est is None:
                continue
            if not est["estimable"]:
                rows.append([name, "not estimable", "", "", "", fmt_num(est["judge_only"])])
                continue
            ppi, human = est["ppi"], est["human_only"]
            rows.append(
                [
                    name,
                    fmt_num(ppi["value"]),
                    _ci([ppi["low"], ppi["high"]]).strip(),
                    fmt_num(human["value"]),
                    _ci([human["low"], human["high"]]).strip(),
                    fmt_num(est["judge_only"]),
                ]
            )
        print(f"{title}:")
        text_table(["", "PPI", "95%", "human only", "95%", "judge only"], rows)

    for key in ("P@k", "nDCG@k"):
        if key in report:
            show(key.replace("k", str(args.k)), report[key])
    if report.get("ntr"):
        show("NtR recall", report["ntr"]["runs"])
    for name, reason in (report.get("refused") or {}).items():
        print(f"{name}: not estimated: {reason}")
    if "topic_shares" in report:
        show(f"share of passages >= {args.threshold} per topic", report["topic_shares"])
    return 0


def cmd_coverage(args) -> int:
    from assess.services.audit import coverage_view, default_roles

    db = open_store(args)
    reference, judge = default_roles(db, reference=args.reference, judge=args.judge)
    report = coverage_view(
        db,
        reference,
        judge,
        threshold=args.threshold,
        sample=args.sample,
        repeats=args.repeats,
        seed=args.seed,
    )
    if args.json:
        return print_report(report)
    print(
        f"{reference} (reference) vs {judge} (judge): {report['n_items']} shared items, true "
        f"share {fmt_num(report['true_value'], 4)}; {report['repeats']} samples of {report['sample']}, "
        f"nominal {report['nominal']}"
    )
    text_table(
        ["", "coverage", "mean width"],
        [
            [name, fmt_num(report[name]["coverage"]), fmt_num(report[name]["mean_width"], 4)]
            for name in ("ppi", "human_only")
        ],
    )
    return 0


def cmd_sample(args) -> int:
    from assess.cli import actor, check_options
    from assess.services.audit import create_sample

    check_options(args, ids={"--name": "name"})
    if args.design == "active":  # drawn for the stored runs' P@k (assess/services/budget.py)
        from assess.services.budget import active_sample

        create_sample = functools.partial(active_sample, k=args.k)
    report = create_sample(
        open_store(args),
        args.name,
        args.judge,
        budget=args.budget,
        design=args.design,
        second=args.second,
        assessor=args.assessor,
        seed=args.seed,
        threshold=args.threshold,
        by=actor(args),
    )
    if args.json:
        return print_report(report)
    print(
        f"sample {report['sample']}: {report['items']} of {report['population']} passages ({report['design']}) "
        f"queued for {', '.join(report['assessors'])}"
    )
    text_table(
        ["stratum", "N", "n", "probability"],
        [[h, a["N"], a["n"], fmt_num(a["probability"], 4)] for h, a in report["allocation"].items()],
    )
    return 0


def cmd_plan(args) -> int:
    from assess.services.audit import sample_plan

    report = sample_plan(
        open_store(args),
        args.judge,
        budgets=tuple(args.budget or (100, 200, 500, 1000)),
        design=args.design,
        second=args.second,
        threshold=args.threshold,
    )
    if args.json:
        return print_report(report)
    print(
        f"expected 95% interval width of the share >= {args.threshold}, {report['population']} judge-labelled passages"
    )
    columns = ["uniform_human_only", "uniform_ppi", "stratified"] + (["disagreement"] if args.second else [])
    text_table(["budget"] + columns, [[r["budget"]] + [fmt_num(r.get(c), 4) for c in columns] for r in report["rows"]])
    if report["skipped"]:
        print(f"skipped (above the population): {', '.join(map(str, report['skipped']))}")
    return 0
