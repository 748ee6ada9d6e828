"""CLI: crowd studies (create, status, report, decide, release, aggregate, export, import, close)."""

from __future__ import annotations

import json
import sys

from assess.cli import add_db_argument, crowd_files
from assess.cli.common import open_store
from assess.crowd import entry as crowd_entry
from assess.crowd import files as study_files
from assess.crowd import guideline as study_guideline
from assess.crowd import rules
from assess.errors import AssessError
from assess.services import accounts, crowd_studies
from assess.services import crowd as crowd_service
from assess.settings import open_mode_setting, organizer_password
from assess.text import terminal_text


def add_commands(sub) -> None:
    crowd = sub.add_parser(
        "crowd",
        help="crowd studies: create, status, report, aggregate, export, import",
        description="Crowd studies (NtR matching or response quality) in batches with hidden "
        "test items, k workers per batch, worker screening and majority vote.",
    )
    cs = crowd.add_subparsers(dest="crowd_command", metavar="ACTION")
    cs.required = True

    p = cs.add_parser(
        "create",
        help="create a study from the stored responses and nuggets",
        description="Create a study: items from stored data (NtR: each run's response x each gold "
        "nugget of the turn; response: each response x each criterion), batches of "
        "--batch-size items plus one hidden test item drawn from the known answers.",
    )
    p.add_argument("name", nargs="?", help="study name (its labels become source crowd:NAME); --demo: demo")
    add_db_argument(p)
    p.add_argument(
        "--demo", action="store_true", help="the demo study on the embedded demo (its known answers are built in)"
    )
    p.add_argument("--task", choices=("ntr", "response"), default="ntr")
    p.add_argument(
        "--graded",
        action="store_true",
        help="ntr: workers answer 2 support / 1 partial support / 0 no support (keys 2, 1, 0) instead of yes/no; "
        "the aggregated labels become ntr-support labels of crowd:NAME (ties default to the mean rounded "
        "half up); known answers are written support / partial_support / not_support",
    )
    p.add_argument("--run", action="append", dest="runs", help="only this run (repeatable; default all)")
    p.add_argument("--turn", action="append", dest="turns", help="only this turn id (repeatable)")
    p.add_argument("--conversation", action="append", dest="conversations", help="only this conversation")
    p.add_argument("--nuggets", default=None, help="ntr: the gold nugget source (default gold)")
    p.add_argument(
        "--criteria",
        help="response: comma-separated criteria (relevance,completeness,naturalness,"
        "conciseness; default relevance,completeness)",
    )
    p.add_argument(
        "--known",
        action="append",
        default=[],
        metavar="TURN,RUN,KEY,VALUE",
        help="a known-answer item used as a hidden test (KEY: nugget key [k] or criterion; VALUE: 0|1 or yes|no, "
        "--graded: 2|1|0 or support|partial_support|not_support); repeatable",
    )
    p.add_argument(
        "--known-file",
        help="known answers: NtR TSV (<batch>_<conv>_<turn>_<k>_<run> 0|1; --graded: support|partial_support|"
        "not_support) or, for response studies, lines TURN RUN CRITERION VALUE",
    )
    p.add_argument("--batch-size", type=int, help="regular items per batch (default 10)")
    p.add_argument("--k", type=int, help="workers per batch (default 3)")
    p.add_argument("--seed", type=int, help="seed of the test-item draw and position (default 0)")
    p.add_argument(
        "--qc",
        choices=("test", "known-bad", "none"),
        help="discard a batch whose test item fails: test = any wrong answer (CONE-RAG, default for ntr); "
        "known-bad = a rating >= --bad-threshold on a known-bad item (CAsT 2022, default for response)",
    )
    p.add_argument("--bad-threshold", type=int, help="known-bad rule threshold (default 3)")
    p.add_argument(
        "--tie",
        choices=("undecided", "mean"),
        help="majority-vote ties: undecided (no label; default for yes/no ntr) or mean of the labels rounded "
        "half up (CAsT; default for response and --graded: 2-1-0 gives 1 partial support)",
    )
    p.add_argument("--unable", action="store_true", help="response: offer -1 'unable to judge' (iKAT 2023)")
    p.add_argument("--platform", choices=("any", "prolific", "mturk"), help="accept workers from (default any)")
    p.add_argument("--prolific-code", help="the Prolific study's completion code (workers get the redirect link)")
    p.add_argument("--stale-minutes", type=int, help="an unfinished batch idle this long frees its slot (default 60)")
    p.add_argument("--max-batches", type=int, help="batches per worker (default 0: no limit)")
    p.add_argument("--guideline", help="JSON file with title, consent, instructions, examples (overrides defaults)")
    p.add_argument("--base-url", default="http://localhost:8501", help="the app's public URL, for the entry links")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_create)

    p = cs.add_parser("status", help="progress per batch and worker (no NAME: list the studies)")
    p.add_argument("name", nargs="?")
    add_db_argument(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_status)

    p = cs.add_parser(
        "report",
        help="quality control: per-worker accuracy on tests, time, agreement; kappa, alpha",
        description="Per-worker report for approve/reject decisions, the batches discarded by the "
        "QC rule, Fleiss' kappa and Krippendorff's alpha over the raw labels; --compare "
        "gives accuracy and Cohen's kappa of the current majority labels against other "
        "sources (computed from the answers: no need to run `crowd aggregate` first, and "
        "nothing is written).",
    )
    p.add_argument("name")
    add_db_argument(p)
    p.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="SOURCE",
        help="an NtR label source to compare the current majority labels with (e.g. llm:demo-gpt, "
        "an assessor); repeatable",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_report)

    p = cs.add_parser("decide", help="approve or reject a worker (rejected workers' labels are left out)")
    p.add_argument("name")
    p.add_argument("worker")
    p.add_argument("decision", choices=("approve", "reject", "clear"))
    add_db_argument(p)
    p.set_defaults(func=cmd_decide)

    p = cs.add_parser(
        "release",
        help="let a worker continue in another browser: forget the browser their worker id is bound to",
        description="The worker page binds a worker id to the browser that first pressed Start with it; another browser "
        "with that id is refused. After `release` the next browser that arrives with the id is bound instead "
        "(the worker's batch and answers stay).",
    )
    p.add_argument("name")
    p.add_argument("worker")
    add_db_argument(p)
    p.set_defaults(func=cmd_release)

    p = cs.add_parser(
        "aggregate",
        help="write the aggregated labels (majority vote, or crowd-kit's Dawid-Skene / MACE / GLAD) as the source crowd:NAME",
    )
    p.add_argument("name")
    p.add_argument(
        "--method",
        choices=("majority", "dawid-skene", "mace", "glad"),
        default="majority",
        help="majority: our majority vote with the study's tie rule (default); dawid-skene, mace, glad: crowd-kit's, "
        "with its worker accuracy on the aggregates and consistency",
    )
    add_db_argument(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_aggregate)

    crowd_files.add_commands(cs)

    p = cs.add_parser("close", help="close a study to new workers (--reopen opens it again)")
    p.add_argument("name")
    add_db_argument(p)
    p.add_argument("--reopen", action="store_true")
    p.set_defaults(func=cmd_close)


ORGANIZER_WARNING = (
    "warning: ASSESS_ORGANIZER_PASSWORD is not set, so a worker who removes ?study= from the "
    "link can open the organizer pages (they show LLM labels); set it for the app before "
    "giving out the links"
)
NO_ORGANIZER_WARNING = (
    "warning: this store has accounts but no enabled organizer account, so nobody can open the organizer "
    "pages (ASSESS_ORGANIZER_PASSWORD has no effect on a store with accounts); add one with "
    "python -m assess users add NAME --role organizer"
)


def _warn_open_organizer_pages(db) -> None:
    """One warning line on stderr about the organizer pages when a study link goes public. In open mode (the
    demo store, or $ASSESS_OPEN=1): when they have no password ($ASSESS_ORGANIZER_PASSWORD). On a store with
    accounts only an organizer account opens them (the password has no effect there): when there is none."""

    if accounts.open_sign_in(db, open_mode_setting()):
        if organizer_password() is None:
            print(ORGANIZER_WARNING, file=sys.stderr)
    elif not any(a["role"] == "organizer" and not a["disabled"] for a in accounts.account_list(db)):
        print(NO_ORGANIZER_WARNING, file=sys.stderr)


def _config(args):
    """The study settings from the flags (only those given override the task's defaults)."""

    given = {
        "batch_size": args.batch_size,
        "k": args.k,
        "seed": args.seed,
        "qc": args.qc,
        "bad_threshold": args.bad_threshold,
        "tie": args.tie,
        "platform": args.platform,
        "prolific_code": args.prolific_code,
        "stale_minutes": args.stale_minutes,
        "max_batches_per_worker": args.max_batches,
    }
    given = {k: v for k, v in given.items() if v is not None}
    if args.task == "response":
        given["criteria"] = tuple(
            c.strip() for c in (args.criteria or "relevance,completeness").split(",") if c.strip()
        )
        given["allow_unable"] = args.unable or args.demo
    elif args.criteria:
        raise AssessError("--criteria applies to --task response")
    if args.graded:
        if args.task != "ntr":
            raise AssessError("--graded applies to --task ntr (support / partial support / no support)")
        given["graded"] = True
    if args.demo:
        return rules.demo_config(args.task, **given)
    if args.task == "ntr":
        defaults = {"qc": "test", "tie": "mean" if args.graded else "undecided"}
    else:
        defaults = {"qc": "known-bad", "tie": "mean"}
    return rules.StudyConfig(task=args.task, **{**defaults, **given})


def cmd_create(args) -> int:
    config = _config(args)
    known = [study_files.parse_known_spec(s, graded=config.graded) for s in args.known]
    if args.known_file:
        known += study_files.parse_known_file(args.known_file, args.task, graded=config.graded)
    if args.demo:
        known = known or list(rules.demo_known(args.task, graded=config.graded))
        name = args.name or rules.demo_name(args.task, graded=config.graded)
    elif not args.name:
        raise AssessError("crowd create needs a study NAME (or --demo)")
    else:
        name = args.name
    guideline = study_guideline.read_guideline(args.guideline) if args.guideline else None
    db = open_store(args)
    summary = crowd_studies.create_study(
        db,
        name,
        config,
        runs=args.runs,
        turns=args.turns,
        conversations=args.conversations,
        nugget_source=args.nuggets or "gold",
        known=known,
        guideline=guideline,
    )
    summary["urls"] = crowd_entry.entry_urls(args.base_url, name)
    _warn_open_organizer_pages(db)
    if args.json:
        print(json.dumps(summary))
        return 0
    kind = f" as {config.label_task} labels ({config.answers_named})" if config.graded else ""
    print(
        f"study {name}: {summary['items']} items + {summary['tests']} test items in {summary['batches']} batches, "
        f"k = {summary['k']} ({summary['assignments_needed']} assignments); labels go to {summary['source']}{kind}"
    )
    for platform, url in summary["urls"].items():
        print(f"  {platform:9} {url}")
    return 0


def cmd_status(args) -> int:
    db = open_store(args)
    if not args.name:
        studies = crowd_studies.list_studies(db)
        if any(s["status"] == "open" for s in studies):
            _warn_open_organizer_pages(db)
        if args.json:
            print(json.dumps(studies))
        for s in studies if not args.json else ():
            task = f"{s['task']} (graded)" if s["graded"] else s["task"]
            print(f"{s['name']:20} {task:9} {s['status']:9} {s['source']}")
        return 0
    result = crowd_studies.progress(db, args.name)
    if result["status"] == "open":
        _warn_open_organizer_pages(db)
    if args.json:
        print(json.dumps(result))
        return 0
    task = f"{result['task']} graded" if result["graded"] else result["task"]
    print(
        f"study {args.name} ({task}, {result['status']}): {result['assignments_done']} / "
        f"{result['assignments_needed']} assignments done (kept after QC; {result['assignments_discarded']} "
        f"discarded, their batches offered again), {result['complete_batches']} / "
        f"{len(result['batches'])} batches complete"
    )
    print("batch  items   kept  discarded  active  stale  workers")
    for b in result["batches"]:
        print(
            f"{b['batch']:>5}  {b['items']:5}  {b['kept']:2}/{b['k']:<2}  {b['discarded']:9}  {b['active']:6}  "
            f"{b['stale']:5}  {b['workers']}"
        )
    if result["workers"]:
        print("worker                platform  done  active  answers  seconds  codes")
    for w in result["workers"]:
        print(
            f"{w['worker']:20}  {w['platform']:8}  {w['completed']:4}  {w['active']:6}  {w['answers']:7}  "
            f"{w['seconds'] or 0:7}  {w['codes']}{'  (' + w['decision'] + ')' if w['decision'] else ''}"
        )
    return 0


def _fmt(value, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def cmd_report(args) -> int:
    result = crowd_service.report(open_store(args), args.name, args.compare)
    if args.json:
        print(json.dumps(result, default=str))
        return 0
    print(
        f"study {args.name}: qc {result['qc']}, ties {result['tie']}; {result['items_labelled']} items labelled, "
        f"{result['items_decided']} decided, {result['ties']} ties; {len(result['discarded'])} batches discarded"
    )
    print("worker                batches  discarded  answers  tests  test_acc  median_s  agree_majority  decision")
    for w in result["workers"]:
        print(
            f"{w['worker']:20}  {w['assignments']:7}  {w['discarded']:9}  {w['answers']:7}  {w['tests']:5}  "
            f"{_fmt(w['test_accuracy']):>8}  {_fmt(w['median_seconds'], 1):>8}  "
            f"{_fmt(w['agreement_with_majority']):>14}  {w['decision'] or '-'}"
        )
    for label, groups in (
        ("all completed batches", result["agreement_all"]),
        ("kept after QC", result["agreement_kept"]),
    ):
        for name, g in groups.items():
            fleiss = (
                f"Fleiss kappa {_fmt(g['fleiss_kappa'])} over {g['fleiss_items']} items with "
                f"{g['fleiss_raters']} raters each (the most common number)"
                if g["fleiss_raters"]
                else "Fleiss kappa - (no item with 2 labels)"
            )
            print(
                f"agreement ({label}, {name}): {g['items']} items, {fleiss}, "
                f"Krippendorff alpha {_fmt(g['krippendorff_alpha'])}"
            )
    for other, c in result["compare"].items():
        print(
            f"crowd:{args.name} vs {other}: n {c['n']}, accuracy {_fmt(c['accuracy'])}, kappa {_fmt(c['kappa'])} "
            f"({c['from']} labels)"
        )
    return 0


def cmd_decide(args) -> int:
    decision = {"approve": "approved", "reject": "rejected", "clear": None}[args.decision]
    crowd_studies.set_decision(open_store(args), args.name, args.worker, decision)
    print(f"{args.name}: worker {args.worker} {decision or 'undecided'}")
    return 0


def cmd_release(args) -> int:
    crowd_studies.release(open_store(args), args.name, args.worker)
    print(f"{args.name}: worker {args.worker} released; the next browser with their link is bound to them")
    return 0


def cmd_aggregate(args) -> int:
    db = open_store(args)
    summary = crowd_service.aggregate(db, args.name, args.method)
    task = crowd_studies.label_task(db, args.name)
    if args.json:
        print(json.dumps({**summary, "task": str(task)}))
        return 0
    print(
        f"{summary['source']}: {summary['labels']} {task} labels written by {args.method} "
        f"(values {summary['values']}), {summary['removed']} removed"
    )
    if summary["machines_left_out"]:
        print(
            f"left out as machine annotators, not people: {', '.join(summary['machines_left_out'])} "
            "(docs/crowd.md#machines-are-not-workers)"
        )
    if "workers" in summary:
        consistency = ", ".join(f"{g} {_fmt(v)}" for g, v in summary["consistency"].items())
        print(f"consistency (crowd-kit): {consistency}")
        print("worker                accuracy_on_aggregates")
        for worker, accuracy in summary["workers"].items():
            print(f"{terminal_text(worker):20}  {_fmt(accuracy):>22}")
    return 0


def cmd_close(args) -> int:
    crowd_studies.set_status(open_store(args), args.name, "open" if args.reopen else "closed")
    print(f"{args.name}: {'open' if args.reopen else 'closed'}")
    return 0
