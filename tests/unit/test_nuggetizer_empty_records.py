"""Assignment records whose ``nuggets`` list is empty (issue 22 item 4): the reader keeps them as records,
and ``import nuggetizer-assignments`` says how many it had nothing to store for instead of losing them."""

from __future__ import annotations

from assess.formats.nuggetizer import parse_nuggetizer_assignment_records, parse_nuggetizer_assignments
from tests.cli.test_nuggetizer_store import ASSIGNMENTS, NUGGETS, base, cli_json, jsonl  # noqa: F401 (base: fixture)


def test_the_reader_keeps_a_record_without_nuggets(tmp_path):
    path = jsonl(tmp_path / "a.jsonl", [*ASSIGNMENTS, {"qid": "5_3", "run_id": "A", "nuggets": []}])
    records = parse_nuggetizer_assignment_records(path)
    assert [(r.run, r.qid, r.line, len(r.nuggets)) for r in records] == [
        ("A", "5_1", 1, 3),
        ("A", "5_2", 2, 2),
        ("B", "5_1", 3, 2),
        ("A", "5_3", 4, 0),
    ]
    assert parse_nuggetizer_assignments(path) == [a for r in records for a in r.nuggets]


def test_import_counts_and_names_empty_records(base, tmp_path):
    nuggets = jsonl(tmp_path / "nuggets.jsonl", NUGGETS)
    assignments = jsonl(tmp_path / "a.jsonl", [*ASSIGNMENTS, {"qid": "5_3", "run_id": "A", "nuggets": []}])
    cli_json("import", "nuggetizer-nuggets", nuggets, "--source", "gold", db=base)
    summary = cli_json(
        "import", "nuggetizer-assignments", assignments, "--source", "llm:nz", "--nugget-source", "gold", db=base
    )
    assert summary["labels"] == 7 and summary["empty_records"] == 1
    assert summary["warnings"] == [
        f"1 record(s) have an empty nuggets list: no label to store for them (nuggetizer scores such a response 0; "
        f"first: {assignments}:4 qid '5_3')"
    ]
