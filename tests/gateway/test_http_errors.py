"""Failure classification, the same for every network provider: what may be retried, what not.

The gateways never retry; the agent loop retries transient errors. These tests pin the class of
each failure, that the provider's own message reaches the user, and that no key ever leaks.
"""

from __future__ import annotations

import asyncio
import socket

import pytest

from engine.gateway.base import TextDelta
from engine.gateway.http import SseDecoder, SseEvent, error_message_of
from tests.gateway.fake_http import Canned, FakeServer, json_body, sse
from tests.gateway.providers import KEY, KEY_ENV, REQUEST, Provider, failure


@pytest.mark.parametrize("status", [429, 500, 503, 529])
async def test_rate_limits_and_server_errors_are_transient(
    server: FakeServer, provider: Provider, status: int
) -> None:
    server.queue(json_body(status, provider.error(status, "slow down"), {"retry-after": "7"}))
    error, _ = await failure(provider.make(base_url=server.base_url, api_key_env=KEY_ENV))
    assert error.transient
    assert error.status == status
    assert "slow down" in str(error)
    assert f"HTTP {status}" in str(error)
    if status == 429:
        assert "retry after 7s" in str(error)


@pytest.mark.parametrize("status", [400, 404])
async def test_client_errors_are_permanent_with_the_provider_message(
    server: FakeServer, provider: Provider, status: int
) -> None:
    server.queue(json_body(status, provider.error(status, "model `nope` does not exist")))
    error, _ = await failure(provider.make(base_url=server.base_url, api_key_env=KEY_ENV))
    assert not error.transient
    assert error.status == status
    assert "model `nope` does not exist" in str(error)
    assert str(error).startswith(provider.name)


async def test_the_key_never_appears_in_an_error(server: FakeServer, provider: Provider) -> None:
    server.queue(json_body(401, provider.error(401, f"Incorrect API key provided: {KEY}")))
    error, _ = await failure(provider.make(base_url=server.base_url, api_key_env=KEY_ENV))
    assert not error.transient
    assert KEY not in str(error)
    assert "[redacted]" in str(error)
    assert KEY not in repr(provider.make(base_url=server.base_url, api_key_env=KEY_ENV).__dict__)


async def test_a_missing_key_variable_is_named(
    server: FakeServer, provider: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV)
    error, _ = await failure(provider.make(base_url=server.base_url, api_key_env=KEY_ENV))
    assert not error.transient
    assert KEY_ENV in str(error)
    assert server.seen == []  # nothing was sent


async def test_data_that_is_not_json_is_a_malformed_stream(
    server: FakeServer, provider: Provider
) -> None:
    server.queue(Canned(chunks=[*provider.partial, b"data: {not json\n\n"]))
    error, received = await failure(provider.make(base_url=server.base_url, api_key_env=KEY_ENV))
    assert not error.transient
    assert "malformed stream" in str(error)
    assert "not JSON" in str(error)
    assert received == [TextDelta("Hel")]


async def test_a_stream_cut_short_is_transient(server: FakeServer, provider: Provider) -> None:
    server.queue(Canned(chunks=provider.partial))
    error, received = await failure(provider.make(base_url=server.base_url, api_key_env=KEY_ENV))
    assert error.transient
    assert "ended before the response finished" in str(error)
    assert received == [TextDelta("Hel")]


async def test_an_error_inside_the_stream_is_classified(
    server: FakeServer, provider: Provider
) -> None:
    server.queue(
        Canned(
            chunks=[
                *provider.partial,
                *sse(provider.stream_error("upstream overloaded"), event_names=["error"]),
            ]
        )
    )
    error, received = await failure(provider.make(base_url=server.base_url, api_key_env=KEY_ENV))
    assert error.transient
    assert "error in stream" in str(error)
    assert received == [TextDelta("Hel")]


async def test_json_instead_of_an_event_stream_is_malformed(
    server: FakeServer, provider: Provider
) -> None:
    server.queue(json_body(200, {"choices": []}))
    error, _ = await failure(provider.make(base_url=server.base_url, api_key_env=KEY_ENV))
    assert not error.transient
    assert "expected text/event-stream" in str(error)


async def test_a_refused_connection_is_transient(provider: Provider) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago and has no listener
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    gateway = provider.make(base_url=f"http://127.0.0.1:{port}", api_key_env=KEY_ENV)
    error, _ = await failure(gateway)
    assert error.transient
    assert f"127.0.0.1:{port}" in str(error)


async def test_a_consumer_may_stop_early(server: FakeServer, provider: Provider) -> None:
    server.queue(Canned(chunks=provider.partial, hold=False))
    gateway = provider.make(base_url=server.base_url, api_key_env=KEY_ENV)
    stream = gateway.stream(REQUEST)
    try:
        assert await anext(aiter(stream)) == TextDelta("Hel")
        await asyncio.wait_for(stream.aclose(), 5)  # type: ignore[attr-defined]
    finally:
        await gateway.aclose()


def test_sse_framing_follows_the_spec() -> None:
    decoder = SseDecoder()
    lines = [": comment", "event: add", "data: one", "data:two", "id: 7", "", "", "data:  x"]
    events = [e for line in lines if (e := decoder.feed_line(line)) is not None]
    assert events == [SseEvent("add", "one\ntwo")]
    assert decoder.flush() == SseEvent("", " x")
    assert decoder.flush() is None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"error": "model not found"}', "model not found"),
        (
            b'{"error": {"message": "bad", "type": "invalid_request_error"}}',
            "bad (invalid_request_error)",
        ),
        (
            b'[{"error": {"code": 400, "message": "bad key", "status": "INVALID_ARGUMENT"}}]',
            "bad key (INVALID_ARGUMENT)",
        ),
        (b"<html>Bad Gateway</html>", "<html>Bad Gateway</html>"),
    ],
)
def test_error_messages_are_found_in_every_shape(body: bytes, message: str) -> None:
    assert error_message_of(body) == message


async def test_a_base_url_without_a_scheme_is_a_permanent_error(provider: Provider) -> None:
    gateway = provider.make(base_url="127.0.0.1:11434/v1", api_key_env=KEY_ENV)
    error, _ = await failure(gateway)
    assert not error.transient
    assert "must start with http:// or https://" in str(error)
