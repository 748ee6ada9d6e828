"""Preference pairs for DPO (``battles export --layout dpo|hf``): one JSON object per decisive battle::

    {"prompt": "...", "chosen": "...", "rejected": "...", "topic_id": "12-1_3", "chosen_run": "a", "rejected_run": "b"}

``prompt`` is the topic's text, ``chosen`` / ``rejected`` the winning and losing answers' text (the layout of
Potato's arena export and of TRL's DPO trainer; the run and topic fields are extra columns a trainer ignores).
``hf`` writes the same lines as ``data/train.jsonl`` in a folder with a dataset card, which Hugging Face
``datasets.load_dataset(FOLDER)`` loads as its ``train`` split.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import IO, NamedTuple

from assess.errors import AssessError


class Pair(NamedTuple):
    prompt: str
    chosen: str
    rejected: str
    topic_id: str
    chosen_run: str
    rejected_run: str


def _line(pair: Pair) -> str:
    return json.dumps(pair._asdict(), ensure_ascii=False) + "\n"


def write_jsonl(out: IO[str], pairs: Iterable[Pair]) -> int:
    """Write the pairs as JSONL; return how many."""
    count = 0
    for pair in pairs:
        out.write(_line(pair))
        count += 1
    return count


CARD = """---
configs:
- config_name: default
  data_files:
  - split: train
    path: data/train.jsonl
---
# Preference pairs

Decisive side-by-side battles as `{prompt, chosen, rejected}` (ties and both-bad verdicts left out), written by
`python -m assess battles export --layout hf`.
"""


def write_hf_folder(folder: str | Path | None, pairs: Iterable[Pair]) -> int:
    """Write ``FOLDER/data/train.jsonl`` and ``FOLDER/README.md`` (its dataset card); the folder must not exist or
    be empty, so an earlier export is never mixed in. Returns how many pairs."""
    if folder is None:
        raise AssessError("--layout hf writes a folder: give it with --out")
    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise AssessError(f"{folder}: the hf layout writes a new folder; this one exists and is not empty")
    (folder / "data").mkdir(parents=True, exist_ok=True)
    with open(folder / "data" / "train.jsonl", "w", encoding="utf-8") as out:
        count = write_jsonl(out, pairs)
    (folder / "README.md").write_text(CARD, encoding="utf-8")
    return count
