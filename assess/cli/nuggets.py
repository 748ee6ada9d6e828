"""`python -m assess nuggets ...`: locate imported nuggets in passages, suggest duplicates, GFRC2 studies,
and export what was marked in the workbench as ``score gfrc2`` / ``score aepd`` inputs."""

from __future__ import annotations

import json
import sys

from assess.cli import add_db_argument, check_options, data_output
from assess.cli.banks import add_bank_commands
from assess.cli.common import open_store, print_json, table
from assess.llm import clients
from assess.nuggets import dedup, documents
from assess.services import matching, nuggets, session


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

    p = commands.add_parser(
        "match",
        help="CONE-RAG's automatic matching: gold nuggets against runs' responses, stored as NtR labels",
        description="Match every gold nugget of --gold against the responses of each --run and store the "
        "matches as NtR labels (1 matched, 0 not) of an LLM or NLI label source, which `score nuggets "
        "--ntr-source SOURCE` then scores. --method ntr: the nugget against the whole response (chat: the "
        "ntr-match yes/no prompt; nli: P(response entails nugget) >= --threshold). --method ntn: the "
        "response's nuggets are extracted first by a chat model (the response-nuggets prompt; only for "
        "responses without them), then a gold nugget is matched when at least one extracted nugget "
        "entails it (CONE-RAG Eq. 2, one direction: extracted => gold; nli: P >= --threshold; chat: the "
        "ntr-match prompt per pair, any yes). Each answer is stored with its label in one transaction: a "
        "re-run asks only for what is missing, answers of another source to the same input are copied. "
        "Empty responses are skipped.",
    )
    add_db_argument(p)
    p.add_argument("--gold", required=True, metavar="SOURCE", help="the gold nugget set (a nugget source)")
    p.add_argument("--run", action="append", dest="runs", required=True, metavar="RUN", help="a run (repeatable)")
    p.add_argument("--method", choices=("ntn", "ntr"), required=True, help="ntn: nugget to nugget; ntr: to response")
    p.add_argument("--backend", choices=("chat", "nli"), required=True, help="chat: an LLM; nli: a local NLI model")
    p.add_argument(
        "--model",
        help="chat: the model (default $ASSESS_LLM_MODEL); nli: a Hugging Face name or local folder "
        "(default $ASSESS_NLI_MODEL, else MoritzLaurer/DeBERTa-v3-base-mnli-fever-anli)",
    )
    p.add_argument("--endpoint", metavar="URL", help="OpenAI-compatible base URL (default $ASSESS_LLM_BASE_URL)")
    p.add_argument(
        "--source",
        help="the label source written (default: llm:MODEL / nli:MODEL for ntr, llm-ntn:MODEL / nli-ntn:MODEL for ntn)",
    )
    p.add_argument(
        "--extract-model",
        metavar="M",
        help="ntn: the chat model extracting response nuggets (default: --model with --backend chat, "
        "else $ASSESS_LLM_MODEL)",
    )
    p.add_argument(
        "--nuggets-source",
        metavar="SOURCE",
        help="ntn: the LLM source whose extracted response nuggets are used and completed (default llm:EXTRACT-MODEL)",
    )
    p.add_argument("--threshold", type=float, default=0.5, help="nli: P(entailment) that counts (default 0.5)")
    p.add_argument("--batch", type=int, default=32, metavar="N", help="nli: pairs per forward pass (default 32)")
    p.add_argument("--device", help="nli: cpu, cuda, ... (default: cuda when available)")
    p.add_argument("--concurrency", type=int, default=16, help="chat: calls in flight (default 16)")
    p.add_argument("--limit", type=int, metavar="N", help="at most N new items per step (extraction, matching)")
    p.add_argument(
        "--join",
        action="store_true",
        help="chat backend (ntr or ntn): work on the shared job of --source with other processes, on one host or "
        "several (as prejudge --join; ntn: the extraction's shared job first)",
    )
    p.add_argument("--block-size", type=int, help="--join: items per claimed block of a new job (default 200)")
    p.add_argument("--lease", type=float, metavar="SECONDS", help="--join: how long an abandoned block stays claimed")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.set_defaults(func=cmd_match)

    p = commands.add_parser(
        "spans-agreement",
        help="pairwise agreement of nugget spans: exact and overlap span F1, unit-level Cohen's kappa",
        description="For every pair of nugget sources (assessors) that marked spans in a common turn: over "
        "the turns both marked and every passage there either marked, the exact-match and overlap span F1 and "
        "Cohen's kappa of covered / not covered per character (--unit char) or word (--unit word). "
        "docs/nuggets.md#span-agreement.",
    )
    add_db_argument(p)
    p.add_argument("--source", action="append", dest="sources", metavar="SOURCE", help="only this source (repeatable)")
    p.add_argument("--unit", choices=("char", "word"), default="char", help="kappa's unit (default char)")
    p.add_argument("--json", action="store_true", help="print the pairs as one JSON list")
    p.set_defaults(func=cmd_spans_agreement)

    add_bank_commands(commands)  # nuggets bank import|export|import-matches|score (RAGTIME nugget banks)


def _write(document: dict, output: str | None) -> None:
    text = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    if output:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        data_output().write(text)


def cmd_locate(args) -> int:
    counts = nuggets.locate_nuggets(open_store(args), args.source, relocate=args.relocate)
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


def cmd_spans_agreement(args) -> int:
    pairs = nuggets.span_agreement(open_store(args), args.sources, unit=args.unit)
    if args.json:
        print_json(pairs)
        return 0
    if not pairs:
        print("no two sources marked nugget spans in a common turn")
        return 0
    columns = ["a", "b", "turns", "passages", "spans_a", "spans_b", "exact_f1", "overlap_f1", "kappa", "units"]
    table([*columns[:-2], f"kappa ({args.unit})", f"{args.unit}s"], [[p[c] for c in columns] for p in pairs])
    return 0


def cmd_suggest(args) -> int:
    db = open_store(args)
    judge = dedup.LexicalEntailment()
    if args.nli:
        judge = clients.NliClient(args.nli)
    threshold = args.threshold
    found = nuggets.suggest_duplicates(db, args.source, args.turns, judge, threshold=threshold)
    turns = args.turns or list(found)
    if args.json:
        print(
            json.dumps(
                {
                    "source": args.source,
                    "judge": dedup.judge_name(judge),
                    "threshold": threshold,
                    "pairs": sum(found.values()),
                    "per_turn": found,
                }
            )
        )
    else:
        print(
            f"{args.source}: {sum(found.values())} suggested pairs over {len(turns)} turns "
            f"({dedup.judge_name(judge)}, threshold {threshold})"
        )
    return 0


def cmd_study(args) -> int:
    from pathlib import Path

    raw = args.attributes
    text = Path(raw).read_text(encoding="utf-8") if not raw.lstrip().startswith("[") else raw
    attributes = documents.parse_attributes_json(text, where="--attributes")
    config = nuggets.save_study_attributes(open_store(args), args.name, attributes, max_level=args.max_level, L=args.L)
    print(
        f"study {config['name']}: "
        + "; ".join(f"{a['name']} ({a['kind']}, {'/'.join(a['groups'])})" for a in config["attributes"])
    )
    return 0


def cmd_export_gfrc2(args) -> int:
    _write(nuggets.gfrc2_document(open_store(args), args.study, runs=args.runs), args.output)
    return 0


def cmd_export_aepd(args) -> int:
    _write(nuggets.aepd_document(open_store(args), runs=args.runs), args.output)
    return 0


def cmd_match(args) -> int:
    check_options(args, counts={"--limit": "limit"})
    request = matching.MatchRequest(
        method=args.method,
        backend=args.backend,
        gold=args.gold,
        runs=tuple(args.runs),
        source=args.source,
        model=args.model,
        endpoint=args.endpoint,
        extract_model=args.extract_model,
        nuggets_source=args.nuggets_source,
        threshold=args.threshold,
        batch=args.batch,
        device=args.device,
        concurrency=args.concurrency,
        limit=args.limit,
        join=args.join,
        block_size=args.block_size,
        lease=args.lease,
    )
    db = open_store(args)
    try:
        result = matching.match(db, request)
    except KeyboardInterrupt:
        print("stopped: every match stored so far is kept; run the same command again to resume", file=sys.stderr)
        return 130
    out = result.report
    out["score"] = (
        f"python -m assess score nuggets --db {session.location(args.db)} --ntr-source {result.source} "
        f"--nugget-source {args.gold}"
    )
    if args.json:
        print(json.dumps(out))
        return 0
    _print_match(out)
    return 0


def _print_match(out: dict) -> None:
    extraction = out.get("extraction")
    if "nuggets_source" in out:
        if extraction is None:
            print(f"response nuggets of {out['nuggets_source']}: every response of the runs has them")
        else:
            print(
                f"response nuggets of {out['nuggets_source']}: {extraction['asked']} asked, {extraction['copied']} "
                f"from cache, {extraction['already']} already extracted, {extraction['unparseable']} unparseable, "
                f"{extraction['error']} failed"
            )
    s = out["matching"]
    skipped = f", {s['skipped']} {s['skipped_reason']} left out" if s.get("skipped") else ""
    deferred = f", {s['deferred']} left for later (--limit)" if s.get("deferred") else ""
    matched = f", {s['matched']} matched" if "matched" in s else ""
    print(
        f"{s['source']} {out['method']} ({s['prompt_version']}): {s['covered']} items{skipped}; {s['already']} "
        f"already stored, {s['asked']} asked, {s['copied']} from cache{matched}{deferred}; "
        f"{s['unparseable']} unparseable, {s['error']} failed"
    )
    if "worker" in s:  # --join: this worker's share above, the job's total here
        print(
            f"job {s['job']} {s['status']}: {s['job_done']} of {s['job_planned']} stored (this was worker {s['worker']})"
        )
    print(f"score them: {out['score']}")
