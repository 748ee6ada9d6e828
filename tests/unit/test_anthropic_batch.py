"""Anthropic's Message Batches layout read and written beside OpenAI's: a request's params from a chat body, each
kind of result line, a malformed line named by file, line and JSON path; and the key kept off another host."""

from __future__ import annotations

import json

import pytest

from assess.errors import FormatError
from assess.formats import anthropic_batch
from assess.llm.batch_api import AnthropicBatches, BatchAPIError


def test_a_chat_body_becomes_params_with_the_system_prompt_apart():
    body = {"model": "m", "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]}
    entry = json.loads(anthropic_batch.request_entry("j1-0-abcdefabcdef", body | {"temperature": 0}))
    assert entry == {
        "custom_id": "j1-0-abcdefabcdef",
        "params": {"model": "m", "max_tokens": 1024, "messages": [{"role": "user", "content": "U"}], "system": "S",
                   "temperature": 0},
    }  # fmt: skip
    with pytest.raises(ValueError, match="1-64 of"):
        anthropic_batch.request_entry("job1/0/x 101_1 psg", body)


def test_every_kind_of_result_line_is_read(tmp_path):
    lines = [
        {"custom_id": "a", "result": {"type": "succeeded", "message": {"model": "claude-x", "content": [
            {"type": "text", "text": "Score: "}, {"type": "text", "text": "3"}], "usage": {"input_tokens": 9, "output_tokens": 2}}}},
        {"custom_id": "b", "result": {"type": "errored", "error": {"type": "error", "error": {
            "type": "invalid_request_error", "message": "max_tokens: too large"}}}},
        {"custom_id": "c", "result": {"type": "expired"}},
        {"custom_id": "d", "result": {"type": "succeeded", "message": {"content": [{"type": "text", "text": 7}]}}},
    ]  # fmt: skip
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    a, b, c, d = anthropic_batch.iter_results(path)
    assert (a.ok, a.text, a.model, a.prompt_tokens, a.completion_tokens) == (True, "Score: 3", "claude-x", 9, 2)
    assert (b.ok, b.error) == (False, "invalid_request_error: max_tokens: too large")
    assert (c.ok, c.error) == (False, "request expired")
    assert isinstance(d, FormatError) and f"{path}:4" in str(d) and "'result.message.content[0].text'" in str(d)


def test_a_results_url_on_another_host_gets_no_key(tmp_path):
    api = AnthropicBatches("http://127.0.0.1:9/v1", "sk-ant-secret-000000")
    with pytest.raises(BatchAPIError, match="the key is sent to the configured base URL only"):
        api.download("http://elsewhere.example/v1/messages/batches/x/results", tmp_path / "r.jsonl")
    api.close()
