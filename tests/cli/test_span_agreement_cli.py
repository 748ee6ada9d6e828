"""`nuggets spans-agreement`: spans stored through the store's own writes on the demo, the figures recomputed
here from the stored passage texts (kappa by scikit-learn's ``cohen_kappa_score``), bad input refused."""

from __future__ import annotations

import json

import pytest
from sklearn.metrics import cohen_kappa_score

from store import conversations, nuggets, open_db
from tests.helpers import run_cli, snapshot

P1, P2 = "demo-doc-001:0", "demo-doc-002:3"


@pytest.fixture
def marked(demo_target):
    db = open_db(demo_target)
    texts = {p: conversations.passage_text(db, p) for p in (P1, P2)}

    def add(source, turn, passage, start, end):
        nuggets.gold.add_span_nugget(db, source, turn, passage, start, end, texts[passage][start:end])

    # amy and ben both mark turn 101_1; ben's second passage is one amy left unmarked; cat marks 101_2 only
    for start, end in ((0, 10), (20, 40)):
        add("amy", "101_1", P1, start, end)
    for source, turn, passage, start, end in (
        ("ben", "101_1", P1, 0, 10),
        ("ben", "101_1", P1, 30, 50),
        ("ben", "101_1", P2, 5, 15),
        ("cat", "101_2", P1, 0, 10),
    ):
        add(source, turn, passage, start, end)
    nuggets.gold.add_text_nugget(db, "amy", "101_1", "free text, no span")  # not a span: not compared
    db.close()
    return demo_target, texts


def _labels(text, spans):
    return [int(any(s <= i < e for s, e in spans)) for i in range(len(text))]


def test_pairs_and_figures(marked):
    target, texts = marked
    out = run_cli("nuggets", "spans-agreement", "--json", db=target, check=True)
    (pair,) = json.loads(out.stdout)  # cat shares no turn with amy or ben
    amy = _labels(texts[P1], [(0, 10), (20, 40)]) + _labels(texts[P2], [])
    ben = _labels(texts[P1], [(0, 10), (30, 50)]) + _labels(texts[P2], [(5, 15)])
    # exact: 1 shared span of 2 + 3 -> 0.4; overlap: amy's both found (P = 1), ben's 2 of 3 (R = 2/3) -> 0.8
    assert {k: pair[k] for k in ("a", "b", "turns", "passages", "spans_a", "spans_b")} == {
        "a": "amy",
        "b": "ben",
        "turns": 1,
        "passages": 2,
        "spans_a": 2,
        "spans_b": 3,
    }
    assert (pair["exact_f1"], pair["overlap_f1"]) == (pytest.approx(0.4), pytest.approx(0.8))
    assert pair["units"] == len(amy) and pair["kappa"] == pytest.approx(cohen_kappa_score(amy, ben), abs=1e-12)
    out = run_cli("nuggets", "spans-agreement", db=target, check=True)
    assert out.stdout.splitlines()[0].split() == [
        *("a", "b", "turns", "passages", "spans_a", "spans_b", "exact_f1", "overlap_f1"),
        *("kappa", "(char)", "chars"),
    ]
    assert out.stdout.splitlines()[1].split()[:8] == ["amy", "ben", "1", "2", "2", "3", "0.400000", "0.800000"]


def test_bad_source_and_unit_refused(marked):
    target, _ = marked
    before = snapshot(target)
    bad = run_cli("nuggets", "spans-agreement", "--source", "amy", "--source", "zed", db=target)
    assert bad.returncode == 2 and "--source 'zed' has no nugget spans" in bad.stderr
    assert "Traceback" not in bad.stderr
    bad = run_cli("nuggets", "spans-agreement", "--unit", "byte", db=target)
    assert bad.returncode == 2 and "invalid choice: 'byte'" in bad.stderr
    assert snapshot(target) == before
    only = run_cli("nuggets", "spans-agreement", "--source", "amy", "--source", "cat", db=target, check=True)
    assert only.stdout == "no two sources marked nugget spans in a common turn\n"
