"""CSV downloads and exports are inert: a text cell a spreadsheet would run as a formula is written as text."""

from __future__ import annotations

import csv
import io
import re

import pytest

from tests.helpers import ROOT, run_cli

EVIL = '=HYPERLINK("http://evil.example/x";"click")'  # a source name may hold it: no whitespace


def test_the_rule_prefixes_formula_text_and_leaves_numbers():
    from assess.formats.inert_csv import dicts_csv, frame_csv, inert_cell

    for text in ("=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx", EVIL):
        assert inert_cell(text) == "'" + text
    for kept in ("plain", "1", "", " =x", "'=already", -1, -0.5, 3, None):
        assert inert_cell(kept) == kept
    import pandas as pd

    frame = pd.DataFrame({"run": [EVIL, "bm25"], "score": [-0.5, 1.0], "=col": ["-x", "y"]})
    parsed = list(csv.reader(io.StringIO(frame_csv(frame))))
    assert parsed == [["run", "score", "'=col"], ["'" + EVIL, "-0.5", "'-x"], ["bm25", "1.0", "y"]]
    text = dicts_csv(["worker", "value"], [{"worker": "@cmd", "value": -1, "other": "=x"}])
    assert list(csv.reader(io.StringIO(text))) == [["worker", "value"], ["'@cmd", "-1"]]


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory, demo_copy):
    """The demo plus qrels under a source whose name is a spreadsheet formula (the id rule allows it)."""
    db = demo_copy(tmp_path_factory.mktemp("csv") / "s.db")
    qrels = ROOT / "assets" / "demo" / "llm-passages.qrels"
    run_cli("import", "qrels", qrels, "--source", EVIL, db=db, check=True)
    return db


def test_export_table_writes_a_formula_source_as_text(hostile_db, tmp_path):
    evil = EVIL
    out = run_cli("export", "table", "--table", "passage_labels", "--source", evil, db=hostile_db, check=True).stdout
    cells = list(csv.DictReader(io.StringIO(out)))
    assert cells and {c["source"] for c in cells} == {"'" + evil}
    assert all(not c[k].startswith(("=", "+", "@")) for c in cells for k in c)
    assert {c["grade"] for c in cells} <= set("01234")  # numbers untouched
    path = tmp_path / "labels.csv"
    run_cli("export", "table", "--table", "passage_labels", "--source", evil, "-o", path, db=hostile_db, check=True)
    assert {c["source"] for c in csv.DictReader(path.open(encoding="utf-8"))} == {"'" + evil}
    history = run_cli("export", "table", "--table", "label_history", db=hostile_db, check=True).stdout
    assert not re.search(r"(^|,)=HYPERLINK", history, re.MULTILINE)


def test_every_csv_writer_goes_through_the_one_helper():
    """No CSV is written in the code base except by assess/formats/inert_csv.py (a writer added later that
    skips it fails here)."""
    writers = re.compile(r"\.to_csv\(|csv\.writer\(|csv\.DictWriter\(")
    helper = ROOT / "assess" / "formats" / "inert_csv.py"
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for folder in ("assess", "store", "pages")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != helper
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if writers.search(line)
    ]
    assert found == []
