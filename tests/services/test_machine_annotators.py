"""Machine annotators declared (store/roster.py, migration 25) on both engines: the roster from jobs and
declarations, a declared import kept apart from people in agreement figures, and machine workers left out of
a crowd study's majority vote."""

from __future__ import annotations

import re

import pytest

from assess.crowd import entry as crowd_entry
from assess.errors import AssessError
from assess.measures.agreement import agreement_matrix
from assess.services import audit, machines
from store import crowd as store_crowd
from store import jobs, labels, open_db
from store.db import rows, write
from store.sources import ensure_source
from tests.helpers import snapshot

GPT_FILE = "gpt4-file"  # an imported file of an LLM's grades: kind 'import' (a person's, by default) until declared


@pytest.fixture
def db(demo_target):
    database = open_db(demo_target)
    yield database
    database.close()


def _import_llm_file(db):
    """The demo LLM's passage grades imported under a plain name, as a qrels file of GPT-4's would be."""
    grades = labels.values(db, "passage", "llm:demo-gpt")
    with write(db):
        ensure_source(db, GPT_FILE)
    labels.save_many(db, "passage", GPT_FILE, list(grades.items()), mode="import", via="bulk")


def test_the_roster_reads_jobs_and_declarations(db):
    job = jobs.start_job(
        db, source="llm:demo-gpt", task="passage", model="gpt-4o", prompt_version="passage-relevance@1a2b",
        base_url="http://vllm.local/v1", concurrency=1, planned=0, skipped=0,
    )  # fmt: skip
    jobs.finish_job(db, job, "done")
    _import_llm_file(db)
    assert GPT_FILE not in {r["source"] for r in machines.roster(db)}  # an import is taken as people's
    done = machines.declare(
        db, GPT_FILE, model="gpt-4-0613", prompt_version="umbrela-1", engine="openai-api", date="2024-07-01", by="boss"
    )
    assert done["kind"] == "llm"
    found = {r["source"]: r for r in machines.roster(db)}
    started = rows(db, "SELECT started_at FROM prejudge_jobs WHERE id = :id", {"id": job})[0]["started_at"]
    assert {k: found["llm:demo-gpt"][k] for k in ("model", "prompt_version", "engine", "date", "missing")} == {
        "model": "gpt-4o", "prompt_version": "passage-relevance@1a2b", "engine": "http://vllm.local/v1",
        "date": started[:10], "missing": [],
    }  # fmt: skip
    assert set(found["llm:demo-gpt"]["from"].values()) == {f"job {job}"}
    assert found[GPT_FILE] | {"from": None} == {
        "source": GPT_FILE, "model": "gpt-4-0613", "prompt_version": "umbrela-1", "engine": "openai-api",
        "date": "2024-07-01", "missing": [], "from": None,
    }  # fmt: skip
    assert found["llm:demo-llama"]["missing"] == ["prompt_version", "engine", "date"]  # said, not guessed
    history = rows(db, "SELECT source, item, via FROM label_history WHERE item = :i", {"i": f"machine {GPT_FILE}"})
    assert history == [{"source": "boss", "item": f"machine {GPT_FILE}", "via": "declare"}]


@pytest.mark.parametrize(
    "source, fields, message",
    [
        ("nobody", {}, "no label source 'nobody'"),
        ("demo-ann", {}, "'demo-ann' is a source of kind assessor"),
        ("adjudication", {}, "no label source"),
        (GPT_FILE, {"date": "2024-13-01"}, "--date: an ISO date YYYY-MM-DD, not '2024-13-01'"),
        (GPT_FILE, {"date": "July 2024"}, "--date: an ISO date"),
        (GPT_FILE, {"model": " "}, "--model: 1-200 printable characters"),
        (GPT_FILE, {"engine": "vllm\x1b[31m"}, "--engine: 1-200 printable characters, found U+001B"),
        (GPT_FILE, {"prompt_version": "v\u202e1"}, "--prompt-version: 1-200 printable characters, found U+202E"),
    ],
)
def test_a_bad_declaration_is_refused_and_nothing_is_written(db, demo_target, source, fields, message):
    _import_llm_file(db)
    before = snapshot(demo_target)
    given = {"model": "m", "prompt_version": "p", "engine": "e", "date": "2024-07-01", **fields}
    with pytest.raises(AssessError, match=re.escape(message)):
        machines.declare(db, source, by="boss", **given)
    assert snapshot(demo_target) == before


def test_agreement_splits_people_and_machines_by_the_roster(db):
    _import_llm_file(db)
    chosen = ["demo-ann", "demo-ben", "llm:demo-gpt", "llm:demo-llama", GPT_FILE]
    before = audit.agreement_view(db, "passage", chosen, threshold=2, bootstrap=0, breakdowns=())
    assert before["splits"]["machine-machine"]["pairs"] == [["llm:demo-gpt", "llm:demo-llama"]]
    machines.declare(db, GPT_FILE, model="gpt-4", prompt_version="p1", engine="api", date="2024-07-01", by="boss")
    view = audit.agreement_view(db, "passage", chosen, threshold=2, bootstrap=0, breakdowns=())
    values = {s: labels.values(db, "passage", s) for s in chosen}
    values = {s: {k: v for k, v in by.items() if v is not None} for s, by in values.items()}
    for split, members in (
        ("human-human", ["demo-ann", "demo-ben"]),
        ("machine-machine", ["llm:demo-gpt", "llm:demo-llama", GPT_FILE]),
    ):  # each split equals the matrix of its own sources alone (a subset's every pair pooled)
        alone = agreement_matrix(
            {s: values[s] for s in members}, scale=[0, 1, 2, 3, 4], threshold=2,
            kinds=dict.fromkeys(members, "human"), bootstrap=0, min_shared=1,
        )["splits"]["human-human"]  # fmt: skip
        got = view["splits"][split]
        assert (got["n"], got["agreement"], got["kappa_quadratic"]) == pytest.approx(
            (alone["n"], alone["agreement"], alone["kappa_quadratic"])
        )
    assert [GPT_FILE, "llm:demo-gpt"] in view["splits"]["machine-machine"]["pairs"] or [
        "llm:demo-gpt", GPT_FILE] in view["splits"]["machine-machine"]["pairs"]  # fmt: skip
    assert GPT_FILE not in audit.default_humans(db, "passage")  # nor among the alternative annotator test's people
    report = audit.agreement_from_store(db, "passage", "demo-ann", GPT_FILE, weights=None, threshold=None)
    assert report["pair"] == "human-machine"


def test_a_machine_worker_is_left_out_of_the_majority_vote(db):
    store_crowd.create_demo_study(db)  # k = 3, test items, ties undecided
    known = {
        r["id"]: r["known_answer"]
        for r in rows(db, "SELECT id, known_answer FROM crowd_items WHERE known_answer IS NOT NULL")
    }
    answers = {"amy": 1, "bob": 0, "gpt-worker": 0}
    for worker, value in answers.items():
        assignment = store_crowd.enter(db, _entry(worker))
        store_crowd.consent(db, assignment.id)
        while not (view := store_crowd.screen(db, assignment.id)).completed:
            store_crowd.answer(db, assignment.id, view.item.item_id, known.get(view.item.item_id, value), seconds=2.0)
    with_machine = store_crowd.write_aggregate(db, "demo")
    assert with_machine["labels"] == 10 and with_machine["values"] == {0: 10}  # 1, 0, 0: the majority says 0
    with write(db):
        ensure_source(db, "gpt-worker")  # the same name imported as a source, then declared a machine
    machines.declare(db, "gpt-worker", model="gpt-4", prompt_version="p", engine="api", date="2024-07-01", by="boss")
    without = store_crowd.write_aggregate(db, "demo")
    assert without["machines_left_out"] == ["gpt-worker"]
    assert (without["labels"], without["removed"]) == (0, 10)  # amy 1, bob 0: a tie, undecided
    kept = {
        r["worker"]: (r["kept"], r["discarded_because"]) for r in store_crowd.raw_rows(db, "demo") if not r["is_test"]
    }
    assert kept["gpt-worker"] == (False, "machine annotator") and kept["amy"] == (True, None)


def _entry(worker):

    return crowd_entry.entry_from_params({"study": "demo", "worker": worker})
