"""CLI commands for assessors' queues: assign, overlap, reshow (registered by :mod:`assess.cli.data` between
`export` and `history`, where --help lists them)."""

from __future__ import annotations

import json

from assess.cli import actor, add_by_argument, add_db_argument
from assess.cli.common import open_store
from assess.errors import AssessError
from assess.services import contents


def add_commands(sub) -> None:
    p = sub.add_parser(
        "assign",
        help="assign conversations or turns to an assessor (their queue)",
        description="Assign the pooled turns of conversations, or single turns, to an assessor: "
        "their judging queue is then exactly those turns. --remove takes them back.",
    )
    add_db_argument(p)
    p.add_argument("--assessor", required=True, help="the assessor's name")
    add_by_argument(p)
    p.add_argument("--conversation", nargs="*", default=[], help="conversation ids (all their pooled turns)")
    p.add_argument("--turn", nargs="*", default=[], help="turn ids, e.g. 0_8")
    p.add_argument("--remove", action="store_true", help="remove these assignments instead")
    p.set_defaults(func=cmd_assign)

    p = sub.add_parser(
        "overlap",
        help="assign turns round several assessors with a share of items judged by 2 or 3 of them",
        description="Plan overlap: the pooled turns of the conversations (and the single turns) go round the "
        "assessors in queue order (each turn assigned to one: its primary); round(share x units) items, or "
        "whole turns with --unit turn, drawn with --seed, also go to the next --copies - 1 assessors, spread "
        "evenly through their queues between their own turns (docs/judging.md#planned-overlap). The audit "
        "reads their labels as the human ceiling (audit overlap) and in the alternative annotator test.",
    )
    add_db_argument(p)
    add_by_argument(p)
    p.add_argument("--name", required=True, help="the plan's name (a word)")
    p.add_argument(
        "--assessor", action="append", help="an assessor (repeat: at least --copies; needed but with --advance)"
    )
    p.add_argument("--conversation", nargs="*", default=[], help="conversation ids (all their pooled turns)")
    p.add_argument("--turn", nargs="*", default=[], help="turn ids, e.g. 0_8")
    p.add_argument(
        "--share", type=float, help="the share of items (or turns) judged twice or more (adaptive: the base share)"
    )
    p.add_argument("--copies", type=int, help="assessors per overlapping item: 2 (default) or 3 (adaptive: at most)")
    p.add_argument(
        "--adaptive",
        action="store_true",
        help="add assessors where grades disagree by --margin (docs/judging.md#adaptive-overlap)",
    )
    p.add_argument("--margin", type=float, help="adaptive: the grade difference that adds an assessor, in (0, 4]")
    p.add_argument("--judge", metavar="SOURCE", help="adaptive: the source the first human grade is compared with")
    p.add_argument(
        "--advance",
        action="store_true",
        help="take the steps now due on the adaptive plan --name (e.g. new judge labels)",
    )
    p.add_argument("--unit", choices=("item", "turn"), default="item", help="draw items (default) or whole turns")
    p.add_argument("--seed", type=int, default=0, help="seed of the draw (default 0)")
    p.add_argument("--task", choices=("passage", "ptkb"), default="passage")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_assign_overlap)

    p = sub.add_parser(
        "reshow",
        help="re-show a share of each assessor's judged items later, blind (consistency labels)",
        description="Set the share of each assessor's judged passages that come back later in their /judge "
        "queue, blind: each block of 1/share new labels gives one item, picked by a seeded hash, due after "
        "between --gap and 2 x --gap further labels (docs/judging.md#re-shown-items). The second answer is "
        "a consistency label: the first label is never replaced. --share 0 turns it off; without --share, "
        "prints the rule in force.",
    )
    add_db_argument(p)
    add_by_argument(p)
    p.add_argument("--share", type=float, help="the share of judged items re-shown, in (0, 1] (0: off)")
    p.add_argument("--gap", type=int, default=10, help="at least this many further labels before one comes back")
    p.add_argument("--seed", type=int, default=0, help="seed of the picks and gaps (default 0)")
    p.add_argument("--task", choices=("passage",), default="passage")
    p.set_defaults(func=cmd_reshow)


def cmd_assign(args) -> int:
    db = open_store(args)
    if not args.conversation and not args.turn:
        raise AssessError("assign needs --conversation or --turn")
    turns = contents.turns_to_assign(db, args.conversation, args.turn)
    if args.remove:
        contents.unassign_listed_turns(db, args.assessor, turns, by=actor(args))
        print(f"{args.assessor}: {len(turns)} turns unassigned")
    else:
        added = contents.assign_listed_turns(db, args.assessor, turns, by=actor(args))
        print(f"{args.assessor}: {added} new turns assigned ({len(turns)} given)")
    return 0


def cmd_reshow(args) -> int:
    db = open_store(args)
    if args.share is not None:
        contents.set_reshow_rule(db, args.share, gap=args.gap, seed=args.seed, task=args.task, by=actor(args))
    rule = contents.reshow_rule(db, args.task)
    if rule is None:
        print(f"{args.task}: no items are re-shown")
    else:
        print(
            f"{args.task}: {rule.share:g} of each assessor's judged items come back after "
            f"{rule.gap}-{2 * rule.gap} further labels (seed {rule.seed})"
        )
    return 0


def cmd_assign_overlap(args) -> int:
    if args.advance:
        steps = contents.advance_overlap_plan(open_store(args), args.name)
        print(
            json.dumps(steps) if args.json else f"plan {args.name}: " + ", ".join(f"{k} {v}" for k, v in steps.items())
        )
        return 0
    if not args.assessor:
        raise AssessError("overlap needs --assessor A --assessor B ... (or --advance for a plan made already)")
    if args.share is None:
        raise AssessError("overlap needs --share S (adaptive: the base share given a second assessor at once)")
    if (args.margin is not None or args.judge is not None) and not args.adaptive:
        raise AssessError("--margin and --judge belong to an adaptive plan: add --adaptive")
    if args.adaptive and args.margin is None:
        raise AssessError("--adaptive needs --margin M: the grade difference that adds an assessor, in (0, 4]")
    if args.adaptive and not 0 < args.margin <= 4:  # NaN too
        raise AssessError(f"--margin: a grade difference in (0, 4], not {args.margin!r}")
    copies = args.copies or (min(3, len(args.assessor)) if args.adaptive else 2)
    db = open_store(args)
    summary = contents.create_overlap_plan(
        db,
        args.name,
        args.assessor,
        topics=args.conversation,
        turns=args.turn,
        share=args.share,
        copies=copies,
        unit=args.unit,
        seed=args.seed,
        task=args.task,
        by=actor(args),
        margin=args.margin,
        judge=args.judge,
    )
    if args.json:
        print(json.dumps(summary))
        return 0
    unit = "turns" if args.unit == "turn" else "items"
    judged = (
        f"{summary['chosen']} of {summary['population']} {unit} in the base share, judged by 2 assessors; up to "
        f"{summary['copies']} where grades disagree"
        if summary["adaptive"]
        else f"{summary['chosen']} of {summary['population']} {unit} judged by {summary['copies']} assessors"
    )
    print(f"plan {summary['plan']} ({summary['task']}): {summary['turns']} turns, {summary['items']} items; {judged}")
    for assessor, turns in summary["assignments"].items():
        print(f"  {assessor}: {turns} turns of their own, {summary['extra'].get(assessor, 0)} extra items")
    if adaptive := summary["adaptive"]:
        steps = ", ".join(f"{k} {v}" for k, v in adaptive["steps"].items())
        print(
            f"  adaptive, margin {adaptive['margin']:g}, judge {adaptive['judge'] or 'none'}: steps taken now: {steps}"
        )
    return 0
