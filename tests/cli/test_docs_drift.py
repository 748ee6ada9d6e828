"""Commands the docs show that once failed as written (issue 22, item 14): `history` without `--source`,
`prejudge --estimate` without an endpoint."""

from __future__ import annotations

import json
import os

from tests.helpers import ROOT, run_cli


def test_history_without_source_lists_every_sources_changes_of_the_item(store_target, tmp_path):
    run_cli("init", "--demo", db=store_target, check=True)
    first, second = tmp_path / "a.qrels", tmp_path / "b.qrels"
    first.write_text("101_1 0 demo-doc-001:0 3\n")
    second.write_text("101_1 0 demo-doc-001:0 2\n")
    run_cli("import", "qrels", first, "--source", "nist", db=store_target, check=True)
    run_cli("import", "qrels", second, "--source", "nist", db=store_target, check=True)
    item = ("--turn", "101_1", "--item", "demo-doc-001:0")

    trail = json.loads(run_cli("history", *item, "--json", db=store_target, check=True).stdout)
    # the demo's labels of this passage (two LLM bulk imports, demo-ann's own rows), then nist's import and change
    assert [(r["source"], r["old"], r["new"], r["via"]) for r in trail] == [
        ("llm:demo-gpt", None, "4", "bulk"),
        ("demo-ann", None, "4", None),
        ("llm:demo-llama", None, "3", "bulk"),
        ("nist", None, "3", "bulk"),
        ("nist", "3", "2", None),
    ]
    assert [r["at"] for r in trail] == sorted(r["at"] for r in trail)

    lines = run_cli("history", *item, db=store_target, check=True).stdout.splitlines()
    assert [line.split()[1:4] for line in lines] == [
        ["llm:demo-gpt", "-", "->"],
        ["demo-ann", "-", "->"],
        ["llm:demo-llama", "-", "->"],
        ["nist", "-", "->"],
        ["nist", "3", "->"],
    ]
    # with --source the lines stay as they were: no source column
    one = run_cli("history", "--source", "nist", *item, db=store_target, check=True).stdout.splitlines()
    assert [line.split()[1:] for line in one] == [
        ["-", "->", "3", "mode=import", "via=bulk"],
        ["3", "->", "2", "mode=import", "via=None"],
    ]
    none = run_cli("history", "--turn", "101_1", "--item", "nothing", db=store_target, check=True).stdout
    assert none.strip() == "no source has ever labelled passage nothing of turn 101_1"


def test_history_of_a_nugget_without_source(tmp_path):
    db = tmp_path / "demo.db"
    run_cli("init", "--demo", db=db, check=True)
    trail = json.loads(
        run_cli("history", "--task", "nugget", "--turn", "101_1", "--item", "[3]", "--json", db=db, check=True).stdout
    )
    assert [r["source"] for r in trail] == ["gold"]
    assert json.loads(trail[0]["new"])["text"].startswith("Each week the running intervals get a little longer")


def test_prejudge_estimate_needs_a_model_but_no_endpoint(tmp_path):
    import subprocess
    import sys

    db = tmp_path / "demo.db"
    run_cli("init", "--demo", db=db, check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSESS_LLM_", "OPENAI_"))}
    env["PYTHONPATH"] = str(ROOT)

    def prejudge(*args):
        argv = [sys.executable, "-m", "assess", "prejudge", "--task", "passage", "--db", str(db), "--estimate", *args]
        return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)

    proc = prejudge("--model", "gpt-4o", "--json")
    assert proc.returncode == 0, proc.stderr
    estimate = json.loads(proc.stdout)
    # 217 pooled pairs, 3 of them with a passage that has no text
    assert (estimate["source"], estimate["covered"], estimate["skipped"], estimate["calls"]) == (
        "llm:gpt-4o",
        214,
        3,
        214,
    )
    assert "214 to ask" in proc.stderr
    missing = prejudge()
    assert missing.returncode == 2
    assert missing.stderr.strip() == "error: no LLM model given: pass --model MODEL (or set ASSESS_LLM_MODEL)"
