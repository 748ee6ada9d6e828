"""``prejudge --batch-out`` / ``--batch-in``: requests out in the OpenAI batch layout, results stored as live
answers are (compared row by row with a live run against the stub), a second read storing nothing twice, and
the faults: malformed lines, results of another job, repeated, missing and changed lines."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from assess.llm import prompts
from tests.helpers import rows, run_cli, snapshot
from tests.stub_llm import Reply, StubLLM, enclosed, run_batch

LIMIT = 30


def answer(request: dict) -> Reply:
    """A grade in one of three shapes, prose without a grade for every 5th passage, HTTP 500 for every 7th."""
    passage = enclosed(request, "passage")
    h = int(hashlib.sha256(passage.encode()).hexdigest(), 16)
    if h % 7 == 0:
        return Reply(500, "overloaded")
    if h % 5 == 0:
        return Reply(content="It is somewhat related.")
    return Reply(content=[str(h % 5), f"Score: {h % 5}", json.dumps({"grade": h % 5})][h % 3])


def prejudge(db, *extra):
    return run_cli("prejudge", "--task", "passage", "--model", "stub-1", "--no-progress", *extra, db=db)


OUTCOMES = (
    "SELECT turn_id, item_id, model, prompt_version, input_hash, raw_output, parse_status, parsed, note, sample "
    "FROM prejudgments ORDER BY turn_id, item_id"
)
LABELS = "SELECT turn_id, passage_id, grade, source FROM passage_labels WHERE source = 'llm:stub-1' ORDER BY 1, 2"


@pytest.fixture
def demo(tmp_path, demo_copy):
    return demo_copy(tmp_path / "demo.db")


def test_results_are_stored_as_live_answers_once(tmp_path, demo, demo_copy, monkeypatch):
    for var in ("ASSESS_LLM_BASE_URL", "ASSESS_LLM_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    requests, results = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    out = prejudge(demo, "--limit", str(LIMIT), "--batch-out", requests)
    assert out.returncode == 0, out.stderr
    assert f"{LIMIT} requests written to {requests} (job 1)" in out.stdout
    assert "30 to ask, 184 left for later (--limit)" in out.stderr  # the estimate
    lines = [json.loads(line) for line in requests.read_text().splitlines()]
    assert len(lines) == LIMIT and len({r["custom_id"] for r in lines}) == LIMIT
    first = lines[0]
    assert set(first) == {"custom_id", "method", "url", "body"}
    assert (first["method"], first["url"]) == ("POST", "/v1/chat/completions")
    assert first["custom_id"].startswith("job1/0/") and first["custom_id"].endswith(" demo-doc-001:0")
    assert set(first["body"]) == {"model", "messages", "temperature", "max_tokens"}
    assert (first["body"]["model"], first["body"]["temperature"]) == ("stub-1", 0)
    assert rows(demo, "SELECT status, planned, done FROM prejudge_jobs") == [("done", LIMIT, 0)]
    assert rows(demo, "SELECT COUNT(*) FROM prejudgments") == [(0,)]

    assert run_batch(requests, results, answer) == LIMIT
    back = prejudge(demo, "--batch-in", results)
    assert back.returncode == 0, back.stderr
    stored = rows(demo, "SELECT parse_status, COUNT(*) FROM prejudgments GROUP BY parse_status ORDER BY 1")
    counts = dict(stored)
    assert sum(counts.values()) == LIMIT and counts["error"] > 0 and counts["unparseable"] > 0
    assert (
        f"llm:stub-1 passage: {LIMIT} stored ({counts['ok']} ok, 0 repaired, {counts['unparseable']} unparseable, "
        f"{counts['error']} failed), 0 from cache; {LIMIT} result lines, 0 already stored, 0 repeated, 0 not stored; "
        f"0 requests without a result, {214 - LIMIT + counts['error']} answers still pending"
    ) in back.stdout
    errors = rows(demo, "SELECT error FROM prejudgments WHERE parse_status = 'error'")
    assert all(e.startswith("HTTP 500: overloaded (batch result batch_req_") for (e,) in errors)
    assert rows(demo, "SELECT status, planned, done, unparseable, errors FROM prejudge_jobs WHERE id = 2") == [
        ("done", LIMIT, LIMIT, counts["unparseable"], counts["error"])
    ]

    # the same items asked live, with the same answers: the same rows and labels
    live = demo_copy(tmp_path / "live.db")
    with StubLLM(reply=answer) as stub:
        asked = prejudge(live, "--limit", str(LIMIT), "--base-url", stub.base_url, "--retries", "0")
    assert asked.returncode == 0, asked.stderr
    batch_rows = [r for r in rows(demo, OUTCOMES)]
    live_rows = [r for r in rows(live, OUTCOMES)]
    assert batch_rows == live_rows and len(batch_rows) == LIMIT
    assert rows(demo, LABELS) == rows(live, LABELS) and len(rows(demo, LABELS)) == counts["ok"]
    assert {v for (v,) in rows(demo, "SELECT prompt_version FROM prejudgments")} == {
        prompts.prompt_for("passage").version
    }

    # read again: nothing stored twice, failed requests included; no job recorded
    before = snapshot(demo)
    again = prejudge(demo, "--batch-in", results)
    assert again.returncode == 0, again.stderr
    assert (
        f"0 stored (0 ok, 0 repaired, 0 unparseable, 0 failed), 0 from cache; {LIMIT} result lines, {LIMIT} already"
        in (again.stdout)
    )
    assert snapshot(demo) == before

    # the failed ones go out again in the next batch file, and only they (the rest of the pool too, without --limit)
    retry = tmp_path / "retry.jsonl"
    assert prejudge(demo, "--limit", str(counts["error"]), "--batch-out", retry).returncode == 0
    retried = {json.loads(line)["custom_id"].split(" ", 1)[1] for line in retry.read_text().splitlines()}
    failed = {item for (item,) in rows(demo, "SELECT item_id FROM prejudgments WHERE parse_status = 'error'")}
    assert retried == failed


@pytest.mark.both_engines
def test_faults_are_refused_or_reported_with_their_line(tmp_path, demo_target):
    demo = demo_target  # each engine
    requests, results = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    assert prejudge(demo, "--limit", "6", "--batch-out", requests).returncode == 0
    other = tmp_path / "other.jsonl"  # another model's job, and another prompt version's
    assert prejudge(demo, "--limit", "1", "--model", "stub-2", "--batch-out", other).returncode == 0
    noptkb = tmp_path / "noptkb.jsonl"
    assert prejudge(demo, "--limit", "1", "--no-ptkb", "--batch-out", noptkb).returncode == 0
    run_batch(requests, results)
    good = results.read_text().splitlines()
    run_batch(other, tmp_path / "other-results.jsonl")
    run_batch(noptkb, tmp_path / "noptkb-results.jsonl")
    foreign = (tmp_path / "other-results.jsonl").read_text().splitlines()[0]
    variant = (tmp_path / "noptkb-results.jsonl").read_text().splitlines()[0]

    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([good[0], "{not json", foreign, variant, '{"custom_id": "request-1", "error": null}']))
    before = snapshot(demo)
    refused = prejudge(demo, "--batch-in", bad)
    assert refused.returncode == 2 and snapshot(demo) == before
    err = refused.stderr
    assert f"error: {bad}: 4 result lines refused, nothing stored:" in err
    assert f"{bad}:2: expected one JSON object per line" in err
    assert (
        f"{bad}:3: a result of job 2 (source llm:stub-2, model stub-2); this run is for source llm:stub-1, model stub-1"
        in err
    )
    noptkb_version = prompts.prompt_for("passage", "no-ptkb").version
    assert f"{bad}:4: a result of job 3 (source llm:stub-1:no-ptkb, prompt version {noptkb_version})" in err
    assert f"{bad}:5: expected a 'response' or an 'error', found neither" in err
    assert "Traceback" not in err

    # repeated, missing and changed lines: reported with their line, the rest stored once
    changed = json.loads(good[2])
    changed["custom_id"] = _tampered(changed)
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("\n".join([good[0], good[1], good[0], json.dumps(changed), good[3]]) + "\n")
    read = prejudge(demo, "--batch-in", mixed)
    assert read.returncode == 0, read.stderr
    assert "3 stored" in read.stdout and "5 result lines, 0 already stored, 1 repeated, 1 not stored;" in read.stdout
    assert "2 requests without a result" in read.stdout
    assert f"{mixed}:3: custom_id {json.loads(good[0])['custom_id']!r} repeats line 1: not stored" in read.stderr
    assert f"{mixed}:4: " in read.stderr and "its input or the generation settings changed" in read.stderr
    assert f"{mixed}: job 1 wrote 6 requests; 2 have no result line" in read.stderr
    assert rows(demo, "SELECT COUNT(*) AS n, COUNT(DISTINCT item_id) AS items FROM prejudgments") == [(3, 3)]
    # the whole file afterwards: only what is missing is stored
    whole = prejudge(demo, "--batch-in", results)
    assert whole.returncode == 0 and "3 stored" in whole.stdout and "6 result lines, 3 already stored" in whole.stdout
    assert rows(demo, "SELECT COUNT(*) AS n, COUNT(DISTINCT item_id) AS items FROM prejudgments") == [(6, 6)]


def _tampered(line: dict) -> str:
    """The line's custom_id with a digest that no longer matches its item."""
    job, sample, digest, rest = line["custom_id"].split("/", 3)
    return f"{job}/{sample}/{'0' * 12 if digest != '0' * 12 else '1' * 12}/{rest}"


def test_bad_combinations_are_refused(tmp_path, demo):
    f = tmp_path / "x.jsonl"
    for extra, message in [
        (("--batch-out", f, "--batch-in", f), "give one of them"),
        (("--batch-in", f, "--limit", "3"), "--batch-in stores every result of its file"),
        (("--batch-out", f, "--backend", "nli", "--task", "ntr"), "no --backend nli"),
    ]:
        proc = prejudge(demo, *extra)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    missing = prejudge(demo, "--batch-in", Path(tmp_path / "absent.jsonl"))
    assert missing.returncode == 2 and "absent.jsonl" in missing.stderr and "Traceback" not in missing.stderr


def test_k_answers_and_the_answering_model(tmp_path, demo):
    requests, results = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    k = ("--samples", "2", "--temperature", "0.7")
    assert prejudge(demo, *k, "--limit", "3", "--batch-out", requests).returncode == 0
    lines = [json.loads(line) for line in requests.read_text().splitlines()]
    assert [r["custom_id"].split("/")[1] for r in lines] == ["0", "1"] * 3
    assert {r["body"]["temperature"] for r in lines} == {0.7}
    run_batch(requests, results)
    answered = [json.loads(line) for line in results.read_text().splitlines()]
    answered[0]["response"]["body"]["model"] = "stub-1-2026-01-01"  # a dated name of the same model: accepted
    results.write_text("".join(json.dumps(r) + "\n" for r in answered))
    # other settings than --batch-out: every line's digest disagrees, nothing stored
    other = prejudge(demo, "--samples", "2", "--batch-in", results)
    assert other.returncode == 0 and "6 result lines, 0 already stored, 0 repeated, 6 not stored" in other.stdout
    assert other.stderr.count("its input or the generation settings changed") == 6
    back = prejudge(demo, *k, "--batch-in", results)
    assert back.returncode == 0 and "6 stored" in back.stdout, back.stderr
    assert rows(demo, "SELECT sample, COUNT(*) FROM prejudgments GROUP BY sample ORDER BY sample") == [(0, 3), (1, 3)]
    assert rows(demo, "SELECT COUNT(*) FROM passage_labels WHERE source = 'llm:stub-1'") == [(3,)]
    answered[1]["response"]["body"]["model"] = "another-model"
    results.write_text("".join(json.dumps(r) + "\n" for r in answered))
    refused = prejudge(demo, *k, "--batch-in", results)
    assert refused.returncode == 2
    assert f"{results}:2: answered by the model 'another-model', not 'stub-1'" in refused.stderr
