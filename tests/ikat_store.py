"""The iKAT 2024 store of docs/cli.md ("The public iKAT files"), built from ../shared/data for the tests and
benchmarks that need a real campaign's scale: 17 conversations, 218 turns, 45,471 pooled pairs, NIST's
20,575 and GPT-4's 32,999 passage labels, 3,660 PTKB labels, the human nuggets and the crowd's NtR labels."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

IKAT2024_IMPORTS = (
    ("topics", "irlabamsterdam-iKAT/2024/data/2024_test_topics.json"),
    ("qrels", "gyeozai-CFDA-TREC-iKAT2025/DATA/topics/2024_test_qrels.trec", "--source", "nist"),
    (
        "qrels",
        "irlabamsterdam-CONE-RAG/resources/automatic_resources/llm-gpt4-pool-depth-30.txt",
        "--source",
        "llm:gpt-4",
    ),
    ("nuggets", "irlabamsterdam-CONE-RAG/resources/human_resources/gold_nuggets_human.json", "--source", "human"),
    (
        "nuggets",
        "irlabamsterdam-CONE-RAG/resources/human_resources/gold_nuggets_human_deduplicated.json",
        "--source",
        "human",
        "--dedup",
    ),
    ("ntr-labels", "irlabamsterdam-CONE-RAG/resources/human_resources/human-study-matching-labels.txt"),
)
"""docs/cli.md's import commands, in order: (kind, file under ../shared/data, options...)."""


def missing_files(data: Path = DATA) -> list[Path]:
    """The files of :data:`IKAT2024_IMPORTS` absent under ``data``."""
    return [data / entry[1] for entry in IKAT2024_IMPORTS if not (data / entry[1]).exists()]


def build_ikat2024(target: str | Path, data: Path = DATA) -> str:
    """Import the public iKAT 2024 files into the new store ``target`` with docs/cli.md's commands (in process,
    quietly); returns ``target``. The caller checks :func:`missing_files` first."""
    import contextlib
    import io

    from assess.cli import main

    for kind, path, *options in IKAT2024_IMPORTS:
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(["import", kind, str(data / path), *options, "--db", str(target)])
        if code:
            raise RuntimeError(f"import {kind} {path} exited {code}")
    return str(target)


def add_shared_runs(target: str | Path, *, count: int = 8, depth: int = 20, seed: int = 0) -> list[str]:
    """Import ``count`` runs that rank, per turn, only the passages NIST and GPT-4 both graded (issue 37's
    acceptance check): run j scores a passage 0.1 j x its NIST grade + 0.05 (7 - j) x its GPT-4 grade + a
    seeded normal noise (sd 2), so the runs range from judge-led to reference-led and overlap as real runs do.
    Returns the run names."""
    import contextlib
    import io
    import tempfile

    import numpy as np

    from assess.cli import main
    from store import open_db
    from store.audit import task_labels

    with open_db(target) as db:
        labels = task_labels(db, "passage", ["nist", "llm:gpt-4"])
    nist, gpt = labels["nist"], labels["llm:gpt-4"]
    by_turn: dict[str, list[str]] = {}
    for turn, passage in sorted(set(nist) & set(gpt)):
        by_turn.setdefault(turn, []).append(passage)
    rng = np.random.default_rng(seed)
    names = []
    with tempfile.TemporaryDirectory() as folder:
        for j in range(count):
            name = f"shared-{j + 1}"
            lines = []
            for turn, passages in by_turn.items():
                score = [0.1 * j * nist[(turn, p)] + 0.05 * (7 - j) * gpt[(turn, p)] for p in passages]
                score = np.array(score) + 2 * rng.normal(size=len(passages))
                for rank, k in enumerate(np.argsort(-score, kind="stable")[:depth], start=1):
                    lines.append(f"{turn} Q0 {passages[k]} {rank} {score[k]:.4f} {name}\n")
            path = Path(folder) / f"{name}.run"
            path.write_text("".join(lines), encoding="utf-8")
            with contextlib.redirect_stdout(io.StringIO()):
                code = main(["import", "run", str(path), "--name", name, "--db", str(target)])
            if code:
                raise RuntimeError(f"import run {name} exited {code}")
            names.append(name)
    return names
