"""`audit simulate`: which policy and how many human judgments the system ranking needs (issue 37)."""

from __future__ import annotations

from assess.cli.common import fmt_num, open_store, print_report, text_table
from assess.services import budget

# assess.measures.active_sampling's, without numpy
POLICIES = ("uniform", "stratified", "disagreement", "active", "active-sequential")


def add_command(command) -> None:
    """Register `simulate` through the audit group's ``command(name, help, func, description)``."""
    p = command(
        "simulate",
        "before anyone judges: interval coverage, width and Kendall tau per sampling policy and budget",
        cmd_simulate,
        "Over the passages both sources graded, hide the reference's grades, let each policy reveal --budget of "
        "them (uniform; stratified by the judge's grade; by disagreement with --second; active: the items that "
        "can change some run's P@k or nDCG@k, weighted by the judge's uncertainty and how much runs differ on "
        "them; active-sequential: the same drawn in --rounds looks, stopping once every run pair is settled), "
        "estimate every stored run's measure with inverse-probability-weighted PPI, repeat, and report per "
        "policy and budget the coverage of the 95%% intervals of the full-reference value, their mean width, "
        "the mean Kendall tau of the estimated ranking and the share of run pairs settled "
        "(docs/estimates.md#active-sampling).",
    )
    p.add_argument("--reference", help="the source whose grades are hidden and revealed (default: a human one)")
    p.add_argument("--judge", help="the judge that graded every item (default: an LLM source)")
    p.add_argument("--second", help="a second judge (the disagreement policy; active weighs its disagreement)")
    p.add_argument("--measure", default="P@5", help="P@k or nDCG@k (default P@5)")
    p.add_argument("--budget", type=int, action="append", required=True, help="reference grades revealed (repeat)")
    p.add_argument("--policy", action="append", choices=POLICIES, help="repeat; default uniform and active")
    p.add_argument("--repeats", type=int, default=100, help="draws per policy and budget (default 100)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threshold", type=float, default=2, help="relevant = grade >= T (default 2)")
    p.add_argument("--level", type=float, default=0.95, help="the intervals' confidence level (default 0.95)")
    p.add_argument("--rounds", type=int, default=4, help="active-sequential: looks at the data (default 4)")


def cmd_simulate(args) -> int:
    report = budget.simulate_view(
        open_store(args),
        args.reference,
        args.judge,
        measure=args.measure,
        budgets=tuple(args.budget),
        policies=tuple(args.policy or ("uniform", "active")),
        repeats=args.repeats,
        seed=args.seed,
        second=args.second,
        threshold=args.threshold,
        level=args.level,
        rounds=args.rounds,
    )
    if args.json:
        return print_report(report)
    text_table(
        ["policy", "budget", "coverage", "mean width", "tau", "pairs settled", "judged"],
        [
            [
                r["policy"],
                r["budget"],
                fmt_num(r["coverage"]),
                fmt_num(r["mean_width"], 4),
                fmt_num(r["tau"]),
                fmt_num(r["settled"]),
                fmt_num(r["spent"], 1),
            ]
            for r in report["results"]
        ],
    )
    return 0
