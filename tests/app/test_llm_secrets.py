"""Secrets stay home (issue 33, R1/R9): the /llm page offers only the endpoints the deployment configures and sends
the server's key only to its own; nothing goes to a link-local or metadata address unless configured; keys that
an endpoint echoes and passwords in endpoint URLs are redacted before they are stored, printed or shown.

Every request is real HTTP to the local stub (tests/stub_llm.py), whose ``requests`` and ``headers`` prove what
was, and was not, received."""

from __future__ import annotations

import json

import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1.element_tree import Selectbox

from assess.llm import guard
from tests.helpers import open_app, rows, run_cli
from tests.stub_llm import Reply, StubLLM

SERVER_KEY = "sk-server-secret-0123456789abcdef"
OTHER_KEY = "other-endpoint-secret-42"
PASSWORD = "hunter2-pass"


@pytest.fixture
def llm_env(tmp_path, demo_copy, monkeypatch):
    db = demo_copy(tmp_path / "app.db")
    monkeypatch.setenv("ASSESS_DB", str(db))
    monkeypatch.delenv("ASSESS_ORGANIZER_PASSWORD", raising=False)
    for var in ("ASSESS_LLM_BASE_URL", "ASSESS_LLM_MODEL", "ASSESS_LLM_API_KEY", "ASSESS_LLM_ENDPOINTS"):
        monkeypatch.delenv(var, raising=False)
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OTHER_KEY"):
        monkeypatch.delenv(var, raising=False)
    return db


def type_endpoint(monkeypatch, at, text: str) -> None:
    """Type a new option into the endpoint box, as the browser sends it (the text itself, not an index)."""

    def typed(self):
        ws = WidgetState()
        ws.id = self.id
        ws.string_value = text
        return ws

    monkeypatch.setattr(Selectbox, "_widget_state", property(typed))


def start(at, *, limit=2, model="stub-1"):
    at.text_input(key="pj_model").input(model)
    at.number_input(key="pj_limit").set_value(limit)
    next(b for b in at.button if b.label == "Start / resume").click().run()
    assert not at.exception, at.exception


def test_a_url_typed_on_the_page_is_refused_and_nothing_is_sent(llm_env, monkeypatch):
    with StubLLM() as home, StubLLM() as elsewhere:
        monkeypatch.setenv("ASSESS_LLM_BASE_URL", home.base_url)
        monkeypatch.setenv("ASSESS_LLM_API_KEY", SERVER_KEY)
        at = open_app("pages/llm.py", timeout=120)
        assert at.selectbox(key="pj_endpoint").options == [f"default: {home.base_url}"]
        type_endpoint(monkeypatch, at, elsewhere.base_url)
        start(at)
        [error] = at.error
        assert "is not an endpoint this deployment allows (allowed: default)" in error.value
        assert elsewhere.requests == [] and home.requests == []
    assert rows(llm_env, "SELECT COUNT(*) FROM prejudge_jobs") == [(0,)]


def test_the_server_key_goes_only_to_its_own_endpoint(llm_env, monkeypatch):
    with StubLLM() as home, StubLLM() as other, StubLLM() as keyed:
        monkeypatch.setenv("ASSESS_LLM_BASE_URL", home.base_url)
        monkeypatch.setenv("ASSESS_LLM_API_KEY", SERVER_KEY)
        monkeypatch.setenv("OTHER_KEY", OTHER_KEY)
        monkeypatch.setenv("ASSESS_LLM_ENDPOINTS", f"gpu1={other.base_url}; hosted={keyed.base_url},key=OTHER_KEY")
        at = open_app("pages/llm.py", timeout=120)
        box = at.selectbox(key="pj_endpoint")
        assert box.options == [f"default: {home.base_url}", f"gpu1: {other.base_url}", f"hosted: {keyed.base_url}"]
        box.set_value("gpu1")
        start(at)
        assert not at.error and any("Job 1: 2 stored" in s.value for s in at.success)
        at.selectbox(key="pj_endpoint").set_value("hosted")
        start(at, model="stub-2")  # another model: nothing is copied from the first job's answers
        at.selectbox(key="pj_endpoint").set_value("default")
        start(at, model="stub-3")
        assert len(other.requests) == len(keyed.requests) == len(home.requests) == 2
        sent = {name: {h.get("authorization") for h in s.headers} for name, s in (("o", other), ("k", keyed))}
        assert sent == {"o": {"Bearer not-needed"}, "k": {f"Bearer {OTHER_KEY}"}}
        assert {h.get("authorization") for h in home.headers} == {f"Bearer {SERVER_KEY}"}
    assert "sk-server" not in json.dumps([list(r) for r in rows(llm_env, "SELECT * FROM prejudge_jobs")])


def test_link_local_and_metadata_hosts_are_refused_unless_configured(llm_env, monkeypatch):
    for url in (
        "http://169.254.169.254/v1",
        "http://[fe80::1]:8000/v1",
        "http://metadata.google.internal/v1",
        "http://[::ffff:169.254.169.254]/v1",
    ):
        ran = run_cli("prejudge", "--task", "passage", "--model", "m", "--base-url", url, "--limit", "1", db=llm_env)
        assert ran.returncode == 2, (url, ran.stderr)
        assert "link-local or cloud metadata" in ran.stderr or "metadata name" in ran.stderr, ran.stderr
        assert "Traceback" not in ran.stderr and len(ran.stderr.strip().splitlines()) == 1
        ran = run_cli(
            "prejudge", "--task", "passage", "--model", "m", "--endpoint", url, "--limit", "1", db=llm_env
        )  # fmt: skip
        assert ran.returncode == 2 and "Traceback" not in ran.stderr, ran.stderr
    assert rows(llm_env, "SELECT COUNT(*) FROM prejudge_jobs") == [(0,)]
    # a name that resolves to a link-local address is refused by what it resolves to
    with pytest.raises(guard.ForbiddenEndpoint, match="resolves to"):
        guard.check_destination(
            "http://sneaky.example/v1", allowed=(), resolve=lambda host, port: [(2, 1, 6, "", ("169.254.1.2", 0))]
        )
    # configured by the deployment: allowed
    guard.check_destination("http://169.254.169.254/v1", allowed=["http://169.254.169.254/v1/"])
    monkeypatch.setenv("ASSESS_LLM_ENDPOINTS", "imds=http://169.254.169.254/v1")
    guard.check_destination("http://169.254.169.254/v1")
    guard.check_destination("http://127.0.0.1:8000/v1", allowed=())  # loopback is not link-local


def test_keys_and_passwords_are_redacted_in_job_records_and_jobs_output(llm_env, monkeypatch):
    monkeypatch.setenv("ASSESS_LLM_API_KEY", SERVER_KEY)
    echo = f"Incorrect API key provided: {SERVER_KEY}. Authorization: Bearer {SERVER_KEY}"
    with StubLLM() as stub:
        stub.reply = lambda request: Reply(401, echo)
        url = stub.base_url.replace("http://", f"http://ops:{PASSWORD}@")
        ran = run_cli("prejudge", "--task", "passage", "--model", "m", "--base-url", url, "--limit", "2", db=llm_env)
        assert ran.returncode != 0 and stub.requests
        assert SERVER_KEY not in ran.stderr + ran.stdout and PASSWORD not in ran.stderr + ran.stdout
        with StubLLM() as second:
            second.reply = lambda request: Reply(429, echo)
            pooled = second.base_url.replace("http://", f"http://ops:{PASSWORD}@")
            ran = run_cli(
                "prejudge", "--task", "passage", "--model", "m", "--source", "llm:pool", "--limit", "2",
                "--retries", "0", "--endpoint", f"{pooled},pause=0", db=llm_env,
            )  # fmt: skip
            assert SERVER_KEY not in ran.stderr + ran.stdout and PASSWORD not in ran.stderr + ran.stdout
    stored = json.dumps(
        [list(r) for table in ("prejudge_jobs", "prejudge_job_endpoints", "prejudgments")
         for r in rows(llm_env, f"SELECT * FROM {table}")]
    )  # fmt: skip
    assert "***" in stored and "Incorrect API key provided" in stored
    assert SERVER_KEY not in stored and PASSWORD not in stored
    for args in (("jobs",), ("jobs", "--json")):
        listed = run_cli(*args, db=llm_env)
        assert listed.returncode == 0, listed.stderr
        assert "ops:***@" not in listed.stdout and "***@127.0.0.1" in listed.stdout
        assert SERVER_KEY not in listed.stdout and PASSWORD not in listed.stdout
    at = open_app("pages/llm.py", timeout=120)
    shown = json.dumps([d.value.astype(str).values.tolist() for d in at.dataframe])
    assert "***@127.0.0.1" in shown and SERVER_KEY not in shown and PASSWORD not in shown


def test_redact_takes_out_keys_and_passwords():
    text = (
        "https://u:pw@h.example/v1 Bearer abc.def sk-proj-1234567890 api_key=xyz123 "
        '{"password": "p4ss"} https://h/v1?key=AIza123&x=1 plain key=ENV_VAR stays'
    )
    assert guard.redact(text, secrets=["zzz-known-secret"]) == (
        "https://***@h.example/v1 Bearer *** sk-*** api_key=*** "
        '{"password": "***"} https://h/v1?key=***&x=1 plain key=ENV_VAR stays'
    )
    assert guard.redact("said zzz-known-secret twice zzz-known-secret", secrets=["zzz-known-secret"]) == (
        "said *** twice ***"
    )
    assert guard.redact(None) is None
