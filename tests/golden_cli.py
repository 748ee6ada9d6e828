#!/usr/bin/env python
"""Golden-output harness for the command line (`python -m assess`): record, then compare.

Not a pytest test (the name does not match test_*.py). Usage:

    python tests/golden_cli.py record --repo /work/baseline --out /tmp/golden_base
    python tests/golden_cli.py record --repo /work/main     --out /tmp/golden_new
    python tests/golden_cli.py compare /tmp/golden_base /tmp/golden_new    # exit 0 identical, 1 different

`record` runs every scenario below against the code in --repo: each command is
`sys.executable -m assess ARGS` with cwd = the repo, each scenario in its own fresh temporary
directory (the store is `<TMP>/assess.db`, given by $ASSESS_DB; fixtures and export files live
there too). Per command it writes one text file `<scenario>/<NNN>.txt` holding the command, the exit
code, stdout, stderr and every file the command created or changed in the temporary directory (the
store and its -wal/-shm files excepted; a Parquet file is written as its schema and rows as CSV,
since its bytes embed writer metadata).

Environment of each command: the caller's environment minus every ASSESS_*, OPENAI_* and
BROWSER_PATH variable, plus ASSESS_DB=<TMP>/assess.db, PYTHONHASHSEED=0, PYTHONPATH=<repo>,
PYTHONDONTWRITEBYTECODE=1 (nothing is written into the repo), COLUMNS=100 (argparse wraps help to
the terminal width), TZ=UTC. No command needs an LLM endpoint or the network: `prejudge` is run only
with --estimate (against an unreachable local base URL) or into its "no endpoint" error.

Normalisations, applied to stdout, stderr and captured files (and nothing else):
  1. the scenario's temporary directory (its real path)      -> <TMP>
  2. the repo's absolute path (the demo is loaded from <repo>/assets/demo, so import summaries and
     the `sources`/`label_history` tables name it)              -> <REPO>
  3. ISO-8601 timestamps written by the store (created_at, at, added_at, answered_at, ...):
        r"\\d{4}-\\d{2}-\\d{2}[T ]\\d{2}:\\d{2}:\\d{2}(?:\\.\\d+)?(?:Z|[+-]\\d{2}:?\\d{2})?"  -> <TIME>
Nothing else varies between two runs of the same code (checked by recording the baseline twice).

Files whose name starts with "_" in a record directory (timings) are ignored by `compare`.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

DATA = Path(os.environ.get("GOLDEN_DATA", "/work/shared/data"))  # the public iKAT / CONE-RAG files
CASES = Path(os.environ.get("GOLDEN_CASES", "/work/shared/cases"))  # shared worked examples

TIMESTAMP = re.compile(rb"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?")
DB_FILES = re.compile(r"\.db(-wal|-shm|-journal)?$")


# ------------------------------------------------------------------------------------------------
# Scenarios


@dataclass
class Step:
    args: list[str]  # after `python -m assess`; "{TMP}" is replaced by the temporary directory
    timeout: float = 300


@dataclass
class Scenario:
    name: str
    steps: list[Step]
    fixtures: dict[str, object] = field(default_factory=dict)  # file name -> str | bytes | callable(tmp) -> str
    needs: list[Path] = field(default_factory=list)  # skip the scenario when one is missing


def S(*args: str, timeout: float = 300) -> Step:
    return Step(list(args), timeout)


DEMO = "assets/demo"
RUNS = [f"{DEMO}/runs/demo-bm25.run", f"{DEMO}/runs/demo-dense.run", f"{DEMO}/runs/demo-rerank.run"]

HELP_COMMANDS = [
    [],
    ["init"],
    ["import"],
    ["export"],
    ["assign"],
    ["history"],
    ["stats"],
    ["score"],
    ["score", "gfrc2"],
    ["score", "aepd"],
    ["score", "runs"],
    ["score", "nuggets"],
    ["agreement"],
    ["prejudge"],
    ["jobs"],
    ["pool"],
    ["pool", "adaptive"],
    ["anchoring"],
    ["crowd"],
    ["crowd", "create"],
    ["crowd", "status"],
    ["crowd", "report"],
    ["crowd", "decide"],
    ["crowd", "aggregate"],
    ["crowd", "export"],
    ["crowd", "import"],
    ["crowd", "close"],
    ["nuggets"],
    ["nuggets", "locate"],
    ["nuggets", "suggest-duplicates"],
    ["nuggets", "study"],
    ["nuggets", "export-gfrc2"],
    ["nuggets", "export-aepd"],
]

TABLES = (
    "passage_labels",
    "ptkb_labels",
    "nuggets",
    "ntr_labels",
    "response_labels",
    "gold_responses",
    "label_history",
    "pool",
    "rankings",
    "sources",
    "assignments",
)


def _demo_qrels_variant(shift: int, every: int) -> str:
    """A second passage qrels over the demo pool (deterministic): the LLM grade moved by ``shift`` on
    every ``every``-th line, clipped to 0..4."""
    out = []
    for i, line in enumerate(Path(DEMO, "llm-passages.qrels").read_text().splitlines()):
        turn, it, pid, grade = line.split()
        g = int(grade)
        if i % every == 0:
            g = min(4, max(0, g + shift))
        out.append(f"{turn} {it} {pid} {g}\n")
    return "".join(out)


def _demo_nist_changed() -> str:
    """The demo 'nist' qrels again with three grades changed (label history) and one line removed."""
    lines = _demo_qrels_variant(-1, 3).splitlines()
    changed = []
    for i, line in enumerate(lines):
        turn, it, pid, grade = line.split()
        if i in (0, 1, 7):
            grade = str((int(grade) + 2) % 5)
        changed.append(f"{turn} {it} {pid} {grade}\n")
    return "".join(changed)


def _demo_ptkb_run() -> str:
    """A PTKB statement ranking of the demo turns (statements by LLM label, then by number descending)."""
    rows: dict[str, list[tuple[int, str]]] = {}
    for line in Path(DEMO, "llm-ptkb.qrels").read_text().splitlines():
        turn, _it, stmt, grade = line.split()
        rows.setdefault(turn, []).append((int(grade), stmt))
    out = []
    for turn, items in rows.items():
        for rank, (grade, stmt) in enumerate(sorted(items, key=lambda x: (-x[0], -int(x[1]))), 1):
            out.append(f"{turn} Q0 {stmt} {rank} {10 - rank + grade} ptkb-demo\n")
    return "".join(out)


NTN_DEMO = json.dumps(
    {
        "demo-bm25": {
            "101_1": {"response": ["r1", "r2", "r3"], "pairs": [["r1", "[1]"], ["r3", "[2]"]]},
            "101_2": {"response": ["r1"], "pairs": []},
            "102_1": {"response": ["r1", "r2"], "pairs": [["r2", "[1]"]]},
        },
        "demo-dense": {
            "101_1": {"response": ["r1"], "pairs": [["r1", "[3]"]]},
            "101_2": {"response": ["r1", "r2"], "pairs": [["r1", "[1]"], ["r2", "[2]"]]},
            "102_1": {"response": [], "pairs": []},
        },
    },
    indent=1,
)

CROWD_PILOT = (
    "0_101_1_1_demo-bm25\t1\tw1\n0_101_1_1_demo-bm25\t0\tw2\n0_101_1_1_demo-bm25\t1\tw3\n"
    "0_101_1_2_demo-bm25\t1\tw1\n0_101_1_2_demo-bm25\t1\tw2\n0_101_1_2_demo-bm25\t0\tw3\n"
    "1_101_2_1_demo-dense\t0\tw1\n1_101_2_1_demo-dense\t0\tw3\n1_101_2_2_demo-dense\t1\tw2\n"
    "2_102_1_1_demo-rerank\t1\tw2\n2_102_1_1_demo-rerank\t1\tw3\n"
)

ATTRIBUTES = json.dumps(
    [
        {"name": "PRONOUN", "kind": "nominal", "groups": ["he", "she", "other"]},
        {"name": "AGE", "kind": "ordinal", "groups": ["young", "middle", "old"], "target": [0.2, 0.5, 0.3]},
    ]
)

GUIDELINE = json.dumps({"title": "Golden pilot", "consent": "You agree.", "instructions": "Answer Y or N."})


def scenario_help() -> Scenario:
    steps = [S(*cmd, "--help") for cmd in HELP_COMMANDS]
    steps += [
        S(),
        S("bogus"),
        S("score"),
        S("crowd"),
        S("nuggets"),
        S("pool"),
        S("import", "qrels"),
        S("export", "xml", "--source", "x"),
        S("agreement", "--a", "x"),
        S("score", "runs", "--qrels", "q"),
    ]
    return Scenario("help", steps)


def scenario_demo_store() -> Scenario:
    t = "{TMP}"
    steps = [
        S("stats"),  # no store yet
        S("init"),
        S("stats"),
        S("stats", "--json"),
        S("init", "--demo"),
        S("init", "--demo"),
        S("init", "--db", f"{t}/other.db"),
        S("stats"),
        S("stats", "--json"),
        S("export", "qrels", "--source", "llm:demo-gpt"),
        S("export", "ptkb-qrels", "--source", "llm:demo-gpt"),
        S("export", "ptkb-qrels", "--source", "organizers"),
        S("export", "nuggets", "--source", "gold"),
        S("export", "nuggets", "--source", "gold", "--dedup"),
    ]
    steps += [S("export", "table", "--table", name) for name in TABLES]
    steps += [
        S("export", "table", "--table", "passage_labels", "--source", "llm:demo-gpt"),
        S("export", "table", "--table", "ptkb_labels", "--source", "organizers", "-o", f"{t}/ptkb.csv"),
        S("export", "table", "--table", "passage_labels", "-o", f"{t}/labels.parquet"),
        S("export", "table", "--table", "pool", "--output", f"{t}/pool.parquet"),
        S("history", "--source", "llm:demo-gpt", "--turn", "101_1", "--item", "demo-doc-001:0"),
        S("history", "--source", "llm:demo-gpt", "--turn", "101_1", "--item", "demo-doc-001:0", "--json"),
        S("history", "--source", "organizers", "--turn", "101_1", "--item", "3", "--task", "ptkb"),
        S("history", "--source", "llm:demo-gpt", "--turn", "101_1", "--item", "nope:0"),
        S("history", "--source", "gold", "--turn", "101_1", "--item", "[1]", "--task", "nugget", "--json"),
        S("assign", "--assessor", "lee", "--conversation", "102", "--turn", "101_3"),
        S("assign", "--assessor", "lee", "--turn", "101_3", "101_4"),
        S("export", "table", "--table", "assignments"),
        S("assign", "--assessor", "lee", "--turn", "101_3", "--remove"),
        S("assign", "--assessor", "kim", "--conversation", "101", "102"),
        S("export", "table", "--table", "assignments"),
        S("jobs"),
        S("jobs", "--json"),
        S("anchoring"),
        S("anchoring", "--json"),
        S("anchoring", "--task", "ptkb", "--assessor", "lee"),
    ]
    return Scenario("demo_store", steps)


def scenario_demo_labels() -> Scenario:
    t = "{TMP}"
    steps = [
        S("init", "--demo"),
        S("import", "qrels", f"{t}/nist.qrels", "--source", "nist"),
        S("history", "--source", "nist", "--turn", "101_1", "--item", "demo-doc-001:0"),
        S("import", "qrels", f"{t}/nist2.qrels", "--source", "nist", "--json"),
        S("history", "--source", "nist", "--turn", "101_1", "--item", "demo-doc-001:0"),
        S("history", "--source", "nist", "--turn", "101_1", "--item", "demo-doc-002:3", "--json"),
        S("export", "qrels", "--source", "nist"),
        S("import", "ptkb-qrels", f"{DEMO}/llm-ptkb.qrels", "--source", "assessor-ptkb"),
        S("import", "ntr-labels", f"{DEMO}/llm-ntr.tsv", "--source", "crowd:copy", "--nuggets", "gold"),
        S("import", "responses", f"{DEMO}/responses.json", "--gold", "--source", "goldresp"),
        S("import", "run", RUNS[0], "--name", "bm25-again", "--depth", "3"),
        S("import", "run", RUNS[1], "--name", "dense-nopool", "--depth", "0", "--json"),
        S("import", "passages", f"{DEMO}/passages.jsonl"),
        S("import", "topics", f"{DEMO}/topics.json", "--collection", "demo"),
        S("stats"),
        S("stats", "--json"),
        S("export", "table", "--table", "rankings"),
        S("export", "table", "--table", "gold_responses"),
        S("agreement", "--a", "nist", "--b", "llm:demo-gpt"),
        S("agreement", "--a", "nist", "--b", "llm:demo-gpt", "--threshold", "2", "--weights", "quadratic"),
        S("agreement", "--a", "nist", "--b", "llm:demo-gpt", "--threshold", "1", "--weights", "linear", "--json"),
        S("agreement", "--task", "ptkb", "--a", "organizers", "--b", "llm:demo-gpt"),
        S("agreement", "--task", "ptkb", "--a", "organizers", "--b", "llm:demo-gpt", "--json"),
        S("agreement", "--task", "ptkb", "--a", "assessor-ptkb", "--b", "llm:demo-gpt", "--threshold", "1"),
        S("agreement", "--task", "ntr", "--a", "llm:demo-gpt", "--b", "crowd:copy", "--json"),
        S("agreement", "--task", "ntr", "--a", "llm:demo-gpt", "--b", "llm:demo-gpt"),
        S("pool", "adaptive", "--source", "llm:demo-gpt"),
        S("pool", "adaptive", "--source", "llm:demo-gpt", "--qrels", "nist", "--json"),
        S(
            "pool",
            "adaptive",
            "--source",
            "llm:demo-gpt",
            "--threshold",
            "1",
            "--always",
            "3",
            "--depth",
            "10",
            "--qrels",
            "nist",
            "--relevant",
            "3",
        ),
        S("pool", "adaptive", "--source", "llm:demo-gpt", "--threshold", "3", "--always", "2", "--apply"),
        S("pool", "adaptive", "--source", "llm:demo-gpt", "--threshold", "3", "--always", "2", "--apply", "--json"),
        S("stats"),
        S("export", "table", "--table", "pool"),
        S("anchoring"),
        S("score", "nuggets", "--ntr-source", "crowd:copy"),
    ]
    return Scenario(
        "demo_labels",
        steps,
        fixtures={
            "nist.qrels": lambda tmp: _demo_qrels_variant(-1, 3),
            "nist2.qrels": lambda tmp: _demo_nist_changed(),
        },
    )


def scenario_score_files() -> Scenario:
    t = "{TMP}"
    q = f"{DEMO}/llm-passages.qrels"
    steps = [
        S("score", "gfrc2", f"{DEMO}/gfrc2.json"),
        S("score", "gfrc2", f"{DEMO}/gfrc2.json", "--json"),
        S("score", "gfrc2", f"{DEMO}/gfrc2.json", "--clusters"),
        S("score", "aepd", f"{DEMO}/aepd.json"),
        S("score", "aepd", f"{DEMO}/aepd.json", "--json"),
        S("score", "runs", "--qrels", q, "--run", RUNS[0]),
        S("score", "runs", "--qrels", q, *sum((["--run", r] for r in RUNS), [])),
        S("score", "runs", "--qrels", q, *sum((["--run", r] for r in RUNS), []), "--json", "--per-query"),
        S("score", "runs", "--qrels", q, *sum((["--run", r] for r in RUNS), []), "--qrels-b", f"{t}/b.qrels"),
        S("score", "runs", "--qrels", q, *sum((["--run", r] for r in RUNS), []), "--qrels-b", f"{t}/b.qrels", "--json"),
        S("score", "runs", "--qrels", q, *sum((["--run", r] for r in RUNS), []), "--ttest", "nDCG@3"),
        S("score", "runs", "--qrels", q, *sum((["--run", r] for r in RUNS), []), "--ttest", "AP(rel=2)", "--json"),
        S("score", "runs", "--qrels", q, "--run", RUNS[1], "--threshold", "1", "--all-queries"),
        S(
            "score",
            "runs",
            "--qrels",
            f"{t}/b.qrels",
            "--run",
            RUNS[2],
            "--measure",
            "nDCG@10",
            "--measure",
            "P(rel=2)@10",
            "--measure",
            "R(rel=1)@10",
            "--json",
        ),
        S("score", "runs", "--qrels", f"{DEMO}/llm-ptkb.qrels", "--run", f"{t}/ptkb.run", "--ptkb"),
        S(
            "score",
            "runs",
            "--qrels",
            f"{DEMO}/llm-ptkb.qrels",
            "--run",
            f"{t}/ptkb.run",
            "--ptkb",
            "--json",
            "--per-query",
        ),
        S("score", "nuggets", "--gold", f"{DEMO}/nuggets.json", "--matches", f"{DEMO}/llm-ntr.tsv"),
        S(
            "score",
            "nuggets",
            "--gold",
            f"{DEMO}/nuggets.json",
            "--matches",
            f"{DEMO}/llm-ntr.tsv",
            "--personal",
            f"{DEMO}/topics.json",
        ),
        S(
            "score",
            "nuggets",
            "--gold",
            f"{DEMO}/nuggets.json",
            "--matches",
            f"{DEMO}/llm-ntr.tsv",
            "--personal",
            f"{DEMO}/llm-ptkb.qrels",
            "--unjudged",
            "no",
            "--json",
        ),
        S(
            "score",
            "nuggets",
            "--gold",
            f"{DEMO}/nuggets.json",
            "--gold-dedup",
            f"{t}/dedup.json",
            "--matches",
            f"{DEMO}/llm-ntr.tsv",
            "--ntn",
            f"{t}/ntn.json",
        ),
        S(
            "score",
            "nuggets",
            "--gold",
            f"{DEMO}/nuggets.json",
            "--ntn",
            f"{t}/ntn.json",
            "--empty-gold",
            "skip",
            "--personal",
            f"{DEMO}/topics.json",
            "--json",
        ),
        S("score", "nuggets", "--gold", f"{DEMO}/nuggets.json", "--ntn", f"{t}/ntn.json"),
    ]
    if CASES.is_dir():
        steps += [
            S("score", "gfrc2", str(CASES / "gfrc2_fairweb2_r112.json"), "--json"),
            S("score", "gfrc2", str(CASES / "gfrc2_fairweb2_r112.json"), "--clusters"),
            S("score", "aepd", str(CASES / "aepd_paper_figure2.json")),
            S("score", "aepd", str(CASES / "aepd_paper_figure2.json"), "--json"),
        ]

    def dedup(tmp: Path) -> str:  # the demo gold nuggets minus every third key of each turn
        data = json.loads(Path(DEMO, "nuggets.json").read_text())
        return json.dumps(
            {turn: {k: v for i, (k, v) in enumerate(ns.items()) if i % 3 != 2} for turn, ns in data.items()}, indent=1
        )

    return Scenario(
        "score_files",
        steps,
        fixtures={
            "b.qrels": lambda tmp: _demo_qrels_variant(1, 2),
            "ptkb.run": lambda tmp: _demo_ptkb_run(),
            "ntn.json": NTN_DEMO,
            "dedup.json": dedup,
        },
    )


def scenario_demo_nuggets() -> Scenario:
    t = "{TMP}"
    steps = [
        S("init", "--demo"),
        S("nuggets", "locate", "--source", "gold"),
        S("nuggets", "locate", "--source", "gold", "--json"),
        S("nuggets", "locate", "--source", "gold", "--relocate"),
        S("history", "--source", "gold", "--turn", "101_1", "--item", "[1]", "--task", "nugget"),
        S("export", "nuggets", "--source", "gold"),
        S("export", "table", "--table", "nuggets"),
        S("nuggets", "suggest-duplicates", "--source", "gold"),
        S("nuggets", "suggest-duplicates", "--source", "gold", "--threshold", "0.2", "--json"),
        S(
            "nuggets",
            "suggest-duplicates",
            "--source",
            "gold",
            "--turn",
            "101_1",
            "--turn",
            "102_3",
            "--threshold",
            "0.1",
        ),
        S("nuggets", "study", "s1", "--attributes", ATTRIBUTES),
        S("nuggets", "study", "s2", "--attributes", f"{t}/attrs.json", "--max-level", "3", "--L", "200"),
        S(
            "nuggets",
            "study",
            "s1",
            "--attributes",
            '[{"name": "PRONOUN", "kind": "nominal", "groups": ["he", "she"]}]',
        ),
        S("nuggets", "export-gfrc2", "--study", "s1"),
        S("nuggets", "export-gfrc2", "--study", "s2", "--run", "demo-bm25", "-o", f"{t}/s2.json"),
        S("score", "gfrc2", f"{t}/s2.json", "--json"),
        S("nuggets", "export-aepd"),
        S("nuggets", "export-aepd", "--run", "demo-dense", "--output", f"{t}/aepd.json"),
        S("score", "aepd", f"{t}/aepd.json"),
        S("score", "nuggets", "--ntr-source", "llm:demo-gpt"),
        S("score", "nuggets", "--ntr-source", "llm:demo-gpt", "--personal"),
        S("score", "nuggets", "--ntr-source", "llm:demo-gpt", "--personal", "llm:demo-gpt", "--unjudged", "no"),
        S("score", "nuggets", "--ntr-source", "llm:demo-gpt", "--personal", f"{DEMO}/topics.json", "--json"),
        S("score", "nuggets", "--ntr-source", "llm:demo-gpt", "--nugget-source", "gold", "--json"),
        S("score", "nuggets", "--ntr-source", "llm:demo-gpt", "--dedup"),
        S("import", "nuggets", f"{t}/dedup.json", "--source", "gold", "--dedup"),
        S("score", "nuggets", "--ntr-source", "llm:demo-gpt", "--dedup", "--personal"),
        S("score", "nuggets", "--ntr-source", "llm:demo-gpt", "--dedup", "--json"),
        S("export", "nuggets", "--source", "gold", "--dedup"),
        S("import", "nuggets", f"{DEMO}/nuggets.json", "--source", "second", "--json"),
        S("nuggets", "locate", "--source", "second"),
        S("stats"),
    ]

    def dedup(tmp: Path) -> str:
        data = json.loads(Path(DEMO, "nuggets.json").read_text())
        return json.dumps(
            {
                turn: {k: v for i, (k, v) in enumerate(ns.items()) if i % 2 == 0}
                for turn, ns in data.items()
                if turn != "102_6"
            },
            indent=1,
        )

    return Scenario("demo_nuggets", steps, fixtures={"attrs.json": ATTRIBUTES, "dedup.json": dedup})


def scenario_demo_crowd() -> Scenario:
    t = "{TMP}"
    steps = [
        S("init", "--demo"),
        S("crowd", "status"),
        S("crowd", "create", "--demo"),
        S("crowd", "create", "--demo"),
        S("crowd", "status"),
        S("crowd", "status", "demo"),
        S("crowd", "status", "demo", "--json"),
        S("crowd", "report", "demo"),
        S("crowd", "report", "demo", "--compare", "llm:demo-gpt", "--json"),
        S("crowd", "export", "demo", "raw"),
        S("crowd", "export", "demo", "aggregated", "--format", "tsv"),
        S(
            "crowd",
            "create",
            "resp",
            "--task",
            "response",
            "--criteria",
            "relevance,naturalness",
            "--unable",
            "--known",
            "101_1,demo-bm25,relevance,0",
            "--known",
            "102_2,demo-dense,naturalness,3",
            "--batch-size",
            "4",
            "--k",
            "2",
            "--seed",
            "7",
            "--platform",
            "prolific",
            "--prolific-code",
            "C0DE",
            "--base-url",
            "https://example.org",
            "--json",
        ),
        S("crowd", "create", "--demo", "--task", "response"),
        S(
            "crowd",
            "create",
            "ntr1",
            "--run",
            "demo-bm25",
            "--turn",
            "101_1",
            "--turn",
            "101_2",
            "--known",
            "101_1,demo-bm25,[1],1",
            "--batch-size",
            "3",
            "--k",
            "2",
            "--seed",
            "3",
            "--tie",
            "mean",
            "--stale-minutes",
            "5",
            "--max-batches",
            "2",
            "--platform",
            "mturk",
            "--guideline",
            f"{t}/guide.json",
        ),
        S(
            "crowd",
            "create",
            "ntr2",
            "--conversation",
            "102",
            "--nuggets",
            "gold",
            "--known",
            "102_1,demo-rerank,[1],1",
            "--qc",
            "none",
            "--k",
            "1",
            "--json",
        ),
        S("crowd", "status"),
        S("crowd", "status", "resp"),
        S("crowd", "status", "ntr1", "--json"),
        S("crowd", "import", f"{t}/pilot.tsv", "--study", "pilot", "--nuggets", "gold"),
        S("crowd", "import", f"{t}/pilot.tsv", "--study", "pilot2", "--nuggets", "gold", "--json"),
        S("crowd", "status", "pilot"),
        S("crowd", "report", "pilot"),
        S("crowd", "report", "pilot", "--compare", "llm:demo-gpt", "--json"),
        S("crowd", "decide", "pilot", "w2", "reject"),
        S("crowd", "report", "pilot"),
        S("crowd", "decide", "pilot", "w1", "approve"),
        S("crowd", "decide", "pilot", "w2", "clear"),
        S("crowd", "aggregate", "pilot"),
        S("crowd", "aggregate", "pilot2", "--json"),
        S("crowd", "export", "pilot", "raw"),
        S("crowd", "export", "pilot", "raw", "--kept", "--format", "tsv"),
        S("crowd", "export", "pilot", "aggregated"),
        S("crowd", "export", "pilot", "aggregated", "--format", "tsv", "-o", f"{t}/agg.tsv"),
        S("crowd", "export", "pilot", "raw", "--output", f"{t}/raw.csv"),
        S("crowd", "close", "demo"),
        S("crowd", "status"),
        S("crowd", "close", "demo", "--reopen"),
        S("agreement", "--task", "ntr", "--a", "crowd:pilot", "--b", "llm:demo-gpt"),
        S("score", "nuggets", "--ntr-source", "crowd:pilot"),
        S("score", "nuggets", "--ntr-source", "crowd:pilot", "--personal", "--json"),
        S("stats"),
        S("export", "table", "--table", "ntr_labels", "--source", "crowd:pilot"),
        S("export", "table", "--table", "response_labels"),
    ]
    return Scenario("demo_crowd", steps, fixtures={"pilot.tsv": CROWD_PILOT, "guide.json": GUIDELINE})


def scenario_demo_prejudge() -> Scenario:
    url = "http://127.0.0.1:9/v1"  # never contacted: --estimate only
    steps = [S("init", "--demo")]
    for task in ("passage", "ptkb", "ntr", "nuggets", "response-nuggets", "aepd"):
        steps.append(S("prejudge", "--task", task, "--model", "m", "--base-url", url, "--estimate"))
        if task in ("passage", "aepd"):
            steps.append(S("prejudge", "--task", task, "--model", "m", "--base-url", url, "--estimate", "--json"))
    steps += [
        S(
            "prejudge",
            "--task",
            "passage",
            "--model",
            "m",
            "--base-url",
            url,
            "--estimate",
            "--depth",
            "5",
            "--limit",
            "20",
            "--price-in",
            "2.5",
            "--price-out",
            "10",
            "--concurrency",
            "4",
        ),
        S(
            "prejudge",
            "--task",
            "passage",
            "--model",
            "demo-gpt",
            "--source",
            "llm:demo-gpt",
            "--base-url",
            url,
            "--estimate",
            "--json",
        ),
        S("prejudge", "--task", "ntr", "--model", "m", "--base-url", url, "--estimate", "--nuggets", "gold", "--json"),
        S(
            "prejudge",
            "--task",
            "nuggets",
            "--model",
            "m",
            "--base-url",
            url,
            "--estimate",
            "--qrels",
            "llm:demo-gpt",
            "--relevant",
            "3",
        ),
        S("prejudge", "--task", "ptkb", "--model", "m", "--base-url", url, "--estimate", "--limit", "0"),
        S("prejudge", "--task", "passage", "--model", "m"),  # no endpoint
        S("prejudge", "--task", "passage", "--model", "m", "--base-url", url, "--concurrency", "0"),
        S("prejudge", "--task", "passage", "--base-url", url, "--estimate"),  # no model
        S("prejudge", "--task", "ntr", "--model", "m", "--base-url", url, "--estimate", "--dedup"),
        S("prejudge", "--task", "ntr", "--model", "m", "--base-url", url, "--estimate", "--nuggets", "nobody"),
        S("jobs"),
    ]
    return Scenario("demo_prejudge", steps)


def scenario_errors() -> Scenario:
    t = "{TMP}"
    steps = [
        S("stats", "--db", f"{t}/missing.db"),
        S("export", "qrels", "--source", "x", "--db", f"{t}/missing.db"),
        S("nuggets", "locate", "--db", f"{t}/missing.db"),
        S("score", "nuggets", "--ntr-source", "x", "--db", f"{t}/missing.db"),
        S("stats", "--db", f"{t}/bogus.db"),
        S("import", "qrels", f"{t}/nope.qrels"),
        S("import", "qrels", t),
        S("init", "--demo"),
        S("import", "qrels", f"{t}/bad3.qrels"),
        S("import", "qrels", f"{t}/badgrade.qrels", "--source", "nist"),
        S("import", "qrels", f"{t}/conflict.qrels", "--source", "nist"),
        S("import", "qrels", f"{t}/unknownturn.qrels", "--source", "nist"),
        S("import", "run", f"{t}/bad.run"),
        S("import", "run", f"{t}/badscore.run"),
        S("import", "run", f"{t}/dup.run"),
        S("import", "run", f"{t}/empty.run"),
        S("import", "topics", f"{t}/broken.json"),
        S("import", "topics", f"{t}/notopics.json"),
        S("import", "topics", f"{t}/collide.json"),
        S("import", "passages", f"{t}/bad.jsonl"),
        S("import", "nuggets", f"{t}/badnuggets.json"),
        S("import", "responses", f"{t}/badresponses.json"),
        S("import", "ntr-labels", f"{t}/bad.tsv", "--nuggets", "gold"),
        S("import", "ntr-labels", f"{DEMO}/llm-ntr.tsv", "--nuggets", "nobody"),
        S("import", "xml", f"{t}/bad3.qrels"),
        S("stats"),  # unchanged by the refused imports
        S("export", "qrels"),
        S("export", "qrels", "--source", "nobody"),
        S("export", "ptkb-qrels", "--source", "nobody"),
        S("export", "nuggets", "--source", "nobody"),
        S("export", "table"),
        S("export", "table", "--table", "nope"),
        S("history", "--source", "nobody", "--turn", "101_1", "--item", "x"),
        S("history", "--source", "llm:demo-gpt", "--turn", "101_1"),
        S("assign", "--assessor", "lee"),
        S("assign", "--assessor", "lee", "--conversation", "999"),
        S("assign", "--assessor", "lee", "--turn", "9_9"),
        S("agreement", "--a", "nist", "--b", "llm:demo-gpt"),
        S("agreement", "--task", "ptkb", "--a", "organizers", "--b", "nobody"),
        S("agreement", "--a", "llm:demo-gpt", "--b", "llm:demo-gpt", "--weights", "cubic"),
        S("pool", "adaptive", "--source", "llm:nobody"),
        S("pool", "adaptive", "--source", "llm:demo-gpt", "--qrels", "nobody"),
        S("anchoring", "--task", "nugget"),
        S("crowd", "report", "nostudy"),
        S("crowd", "decide", "nostudy", "w1", "approve"),
        S("crowd", "create"),
        S("crowd", "create", "x", "--task", "response", "--criteria", "beauty"),
        S("crowd", "create", "x", "--known", "not-enough-fields"),
        S("crowd", "create", "x", "--run", "no-such-run"),
        S("crowd", "import", f"{t}/bad.tsv", "--nuggets", "gold"),
        S("crowd", "import", f"{t}/nope.tsv"),
        S("nuggets", "locate", "--source", "nobody"),
        S("nuggets", "suggest-duplicates", "--source", "nobody"),
        S("nuggets", "study", "s", "--attributes", "[not json"),
        S("nuggets", "study", "s", "--attributes", '[{"name": "A", "kind": "weird", "groups": ["x"]}]'),
        S("nuggets", "study", "s", "--attributes", f"{t}/nope.json"),
        S("nuggets", "export-gfrc2", "--study", "nostudy"),
        S("score", "gfrc2", f"{t}/broken.json"),
        S("score", "gfrc2", f"{t}/notopics.json", "--json"),
        S("score", "aepd", f"{DEMO}/gfrc2.json"),
        S("score", "runs", "--qrels", f"{t}/nope.qrels", "--run", RUNS[0]),
        S("score", "runs", "--qrels", f"{DEMO}/llm-passages.qrels", "--run", f"{t}/bad.run"),
        S("score", "runs", "--qrels", f"{DEMO}/llm-passages.qrels", "--run", RUNS[0], "--run", RUNS[0]),
        S("score", "runs", "--qrels", f"{DEMO}/llm-passages.qrels", "--run", RUNS[0], "--ttest", "nDCG@99"),
        S("score", "runs", "--qrels", f"{DEMO}/llm-passages.qrels", "--run", RUNS[0], "--measure", "Bogus@3"),
        S("score", "nuggets"),
        S("score", "nuggets", "--gold", f"{DEMO}/nuggets.json"),
        S("score", "nuggets", "--gold", f"{DEMO}/nuggets.json", "--matches", f"{t}/conflict.tsv"),
        S("score", "nuggets", "--gold", f"{DEMO}/nuggets.json", "--matches", f"{DEMO}/llm-ntr.tsv", "--personal"),
        S("score", "nuggets", "--gold", f"{DEMO}/nuggets.json", "--ntn", f"{t}/badntn.json"),
        S("score", "nuggets", "--gold", f"{DEMO}/nuggets.json", "--matches", f"{DEMO}/llm-ntr.tsv", "--dedup"),
        S("score", "nuggets", "--ntr-source", "llm:demo-gpt", "--gold", f"{DEMO}/nuggets.json"),
        S("score", "nuggets", "--ntr-source", "nobody"),
        S("score", "nuggets", "--ntr-source", "llm:demo-gpt", "--nugget-source", "nobody"),
        S("score", "nuggets", "--ntr-source", "llm:demo-gpt", "--personal", "nobody"),
        S("stats"),
    ]
    fixtures = {
        "bogus.db": "this is not a database\n" * 20,
        "bad3.qrels": "101_1 0 demo-doc-001:0 2\n101_1 0 demo-doc-002:3\n",
        "badgrade.qrels": "101_1 0 demo-doc-001:0 2\n101_1 0 demo-doc-002:3 high\n",
        "conflict.qrels": "101_1 0 demo-doc-001:0 2\n101_1 0 demo-doc-002:3 1\n101_1 0 demo-doc-001:0 3\n",
        "unknownturn.qrels": "101_1 0 demo-doc-001:0 2\n999_1 0 demo-doc-002:3 1\n",
        "bad.run": "101_1 Q0 demo-doc-001:0 1 2.5 r\n101_1 Q0 demo-doc-002:3 2 1.5\n",
        "badscore.run": "101_1 Q0 demo-doc-001:0 1 2.5 r\n101_1 Q0 demo-doc-002:3 2 nan r\n",
        "dup.run": "101_1 Q0 demo-doc-001:0 1 2.5 r\n101_1 Q0 demo-doc-001:0 2 1.5 r\n",
        "empty.run": "",
        "broken.json": '{"turns": [1, 2,\n',
        "notopics.json": '{"a": 1}\n',
        "collide.json": json.dumps(
            [
                {
                    "number": 101,
                    "title": "again",
                    "ptkb": {"1": "I run."},
                    "turns": [
                        {
                            "turn_id": 1,
                            "utterance": "hi",
                            "resolved_utterance": "hi",
                            "response": "",
                            "ptkb_provenance": [],
                            "response_provenance": [],
                        }
                    ],
                }
            ]
        ),
        "bad.jsonl": '{"doc_id": "d1", "passage_id": "0", "passage_text": "ok"}\n{"doc_id": "d2"}\n',
        "badnuggets.json": '{"101_1": {"[1]": {"relevance": "2"}}}\n',
        "badresponses.json": "[1, 2, 3]\n",
        "bad.tsv": "0_101_1_1_demo-bm25\t1\nnot-an-id\t0\n",
        "conflict.tsv": "0_101_1_1_demo-bm25\t1\n1_101_1_1_demo-bm25\t0\n",
        "badntn.json": '{"demo-bm25": {"101_1": {"pairs": []}}}\n',
    }
    return Scenario("errors", steps, fixtures=fixtures)


# ---- the public iKAT files --------------------------------------------------------------------

IK = DATA / "irlabamsterdam-iKAT"
CONE = DATA / "irlabamsterdam-CONE-RAG" / "resources"
QRELS24 = DATA / "gyeozai-CFDA-TREC-iKAT2025" / "DATA" / "topics" / "2024_test_qrels.trec"
QRELS23 = DATA / "gyeozai-CFDA-TREC-iKAT2025" / "DATA" / "topics" / "2023_test_qrels.trec"
TOPICS24 = IK / "2024" / "data" / "2024_test_topics.json"
GPT4 = CONE / "automatic_resources" / "llm-gpt4-pool-depth-30.txt"
HUMAN = CONE / "human_resources" / "gold_nuggets_human.json"
HUMAN_DEDUP = CONE / "human_resources" / "gold_nuggets_human_deduplicated.json"
MATCHES = CONE / "human_resources" / "human-study-matching-labels.txt"


def _gpt4_runs(tmp: Path) -> None:
    """Two TREC runs built from the GPT-4 depth-30 pool (deterministic): 'gpt4grade' ranks each turn's
    passages by GPT-4 grade (ties: passage id), 'gpt4rev' by the reverse order; top 40 per turn."""
    per_turn: dict[str, list[tuple[int, str]]] = {}
    for line in GPT4.read_text().splitlines():
        f = line.split()
        if len(f) == 4:
            per_turn.setdefault(f[0], []).append((int(f[3]), f[2]))
    for tag, reverse in (("gpt4grade", False), ("gpt4rev", True)):
        out = []
        for turn in sorted(per_turn):
            items = sorted(per_turn[turn], key=lambda x: (-x[0], x[1]))
            if reverse:
                items = items[::-1]
            for rank, (_g, pid) in enumerate(items[:40], 1):
                out.append(f"{turn} Q0 {pid} {rank} {100 - rank} {tag}\n")
        (tmp / f"{tag}.run").write_text("".join(out))


def scenario_ikat2024_labels() -> Scenario:
    t = "{TMP}"
    steps = [
        S("import", "topics", str(TOPICS24)),
        S("import", "qrels", str(QRELS24), "--source", "nist"),
        S("import", "qrels", str(GPT4), "--source", "llm:gpt-4", "--json"),
        S("stats"),
        S("stats", "--json"),
        S("export", "qrels", "--source", "nist"),
        S("export", "qrels", "--source", "llm:gpt-4"),
        S("export", "ptkb-qrels", "--source", "organizers"),
        S("history", "--source", "nist", "--turn", "0_8", "--item", "clueweb22-en0020-19-14220:3"),
        S("agreement", "--a", "nist", "--b", "llm:gpt-4", "--threshold", "2"),
        S("agreement", "--a", "nist", "--b", "llm:gpt-4", "--threshold", "2", "--weights", "quadratic", "--json"),
        S("pool", "adaptive", "--source", "llm:gpt-4", "--qrels", "nist", "--threshold", "1"),
        S("pool", "adaptive", "--source", "llm:gpt-4", "--qrels", "nist", "--json"),
        S(
            "score",
            "runs",
            "--qrels",
            str(QRELS24),
            "--run",
            f"{t}/gpt4grade.run",
            "--run",
            f"{t}/gpt4rev.run",
            "--qrels-b",
            str(GPT4),
        ),
        S(
            "score",
            "runs",
            "--qrels",
            str(QRELS24),
            "--run",
            f"{t}/gpt4grade.run",
            "--run",
            f"{t}/gpt4rev.run",
            "--all-queries",
            "--ttest",
            "nDCG@5",
            "--json",
        ),
        S("import", "run", f"{t}/gpt4grade.run", "--depth", "5"),
        S("import", "run", f"{t}/gpt4rev.run", "--depth", "5", "--json"),
        S("pool", "adaptive", "--source", "llm:gpt-4", "--qrels", "nist"),
        S("pool", "adaptive", "--source", "llm:gpt-4", "--qrels", "nist", "--threshold", "1", "--apply"),
        S("stats"),
    ]
    return Scenario("ikat2024_labels", steps, fixtures={"_runs": _gpt4_runs}, needs=[TOPICS24, QRELS24, GPT4])


def scenario_ikat2024_nuggets() -> Scenario:
    steps = [
        S("import", "topics", str(TOPICS24), "--json"),
        S("import", "nuggets", str(HUMAN), "--source", "human"),
        S("import", "nuggets", str(HUMAN_DEDUP), "--source", "human", "--dedup"),
        S("import", "nuggets", str(CONE / "automatic_resources" / "gold_nuggets_llm.json"), "--source", "llm:gpt-4"),
        S(
            "import",
            "nuggets",
            str(CONE / "automatic_resources" / "gold_nuggets_llm_deduplicated.json"),
            "--source",
            "llm:gpt-4",
            "--dedup",
        ),
        S("import", "ntr-labels", str(MATCHES)),
        S("import", "responses", str(CONE / "participant_resources" / "manual_responses.json")),
        S(
            "import",
            "responses",
            str(CONE / "human_resources" / "gold_response_and_nuggets_human.json"),
            "--gold",
            "--source",
            "human",
        ),
        S("crowd", "import", str(MATCHES), "--study", "cone"),
        S("stats"),
        S("stats", "--json"),
        S("export", "nuggets", "--source", "human", "--dedup"),
        S("export", "table", "--table", "gold_responses"),
        S("nuggets", "locate", "--source", "human"),
        S("nuggets", "suggest-duplicates", "--source", "human", "--turn", "0_8", "--turn", "8_5", "--json"),
        S("crowd", "status"),
        S("crowd", "report", "cone"),
        S("crowd", "export", "cone", "aggregated", "--format", "tsv"),
        S("score", "nuggets", "--ntr-source", "crowd:mturk", "--dedup", "--personal"),
        S(
            "score",
            "nuggets",
            "--ntr-source",
            "crowd:cone",
            "--nugget-source",
            "human",
            "--personal",
            str(TOPICS24),
            "--json",
        ),
        S(
            "score",
            "nuggets",
            "--gold",
            str(HUMAN),
            "--gold-dedup",
            str(HUMAN_DEDUP),
            "--matches",
            str(MATCHES),
            "--personal",
            str(TOPICS24),
        ),
        S("score", "nuggets", "--gold", str(HUMAN), "--matches", str(MATCHES), "--unjudged", "no", "--json"),
        S("agreement", "--task", "ntr", "--a", "crowd:mturk", "--b", "crowd:cone"),
        S(
            "prejudge",
            "--task",
            "ntr",
            "--model",
            "m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--estimate",
            "--nuggets",
            "human",
            "--dedup",
        ),
    ]
    return Scenario(
        "ikat2024_nuggets", steps, needs=[TOPICS24, HUMAN, HUMAN_DEDUP, MATCHES, CONE / "participant_resources"]
    )


def scenario_ikat2023() -> Scenario:
    d = IK / "2023"
    steps = [
        S("import", "topics", str(d / "data" / "2023_test_topics.json")),
        S("import", "passages", str(d / "data" / "2023_test_topics_psg_text.jsonl")),
        S("import", "ptkb-qrels", str(d / "evaluation" / "ptkb_rel_nist"), "--source", "nist"),
        S("import", "ptkb-qrels", str(d / "evaluation" / "ptkb_rel_org"), "--source", "org"),
        S("import", "qrels", str(QRELS23), "--source", "nist"),
        S("stats", "--json"),
        S("agreement", "--task", "ptkb", "--a", "nist", "--b", "organizers"),
        S("agreement", "--task", "ptkb", "--a", "org", "--b", "organizers", "--json"),
        S("export", "ptkb-qrels", "--source", "nist"),
        S(
            "score",
            "runs",
            "--qrels",
            str(d / "evaluation" / "ptkb_rel_nist"),
            "--qrels-b",
            str(d / "evaluation" / "ptkb_rel_org"),
            "--run",
            "{TMP}/ptkb.run",
            "--ptkb",
        ),
        S("import", "topics", str(IK / "2025" / "data" / "2025_test_topics.json")),  # ids collide: refused
        S("import", "topics", str(IK / "2025" / "data" / "2025_test_topics.json"), "--db", "{TMP}/y2025.db"),
        S("stats", "--db", "{TMP}/y2025.db"),
        S("import", "topics", str(d / "data" / "2023_train_topics.json"), "--db", "{TMP}/train.db", "--json"),
        S("import", "passages", str(d / "data" / "2023_train_topics_psg_text.jsonl"), "--db", "{TMP}/train.db"),
        S("stats", "--db", "{TMP}/train.db"),
    ]

    def ptkb_run(tmp: Path) -> str:  # statements ranked by number, for every turn of the NIST PTKB qrels
        turns: dict[str, set[str]] = {}
        for line in (d / "evaluation" / "ptkb_rel_org").read_text().splitlines():
            f = line.split()
            if len(f) == 4:
                turns.setdefault(f[0], set()).add(f[2])
        return "".join(
            f"{turn} Q0 {s} {r} {20 - r} bynumber\n"
            for turn in sorted(turns)
            for r, s in enumerate(sorted(turns[turn], key=int), 1)
        )

    return Scenario(
        "ikat2023",
        steps,
        fixtures={"ptkb.run": ptkb_run},
        needs=[d / "data" / "2023_test_topics.json", QRELS23, IK / "2025" / "data" / "2025_test_topics.json"],
    )


def all_scenarios() -> list[Scenario]:
    return [
        scenario_ikat2024_labels(),
        scenario_ikat2024_nuggets(),
        scenario_ikat2023(),
        scenario_help(),
        scenario_demo_store(),
        scenario_demo_labels(),
        scenario_score_files(),
        scenario_demo_nuggets(),
        scenario_demo_crowd(),
        scenario_demo_prejudge(),
        scenario_errors(),
    ]


# ------------------------------------------------------------------------------------------------
# Recording


def _env(repo: Path, tmp: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not (k.startswith("ASSESS_") or k.startswith("OPENAI_") or k == "BROWSER_PATH")
    }
    env.update(
        ASSESS_DB=str(tmp / "assess.db"),
        PYTHONHASHSEED="0",
        PYTHONPATH=str(repo),
        PYTHONDONTWRITEBYTECODE="1",
        COLUMNS="100",
        LINES="50",
        TZ="UTC",
    )
    return env


def normalise(data: bytes, tmp: Path, repo: Path) -> bytes:
    data = data.replace(str(tmp).encode(), b"<TMP>")
    data = data.replace(str(repo).encode(), b"<REPO>")
    return TIMESTAMP.sub(b"<TIME>", data)


def _files(tmp: Path) -> dict[str, str]:
    """Relative path -> digest of every file under tmp except the store files."""
    out = {}
    for p in sorted(tmp.rglob("*")):
        if p.is_file() and not DB_FILES.search(p.name):
            out[str(p.relative_to(tmp))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _render_file(path: Path) -> bytes:
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq

            table = pq.read_table(path)
            import io

            buf = io.StringIO()
            table.to_pandas().to_csv(buf, index=False)
            return (
                f"[parquet] schema:\n{table.schema.to_string(show_schema_metadata=False)}\n"
                f"[parquet] rows:\n{buf.getvalue()}"
            ).encode()
        except Exception as exc:
            return f"[parquet] unreadable: {type(exc).__name__}: {exc}\n".encode()
    return path.read_bytes()


def _block(title: str, data: bytes) -> bytes:
    text = data
    if text and not text.endswith(b"\n"):
        text += b"\n\\ no newline at end\n"
    return f"--- {title} ---\n".encode() + text


def run_scenario(sc: Scenario, repo: Path, out: Path) -> tuple[str, int, float]:
    start = time.monotonic()
    target = out / sc.name
    target.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"golden_{sc.name}_")).resolve()
    try:
        for name, content in sc.fixtures.items():
            if callable(content):
                content = content(tmp)
                if content is None:  # the callable wrote its files itself
                    continue
            (tmp / name).write_bytes(content if isinstance(content, bytes) else content.encode())
        env = _env(repo, tmp)
        for i, step in enumerate(sc.steps, 1):
            args = [a.replace("{TMP}", str(tmp)) for a in step.args]
            before = _files(tmp)
            t0 = time.monotonic()
            try:
                proc = subprocess.run(
                    [sys.executable, "-m", "assess", *args],
                    cwd=repo,
                    env=env,
                    capture_output=True,
                    timeout=step.timeout,
                    stdin=subprocess.DEVNULL,
                )
                rc, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
            except subprocess.TimeoutExpired as exc:
                rc, stdout, stderr = "timeout", exc.stdout or b"", exc.stderr or b""
            seconds = time.monotonic() - t0
            after = _files(tmp)
            parts = [
                f"$ python -m assess {' '.join(step.args)}\n".encode(),
                f"exit: {rc}\n".encode(),
                _block("stdout", normalise(stdout, tmp, repo)),
                _block("stderr", normalise(stderr, tmp, repo)),
            ]
            for rel in sorted(after):
                if before.get(rel) != after[rel]:
                    parts.append(_block(f"file {rel}", normalise(_render_file(tmp / rel), tmp, repo)))
            for rel in sorted(set(before) - set(after)):
                parts.append(f"--- file {rel} removed ---\n".encode())
            (target / f"{i:03d}.txt").write_bytes(b"".join(parts))
            with open(target / "_timing.txt", "a") as f:
                f.write(f"{i:03d} {seconds:7.2f}s  {' '.join(step.args)[:120]}\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return sc.name, len(sc.steps), time.monotonic() - start


def cmd_record(args) -> int:
    repo = Path(args.repo).resolve()
    out = Path(args.out)
    if not (repo / "assess" / "__main__.py").exists():
        print(f"error: {repo} has no assess/__main__.py", file=sys.stderr)
        return 2
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    scenarios = all_scenarios()
    if args.only:
        scenarios = [s for s in scenarios if s.name in args.only]
    todo, skipped = [], []
    for sc in scenarios:
        missing = [str(p) for p in sc.needs if not p.exists()]
        (skipped if missing else todo).append((sc, missing))
    for sc, missing in skipped:
        print(f"skip {sc.name}: missing {', '.join(missing)}", file=sys.stderr)
    start = time.monotonic()
    old_cwd = os.getcwd()
    os.chdir(repo)  # fixtures read assets/demo relative to the repo under test
    try:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(lambda s: run_scenario(s, repo, out), [sc for sc, _ in todo]))
    finally:
        os.chdir(old_cwd)
    total = time.monotonic() - start
    lines = [f"{name:20} {n:4} commands {sec:7.1f} s" for name, n, sec in results]
    lines.append(f"{'total':20} {sum(n for _, n, _ in results):4} commands {total:7.1f} s (wall, {args.jobs} jobs)")
    (out / "_summary.txt").write_text("\n".join(lines) + "\n" + "".join(f"skipped {sc.name}\n" for sc, _ in skipped))
    print("\n".join(lines))
    return 0


# ------------------------------------------------------------------------------------------------
# Comparing


def _listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not p.name.startswith("_")}


def cmd_compare(args) -> int:
    a, b = Path(args.a), Path(args.b)
    for d in (a, b):
        if not d.is_dir():
            print(f"error: {d}: not a directory", file=sys.stderr)
            return 2
    la, lb = _listing(a), _listing(b)
    differing = 0
    for rel in sorted(la | lb):
        if rel not in lb or rel not in la:
            differing += 1
            print(f"== {rel}: only in {a if rel in la else b}")
            continue
        da, db = (a / rel).read_bytes(), (b / rel).read_bytes()
        if da == db:
            continue
        differing += 1
        ta, tb = (
            da.decode("utf-8", "backslashreplace").splitlines(keepends=True),
            db.decode("utf-8", "backslashreplace").splitlines(keepends=True),
        )
        print(f"== {rel}: {ta[0].rstrip() if ta else ''}")
        diff = list(difflib.unified_diff(ta, tb, str(a / rel), str(b / rel), n=2))
        for line in diff[: args.lines]:
            sys.stdout.write(line if line.endswith("\n") else line + "\n")
        if len(diff) > args.lines:
            print(f"   ... {len(diff) - args.lines} more diff lines")
    total = len(la | lb)
    if differing:
        print(f"{differing} of {total} recorded commands differ")
        return 1
    print(f"identical: {total} recorded commands")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("record", help="run every scenario against --repo and write the outputs to --out")
    p.add_argument("--repo", required=True, help="the project checkout to run (cwd of every command)")
    p.add_argument("--out", required=True, help="output directory (replaced)")
    p.add_argument("--jobs", type=int, default=2, help="scenarios run in parallel (default 2)")
    p.add_argument("--only", nargs="*", help="only these scenarios (by name)")
    p.set_defaults(func=cmd_record)
    p = sub.add_parser("compare", help="compare two record directories (exit 0 identical, 1 different)")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--lines", type=int, default=30, help="diff lines shown per differing command (default 30)")
    p.set_defaults(func=cmd_compare)
    p = sub.add_parser("list", help="list the scenarios and their commands")
    p.set_defaults(func=lambda a: [print(f"{s.name}: {len(s.steps)} commands") for s in all_scenarios()] and 0)
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
