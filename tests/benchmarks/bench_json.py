"""Benchmark: peak memory of importing large JSON and JSONL files (issue 21, "big files in bounded memory").

Run: python tests/benchmarks/bench_json.py [--mb MB] [--kind topics|answers|upload|nuggets] [--baseline DIR]

Writes synthetic files of about MB megabytes (default 200) and imports each in a child process, whose
peak resident memory (ru_maxrss from ``wait4``, the child alone) and wall time are printed:

- ``topics``: an iKAT 2024-style topics JSON (one top-level list of conversations: title, 5 PTKB
  statements, 12 turns each with utterance, resolved utterance, a ~1,200-character response, PTKB and
  response provenance), imported by the command line: ``python -m assess import topics FILE --db DB``;
- ``answers``: a TREC RAG 2024 answer JSONL (40 runs, 4 cited sentences per answer, 20 references),
  imported by ``python -m assess import rag-answers FILE --db DB`` into a store holding its topics;
- ``upload``: the topics file through the /data page's service function,
  :func:`assess.services.loading.load_upload`, given the upload as the page has it: the whole file in
  memory as a file object (Streamlit keeps an upload in memory), so the figure includes those bytes;
- ``nuggets``: a CONE-RAG-style gold nugget JSON (``{turn id: {"[k]": {"text", "relevance"}}}``, 20
  nuggets of about 120 characters per turn, as ``gold_nuggets_human.json`` is laid out), imported by
  ``python -m assess import nuggets FILE --source human --db DB`` into a store holding its topics.

With ``--baseline DIR`` (a checkout of an earlier version, e.g. ``git worktree add DIR 86a6b52``) the
same children run that checkout's code too. Use a small MB for it: before streaming, JSON took about
90 times its size in memory.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORDS = [
    "tea",
    "coffee",
    "delft",
    "river",
    "bike",
    "museum",
    "rain",
    "train",
    "school",
    "garden",
    "music",
    "recipe",
    "doctor",
    "market",
    "history",
    "winter",
    "summer",
    "budget",
    "health",
    "energy",
    "travel",
    "ticket",
    "hotel",
    "language",
    "science",
]


def _text(seed: int, length: int) -> str:
    out, n = [], seed
    while sum(map(len, out)) + len(out) < length:
        n = (n * 1103515245 + 12345) % 2**31
        out.append(WORDS[n % len(WORDS)])
    return " ".join(out)[:length].rstrip() + "."


SENTENCES = [_text(i, 250) for i in range(997)]  # reused, so writing 200 MB takes seconds


def _long(seed: int, length: int) -> str:
    parts, i = [], seed
    while sum(map(len, parts)) < length:
        parts.append(SENTENCES[i % len(SENTENCES)])
        i += 7
    return " ".join(parts)[:length]


def topics_file(path: Path, megabytes: float, turns: int = 12) -> tuple[int, int]:
    """An iKAT 2024-style topics file of about ``megabytes`` MB; (conversations, turns) written."""
    conversations = 0
    with open(path, "w", encoding="utf-8") as out:
        out.write("[\n")
        while out.tell() < megabytes * 1_000_000:
            c = conversations
            conversation = {
                "number": c,
                "title": _long(c, 40),
                "ptkb": {str(k): _long(c + k, 60) for k in range(1, 6)},
                "turns": [
                    {
                        "turn_id": t,
                        "utterance": _long(c + t, 80),
                        "resolved_utterance": _long(c + t + 1, 100),
                        "response": _long(c * 13 + t, 1200),
                        "ptkb_provenance": [1 + (c + t) % 5, 1 + (c + 2 * t) % 5],
                        "response_provenance": [f"clueweb22-en{c % 9999:04d}-{t:02d}-{k:05d}:{k}" for k in range(5)],
                    }
                    for t in range(1, turns + 1)
                ],
            }
            out.write(("" if c == 0 else ",\n") + json.dumps(conversation, indent=2))
            conversations += 1
        out.write("\n]\n")
    return conversations, conversations * turns


def _answer(r: int, i: int) -> str:
    """Line ``i`` of run ``r`` of the answer file: topic ``i`` (turn ``<i // 10>_<i % 10 + 1>``)."""
    references = [f"msmarco_v2.1_doc_{(i * 31 + k * 7 + r) % 60_000:05d}#{k}" for k in range(20)]
    answer = [
        {"text": SENTENCES[(i + s + r) % len(SENTENCES)], "citations": [(i + s) % 20, (s * 3 + r) % 20]}
        for s in range(4)
    ]
    line = {
        "run_id": f"run{r:02d}",
        "topic_id": f"{i // 10}_{i % 10 + 1}",
        "topic": _long(i, 90),
        "references": references,
        "response_length": 220,
        "answer": answer,
    }
    return json.dumps(line) + "\n"


def answers_file(path: Path, topics: Path, megabytes: float, runs: int = 40) -> int:
    """A TREC RAG 2024 answer JSONL of about ``megabytes`` MB (``runs`` runs over the same topics) and a
    topics file holding those topics as turns; the number of lines written."""
    target = megabytes * 1_000_000
    per_run = int(target / len(_answer(0, 0)) / runs) + 1
    conversations = (per_run + 9) // 10
    topics.write_text(
        json.dumps(
            [
                {"number": c, "ptkb": {"1": "s"}, "turns": [{"turn_id": t, "utterance": "u"} for t in range(1, 11)]}
                for c in range(conversations)
            ]
        )
    )
    lines = 0
    with open(path, "w", encoding="utf-8") as out:
        for r in range(runs):
            out.write("".join(_answer(r, i) for i in range(per_run)))
            lines += per_run
            if out.tell() >= target:
                break
    return lines


def nuggets_file(path: Path, topics: Path, megabytes: float, per_turn: int = 20) -> tuple[int, int]:
    """A CONE-RAG-style gold nugget file of about ``megabytes`` MB and a topics file holding its turns
    (conversations of 10 turns); (turns, nuggets) written."""
    turns = 0
    with open(path, "w", encoding="utf-8") as out:
        out.write("{\n")
        while out.tell() < megabytes * 1_000_000:
            entries = {
                f"[{k}]": {"text": _long(turns * 31 + k, 120), "relevance": str(1 + (turns + k) % 3)}
                for k in range(1, per_turn + 1)
            }
            turn_id = f"{turns // 10}_{turns % 10 + 1}"
            out.write(("" if turns == 0 else ",\n") + json.dumps(turn_id) + ": " + json.dumps(entries, indent=2))
            turns += 1
        out.write("\n}\n")
    conversations = (turns + 9) // 10
    topics.write_text(
        json.dumps(
            [
                {"number": c, "ptkb": {"1": "s"}, "turns": [{"turn_id": t, "utterance": "u"} for t in range(1, 11)]}
                for c in range(conversations)
            ]
        )
    )
    return turns, turns * per_turn


def child(argv: list[str], cwd: Path, env: dict | None = None) -> tuple[float, float, str]:
    """Run a child process; (seconds, its own peak RSS in MiB, its stdout); exits on failure."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=err, text=True, env=env)
        _pid, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode:
            sys.exit(f"{' '.join(map(str, argv[:6]))}: failed ({proc.returncode}): {err.read().strip()[-500:]}")
        return elapsed, usage.ru_maxrss / 1024, out.read()


def cli(root: Path, *args) -> tuple[float, float, str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return child([sys.executable, "-m", "assess", *map(str, args)], root, env)


def upload_child(file: str, db: str) -> None:
    """In a fresh process: the upload as the /data page has it (all its bytes in memory, a file object),
    imported by the page's service function."""
    from assess.services.loading import load_upload
    from store import open_db

    with open(file, "rb") as handle:
        upload = io.BytesIO(handle.read())
    try:
        summary = load_upload(open_db(db), "topics", Path(file).name, upload)
    except TypeError:  # an earlier version takes the bytes
        summary = load_upload(open_db(db), "topics", Path(file).name, upload.getvalue())
    print(json.dumps(summary))


def report(label: str, root: Path, size: float, what: str, seconds: float, peak: float, out: str) -> None:
    summary = out.strip().splitlines()[-1] if out.strip() else ""
    print(
        f"{label}: {what}, {size:.0f} MB: peak RSS {peak:.0f} MiB ({peak / size:.2f} MiB per MB), "
        f"{seconds:.1f} s  {summary[:160]}",
        flush=True,
    )


def main() -> None:
    args = sys.argv[1:]
    megabytes = float(args[args.index("--mb") + 1]) if "--mb" in args else 200
    kinds = [args[args.index("--kind") + 1]] if "--kind" in args else ["topics", "answers", "upload"]
    roots = [("ours", ROOT)]
    if "--baseline" in args:
        roots.append(("baseline", Path(args[args.index("--baseline") + 1]).resolve()))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        start = time.perf_counter()
        topics = tmp / "big_topics.json"
        if {"topics", "upload"} & set(kinds):
            conversations, turns = topics_file(topics, megabytes)
            print(f"wrote {topics.stat().st_size / 1e6:.0f} MB: {conversations:,} conversations, {turns:,} turns")
        if "answers" in kinds:
            answers, small_topics = tmp / "big_answers.jsonl", tmp / "answer_topics.json"
            lines = answers_file(answers, small_topics, megabytes)
            print(f"wrote {answers.stat().st_size / 1e6:.0f} MB: {lines:,} answer lines")
        if "nuggets" in kinds:
            nuggets, nugget_topics = tmp / "big_nuggets.json", tmp / "nugget_topics.json"
            turns, count = nuggets_file(nuggets, nugget_topics, megabytes)
            print(f"wrote {nuggets.stat().st_size / 1e6:.0f} MB: {turns:,} turns, {count:,} nuggets")
        print(f"(files written in {time.perf_counter() - start:.0f} s)", flush=True)
        for label, root in roots:
            for kind in kinds:
                db = tmp / f"{label}-{kind}.db"
                if kind == "topics":
                    size = topics.stat().st_size / 1e6
                    report(label, root, size, "import topics (CLI)", *cli(root, "import", "topics", topics, "--db", db))
                elif kind == "answers":
                    cli(root, "import", "topics", small_topics, "--db", db)
                    size = answers.stat().st_size / 1e6
                    result = cli(root, "import", "rag-answers", answers, "--db", db, "--json")
                    report(label, root, size, "import rag-answers (CLI)", *result)
                elif kind == "nuggets":
                    cli(root, "import", "topics", nugget_topics, "--db", db)
                    size = nuggets.stat().st_size / 1e6
                    result = cli(root, "import", "nuggets", nuggets, "--source", "human", "--db", db, "--json")
                    report(label, root, size, "import nuggets (CLI)", *result)
                else:
                    code = (
                        f"import sys; sys.path.insert(0, {str(root)!r}); "
                        f"sys.path.insert(1, {str(Path(__file__).parent)!r}); import bench_json; "
                        f"bench_json.upload_child({str(topics)!r}, {str(db)!r})"
                    )
                    size = topics.stat().st_size / 1e6
                    result = child([sys.executable, "-c", code], root)
                    report(label, root, size, "/data upload of topics (load_upload)", *result)
                for leftover in tmp.glob(f"{db.name}*"):
                    leftover.unlink()


if __name__ == "__main__":
    main()
