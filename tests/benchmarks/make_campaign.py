"""A campaign-scale store for the benchmarks (not collected by pytest): the public iKAT 2024 files plus a synthetic
campaign ``--scale`` times their size, deterministic by ``--seed``.

Run: ``python tests/benchmarks/make_campaign.py OUT.db [--scale 10] [--seed 0] [--keep-files DIR]``

At ``--scale N`` the synthetic part has 17·N conversations of 9–16 turns (about 218·N turns), 50 ranking runs
whose top 10 per turn pool about 209 passages a turn (about 45,500·N pooled pairs, as iKAT 2024's pool), 2·N
assessors who split 20,000·N blind labels among them (a tenth of the pairs judged twice), 20 response runs
answering every turn, 10,000·N battles between them of one LLM judge, and 10 gold nuggets a turn. Passages
have ids only (no text). Scale 10: 450,000 pooled pairs, 20 assessors, 200,000 labels, 100,000 battles.

Everything goes in through the project's own imports: the files are written in their public formats (iKAT topics
JSON, TREC runs, CONE-RAG nuggets and responses, battle JSONL) and read by ``python -m assess import`` /
``battles import`` in process; the assessors' labels go through ``store.labels.save_many`` (the history
triggers on, as for labels saved on /judge). Prints each step's time and the store's size.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

RUNS, RESPONSE_RUNS, DEPTH, NUGGETS_PER_TURN = 50, 20, 10, 10
FIRST_NUMBER = 9001  # synthetic conversation numbers start here (iKAT 2024's are below 100)
WORDS = [
    "visa",
    "weather",
    "budget",
    "train",
    "museum",
    "coast",
    "winter",
    "hiking",
    "permit",
    "insurance",
    "festival",
    "ferry",
    "altitude",
    "diet",
    "allergy",
    "vegan",
    "marathon",
    "injury",
    "mortgage",
    "pension",
    "tariff",
    "solar",
    "battery",
    "warranty",
    "recipe",
    "gluten",
    "lease",
]


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def write_files(folder: Path, scale: int, seed: int) -> dict[str, Path]:
    """The synthetic campaign's files under ``folder`` (same ``scale`` and ``seed``: the same bytes)."""
    rng = random.Random(seed)
    conversations, turns = [], []
    for c in range(17 * scale):
        number = FIRST_NUMBER + c
        ptkb = {str(k + 1): _sentence(rng, 6) for k in range(10)}
        conv_turns = []
        for t in range(rng.randint(9, 16)):
            conv_turns.append(
                {
                    "turn_id": t + 1,
                    "utterance": _sentence(rng, 10),
                    "resolved_utterance": _sentence(rng, 12),
                    "response": _sentence(rng, 40),
                    "ptkb_provenance": [str(rng.randint(1, 10))] if rng.random() < 0.4 else [],
                    "response_provenance": [],
                }
            )
            turns.append(f"{number}_{t + 1}")
        conversations.append({"number": number, "title": _sentence(rng, 3), "ptkb": ptkb, "turns": conv_turns})
    files = {name: folder / name for name in ("topics.json", "runs.trec", "nuggets.json", "responses.json")}
    files["battles.jsonl"] = folder / "battles.jsonl"
    files["topics.json"].write_text(json.dumps(conversations), encoding="utf-8")

    pooled: dict[str, list[str]] = {}
    with open(files["runs.trec"], "w", encoding="utf-8") as out:
        for turn in turns:
            # 180-240 candidates a turn; run r's top 10 are candidates 10r..10r+9 (mod K), so the 50 runs' top 10s
            # cover every candidate (500 slots >= K) and the pool is exactly the candidates
            k = rng.randint(180, 240)
            candidates = [f"syn-{turn}-{rng.randrange(10**6):06d}-{i}:{rng.randint(0, 40)}" for i in range(k)]
            pooled[turn] = candidates
            for r in range(RUNS):
                for rank in range(DEPTH):
                    passage = candidates[(r * DEPTH + rank) % k]
                    out.write(f"{turn} Q0 {passage} {rank + 1} {100 - rank - rng.random() / 2:.4f} run-{r:02d}\n")

    files["nuggets.json"].write_text(
        json.dumps(
            {
                turn: {
                    f"[{k + 1}]": {"text": _sentence(rng, 9), "relevance": rng.randint(0, 4)}
                    for k in range(NUGGETS_PER_TURN)
                }
                for turn in turns
            }
        ),
        encoding="utf-8",
    )
    response_runs = [f"run-{r:02d}" for r in range(RESPONSE_RUNS)]
    files["responses.json"].write_text(
        json.dumps({turn: {run: _sentence(rng, 50) for run in response_runs} for turn in turns}), encoding="utf-8"
    )
    battles = 10_000 * scale
    with open(files["battles.jsonl"], "w", encoding="utf-8") as out:
        for i in range(battles):
            a, b = rng.sample(response_runs, 2)
            winner = rng.choices(("a", "b", "tie", "both_bad"), (45, 45, 7, 3))[0]
            out.write(json.dumps({"topic_id": turns[i % len(turns)], "run_a": a, "run_b": b, "winner": winner}) + "\n")
    return files


def assessor_labels(pooled: list[tuple[str, str]], scale: int, seed: int) -> dict[str, list[tuple[tuple, int]]]:
    """2·N assessors' labels over ``pooled`` (sorted pairs): 20,000·N in all, a tenth of the pairs judged twice."""
    rng = random.Random(seed + 1)
    names = [f"assessor-{k + 1:02d}" for k in range(2 * scale)]
    total = 20_000 * scale
    twice = total // 10
    pairs = rng.sample(pooled, min(len(pooled), total - twice))
    given: dict[str, list[tuple[tuple, int]]] = {name: [] for name in names}
    grades = (0, 1, 2, 3, 4)
    for i, pair in enumerate(pairs):
        grade = rng.choices(grades, (50, 25, 13, 8, 4))[0]
        given[names[i % len(names)]].append((pair, grade))
        if i < twice:  # a second assessor, who agrees about two times in three
            other = grade if rng.random() < 0.67 else rng.choice(grades)
            given[names[(i + 1) % len(names)]].append((pair, other))
    return given


def build(target: str, scale: int = 10, seed: int = 0, files_dir: Path | None = None) -> dict:
    """Build the campaign store ``target`` (a new SQLite file or a PostgreSQL URL); returns figures (seconds,
    counts, bytes)."""
    from assess.cli import main
    from store import labels, open_db
    from store.db import file_of, rows, value
    from store.sources import sign_in
    from tests.ikat_store import build_ikat2024, missing_files

    if missing_files():
        raise SystemExit(f"the public iKAT files are absent: {missing_files()[0]}")
    figures: dict = {"scale": scale, "seed": seed, "seconds": {}}

    def step(name: str, started: float) -> None:
        figures["seconds"][name] = round(time.perf_counter() - started, 1)
        print(f"{name:12} {figures['seconds'][name]:7.1f} s", file=sys.stderr, flush=True)

    started = time.perf_counter()
    build_ikat2024(target)
    step("ikat2024", started)
    with contextlib.ExitStack() as stack:
        folder = files_dir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="campaign-")))
        folder.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        files = write_files(folder, scale, seed)
        step("files", started)
        for name, command in (
            ("topics", ["import", "topics", str(files["topics.json"])]),
            ("runs", ["import", "run", str(files["runs.trec"]), "--depth", str(DEPTH)]),
            ("nuggets", ["import", "nuggets", str(files["nuggets.json"]), "--source", "human"]),
            ("responses", ["import", "responses", str(files["responses.json"])]),
            ("battles", ["battles", "import", str(files["battles.jsonl"]), "--source", "llm:battle-judge"]),
        ):
            started = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                code = main([*command, "--db", str(target)])
            if code:
                raise RuntimeError(f"{' '.join(command)} exited {code}")
            step(name, started)
    started = time.perf_counter()
    with open_db(target) as db:
        pooled = [
            (r["turn_id"], r["passage_id"])
            for r in rows(
                db,
                "SELECT turn_id, passage_id FROM pool WHERE method = 'depth' AND detail LIKE 'run-%' "
                "ORDER BY turn_id, passage_id",
            )
        ]
        for name, given in assessor_labels(pooled, scale, seed).items():
            sign_in(db, name)
            labels.save_many(db, "passage", name, given, mode="blind", via="key")
        step("labels", started)
        for table in ("turns", "pool", "rankings", "passage_labels", "label_history", "responses", "battles"):
            figures[table] = value(db, f"SELECT COUNT(*) FROM {table}")
        path = file_of(db)
    if path:
        figures["bytes"] = Path(path).stat().st_size
    return figures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", help="the new store: a SQLite file that does not exist yet, or a PostgreSQL URL")
    parser.add_argument(
        "--scale", type=int, default=10, help="the synthetic campaign's size in iKAT 2024s (default 10)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep-files", type=Path, metavar="DIR", help="write the synthetic files here and keep them")
    args = parser.parse_args(argv)
    if args.scale < 1:
        parser.error("--scale must be at least 1")
    if "://" not in args.target and Path(args.target).exists():
        parser.error(f"{args.target} exists already: give a new file")
    started = time.perf_counter()
    figures = build(args.target, args.scale, args.seed, args.keep_files)
    figures["seconds"]["total"] = round(time.perf_counter() - started, 1)
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
