"""`audit estimate`, `coverage`, `sample` and `plan`: corrected estimates, how honest their intervals are, and
budgeted human samples."""

from __future__ import annotations

import functools

from assess.cli import actor, add_by_argument, check_options
from assess.cli.audit.output import add_pair, ci_text
from assess.cli.common import fmt_num, open_store, print_report, text_table
from assess.errors import AssessError
from assess.services import audit, budget


def add_estimate(command) -> None:
    """`audit estimate`."""
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
    add_pair(p)
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


def cmd_estimate(args) -> int:
    report = audit.estimate_view(
        open_store(args),
        args.reference,
        args.judge,
        sample=args.sample,
        threshold=args.threshold,
        k=args.k,
        measures=tuple(args.measure or audit.ESTIMATE_MEASURES),
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
                    ci_text([ppi["low"], ppi["high"]]).strip(),
                    fmt_num(human["value"]),
                    ci_text([human["low"], human["high"]]).strip(),
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


def add_coverage(command) -> None:
    """`audit coverage`."""
    p = command(
        "coverage",
        "how often the intervals hold the full-reference value, PPI vs human-only",
        cmd_coverage,
        "Repeatedly sample N reference labels among the items both sources labelled, estimate the share at "
        "or above the threshold with and without the judge, and count how often each interval holds the "
        "value computed from all reference labels.",
    )
    add_pair(p)
    p.add_argument("--threshold", type=float, default=2)
    p.add_argument("--sample", type=int, required=True, help="reference labels per repeat")
    p.add_argument("--repeats", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)


def cmd_coverage(args) -> int:
    db = open_store(args)
    reference, judge = audit.default_roles(db, reference=args.reference, judge=args.judge)
    report = audit.coverage_view(
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


def add_sample(command) -> None:
    """`audit sample`."""
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
    p.add_argument("--k", type=int, default=5, help="active design: the cutoff of the measure it serves (default 5)")
    p.add_argument("--measure", choices=("P@k", "nDCG@k"), default="P@k", help="active design: the runs' measure")
    p.add_argument(
        "--sequential",
        action="store_true",
        help="active design: draw in --rounds nested rounds; run again with --reference after each is judged "
        "(stops once every run pair is settled at --level)",
    )
    p.add_argument("--level", type=float, default=0.95, help="--sequential: the level pairs are settled at")
    p.add_argument("--rounds", type=int, default=4, help="--sequential: rounds at most (default 4)")
    p.add_argument("--reference", help="--sequential, after round 1: the source whose grades people gave")
    p.add_argument("--assessor", required=True, help="who judges the sample (an existing assessor)")
    p.add_argument("--threshold", type=float, default=2)
    p.add_argument("--seed", type=int, default=0)
    add_by_argument(p)


def cmd_sample(args) -> int:
    check_options(args, ids={"--name": "name"})
    create_sample = audit.create_sample
    if args.design == "active":  # drawn for the stored runs' P@k or nDCG@k (assess/services/budget.py)
        create_sample = functools.partial(
            budget.active_sample,
            measure=f"{args.measure.split('@')[0]}@{args.k}",
            sequential=args.sequential,
            level=args.level,
            rounds=args.rounds,
            reference=args.reference,
        )
    elif args.sequential:
        raise AssessError("--sequential draws the active design: add --design active")
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
    if report.get("status", "drawn") != "drawn":  # a later round of a sequential sample
        print(
            f"sample {report['sample']}, round {report['round']} of {report['rounds']}: {report['settled']} of "
            f"{report['pairs']} run pairs settled at level {report['level']}; {report['status']} "
            f"({report['added']} items added, {report['items']} in all)"
        )
        return 0
    print(
        f"sample {report['sample']}: {report['items']} of {report['population']} passages ({report['design']}) "
        f"queued for {', '.join(report['assessors'])}"
    )
    text_table(
        ["stratum", "N", "n", "probability"],
        [[h, a["N"], a["n"], fmt_num(a["probability"], 4)] for h, a in report["allocation"].items()],
    )
    return 0


def add_plan(command) -> None:
    """`audit plan`."""
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


def cmd_plan(args) -> int:
    report = audit.sample_plan(
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
