"""CLI: a crowd study's answers and labels out and in (`crowd export`, `crowd import`; registered by
:mod:`assess.cli.crowd` between `aggregate` and `close`, where --help lists them)."""

from __future__ import annotations

import contextlib
import json

from assess.cli import add_db_argument, data_output
from assess.cli.common import open_store
from assess.crowd import files as study_files
from assess.formats.inert_csv import write_dicts
from assess.services import crowd as crowd_service

EXPORT_FIELDS = {
    "raw": (
        "study",
        "batch",
        "worker",
        "platform",
        "assignment",
        "position",
        "item_id",
        "is_test",
        "known_answer",
        "turn_id",
        "run",
        "nugget_key",
        "criterion",
        "value",
        "seconds",
        "answered_at",
        "kept",
        "discarded_because",
    ),
    "aggregated": (
        "item_id",
        "batch",
        "turn_id",
        "run",
        "nugget_key",
        "criterion",
        "n",
        "counts",
        "mean",
        "tie",
        "label",
    ),
}


def add_commands(cs) -> None:
    p = cs.add_parser(
        "export",
        help="raw answers or aggregated labels as CSV or TSV",
        description="raw: every answer with worker, batch, test flag, time and QC verdict; "
        "aggregated: votes, mean, tie and label per item. --format tsv writes the "
        "CONE-RAG NtR layout <batch>_<conv>_<turn>_<k>_<run>\\t0|1 (graded studies: "
        "support|partial_support|not_support; raw: a third column with the worker; "
        "`crowd import` reads both back); for response studies TURN RUN CRITERION VALUE [WORKER].",
    )
    p.add_argument("name")
    p.add_argument("what", choices=("raw", "aggregated"))
    add_db_argument(p)
    p.add_argument("--format", choices=("csv", "tsv"), default="csv")
    p.add_argument("--kept", action="store_true", help="raw: only answers kept by QC (no tests, no discarded batches)")
    p.add_argument("--output", "-o", help="output file (default stdout)")
    p.set_defaults(func=cmd_export)

    p = cs.add_parser(
        "import",
        help="import crowd NtR labels keeping their batches (and workers)",
        description="Import a crowd NtR file (<batch>_<conv>_<turn>_<k>_<run>\\t0|1, optionally "
        "a third column with the worker) as an imported study; its labels become "
        "source crowd:STUDY (the public CONE-RAG file: one aggregated label per pair). "
        "A file answered support|partial_support|not_support (a graded study's export) "
        "becomes a graded study with ntr-support labels; a file mixing both is refused.",
    )
    p.add_argument("file")
    add_db_argument(p)
    p.add_argument("--study", default="mturk", help="study name (default mturk: source crowd:mturk)")
    p.add_argument("--nuggets", default="human", help="the nugget source the [k] keys refer to (default human)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_import)


def cmd_export(args) -> int:
    study, rows = crowd_service.export_rows(open_store(args), args.name, args.what, kept=args.kept)
    with contextlib.ExitStack() as files:
        out = (
            files.enter_context(open(args.output, "w", newline="", encoding="utf-8")) if args.output else data_output()
        )
        if args.format == "csv":
            write_dicts(out, EXPORT_FIELDS[args.what], rows)
            return 0
        out.writelines(crowd_service.label_lines(study, args.what, rows))
    return 0


def cmd_import(args) -> int:
    db = open_store(args)
    summary = crowd_service.import_ntr_study(
        db, args.file, study_files.parse_crowd_ntr(args.file), study=args.study, nugget_source=args.nuggets
    )
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"{args.file}: imported " + ", ".join(f"{k} {v}" for k, v in summary.items() if v is not None))
    return 0
