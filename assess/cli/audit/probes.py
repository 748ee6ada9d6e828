"""`audit systems`, `bias`, `consistency` and `persona`: the stored runs ranked under two sources, and the
judge's bias, self-consistency and persona sensitivity."""

from __future__ import annotations

from assess.cli.audit.output import add_pair, ci_text
from assess.cli.common import fmt_num, open_store, print_report, text_table
from assess.services import audit


def add_systems(command) -> None:
    """`audit systems`."""
    p = command(
        "systems",
        "run rankings under two sources: tau, tau_AP, rho, r, top-k, significance preservation",
        cmd_systems,
        "Score the stored runs under each source's qrels and compare: Kendall tau, tau_AP, Spearman rho, "
        "Pearson r, top-k overlap (topic bootstrap intervals), which significant differences survive, "
        "whether the leading run changes.",
    )
    add_pair(p, "--other", "the source compared with the reference (default: an LLM source)")
    p.add_argument("--measure", default="nDCG@5", help="ir_measures notation (default nDCG@5)")
    p.add_argument("--threshold", type=int, default=2, help="relevant = grade >= T for binary measures (default 2)")
    p.add_argument("--k", type=int, action="append", help="top-k overlap at k (repeat; default 1, 3, 5)")
    p.add_argument("--correction", choices=("holm", "bonferroni"), default="holm")
    p.add_argument("--bootstrap", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)


def cmd_systems(args) -> int:
    report = audit.systems_view(
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
        print(f"  {name:18} {fmt_num(figure['value'])}{ci_text(figure['ci'])}")
    for row in report["top_k"]:
        print(f"  top-{row['k']} overlap{'':7} {fmt_num(row['overlap'])}{ci_text(row['ci'])}")
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


def add_bias(command) -> None:
    """`audit bias`."""
    p = command(
        "bias",
        "judge - reference differences by length, rank, depth, personal turn and run",
        cmd_bias,
        "The judge's grade minus the reference's on the passages both graded, against passage length "
        "(words), best rank in the runs, turn depth, personal turns, and per run over its top k.",
    )
    add_pair(p)
    p.add_argument("--k", type=int, default=10, help="a run's top k for the per-run probe (default 10)")


def _bias_rows(title: str, probe) -> None:
    if not probe:
        return
    print(f"{title}:")
    groups = probe["groups"] if isinstance(probe, dict) else probe
    key = "group" if isinstance(probe, dict) else "run"
    text_table(
        ["", "n", "mean diff", "95%"],
        [[g[key], g["n"], fmt_num(g["mean_diff"]), ci_text(g.get("ci")).strip()] for g in groups],
    )


def cmd_bias(args) -> int:
    report = audit.bias_view(open_store(args), args.reference, args.judge, k=args.k)
    if args.json:
        return print_report(report)
    overall = report["overall"]
    print(
        f"{report['judge']} - {report['reference']} over {report['n_shared']} shared passages: mean "
        f"{fmt_num(overall['mean_diff'])}{ci_text(overall.get('ci'))} ({report['length_unknown']} without text)"
    )
    for name in ("length", "rank", "depth", "personal"):
        _bias_rows(name, report[name])
    _bias_rows(f"runs (top {args.k})", report["runs"])
    return 0


def add_consistency(command) -> None:
    """`audit consistency`."""
    p = command(
        "consistency",
        "how well a judge agrees with itself over its K stored answers",
        cmd_consistency,
        "Self-consistency of the K answers per item stored by prejudge --samples K.",
    )
    p.add_argument("--source", required=True, help="the LLM source")
    p.add_argument("--task", default="passage")


def cmd_consistency(args) -> int:
    report = audit.consistency_view(open_store(args), args.source, args.task)
    if args.json:
        return print_report(report)
    print(
        f"{args.source} ({args.task}): {report['n_items']} items, {report['n_multi']} with 2+ answers; "
        f"alpha {fmt_num(report['alpha'])}, unanimous {fmt_num(report['unanimous'])}, pairwise {fmt_num(report['pairwise'])}; "
        f"{report['changed_by_consensus']} labels differ from the first answer"
    )
    return 0


def add_persona(command) -> None:
    """`audit persona`."""
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


def cmd_persona(args) -> int:
    report = audit.persona_view(open_store(args), args.source, args.with_version, args.without_version, args.task)
    if args.json:
        return print_report(report)
    print(
        f"{args.source}: {report['n']} items answered with ({args.with_version}) and without "
        f"({args.without_version}) the PTKB; changed {report['changed']} (up {report['up']}, down {report['down']}), "
        f"mean change {fmt_num(report['mean_change'])}"
    )
    return 0
