"""The HTTP API's routes beyond the passage queue (issue 38), over HTTP against `python -m assess api` on both
engines: topics and turns, the PTKB queue and its labels, label listings, assignments, exports, jobs and the
audit's figures. Each answer is checked against the store's rows or the CLI's own output of the same figures."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.helpers import rows, run_cli, snapshot
from tests.processes import api_server
from tests.unit.test_answer_layouts import RAG26

pytestmark = pytest.mark.both_engines


def token_of(name: str, target: str) -> str:
    return run_cli("users", "token", name, db=target, check=True).stdout.strip().splitlines()[-1].split()[-1]


@pytest.fixture(scope="module")
def served(module_demo_target, tmp_path_factory):
    target = module_demo_target
    files = tmp_path_factory.mktemp("rag")  # a RAG topic with a cited answer: the citation-support queue
    (files / "topics.tsv").write_text("rag2026-37\tIs congestion pricing fair?\n", encoding="utf-8")
    (files / "answers.jsonl").write_text(json.dumps(RAG26) + "\n", encoding="utf-8")
    run_cli("import", "rag-topics", files / "topics.tsv", "--keep-demo", db=target, check=True)
    run_cli("import", "rag-answers", files / "answers.jsonl", db=target, check=True)
    for name, role in (("ann", "assessor"), ("org", "organizer")):
        run_cli("users", "add", name, "--role", role, "--no-password", db=target, check=True)
    run_cli("assign", "--assessor", "ann", "--conversation", "102", db=target, check=True)
    from store import jobs, open_db

    with open_db(target) as db:  # a finished job, as `prejudge` leaves one
        job = jobs.start_job(
            db, source="llm:demo-gpt", task="passage", model="m", prompt_version="v1", base_url=None, concurrency=1,
            planned=3, skipped=0,
        )  # fmt: skip
        jobs.finish_job(db, job, "done", "3 labels")
    tokens = {name: token_of(name, target) for name in ("ann", "org")}
    with api_server(target) as base:
        yield target, base, tokens, job


def client(base: str, token: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=base, headers=headers, timeout=60)


def locs(answer) -> list[list]:
    return [e["loc"] for e in answer.json()["detail"]]


def test_topics_and_turns(served):
    target, base, tokens, _ = served
    with client(base, tokens["ann"]) as api:
        topics = api.get("/v1/topics").json()
        assert sorted(t["id"] for t in topics) == sorted(r[0] for r in rows(target, "SELECT id FROM conversations", {}))
        turns = api.get("/v1/topics/102").json()["turns"]
        assert [t["id"] for t in turns] == [
            r[0] for r in rows(target, "SELECT id FROM turns WHERE conversation_id = '102' ORDER BY position", {})
        ]
        one = api.get("/v1/turns/102_2").json()
        stored = rows(target, "SELECT utterance FROM turns WHERE id = '102_2'", {})[0][0]
        assert one["utterance"] == stored and one["topic"] == "102"
        assert [h["turn_id"] for h in one["history"]] == ["102_1"]
        assert api.get("/v1/turns/nope").status_code == 404
        assert api.get("/v1/topics/nope").status_code == 404
    assert httpx.get(base + "/v1/topics").status_code == 401


def ptkb(target: str, source: str) -> list[tuple]:
    return rows(
        target,
        "SELECT turn_id, statement_id, relevant, via FROM ptkb_labels WHERE source = :s ORDER BY turn_id, statement_id",
        {"s": source},
    )


def test_ptkb_queue_labels_stale_write_and_undo(served):
    target, base, tokens, _ = served
    with client(base, tokens["ann"]) as api:
        queue = api.get("/v1/queue", params={"task": "ptkb", "limit": 10_000}).json()
        # conversation 102's turns, each with its user's statements: what /ptkb shows her
        expected = rows(
            target,
            "SELECT t.id, s.statement_id FROM turns t JOIN ptkb_statements s ON s.conversation_id = t.conversation_id "
            "WHERE t.conversation_id = '102'",
            {},
        )
        assert sorted((i["turn"], i["item"]) for i in queue["items"]) == sorted(expected)
        assert queue["total"] == len(expected) and queue["judged"] == 0
        turn, item = queue["items"][0]["turn"], queue["items"][0]["item"]
        label = {"task": "ptkb", "turn": turn, "item": item}
        before = snapshot(target)
        bad = api.post("/v1/labels", json={**label, "value": 7})
        assert bad.status_code == 422 and ["body", "value"] in locs(bad), bad.text
        assert api.post("/v1/labels", json={**label, "value": "1"}).status_code == 422
        assert api.post("/v1/labels", json={**label, "grade": 1}).status_code == 422
        outside = {"task": "ptkb", "turn": "101_1", "item": item, "value": 1}  # not her turn
        assert api.post("/v1/labels", json=outside).status_code == 403
        assert snapshot(target) == before

        made = api.post("/v1/labels", json={**label, "value": 1, "seen": None})
        assert made.status_code == 201 and made.json() == {**label, "value": 1, "source": "ann"}
        assert ptkb(target, "ann") == [(turn, item, 1, "api")]
        stale = api.post("/v1/labels", json={**label, "value": 0, "seen": None})  # another client saw no label
        assert stale.status_code == 409 and stale.json()["stored"]["value"] == 1
        assert api.post("/v1/labels", json={**label, "value": 0, "seen": {"value": 1}}).status_code == 201
        assert ptkb(target, "ann") == [(turn, item, 0, "api")]
        assert api.get("/v1/queue", params={"task": "ptkb"}).json()["judged"] == 1
        assert api.delete("/v1/labels/latest", params={"task": "ptkb"}).json() == {"turn": turn, "item": item}
        assert ptkb(target, "ann") == [(turn, item, 1, "undo")]
        api.delete("/v1/labels/latest", params={"task": "ptkb"})
        assert ptkb(target, "ann") == []


def test_label_listing_is_paged_and_scoped(served):
    target, base, tokens, _ = served
    stored = rows(
        target,
        "SELECT turn_id, passage_id, grade FROM passage_labels WHERE source = 'demo-ann' ORDER BY turn_id, passage_id",
        {},
    )
    with client(base, tokens["org"]) as api:
        got, offset = [], 0
        while offset is not None:
            page = api.get("/v1/labels", params={"source": "demo-ann", "limit": 50, "offset": offset}).json()
            got += [(x["turn"], x["item"], x["value"]) for x in page["labels"]]
            offset = page["next_offset"]
        assert got == stored and len(stored) > 100
        one_turn = api.get("/v1/labels", params={"source": "demo-ann", "turn": "101_1"}).json()["labels"]
        assert [(x["turn"], x["item"], x["value"]) for x in one_turn] == [r for r in stored if r[0] == "101_1"]
        assert ["query", "limit"] in locs(api.get("/v1/labels", params={"limit": 0}))
    with client(base, tokens["ann"]) as api:
        assert api.get("/v1/labels", params={"source": "demo-ann"}).status_code == 403
        assert all(x["source"] == "ann" for x in api.get("/v1/labels").json()["labels"])


def assigned(target: str, assessor: str) -> list[str]:
    return [
        r[0]
        for r in rows(target, "SELECT turn_id FROM assignments WHERE assessor = :a ORDER BY turn_id", {"a": assessor})
    ]


def test_assignments_are_an_organizers_to_change(served):
    target, base, tokens, _ = served
    with client(base, tokens["ann"]) as api:
        mine = api.get("/v1/assignments").json()
        assert sorted(a["turn_id"] for a in mine) == assigned(target, "ann")
        assert api.get("/v1/assignments", params={"assessor": "org"}).status_code == 403
        before = snapshot(target)
        refused = api.post("/v1/assignments", json={"assessor": "ann", "turns": ["101_1"]})
        assert refused.status_code == 403 and "organizers" in refused.json()["detail"]
        assert api.delete("/v1/assignments/ann/102_1").status_code == 403
        assert snapshot(target) == before
    with client(base, tokens["org"]) as api:
        before = snapshot(target)
        unknown = api.post("/v1/assignments", json={"assessor": "dee", "turns": ["101_1", "999_9"]})
        assert unknown.status_code == 422 and locs(unknown) == [["body", "turns", 1]]
        assert api.post("/v1/assignments", json={"assessor": "dee", "turns": []}).status_code == 422
        reserved = api.post("/v1/assignments", json={"assessor": "llm:gpt", "turns": ["101_1"]})
        assert reserved.status_code == 422 and locs(reserved) == [["body", "assessor"]], reserved.text
        assert snapshot(target) == before
        made = api.post("/v1/assignments", json={"assessor": "dee", "turns": ["101_1", "101_2"]})
        assert made.status_code == 201 and made.json() == {"assessor": "dee", "added": 2}
        assert assigned(target, "dee") == ["101_1", "101_2"]
        assert {a["turn_id"] for a in api.get("/v1/assignments").json()} >= {"101_1", "102_1"}
        assert api.delete("/v1/assignments/dee/101_2").status_code == 200
        assert assigned(target, "dee") == ["101_1"]
        assert api.delete("/v1/assignments/dee/101_2").status_code == 404
    actions = rows(
        target, "SELECT source, via FROM label_history WHERE label_table = 'assignment' AND item = 'dee'", {}
    )
    assert sorted(actions) == [("org", "assign"), ("org", "unassign")]


def test_exports_match_the_command_line(served):
    target, base, tokens, _ = served
    with client(base, tokens["org"]) as api:
        qrels = api.get("/v1/exports/qrels", params={"source": "demo-ann"})
        assert qrels.status_code == 200
        assert qrels.text == run_cli("export", "qrels", "--source", "demo-ann", db=target, check=True).stdout
        nuggets = api.get("/v1/exports/nuggets", params={"source": "gold"})
        cli = run_cli("export", "nuggets", "--source", "gold", db=target, check=True).stdout
        assert nuggets.json() == json.loads(cli)
        battles = api.get("/v1/exports/battles")
        assert battles.status_code == 200 and battles.text.splitlines()[0].startswith("source,")
        unknown = api.get("/v1/exports/qrels", params={"source": "nobody"})
        assert unknown.status_code == 422 and locs(unknown) == [["query", "source"]]
        assert "no label source named 'nobody'" in unknown.json()["detail"][0]["msg"]
        assert ["query", "source"] in locs(api.get("/v1/exports/qrels"))
    with client(base, tokens["ann"]) as api:
        assert api.get("/v1/exports/qrels", params={"source": "demo-ann"}).status_code == 403


def test_jobs_and_the_audit_figures(served):
    target, base, tokens, job = served
    with client(base, tokens["org"]) as api:
        listed = api.get("/v1/jobs").json()
        assert [(j["id"], j["status"], j["message"]) for j in listed] == [(job, "done", "3 labels")]
        assert api.get(f"/v1/jobs/{job}").json()["planned"] == 3
        assert api.get("/v1/jobs/9999").status_code == 404
        got = api.get("/v1/audit/agreement", params={"a": "demo-ann", "b": "demo-ben"}).json()
        cli = json.loads(
            run_cli("agreement", "--a", "demo-ann", "--b", "demo-ben", "--json", db=target, check=True).stdout
        )
        assert got["kappa"] == pytest.approx(cli["kappa"]) and got["n"] == cli["n"] > 0
        assert got["confusion"] == cli["confusion"]
        pair = {"reference": "demo-ann", "judge": "llm:demo-gpt"}
        verdict = api.get("/v1/audit/verdict", params=pair).json()
        args = ("audit", "verdict", "--reference", "demo-ann", "--judge", "llm:demo-gpt", "--json")
        assert verdict == json.loads(run_cli(*args, db=target, check=True).stdout)
        bad = api.get("/v1/audit/agreement", params={"a": "demo-ann", "b": "nobody"})
        assert bad.status_code == 422
    with client(base, tokens["ann"]) as api:
        assert api.get("/v1/jobs").status_code == 403
        assert api.get("/v1/audit/verdict", params=pair).status_code == 403


def cited(target: str) -> list[tuple]:
    return rows(
        target, "SELECT turn_id, run, sentence, passage_id, support, via FROM citation_labels WHERE source = 'ann'", {}
    )


def test_citation_queue_and_labels(served):
    target, base, tokens, _ = served
    with client(base, tokens["ann"]) as api:
        queue = api.get("/v1/queue", params={"task": "citation"}).json()
        stored = rows(
            target,
            "SELECT turn_id, run, sentence, passage_id FROM response_citations ORDER BY sentence, passage_id",
            {},
        )
        assert queue["total"] == len(stored) == 4 and queue["judged"] == 0
        first = queue["items"][0]
        turn, run, sentence, passage = stored[0]
        assert first == {"turn": turn, "item": f"{run} {sentence} {passage}"}
        label = {"task": "citation", **first}
        before = snapshot(target)
        bad = api.post("/v1/labels", json={**label, "value": 5})
        assert bad.status_code == 422 and ["body", "value"] in locs(bad)
        assert snapshot(target) == before
        assert api.post("/v1/labels", json={**label, "value": None, "seen": None}).status_code == 201  # cannot judge
        assert cited(target) == [(turn, run, sentence, passage, None, "api")]
        stale = api.post("/v1/labels", json={**label, "value": 2, "seen": None})
        assert stale.status_code == 409 and stale.json()["stored"]["value"] is None
        assert api.post("/v1/labels", json={**label, "value": 2, "seen": {"value": None}}).status_code == 201
        assert cited(target) == [(turn, run, sentence, passage, 2, "api")]
        listed = api.get("/v1/labels", params={"task": "citation"}).json()["labels"]
        assert [(x["turn"], x["item"], x["value"]) for x in listed] == [(turn, first["item"], 2)]
        assert api.delete("/v1/labels/latest", params={"task": "citation"}).json() == first
        api.delete("/v1/labels/latest", params={"task": "citation"})
        assert cited(target) == []
