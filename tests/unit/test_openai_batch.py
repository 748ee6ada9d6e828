"""The OpenAI batch layout: custom_id round trip, and how each shape of result line reads."""

from __future__ import annotations

import pytest

from assess.errors import FormatError
from assess.formats.openai_batch import CustomId, digest, parse_custom_id, request_line, result_of


def test_custom_id_round_trip_keeps_spaces_in_the_item():
    cid = CustomId(12, 3, digest(12, {"model": "m"}, "abc", 3), "101_1", "n7 my run")
    assert parse_custom_id(str(cid)) == cid
    assert str(cid).startswith("job12/3/") and str(cid).endswith("/101_1 n7 my run")
    assert len(cid.digest) == 12 and cid.digest != digest(12, {"model": "m"}, "abd", 3)
    assert parse_custom_id("request-1") is None and parse_custom_id("job1/0/XYZ/t i") is None
    assert request_line(cid, {"a": 1}) == (
        f'{{"custom_id":"{cid}","method":"POST","url":"/v1/chat/completions","body":{{"a":1}}}}'
    )


def completion(content, usage=True):
    body = {"model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
    if usage:
        body["usage"] = {"prompt_tokens": 7, "completion_tokens": 2}
    return body


def test_result_lines_read_as_live_replies():
    ok = result_of("f", 1, {"id": "r1", "custom_id": "c", "response": {"status_code": 200, "body": completion("3")}})
    assert (ok.ok, ok.text, ok.error, ok.model, ok.prompt_tokens, ok.completion_tokens, ok.result_id) == (
        True, "3", None, "m", 7, 2, "r1"
    )  # fmt: skip
    empty = result_of("f", 2, {"custom_id": "c", "response": {"status_code": 200, "body": completion(None, False)}})
    assert (empty.ok, empty.text, empty.prompt_tokens, empty.result_id) == (True, "", None, "line 2")
    failed = result_of(
        "f",
        3,
        {
            "custom_id": "c",
            "response": {"status_code": 429, "request_id": "q9", "body": {"error": {"message": "slow down"}}},
        },
    )
    assert (failed.ok, failed.text, failed.error, failed.result_id) == (False, None, "HTTP 429: slow down", "q9")
    dropped = result_of(
        "f", 4, {"id": "r4", "custom_id": "c", "response": None, "error": {"code": "x", "message": "y"}}
    )
    assert (dropped.ok, dropped.error) == (False, "x: y")


@pytest.mark.parametrize(
    "line, expected",
    [
        ([], "f:1: expected the line as an object {id, custom_id, response, error}, found list []"),
        ({"response": None}, "f:1: expected a field 'custom_id', found fields ['response']"),
        ({"custom_id": 5, "error": "x"}, "f:1: expected 'custom_id' as a string, found int 5"),
        ({"custom_id": "c", "response": {"body": {}}}, "f:1: expected a field 'response.status_code'"),
        (
            {"custom_id": "c", "response": {"status_code": 200, "body": {"choices": [{"message": {"content": 3}}]}}},
            "f:1: expected 'response.body.choices[0].message.content' as a string, found int 3",
        ),
    ],
)
def test_malformed_result_lines_name_the_line_and_field(line, expected):
    with pytest.raises(FormatError) as caught:
        result_of("f", 1, line)
    assert str(caught.value).startswith(expected)
