"""`sources`: the roster of machine annotators (`sources roster`) and the declaration of an imported LLM file's
model, prompt version, engine and date (`sources declare`)."""

from __future__ import annotations

import json

from assess.cli import actor, add_by_argument, add_db_argument
from assess.cli.common import open_store, text_table
from assess.services import machines


def add_commands(sub) -> None:
    group = sub.add_parser(
        "sources",
        help="machine annotators: the roster of LLM sources, and declaring an imported file's model",
        description="Every LLM label source carries its model, prompt version, engine and date: from its "
        "pre-judging jobs, or declared for an imported file (docs/llm.md#machine-annotators-declared). Agreement "
        "figures keep machines apart from people by this roster.",
    )
    cs = group.add_subparsers(dest="sources_command", metavar="SUBCOMMAND")
    cs.required = True
    p = cs.add_parser("roster", help="every machine source: model, prompt version, engine, date, and what is missing")
    add_db_argument(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_roster)

    p = cs.add_parser(
        "declare",
        help="declare a source a machine annotator, with its model, prompt version, engine and date",
        description="Record SOURCE's model, prompt version, engine (what ran it: vLLM, an API) and date (YYYY-MM-DD); "
        "an imported source becomes a machine one (kind llm): left out of the human ceiling, crowd votes and "
        "the alternative annotator test's humans.",
    )
    p.add_argument("source", help="the label source (an imported file's, or an LLM's)")
    add_db_argument(p)
    add_by_argument(p)
    p.add_argument("--model", required=True, help="the model, e.g. gpt-4o-2024-08-06")
    p.add_argument("--prompt-version", required=True, help="the prompt's version or name")
    p.add_argument("--engine", required=True, help="what ran it, e.g. vllm-0.6 or openai-api")
    p.add_argument("--date", required=True, help="the date of the run (YYYY-MM-DD)")
    p.set_defaults(func=cmd_declare)


def cmd_roster(args) -> int:
    found = machines.roster(open_store(args))
    if args.json:
        print(json.dumps({"sources": found}))
        return 0
    if not found:
        print("no machine sources")
        return 0
    text_table(
        ["source", "model", "prompt version", "engine", "date", "from", "missing"],
        [
            [
                r["source"],
                r["model"] or "-",
                r["prompt_version"] or "-",
                r["engine"] or "-",
                r["date"] or "-",
                ", ".join(sorted({v for v in r["from"].values() if v})) or "-",
                ", ".join(r["missing"]) or "-",
            ]
            for r in found
        ],
    )
    return 0


def cmd_declare(args) -> int:
    done = machines.declare(
        open_store(args),
        args.source,
        model=args.model,
        prompt_version=args.prompt_version,
        engine=args.engine,
        date=args.date,
        by=actor(args),
    )
    print(
        f"{done['source']}: a machine annotator (model {done['model']}, prompt {done['prompt_version']}, "
        f"engine {done['engine']}, {done['date']})"
    )
    return 0
