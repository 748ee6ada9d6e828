"""`python -m assess nuggets bank ...` (RAGTIME nugget banks) and `python -m assess rubrics ...` (DRAGUN
rubrics): import, export, matches / judgments, scores."""

from __future__ import annotations

import json

from assess.cli import actor, add_by_argument, add_db_argument, check_options, data_output
from assess.cli.common import open_store, print_json, table
from assess.services import banks


def add_bank_commands(nugget_commands) -> None:
    """The ``bank`` action of the ``nuggets`` group (called by assess/cli/nuggets.py)."""
    group = nugget_commands.add_parser(
        "bank",
        help="RAGTIME nugget banks: import, export, matches, AND/OR coverage",
        description="Nugget banks in the TREC RAGTIME layout: questions with acceptable answers (AND: all needed, "
        "OR: any one) and their supporting documents (docs/responses.md#nugget-banks).",
    )
    commands = group.add_subparsers(dest="bank_command", metavar="ACTION")
    commands.required = True

    p = commands.add_parser("import", help="store the banks of a RAGTIME nugget-bank file or folder")
    p.add_argument("file", help="JSONL (one bank per line), one JSON object, or a folder of .json/.jsonl files")
    add_db_argument(p)
    p.add_argument("--replace", action="store_true", help="replace a stored bank that differs (drops its matches)")
    add_by_argument(p)
    p.add_argument("--json", action="store_true", help="print the counts as one JSON object")
    p.set_defaults(func=cmd_bank_import)

    p = commands.add_parser("export", help="write the stored banks (post-edits included) as RAGTIME JSONL")
    add_db_argument(p)
    p.add_argument("--topic", action="append", help="only this topic (repeatable)")
    p.add_argument("--out", help="output file (default: standard output)")
    p.set_defaults(func=cmd_bank_export)

    p = commands.add_parser(
        "import-matches",
        help="store which bank answers runs' responses contain (JSONL: topic_id, run_id, nugget, answer, sentences)",
    )
    p.add_argument("file")
    add_db_argument(p)
    p.add_argument("--source", required=True, help="label source of the matches")
    add_by_argument(p)
    p.add_argument("--json", action="store_true", help="print the counts as one JSON object")
    p.set_defaults(func=cmd_bank_matches)

    p = commands.add_parser(
        "score",
        help="nugget coverage per run (AND/OR), optionally importance-weighted, sentence support and F1",
    )
    add_db_argument(p)
    p.add_argument("--source", required=True, help="label source of the matches")
    p.add_argument("--weighted", action="store_true", help="weight nuggets by their importance (a number)")
    p.add_argument("--citation-source", help="citation-support source: adds RAGTIME sentence support and F1")
    p.add_argument(
        "--relevance-source",
        help="passage-label source (with --citation-source): adds Auto-ARGUE's citation relevance (grade >= 2)",
    )
    p.add_argument("--per-topic", action="store_true", help="also print each topic's scores")
    p.add_argument("--json", action="store_true", help="print the scores as one JSON object")
    p.set_defaults(func=cmd_bank_score)


def add_commands(sub) -> None:
    group = sub.add_parser(
        "rubrics",
        help="DRAGUN rubrics: import, export, judgments, supportive and contradictory scores",
        description="Rubrics in the TREC DRAGUN layout: questions with importance A/B/C and short answers; "
        "reports judged supports / partial / contradicts / none (docs/responses.md#rubrics).",
    )
    commands = group.add_subparsers(dest="rubrics_command", metavar="ACTION")
    commands.required = True

    p = commands.add_parser("import", help="store the rubrics of a DRAGUN rubric file or folder")
    p.add_argument("file", help="one rubric JSON object, JSONL, or a folder of .json files")
    add_db_argument(p)
    p.add_argument("--replace", action="store_true", help="replace a stored rubric that differs (drops its judgments)")
    add_by_argument(p)
    p.add_argument("--json", action="store_true", help="print the counts as one JSON object")
    p.set_defaults(func=cmd_rubrics_import)

    p = commands.add_parser("export", help="write the stored rubrics as imported")
    add_db_argument(p)
    p.add_argument("--out", required=True, help="a folder (one <topic>.json each) or a .jsonl file")
    p.set_defaults(func=cmd_rubrics_export)

    p = commands.add_parser(
        "import-judgments",
        help="store a DRAGUN report assessment CSV (topic_id, run_tag, answer_id, annotation|auto_assessment|assessment)",
    )
    p.add_argument("file")
    add_db_argument(p)
    p.add_argument("--source", required=True, help="label source of the judgments")
    add_by_argument(p)
    p.add_argument("--json", action="store_true", help="print the counts as one JSON object")
    p.set_defaults(func=cmd_rubrics_judgments)

    p = commands.add_parser("export-judgments", help="write a source's judgments as a DRAGUN assessment CSV")
    add_db_argument(p)
    p.add_argument("--source", required=True)
    p.add_argument("--out", help="output file (default: standard output)")
    p.set_defaults(func=cmd_rubrics_export_judgments)

    p = commands.add_parser("score", help="DRAGUN supportive and contradictory scores per run")
    add_db_argument(p)
    p.add_argument("--source", required=True, help="label source of the judgments")
    p.add_argument("--per-topic", action="store_true", help="also print each topic's scores")
    p.add_argument("--json", action="store_true", help="print the scores as one JSON object")
    p.set_defaults(func=cmd_rubrics_score)


def _counts(args, counts: dict, what: str) -> int:
    if args.json:
        print_json(counts)
    else:
        print(f"{what}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return 0


def _write(text: str, out: str | None) -> None:
    if out:
        with open(out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        data_output().write(text)


def cmd_bank_import(args) -> int:
    return _counts(
        args,
        banks.import_bank_file(open_store(args, must_exist=False), args.file, by=actor(args), replace=args.replace),
        args.file,
    )


def cmd_bank_export(args) -> int:
    _write(banks.export_banks(open_store(args), args.topic), args.out)
    return 0


def cmd_bank_matches(args) -> int:
    check_options(args, {"--source": "source"})
    return _counts(args, banks.import_match_file(open_store(args), args.file, args.source, by=actor(args)), args.file)


def _scores_table(result: dict, measures: list[str], per_topic: bool, topic_measures: list[str] | None = None) -> None:
    table(
        ["run", "topics", *measures],
        [[run, s["topics"], *(s.get(m) for m in measures)] for run, s in result["runs"].items()],
    )
    if per_topic:
        measures = topic_measures or measures
        print()
        table(
            ["run", "topic", *measures],
            [
                [run, topic, *(s.get(m) for m in measures)]
                for run, topics in result["per_topic"].items()
                for topic, s in topics.items()
            ],
        )


def cmd_bank_score(args) -> int:
    result = banks.bank_scores(
        open_store(args),
        args.source,
        weighted=args.weighted,
        citation_source=args.citation_source,
        relevance_source=args.relevance_source,
    )
    if args.json:
        if not args.per_topic:
            result.pop("per_topic")
        print_json(result)
        return 0
    _scores_table(result, banks.score_columns(result), args.per_topic, banks.score_columns(result, per_topic=True))
    return 0


def cmd_rubrics_import(args) -> int:
    return _counts(
        args,
        banks.import_rubric_file(open_store(args, must_exist=False), args.file, by=actor(args), replace=args.replace),
        args.file,
    )


def cmd_rubrics_export(args) -> int:
    print(json.dumps(banks.export_rubrics(open_store(args), args.out), ensure_ascii=False))
    return 0


def cmd_rubrics_judgments(args) -> int:
    check_options(args, {"--source": "source"})
    return _counts(
        args, banks.import_rubric_judgment_file(open_store(args), args.file, args.source, by=actor(args)), args.file
    )


def cmd_rubrics_export_judgments(args) -> int:
    _write(banks.export_rubric_judgments(open_store(args), args.source), args.out)
    return 0


def cmd_rubrics_score(args) -> int:
    result = banks.rubric_scores(open_store(args), args.source)
    if args.json:
        if not args.per_topic:
            result.pop("per_topic")
        print_json(result)
        return 0
    _scores_table(result, ["supportive", "contradictory"], args.per_topic)
    return 0
