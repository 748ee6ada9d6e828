"""Shared pre-judging jobs (``prejudge --join``): several worker processes against the local stub endpoint over
real HTTP, on a SQLite file and on PostgreSQL: every item stored exactly once, a killed worker's block judged by
another after its lease, Ctrl-C giving blocks back, a PostgreSQL restart mid-job, and the refusals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assess.services import shared_jobs
from store import jobs as store_jobs
from store import open_db, prejudgments
from tests.helpers import ROOT, rows, run_cli
from tests.stub_llm import StubLLM, canonical

POOL_WITH_TEXT = 214  # the demo's 217 pooled pairs, 3 of them with a passage that has no text


@pytest.fixture
def demo(request, tmp_path, demo_copy):
    """The demo store: a SQLite file, or a PostgreSQL database for a test that asks for ``store_target``."""
    if "store_target" in request.fixturenames:
        target = request.getfixturevalue("store_target")
        return demo_copy(Path(target) if target.endswith(".db") else target)
    return demo_copy(tmp_path / "demo.db")


@pytest.fixture(autouse=True)
def no_llm_env(monkeypatch):
    for var in ("ASSESS_LLM_BASE_URL", "ASSESS_LLM_MODEL", "ASSESS_LLM_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)


def worker(stub, demo, *options: str) -> subprocess.Popen:
    """``prejudge --join`` against the stub as a process of its own (output captured)."""
    argv = [
        sys.executable,
        "-m",
        "assess",
        "prejudge",
        "--task",
        "passage",
        "--source",
        "llm:stub",
        "--model",
        "stub-1",
        "--base-url",
        stub.base_url,
        "--join",
        *options,
        "--no-progress",
        "--db",
        str(demo),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(condition, timeout: float = 90) -> None:
    deadline = time.time() + timeout
    while not condition():
        assert time.time() < deadline, "timed out"
        time.sleep(0.05)


def stored_once(demo) -> None:
    """Every pooled passage with text has exactly one stored answer of llm:stub, and the job's counts agree."""
    assert rows(demo, "SELECT COUNT(*) AS n, COUNT(DISTINCT turn_id || ' ' || item_id) AS items FROM prejudgments") == [
        (POOL_WITH_TEXT, POOL_WITH_TEXT)
    ]
    assert rows(demo, "SELECT COUNT(*) FROM job_items WHERE state = 'open'") == [(0,)]
    assert rows(demo, "SELECT state, COUNT(*) FROM job_blocks GROUP BY state") == [("done", 22)]  # 214 / 10


@pytest.mark.both_engines
def test_workers_on_one_job_store_every_item_once_and_jobs_lists_them(store_target, demo):
    with StubLLM(latency=0.05) as stub:
        first = worker(stub, demo, "--block-size", "10", "--concurrency", "2")
        wait_for(lambda: rows(demo, "SELECT COUNT(*) FROM prejudgments")[0][0] >= 5)
        others = [worker(stub, demo, "--block-size", "10", "--concurrency", "2") for _ in range(2)]
        outputs = [p.communicate(timeout=120) for p in (first, *others)]
        for p, (out, err) in zip((first, *others), outputs):
            assert p.returncode == 0, err
        asked = [canonical(r) for r in stub.requests if "messages" in r]  # a killed sender leaves {}
    assert len(asked) == len(set(asked)) == POOL_WITH_TEXT  # no item asked twice
    stored_once(demo)
    assert rows(demo, "SELECT status, planned, done, errors, shared FROM prejudge_jobs") == [
        ("done", POOL_WITH_TEXT, POOL_WITH_TEXT, 0, 1)
    ]
    workers = rows(demo, "SELECT pid, status, done FROM job_workers ORDER BY id")
    assert workers[0][0] == first.pid and {w[0] for w in workers} == {p.pid for p in (first, *others)}
    assert {w[1] for w in workers} == {"done"} and sum(w[2] for w in workers) == POOL_WITH_TEXT
    # the first worker planned and printed the estimate; each prints its own share and the job's total
    assert "214 items, 3 passages without text skipped; 0 already judged, 0 from cache, 214 to ask." in outputs[0][1]
    by_pid = {p.pid: out for p, (out, _) in zip((first, *others), outputs)}
    for pid, _, done in workers:
        out = by_pid[pid]
        assert f"llm:stub passage: {done} stored ({done} ok, 0 repaired, 0 unparseable, 0 failed)" in out
        assert "job 1 done: 214 of 214 stored (this was worker " in out
    listed = run_cli("jobs", db=demo).stdout.splitlines()
    assert listed[0].startswith("job 1 done: passage for llm:stub (stub-1), 214 of 214 stored, ")
    assert listed[0].endswith("; 214 of 214 stored by 3 workers")
    for line, (pid, _, done) in zip(listed[1:], workers):
        assert line.startswith("  worker ") and f" done: pid {pid} on " in line and f" {done} stored, " in line
    [as_json] = json.loads(run_cli("jobs", "--json", db=demo).stdout)
    assert [w["done"] for w in as_json["workers"]] == [w[2] for w in workers] and as_json["planning"] is None
    # a second run resumes nothing and asks nothing: everything is judged
    again = run_cli("prejudge", "--task", "passage", "--source", "llm:stub", "--model", "stub-1", "--base-url",
                    "http://127.0.0.1:9/v1", "--join", "--no-progress", db=demo)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "214 already judged, 0 from cache, 0 to ask" in again.stderr


@pytest.mark.both_engines
def test_a_killed_workers_block_is_judged_once_by_another_after_its_lease(store_target, demo):
    with StubLLM(latency=0.1) as stub:
        options = ("--block-size", "10", "--concurrency", "3", "--lease", "2")
        killed = worker(stub, demo, *options)
        wait_for(lambda: rows(demo, "SELECT COUNT(*) FROM prejudgments")[0][0] >= 12)
        survivor = worker(stub, demo, "--block-size", "10", "--concurrency", "12", "--lease", "2")  # done sooner
        wait_for(lambda: rows(demo, "SELECT COUNT(*) FROM job_workers WHERE claimed > 0") == [(2,)])
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait(timeout=30)
        held = rows(
            demo,
            "SELECT b.block FROM job_blocks b JOIN job_workers w ON w.id = b.worker_id WHERE w.pid = :pid "
            "AND b.state = 'claimed'",
            {"pid": killed.pid},
        )
        assert held, "the killed worker held a block"
        out, err = survivor.communicate(timeout=120)
        assert survivor.returncode == 0, err
        time.sleep(0.3)  # calls the killed worker had sent reach the stub before they are counted
        asked = [canonical(r) for r in stub.requests if "messages" in r]  # a killed sender leaves {}
    stored_once(demo)
    # only the calls in flight when the worker was killed were made twice, and the answers it held for its next
    # group commit (at most those of GROUP_WAIT_S = 0.2 s: 0.2 / 0.1 s latency x 3 calls, and the ones in flight)
    assert len(asked) - len(set(asked)) <= 3 + 10 and len(set(asked)) == POOL_WITH_TEXT
    # the killed worker's block was claimed a second time, by the survivor, which finished the job
    for (block,) in held:
        assert rows(demo, "SELECT claims, state FROM job_blocks WHERE block = :b", {"b": block}) == [(2, "done")]
    assert rows(demo, "SELECT status, done FROM prejudge_jobs") == [("done", POOL_WITH_TEXT)]
    listed = run_cli("jobs", "--json", db=demo)
    [job] = json.loads(listed.stdout)
    states = {w["pid"]: w["status"] for w in job["workers"]}
    assert states == {killed.pid: "gone", survivor.pid: "done"}  # the listing sees the killed one is gone


def test_ctrl_c_gives_the_blocks_back_and_the_next_run_resumes_the_job(demo):
    with StubLLM(latency=0.05) as stub:
        proc = worker(stub, demo, "--block-size", "10", "--concurrency", "2")
        wait_for(lambda: rows(demo, "SELECT COUNT(*) FROM prejudgments")[0][0] >= 15)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "stopped: every answer received so far is stored" in err and "Traceback" not in err
        kept = rows(demo, "SELECT COUNT(*) FROM prejudgments")[0][0]
        assert rows(demo, "SELECT status, done FROM prejudge_jobs") == [("stopped", kept)]
        assert rows(demo, "SELECT COUNT(*) FROM job_blocks WHERE state = 'claimed'") == [(0,)]
        assert rows(demo, "SELECT COUNT(*) FROM job_items WHERE state = 'done'") == [(kept,)]
        again = worker(stub, demo, "--block-size", "10", "--concurrency", "8")
        out, err = again.communicate(timeout=120)
        assert again.returncode == 0, err
        asked = [canonical(r) for r in stub.requests if "messages" in r]  # a killed sender leaves {}
    assert f"{POOL_WITH_TEXT - kept} stored" in out
    # the resumed job's estimate is of what was left
    assert f"{kept} already judged, 0 from cache, {POOL_WITH_TEXT - kept} to ask." in err
    stored_once(demo)
    assert rows(demo, "SELECT id, status, done FROM prejudge_jobs") == [(1, "done", POOL_WITH_TEXT)]  # one job, resumed
    assert len(set(asked)) == POOL_WITH_TEXT and len(asked) - POOL_WITH_TEXT <= 2


def test_a_postgresql_restart_during_a_job_loses_and_repeats_nothing(pg_cluster, pg_url, demo_copy):
    demo = demo_copy(pg_url)
    with StubLLM(latency=0.05) as stub:
        proc = worker(stub, demo, "--block-size", "10", "--concurrency", "2", "--lease", "5")
        wait_for(lambda: rows(demo, "SELECT COUNT(*) FROM prejudgments")[0][0] >= 20)
        pg_cluster.stop("fast")
        time.sleep(1.0)
        pg_cluster.start()
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err  # the worker waited for the store and went on
        asked = [canonical(r) for r in stub.requests if "messages" in r]  # a killed sender leaves {}
    stored_once(demo)
    assert rows(demo, "SELECT status, done, errors FROM prejudge_jobs") == [("done", POOL_WITH_TEXT, 0)]
    assert len(set(asked)) == POOL_WITH_TEXT and len(asked) - POOL_WITH_TEXT <= 2  # answers in flight at most


def test_joining_is_refused_with_one_line_where_it_cannot_work(demo):
    base = ("prejudge", "--task", "passage", "--source", "llm:stub", "--model", "stub-1", "--base-url")
    url = "http://127.0.0.1:9/v1"
    alone = run_cli(*base, url, "--lease", "5", db=demo)
    assert alone.returncode == 2
    assert alone.stderr.strip() == "error: --block-size and --lease are options of a shared job: add --join"
    with open_db(demo) as db:  # a live job of one process (this one) runs for the pair
        prejudgments.ensure_llm_source(db, "llm:stub", "stub-1", "v")
        store_jobs.start_job(
            db, source="llm:stub", task="passage", model="stub-1", prompt_version="v", base_url=None, concurrency=1,
            planned=1, skipped=0,
        )  # fmt: skip
    joined = run_cli(*base, url, "--join", db=demo)
    assert joined.returncode == 2
    [line] = joined.stderr.strip().splitlines()
    assert line.startswith(f"error: job 1 is already pre-judging passage for llm:stub (pid {os.getpid()} on ")
    with open_db(demo) as db:
        store_jobs.finish_job(db, 1, "done")
        job_id, role = store_jobs.open_shared_job(
            db, source="llm:stub", task="passage", model="stub-1", prompt_version="passage-relevance@8d16cf1f",
            options=shared_jobs.options_key(shared_jobs.Scope(), limit=None, samples=1, temperature=0),
            base_url=url, concurrency=1, lease_s=60, block_size=10, stale_after_s=60,
        )  # fmt: skip
    assert (job_id, role) == (2, "start")
    other = run_cli(*base, url, "--join", "--limit", "5", db=demo)  # another item list than the running job's
    assert other.returncode == 2
    assert other.stderr.startswith("error: job 2 pre-judges passage for llm:stub with stub-1 ")
    assert "join it with the same options, or wait for it" in other.stderr
    alone = run_cli(*base, url, db=demo)  # a run of one process is refused while the shared job runs
    assert alone.returncode == 2 and "error: job 2 is already pre-judging passage for llm:stub" in alone.stderr
    assert rows(demo, "SELECT COUNT(*) FROM prejudgments") == [(0,)]


def test_nuggets_match_joins_a_shared_ntr_job_of_the_runs_only(demo):
    from tests.services.test_nugget_match import items, stored_labels
    from tests.stub_llm import Reply, enclosed

    def rule(request):  # yes when the gold nugget's text has an even length
        return Reply(content="yes" if len(enclosed(request, "nugget")) % 2 == 0 else "no")

    args = ("nuggets", "match", "--gold", "gold", "--run", "demo-rerank", "--method", "ntr", "--backend", "chat")
    with StubLLM(reply=rule) as stub:
        proc = run_cli(*args, "--model", "stub-1", "--endpoint", stub.base_url, "--join", "--block-size", "7",
                       "--json", db=demo)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        asked = len(stub.requests)
    out = json.loads(proc.stdout)["matching"]
    cases = items(demo, ("demo-rerank",))
    assert asked == len(cases) == out["asked"] == out["covered"] == 64  # the other runs' items are not this job's
    assert stored_labels(demo, "llm:stub-1") == {
        (c["turn_id"], c["nugget_id"], c["run"]): int(len(c["nugget"]) % 2 == 0) for c in cases
    }
    assert rows(demo, "SELECT task, status, planned, done, shared FROM prejudge_jobs") == [("ntr", "done", 64, 64, 1)]
    assert rows(demo, "SELECT COUNT(*), SUM(claimed), SUM(done) FROM job_workers") == [(1, 10, 64)]  # 64 / 7
    refused = run_cli(*args[:-4], "--method", "ntn", "--backend", "nli", "--join", db=demo)
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        "error: --join shares a match with a chat model (--backend chat); the NLI backend runs in one process"
    )


# ------------------------------------------------------------------------------ nuggets match --method ntn --join

NTN_ITEMS, RESPONSES = 64, 12  # demo-bm25: 64 (gold nugget, response) items, 12 responses with text


def ntn_worker(stub, demo, *options: str) -> subprocess.Popen:
    """``nuggets match --method ntn --backend chat --join`` of demo-bm25 against the stub, a process of its own."""
    argv = [sys.executable, "-m", "assess", "nuggets", "match", "--gold", "gold", "--run", "demo-bm25", "--method",
            "ntn", "--backend", "chat", "--model", "stub-1", "--endpoint", stub.base_url, "--join", *options, "--db",
            str(demo)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def ntn_count(demo) -> int:
    return rows(demo, "SELECT COUNT(*) FROM prejudgments WHERE task = 'ntn'")[0][0]


def ntn_stored_once(demo) -> int:
    """Every item of the NtN job has exactly one answer and one label following the stub's rule, the job's counts
    agree, and the extraction ran as a shared job before it (a worker that came once the responses had their
    nuggets asks none); the NtN job's id."""
    from tests.services.test_nugget_match import extracted_nuggets, items, stored_labels

    assert rows(demo, "SELECT COUNT(*) AS n, COUNT(DISTINCT turn_id || ' ' || item_id) AS items FROM prejudgments "
                "WHERE task = 'ntn'") == [(NTN_ITEMS, NTN_ITEMS)]  # fmt: skip
    extracted = extracted_nuggets(demo, "llm:stub-1", ("demo-bm25",))
    expected = {}
    for c in items(demo, ("demo-bm25",)):  # matched: some extracted nugget shares the gold nugget's first word
        firsts = {e.split()[0].lower() for e in extracted[(c["turn_id"], c["run"])]}
        expected[(c["turn_id"], c["nugget_id"], c["run"])] = int(c["nugget"].split()[0].lower() in firsts)
    assert stored_labels(demo, "llm-ntn:stub-1") == expected and 0 < sum(expected.values()) < NTN_ITEMS
    assert rows(
        demo,
        "SELECT task, MIN(status) AS lo, MAX(status) AS hi, SUM(planned) AS planned, SUM(done) AS done, "
        "MIN(shared) AS shared FROM prejudge_jobs "
        "GROUP BY task ORDER BY task",
    ) == [  # fmt: skip
        ("ntn", "done", "done", NTN_ITEMS, NTN_ITEMS, 1),
        ("response-nuggets", "done", "done", RESPONSES, RESPONSES, 1),
    ]
    [(job_id,)] = rows(demo, "SELECT id FROM prejudge_jobs WHERE task = 'ntn'")
    assert rows(demo, "SELECT COUNT(*) FROM job_items WHERE state = 'open'") == [(0,)]
    assert rows(demo, "SELECT state, COUNT(*) FROM job_blocks WHERE job_id = :j GROUP BY state", {"j": job_id}) == [
        ("done", 13)  # 64 / 5
    ]
    return job_id


@pytest.mark.both_engines
def test_two_workers_share_one_ntn_match_job_every_item_stored_once(store_target, demo):
    from tests.services.test_nugget_match import stub_answer

    both_in = []

    def once_both_joined(request):  # a matching call waits until both workers are on the NtN job (at most 30 s):
        # otherwise a worker still waiting on the extraction could find the NtN job already done and start another
        if not both_in and "exact copies" not in request["messages"][-1]["content"].lower():
            for _ in range(600):
                joined = rows(
                    demo,
                    "SELECT COUNT(*) FROM job_workers w JOIN prejudge_jobs j ON j.id = w.job_id WHERE j.task = 'ntn'",
                )
                if joined[0][0] >= 2:
                    both_in.append(True)
                    break
                time.sleep(0.05)
        return stub_answer(request)

    with StubLLM(reply=once_both_joined, latency=0.005) as stub:
        # --lease 4: a worker waiting for the other's last block looks again every half second
        procs = [ntn_worker(stub, demo, "--block-size", "5", "--concurrency", "4", "--lease", "4") for _ in range(2)]
        outputs = [p.communicate(timeout=120) for p in procs]
        for p, (_, err) in zip(procs, outputs):
            assert p.returncode == 0, err
        asked = [canonical(r) for r in stub.requests if "messages" in r]
    job_id = ntn_stored_once(demo)
    # no extraction and no (gold, extracted nugget) pair asked twice: 12 extractions and one call per pair
    pairs = rows(demo, "SELECT SUM(attempts) FROM prejudgments WHERE task = 'ntn'")[0][0]
    assert len(asked) == len(set(asked)) == RESPONSES + pairs
    workers = rows(demo, "SELECT pid, status, done FROM job_workers WHERE job_id = :j ORDER BY id", {"j": job_id})
    assert sorted((w[0], w[1]) for w in workers) == sorted((p.pid, "done") for p in procs)
    assert sum(w[2] for w in workers) == NTN_ITEMS
    by_pid = {p.pid: out for p, (out, _) in zip(procs, outputs)}
    for pid, _, done in workers:  # each prints its own share, then the job's total
        assert f" {done} asked, 0 from cache, " in by_pid[pid]
        assert f"job {job_id} done: 64 of 64 stored (this was worker " in by_pid[pid]
    listed = run_cli("jobs", db=demo).stdout.splitlines()
    at = listed.index(next(line for line in listed if line.startswith(f"job {job_id} ")))
    assert listed[at].startswith(f"job {job_id} done: ntn for llm-ntn:stub-1 (stub-1), 64 of 64 stored, ")
    assert listed[at].endswith("; 64 of 64 stored by 2 workers")
    pids = sorted(int(line.split(" done: pid ")[1].split()[0]) for line in listed[at + 1 : at + 3])
    assert pids == sorted(p.pid for p in procs)


def test_a_killed_ntn_workers_block_is_taken_over_after_its_lease(demo):
    import threading

    from tests.services.test_nugget_match import stub_answer

    survivor_in = threading.Event()

    def held_back(request):  # the first worker's calls wait once it has stored a few items, until the second claims
        if len(stub.requests) > RESPONSES + 8 and "exact copies" not in request["messages"][-1]["content"].lower():
            survivor_in.wait(30)
        return stub_answer(request)

    with StubLLM(reply=held_back, latency=0.01) as stub:
        options = ("--block-size", "5", "--concurrency", "2", "--lease", "1")
        killed = ntn_worker(stub, demo, *options)
        wait_for(lambda: ntn_count(demo) >= 2)
        survivor = ntn_worker(stub, demo, *options)
        claimed = "SELECT COUNT(*) FROM job_workers w JOIN prejudge_jobs j ON j.id = w.job_id WHERE j.task = 'ntn' AND w.claimed > 0"
        wait_for(lambda: rows(demo, claimed) == [(2,)])
        survivor_in.set()
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait(timeout=30)
        held = rows(demo, "SELECT b.job_id, b.block FROM job_blocks b JOIN job_workers w ON w.id = b.worker_id "
                    "WHERE w.pid = ? AND b.state = 'claimed'", killed.pid)  # fmt: skip
        assert held, "the killed worker held a block"
        _, err = survivor.communicate(timeout=120)
        assert survivor.returncode == 0, err
    job_id = ntn_stored_once(demo)
    for job, block in held:  # claimed again, by the survivor, once the lease ran out
        assert (job, rows(demo, "SELECT claims, state FROM job_blocks WHERE job_id = ? AND block = ?", job, block)) == (
            job_id,
            [(2, "done")],
        )
    [job] = [j for j in json.loads(run_cli("jobs", "--json", db=demo).stdout) if j["id"] == job_id]
    assert {w["pid"]: w["status"] for w in job["workers"]} == {killed.pid: "gone", survivor.pid: "done"}
