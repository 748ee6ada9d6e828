"""`python -m assess nuggets ...`: locate imported nuggets in passages, suggest duplicates, GFRC2 studies,
and export what was marked in the workbench as ``score gfrc2`` / ``score aepd`` inputs."""

from __future__ import annotations

import json
import sys

from assess.cli import add_db_argument


def add_commands(sub) -> None:
    group = sub.add_parser(
        "nuggets",
        help="nugget workbench: locate, duplicates, GFRC2/AEPD exports",
        description="Work on the nuggets in the store.",
    )
    commands = group.add_subparsers(dest="nuggets_command", metavar="ACTION")
    commands.required = True

    p = commands.add_parser(
        "locate",
        help="find text-only nuggets in their turn's passages and record the offsets",
        description="For every nugget of --source without offsets, look for its text in the turn's passages "
        "(response provenance first, then the pool by rank): exactly, then ignoring case, spacing, "
        "quotes and final punctuation. Found: passage id and code-point offsets are stored. "
        "Otherwise the nugget stays free text (also when no passage of the turn has text).",
    )
    add_db_argument(p)
    p.add_argument("--source", default="human", help="nugget source (default human)")
    p.add_argument("--relocate", action="store_true", help="look again for nuggets that already have offsets")
    p.add_argument("--json", action="store_true", help="print the counts as JSON")
    p.set_defaults(func=cmd_locate)

    p = commands.add_parser(
        "suggest-duplicates",
        help="score nugget pairs both ways and store duplicate suggestions",
        description="Per turn, score P(a entails b) and P(b entails a) for every pair of the source's nuggets "
        "and store the pairs at or above --threshold for assessors to confirm or reject (Duplicates "
        "page). Default judge: token containment; --nli MODEL uses an NLI cross-encoder.",
    )
    add_db_argument(p)
    p.add_argument("--source", required=True, help="nugget source")
    p.add_argument("--turn", action="append", dest="turns", metavar="TURN", help="only this turn (repeatable)")
    p.add_argument("--threshold", type=float, default=0.5, help="minimum score in either direction (default 0.5)")
    p.add_argument("--nli", metavar="MODEL", help="NLI model (Hugging Face name or local folder)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_suggest)

    p = commands.add_parser(
        "study",
        help="create or update a GFRC2 study (attribute sets, levels, L)",
        description='Attribute sets as JSON (a file or inline): [{"name": "PRONOUN", "kind": "nominal", '
        '"groups": ["he", "she", "other"], "target": [...]?, "divergence": "JSD"?}, ...]; the '
        "target defaults to uniform, the divergence to JSD (nominal) / RNOD (ordinal).",
    )
    add_db_argument(p)
    p.add_argument("name")
    p.add_argument("--attributes", required=True, help="JSON file or inline JSON list of attribute sets")
    p.add_argument("--max-level", type=int, default=2, help="relevance levels 1..MAX (default 2)")
    p.add_argument("--L", type=int, default=1000, dest="L", help="words a user reads at most (default 1000)")
    p.set_defaults(func=cmd_study)

    p = commands.add_parser(
        "export-gfrc2",
        help="the response nuggets of a study as a `score gfrc2` input",
        description="One conversation '<run>/<conversation>' per run and conversation.",
    )
    add_db_argument(p)
    p.add_argument("--study", required=True)
    p.add_argument("--run", action="append", dest="runs", metavar="RUN", help="only this run (repeatable)")
    p.add_argument("--output", "-o", help="file to write (default stdout)")
    p.set_defaults(func=cmd_export_gfrc2)

    p = commands.add_parser(
        "export-aepd",
        help="the aspects of the turns as a `score aepd` input",
        description="One entry '<run>/<turn>' per run with a response to a turn that has aspects.",
    )
    add_db_argument(p)
    p.add_argument("--run", action="append", dest="runs", metavar="RUN", help="only this run (repeatable)")
    p.add_argument("--output", "-o", help="file to write (default stdout)")
    p.set_defaults(func=cmd_export_aepd)


def _open(args):
    from assess.cli.data import _open as open_store

    return open_store(args)


def _write(document: dict, output: str | None) -> None:
    text = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    if output:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


def cmd_locate(args) -> int:
    from store.nuggets import gold

    counts = gold.locate_nuggets(_open(args), args.source, relocate=args.relocate)
    if args.json:
        print(json.dumps({"source": args.source, **counts}))
        return 0
    print(f"{args.source}: {counts['nuggets']} nuggets")
    print(f"  located     {counts['located']:6} ({counts['exact']} exact, {counts['normalised']} normalised)")
    if counts["already_located"]:
        print(f"  had offsets {counts['already_located']:6} (use --relocate to look again)")
    print(
        f"  free text   {counts['free_text']:6} ({counts['not_found']} not found in the passage texts, "
        f"{counts['no_passage_text']} in turns without any passage text)"
    )
    return 0


def cmd_suggest(args) -> int:
    from assess.nuggets.dedup import LexicalEntailment, judge_name
    from store.nuggets import duplicates, gold

    db = _open(args)
    judge = LexicalEntailment()
    if args.nli:
        from assess.llm.clients import NliJudge

        judge = NliJudge(args.nli)
    threshold = args.threshold
    turns = args.turns or sorted(gold.nugget_turns(db, args.source))
    found = {t: duplicates.suggest_duplicates(db, args.source, t, judge, threshold=threshold) for t in turns}
    if args.json:
        print(
            json.dumps(
                {
                    "source": args.source,
                    "judge": judge_name(judge),
                    "threshold": threshold,
                    "pairs": sum(found.values()),
                    "per_turn": found,
                }
            )
        )
    else:
        print(
            f"{args.source}: {sum(found.values())} suggested pairs over {len(turns)} turns "
            f"({judge_name(judge)}, threshold {threshold})"
        )
    return 0


def cmd_study(args) -> int:
    from pathlib import Path

    from assess.nuggets.documents import parse_attributes_json
    from store.nuggets import responses

    raw = args.attributes
    text = Path(raw).read_text(encoding="utf-8") if not raw.lstrip().startswith("[") else raw
    attributes = parse_attributes_json(text, where="--attributes")
    config = responses.save_study(_open(args), args.name, attributes, max_level=args.max_level, L=args.L)
    print(
        f"study {config['name']}: "
        + "; ".join(f"{a['name']} ({a['kind']}, {'/'.join(a['groups'])})" for a in config["attributes"])
    )
    return 0


def cmd_export_gfrc2(args) -> int:
    from store.nuggets import responses

    _write(responses.gfrc2_export(_open(args), args.study, runs=args.runs), args.output)
    return 0


def cmd_export_aepd(args) -> int:
    from store.nuggets import aspects

    _write(aspects.aepd_export(_open(args), runs=args.runs), args.output)
    return 0
