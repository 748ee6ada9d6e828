"""Real data and the embedded demo (issue 32, item 9): topics of one's own are not imported into a store that
holds the demo without a choice; --drop-demo removes everything the demo seeded in the import's transaction,
with a history row; --keep-demo keeps both. Checked on the stored rows before and after."""

from __future__ import annotations

import json

import pytest

from store import labels, open_db, sources
from tests.helpers import run_cli, snapshot


def rows(target, sql: str) -> list[dict]:
    from store.db import Store
    from store.db import rows as query

    with Store(target) as db:
        return query(db, sql)


def topics_file(folder, number: int = 7) -> str:
    """A small iKAT 2024 topics file of one's own: conversation ``number``, two turns, two PTKB statements."""
    turn = lambda k, text: {  # noqa: E731
        "turn_id": k,
        "utterance": text,
        "resolved_utterance": text,
        "response": "A response.",
        "ptkb_provenance": [1],
        "response_provenance": [],
    }
    topics = [
        {
            "number": number,
            "title": "Own topic",
            "ptkb": {"1": "I cycle to work.", "2": "I live in Ghent."},
            "turns": [turn(1, "Which bike lights are legal?"), turn(2, "And for the winter?")],
        }
    ]
    path = folder / f"own-{number}.json"
    path.write_text(json.dumps(topics))
    return str(path)


def run_file(folder, number: int = 7) -> str:
    path = folder / "own.run"
    path.write_text(
        "".join(f"{number}_{t} Q0 own-doc-{p}:0 {p} {10 - p}.0 own-run\n" for t in (1, 2) for p in (1, 2, 3))
    )
    return str(path)


def collections(target) -> dict[str, str]:
    return {r["id"]: r["collection"] for r in rows(target, "SELECT id, collection FROM conversations")}


def test_topics_into_the_demo_are_refused_without_a_choice(demo_target, tmp_path):
    before = snapshot(demo_target)
    proc = run_cli("import", "topics", topics_file(tmp_path), db=demo_target)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "holds the embedded demo" in proc.stderr and "Traceback" not in proc.stderr
    for hint in ("--db new.db", "--drop-demo", "--keep-demo", "Nothing was imported"):
        assert hint in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert snapshot(demo_target) == before
    # the flags are for topic imports only, and one at a time
    refused = run_cli("import", "qrels", tmp_path / "x.qrels", "--drop-demo", db=demo_target)
    assert refused.returncode == 2 and "--drop-demo is for topics, rag-topics imports, not qrels" in refused.stderr
    both = run_cli("import", "topics", topics_file(tmp_path), "--drop-demo", "--keep-demo", db=demo_target)
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
    assert snapshot(demo_target) == before


def test_a_new_store_needs_no_choice(tmp_path):
    target = tmp_path / "new.db"
    run_cli("import", "topics", topics_file(tmp_path), db=target, check=True)
    assert collections(target) == {"7": "ikat-2024"}


def test_drop_demo_removes_what_the_demo_seeded_and_what_hangs_on_it(demo_target, tmp_path):
    with open_db(demo_target) as db:  # a person worked on the demo: their label goes with the demo's turns
        sources.sign_in(db, "amy")
        labels.save(db, "passage", "amy", ("101_1", "demo-doc-001:0"), 3, mode="blind", via="key")
    assert set(collections(demo_target).values()) == {"demo"}
    proc = run_cli("import", "topics", topics_file(tmp_path), "--drop-demo", db=demo_target)
    assert proc.returncode == 0, proc.stderr
    assert collections(demo_target) == {"7": "ikat-2024"}
    assert rows(demo_target, "SELECT id FROM turns ORDER BY id") == [{"id": "7_1"}, {"id": "7_2"}]
    for table in ("passages", "runs", "pool", "rankings", "responses", "passage_labels", "ntr_labels", "nuggets"):
        assert rows(demo_target, f"SELECT COUNT(*) AS n FROM {table}") == [{"n": 0}], table
    # the demo's sources went; a person's stays, the organizers' holds the new topics' PTKB provenance
    assert [r["name"] for r in rows(demo_target, "SELECT name FROM sources ORDER BY name")] == ["amy", "organizers"]
    assert rows(demo_target, "SELECT DISTINCT turn_id FROM ptkb_labels ORDER BY turn_id") == [
        {"turn_id": "7_1"},
        {"turn_id": "7_2"},
    ]
    (dropped,) = rows(demo_target, "SELECT source, item, new_value FROM label_history WHERE label_table = 'drop-demo'")
    assert dropped["source"].startswith("cli:") and dropped["item"] == "demo"
    removed = json.loads(dropped["new_value"])
    assert removed["conversations"] == 2 and removed["turns"] == 12 and removed["passage_labels"] == 752
    assert removed["passages"] == 60 and removed["runs"] == 3 and removed["sources"] == 6
    # amy's label left its trail: the history keeps her write and the removal
    trail = rows(demo_target, "SELECT old_value, new_value FROM label_history WHERE source = 'amy' ORDER BY id")
    assert trail == [{"old_value": None, "new_value": "3"}, {"old_value": "3", "new_value": None}]
    # again, with no demo left: nothing to choose
    run_cli("import", "topics", topics_file(tmp_path, 8), db=demo_target, check=True)


def test_a_bad_file_with_drop_demo_leaves_the_demo_in_place(demo_target, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"number": 7, "title": "t", "turns": [{"turn_id": "x"}]}]')
    before = snapshot(demo_target)
    proc = run_cli("import", "topics", bad, "--drop-demo", db=demo_target)
    assert proc.returncode == 2 and "bad.json" in proc.stderr and "Traceback" not in proc.stderr
    assert snapshot(demo_target) == before


@pytest.mark.parametrize("choice", ["--keep-demo", None])
def test_keep_demo_imports_beside_it(demo_target, tmp_path, choice):
    args = ["import", "topics", topics_file(tmp_path), "--collection", "demo" if choice is None else "mine"]
    proc = run_cli(*args, *([choice] if choice else []), db=demo_target)
    assert proc.returncode == 0, proc.stderr  # the demo's own collection is no mix: no choice asked
    assert collections(demo_target)["7"] == ("mine" if choice else "demo")
    assert collections(demo_target)["101"] == "demo"
    assert rows(demo_target, "SELECT COUNT(*) AS n FROM label_history WHERE label_table = 'drop-demo'") == [{"n": 0}]
