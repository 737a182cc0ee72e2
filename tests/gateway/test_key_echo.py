"""A hostile or broken endpoint echoes the key it was sent, or another secret Trellis holds, in
whatever it answers; no error a gateway raises, and nothing it logs, may carry the value."""

from __future__ import annotations

import json
import logging

import pytest

from engine.gateway.http import ERROR_MESSAGE_CHARS
from engine.redaction import REDACTED, Redactor
from tests.gateway.fake_http import Canned, FakeServer, json_body, sse
from tests.gateway.providers import KEY, KEY_ENV, Provider, failure

OTHER_SECRET = "mcp-db-password-4711"
"""A secret that is not the key: an MCP server's env value, say."""


def fragments(secret: str, size: int = 6) -> list[str]:
    """Every `size`-character piece of `secret`: none may survive, not even a cut-off half."""
    return [secret[i : i + size] for i in range(len(secret) - size + 1)]


def assert_clean(text: str, secret: str = KEY) -> None:
    leaked = [piece for piece in fragments(secret) if piece in text]
    assert not leaked, f"{leaked} in {text!r}"


async def test_a_key_in_a_malformed_line_is_redacted(
    server: FakeServer, provider: Provider, caplog: pytest.LogCaptureFixture
) -> None:
    server.queue(Canned(chunks=[*provider.partial, f"data: bad key {KEY}\n\n".encode()]))
    with caplog.at_level(logging.WARNING):
        error, _ = await failure(provider.make(base_url=server.base_url, api_key_env=KEY_ENV))
    assert "malformed stream" in str(error)
    assert REDACTED in str(error)
    assert_clean(str(error))
    assert REDACTED in caplog.text
    assert_clean(caplog.text)


async def test_a_key_in_an_error_inside_a_200_stream_is_redacted(
    server: FakeServer, provider: Provider
) -> None:
    event = provider.stream_error(f"invalid key {KEY}")
    server.queue(Canned(chunks=[*provider.partial, *sse(event, event_names=["error"])]))
    error, _ = await failure(provider.make(base_url=server.base_url, api_key_env=KEY_ENV))
    assert "error in stream" in str(error)
    assert "invalid key [redacted]" in str(error)
    assert_clean(str(error))


@pytest.mark.parametrize("offset", [0, 60, 110, ERROR_MESSAGE_CHARS - 70, 5000])
async def test_no_piece_of_a_key_survives_where_a_long_line_is_cut(
    server: FakeServer, provider: Provider, offset: int
) -> None:
    line = "x" * offset + KEY + "y" * 2000
    server.queue(Canned(chunks=[f"data: {line}\n\n".encode()]))
    error, _ = await failure(provider.make(base_url=server.base_url, api_key_env=KEY_ENV))
    assert len(str(error)) <= ERROR_MESSAGE_CHARS
    assert_clean(str(error))


async def test_a_json_escaped_key_in_an_error_body_is_redacted(
    server: FakeServer, provider: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    odd = 'sk-"quoted"\\slash-0123'
    monkeypatch.setenv(KEY_ENV, odd)
    server.queue(Canned(status=502, chunks=[json.dumps({"detail": odd}).encode()]))
    error, _ = await failure(provider.make(base_url=server.base_url, api_key_env=KEY_ENV))
    assert error.transient
    assert REDACTED in str(error)
    assert_clean(str(error), odd)
    assert_clean(str(error), json.dumps(odd)[1:-1])


async def test_a_key_rotated_after_the_gateway_was_made_is_redacted(
    server: FakeServer, provider: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway = provider.make(base_url=server.base_url, api_key_env=KEY_ENV)
    rotated = "sk-rotated-9876543210"
    monkeypatch.setenv(KEY_ENV, rotated)
    server.queue(json_body(401, provider.error(401, f"unknown key {rotated}")))
    error, _ = await failure(gateway)
    assert_clean(str(error), rotated)


async def test_every_secret_the_redactor_holds_is_redacted(
    server: FakeServer, provider: Provider
) -> None:
    event = provider.stream_error(f"env leaked: {OTHER_SECRET}")
    server.queue(Canned(chunks=[*provider.partial, *sse(event, event_names=["error"])]))
    gateway = provider.make(
        base_url=server.base_url, api_key_env=KEY_ENV, redactor=Redactor([OTHER_SECRET])
    )
    error, _ = await failure(gateway)
    assert "env leaked: [redacted]" in str(error)
    assert_clean(str(error), OTHER_SECRET)
