"""CLI commands for the store: init, import, export, stats."""

from __future__ import annotations

import json
import sys

from assess.cli import add_db_argument, check_options, data_output, queues, release
from assess.cli.common import open_store
from assess.errors import AssessError
from assess.formats.leaderboard import LEADERBOARD_LAYOUTS
from assess.formats.reading import MAX_DEPTH, MAX_JSON_BYTES, MAX_LINE_BYTES, MiB
from assess.formats.responses import ANSWER_LAYOUTS
from assess.services import contents, exports, loading, review, session
from assess.tasks import EXPORT_FILE_KINDS, EXPORT_TABLES, IMPORT_FILE_KINDS


def add_commands(sub) -> None:
    p = sub.add_parser(
        "init",
        help="create the database (and load the embedded demo with --demo)",
        description="Create the store, or bring its schema up to date. With --demo, load the "
        "embedded demo when the store is empty. PostgreSQL: run it with the URL of the role that owns "
        "the store, and name the role the app and the CLI connect as with --app-role (docs/deploy.md).",
    )
    add_db_argument(p)
    p.add_argument("--demo", action="store_true", help="load the embedded demo data")
    p.add_argument(
        "--app-role",
        metavar="ROLE",
        help="PostgreSQL: give ROLE what the app needs (read and write rows) and nothing that could change "
        "the schema or rewrite the label history",
    )
    p.set_defaults(func=cmd_init)

    p = sub.add_parser(
        "import",
        help="import a file (topics, qrels, runs, passages, nuggets, ...)",
        description="Import one file into the store, in one transaction. Bad input: exit 2, "
        "one line naming the file and line (or JSON path), nothing written. Limits: only regular "
        f"files are read (no directory, FIFO or device); JSON files (topics, nuggets, responses) at "
        f"most {MAX_JSON_BYTES // MiB} MiB and {MAX_DEPTH} levels deep; line files (qrels, runs, "
        f"passages JSONL, NtR labels) have no size limit and are streamed, but no line may exceed "
        f"{MAX_LINE_BYTES // MiB} MiB. Ids (turns, passages, runs, sources) have no whitespace or "
        "control characters; grades are ASCII digits without sign. Response files with citations "
        "(ikat-responses: the iKAT topics' responses, stored under the run 'topics' unless --run names one; "
        "rag-answers: answer JSONL of TREC RAG 2024/2025/2026, RAGTIME or iKAT 2025 runs, each line's run_id, "
        "its layout told by its fields unless --layout; warnings (too many citations, uncited references, over "
        "the length limit) are printed and the answers stored): sentences and cited passages are "
        "stored, cited passages the store lacks are added without text, the turns must exist; a re-import "
        "of the same responses changes nothing, a different response for a stored run and turn is refused "
        "unless --replace. No import rewrites a stored text silently: a nuggets, responses or passages file "
        "that changes the text of a stored nugget (or its relevance), response, gold response or passage is "
        "refused (exit 2 naming the file, the line, the first such item and the labels on it) unless "
        "--replace, which rewrites them, records each old text in the history and says how many labels per "
        "task sit on the rewritten items. nuggetizer layouts (TREC RAG AutoNuggetizer JSONL; docs/responses.md): "
        "nuggetizer-nuggets stores each qid's (a turn id; the turn must exist) nuggets as gold nuggets [1], [2], "
        "... of --source with their importance as importance labels of --source; nuggetizer-assignments "
        "stores each nugget's assignment (support / partial_support / not_support) as an ntr-support label of "
        "--source (required) for the gold nugget of --nugget-source with the same text and the record's "
        "run_id (its response to the qid must be stored); assigned nuggets the set does not have are "
        "reported (unknown_nuggets and a warning naming the first), not stored. Topics of one's own (topics, "
        "rag-topics) into a store that holds the embedded demo are refused (exit 2, nothing written) unless "
        "--drop-demo or --keep-demo says what becomes of the demo; a new store (--db new.db) needs neither.",
    )
    p.add_argument("kind", choices=list(IMPORT_FILE_KINDS), help="what the file holds")
    p.add_argument("file", help="the file to import")
    add_db_argument(p)
    p.add_argument(
        "--source",
        help="label source name (qrels: nist; ptkb-qrels: nist; nuggets, nuggetizer-nuggets: human; "
        "ntr-labels: crowd:mturk; nuggetizer-assignments: required; LLM sources are named llm:MODEL)",
    )
    p.add_argument("--depth", type=int, default=10, help="run: pool the top K passages per turn (0: no pooling)")
    p.add_argument(
        "--name",
        "--run",
        dest="name",
        help="run, rag-answers: store the run under this name instead of its tag (rag-answers: a file of one "
        "run); ikat-responses: the run name of the topics' responses (default topics)",
    )
    p.add_argument(
        "--replace",
        action="store_true",
        help="ikat-responses, rag-answers, responses, nuggets, passages: a stored text (response, nugget, "
        "passage) that the file changes is replaced, each change recorded in the history with the labels on "
        "the item (default: refused, nothing imported)",
    )
    p.add_argument(
        "--dedup", action="store_true", help="nuggets: the file is the de-duplicated subset of the source's nuggets"
    )
    p.add_argument(
        "--nuggets",
        "--nugget-source",
        dest="nugget_source",
        default="human",
        help="ntr-labels: the nugget source whose [k] keys the labels refer to; nuggetizer-assignments: the "
        "nugget set whose nuggets the assignments name by text (default human)",
    )
    p.add_argument("--gold", action="store_true", help="responses: store as gold responses of --source")
    p.add_argument("--year", type=int, help="topics: the iKAT year (default: guessed from the schema)")
    p.add_argument("--collection", help="topics: collection name (default ikat-YEAR)")
    p.add_argument(
        "--layout",
        choices=ANSWER_LAYOUTS,
        help="rag-answers: read every line in this layout (default: each line's layout, told by its fields; "
        "docs/responses.md)",
    )
    p.add_argument(
        "--topics",
        metavar="FILE",
        help="rag-answers: the topics the answers answer (TREC RAG topic_id TAB text, or AutoJudge requests JSONL "
        "with request_id, title, limit): a RAGTIME report over its request's character limit and a TREC RAG "
        "narrative other than its topic's text are warned about",
    )
    demo = p.add_mutually_exclusive_group()
    demo.add_argument(
        "--drop-demo",
        action="store_true",
        help="topics, rag-topics into a store holding the embedded demo: remove the demo and everything it seeded "
        "first, in the import's transaction (docs/cli.md#real-data-and-the-demo)",
    )
    demo.add_argument(
        "--keep-demo",
        action="store_true",
        help="topics, rag-topics into a store holding the embedded demo: keep the demo beside them (the queues "
        "then mix both)",
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser(
        "export",
        help="export labels (TREC qrels, PTKB qrels, nuggets JSON, CSV/Parquet, nuggetizer JSONL) or responses "
        "with citations",
        description="Write one source's labels to stdout (qrels, ptkb-qrels, nuggets), "
        "a label table to a CSV/Parquet file (table), or the stored responses with their citations to --out "
        "(ikat-responses: the iKAT topics layout, one run; rag-answers: answer JSONL, each response "
        "in the layout it was read in unless --layout). Importing the file gives the same responses. "
        "leaderboard: the --measure values computed from --source's labels per run and topic, with each run's "
        "'all' rows, in an AutoJudge layout (--layout tot|ir_measures to --out or stdout; trec_eval to the "
        "directory --out, one file per run). "
        "nuggetizer-nuggets: the gold nuggets of --source with its importance labels (a nugget without one is "
        "written okay and counted); nuggetizer-assignments: the NtR labels of --source (graded; yes/no as "
        "support / not_support) on the nuggets of --nugget-source (default: the one set they refer to), one "
        "record per run and turn; both to --out, turns in conversation order, nuggets in key order.",
    )
    p.add_argument("kind", choices=(*EXPORT_FILE_KINDS, release.RELEASE))
    add_db_argument(p)
    p.add_argument(
        "--source",
        action=release.Sources,
        help="label source (an assessor's labels are under the assessor's name); release: a source to include "
        "(repeatable; default every source)",
    )
    p.add_argument("--dedup", action="store_true", help="nuggets, nuggetizer-nuggets: only the de-duplicated set")
    p.add_argument(
        "--nugget-source",
        help="nuggetizer-assignments: the nugget set the labels are written for (default: the one they refer to)",
    )
    p.add_argument("--table", choices=EXPORT_TABLES, help="table: which table")
    p.add_argument(
        "--output",
        "--out",
        "-o",
        help="table: output file (.csv or .parquet; default CSV on stdout); ikat-responses, rag-answers, "
        "nuggetizer-nuggets, nuggetizer-assignments: the file to write (required)",
    )
    p.add_argument(
        "--run",
        action="append",
        default=[],
        help="ikat-responses, rag-answers, nuggetizer-assignments: only this run (repeatable)",
    )
    p.add_argument(
        "--layout",
        choices=(*ANSWER_LAYOUTS, *LEADERBOARD_LAYOUTS),
        help="rag-answers: write every answer in this layout (default: the layout each was read in); "
        "leaderboard: tot (run measure topic value), ir_measures (run topic measure value) or trec_eval "
        "(measure topic value, one file per run in the --out directory)",
    )
    p.add_argument(
        "--measure",
        action="append",
        default=[],
        dest="measures",
        metavar="M",
        help="leaderboard: a measure to write (repeatable): a nugget score (all_strict, ..., ntr_recall_lax), a "
        "citation score (citation_recall, ...), a nugget-bank coverage (bank_coverage, bank_coverage_weighted), a "
        "DRAGUN score (rubric_supportive, rubric_contradictory) or an ir_measures measure (nDCG@10) of the stored runs",
    )
    release.add_options(p)
    p.set_defaults(func=cmd_export)

    queues.add_commands(sub)

    p = sub.add_parser(
        "history",
        help="every change of one label, oldest first",
        description="Every change of one label of a source, oldest first (time, old -> new, "
        "mode, via); without --source, every source's changes of the item, each line naming its source. "
        "A label that came with its source's first bulk import shows "
        "that import as its first entry. Nugget edits show the text, relevance and "
        "span as JSON.",
    )
    add_db_argument(p)
    p.add_argument("--source", help="the label source (an assessor, nist, llm:MODEL, ...); default: every source")
    p.add_argument("--turn", required=True, help="the turn id, e.g. 0_8")
    p.add_argument(
        "--item",
        required=True,
        help="the passage id (the PTKB statement number with --task ptkb, the "
        "nugget key such as [3] with --task nugget)",
    )
    p.add_argument("--task", choices=("passage", "ptkb", "nugget"), default="passage")
    p.add_argument("--json", action="store_true", help="print one JSON list")
    p.set_defaults(func=cmd_history)

    p = sub.add_parser(
        "copy",
        help="copy a whole store to another (SQLite <-> PostgreSQL), history included",
        description="Copy every row of the store --from into the empty store --to, the label history with it "
        "(same ids and times), in one transaction. Each is a SQLite file (or sqlite:///FILE) or a "
        "postgresql:// URL; the target is created (SQLite) or initialised (PostgreSQL) when needed and must "
        "be empty. See docs/deploy.md.",
    )
    p.add_argument("--from", dest="source", required=True, metavar="SRC", help="the store to copy")
    p.add_argument("--to", dest="target", required=True, metavar="DST", help="the empty store to fill")
    p.add_argument("--json", action="store_true", help="print the rows copied per table as one JSON object")
    p.set_defaults(func=cmd_copy)

    p = sub.add_parser(
        "stats",
        help="counts of what is in the store",
        description="Conversations, turns, passages, pooled pairs, labels per source, and generated responses "
        '("responses": {"count", "with_citations", "citations"}: responses, those citing at least one '
        'passage, and citations, a passage cited twice counted twice). --json adds "review": the /review '
        "page's dashboard over the current assignments (docs/organizers.md#the-review-dashboard).",
    )
    add_db_argument(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_stats)


def cmd_init(args) -> int:
    if args.app_role is not None and not session.has_roles(args.db):
        raise AssessError(
            f"{session.location(args.db)}: --app-role is for a PostgreSQL store (a SQLite file has no roles)"
        )
    db = open_store(args, must_exist=False)
    if args.app_role is not None:
        for warning in session.grant_role(db, args.app_role):
            print(f"warning: {session.location(args.db)}: {warning}", file=sys.stderr)
        print(f"{session.location(args.db)}: the role {args.app_role} may read and write rows, not change the schema")
    if args.demo:
        if loading.load_demo_if_empty(db):
            print(f"{session.location(args.db)}: created with the demo data")
        else:
            print(f"{session.location(args.db)}: not empty, demo not loaded")
    else:
        print(f"{session.location(args.db)}: ready")
    return 0


def _login() -> str:
    """Who runs the command: the operating system's login (the CLI has no sign-in of its own)."""
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def cmd_import(args) -> int:
    check_options(
        args,
        ids={"--source": "source", "--name": "name", "--nuggets": "nugget_source", "--collection": "collection"},
        counts={"--depth": "depth"},
    )
    if args.replace and args.kind not in loading.REPLACE_KINDS:
        raise AssessError(f"--replace is for {', '.join(loading.REPLACE_KINDS)} imports, not {args.kind}")
    for flag, given in (("--layout", args.layout), ("--topics", args.topics)):
        if given is not None and args.kind != "rag-answers":
            raise AssessError(f"{flag} is for rag-answers imports, not {args.kind}")
    if (args.drop_demo or args.keep_demo) and args.kind not in loading.TOPIC_KINDS:
        flag = "--drop-demo" if args.drop_demo else "--keep-demo"
        raise AssessError(f"{flag} is for {', '.join(loading.TOPIC_KINDS)} imports, not {args.kind}")
    db = open_store(args, must_exist=False)
    summary = loading.load_file(
        db,
        args.kind,
        args.file,
        source=args.source,
        depth=args.depth,
        name=args.name,
        dedup=args.dedup,
        nugget_source=args.nugget_source,
        gold=args.gold,
        year=args.year,
        collection=args.collection,
        run=args.name,
        replace=args.replace,
        by=f"cli:{_login()}",
        demo="drop" if args.drop_demo else "keep" if args.keep_demo else "ask",
        **{k: v for k, v in (("layout", args.layout), ("topics", args.topics)) if v is not None},
    )
    for warning in summary.get("warnings", ()):  # what the file held but was not stored
        print(f"warning: {warning}", file=sys.stderr)
    if args.json:
        print(json.dumps(summary))
        return 0
    summary.pop("warnings", None)
    print(f"{args.file}: imported " + ", ".join(f"{k} {_counts(v)}" for k, v in summary.items()))
    return 0


def _counts(value) -> str:
    """A summary value as text: counts per task read ``(ntr 3, passage 1)``."""
    if isinstance(value, dict):
        return "(" + ", ".join(f"{k} {v}" for k, v in value.items()) + ")"
    return str(value)


def cmd_export(args) -> int:
    if args.kind == release.RELEASE:
        return release.cmd_release(args)
    if args.force:
        raise AssessError(f"--force is for release exports, not {args.kind}")

    request = exports.ExportRequest(
        kind=args.kind,
        source=args.source,
        dedup=args.dedup,
        nugget_source=args.nugget_source,
        table=args.table,
        output=args.output,
        runs=tuple(args.run),
        layout=args.layout,
        measures=tuple(args.measures),
    )
    written = exports.export(open_store(args), request, data_output())
    if written is not None:
        print(f"{args.output}: wrote " + ", ".join(f"{k} {v}" for k, v in written.items()))
    return 0


def cmd_copy(args) -> int:
    if not session.store_exists(args.source):
        raise AssessError(f"{session.location(args.source)}: no such database (--from must name an existing store)")
    copied = session.copy(args.source, args.target)
    if args.json:
        print(json.dumps(copied, sort_keys=True))
    else:
        print(f"{session.location(args.source)} -> {session.location(args.target)}: {sum(copied.values())} rows copied")
        for table, n in sorted(copied.items()):
            if n:
                print(f"  {table:28} {n}")
    return 0


def cmd_stats(args) -> int:
    db = open_store(args)
    result = contents.stats(db)
    if args.json:
        result["review"] = review.dashboard(db)  # the /review page's figures, compared with it by a test
        print(json.dumps(result))
        return 0
    for key in ("conversations", "turns", "passages", "passages_with_text", "runs", "pooled_pairs"):
        print(f"{key:20} {result[key]}")
    for source, s in result["passage_labels"].items():
        print(f"passage labels {source:20} {s['count']:7} over {s['turns']} turns, grades 0..4 = {s['grades']}")
    for source, s in result["ptkb_labels"].items():
        print(f"PTKB labels    {source:20} {s['count']:7} ({s['relevant']} relevant)")
    for source, s in result["nuggets"].items():
        print(f"nuggets        {source:20} {s['count']:7} over {s['turns']} turns")
    for source, s in result["ntr_labels"].items():
        print(f"NtR labels     {source:20} {s['count']:7} ({s['yes']} yes)")
    r = result["responses"]
    print(f"{'responses':20} {r['count']} ({r['with_citations']} with citations, {r['citations']} citations)")
    return 0


def cmd_history(args) -> int:
    trail = contents.item_history(open_store(args), f"{args.turn} {args.item}", args.task, source=args.source)
    if args.json:
        print(json.dumps(trail))
        return 0
    if not trail:
        who = "no source has ever" if args.source is None else f"{args.source} has never"
        print(f"{who} labelled {args.task} {args.item} of turn {args.turn}")
    for r in trail:
        source = f"  {r['source']}" if args.source is None else ""
        print(
            f"{r['at']}{source}  {r['old'] if r['old'] is not None else '-'} -> "
            f"{r['new'] if r['new'] is not None else '-'}  mode={r['mode']} via={r['via']}"
        )
    return 0
