"""`python -m assess battles ...`: side-by-side battles: plan them, import and export battle files, rank runs
by Bradley-Terry strengths with bootstrap intervals, and compare two battle sources."""

from __future__ import annotations

import sys

from assess.cli import actor, add_by_argument, add_db_argument, check_options, data_output
from assess.cli.common import open_store, print_json, table
from assess.errors import AssessError, FormatError
from assess.services import battle_analysis, battles


def _rank_options(p) -> None:
    p.add_argument("--replicates", type=int, default=1000, help="bootstrap replicates (default 1000)")
    p.add_argument("--level", type=float, default=0.95, help="interval level (default 0.95)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")


def add_commands(sub) -> None:
    group = sub.add_parser(
        "battles",
        help="side-by-side battles: plan, import, export, rank (Bradley-Terry), agreement",
        description="Battles: two runs' answers to a topic side by side; which is better (docs/battles.md).",
    )
    commands = group.add_subparsers(dest="battles_command", metavar="ACTION")
    commands.required = True

    p = commands.add_parser(
        "plan",
        help="store a battle plan over the stored responses",
        description="Pairs of runs with a stored response per topic: all pairs, --pairs random pairs per "
        "topic (seeded), or an adaptive plan spending --budget battles where the outcome under --source's "
        "current strengths is least certain (docs/measures.md).",
    )
    add_db_argument(p)
    p.add_argument("--name", required=True, help="the plan's name (used once)")
    p.add_argument("--method", required=True, choices=("all", "random", "adaptive"))
    p.add_argument("--pairs", type=int, help="random: pairs per topic")
    p.add_argument("--budget", type=int, help="adaptive: battles to plan")
    p.add_argument("--source", help="adaptive: the battle source whose strengths guide the plan")
    p.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    p.add_argument("--json", action="store_true")
    add_by_argument(p)
    p.set_defaults(func=cmd_plan)

    p = commands.add_parser(
        "import",
        help="import a battle file (JSONL) as labels of a source",
        description='One JSON object per line: {"topic_id", "run_a", "run_b", "winner": "a"|"b"|"tie"|'
        '"both_bad"}, run_a shown on the left; optional "reason", "reshow", and "features_a" / "features_b" '
        '(the answers\' features for --control: {"length": 212, "citations": 4}, the same names on both sides).',
    )
    p.add_argument("file")
    add_db_argument(p)
    p.add_argument("--source", required=True, help="the label source the battles go to (llm:NAME for an LLM)")
    p.add_argument("--json", action="store_true")
    add_by_argument(p)
    p.set_defaults(func=cmd_import)

    p = commands.add_parser(
        "export",
        help="write a source's battles as a battle file, or preference pairs for DPO",
        description="--layout battles (default): the import layout. dpo: {prompt, chosen, rejected} JSONL of the "
        "decisive battles (ties and both_bad left out, counted on stderr). hf: the same as a folder Hugging Face "
        "datasets loads (--out names the new folder).",
    )
    add_db_argument(p)
    p.add_argument("--source", required=True)
    p.add_argument("--layout", choices=("battles", "dpo", "hf"), default="battles")
    p.add_argument("--out", help="file to write (default stdout); hf: the folder to create")
    p.set_defaults(func=cmd_export)

    p = commands.add_parser(
        "rank",
        help="Bradley-Terry strengths with bootstrap intervals, win rates, Elo",
        description="Maximum-likelihood Bradley-Terry log-strengths centred to mean 0, ties half a win for "
        "each side, both_bad left out; percentile bootstrap intervals; win rates; Elo for comparison; the "
        "source's swapped-order consistency (an LLM's position bias).",
    )
    add_db_argument(p)
    p.add_argument("--source", required=True)
    _rank_options(p)
    p.add_argument("--json", action="store_true", help='{"model", "runs": {RUN: {strength, low, high, ...}}}')
    p.add_argument(
        "--details",
        action="store_true",
        help="with --json: also elo, both_bad, swapped_order (pairs, flips, flip_share: an LLM's position bias) "
        "and provisional",
    )
    p.add_argument(
        "--control",
        action="append",
        default=[],
        metavar="FEATURE",
        help="control for a feature of the answers (repeatable): length, citations, cited_documents, markdown, "
        "supported_share (LMArena's style control; docs/battles.md)",
    )
    p.add_argument(
        "--fragility", action="store_true", help="find battles whose removal changes the top run (refits to verify)"
    )
    p.add_argument("--adjacent", action="store_true", help="with --fragility: also for every adjacent pair")
    p.add_argument(
        "--min-battles", type=int, default=50, help="a rank is provisional below this many battles (default 50)"
    )
    p.set_defaults(func=cmd_rank)

    p = commands.add_parser(
        "sway",
        help="do citations, supported citations and length sway each source's verdicts (side by side)",
        description="Per battle source (people and LLM judges side by side): the coefficients with intervals of "
        "citation count, supported-citation share and length fitted together, and the position bias.",
    )
    add_db_argument(p)
    p.add_argument("--source", action="append", default=[], help="a battle source (repeatable; default: all)")
    _rank_options(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_sway)

    p = commands.add_parser(
        "agreement",
        help="agreement of two battle sources (share agreeing, Cohen's kappa)",
        description="On the battles both sources judged (each source's first showing), verdicts by run.",
    )
    add_db_argument(p)
    p.add_argument("--source", required=True)
    p.add_argument("--other", required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_agreement)


def cmd_plan(args) -> int:
    check_options(args, ids={"--name": "name", "--source": "source"}, counts={"--pairs": "pairs", "--budget": "budget"})
    db = open_store(args)
    try:
        summary = battles.plan(
            db,
            args.name,
            args.method,
            per_topic=args.pairs,
            budget=args.budget,
            source=args.source,
            seed=args.seed,
            by=actor(args),
        )
        warning = battles.exposure_warning(db, args.name)
    finally:
        db.close()
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    if args.json:
        print_json(summary)
    else:
        print(f"plan {summary['plan']}: {summary['pairs']} battles on {summary['topics']} topics ({summary['method']})")
    return 0


def cmd_import(args) -> int:
    check_options(args, ids={"--source": "source"})
    db = open_store(args, must_exist=False)  # as every import: a new store is created
    try:
        summary = battles.import_file(db, args.file, args.source, by=actor(args))
    finally:
        db.close()
    if args.json:
        print_json(summary)
    else:
        print(
            f"{summary['battles']} battles ({summary['new']} new, {summary['changed']} changed) on "
            f"{summary['topics']} topics between {summary['runs']} runs -> {args.source}"
        )
    return 0


def cmd_export(args) -> int:
    db = open_store(args)
    try:
        if args.layout != "battles":
            if args.layout == "dpo" and args.out:
                with open(args.out, "w", encoding="utf-8") as out:
                    counts = battle_analysis.export_preferences(db, args.source, out, layout="dpo")
            else:
                counts = battle_analysis.export_preferences(
                    db, args.source, data_output(), layout=args.layout, folder=args.out
                )
            print(
                f"{counts['pairs']} preference pairs -> {args.out or 'stdout'}; left out: {counts['ties']} ties, "
                f"{counts['both_bad']} both_bad, {counts['missing_text']} without stored topic or answer text",
                file=sys.stderr,
            )
        elif args.out:
            with open(args.out, "w", encoding="utf-8") as out:
                count = battles.export_file(db, args.source, out)
            print(f"{count} battles -> {args.out}", file=sys.stderr)
        else:
            battles.export_file(db, args.source, data_output())
    finally:
        db.close()
    return 0


def _check_rank(args) -> None:
    if args.replicates < 0:
        raise FormatError("--replicates", None, "a number >= 0", str(args.replicates))
    if not 0 < args.level < 1:
        raise FormatError("--level", None, "a number between 0 and 1", str(args.level))


def cmd_rank(args) -> int:
    _check_rank(args)
    if args.min_battles < 0:
        raise FormatError("--min-battles", None, "a number >= 0", str(args.min_battles))
    if args.adjacent and not args.fragility:
        raise FormatError("--adjacent", None, "--fragility with it", "--adjacent alone")
    if args.details and not args.json:
        raise AssessError("--details is for --json (the table shows the same figures)")
    db = open_store(args)
    options = {"replicates": args.replicates, "level": args.level, "seed": args.seed}
    try:
        if args.json:
            found = (battles.report if args.details else battles.ranking)(db, args.source, **options)
            _analyses(db, args, found, options)
            if args.details:
                found["provisional"] = {
                    "min_battles": args.min_battles,
                    "runs": battle_analysis.provisional(found["runs"], args.min_battles),
                }
            print_json(found)
            return 0
        found = battles.report(db, args.source, **options)
        _analyses(db, args, found, options)
    finally:
        db.close()
    _print_rank(found, args)
    return 0


def _analyses(db, args, found: dict, options: dict) -> None:
    """Replace the strengths by the controlled ones (--control) and add the fragility (--fragility)."""

    if args.control:
        found.update(battle_analysis.controlled(db, args.source, args.control, **options))
    if args.fragility:
        found["fragility"] = battle_analysis.fragility(db, args.source, args.control, adjacent=args.adjacent)


def _print_rank(found: dict, args) -> None:
    print(found["model"])
    table(
        ["run", "strength", "low", "high", "win_rate", "battles", "elo"],
        [
            [run, r["strength"], r["low"], r["high"], r["win_rate"], r["battles"], found["elo"].get(run)]
            for run, r in found["runs"].items()
        ],
    )
    swapped = found["swapped_order"]
    print(f"both_bad battles (left out): {found['both_bad']}")
    print(
        f"pairs judged in both orders: {swapped['pairs']}, verdict flipped: {swapped['flips']}"
        + (f" ({swapped['flip_share']:.1%})" if swapped["flip_share"] is not None else "")
        + (
            f"; left answer chosen in {swapped['left_share']:.1%} of decisive verdicts"
            if swapped["left_share"] is not None
            else ""
        )
    )
    for name, c in found.get("controls", {}).items():
        print(f"control {name}: {c['coef']:.4f} [{c['low']:.4f}, {c['high']:.4f}] (log-odds per standard deviation)")
    weak = battle_analysis.provisional(found["runs"], args.min_battles)
    if weak:
        print(f"provisional (fewer than {args.min_battles} battles): {', '.join(weak)}")
    if "fragility" in found:
        top = found["fragility"]["top"]
        if top is None:
            print("fragility: no set of battles found that changes the top run")
        else:
            print(
                f"fragility: removing {top['count']} battles ({top['share']:.2%}) puts {top['runs'][1]} ahead of "
                f"{top['runs'][0]}"
            )


def cmd_sway(args) -> int:
    _check_rank(args)
    db = open_store(args)
    try:
        found = battle_analysis.sway(db, args.source, replicates=args.replicates, level=args.level, seed=args.seed)
    finally:
        db.close()
    if args.json:
        print_json(found)
        return 0
    rows = []
    for source, s in found["sources"].items():
        cells = [
            "n/a" if c is None else f"{c['coef']:.3f} [{c['low']:.3f}, {c['high']:.3f}]"
            for c in (s["controls"][name] for name in found["controls"])
        ]
        left = s["position"]["left_share"]
        rows.append([source, s["kind"], s["battles"], *cells, "n/a" if left is None else f"{left:.1%}"])
    table(["source", "kind", "battles", *found["controls"], "left_chosen"], rows)
    return 0


def cmd_agreement(args) -> int:
    db = open_store(args)
    try:
        found = battles.agreement(db, args.source, args.other)
    finally:
        db.close()
    if args.json:
        print_json(found)
    else:
        kinds = found["sources"]
        print(f"{args.source} ({kinds[args.source]}) vs {args.other} ({kinds[args.other]})")
        table(
            ["common", "agree", "share", "kappa"],
            [[found["common"], found["agree"], found["share"], found["kappa"]]],
        )
    return 0
