"""`python -m assess score nuggets` and `score citations`: the scores of RAG responses (nugget recall, citation
support), registered by :mod:`assess.cli.score` after its other measures; its module docstring says what each prints."""

from __future__ import annotations

import argparse
import sys

from assess.cli import add_db_argument
from assess.cli.common import open_store, print_json, table
from assess.errors import FormatError
from assess.measures.nugget_recall import UNJUDGED_DEFAULT
from assess.services import rag
from assess.services import scores as scores_service

_ORGANIZERS = "organizers"  # the PTKB label source the topics' ptkb_provenance is imported as


class _Default(str):
    """``--personal`` given without a value (the store form then uses the organizers' PTKB labels)."""


_PERSONAL_DEFAULT = _Default(_ORGANIZERS)


def add_nuggets(commands) -> None:
    p = commands.add_parser(
        "nuggets",
        help="nugget scores per run: CONE-RAG NtR / NtN, TREC RAG All / Vital / Weighted",
        description="NtR recall per run from yes/no labels, and/or NtN from entailment matches, and/or the "
        "AutoNuggetizer All / Vital / Weighted scores (strict and lax) with NtR recall at both "
        "thresholds from nuggetizer assignment files, against a gold nugget set (and optionally its "
        "de-duplicated version). Files: --gold with --matches, --ntn and/or --assignments "
        "(--assignments alone scores each record against its own nugget list). Store: --ntr-source "
        "SOURCE scores the NtR labels stored for that source (an assessor of the NtR page, "
        "crowd:NAME, llm:MODEL, an import) against a stored nugget set: yes/no NtR recall (ntr_recall, "
        "when the source has yes/no labels) and, as the RAG tab of /scores computes them, NtR recall strict "
        "(support) and lax (support or partial support) and All / Vital / Weighted strict and lax "
        "(nugget_scores) from its graded labels, a yes/no label read as support / no support, with the "
        "importance labels of --importance-source (a gold nugget without one counts as okay). Every file is checked "
        "before scoring (exit 2 naming file, line or JSON path, expected vs found); labels of "
        "unknown turns or nuggets, unjudged gold nuggets and gold turns without labels are reported "
        "as warnings on stderr (and in the JSON output), never dropped silently.",
    )
    p.add_argument(
        "--gold",
        help='gold nuggets: CONE-RAG JSON {turn: {"[k]": {"text", "relevance"}}} or nuggetizer nugget JSONL '
        '({"qid", "nuggets": [{"text", "importance"}]} per line; see --gold-format)',
    )
    p.add_argument(
        "--gold-dedup",
        help="de-duplicated gold nuggets (same layout as --gold): also score against it; must be a subset of --gold",
    )
    p.add_argument(
        "--gold-format",
        choices=("auto", "cone-rag", "nuggetizer"),
        default="auto",
        help="layout of --gold/--gold-dedup: auto (default) reads nuggetizer JSONL when the first line is an "
        'object with "qid" and "nuggets", else CONE-RAG JSON',
    )
    p.add_argument(
        "--assignments",
        action="append",
        metavar="FILE",
        help="nuggetizer assignment JSONL ({qid, run_id, nuggets: [{text, importance, assignment: "
        "support|partial_support|not_support}]} per line; repeatable): All / Vital / Weighted strict and lax",
    )
    p.add_argument(
        "--per-turn", action="store_true", help="text output: also one row per turn (the JSON output always has them)"
    )
    p.add_argument("--matches", help="NtR labels TSV: <batch>_<conv>_<turn>_<k>_<run> TAB <0|1>")
    p.add_argument(
        "--ntn", help='NtN matches JSON {run: {turn: {"response": [ids], "pairs": [[response id, gold id], ...]}}}'
    )
    add_db_argument(p)
    p.add_argument(
        "--ntr-source",
        metavar="SOURCE",
        help="store: score the NtR labels of this source (assessor, crowd:NAME, llm:MODEL) from --db",
    )
    p.add_argument(
        "--nugget-source",
        metavar="SOURCE",
        help="store: the gold nugget set (default: the one set the labels refer to)",
    )
    p.add_argument(
        "--importance-source",
        metavar="SOURCE",
        help="store: the nugget importance labels (vital / okay) the Vital and Weighted scores read (default: "
        "those of the nugget set's own source, when it has any, e.g. from import nuggetizer-nuggets); a gold "
        "nugget without an importance label counts as okay (as on /scores; their number is reported)",
    )
    p.add_argument(
        "--dedup", action="store_true", help="store: also score against the de-duplicated subset of the nugget set"
    )
    p.add_argument(
        "--unjudged",
        choices=("no", "ignore"),
        default=UNJUDGED_DEFAULT,
        help="gold nuggets without a label count as not captured / not supported (no, the default, as the "
        "library and the CONE-RAG reference code, which asks every gold nugget; their number is reported) "
        "or are left out of the denominators (ignore, for partially labelled studies)",
    )
    p.add_argument(
        "--empty-gold",
        choices=("zero", "skip"),
        default="zero",
        help="NtN: a turn without gold nuggets counts 0 for recall (zero, as the reference code) or is skipped",
    )
    p.add_argument(
        "--personal",
        nargs="?",
        const=_PERSONAL_DEFAULT,
        metavar="FILE|SOURCE",
        help="split personal / non-personal turns (a turn with >= 1 relevant PTKB statement). Files: PTKB "
        "qrels (<turn> 0 <statement> <0|1>) or iKAT topics JSON (turns with ptkb_provenance). "
        "Store: a PTKB label source (default organizers, the topics' provenance) or such a file",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_nuggets)


def add_citations(commands) -> None:
    p = commands.add_parser(
        "citations",
        help="citation recall, precision and supported share per run from stored citation labels",
        description="Citation support of generated responses from the citation labels stored for --source "
        "(the /citations page, an LLM's prejudge citation task): per run ALCE's citation recall and "
        "citation precision (Gao, Yen, Yu & Chen 2023, 'Enabling Large Language Models to Generate Text "
        "with Citations', section 2.3; a label stands for ALCE's NLI verdict: strict counts fully "
        "supported citations, lax also partially supported ones; docs/measures.md) and the share of "
        "sentences with at least one supporting citation, strict and lax; the numbers of the RAG tab of "
        "/scores. A response with an unlabelled citation is not scored, and while a run is partly labelled "
        "neither are its responses that cite nothing (they score 0 once every citation of the run is "
        "labelled, as in ALCE): they are reported as counts (unlabelled, uncited_left_out, "
        "unlabelled_citations) with the labelled share of the run's citations (coverage), never counted as "
        "zeros. Citations labelled 'cannot judge' count as labelled and are left out of every score, never "
        "read as 0 or unsupported (cannot_judge: how many). A citation labelled 'contradicts' (-2) counts as not "
        "supported; when the source has one, every row adds contradicts (how many) and contradiction_rate "
        "(contradicting / judged citations). Unknown source or run: exit 2.",
    )
    add_db_argument(p)
    p.add_argument(
        "--source", required=True, metavar="SOURCE", help="the citation label source (an assessor, llm:MODEL)"
    )
    p.add_argument(
        "--run",
        action="append",
        dest="runs",
        metavar="RUN",
        help="only this run (repeatable; default: every run the source labelled)",
    )
    p.add_argument("--per-response", action="store_true", help="also one row per response")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_citations)


# ----------------------------------------------------------------------------------------------
# Handlers: the arguments, one call of assess.services.scores, the output


def _nuggets(args: argparse.Namespace) -> int:
    files = ("gold", "gold_dedup", "matches", "ntn", "assignments")
    if args.ntr_source:
        given = [f"--{n.replace('_', '-')}" for n in files if getattr(args, n)]
        if given:
            raise FormatError(
                "arguments",
                None,
                "either files (--gold ...) or the store (--ntr-source)",
                f"--ntr-source with {', '.join(given)}",
            )
        return _nuggets_from_store(args)
    if args.dedup or args.nugget_source or args.importance_source:
        raise FormatError(
            "arguments",
            None,
            "--dedup, --nugget-source and --importance-source with --ntr-source (files: --gold-dedup FILE)",
            "--dedup" if args.dedup else "--nugget-source" if args.nugget_source else "--importance-source",
        )
    if not args.gold and not args.assignments:
        raise FormatError(
            "arguments", None, "--gold FILE (with --matches/--ntn/--assignments) or --ntr-source SOURCE", "neither"
        )
    if not args.matches and not args.ntn and not args.assignments:
        raise FormatError(
            "arguments", None, "--matches (NtR labels), --ntn (NtN matches) and/or --assignments", "none of them"
        )
    if not args.gold and (args.matches or args.ntn or args.gold_dedup):
        raise FormatError("arguments", None, "--gold FILE with --matches, --ntn or --gold-dedup", "no --gold")
    if args.personal is _PERSONAL_DEFAULT:
        raise FormatError("--personal", None, "a PTKB qrels or topics file", "no file")

    out = scores_service.nugget_file_scores(
        gold=args.gold,
        gold_dedup=args.gold_dedup,
        gold_format=args.gold_format,
        matches=args.matches,
        ntn=args.ntn,
        assignments=args.assignments,
        personal=args.personal,
        unjudged=args.unjudged,
        empty_gold=args.empty_gold,
    )
    _print_warnings(out)
    if args.json:
        print_json(out)
        return 0
    split = bool(args.personal)
    split_cols = ["personal", "non-personal"] if split else []
    sections = []
    if "ntr_recall" in out:
        sections.append(lambda: _ntr_text(out, args, split))
    if "ntn" in out:
        sections.append(
            lambda: (
                print(f"NtN (turns without gold nuggets: {args.empty_gold})"),
                table(
                    ["run", "gold", "measure", "value", "turns", *split_cols],
                    [
                        [run, name, m, *_cells(row[m], split)]
                        for run, per in out["ntn"]["runs"].items()
                        for name, row in per.items()
                        for m in ("recall", "precision")
                    ],
                ),
            )
        )
    if "nugget_scores" in out:
        sections.append(lambda: _graded_text(out["nugget_scores"], args))
    for i, section in enumerate(sections):
        if i:
            print()
        section()
    return 0


def _print_warnings(out: dict) -> None:
    for line in out.get("warnings", ()):
        print(f"warning: {line}", file=sys.stderr)


def _ntr_text(out: dict, args: argparse.Namespace, split: bool) -> None:
    print(f"NtR recall (unjudged gold nuggets: {args.unjudged})")
    _ntr_table(out["ntr_recall"], split)
    if args.per_turn:
        print()
        table(
            ["run", "gold", "turn", "recall"],
            [
                [run, name, turn, value]
                for run, per in out["ntr_recall"]["runs"].items()
                for name, row in per.items()
                for turn, value in row["per_turn"].items()
            ],
        )


def _graded_text(scores: dict, args: argparse.Namespace) -> None:
    names = scores["scores"]
    print(
        f"TREC RAG nugget scores (strict: support only; lax: partial support counts 0.5, NtR lax counts it 1; "
        f"unjudged gold nuggets: {scores['unjudged']})"
    )
    table(
        ["run", "gold", "turns", *names],
        [
            [run, name, row["n_turns"], *(row["mean"][m] for m in names)]
            for run, per in scores["runs"].items()
            for name, row in per.items()
        ],
    )
    if args.per_turn:
        print()
        table(
            ["run", "gold", "turn", *names],
            [
                [run, name, turn, *(v[m] for m in names)]
                for run, per in scores["runs"].items()
                for name, row in per.items()
                for turn, v in row["per_turn"].items()
            ],
        )


def _cells(row: dict, split: bool) -> list:
    extra = [row["personal"]["mean"], row["non_personal"]["mean"]] if split else []
    return [row["mean"], row["n_turns"], *extra]


def _ntr_table(ntr: dict, split: bool) -> None:
    table(
        ["run", "gold", "recall", "turns", *(["personal", "non-personal"] if split else [])],
        [[run, name, *_cells(row, split)] for run, per in ntr["runs"].items() for name, row in per.items()],
    )


def _nuggets_from_store(args: argparse.Namespace) -> int:
    """``score nuggets --ntr-source SOURCE``: NtR recall and the graded nugget scores from the stored labels."""

    out = scores_service.stored_nugget_scores(
        open_store(args),
        args.ntr_source,
        nugget_source=args.nugget_source,
        importance_source=args.importance_source,
        personal=args.personal,
        dedup=args.dedup,
        unjudged=args.unjudged,
    )
    _print_warnings(out)
    if args.json:
        print_json(out)
        return 0
    yes_no = "ntr_recall" in out
    if yes_no:
        print(
            f"NtR recall of {out['ntr_source']} on nugget set {out['nugget_source']} ({out['labels']} labels; "
            f"unjudged gold nuggets: {args.unjudged}"
            + (f"; personal = a relevant PTKB statement by {out['personal']}" if args.personal else "")
            + ")"
        )
        _ntr_table(out["ntr_recall"], bool(args.personal))
    else:
        print(f"Graded NtR labels of {out['ntr_source']} on nugget set {out['nugget_source']} ({out['labels']} labels)")
    ignored = out["ignored_labels"]
    if ignored["other_nugget_sets"] or ignored["empty_responses"]:
        print(
            f"\nleft out: {ignored['other_nugget_sets']} labels on nuggets of other sets, "
            f"{ignored['empty_responses']} on empty responses"
        )
    if args.dedup and yes_no and out["dedup_unknown_turns"]:
        print(
            f"\nde-duplication undecided in {len(out['dedup_unknown_turns'])} turn(s) "
            f"({', '.join(out['dedup_unknown_turns'][:10])}{' …' if len(out['dedup_unknown_turns']) > 10 else ''}): "
            f"their undecided nuggets are not in the de-duplicated set"
        )
    print()
    _graded_text(out["nugget_scores"], args)
    importance_source = out["importance_source"]
    without = out["nugget_scores"]["notes"]["without_importance"]
    shown = f"importance: labels of {importance_source}" if importance_source else "importance: no labels"
    if without:
        shown += f" ({without} gold nugget(s) without an importance label count as okay)"
    print(shown)
    return 0


def _citations(args: argparse.Namespace) -> int:
    """``score citations --db PATH --source SOURCE``: citation measures from the stored citation labels."""

    out = scores_service.citation_scores(open_store(args), args.source, args.runs, per_response=args.per_response)
    _print_warnings(out)
    if args.json:
        print_json(out)
        return 0
    print(
        f"Citation support labels of {args.source} (ALCE citation recall / precision; strict: fully supported, "
        "lax: fully or partially; supported: share of sentences with a supporting citation, the mean per "
        "response; supported_micro: pooled over the run's sentences)"
    )
    counts = [
        "responses",
        "unlabelled",
        "uncited",
        "uncited_left_out",
        "unlabelled_citations",
        "coverage",
        "cannot_judge",
        "sentences",
        "citations",
    ]
    # A source with a 'contradicts' label: its rows also say how many citations contradict, and their share.
    extra = list(rag.CONTRADICTION_FIELDS) if any("contradicts" in r for r in out["runs"].values()) else []
    scores = [*rag.CITATION_SCORES, *extra]
    pooled = [*rag.CITATION_SCORES, *rag.POOLED_SCORES, *extra]  # a run's row adds the pooled shares
    table(
        ["run", *counts, *pooled],
        [[run, *(r[c] for c in counts), *(r[m] for m in pooled)] for run, r in out["runs"].items()],
    )
    if args.per_response:
        print()
        columns = ["labelled", "unlabelled_citations", "cannot_judge", "sentences", "citations"]
        table(
            ["run", "turn", *columns, *scores],
            [[r["run"], r["turn"], *(r[c] for c in columns), *(r[m] for m in scores)] for r in out["per_response"]],
        )
    return 0
