"""Crowd studies: batching, screening and aggregation against hand-computed answers; the store's
assignment and answer rules; the CLI; the CONE-RAG MTurk label import."""

from __future__ import annotations

import csv
import io
import json
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assess.crowd import entry as crowd_entry
from assess.crowd import files as study_files
from assess.crowd import guideline
from assess.crowd import rules as crowd_rules
from assess.crowd.rules import Answer, KnownAnswer, StudyConfig
from assess.errors import AssessError, FormatError
from assess.services import crowd as crowd_service
from assess.services.loading import load_demo
from store import crowd as store_crowd
from store import db as sql
from store import open_db
from tests.conftest import shared_file
from tests.helpers import rows as read_rows
from tests.helpers import run_cli, snapshot

LABEL_TABLES = ("ntr_labels", "passage_labels", "response_labels", "ptkb_labels", "label_history", "sources")


@pytest.fixture
def demo(demo_target):
    """The embedded demo in a store of each engine (its target is ``demo.target``)."""
    db = open_db(demo_target)
    yield db
    db.close()


def q(db, query: str, params: dict | None = None) -> list[tuple]:
    """The rows of a read on an open store of either engine, as tuples (name every column: PostgreSQL
    calls two COUNT(*) columns both "count", and the row dict keeps one)."""
    return [tuple(r.values()) for r in sql.rows(db, query, params)]


def entry(worker: str, study: str = "demo", **extra) -> crowd_entry.Entry:
    return crowd_entry.entry_from_params({"study": study, "worker": worker, **extra})


def change_settings(db, study: str, **changes) -> None:
    """Rewrite stored settings of a study (as an organizer editing the row would), for rule variants."""
    config = json.loads(sql.value(db, "SELECT config FROM crowd_studies WHERE name = :name", {"name": study}))
    with sql.write(db):
        sql.run(
            db,
            "UPDATE crowd_studies SET config = :config WHERE name = :name",
            {"config": json.dumps({**config, **changes}, sort_keys=True), "name": study},
        )


def do_batch(db, assignment, answer_of=lambda view: 1, seconds=2.0):
    """Answer every item of an assignment through the page's store functions; return the code."""
    store_crowd.consent(db, assignment.id)
    while True:
        view = store_crowd.screen(db, assignment.id)
        if view.completed:
            return view.code
        store_crowd.answer(db, assignment.id, view.item.item_id, answer_of(view.item), seconds=seconds)


def llm_answer(db):
    """A simulated worker who answers as the demo LLM did (the test's oracle, not the page's code path)."""
    labels = {
        (n, r): m
        for n, r, m in q(
            db,
            "SELECT nug.text, l.run, l.match FROM ntr_labels l JOIN nuggets nug ON nug.id = l.nugget_id "
            "WHERE l.source = 'llm:demo-gpt'",
        )
    }
    items = {
        i: (t, r)
        for i, t, r in q(db, "SELECT i.id, n.text, i.run FROM crowd_items i JOIN nuggets n ON n.id = i.nugget_id")
    }
    return lambda view: labels[items[view.item_id]]


# ------------------------------------------------------------------------------------------- pure: batches


def test_batches_of_ten_plus_one_seeded_test_item():
    batches = crowd_rules.make_batches(list(range(25)), ["t1", "t2", "t3"], batch_size=10, seed=7)
    assert [len(b) for b in batches] == [11, 11, 6]
    assert [[i for i, test in b if not test] for b in batches] == [
        list(range(10)),
        list(range(10, 20)),
        list(range(20, 25)),
    ]
    tests = [[i for i, test in b if test] for b in batches]
    assert all(len(t) == 1 for t in tests)
    assert sorted(t[0] for t in tests) == ["t1", "t2", "t3"]  # each test used once before any repeats
    assert crowd_rules.make_batches(list(range(25)), ["t1", "t2", "t3"], batch_size=10, seed=7) == batches
    positions = {
        tuple(
            next(p for p, (_, test) in enumerate(b) if test)
            for b in crowd_rules.make_batches(list(range(100)), ["t"], seed=s)
        )
        for s in range(5)
    }
    assert len(positions) > 1  # the position depends on the seed
    assert crowd_rules.make_batches([1, 2], [], batch_size=10) == [[(1, False), (2, False)]]
    assert crowd_rules.make_batches([], ["t"]) == []


@given(st.integers(0, 60), st.integers(0, 5), st.integers(1, 12), st.integers(0, 99))
@settings(max_examples=60, deadline=None)
def test_every_regular_item_lands_in_exactly_one_batch(n, tests, size, seed):
    batches = crowd_rules.make_batches(list(range(n)), [f"t{i}" for i in range(tests)], batch_size=size, seed=seed)
    regular = [i for b in batches for i, test in b if not test]
    assert regular == list(range(n))
    assert all(sum(test for _, test in b) == (1 if tests else 0) for b in batches)
    assert all(len(b) <= size + 1 for b in batches)


# ------------------------------------------------------------------------------------------- pure: votes


def test_majority_vote_and_tie_rules_by_hand():
    assert crowd_rules.majority_vote([1, 1, 0]) == (1, 2 / 3, 3, {0: 1, 1: 2}, False)
    assert crowd_rules.majority_vote([1, 0]).label is None and crowd_rules.majority_vote([1, 0]).tie
    assert crowd_rules.majority_vote([1, 0], "mean").label == 1  # mean 0.5 rounds half up
    assert crowd_rules.majority_vote([2, 3, 3], "mean") == (3, 8 / 3, 3, {2: 1, 3: 2}, False)
    assert crowd_rules.majority_vote([1, 2], "mean")[:2] == (2, 1.5)
    assert crowd_rules.majority_vote([0, 1, 3], "mean")[:2] == (1, 4 / 3)  # three-way tie: mean 1.33 -> 1
    assert crowd_rules.majority_vote([0, 3, -1], "mean")[:3] == (2, 1.5, 2)  # -1 (unable to judge) not counted
    assert crowd_rules.majority_vote([-1, -1]) == (-1, None, 0, {}, False)
    assert crowd_rules.majority_vote([]) == (None, None, 0, {}, False)
    with pytest.raises(AssessError):
        crowd_rules.majority_vote([1], "coin")


@given(st.lists(st.integers(0, 3), min_size=1, max_size=9), st.randoms())
@settings(max_examples=80, deadline=None)
def test_majority_vote_ignores_order(values, rnd):
    shuffled = list(values)
    rnd.shuffle(shuffled)
    for tie in crowd_rules.TIE_RULES:
        assert crowd_rules.majority_vote(values, tie) == crowd_rules.majority_vote(shuffled, tie)
    vote = crowd_rules.majority_vote(values, "undecided")
    assert vote.label is None or vote.label in values


def test_qc_rules():
    def t(value, known):
        return Answer("w", 1, "1", 9, value, None, True, known)

    assert crowd_rules.test_failed(t(0, 1), "test") and not crowd_rules.test_failed(t(1, 1), "test")
    assert crowd_rules.test_failed(t(3, 0), "known-bad")  # CAsT 2022: a known-bad response rated 3
    assert not crowd_rules.test_failed(t(2, 0), "known-bad")
    assert not crowd_rules.test_failed(t(3, 3), "known-bad")  # a known-good item is no known-bad test
    assert not crowd_rules.test_failed(t(0, 1), "none")
    regular = Answer("w", 1, "1", 8, 0, None, False, None)
    assert not crowd_rules.test_failed(regular, "test")


# One batch (items 1-3, test item 9 with known answer 1) done by three workers; c fails the test.
SCENARIO = [
    Answer("a", 1, "1", 1, 1, 2.0),
    Answer("a", 1, "1", 2, 1, 4.0),
    Answer("a", 1, "1", 3, 0, 6.0),
    Answer("a", 1, "1", 9, 1, 1.0, True, 1),
    Answer("b", 2, "1", 1, 1, 3.0),
    Answer("b", 2, "1", 2, 0, 3.0),
    Answer("b", 2, "1", 3, 0, 3.0),
    Answer("b", 2, "1", 9, 1, 3.0, True, 1),
    Answer("c", 3, "1", 1, 0, 1.0),
    Answer("c", 3, "1", 2, 1, 1.0),
    Answer("c", 3, "1", 3, 1, 1.0),
    Answer("c", 3, "1", 9, 0, 1.0, True, 1),
]


def test_screening_and_aggregation_by_hand():
    config = StudyConfig(task="ntr", qc="test", tie="undecided")
    assert crowd_rules.screen_assignments(SCENARIO, "test") == {1: None, 2: None, 3: "test item 9: answered 0, known 1"}
    votes = crowd_rules.aggregate(SCENARIO, config)
    # c discarded: item 1 = {1, 1} -> 1; item 2 = {1, 0} -> tie, undecided; item 3 = {0, 0} -> 0
    assert {i: v.label for i, v in votes.items()} == {1: 1, 2: None, 3: 0}
    assert votes[2].tie and votes[2].mean == 0.5
    assert {i: v.label for i, v in crowd_rules.aggregate(SCENARIO, StudyConfig(qc="test", tie="mean")).items()} == {
        1: 1,
        2: 1,
        3: 0,
    }
    # without screening c's votes count: item 2 = {1, 0, 1} -> 1, item 3 = {0, 0, 1} -> 0
    assert {i: v.label for i, v in crowd_rules.aggregate(SCENARIO, StudyConfig(qc="none")).items()} == {
        1: 1,
        2: 1,
        3: 0,
    }
    # an organizer's rejection removes a worker everywhere: item 2 = {1} -> 1 once b is rejected
    assert crowd_rules.aggregate(SCENARIO, config, rejected={"b"})[2].label == 1


def test_worker_report_by_hand():
    rows = {r["worker"]: r for r in crowd_rules.worker_report(SCENARIO, StudyConfig(qc="test"))}
    a, c = rows["a"], rows["c"]
    assert (a["assignments"], a["discarded"], a["answers"], a["tests"], a["test_accuracy"]) == (1, 0, 3, 1, 1.0)
    assert a["median_seconds"] == 3.0 and a["mean_seconds"] == 13 / 4
    # decided items: 1 (label 1) and 3 (label 0); a answered 1 and 0, c answered 0 and 1
    assert (a["agreement_with_majority"], a["compared"]) == (1.0, 2)
    assert (c["discarded"], c["test_accuracy"], c["agreement_with_majority"]) == (1, 0.0, 0.0)


def test_fleiss_and_krippendorff_by_hand():
    # items [1,1,1] [0,0,0] [1,1,0] [0,0,1]: P_i = 1, 1, 1/3, 1/3, mean 2/3; P_e = 0.5 -> kappa = 1/3.
    # Krippendorff (nominal): D_o = (2 + 2) / 12 = 1/3, D_e = 2*6*6 / (12*11) = 6/11 -> alpha = 7/18.
    labels = [[1, 1, 1], [0, 0, 0], [1, 1, 0], [0, 0, 1]]
    answers = [Answer(f"w{j}", 10 * i + j, str(i), i, v) for i, item in enumerate(labels) for j, v in enumerate(item)]
    result = crowd_rules.agreement(answers, StudyConfig(qc="none"))["match"]
    assert (result["items"], result["labels"], result["fleiss_items"]) == (4, 12, 4)
    assert result["fleiss_kappa"] == pytest.approx(1 / 3)
    assert result["krippendorff_alpha"] == pytest.approx(7 / 18)


def test_fleiss_after_qc_uses_the_modal_number_of_raters_by_hand():
    # SCENARIO with c discarded keeps 2 labels per item (k = 3): item 1 {1, 1}, item 2 {1, 0}, item 3 {0, 0}.
    # Fleiss, 2 raters: P_i = 1, 0, 1 -> P = 2/3; p_1 = 3/6 -> P_e = 1/2; kappa = (2/3 - 1/2) / (1/2) = 1/3.
    # Krippendorff (nominal): o_11 = 2, o_00 = 2, o_01 = o_10 = 1, n = 6: D_o = 2/6, D_e = 2*3*3 / (6*5) = 3/5
    # -> alpha = 1 - (1/3) / (3/5) = 4/9.
    config = StudyConfig(qc="test")
    kept = crowd_rules.agreement(SCENARIO, config, kept_only=True)["match"]
    assert (kept["items"], kept["labels"], kept["fleiss_items"], kept["fleiss_raters"]) == (3, 6, 3, 2)
    assert kept["fleiss_kappa"] == pytest.approx(1 / 3)
    assert kept["krippendorff_alpha"] == pytest.approx(4 / 9)
    # before QC: {1, 1, 0}, {1, 0, 1}, {0, 0, 1}: P_i = 1/3 each; p_1 = 5/9 -> P_e = 41/81;
    # kappa = (27/81 - 41/81) / (40/81) = -0.35
    every = crowd_rules.agreement(SCENARIO, config, kept_only=False)["match"]
    assert (every["fleiss_items"], every["fleiss_raters"]) == (3, 3)
    assert every["fleiss_kappa"] == pytest.approx(-0.35)
    # mixed counts: 3 items with 3 labels, 1 with 2, 1 with 1 -> the 3 items with 3 raters:
    # [1,1,1] [0,0,0] [1,1,0]: P = (1 + 1 + 1/3) / 3 = 7/9; p_1 = 5/9 -> P_e = 41/81; kappa = (63 - 41) / 40 = 0.55
    labels = [[1, 1, 1], [0, 0, 0], [1, 1, 0], [1, 0], [1]]
    answers = [Answer(f"w{j}", 10 * i + j, str(i), i, v) for i, item in enumerate(labels) for j, v in enumerate(item)]
    mixed = crowd_rules.agreement(answers, StudyConfig(qc="none"))["match"]
    assert (mixed["items"], mixed["fleiss_items"], mixed["fleiss_raters"]) == (5, 3, 3)
    assert mixed["fleiss_kappa"] == pytest.approx(0.55)
    # a tie between 2 and 3 labels (two items each) takes the larger number of raters
    tied = [[1, 1, 1], [0, 0, 1], [1, 0], [0, 0]]
    answers = [Answer(f"w{j}", 10 * i + j, str(i), i, v) for i, item in enumerate(tied) for j, v in enumerate(item)]
    assert crowd_rules.agreement(answers, StudyConfig(qc="none"))["match"]["fleiss_raters"] == 3
    # nothing with 2 labels: no kappa
    single = crowd_rules.agreement([Answer("w", 1, "1", 1, 1)], StudyConfig(qc="none"))["match"]
    assert (single["fleiss_items"], single["fleiss_raters"], single["fleiss_kappa"]) == (0, None, None)


def test_qc_failed_is_the_rule_of_test_failed():
    for rule in crowd_rules.QC_RULES:
        for known in (None, 0, 1, 2, 3):
            for value in (-1, 0, 1, 2, 3):
                assert crowd_rules.qc_failed(value, known, rule, 2) == crowd_rules.test_failed(
                    Answer("w", 1, "1", 9, value, None, True, known), rule, 2
                )


def test_completion_codes_and_entry_parameters():
    code = crowd_entry.completion_code("s3cret", "demo", "w1", "4")
    assert len(code) == 10 and code.isalnum() and code == crowd_entry.completion_code("s3cret", "demo", "w1", "4")
    assert code != crowd_entry.completion_code("s3cret", "demo", "w2", "4")
    prolific = crowd_entry.entry_from_params(
        {"study": "demo", "PROLIFIC_PID": "5f1a", "STUDY_ID": "st", "SESSION_ID": "se"}
    )
    assert prolific == ("demo", "5f1a", "prolific", "se", "st", None, False)
    mturk = crowd_entry.entry_from_params(
        {
            "study": "demo",
            "workerId": "A1B",
            "assignmentId": "3X",
            "hitId": "H",
            "turkSubmitTo": "https://workersandbox.mturk.com",
        }
    )
    assert mturk == ("demo", "A1B", "mturk", "3X", "H", "https://workersandbox.mturk.com", False)
    preview = crowd_entry.entry_from_params({"study": "demo", "assignmentId": crowd_entry.MTURK_PREVIEW, "hitId": "H"})
    assert preview.preview and preview.worker is None
    assert crowd_entry.entry_from_params({"study": "demo", "worker": "amy"}).platform == "direct"
    for bad in (
        {"study": "demo", "workerId": "A", "assignmentId": "B", "turkSubmitTo": "https://evil.example"},
        {"study": "demo", "workerId": "A", "assignmentId": "B", "turkSubmitTo": "http://www.mturk.com"},
        {"study": "no spaces", "worker": "a"},
        {"study": "demo", "worker": "<script>"},
    ):
        with pytest.raises(AssessError):
            crowd_entry.entry_from_params(bad)
    form = crowd_entry.mturk_form_html("https://www.mturk.com", 'A"1', "CODE")
    assert 'method="POST" action="https://www.mturk.com/mturk/externalSubmit"' in form
    assert 'name="assignmentId" value="A&quot;1"' in form


def test_study_settings_are_checked():
    with pytest.raises(AssessError, match="criterion"):
        StudyConfig(task="response")
    with pytest.raises(AssessError, match="unknown criterion"):
        StudyConfig(task="response", criteria=("tastiness",))
    with pytest.raises(AssessError, match="k must be"):
        StudyConfig(k=0)
    config = StudyConfig(task="response", criteria=("relevance",), allow_unable=True, qc="known-bad", tie="mean")
    assert StudyConfig.from_json(config.to_json()) == config
    assert config.allowed() == (0, 1, 2, 3, -1)
    assert study_files.parse_known_spec("101_1,demo-bm25,1,0") == KnownAnswer("101_1", "demo-bm25", "[1]", 0)


# ------------------------------------------------------------------------------------------- store


def test_demo_study_batches(demo):
    summary = store_crowd.create_demo_study(demo)
    assert summary == {
        "study": "demo",
        "task": "ntr",
        "items": 186,
        "tests": 6,
        "batches": 19,
        "k": 3,
        "assignments_needed": 57,
        "source": "crowd:demo",
    }
    per_batch = q(
        demo,
        "SELECT b.number, COUNT(*), SUM(bi.is_test) FROM crowd_batch_items bi "
        "JOIN crowd_batches b ON b.id = bi.batch_id GROUP BY b.number ORDER BY b.number",
    )
    assert [n for _, n, _ in per_batch] == [11] * 18 + [7] and all(t == 1 for *_, t in per_batch)
    regular = q(demo, "SELECT item_id FROM crowd_batch_items WHERE is_test = 0")
    assert len(regular) == len(set(regular)) == 186
    tests = q(
        demo,
        "SELECT DISTINCT bi.item_id FROM crowd_batch_items bi JOIN crowd_items i ON i.id = bi.item_id "
        "WHERE bi.is_test = 1 AND i.known_answer IS NOT NULL",
    )
    assert len(tests) == 6 and not set(tests) & set(regular)
    with pytest.raises(AssessError, match="exists already"):
        store_crowd.create_demo_study(demo)


def test_create_refuses_bad_requests(demo):
    config = StudyConfig()
    with pytest.raises(AssessError, match="needs known-answer items"):
        store_crowd.create_study(demo, "s1", config)
    with pytest.raises(AssessError, match="no such item"):
        store_crowd.create_study(demo, "s1", config, known=[KnownAnswer("101_1", "demo-bm25", "[9]", 0)])
    with pytest.raises(AssessError, match="not on the scale"):
        store_crowd.create_study(demo, "s1", config, known=[KnownAnswer("101_1", "demo-bm25", "[1]", 3)])
    with pytest.raises(AssessError, match="run 'nope'"):
        store_crowd.create_study(demo, "s1", StudyConfig(qc="none"), runs=["nope"])
    with pytest.raises(AssessError, match="no items"):
        store_crowd.create_study(demo, "s1", StudyConfig(qc="none"), nugget_source="nobody")
    assert sql.value(demo, "SELECT COUNT(*) AS n FROM crowd_studies") == 0
    small = store_crowd.create_study(
        demo, "s2", StudyConfig(qc="none", batch_size=4, k=2), runs=["demo-dense"], turns=["101_1", "101_2"]
    )
    assert (small["items"], small["tests"], small["batches"]) == (10, 0, 3)


def test_k_distinct_workers_per_batch_and_never_the_same_batch_twice(demo):
    store_crowd.create_demo_study(demo)
    first = [store_crowd.enter(demo, entry(w)) for w in ("a", "b", "c", "d")]
    assert [a.batch for a in first] == ["1", "1", "1", "2"]  # batch 1 fills up first, then batch 2
    assert store_crowd.enter(demo, entry("a")) == first[0]  # resumes the unfinished batch
    do_batch(demo, first[0])
    again = store_crowd.enter(demo, entry("a"))  # same (empty) session: the finished batch
    assert again.id == first[0].id and again.status == "completed"
    second = store_crowd.enter(demo, entry("a", session="s2"))  # a new session: a new batch, never batch 1
    assert second.batch == "2"
    batches = q(
        demo,
        "SELECT batch_id, COUNT(*) AS n, COUNT(DISTINCT worker) AS workers FROM crowd_assignments GROUP BY batch_id",
    )
    assert all(n == distinct <= 3 for _, n, distinct in batches)


def test_a_batch_discarded_by_qc_goes_to_new_workers_until_k_kept(demo):
    store_crowd.create_demo_study(demo)  # k = 3, qc test
    known = dict(q(demo, "SELECT id, known_answer FROM crowd_items WHERE known_answer IS NOT NULL"))
    right = lambda v: known.get(v.item_id, 1)  # noqa: E731
    wrong = lambda v: 1 - known[v.item_id] if v.item_id in known else 1  # noqa: E731

    def batch1():
        b = store_crowd.progress(demo, "demo")["batches"][0]
        return b["completed"], b["kept"], b["discarded"], b["active"]

    a, b, c = (store_crowd.enter(demo, entry(w)) for w in "abc")
    assert [x.batch for x in (a, b, c)] == ["1", "1", "1"]
    do_batch(demo, a, right)
    do_batch(demo, b, wrong)  # b fails the test item: discarded
    assert batch1() == (2, 1, 1, 1)  # a kept + c in progress: 2 of 3 slots
    assert store_crowd.holding(demo, "demo")["1"] == 2
    assert store_crowd.enter(demo, entry("d")).batch == "1"  # a 4th worker gets batch 1
    assert store_crowd.enter(demo, entry("e")).batch == "2"  # a, c, d hold its 3 slots
    do_batch(demo, c, wrong)  # c fails too: a kept + d in progress
    assert store_crowd.enter(demo, entry("b", session="again")).batch == "2"  # never batch 1 again
    f = store_crowd.enter(demo, entry("f"))
    assert f.batch == "1"  # the 5th worker of batch 1
    do_batch(demo, store_crowd.enter(demo, entry("d")), right)
    do_batch(demo, f, right)
    assert batch1() == (5, 3, 2, 0)  # a, d, f kept: batch 1 is full
    assert store_crowd.enter(demo, entry("g")).batch == "2"
    progress = store_crowd.progress(demo, "demo")
    assert (progress["assignments_done"], progress["complete_batches"], progress["assignments_discarded"]) == (3, 1, 2)
    # the discarded workers' answers stay stored (11 each), out of the majority: 3 kept labels per item
    assert q(
        demo,
        "SELECT a.worker, COUNT(*) FROM crowd_answers x JOIN crowd_assignments a ON "
        "a.id = x.assignment_id WHERE a.worker IN ('b', 'c') AND a.status = 'completed' "
        "GROUP BY a.worker ORDER BY 1",
    ) == [("b", 11), ("c", 11)]
    votes = store_crowd.aggregated_rows(demo, "demo")
    assert len(votes) == 10 and {r["n"] for r in votes} == {3}
    # an organizer's rejection frees the slot too: batch 2 is full (e, b, g), so h gets batch 1
    store_crowd.set_decision(demo, "demo", "d", "rejected")
    assert batch1() == (5, 2, 3, 0)
    assert store_crowd.enter(demo, entry("h")).batch == "1"
    batches = q(
        demo,
        "SELECT batch_id, COUNT(*) AS n, COUNT(DISTINCT worker) AS workers FROM crowd_assignments GROUP BY batch_id",
    )
    assert all(n == distinct for _, n, distinct in batches)


def test_test_items_prefer_batches_whose_test_is_new_to_the_worker(demo):
    store_crowd.create_demo_study(demo)
    seen = []
    for n in range(6):
        a = store_crowd.enter(demo, entry("w", session=f"s{n}"))
        do_batch(demo, a)
        seen.append(
            sql.value(
                demo,
                "SELECT item_id FROM crowd_batch_items bi JOIN crowd_assignments a ON "
                "a.batch_id = bi.batch_id WHERE a.id = :id AND bi.is_test = 1",
                {"id": a.id},
            )
        )
    assert len(set(seen)) == 6  # six batches, six different test items


def test_answers_are_idempotent_checked_and_complete_the_batch(demo):
    store_crowd.create_demo_study(demo)
    a = store_crowd.enter(demo, entry("amy"))
    view = store_crowd.screen(demo, a.id)
    with pytest.raises(AssessError, match="consent"):
        store_crowd.answer(demo, a.id, view.item.item_id, 1)
    store_crowd.consent(demo, a.id)
    first = store_crowd.answer(demo, a.id, view.item.item_id, 1, seconds=3.25)
    repeat = store_crowd.answer(demo, a.id, view.item.item_id, 0, seconds=9.0)  # a retried or doubled request
    assert (first.new, repeat.new, first.remaining) == (True, False, 10)
    assert q(demo, "SELECT value, seconds, via FROM crowd_answers WHERE assignment_id = :id", {"id": a.id}) == [
        (1, 3.25, "page")
    ]
    with pytest.raises(AssessError, match="scale"):
        store_crowd.answer(demo, a.id, store_crowd.screen(demo, a.id).item.item_id, 2)
    other = sql.value(
        demo,
        "SELECT item_id FROM crowd_batch_items WHERE batch_id != (SELECT batch_id FROM "
        "crowd_assignments WHERE id = :id) ORDER BY batch_id, position LIMIT 1",
        {"id": a.id},
    )
    with pytest.raises(AssessError, match="not in this worker's batch"):
        store_crowd.answer(demo, a.id, other, 1)
    with pytest.raises(sql.IntegrityError, match="kept as first given"), sql.write(demo):  # append-only
        sql.run(demo, "UPDATE crowd_answers SET value = 0")
    assert q(demo, "SELECT value FROM crowd_answers") == [(1,)]
    code = do_batch(demo, a)
    secret = sql.value(demo, "SELECT secret FROM crowd_studies WHERE name = 'demo'")
    assert code == crowd_entry.completion_code(secret, "demo", "amy", "1")
    assert q(demo, "SELECT status, completion_code FROM crowd_assignments WHERE id = :id", {"id": a.id}) == [
        ("completed", code)
    ]
    assert store_crowd.answer(demo, a.id, view.item.item_id, 1) == (False, True, 0, code)


def test_the_worker_code_path_never_reads_labels(demo):
    """Nothing another worker, an assessor or an LLM said can reach a worker: the page's store calls
    read no label table, and what they return holds no known answer or test flag."""
    store_crowd.create_demo_study(demo)
    statements = []

    with sql.traced(statements.append):  # every statement, on either engine
        study = store_crowd.get_study(demo, "demo")
        a = store_crowd.enter(demo, entry("tracer"))
        store_crowd.consent(demo, a.id)
        views = []
        while not (view := store_crowd.screen(demo, a.id)).completed:
            views.append(view.item)
            store_crowd.answer(demo, a.id, view.item.item_id, 0, seconds=1.0)
    assert len(views) == 11 and study.name == "demo"
    touched = [s for s in statements if any(t in s for t in LABEL_TABLES)]
    assert touched == []
    # known answers are read only by enter's count of a batch's slots (discarded batches free theirs);
    # that statement returns the batch id, its count and a flag, and enter returns an Assignment
    reading = [s for s in statements if "known_answer" in s]
    assert len(reading) == 1 and reading[0].lstrip().startswith("SELECT id FROM (") and "AS taken" in reading[0]
    assert set(store_crowd.Assignment._fields) == {
        "id",
        "study",
        "worker",
        "batch",
        "session",
        "submit_to",
        "status",
        "consented",
        "code",
    }
    assert set(crowd_rules.ItemView.__dataclass_fields__) == {
        "item_id",
        "task",
        "response",
        "nugget",
        "criterion",
        "utterance",
        "history",
    }


def test_full_demo_study_aggregates_and_compares_with_the_llm(demo):
    store_crowd.create_demo_study(demo)
    oracle = llm_answer(demo)
    spammer = store_crowd.enter(demo, entry("spam"))
    do_batch(demo, spammer, lambda view: 1 - oracle(view))  # fails its test item: discarded
    n = 0
    while (a := store_crowd.enter(demo, entry(f"w{n % 19}", session=f"s{n}"))) is not None:
        do_batch(demo, a, oracle)
        n += 1
    assert n == 19 * 3  # spam's batch went to a 4th worker; then no batch is left for anyone
    progress = store_crowd.progress(demo, "demo")
    assert (progress["assignments_done"], progress["complete_batches"], progress["assignments_discarded"]) == (
        57,
        19,
        1,
    )
    assert [(b["completed"], b["kept"], b["discarded"]) for b in progress["batches"]] == [(4, 3, 1)] + [(3, 3, 0)] * 18
    report = store_crowd.report(demo, "demo")
    assert report["discarded"] == {spammer.id: report["discarded"][spammer.id]}
    spam = next(w for w in report["workers"] if w["worker"] == "spam")
    assert (spam["test_accuracy"], spam["agreement_with_majority"], spam["discarded"]) == (0.0, 0.0, 1)
    kept = report["agreement_kept"]["match"]
    # after QC every item has 3 kept labels (batch 1 was done again by a 4th worker)
    assert (
        kept["items"],
        kept["fleiss_items"],
        kept["fleiss_raters"],
        kept["fleiss_kappa"],
        kept["krippendorff_alpha"],
    ) == (186, 186, 3, 1.0, 1.0)
    every = report["agreement_all"]["match"]
    # before QC batch 1's 10 items have 4 labels: Fleiss' kappa uses the 176 items with the modal 3
    assert (every["fleiss_items"], every["fleiss_raters"]) == (176, 3) and every["krippendorff_alpha"] < 1.0
    raw = store_crowd.raw_rows(demo, "demo")
    assert len(raw) == 3 * (18 * 11 + 7) + 11  # spam's 11 answers stay stored
    assert sum(r["worker"] == "spam" and not r["kept"] for r in raw) == 11
    summary = store_crowd.write_aggregate(demo, "demo")
    assert (summary["labels"], summary["removed"]) == (186, 0)
    assert q(
        demo, "SELECT COUNT(*) AS n, MIN(mode) AS mode, MIN(via) AS via FROM ntr_labels WHERE source = 'crowd:demo'"
    ) == [(186, "crowd", "majority")]
    assert q(demo, "SELECT kind FROM sources WHERE name = 'crowd:demo'") == [("crowd",)]
    assert store_crowd.write_aggregate(demo, "demo")["labels"] == 186  # again: no change, no new history
    assert sql.value(demo, "SELECT COUNT(*) AS n FROM label_history WHERE source = 'crowd:demo'") == 186
    demo.close()
    out = run_cli(
        "agreement",
        "--task",
        "ntr",
        "--a",
        "crowd:demo",
        "--b",
        "llm:demo-gpt",
        "--json",
        db=demo.target,
        check=True,
    )
    result = json.loads(out.stdout)
    assert (result["n"], result["agreement"], result["kappa"]) == (186, 1.0, 1.0)


def test_response_study_known_bad_screening_and_mean_ties(demo):
    store_crowd.create_demo_study(demo, "response", k=2)
    a = store_crowd.enter(demo, entry("ok", study="demo-response"))
    b = store_crowd.enter(demo, entry("bad", study="demo-response"))
    c = store_crowd.enter(demo, entry("third", study="demo-response", session="x"))
    assert (a.batch, b.batch, c.batch) == ("1", "1", "2")
    view = store_crowd.screen(demo, a.id)
    assert view.item.task == "response" and view.item.criterion in ("relevance", "completeness")
    assert view.item.utterance  # the conversation so far is shown
    known = dict(q(demo, "SELECT id, known_answer FROM crowd_items WHERE known_answer IS NOT NULL"))
    do_batch(demo, a, lambda v: 0 if v.item_id in known else 2)
    do_batch(demo, b, lambda v: 3)  # rates the known-bad response 3: screened out
    votes = {r["item_id"]: r for r in store_crowd.aggregated_rows(demo, "demo-response")}
    assert len(votes) == 10 and all(r["label"] == 2 and r["n"] == 1 for r in votes.values())
    store_crowd.set_decision(demo, "demo-response", "bad", "approved")  # QC still discards its batch
    report = store_crowd.report(demo, "demo-response")
    assert [w["discarded"] for w in report["workers"]] == [1, 0]
    # with no screening, ok (2) and bad (3) tie on every item: mean 2.5 rounds half up to 3
    change_settings(demo, "demo-response", qc="none")
    rows = store_crowd.aggregated_rows(demo, "demo-response")
    assert all((r["tie"], r["mean"], r["label"]) == (True, 2.5, 3) for r in rows)
    store_crowd.write_aggregate(demo, "demo-response")
    assert q(
        demo, "SELECT COUNT(*), MIN(value), MAX(value) FROM response_labels WHERE source = 'crowd:demo-response'"
    ) == [(10, 3, 3)]


def test_compare_uses_the_current_majority_without_aggregate(demo, tmp_path):
    store_crowd.create_demo_study(demo)
    oracle = llm_answer(demo)
    for w in ("a", "b", "c"):
        do_batch(demo, store_crowd.enter(demo, entry(w)), oracle)
    # batch 1: 10 pairs, all three answer as the LLM did -> 10 decided labels equal to llm:demo-gpt
    llm = [oracle(crowd_rules.ItemView(r["item_id"], "ntr", "")) for r in store_crowd.aggregated_rows(demo, "demo")]
    assert len(llm) == 10 and 0 < sum(llm) < 10
    assert crowd_service.compare(demo, "demo", "llm:demo-gpt") == {
        "n": 10,
        "accuracy": 1.0,
        "kappa": 1.0,
        "from": "current majority",
    }
    assert sql.value(demo, "SELECT COUNT(*) AS n FROM ntr_labels WHERE source = 'crowd:demo'") == 0
    # a 4th and 5th worker who say the opposite of b and c: a rejection of b and c changes the majority at once
    store_crowd.set_decision(demo, "demo", "b", "rejected")
    store_crowd.set_decision(demo, "demo", "c", "rejected")
    for w in ("d", "e"):
        do_batch(
            demo,
            store_crowd.enter(demo, entry(w)),
            lambda v: (
                1 - oracle(v)
                if v.item_id not in set(sql.column(demo, "SELECT id FROM crowd_items WHERE known_answer IS NOT NULL"))
                else oracle(v)
            ),
        )
    # per item: a (= llm) against d, e (both the opposite): 2 to 1 -> every decided label is the opposite
    result = crowd_service.compare(demo, "demo", "llm:demo-gpt")
    assert (result["n"], result["accuracy"]) == (10, 0.0) and result["kappa"] < 0
    with pytest.raises(AssessError, match="source 'llm:nobody' has no ntr labels"):
        crowd_service.compare(demo, "demo", "llm:nobody")
    store_crowd.create_demo_study(demo, "response")
    with pytest.raises(AssessError, match="NtR studies"):
        crowd_service.compare(demo, "demo-response", "llm:demo-gpt")
    # a study imported with labels only is compared through its stored labels
    path = tmp_path / "labels.tsv"
    path.write_text("1_101_1_1_demo-dense\t1\n1_101_1_2_demo-dense\t0\n")
    crowd_service.import_ntr_study(
        demo, str(path), study_files.parse_crowd_ntr(path), study="plain", nugget_source="gold"
    )
    plain = crowd_service.compare(demo, "plain", "llm:demo-gpt")
    assert (plain["n"], plain["from"]) == (2, "stored labels")


def test_closed_study_takes_no_new_workers(demo):
    store_crowd.create_demo_study(demo)
    started = store_crowd.enter(demo, entry("early"))
    store_crowd.set_status(demo, "demo", "closed")
    with pytest.raises(AssessError, match="closed"):
        store_crowd.enter(demo, entry("late"))
    assert store_crowd.enter(demo, entry("early")) == started  # a started batch can be finished


# ------------------------------------------------------------------------------------------- import and export

RAW_NTR = """\
1_101_1_1_demo-dense\t1\tw1
1_101_1_1_demo-dense\t1\tw2
1_101_1_1_demo-dense\t0\tw3
1_101_1_2_demo-dense\t0\tw1
1_101_1_2_demo-dense\t0\tw2
1_101_1_2_demo-dense\t1\tw3
2_101_2_1_demo-rerank\t1\tw1
2_101_2_1_demo-rerank\t1\tw3
"""


def test_import_keeps_batches_and_workers(demo, tmp_path):
    path = tmp_path / "raw.tsv"
    path.write_text(RAW_NTR)
    summary = crowd_service.import_ntr_study(
        demo, str(path), study_files.parse_crowd_ntr(path), study="pilot", nugget_source="gold"
    )
    assert (summary["rows"], summary["batches"], summary["items"], summary["workers"]) == (8, 2, 3, 3)
    assert q(
        demo,
        "SELECT b.label, a.worker, COUNT(*) FROM crowd_answers x JOIN crowd_assignments a ON "
        "a.id = x.assignment_id JOIN crowd_batches b ON b.id = a.batch_id GROUP BY a.id, b.label, a.worker "
        "ORDER BY b.label, a.worker",
    ) == [("1", "w1", 2), ("1", "w2", 2), ("1", "w3", 2), ("2", "w1", 1), ("2", "w3", 1)]
    labels = q(
        demo,
        "SELECT l.turn_id, n.key, l.run, l.match, l.batch FROM ntr_labels l JOIN nuggets n ON "
        "n.id = l.nugget_id WHERE l.source = 'crowd:pilot' ORDER BY 1, 2, 3",
    )
    assert labels == [
        ("101_1", "[1]", "demo-dense", 1, "1"),
        ("101_1", "[2]", "demo-dense", 0, "1"),
        ("101_2", "[1]", "demo-rerank", 1, "2"),
    ]
    again = crowd_service.import_ntr_study(
        demo, str(path), study_files.parse_crowd_ntr(path), study="pilot", nugget_source="gold"
    )
    assert again["items"] == 3 and sql.value(demo, "SELECT COUNT(*) AS n FROM crowd_studies") == 1
    bad = tmp_path / "bad.tsv"
    bad.write_text("1_101_1_1_demo-dense\t1\tw1\n1_101_1_1_demo-dense\t0\tw1\n")
    with pytest.raises(FormatError, match=r"bad.tsv:2: expected one label per worker and pair"):
        crowd_service.import_ntr_study(
            demo, str(bad), study_files.parse_crowd_ntr(bad), study="p2", nugget_source="gold"
        )
    bad.write_text("1_101_1_9_demo-dense\t1\n")
    with pytest.raises(FormatError, match=r"bad.tsv:1: expected a nugget \[9\]"):
        crowd_service.import_ntr_study(
            demo, str(bad), study_files.parse_crowd_ntr(bad), study="p2", nugget_source="gold"
        )


@pytest.fixture(scope="module")
def cli_db(module_store_target):
    """A demo store with a demo study whose batches 1 and 2 are complete, once per engine."""
    db = module_store_target
    run_cli("init", "--demo", db=db, check=True)
    run_cli("crowd", "create", "--demo", db=db, check=True)
    conn = open_db(db)
    oracle = llm_answer(conn)
    for n in range(6):  # batches 1 and 2 complete, k = 3
        do_batch(conn, store_crowd.enter(conn, entry(f"w{n}")), oracle)
    conn.close()
    return db


def test_cli_create_status_report_aggregate_export(cli_db, tmp_path):
    status = json.loads(run_cli("crowd", "status", "demo", "--json", db=cli_db, check=True).stdout)
    assert (status["assignments_done"], status["complete_batches"]) == (6, 2)
    text = run_cli("crowd", "status", "demo", db=cli_db, check=True).stdout
    assert "6 / 57 assignments done" in text and "w0 w1 w2" in text and "0 discarded" in text
    # report --compare before any aggregate: from the current majority labels, writing nothing
    before = snapshot(cli_db)
    report = run_cli("crowd", "report", "demo", "--compare", "llm:demo-gpt", db=cli_db, check=True).stdout
    assert "crowd:demo vs llm:demo-gpt: n 20, accuracy 1.000, kappa 1.000 (current majority labels)" in report
    assert "Fleiss kappa 1.000 over 20 items with 3 raters each" in report and "with k labels" not in report
    assert snapshot(cli_db) == before
    assert json.loads(run_cli("crowd", "aggregate", "demo", "--json", db=cli_db, check=True).stdout)["labels"] == 20
    report = run_cli("crowd", "report", "demo", "--compare", "llm:demo-gpt", db=cli_db, check=True).stdout
    assert "crowd:demo vs llm:demo-gpt: n 20, accuracy 1.000, kappa 1.000" in report
    raw = list(csv.DictReader(io.StringIO(run_cli("crowd", "export", "demo", "raw", db=cli_db, check=True).stdout)))
    assert len(raw) == 66 and sum(r["is_test"] == "True" for r in raw) == 6
    agg = list(
        csv.DictReader(io.StringIO(run_cli("crowd", "export", "demo", "aggregated", db=cli_db, check=True).stdout))
    )
    assert len(agg) == 20 and all(r["n"] == "3" for r in agg)
    tsv = run_cli("crowd", "export", "demo", "aggregated", "--format", "tsv", db=cli_db, check=True).stdout
    lines = tsv.splitlines()
    assert len(lines) == 20 and lines[0].startswith("1_101_1_") and lines[0].split("\t")[1] in ("0", "1")
    # the raw TSV (one row per worker answer) reads back as an imported study with the same majority
    out = tmp_path / "raw.tsv"
    run_cli("crowd", "export", "demo", "raw", "--format", "tsv", "--kept", "-o", out, db=cli_db, check=True)
    assert len(out.read_text().splitlines()) == 60
    run_cli("crowd", "import", out, "--study", "back", "--nuggets", "gold", db=cli_db, check=True)
    again = run_cli(
        "agreement", "--task", "ntr", "--a", "crowd:demo", "--b", "crowd:back", "--json", db=cli_db, check=True
    )
    assert (json.loads(again.stdout)["n"], json.loads(again.stdout)["agreement"]) == (20, 1.0)


def test_cli_warns_when_the_organizer_pages_have_no_password(store_target, monkeypatch):
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    db = store_target
    run_cli("init", "--demo", db=db, check=True)
    created = run_cli("crowd", "create", "--demo", db=db, check=True)
    warning = [line for line in created.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warning) == 1 and "ASSESS_ORGANIZER_PASSWORD is not set" in warning[0]
    assert "removes ?study=" in warning[0] and "LLM labels" in warning[0]
    assert "study demo:" in created.stdout and "ASSESS_ORGANIZER_PASSWORD" not in created.stdout
    for args in (["crowd", "status", "demo"], ["crowd", "status", "demo", "--json"], ["crowd", "status"]):
        proc = run_cli(*args, db=db, check=True)
        assert proc.stderr.count("warning: ASSESS_ORGANIZER_PASSWORD is not set") == 1, args
    json.loads(run_cli("crowd", "status", "demo", "--json", db=db, check=True).stdout)  # stdout stays JSON
    run_cli("crowd", "close", "demo", db=db, check=True)  # a closed study takes no new workers
    assert "warning" not in run_cli("crowd", "status", "demo", db=db, check=True).stderr
    monkeypatch.setenv("ASSESS_ORGANIZER_PASSWORD", "s3cret")
    quiet = run_cli("crowd", "create", "--demo", "--task", "response", db=db, check=True)
    assert quiet.stderr == ""
    assert run_cli("crowd", "status", "demo-response", db=db, check=True).stderr == ""


def test_cli_gives_account_advice_on_a_store_with_accounts(store_target, monkeypatch):
    """On a store with accounts the organizer password has no effect: the advice is an organizer account."""
    monkeypatch.setenv("ASSESS_ORGANIZER_PASSWORD", "s3cret")  # set or not, it changes nothing here
    monkeypatch.delenv("ASSESS_OPEN", raising=False)
    db = store_target
    run_cli("init", "--demo", db=db, check=True)
    run_cli("users", "add", "ann", "--role", "assessor", "--no-password", db=db, check=True)
    created = run_cli("crowd", "create", "--demo", db=db, check=True)
    warning = [line for line in created.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warning) == 1, created.stderr
    assert "no enabled organizer account" in warning[0]
    assert "python -m assess users add NAME --role organizer" in warning[0]
    assert "has no effect" in warning[0] and "is not set" not in warning[0]
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD")
    for args in (["crowd", "status", "demo"], ["crowd", "status", "demo", "--json"], ["crowd", "status"]):
        proc = run_cli(*args, db=db, check=True)
        assert proc.stderr.count("warning: ") == 1 and "--role organizer" in proc.stderr, args
        assert "ASSESS_ORGANIZER_PASSWORD is not set" not in proc.stderr
    run_cli("users", "add", "boss", "--role", "organizer", "--no-password", db=db, check=True)
    assert run_cli("crowd", "status", "demo", db=db, check=True).stderr == ""  # an organizer account: no advice
    assert run_cli("crowd", "create", "--demo", "--task", "response", db=db, check=True).stderr == ""
    run_cli("users", "disable", "boss", db=db, check=True)
    assert "--role organizer" in run_cli("crowd", "status", "demo", db=db, check=True).stderr
    monkeypatch.setenv("ASSESS_OPEN", "1")  # open mode on this store: the password is what counts again
    assert "ASSESS_ORGANIZER_PASSWORD is not set" in run_cli("crowd", "status", "demo", db=db, check=True).stderr


def test_cli_refuses_bad_input_with_one_line_and_writes_nothing(cli_db):
    before = snapshot(cli_db)
    for args in (
        ["crowd", "status", "nope"],
        ["crowd", "create", "x", "--known", "101_1,demo-bm25"],
        ["crowd", "create", "x", "--known", "101_1,demo-bm25,[1],7"],
        ["crowd", "create"],
        ["crowd", "create", "x", "--task", "response", "--criteria", "taste"],
        ["crowd", "decide", "demo", "nobody", "reject"],
    ):
        proc = run_cli(*args, db=cli_db)
        assert proc.returncode == 2, (args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("error: "), proc.stderr
    assert snapshot(cli_db) == before
    for args in (["crowd", "--help"], ["crowd", "create", "--help"], ["crowd", "export", "--help"]):
        assert run_cli(*args).returncode == 0


@pytest.mark.both_engines
@pytest.mark.realdata
def test_cone_rag_mturk_labels_import(store_target, tmp_path):
    """The public CONE-RAG MTurk NtR file: one label per (batch, conv, turn, k, run) id, so these are the
    already aggregated (majority) labels; 1,086 rows, 154 yes, 932 no, in 122 batches of at most 10."""
    labels = shared_file(
        "data", "irlabamsterdam-CONE-RAG", "resources", "human_resources", "human-study-matching-labels.txt"
    )
    topics = shared_file("data", "irlabamsterdam-iKAT", "2024", "data", "2024_test_topics.json")
    nuggets = shared_file("data", "irlabamsterdam-CONE-RAG", "resources", "human_resources", "gold_nuggets_human.json")
    rows = study_files.parse_crowd_ntr(labels)
    ids = [r.line for r in rows]
    assert len(rows) == 1086 and len({(r.batch, r.turn_id, r.nugget_key, r.run) for r in rows}) == 1086 == len(ids)
    assert all(r.worker is None for r in rows)
    db = store_target
    run_cli("import", "topics", topics, db=db, check=True)
    run_cli("import", "nuggets", nuggets, "--source", "human", db=db, check=True)
    summary = json.loads(run_cli("crowd", "import", labels, "--json", db=db, check=True).stdout)
    assert (summary["rows"], summary["items"], summary["answers_yes"], summary["answers_no"], summary["batches"]) == (
        1086,
        1086,
        154,
        932,
        122,
    )
    conn = open_db(db)
    assert q(conn, "SELECT COUNT(*), SUM(match) FROM ntr_labels WHERE source = 'crowd:mturk'") == [(1086, 154)]
    sizes = sql.column(
        conn,
        "SELECT COUNT(*) AS n FROM crowd_batch_items bi JOIN crowd_batches b ON "
        "b.id = bi.batch_id WHERE b.study = 'mturk' GROUP BY b.id",
    )
    assert max(sizes) == 10 and sum(sizes) == 1086
    assert sql.value(conn, "SELECT COUNT(*) AS n FROM crowd_answers") == 0  # no worker answers in the file
    # most batches hold the pairs of one turn; 17 span two turns
    spans = sql.column(
        conn,
        "SELECT COUNT(DISTINCT i.turn_id) AS n FROM crowd_batch_items bi "
        "JOIN crowd_items i ON i.id = bi.item_id GROUP BY bi.batch_id",
    )
    assert (spans.count(1), spans.count(2), len(spans)) == (105, 17, 122)
    conn.close()
    # the plain `import ntr-labels` of the same file gives the very same labels
    plain = tmp_path / "plain.db"
    run_cli("import", "topics", topics, db=plain, check=True)
    run_cli("import", "nuggets", nuggets, "--source", "human", db=plain, check=True)
    run_cli("import", "ntr-labels", labels, db=plain, check=True)
    query = (
        "SELECT l.turn_id, n.key, l.run, l.match, l.batch FROM ntr_labels l JOIN nuggets n ON n.id = l.nugget_id "
        "WHERE l.source = 'crowd:mturk' ORDER BY 1, 2, 3"
    )
    assert read_rows(db, query, {}) == read_rows(str(plain), query, {})


def test_workers_at_once_lose_no_answer_and_duplicate_none(tmp_path):
    """A smaller run of tests/benchmarks/load_crowd.py: 40 workers answer at once through the page's
    store functions, each re-sending one answer; then a second wave races for the slots QC freed."""
    from tests.benchmarks.load_crowd import run_load

    result = run_load(tmp_path / "load.db", workers=40, deadline_s=120)
    assert result["ok"], result
    served = 40 + result["second_wave_served"]
    assert result["discarded"] > 0 and result["second_wave_served"] >= result["slots_freed_after_wave_1"] > 0
    assert (
        result["answers_stored"]
        == result["distinct_answers"]
        == result["answers_acknowledged"]
        == result["assignment_items"]
        > 40 * 11
    )
    assert result["completed"] == served
    assert result["resent_reported_not_new"] == served and result["resent_values_stored"] == 0
    assert result["batches_over_k"] == result["monitor_over_k"] == 0 and result["monitor_max_holding"] <= result["k"]
    assert result["kept"] <= result["k"] * result["batches"]


def test_two_tabs_of_each_worker_answering_at_once_lose_no_answer_and_duplicate_none(store_target):
    """Workers arrive at once, each in two tabs (two threads, each with its own connection), and both
    tabs enter, consent and answer every item of the batch at once, the tabs giving opposite values:
    each worker gets one assignment (the same in both tabs), no batch more than k, every item is
    stored once with the value of the one answer reported new, and the other is reported not new."""
    db = open_db(store_target)
    load_demo(db)
    store_crowd.create_demo_study(db, name="race", k=2)
    db.close()
    workers, tabs = 8, 2
    start = threading.Barrier(workers * tabs)
    seen: dict[tuple[int, int], list] = {}
    errors: list[str] = []

    def tab(worker: int, number: int) -> None:
        got = seen[(worker, number)] = []
        try:
            start.wait(timeout=60)
            with open_db(store_target) as conn:
                a = store_crowd.enter(conn, entry(f"t{worker}", study="race"))
                store_crowd.consent(conn, a.id)
                got.append(a.id)
                while not (view := store_crowd.screen(conn, a.id)).completed:
                    result = store_crowd.answer(conn, a.id, view.item.item_id, number, seconds=1.0)
                    got.append((view.item.item_id, number, result.new))
        except Exception as exc:  # reported below with the tab that failed
            errors.append(f"worker {worker} tab {number}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=tab, args=(w, t)) for w in range(workers) for t in range(tabs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors and not any(t.is_alive() for t in threads), errors
    db = open_db(store_target)
    try:
        ids = {w: {seen[(w, t)][0] for t in range(tabs)} for w in range(workers)}
        assert all(len(one) == 1 for one in ids.values()), ids  # both tabs continue the same assignment
        assert q(db, "SELECT COUNT(*) AS n, COUNT(DISTINCT worker) AS workers FROM crowd_assignments") == [
            (workers, workers)
        ]
        assert max(store_crowd.holding(db, "race").values()) <= 2
        for w in range(workers):
            (aid,) = ids[w]
            new = {item: value for t in range(tabs) for item, value, fresh in seen[(w, t)][1:] if fresh}
            stored = dict(q(db, "SELECT item_id, value FROM crowd_answers WHERE assignment_id = :id", {"id": aid}))
            items = sql.value(
                db,
                "SELECT COUNT(*) AS n FROM crowd_batch_items bi JOIN crowd_assignments a "
                "ON a.batch_id = bi.batch_id WHERE a.id = :id",
                {"id": aid},
            )
            acknowledged = sum(fresh for t in range(tabs) for *_, fresh in seen[(w, t)][1:])
            assert stored == new and len(stored) == items == acknowledged, w
        assert q(db, "SELECT DISTINCT status FROM crowd_assignments") == [("completed",)]
    finally:
        db.close()


# ------------------------------------------------------------------------------------------- graded NtR


def test_graded_study_settings_guideline_and_tie_rule_by_hand():
    graded = StudyConfig(graded=True)
    assert (graded.scale, graded.tie, graded.label_task) == ((0, 1, 2), "mean", "ntr-support")
    assert (StudyConfig().scale, StudyConfig().tie, StudyConfig().label_task) == ((0, 1), "undecided", "ntr")
    assert StudyConfig(graded=True, tie="undecided").tie == "undecided"  # stated, it is kept
    assert StudyConfig.from_json(graded.to_json()) == graded and json.loads(graded.to_json())["graded"] is True
    assert "graded" not in json.loads(StudyConfig().to_json())  # a yes/no study's settings read as before
    with pytest.raises(AssessError, match="graded applies to NtR studies only"):
        StudyConfig(task="response", criteria=("relevance",), graded=True)
    # ties over three levels: the mean rounded half up (assess.tasks.consensus)
    assert crowd_rules.majority_vote([2, 1, 0], "mean") == (1, 1.0, 3, {0: 1, 1: 1, 2: 1}, True)  # 2-1-0: partial
    assert crowd_rules.majority_vote([2, 2, 0, 0], "mean")[:2] == (1, 1.0)  # support vs none: partial
    assert crowd_rules.majority_vote([2, 1], "mean")[:2] == (2, 1.5)  # 1.5 rounds half up to support
    assert crowd_rules.majority_vote([1, 0], "mean")[:2] == (1, 0.5)
    assert crowd_rules.majority_vote([2, 2, 1], "mean") == (2, 5 / 3, 3, {1: 1, 2: 2}, False)  # no tie: the majority
    assert crowd_rules.majority_vote([2, 1, 0], "undecided").label is None
    assert crowd_rules.qc_failed(1, 2, "test") and not crowd_rules.qc_failed(
        2, 2, "test"
    )  # a test answer must be exact
    assert crowd_rules.qc_failed(2, 0, "known-bad", 2) and not crowd_rules.qc_failed(1, 0, "known-bad", 2)
    guide = guideline.default_guideline(graded)
    for words in ("**2** support", "**1** partial support", "**0** no support"):
        assert words in guide["instructions"]
    assert [e["answer"] for e in guide["examples"]] == ["2 support", "1 partial support", "0 no support"]
    assert "**Y**" in guideline.default_guideline(StudyConfig())["instructions"]  # yes/no unchanged


@given(st.lists(st.integers(0, 2), min_size=1, max_size=12))
@settings(max_examples=120, deadline=None)
def test_graded_votes_stay_on_the_scale_and_agree_with_consensus(values):
    from assess.tasks import consensus

    vote = crowd_rules.majority_vote(values, StudyConfig(graded=True).tie)
    assert vote.label in (0, 1, 2) and vote.label == consensus(values)
    top = max(vote.counts.values())
    if not vote.tie:
        assert vote.counts[vote.label] == top
    else:  # between the lowest and highest answer, never outside what workers said
        assert min(values) <= vote.label <= max(values)


@given(st.lists(st.tuples(st.integers(1, 9), st.integers(0, 2)), min_size=1, max_size=20, unique_by=lambda t: t[0]))
@settings(max_examples=60, deadline=None)
def test_graded_tsv_lines_read_back_as_written(tmp_path_factory, labels):
    path = tmp_path_factory.mktemp("tsv") / "graded.tsv"
    path.write_text("".join(f"1_101_1_{k}_demo-dense\t{study_files.support_word(v)}\n" for k, v in labels))
    read = study_files.parse_crowd_ntr(path)
    assert [(r.nugget_key, r.value, r.graded) for r in read] == [(f"[{k}]", v, True) for k, v in labels]


def test_graded_known_answers_are_words_and_the_other_kind_is_refused(tmp_path):
    spec = study_files.parse_known_spec
    assert spec("101_1,demo-rerank,[2],support", graded=True) == KnownAnswer("101_1", "demo-rerank", "[2]", 2)
    assert spec("101_1,r,2,partial_support", graded=True).value == 1
    assert spec("101_1,r,2,no support", graded=True).value == 0
    assert spec("101_1,r,2,2", graded=True).value == 2  # the key numbers
    assert spec("101_1,r,2,yes").value == 1 and spec("101_1,r,2,0").value == 0
    with pytest.raises(AssessError, match="'yes' is a yes/no answer, but the study is graded"):
        spec("101_1,r,2,yes", graded=True)
    with pytest.raises(AssessError, match="'support' is a graded answer, but the study is yes/no"):
        spec("101_1,r,2,support")
    good = tmp_path / "known.tsv"
    good.write_text("1_101_1_2_demo-rerank\tsupport\n1_101_1_3_demo-bm25\tnot_support\n")
    assert [(k.key, k.value) for k in study_files.parse_known_file(good, "ntr", graded=True)] == [
        ("[2]", 2),
        ("[3]", 0),
    ]
    with pytest.raises(FormatError, match=r"known.tsv:1: expected 0\|1 .*found 'support' \(a graded answer\)"):
        study_files.parse_known_file(good, "ntr")
    yes_no = tmp_path / "yesno.tsv"
    yes_no.write_text("1_101_1_2_demo-rerank\t1\n")  # a CONE-RAG yes/no file is never read as graded
    with pytest.raises(FormatError, match=r"yesno.tsv:1: expected support, partial_support .*'1' \(a yes/no answer\)"):
        study_files.parse_known_file(yes_no, "ntr", graded=True)
    mixed = tmp_path / "mixed.tsv"
    mixed.write_text("1_101_1_1_demo-dense\t1\n1_101_1_2_demo-dense\tsupport\n")
    with pytest.raises(FormatError, match=r"mixed.tsv:2: expected the same kind of label on every line"):
        study_files.parse_crowd_ntr(mixed)


def graded_study(db, name: str = "g", **settings) -> dict[str, int]:
    """A graded study over demo-dense's 5 nuggets of turn 101_1 in one batch of 5 + 1 test item (demo-rerank's
    [2], known support), k = 3; returns the item id of each nugget key."""
    store_crowd.create_study(
        db,
        name,
        StudyConfig(graded=True, batch_size=5, **settings),
        runs=["demo-dense"],
        turns=["101_1"],
        known=[study_files.parse_known_spec("101_1,demo-rerank,[2],support", graded=True)],
    )
    items = store_crowd.study_items(db, name)
    return {it["nugget_key"]: i for i, it in items.items() if it["run"] == "demo-dense"}


# Hand-worked: each worker's answer per nugget key of demo-dense in 101_1.
GRADED_ANSWERS = {
    "a": {"[1]": 2, "[2]": 2, "[3]": 0, "[4]": 1, "[5]": 2},
    "b": {"[1]": 1, "[2]": 2, "[3]": 0, "[4]": 1, "[5]": 1},
    "c": {"[1]": 0, "[2]": 1, "[3]": 1, "[4]": 2, "[5]": 2},
}
# [1] 2-1-0 is a tie: mean 1.0 -> 1 partial support; the others have a majority.
GRADED_MAJORITY = {"[1]": 1, "[2]": 2, "[3]": 0, "[4]": 1, "[5]": 2}


def test_graded_study_end_to_end(demo):
    keys = graded_study(demo)
    key_of = {i: k for k, i in keys.items()}
    test_item = sql.value(demo, "SELECT id FROM crowd_items WHERE study = 'g' AND known_answer IS NOT NULL")
    assert sql.value(demo, "SELECT known_answer FROM crowd_items WHERE id = :id", {"id": test_item}) == 2

    def answers_of(worker, test_answer=2):  # the hand-worked answers; the test item answered test_answer
        return lambda view: test_answer if view.item_id == test_item else GRADED_ANSWERS[worker][key_of[view.item_id]]

    def give_all(assignment, answer_of):
        store_crowd.consent(demo, assignment.id)
        while not (view := store_crowd.screen(demo, assignment.id)).completed:
            store_crowd.answer(demo, assignment.id, view.item.item_id, answer_of(view.item), graded=True)

    a, b, d = (store_crowd.enter(demo, entry(w, study="g")) for w in "abd")
    first = store_crowd.screen(demo, a.id).item
    store_crowd.consent(demo, a.id)
    before = sql.value(demo, "SELECT COUNT(*) AS n FROM crowd_answers")
    with pytest.raises(AssessError, match="a yes/no answer is refused: this study's answers are graded: 2 support"):
        store_crowd.answer(demo, a.id, first.item_id, 1, graded=False)
    with pytest.raises(AssessError, match=r"answer 3 is not on this study's scale \(graded"):
        store_crowd.answer(demo, a.id, first.item_id, 3, graded=True)
    assert sql.value(demo, "SELECT COUNT(*) AS n FROM crowd_answers") == before == 0
    give_all(d, answers_of("a", test_answer=1))  # partial support on a known support: fails QC
    assert store_crowd.enter(demo, entry("c", study="g")).batch == "1"  # d's discarded batch frees its slot
    for worker, assignment in (("a", a), ("b", b), ("c", store_crowd.enter(demo, entry("c", study="g")))):
        give_all(assignment, answers_of(worker))
    assert store_crowd.enter(demo, entry("e", study="g")) is None  # 3 kept workers: nothing left
    report = store_crowd.report(demo, "g")
    assert len(report["discarded"]) == 1 and "answered 1, known 2" in next(iter(report["discarded"].values()))
    assert (report["items_labelled"], report["items_decided"], report["ties"]) == (5, 5, 1)
    kept = report["agreement_kept"]["match"]
    assert (kept["items"], kept["fleiss_items"], kept["fleiss_raters"]) == (5, 5, 3)
    votes = {key_of[r["item_id"]]: (r["label"], r["tie"], r["counts"]) for r in store_crowd.aggregated_rows(demo, "g")}
    assert votes["[1]"] == (1, True, json.dumps({"0": 1, "1": 1, "2": 1}))
    assert {k: v[0] for k, v in votes.items()} == GRADED_MAJORITY
    summary = store_crowd.write_aggregate(demo, "g")
    assert (summary["source"], summary["labels"], summary["values"]) == ("crowd:g", 5, {0: 1, 1: 2, 2: 2})
    stored = q(
        demo,
        "SELECT n.key, l.support, l.mode, l.via FROM ntr_support_labels l JOIN nuggets n ON n.id = l.nugget_id "
        "WHERE l.source = 'crowd:g' AND l.run = 'demo-dense' ORDER BY n.key",
    )
    assert stored == [(k, v, "crowd", "majority") for k, v in sorted(GRADED_MAJORITY.items())]
    assert sql.value(demo, "SELECT COUNT(*) AS n FROM ntr_labels WHERE source = 'crowd:g'") == 0
    assert q(demo, "SELECT kind FROM sources WHERE name = 'crowd:g'") == [("crowd",)]
    # the scores read them on the graded scale
    from store import labels

    nugget = dict(q(demo, "SELECT key, id FROM nuggets WHERE source = 'gold' AND turn_id = '101_1'"))
    assert labels.ntr_support(demo, "crowd:g") == {
        ("101_1", nugget[k], "demo-dense"): v for k, v in GRADED_MAJORITY.items()
    }
    # 'undecided' ties: the tied item loses its label on the next aggregate
    change_settings(demo, "g", tie="undecided")
    again = store_crowd.write_aggregate(demo, "g")
    assert (again["labels"], again["removed"]) == (4, 1)
    assert "[1]" not in dict(
        q(
            demo,
            "SELECT n.key, l.support FROM ntr_support_labels l JOIN nuggets n ON n.id = l.nugget_id "
            "WHERE l.source = 'crowd:g'",
        )
    )


def test_a_yes_no_study_beside_a_graded_one_still_writes_ntr_labels(demo):
    graded_study(demo, qc="none")
    store_crowd.create_study(demo, "yn", StudyConfig(qc="none", batch_size=5), runs=["demo-dense"], turns=["101_1"])
    a = store_crowd.enter(demo, entry("a", study="yn"))
    store_crowd.consent(demo, a.id)
    item = store_crowd.screen(demo, a.id).item
    with pytest.raises(AssessError, match="a graded answer .* is refused: this study's answers are yes/no"):
        store_crowd.answer(demo, a.id, item.item_id, 1, graded=True)
    with pytest.raises(AssessError, match="answer 2 is not on this study's scale"):
        store_crowd.answer(demo, a.id, item.item_id, 2)
    do_batch(demo, a, lambda view: 1)
    assert store_crowd.write_aggregate(demo, "yn")["labels"] == 5
    assert q(demo, "SELECT COUNT(*) AS n, MIN(match) AS m FROM ntr_labels WHERE source = 'crowd:yn'") == [(5, 1)]
    assert sql.value(demo, "SELECT COUNT(*) AS n FROM ntr_support_labels WHERE source = 'crowd:yn'") == 0
    g = store_crowd.enter(demo, entry("a", study="g"))
    do_batch(demo, g, lambda view: 1)  # graded 1: partial support
    store_crowd.write_aggregate(demo, "g")
    assert q(demo, "SELECT COUNT(*) AS n, MIN(support) AS s FROM ntr_support_labels WHERE source = 'crowd:g'") == [
        (5, 1)
    ]
    assert sql.value(demo, "SELECT COUNT(*) AS n FROM ntr_labels WHERE source = 'crowd:g'") == 0


def test_cli_graded_study_create_aggregate_score_export_import(store_target, tmp_path):
    db = store_target
    run_cli("init", "--demo", db=db, check=True)
    before = snapshot(db)
    known_file = tmp_path / "known.tsv"
    known_file.write_text("1_101_1_2_demo-rerank\t1\n")  # a yes/no known file for a graded study
    for args, says in (
        (["--known", "101_1,demo-rerank,[2],yes"], "'yes' is a yes/no answer, but the study is graded"),
        (["--known-file", known_file], f"{known_file}:1: expected support, partial_support or not_support"),
        (["--task", "response"], "--graded applies to --task ntr"),
        (["--known", "101_1,demo-rerank,[2],3"], "value 3 is not on the scale [0, 1, 2]"),
    ):
        proc = run_cli("crowd", "create", "g", "--graded", *args, db=db)
        assert proc.returncode == 2 and proc.stderr.count("error: ") == 1 and says in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
    proc = run_cli("crowd", "create", "y", "--known", "101_1,demo-rerank,[2],support", db=db)  # vice versa
    assert proc.returncode == 2 and "'support' is a graded answer, but the study is yes/no" in proc.stderr
    assert snapshot(db) == before
    created = run_cli(
        "crowd", "create", "g", "--graded", "--run", "demo-dense", "--turn", "101_1", "--batch-size", "5",
        "--known", "101_1,demo-rerank,[2],support", db=db, check=True,
    ).stdout  # fmt: skip
    assert "labels go to crowd:g as ntr-support labels (graded: 2 support, 1 partial support, 0 no support)" in created
    conn = open_db(db)
    items = store_crowd.study_items(conn, "g")
    for worker in GRADED_ANSWERS:
        do_batch(
            conn,
            store_crowd.enter(conn, entry(worker, study="g")),
            lambda view, w=worker: (
                2
                if items[view.item_id]["known_answer"] is not None
                else GRADED_ANSWERS[w][items[view.item_id]["nugget_key"]]
            ),
        )
    conn.close()
    assert json.loads(run_cli("crowd", "status", "g", "--json", db=db, check=True).stdout)["graded"] is True
    compare = run_cli("crowd", "report", "g", "--compare", "llm:demo-gpt", db=db)
    assert compare.returncode == 2 and "audit agreement --task ntr-support" in compare.stderr
    summary = json.loads(run_cli("crowd", "aggregate", "g", "--json", db=db, check=True).stdout)
    assert (summary["task"], summary["labels"], summary["values"]) == ("ntr-support", 5, {"0": 1, "1": 2, "2": 2})
    # score nuggets reads them as graded: 2 of 5 supported, 2 partial (hand-computed)
    scores = json.loads(run_cli("score", "nuggets", "--ntr-source", "crowd:g", "--json", db=db, check=True).stdout)
    mean = scores["nugget_scores"]["runs"]["demo-dense"]["original"]["mean"]
    assert (mean["all_strict"], mean["all_lax"], mean["ntr_recall_strict"], mean["ntr_recall_lax"]) == (
        0.4,
        0.6,
        0.4,
        0.8,
    )
    # TSV exports write support words (never readable as yes/no) and import back as a graded study
    agg = run_cli("crowd", "export", "g", "aggregated", "--format", "tsv", db=db, check=True).stdout.splitlines()
    assert agg == [
        f"1_101_1_{k.strip('[]')}_demo-dense\t{study_files.support_word(v)}" for k, v in sorted(GRADED_MAJORITY.items())
    ]
    raw = tmp_path / "raw.tsv"
    run_cli("crowd", "export", "g", "raw", "--format", "tsv", "--kept", "-o", raw, db=db, check=True)
    assert len(raw.read_text().splitlines()) == 15 and "1_101_1_1_demo-dense\tnot_support\tc" in raw.read_text()
    back = json.loads(
        run_cli("crowd", "import", raw, "--study", "back", "--nuggets", "gold", "--json", db=db, check=True).stdout
    )
    assert (back["workers"], back["answers_support"], back["answers_partial_support"]) == (3, 6, 6)
    query = (
        "SELECT n.key, l.support FROM ntr_support_labels l JOIN nuggets n ON n.id = l.nugget_id "
        "WHERE l.source = :source ORDER BY n.key"
    )
    assert read_rows(db, query, {"source": "crowd:back"}) == read_rows(db, query, {"source": "crowd:g"})
    assert read_rows(db, "SELECT COUNT(*) FROM ntr_labels WHERE source = 'crowd:back'", {}) == [(0,)]
    listed = run_cli("crowd", "status", db=db, check=True).stdout
    assert "ntr (graded)" in listed.splitlines()[0] and listed.splitlines()[1].startswith("back")
    yes_no = tmp_path / "yesno.tsv"  # the same study name again with yes/no labels: refused, nothing changed
    yes_no.write_text("1_101_1_1_demo-dense\t1\n")
    before = snapshot(db)
    proc = run_cli("crowd", "import", yes_no, "--study", "back", "--nuggets", "gold", db=db)
    assert proc.returncode == 2 and "was imported graded, this file is not" in proc.stderr
    assert snapshot(db) == before


def test_a_graded_study_is_not_compared_on_the_yes_no_scale(demo):
    from assess.services.crowd import compare

    study = store_crowd.create_demo_study(demo, graded=True)["study"]
    with pytest.raises(AssessError, match="audit agreement --task ntr-support"):
        compare(demo, study, "llm:demo-gpt")
