"""Each provider reports its prompt cache in its own words; every gateway stores the same parts
(`Usage`): uncached input, cache reads, cache writes and output, never a provider's sum."""

from __future__ import annotations

from typing import Any

import pytest

from engine.events import Usage
from engine.gateway.anthropic import AnthropicGateway
from engine.gateway.base import Gateway, ModelRequest, UsageDelta
from engine.gateway.gemini import GeminiGateway
from engine.gateway.openai import OpenAIGateway
from tests.gateway.fake_http import Canned, FakeServer, sse
from tests.gateway.providers import KEY, KEY_ENV

REQUEST = ModelRequest(model="test-model", system="s")


def openai_stream(usage: dict[str, Any]) -> list[bytes]:
    return sse(
        {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]},
        {"choices": [], "usage": usage},
        "[DONE]",
    )


def gemini_stream(usage: dict[str, Any]) -> list[bytes]:
    return sse(
        {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}
            ],
            "usageMetadata": usage,
        },
        newline="\r\n",
    )


def anthropic_stream(start: dict[str, Any], end: dict[str, Any]) -> list[bytes]:
    return sse(
        {"type": "message_start", "message": {"usage": start}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": end},
        {"type": "message_stop"},
    )


async def usage_of(server: FakeServer, gateway: Gateway, chunks: list[bytes]) -> Usage:
    server.queue(Canned(chunks=chunks))
    try:
        deltas = [d async for d in gateway.stream(REQUEST)]
    finally:
        await gateway.aclose()
    [usage] = [d.usage for d in deltas if isinstance(d, UsageDelta)]
    return usage


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


async def test_openai_cached_tokens_are_split_out_of_prompt_tokens(server: FakeServer) -> None:
    usage = await usage_of(
        server,
        OpenAIGateway(base_url=server.base_url, api_key_env=KEY_ENV),
        openai_stream(
            {
                "prompt_tokens": 2006,
                "completion_tokens": 300,
                "total_tokens": 2306,
                "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0},
            }
        ),
    )
    assert usage == Usage(input_tokens=86, cache_read_tokens=1920, output_tokens=300)
    assert usage.prompt_tokens == 2006


async def test_openai_compatible_server_without_details_cached_nothing(
    server: FakeServer,
) -> None:
    usage = await usage_of(
        server,
        OpenAIGateway(base_url=server.base_url, api_key_env=KEY_ENV),
        openai_stream({"prompt_tokens": 40, "completion_tokens": 5, "prompt_tokens_details": None}),
    )
    assert usage == Usage(input_tokens=40, output_tokens=5)


async def test_a_router_reports_cache_writes_and_deepseek_its_hits(server: FakeServer) -> None:
    """OpenRouter adds `cache_write_tokens` to the details; DeepSeek reports its cache hits
    beside `prompt_tokens`. Both are parts of `prompt_tokens`."""
    routed = await usage_of(
        server,
        OpenAIGateway(base_url=server.base_url, api_key_env=KEY_ENV),
        openai_stream(
            {
                "prompt_tokens": 5000,
                "completion_tokens": 10,
                "prompt_tokens_details": {"cached_tokens": 3000, "cache_write_tokens": 1500},
            }
        ),
    )
    assert routed == Usage(
        input_tokens=500, cache_read_tokens=3000, cache_write_tokens=1500, output_tokens=10
    )
    deepseek = await usage_of(
        server,
        OpenAIGateway(base_url=server.base_url, api_key_env=KEY_ENV),
        openai_stream(
            {
                "prompt_tokens": 900,
                "completion_tokens": 4,
                "prompt_cache_hit_tokens": 640,
                "prompt_cache_miss_tokens": 260,
            }
        ),
    )
    assert deepseek == Usage(input_tokens=260, cache_read_tokens=640, output_tokens=4)


async def test_gemini_cached_content_is_split_out_of_the_prompt_count(server: FakeServer) -> None:
    usage = await usage_of(
        server,
        GeminiGateway(base_url=server.base_url, api_key_env=KEY_ENV),
        gemini_stream(
            {
                "promptTokenCount": 5000,
                "toolUsePromptTokenCount": 120,
                "cachedContentTokenCount": 4096,
                "candidatesTokenCount": 40,
                "thoughtsTokenCount": 10,
                "totalTokenCount": 5170,
            }
        ),
    )
    assert usage == Usage(input_tokens=1024, cache_read_tokens=4096, output_tokens=50)
    assert usage.prompt_tokens == 5120


async def test_anthropic_reads_and_writes_are_parts_beside_input(server: FakeServer) -> None:
    usage = await usage_of(
        server,
        AnthropicGateway(base_url=server.base_url, api_key_env=KEY_ENV),
        anthropic_stream(
            {
                "input_tokens": 50,
                "cache_creation_input_tokens": 248,
                "cache_read_input_tokens": 100_000,
                "output_tokens": 1,
            },
            # the final message_delta repeats the input counts (cumulative) and ends the output
            {
                "input_tokens": 50,
                "cache_creation_input_tokens": 248,
                "cache_read_input_tokens": 100_000,
                "output_tokens": 503,
            },
        ),
    )
    assert usage == Usage(
        input_tokens=50, cache_read_tokens=100_000, cache_write_tokens=248, output_tokens=503
    )
    assert usage.prompt_tokens == 100_298


async def test_anthropic_delta_with_output_only_keeps_the_input_parts(server: FakeServer) -> None:
    usage = await usage_of(
        server,
        AnthropicGateway(base_url=server.base_url, api_key_env=KEY_ENV),
        anthropic_stream(
            {"input_tokens": 7, "cache_read_input_tokens": 3000, "output_tokens": 1},
            {"output_tokens": 12},
        ),
    )
    assert usage == Usage(input_tokens=7, cache_read_tokens=3000, output_tokens=12)
