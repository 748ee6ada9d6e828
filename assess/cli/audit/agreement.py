"""`agreement` (two sources) and the agreement commands of `audit`: the matrix of several sources with the
human ceiling (`agreement`), the alternative annotator test (`alt-test`), assessors' re-shows (`retest`) and
planned overlap (`overlap`)."""

from __future__ import annotations

import json

from assess.cli import add_db_argument
from assess.cli.audit.output import add_min_shared, below_minimum, ci_text
from assess.cli.common import fmt_num, open_store, print_report, text_table
from assess.errors import AssessError
from assess.measures import agreement
from assess.services import audit


def add_agreement(sub) -> None:
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

    report = audit.agreement_from_store(
        open_store(args), args.task, args.a, args.b, weights=weights, threshold=args.threshold
    )
    if args.json:
        print(json.dumps(report, default=str))
        return 0
    print(f"{args.task}: {args.a} vs {args.b} over {report['n']} shared items")
    print(f"  {'pair':16} {report['pair']}")  # people and machines: never read one as the other
    for key in ("agreement", "kappa", "kappa_linear", "kappa_quadratic", "kappa_binary", "icc_2_1", "icc_3_1"):
        if report.get(key) is not None:
            print(f"  {key:16} {report[key]:.4f}")
    print("  confusion (rows a, columns b):")
    for label, row in zip(report["labels"], report["confusion"]):
        print(f"    {label}: " + " ".join(f"{v:6d}" for v in row))
    return 0


def add_matrix(command) -> None:
    """`audit agreement`."""
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
    add_min_shared(p)


def cmd_matrix(args) -> int:
    if args.statistic not in agreement.MATRIX_STATISTICS:
        raise AssessError(
            f"--statistic: expected one of {', '.join(agreement.MATRIX_STATISTICS)}, found {args.statistic!r}"
        )
    threshold = args.threshold if args.threshold is not None else (2 if args.task == "passage" else None)
    report = audit.agreement_view(
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
            fmt_num(p["kappa_quadratic"]) + ci_text(p["ci"]["kappa_quadratic"] if p["ci"] else None),
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
            f"kappa_quadratic {fmt_num(ceiling['kappa_quadratic'])}{ci_text(ceiling.get('kappa_quadratic_ci'))}"
        )
    else:
        print(f"human ceiling: no two human sources share {report['ceiling_min_shared']} items or more")
    below_minimum(report["ceiling_below_minimum"], report["ceiling_min_shared"])
    for name, pooled in report["splits"].items():  # people and machines apart, then every pair
        name = "(every pair)" if name == "pooled" else name
        if pooled:
            print(
                f"pooled {name} over {len(pooled['pairs'])} pair(s), n {pooled['n']}: "
                f"kappa_quadratic {fmt_num(pooled['kappa_quadratic'])}{ci_text(pooled['ci']['kappa_quadratic'])}, "
                f"agreement {fmt_num(pooled['agreement'])}"
            )
        else:
            print(f"pooled {name}: no such pair")
    grid = report["grids"][args.statistic]
    print(f"{args.statistic}:")
    text_table(
        [""] + grid["sources"], [[s] + [fmt_num(v) for v in row] for s, row in zip(grid["sources"], grid["values"])]
    )
    return 0


def add_alt_test(command) -> None:
    """`audit alt-test`."""
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


def cmd_alt_test(args) -> int:
    report = audit.alt_test_view(
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


def add_retest(command) -> None:
    """`audit retest`."""
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


def cmd_self_agreement(args) -> int:
    threshold = args.threshold if args.threshold is not None else (2 if args.task == "passage" else None)
    report = audit.self_agreement_view(
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
            fmt_num(r["value"]) + ci_text(r["ci"]),
        ]
        for r in report["assessors"]
    ]
    text_table(["assessor", "answered", "graded", "changed", "agreement", report["statistic"]], rows)
    for r in report["pending"]:
        if r["pending"]:
            print(f"  {r['assessor']}: {r['pending']} of {r['picked']} re-shown items still to come")
    return 0


def add_overlap(command) -> None:
    """`audit overlap`."""
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
    add_min_shared(p)


def cmd_overlap(args) -> int:
    threshold = args.threshold if args.threshold is not None else (2 if args.task == "passage" else None)
    report = audit.overlap_view(
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
    if adaptive := report["adaptive"]:
        judge, humans = adaptive["steps"]["judge"], adaptive["steps"]["humans"]
        print(
            f"  adaptive: the ceiling reads the {adaptive['base_items']} base-share items only; apart from it, "
            f"{judge['items']} items given a second assessor by the judge's margin (pairs agree "
            f"{fmt_num(judge['agreement'])}), {humans['items']} a third (pairs agree {fmt_num(humans['agreement'])}), "
            f"{adaptive['disputed']} disputed ({adaptive['adjudicated']} adjudicated)"
        )
    ceiling = report["ceiling"]
    below_minimum(report["below_minimum"], report["min_shared"])
    if ceiling is None:
        print(f"  no human ceiling yet: no two planned assessors have judged {report['min_shared']} shared items")
        return 0
    stat = report["statistic"]
    print(
        f"  human ceiling over {ceiling['n']} shared labels (pairs pooled): {stat} {fmt_num(ceiling[stat])}{ci_text(ceiling['ci'][stat])}, "
        f"alpha {fmt_num(ceiling['alpha'])}{ci_text(ceiling['ci']['alpha'])}"
    )
    rows = [
        [p["a"], p["b"], p["n"], fmt_num(p[stat]) + ci_text(p["ci"][stat]), fmt_num(p["alpha"])]
        for p in report["pairs"]
    ]
    text_table(["a", "b", "n", stat, "alpha"], rows)
    return 0
