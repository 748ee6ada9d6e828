"""`crowd aggregate --method`: crowd labels aggregated by crowd-kit 1.4.2 (the peer, run here), our majority vote
checked against crowd-kit's MajorityVote, and a hand-checked case where Dawid-Skene's answer is plain."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
from crowdkit.aggregation import GLAD, MACE, DawidSkene, MajorityVote
from crowdkit.metrics.workers import accuracy_on_aggregates
from hypothesis import given, settings
from hypothesis import strategies as st

from assess.crowd import crowdkit
from assess.crowd.rules import majority_vote
from store import crowd as store_crowd
from store import db as sql
from store import open_db
from tests.cli.test_crowd import do_batch, entry, llm_answer
from tests.helpers import ROOT, run_cli


@pytest.fixture
def demo(demo_target):
    db = open_db(demo_target)
    yield db
    db.close()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from((0, 1, 2)), min_size=1, max_size=6), min_size=1, max_size=8))
def test_our_majority_vote_equals_crowdkit_majority_vote_without_ties(items):
    items = [v for v in items if not majority_vote(v).tie]  # our tie rule is ours; crowd-kit picks one at random
    if not items:
        return
    frame = pd.DataFrame(
        [(i, f"w{j}", v) for i, values in enumerate(items) for j, v in enumerate(values)],
        columns=["task", "worker", "label"],
    )
    theirs = MajorityVote().fit_predict(frame)
    assert {i: majority_vote(v).label for i, v in enumerate(items)} == {int(k): int(v) for k, v in theirs.items()}


def test_dawid_skene_follows_the_informative_workers_where_the_majority_does_not():
    # hand-checked: a and b answer the truth 0,0,0,1,1,1; c, d and e answer 1 to everything. The majority is 1
    # everywhere; Dawid-Skene learns that a 1 from c-e says nothing (their answer does not depend on the
    # class) and follows a and b. accuracy on aggregates: a, b 6/6; c-e 3/6.
    truth = [0, 0, 0, 1, 1, 1]
    given_ = [crowdkit.Given(i, w, t, "match") for i, t in enumerate(truth) for w in "ab"]
    given_ += [crowdkit.Given(i, w, 1, "match") for i in range(6) for w in "cde"]
    fitted = crowdkit.aggregate(given_, "dawid-skene")
    assert fitted["labels"] == dict(enumerate(truth))
    assert fitted["workers"] == {"a": 1.0, "b": 1.0, "c": 0.5, "d": 0.5, "e": 0.5}
    assert crowdkit.aggregate(given_, "crowdkit-majority")["labels"] == dict.fromkeys(range(6), 1)


def test_glad_follows_the_majority_where_dawid_skene_does_not_and_sees_through_a_contrarian():
    # hand-reasoned from GLAD's model (Whitehill et al. 2009): P(correct) = sigmoid(alpha_worker * beta_item),
    # one ability per worker and wrong answers spread evenly, so a worker answering 1 to everything is right
    # half the time under either labelling: nothing marks c-e out, and their three votes win (1 everywhere;
    # Dawid-Skene's confusion matrices see it, above). A contrarian d (always the other label) gets a negative
    # alpha, so d's answer counts for the label it opposes: a-c and d agree, all items as a-c say.
    truth = [0, 0, 0, 1, 1, 1]
    given_ = [crowdkit.Given(i, w, t, "match") for i, t in enumerate(truth) for w in "ab"]
    given_ += [crowdkit.Given(i, w, 1, "match") for i in range(6) for w in "cde"]
    fitted = crowdkit.aggregate(given_, "glad")
    assert fitted["labels"] == dict.fromkeys(range(6), 1)
    assert fitted["workers"] == {"a": 0.5, "b": 0.5, "c": 1.0, "d": 1.0, "e": 1.0}
    truth = [0, 1, 0, 1, 1, 0]
    given_ = [crowdkit.Given(i, w, t, "match") for i, t in enumerate(truth) for w in "abc"]
    given_ += [crowdkit.Given(i, "d", 1 - t, "match") for i, t in enumerate(truth)]
    fitted = crowdkit.aggregate(given_, "glad")
    assert fitted["labels"] == dict(enumerate(truth)) and fitted["workers"]["d"] == 0.0


def _run_study(db):
    """The demo NtR study answered by 19 workers: every third answers 'yes' to everything, the rest as the LLM."""
    store_crowd.create_demo_study(db)
    oracle = llm_answer(db)
    n = 0
    while (a := store_crowd.enter(db, entry(f"w{n % 19}", session=f"s{n}"))) is not None:
        do_batch(db, a, oracle if n % 19 % 3 else (lambda view: 1))
        n += 1


# MACE's restarts take about 20 s on the demo study: its check runs in the full tier (CI), not the default run
@pytest.mark.parametrize("method", ["dawid-skene", pytest.param("mace", marks=pytest.mark.scale), "glad"])
def test_aggregate_method_writes_crowdkits_labels(demo, method):
    _run_study(demo)
    kept = [r for r in store_crowd.raw_rows(demo, "demo") if r["kept"]]
    frame = pd.DataFrame({"task": [r["item_id"] for r in kept], "worker": [r["worker"] for r in kept]})
    frame["label"] = [r["value"] for r in kept]
    model = {"dawid-skene": DawidSkene(n_iter=100, tol=1e-5), "mace": MACE(random_state=0)}.get(method)
    model = model or GLAD(n_iter=100, tol=1e-5)
    expected = {int(k): int(v) for k, v in model.fit_predict(frame).items()}
    accuracy = accuracy_on_aggregates(frame, aggregator=None, aggregates=pd.Series(expected), by="worker")
    items = store_crowd.study_items(demo, "demo")
    demo.close()

    out = run_cli("crowd", "aggregate", "demo", "--method", method, "--json", db=demo.target, check=True)
    summary = json.loads(out.stdout)
    assert (summary["method"], summary["labels"], summary["removed"]) == (method, 186, 0)
    assert summary["workers"] == pytest.approx({w: float(a) for w, a in accuracy.items()})
    db = open_db(demo.target)
    stored = {
        (r["turn_id"], r["nugget_id"], r["run"]): (r["match"], r["via"])
        for r in sql.rows(db, "SELECT turn_id, nugget_id, run, match, via FROM ntr_labels WHERE source = 'crowd:demo'")
    }
    db.close()
    assert stored == {
        (items[i]["turn_id"], items[i]["nugget_id"], items[i]["run"]): (v, method) for i, v in expected.items()
    }
    # the majority again replaces the labels that differ, nothing else
    out = run_cli("crowd", "aggregate", "demo", db=demo.target, check=True)
    assert "labels written by majority" in out.stdout


def test_aggregate_text_output_and_bad_method(demo):
    _run_study(demo)
    demo.close()
    out = run_cli("crowd", "aggregate", "demo", "--method", "dawid-skene", db=demo.target, check=True)
    assert "crowd:demo: 186 ntr labels written by dawid-skene" in out.stdout
    assert "consistency (crowd-kit): match " in out.stdout and "accuracy_on_aggregates" in out.stdout
    bad = run_cli("crowd", "aggregate", "demo", "--method", "zero-one", db=demo.target)
    assert bad.returncode == 2 and "invalid choice: 'zero-one'" in bad.stderr and "Traceback" not in bad.stderr


def test_crowdkit_is_not_imported_by_the_command_line_until_a_method_runs():
    code = (
        "import sys\nfrom assess.cli import main\ntry:\n    main(['crowd', 'aggregate', '--help'])\n"
        "except SystemExit:\n    pass\nprint(sorted(m for m in ('crowdkit', 'pandas', 'sklearn') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert "--method {majority,dawid-skene,mace,glad}" in out.stdout and out.stdout.strip().endswith("[]")
