"""The CLI contract of the foundation: init, import, export, stats; bad input → exit 2, one line, store unchanged."""

from __future__ import annotations

import hashlib
import json

import pytest

from store import sources
from tests.helpers import ROOT, rows, run_cli, run_cli_process, snapshot

DEMO = ROOT / "assets" / "demo"


@pytest.fixture(scope="module")
def demo_db(module_demo_target):
    """The demo store, once per engine; tests that use it must leave it as they found it."""
    return module_demo_target


@pytest.fixture
def topics_db(store_target):
    run_cli("import", "topics", DEMO / "topics.json", db=store_target, check=True)
    return store_target


def snapshot_but_import_actions(target) -> str:
    """:func:`snapshot` of every table, leaving out the history rows that record who imported what (every
    import, even one that changes no label, is an organizer action in the history)."""
    import sqlalchemy as sa

    from store.db import Store
    from store.db import rows as query

    h = hashlib.sha256()
    with Store(target) as db:
        for name in sorted(sa.inspect(db.sa).get_table_names()):
            where = " WHERE label_table != 'import'" if name == "label_history" else ""
            for row in sorted((tuple(r.values()) for r in query(db, f'SELECT * FROM "{name}"{where}')), key=repr):
                h.update(repr((name, row)).encode())
    return h.hexdigest()


def test_every_command_has_help():
    top = run_cli("--help")
    assert top.returncode == 0
    listing = top.stdout.split("COMMAND\n", 2)[-1].split("options:")[0]
    commands = [
        line.split()[0] for line in listing.splitlines() if line.startswith("    ") and not line.startswith("     ")
    ]
    assert {"init", "import", "export", "stats", "agreement", "score"} <= set(commands)
    for command in commands:
        proc = run_cli(command, "--help")
        assert proc.returncode == 0, (command, proc.stderr)
        assert f"usage: python -m assess {command}" in proc.stdout


def test_export_any_label_table_as_csv_and_parquet(demo_db, tmp_path):
    import pandas as pd

    csv_out = run_cli(
        "export", "table", "--table", "ptkb_labels", "--source", "llm:demo-gpt", db=demo_db, check=True
    ).stdout
    frame = pd.read_csv(__import__("io").StringIO(csv_out))
    assert len(frame) == 126 and set(frame["source"]) == {"llm:demo-gpt"} and frame["relevant"].sum() == 18
    parquet = tmp_path / "labels.parquet"
    run_cli("export", "table", "--table", "passage_labels", "-o", parquet, db=demo_db, check=True)
    table = pd.read_parquet(parquet)
    assert len(table) == 751 and sorted(table["grade"].value_counts().to_dict().items()) == [
        (0, 439),
        (1, 140),
        (2, 77),
        (3, 53),
        (4, 42),
    ]


@pytest.mark.both_engines
def test_demo_stats(demo_db):
    stats = json.loads(run_cli("stats", "--json", db=demo_db, check=True).stdout)
    assert (stats["conversations"], stats["turns"]) == (2, 12)
    assert stats["passages"] >= 40 and stats["passages_with_text"] >= 40
    assert stats["pooled_pairs"] == 217
    llm = stats["passage_labels"]["llm:demo-gpt"]
    assert llm["count"] == sum(llm["grades"]) == 214
    assert stats["ptkb_labels"]["organizers"]["count"] == 126
    assert stats["ntr_labels"]["llm:demo-gpt"]["count"] == 192


def test_qrels_round_trip_same_content(topics_db, tmp_path):
    src = tmp_path / "in.qrels"
    # tabs, trailing spaces and CRLF in; canonical TREC out with the same (turn, passage, grade) set
    src.write_bytes(b"101_1\t0\tdemo-doc-001:0 \t3\r\n101_2 0 demo-doc-002:1 0\r\n102_1 0 x:9 4\r\n")
    run_cli("import", "qrels", src, "--source", "nist", db=topics_db, check=True)
    out = run_cli("export", "qrels", "--source", "nist", db=topics_db, check=True).stdout
    assert out == "101_1 0 demo-doc-001:0 3\n101_2 0 demo-doc-002:1 0\n102_1 0 x:9 4\n"
    again = tmp_path / "again.qrels"
    again.write_text(out)
    before = snapshot_but_import_actions(topics_db)
    imports = "SELECT source, item, via FROM label_history WHERE label_table = 'import' ORDER BY id"
    recorded = rows(topics_db, imports, {})
    run_cli("import", "qrels", again, "--source", "nist", db=topics_db, check=True)
    assert snapshot_but_import_actions(topics_db) == before  # re-importing the export changes nothing
    assert rows(topics_db, imports, {})[:-1] == recorded  # but who imported it is in the history
    assert rows(topics_db, imports, {})[-1][1:] == ("qrels again.qrels", "nist")


def test_demo_llm_qrels_round_trip(demo_db):
    exported = run_cli("export", "qrels", "--source", "llm:demo-gpt", db=demo_db, check=True).stdout
    original = {tuple(l.split()) for l in (DEMO / "llm-passages.qrels").read_text().splitlines() if l.strip()}
    assert {tuple(l.split()) for l in exported.splitlines()} == original


def test_ptkb_export_matches_topics_provenance(demo_db):
    out = run_cli("export", "ptkb-qrels", "--source", "organizers", db=demo_db, check=True).stdout
    topics = json.loads((DEMO / "topics.json").read_text())
    expected = {
        f"{c['number']}_{t['turn_id']} 0 {k} {int(int(k) in t['ptkb_provenance'])}"
        for c in topics
        for t in c["turns"]
        for k in c["ptkb"]
    }
    assert set(out.splitlines()) == expected


MALFORMED = [
    # (kind, file name, content, expected line, words the message must contain)
    ("qrels", "truncated.qrels", "101_1 0 demo-doc-001:0 3\n101_1 0 demo-doc-001:1\n", 2, "4 fields"),
    ("qrels", "grade9.qrels", "101_1 0 a 3\n101_1 0 b 1\n101_1 0 c 9\n", 3, "a grade 0..4"),
    ("qrels", "nonnumeric.qrels", "101_1 0 a high\n", 1, "an integer grade"),
    ("qrels", "conflict.qrels", "101_1 0 a 3\n101_2 0 a 1\n101_1 0 a 2\n", 3, "one value per item"),
    ("qrels", "utf8.qrels", b"101_1 0 a 3\n101_1 0 \xc3\x28 1\n", 2, "UTF-8"),
    ("qrels", "unknown_turn.qrels", "101_1 0 a 3\n999_1 0 a 1\n", 2, "a turn id present in the store"),
    ("topics", "truncated.json", '[{"number": 7, "title": "x",\n "ptkb": {"1": "a"}', 2, "complete, valid JSON"),
    ("topics", "types.json", '[\n {"number": 7, "ptkb": {"1": "a"},\n  "turns": {"turn_id": 1}}\n]', 3, "a list"),
    ("ptkb-qrels", "statement.qrels", "101_1 0 1 1\n101_1 0 77 0\n", 2, "a PTKB statement number"),
    ("run", "run_fields.run", "101_1 Q0 a 1 2.0 r\n101_1 Q0 b 2\n", 2, "6 fields"),
    ("run", "run_score.run", "101_1 Q0 a 1 high r\n", 1, "a numeric score"),
    (
        "passages",
        "passages.jsonl",
        '{"doc_id": "d", "passage_id": "1", "passage_text": "ok"}\n{"doc_id": "d", ',
        2,
        "one JSON object per line",
    ),
    ("nuggets", "nuggets.json", '{"101_1": {"[1]": {"text": 5}}}', 1, "a str"),
    ("ntr-labels", "ntr.tsv", "0_101_1_1_demo-bm25\t1\n0_101_1_1_demo-bm25\tyes\n", 2, "a label 0 or 1"),
]


@pytest.mark.parametrize("kind, name, content, line, words", MALFORMED, ids=[m[1] for m in MALFORMED])
def test_malformed_file_is_refused_cleanly(demo_db, tmp_path, kind, name, content, line, words):
    db = demo_db  # refused: the shared demo store stays as it was (checked below)
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    before = snapshot(db)
    extra = ["--nuggets", "gold"] if kind == "ntr-labels" else []
    proc = run_cli("import", kind, path, *extra, db=db)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr  # one line, no traceback
    assert f"{path}:{line}:" in lines[0]
    assert words in lines[0]
    assert "Traceback" not in proc.stderr
    assert snapshot(db) == before


def test_unknown_source_on_export_is_exit_2(demo_db):
    proc = run_cli("export", "qrels", "--source", "nobody", db=demo_db)
    assert proc.returncode == 2
    assert "no label source named 'nobody'" in proc.stderr


def test_missing_file_is_exit_2(tmp_path):
    proc = run_cli("import", "qrels", tmp_path / "nope.qrels", db=tmp_path / "x.db")
    assert proc.returncode == 2
    assert "nope.qrels: file not found" in proc.stderr


def test_a_file_that_is_not_a_database_is_exit_2(tmp_path):
    bogus = tmp_path / "notes.db"
    bogus.write_text("these are notes, not a database\n")
    proc = run_cli("stats", db=bogus)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: {bogus}: cannot open the store: file is not a database"
    assert bogus.read_text() == "these are notes, not a database\n"


def test_a_directory_given_as_file_is_exit_2(tmp_path):
    proc = run_cli("import", "qrels", tmp_path, db=tmp_path / "x.db")
    # refused before any read, by the one reading path (formerly the OS's "Is a directory")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr == f"error: {tmp_path}: expected a regular file, found a directory\n"


def test_an_import_cannot_write_into_an_assessors_source(store_target, tmp_path):
    from store import open_db

    db_path = store_target
    run_cli("init", "--demo", db=db_path, check=True)
    # 'nist' itself is now reserved at sign-in (store.queue); any other assessor name stays protected
    with open_db(db_path) as db:
        sources.sign_in(db, "kim")
    qrels = tmp_path / "n.qrels"
    qrels.write_text("101_1 0 demo-doc-001:0 3\n")
    before = snapshot(db_path)
    proc = run_cli("import", "qrels", qrels, "--source", "kim", db=db_path)
    assert proc.returncode == 2 and "is the assessor kim's own labels" in proc.stderr
    assert snapshot(db_path) == before


def test_assign_turns_and_conversations(store_target):
    from store import open_db, queue

    db_path = store_target
    run_cli("init", "--demo", db=db_path, check=True)
    out = run_cli("assign", "--assessor", "lee", "--conversation", "102", "--turn", "101_3", db=db_path, check=True)
    assert out.stdout.strip() == "lee: 7 new turns assigned (7 given)"
    with open_db(db_path) as db:
        items = queue.queue(db, "lee")
    assert {t for t, _, _ in items} == {"101_3", *(f"102_{i}" for i in range(1, 7))}
    run_cli("assign", "--assessor", "lee", "--turn", "101_3", "--remove", db=db_path, check=True)
    with open_db(db_path) as db:
        assert "101_3" not in {t for t, _, _ in queue.queue(db, "lee")}
    proc = run_cli("assign", "--assessor", "lee", "--turn", "9_9", db=db_path)
    assert proc.returncode == 2 and "unknown turn id '9_9'" in proc.stderr


def test_topics_whose_conversation_ids_belong_to_another_collection_are_refused_with_the_line(store_target, tmp_path):
    db_path = store_target
    run_cli("init", "--demo", db=db_path, check=True)  # conversations 101 and 102, collection 'demo'
    other = tmp_path / "2024.json"
    other.write_text(
        json.dumps(
            [
                {"number": 7, "title": "t", "ptkb": {"1": "s"}, "turns": [{"turn_id": 1, "utterance": "u"}]},
                {"number": 102, "title": "t", "ptkb": {"1": "s"}, "turns": [{"turn_id": 1, "utterance": "u"}]},
            ],
            indent=1,
        )
    )
    lines = other.read_text().splitlines()
    line = lines.index('  "number": 102,')  # 1-based: the line before, where that conversation's object opens
    assert lines[line - 1] == " {"
    before = snapshot(db_path)
    proc = run_cli("import", "topics", other, db=db_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith(
        f"error: {other}:{line}: expected conversation ids not used by another collection (102 already belongs to demo"
    )
    assert snapshot(db_path) == before


def test_history_of_one_label_includes_its_bulk_import(store_target, tmp_path):
    db_path = store_target
    run_cli("init", "--demo", db=db_path, check=True)
    first, second = tmp_path / "a.qrels", tmp_path / "b.qrels"
    first.write_text("101_1 0 demo-doc-001:0 3\n101_1 0 demo-doc-002:0 1\n")
    second.write_text("101_1 0 demo-doc-001:0 2\n")
    run_cli("import", "qrels", first, "--source", "nist", db=db_path, check=True)
    run_cli("import", "qrels", second, "--source", "nist", db=db_path, check=True)
    proc = run_cli(
        "history", "--source", "nist", "--turn", "101_1", "--item", "demo-doc-001:0", "--json", db=db_path, check=True
    )
    trail = json.loads(proc.stdout)
    assert [(r["old"], r["new"], r["mode"], r["via"]) for r in trail] == [
        (None, "3", "import", "bulk"),
        ("3", "2", "import", None),
    ]
    text = run_cli(
        "history", "--source", "nist", "--turn", "101_1", "--item", "demo-doc-002:0", db=db_path, check=True
    ).stdout
    assert text.strip().endswith("- -> 1  mode=import via=bulk")
    proc = run_cli("history", "--source", "nobody", "--turn", "101_1", "--item", "x", db=db_path)
    assert proc.returncode == 2 and "no label source named 'nobody'" in proc.stderr


def test_processes_starting_on_one_new_store_load_the_demo_once(store_target):
    """Several app processes (or `init --demo`) starting at once on one new store: one loads the demo."""
    from concurrent.futures import ThreadPoolExecutor

    db = store_target
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: run_cli_process("init", "--demo", db=db), range(4)))
    assert [(r.returncode, r.stderr) for r in results] == [(0, "")] * 4
    said = sorted(r.stdout.strip().split(": ", 1)[1] for r in results)
    assert said == ["created with the demo data"] + ["not empty, demo not loaded"] * 3
    assert rows(db, "SELECT COUNT(*) FROM pool", {}) == [(217,)]


STATS_OF_DEMO_AND_FILES = {
    "conversations": 2,
    "turns": 12,
    "passages": 62,
    "passages_with_text": 58,
    "runs": 3,
    "pooled_pairs": 219,
    "pooled_turns": 12,
    "passage_labels": {
        "demo-ann": {"count": 162, "turns": 9, "grades": [104, 24, 19, 6, 9], "cannot_judge": 0},
        "demo-ben": {"count": 161, "turns": 9, "grades": [102, 26, 15, 12, 6], "cannot_judge": 0},
        "kim": {"count": 1, "turns": 1, "grades": [0, 0, 1, 0, 0], "cannot_judge": 1},
        "llm:demo-gpt": {"count": 214, "turns": 12, "grades": [125, 38, 18, 17, 16], "cannot_judge": 0},
        "llm:demo-llama": {"count": 214, "turns": 12, "grades": [108, 52, 25, 18, 11], "cannot_judge": 0},
        "nist": {"count": 3, "turns": 2, "grades": [1, 1, 0, 1, 0], "cannot_judge": 0},
    },
    "ptkb_labels": {
        "demo-ann": {"count": 126, "relevant": 17, "turns": 12},
        "kim": {"count": 2, "relevant": 1, "turns": 1},
        "llm:demo-gpt": {"count": 126, "relevant": 18, "turns": 12},
        "organizers": {"count": 126, "relevant": 17, "turns": 12},
    },
    "nuggets": {"gold": {"count": 64, "turns": 12, "with_span": 0, "deduplicated": 0}},
    "ntr_labels": {"llm:demo-gpt": {"count": 192, "yes": 87}},
    "responses": {"count": 36, "with_citations": 0, "citations": 0},  # the demo's responses cite nothing
    # kim signed in under a typed name (open mode) and holds no turn: not listed on the review dashboard
    "review": {"assessors": [], "topics": [], "timeline": {"unit": "hour", "assigned": 0, "points": []}},
}


@pytest.mark.both_engines
def test_stats_count_the_same_on_both_engines(store_target, tmp_path):
    """The same imports and labels give the same `stats --json`, key for key, on SQLite and PostgreSQL."""
    from store import open_db, queue

    run_cli("init", "--demo", db=store_target, check=True)
    qrels = tmp_path / "n.qrels"
    qrels.write_text("101_1 0 demo-doc-001:0 3\n101_1 0 demo-doc-002:0 1\n102_2 0 x:1 0\n")
    run_cli("import", "qrels", qrels, "--source", "nist", db=store_target, check=True)
    with open_db(store_target) as db:
        name = sources.sign_in(db, "kim")
        queue.save_passage_label(db, name, "101_1", "demo-doc-001:0", 2)
        queue.save_passage_label(db, name, "101_1", "demo-doc-002:0", None)  # cannot judge
        queue.save_ptkb_label(db, name, "101_1", "1", 1)
        queue.save_ptkb_label(db, name, "101_1", "2", 0)
    out = run_cli("stats", "--json", db=store_target, check=True).stdout
    assert json.loads(out) == STATS_OF_DEMO_AND_FILES
    assert list(json.loads(out)["passage_labels"]) == [
        "demo-ann",
        "demo-ben",
        "kim",
        "llm:demo-gpt",
        "llm:demo-llama",
        "nist",
    ]  # sources by name
