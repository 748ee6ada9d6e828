"""Endpoint options and the latency histogram of the endpoint pool (no network)."""

from __future__ import annotations

import pytest

from assess.llm.clients import ClientConfigError
from assess.llm.endpoints import EndpointPool, EndpointSpec, LatencyHistogram, parse_endpoint


def test_endpoint_options():
    assert parse_endpoint("http://a:8000/v1") == EndpointSpec("http://a:8000/v1")
    assert parse_endpoint("https://b/v1, key=B_KEY, concurrency=8, pause=2.5") == EndpointSpec(
        "https://b/v1", "B_KEY", 8, 2.5
    )
    for text, message in [
        ("a:8000", "starts with an http:// or https:// base URL"),
        ("http://a/v1,key=sk-live-123", "never the key itself"),
        ("http://a/v1,concurrency=0", "concurrency is from 1 to 1024, not '0'"),
        ("http://a/v1,pause=-1", "pause is from 0 to 3600 seconds"),
        (
            "http://a/v1,token=X",
            "options are key=ENV_VAR, concurrency=N and pause=SECONDS, each once; not 'token=***'",
        ),  # not echoed
        ("http://a/v1,concurrency=2,concurrency=3", "each once"),
    ]:
        with pytest.raises(ClientConfigError) as caught:
            parse_endpoint(text)
        assert message in str(caught.value)


def test_a_named_key_must_be_set_and_limits_add_up():
    specs = [EndpointSpec("http://a/v1", "A_KEY", 3), EndpointSpec("http://b/v1")]
    with pytest.raises(ClientConfigError, match="the environment variable A_KEY .its key. is not set"):
        EndpointPool("m", specs, default_concurrency=5, secret=lambda name: None)
    pool = EndpointPool("m", specs, default_concurrency=5, secret={"A_KEY": "k"}.get)
    assert pool.concurrency == 8 and pool.base_url == "http://a/v1 http://b/v1"
    assert [f["concurrency"] for f in pool.figures()] == [3, 5]


def test_latency_quantiles():
    h = LatencyHistogram()
    assert h.quantile(0.5) is None
    for ms in range(1, 101):  # 1..100 ms: exact below a second
        h.add(ms)
    assert (h.quantile(0.5), h.quantile(0.95), h.quantile(1.0)) == (50, 95, 100)
    for _ in range(100):
        h.add(2000)  # above a second: within 1 %
    assert h.quantile(0.5) == 100 and abs(h.quantile(0.95) - 2000) <= 20
    assert len(h.counts) == 101
