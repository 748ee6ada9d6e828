"""`audit speed` and `audit rubber-stamp` on the demo: exact text, JSON and CSV from labels the test writes with
known active times (figures worked by hand in the comments), and an unknown task refused."""

from __future__ import annotations

import csv
import io
import json

import pytest

from store import open_db, queue
from store.db import rows
from store.sources import ensure_source
from tests.helpers import run_cli


@pytest.fixture
def db_path(demo_target):
    with open_db(demo_target) as db:
        amy = ensure_source(db, "amy", "assessor")
        pooled = rows(db, "SELECT turn_id, passage_id FROM pool ORDER BY turn_id, passage_id LIMIT 3")
        for r, ms in zip(pooled, (1000, 3000, 8000)):
            queue.save_passage_label(db, amy, r["turn_id"], r["passage_id"], 2, mode="blind", via="ui", active_ms=ms)
        queue.set_judging_mode(db, "shown", by="test")
        llm = rows(
            db,
            "SELECT turn_id, passage_id, grade FROM passage_labels WHERE source = 'llm:demo-gpt' "
            "AND grade IS NOT NULL ORDER BY turn_id DESC, passage_id LIMIT 5",
        )
        bob = ensure_source(db, "bob", "assessor")
        for r in llm:
            queue.save_passage_label(db, bob, r["turn_id"], r["passage_id"], r["grade"], mode="shown", active_ms=300)
    return demo_target


def test_audit_speed_prints_each_assessors_spread(db_path):
    out = run_cli("audit", "speed", db=db_path, check=True).stdout
    lines = out.splitlines()
    assert (
        lines[0] == "active time per label (idle over 60 s cut; flag: median under 1500 ms over 20+ labels of a task)"
    )
    table = [line.split() for line in lines[2:]]
    # amy: 1000 3000 8000: median 3000, q1 2000, q3 5500, IQR 3500; bob: five times 300
    assert ["amy", "task", "passage", "3", "3000", "2000", "5500", "3500"] in table
    assert ["bob", "task", "passage", "5", "300", "300", "300", "0"] in table
    report = json.loads(run_cli("audit", "speed", "--json", "--assessor", "amy", db=db_path, check=True).stdout)
    assert {(r["by"], r["group"]): r["median"] for r in report["rows"] if r["by"] == "task"} == {
        ("task", "passage"): 3000.0
    }
    assert report["flags"] == [] and report["rules"]["idle_limit_ms"] == 60000


def test_audit_speed_labels_is_one_csv_row_per_timed_event(db_path):
    out = run_cli("audit", "speed", "--labels", "--assessor", "amy", db=db_path, check=True).stdout
    got = list(csv.DictReader(io.StringIO(out)))
    assert [(r["assessor"], r["task"], r["value"], r["active_ms"]) for r in got] == [
        ("amy", "passage", "2", "1000"),
        ("amy", "passage", "2", "3000"),
        ("amy", "passage", "2", "8000"),
    ]
    assert out.splitlines()[0] == "assessor,task,item,value,mode,active_ms,guideline_version,at,length"


def test_audit_rubber_stamp_flags_fast_accepts(db_path):
    out = run_cli("audit", "rubber-stamp", db=db_path, check=True).stdout.splitlines()
    assert out[1] == (
        "bob vs llm:demo-gpt: 5 of 5 equal the LLM (1.00), median 300 ms over 5 timed, 0 corrected; "
        "rubber-stamping: 5 accepted, median 300 ms, 0% corrected"
    )
    assert out[2].split() == ["<0.5s", "5", "of", "5", "equal", "(1.00)"]
    report = json.loads(run_cli("audit", "rubber-stamp", "--json", "--task", "ptkb", db=db_path, check=True).stdout)
    assert report["rows"] == [] and report["anchoring"] == []
    refused = run_cli("audit", "rubber-stamp", "--task", "ntr", db=db_path)
    assert refused.returncode == 2 and "invalid choice" in refused.stderr
