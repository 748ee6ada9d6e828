"""CLI: agreement between two label sources of the store."""

from __future__ import annotations

import json

from assess.cli import add_db_argument


def add_commands(sub) -> None:
    p = sub.add_parser(
        "agreement",
        help="agreement (Cohen's kappa and more) between two label sources",
        description="Compare two label sources over the items both labelled: observed agreement, "
        "Cohen's kappa (unweighted/linear/quadratic over the full scale), binarised "
        "kappa, confusion matrix, per-topic kappa, bootstrap 95%% interval.",
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
    from assess.cli.data import _open

    weights = None if args.weights == "none" else args.weights
    from assess.services.audit import agreement_from_store

    report = agreement_from_store(_open(args), args.task, args.a, args.b, weights=weights, threshold=args.threshold)
    if args.json:
        print(json.dumps(report, default=str))
        return 0
    print(f"{args.task}: {args.a} vs {args.b} over {report['n']} shared items")
    for key in ("agreement", "kappa", "kappa_linear", "kappa_quadratic", "kappa_binary"):
        if report.get(key) is not None:
            print(f"  {key:16} {report[key]:.4f}")
    print("  confusion (rows a, columns b):")
    for label, row in zip(report["labels"], report["confusion"]):
        print(f"    {label}: " + " ".join(f"{v:6d}" for v in row))
    return 0
