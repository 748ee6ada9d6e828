"""`audit speed` and `rubber-stamp`: how assessors work, from the active time of their label events."""

from __future__ import annotations

from assess.cli import data_output
from assess.cli.common import fmt_num, open_store, print_report, text_table
from assess.services import audit


def add_speed(command) -> None:
    """`audit speed`."""
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


def cmd_speed(args) -> int:
    db = open_store(args)
    if args.labels:
        data_output().write(audit.timed_labels_csv(db, assessor=args.assessor))
        return 0
    report = audit.speed(db, assessor=args.assessor)
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


def add_rubber_stamp(command) -> None:
    """`audit rubber-stamp`."""
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


def cmd_rubber_stamp(args) -> int:
    report = audit.rubber_stamping(open_store(args), args.task, assessor=args.assessor)
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
