"""The three network providers as the shared gateway tests see them: how each one's error body,
a stream cut short and an error inside a 200 stream look on the wire."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from engine.gateway.anthropic import AnthropicGateway
from engine.gateway.base import Gateway, GatewayError, ModelRequest, StreamDelta
from engine.gateway.gemini import GeminiGateway
from engine.gateway.openai import OpenAIGateway
from tests.gateway.fake_http import sse

KEY_ENV = "TRELLIS_TEST_KEY"
KEY = "sk-secret-0123456789"


@dataclass(frozen=True)
class Provider:
    name: str
    make: Callable[..., Gateway]
    error: Callable[[int, str], Any]  # the provider's error body
    partial: list[bytes]  # a valid start of a stream that never finishes
    stream_error: Callable[[str], dict[str, Any]]  # an error inside a 200 stream: "overloaded"
    version: str  # the path its real base URL ends with


PROVIDERS = [
    Provider(
        "openai",
        OpenAIGateway,
        lambda status, message: {
            "error": {"message": message, "type": "invalid_request_error", "code": None}
        },
        sse({"choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": None}]}),
        lambda message: {"error": {"message": message, "code": 503}},
        "/v1",
    ),
    Provider(
        "gemini",
        GeminiGateway,
        lambda status, message: [
            {"error": {"code": status, "message": message, "status": "INVALID_ARGUMENT"}}
        ],
        sse({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}]}),
        lambda message: {"error": {"code": 503, "message": message, "status": "UNAVAILABLE"}},
        "/v1beta",
    ),
    Provider(
        "anthropic",
        AnthropicGateway,
        lambda status, message: {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": message},
        },
        sse(
            {"type": "message_start", "message": {"usage": {"input_tokens": 1}}},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": "Hel"},
            },
        ),
        lambda message: {
            "type": "error",
            "error": {"type": "overloaded_error", "message": message},
        },
        "/v1",
    ),
]
REQUEST = ModelRequest(model="test-model", system="s")


async def drain(gateway: Gateway, request: ModelRequest, into: list[StreamDelta]) -> None:
    async for delta in gateway.stream(request):
        into.append(delta)


async def collect(gateway: Gateway, request: ModelRequest) -> list[StreamDelta]:
    """Every delta of one stream."""
    return [delta async for delta in gateway.stream(request)]


async def failure(
    gateway: Gateway, request: ModelRequest = REQUEST
) -> tuple[GatewayError, list[StreamDelta]]:
    """The error the stream ends with, and what it delivered before it; closes the gateway."""
    received: list[StreamDelta] = []
    try:
        with pytest.raises(GatewayError) as caught:
            await drain(gateway, request, received)
    finally:
        await gateway.aclose()
    return caught.value, received
