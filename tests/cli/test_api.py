"""The HTTP API as a client meets it: `python -m assess api` started as its own process, spoken to with httpx,
on both engines. Tokens from `users token`; the stored rows read back from the store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from tests.helpers import rows, run_cli, snapshot
from tests.processes import api_server

pytestmark = pytest.mark.both_engines


def token_of(name: str, target: str, *more: str) -> str:
    done = run_cli("users", "token", name, *more, db=target, check=True)
    return done.stdout.strip().splitlines()[-1].split()[-1]


@pytest.fixture(scope="module")
def served(module_demo_target):
    target = module_demo_target
    for name, role in (("ann", "assessor"), ("org", "organizer"), ("dee", "assessor"), ("rev", "assessor")):
        run_cli("users", "add", name, "--role", role, "--no-password", db=target, check=True)
    run_cli("assign", "--assessor", "ann", "--conversation", "102", "--turn", "101_3", db=target, check=True)
    tokens = {name: token_of(name, target) for name in ("ann", "org", "dee", "rev")}
    run_cli("users", "token", "rev", "--revoke", db=target, check=True)
    from assess.services.tokens import new_token
    from store import open_db

    with open_db(target) as db:  # made two days ago, valid one day
        tokens["expired"] = new_token(db, "ann", days=1, by="test", at=datetime.now(UTC) - timedelta(days=2))
    with api_server(target) as base:
        yield target, base, tokens


def client(base: str, token: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=base, headers=headers, timeout=30)


def stored(target: str, source: str, turn: str, passage: str) -> list[tuple]:
    return rows(
        target,
        "SELECT grade, mode, via FROM passage_labels WHERE source = :s AND turn_id = :t AND passage_id = :p",
        {"s": source, "t": turn, "p": passage},
    )


def test_openapi_describes_the_routes(served):
    _, base, _ = served
    spec = httpx.get(base + "/openapi.json").json()
    assert {"/v1/queue", "/v1/labels", "/v1/labels/latest", "/v1/me"} <= set(spec["paths"])
    assert spec["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"


def test_queue_is_the_judge_pages_queue(served):
    target, base, tokens = served
    from assess import settings
    from store import open_db, queue

    with open_db(target) as db:  # what /judge reads (ui.queue_order, KeyQueue): order less what is labelled
        state = queue.load_queue(db, "ann", open_mode=settings.open_mode())
        page = [item for item in state.order.items if item not in state.done]
    with client(base, tokens["ann"]) as api:
        got = api.get("/v1/queue", params={"task": "passage", "limit": 10_000}).json()
    assert [(i["turn"], i["passage"]) for i in got["items"]] == page
    # the assigned turn 101_3 and conversation 102 only, in conversation and turn order
    assert [t for t, _ in page][:1] == ["101_3"] and {t for t, _ in page} == {
        "101_3",
        *(f"102_{n}" for n in range(1, 7)),
    }
    assert got["total"] == len(page) + got["judged"] == 19 + 107


def test_label_is_stored_under_the_tokens_person_and_leaves_the_queue(served):
    target, base, tokens = served
    with client(base, tokens["ann"]) as api:
        turn, passage = api.get("/v1/queue", params={"limit": 1}).json()["items"][0].values()
        answer = api.post("/v1/labels", json={"task": "passage", "turn": turn, "passage": passage, "grade": 3})
        assert answer.status_code == 201, answer.text
        assert answer.json()["source"] == "ann"
        assert stored(target, "ann", turn, passage) == [(3, "blind", "api")]
        assert (turn, passage) not in {(i["turn"], i["passage"]) for i in api.get("/v1/queue").json()["items"]}
        # cannot judge (null) replaces it: no "seen" sent, no stale-write check
        assert (
            api.post(
                "/v1/labels", json={"task": "passage", "turn": turn, "passage": passage, "grade": None}
            ).status_code
            == 201
        )
        assert stored(target, "ann", turn, passage) == [(None, "blind", "api")]
        # undo: back to 3, then the label gone
        assert api.delete("/v1/labels/latest").json() == {"turn": turn, "passage": passage}
        assert stored(target, "ann", turn, passage)[0][0] == 3
        api.delete("/v1/labels/latest")
        assert stored(target, "ann", turn, passage) == []


def test_stale_write_is_refused_with_what_is_stored(served):
    target, base, tokens = served
    turn, passage = (
        "102_2",
        rows(target, "SELECT passage_id FROM pool WHERE turn_id = :t ORDER BY passage_id", {"t": "102_2"})[0][0],
    )
    label = {"task": "passage", "turn": turn, "passage": passage}
    with client(base, tokens["ann"]) as api:
        assert api.post("/v1/labels", json={**label, "grade": 2, "seen": None}).status_code == 201
        before = snapshot(target)
        # another device's view: it saw no label of this item, so its write would silently replace the 2
        stale = api.post("/v1/labels", json={**label, "grade": 4, "seen": None})
        assert stale.status_code == 409
        assert stale.json()["stored"]["grade"] == 2 and stale.json()["stored"]["source"] == "ann"
        assert "labelled 2" in stale.json()["detail"]
        assert snapshot(target) == before
        # a client that saw the 2 replaces it
        assert api.post("/v1/labels", json={**label, "grade": 4, "seen": {"grade": 2}}).status_code == 201
    assert stored(target, "ann", turn, passage) == [(4, "blind", "api")]


def test_refused_requests_write_nothing(served):
    target, base, tokens = served
    turn = "102_3"
    passage = rows(target, "SELECT passage_id FROM pool WHERE turn_id = :t ORDER BY passage_id", {"t": turn})[0][0]
    good = {"task": "passage", "turn": turn, "passage": passage, "grade": 1}
    before = snapshot(target)
    with client(base, tokens["ann"]) as api:
        for bad, field in (
            ({**good, "grade": 7}, "grade"),
            ({**good, "grade": "2"}, "grade"),  # no string for a number
            ({**good, "task": "battle"}, "task"),  # a task the API does not serve
            ({**good, "colour": "red"}, "colour"),
            ({k: v for k, v in good.items() if k != "grade"}, "grade"),
        ):
            answer = api.post("/v1/labels", json=bad)
            assert answer.status_code == 422, (bad, answer.text)
            assert ["body", field] in [e["loc"] for e in answer.json()["detail"]], answer.text
        # an item outside ann's queue (turn 101_1 is not assigned to her): the page would never show it
        outside = rows(target, "SELECT passage_id FROM pool WHERE turn_id = '101_1' ORDER BY passage_id")[0][0]
        answer = api.post("/v1/labels", json={**good, "turn": "101_1", "passage": outside})
        assert answer.status_code == 403 and "not in ann's queue" in answer.json()["detail"]
    for token in (None, "not-a-token", tokens["rev"], tokens["expired"]):
        with client(base, token) as api:
            assert api.post("/v1/labels", json=good).status_code == 401, token
            answer = api.get("/v1/queue")
            assert answer.status_code == 401 and answer.headers["www-authenticate"] == "Bearer"
    assert snapshot(target) == before


def test_current_role_and_state_are_read_at_each_request(served):
    target, base, tokens = served
    passage = rows(target, "SELECT passage_id FROM pool WHERE turn_id = '101_1' ORDER BY passage_id")[0][0]
    label = {"task": "passage", "turn": "101_1", "passage": passage, "grade": 0}
    with client(base, tokens["dee"]) as api:
        assert api.get("/v1/me").json() == {"name": "dee", "role": "assessor"}
        run_cli("users", "role", "dee", "--role", "adjudicator", db=target, check=True)
        assert api.get("/v1/me").json() == {"name": "dee", "role": "adjudicator"}
        run_cli("users", "disable", "dee", db=target, check=True)
        before = snapshot(target)
        answer = api.post("/v1/labels", json=label)
        assert answer.status_code == 403 and "disabled" in answer.json()["detail"]
        assert api.get("/v1/queue").status_code == 403
        assert snapshot(target) == before
        run_cli("users", "enable", "dee", db=target, check=True)
        assert api.post("/v1/labels", json=label).status_code == 201
    assert stored(target, "dee", "101_1", passage) == [(0, "blind", "api")]


def test_token_command(served, tmp_path):
    target, _, _ = served
    done = run_cli("users", "token", "nobody", db=target)
    assert done.returncode == 2 and "no account named 'nobody'" in done.stderr and "Traceback" not in done.stderr
    done = run_cli("users", "token", "ann", "--days", "0", db=target)
    assert done.returncode == 2 and "--days: expected a number of days from 1" in done.stderr
    secret = token_of("org", target, "--days", "7")
    digests = [r[0] for r in rows(target, "SELECT id FROM api_tokens WHERE name = 'org'", {})]
    assert secret not in digests and len(digests) == 2  # only hashes are stored


def test_api_command_refuses_bad_options_before_serving(tmp_path):
    for args, said in (
        (("api", "--port", "70000"), "--port: expected a TCP port from 1 to 65535, found 70000"),
        (("api", "--workers", "0"), "--workers: expected a number of processes from 1 to 64, found 0"),
        (("api",), "no such database"),
    ):
        done = run_cli(*args, db=tmp_path / "absent.db")
        assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / "absent.db").exists()
