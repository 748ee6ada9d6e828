"""`audit verdict`: can the judge replace the reference here? Every criterion with its figures."""

from __future__ import annotations

from assess.cli.audit.output import add_pair, ci_text
from assess.cli.common import fmt_num, open_store, print_report, text_table
from assess.services import audit


def add_verdict(command) -> None:
    """`audit verdict`."""
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
    add_pair(p)
    p.add_argument("--epsilon", type=float, help="the alternative annotator test's margin (default 0.2, experts)")
    p.add_argument("--width", type=float, help="the 95%% interval width the human budget should reach (default 0.1)")


def _figure_text(entry: dict) -> str:
    value = entry["value"]
    text = fmt_num(value) if isinstance(value, float) else str(value)
    if entry.get("low") is not None:
        text += ci_text([entry["low"], entry["high"]])
    return text


def cmd_verdict(args) -> int:
    report = audit.verdict_view(open_store(args), args.reference, args.judge, epsilon=args.epsilon, width=args.width)
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
