"""The OpenAI-compatible gateway against a loopback server speaking Chat Completions SSE."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from engine.events import Usage
from engine.gateway.base import (
    FinishDelta,
    Gateway,
    GatewayType,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolSpec,
    UsageDelta,
)
from engine.gateway.codecs import codec_for
from engine.gateway.openai import OpenAIGateway
from engine.message import Message, Role, Source, ToolCall, ToolResult
from tests.gateway.fake_http import Canned, FakeServer, sse
from tests.gateway.providers import KEY_ENV, collect

READ_FILE = ToolSpec(
    "read_file",
    "Read a file.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        "usage": None,
    }


RECORDED = sse(
    chunk({"role": "assistant", "content": ""}),
    chunk({"reasoning_content": "The user wants "}),
    chunk({"reasoning_content": "a file."}),
    chunk({"content": "Let me "}),
    chunk({"content": "look."}),
    chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_abc",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": ""},
                }
            ]
        }
    ),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"pa'}}]}),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'th": "README.md"}'}}]}),
    chunk({}, finish="tool_calls"),
    {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-test",
        "choices": [],
        "usage": {"prompt_tokens": 42, "completion_tokens": 17, "total_tokens": 59},
    },
    "[DONE]",
)


PROVIDER = "openai"
"""The one provider these tests run with (tests/gateway/conftest.py)."""
CODEC = codec_for(GatewayType.openai)
REQUEST = ModelRequest(
    model="gpt-test",
    system="You are terse.",
    tools=(READ_FILE,),
    items=(
        CODEC.encode_message(Message(Role.user, "Read the readme.", Source("user"))),
        CODEC.encode_assistant("", [ToolCall("call_1", "read_file", {"path": "README.md"})]),
        CODEC.encode_tool_result(ToolResult("call_1", "# Trellis"), name="read_file"),
    ),
)
"""The conversation each test sends unless it says otherwise."""


async def test_streams_text_reasoning_tool_call_usage_and_finish(
    server: FakeServer, gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-123")
    server.queue(Canned(chunks=RECORDED))

    deltas = await collect(gateway, REQUEST)

    assert deltas == [
        ReasoningDelta("The user wants "),
        ReasoningDelta("a file."),
        TextDelta("Let me "),
        TextDelta("look."),
        ToolCallDelta(index=0, id="call_abc", name="read_file"),
        ToolCallDelta(index=0, arguments='{"pa'),
        ToolCallDelta(index=0, arguments='th": "README.md"}'),
        UsageDelta(Usage(input_tokens=42, output_tokens=17)),
        FinishDelta("tool_calls"),
    ]
    [seen] = server.seen
    assert seen.method == "POST"
    assert seen.target == "/v1/chat/completions"
    assert seen.headers["authorization"] == "Bearer sk-test-123"
    assert seen.headers["content-type"] == "application/json"
    assert seen.body == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "You are terse."},
            *codec_for(gateway.gateway_type).serialize(REQUEST.items),
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read_file",
                    "description": "Read a file.",
                    "parameters": READ_FILE.parameters,
                },
            }
        ],
    }
    assert seen.body["messages"][1] == {"role": "user", "content": "Read the readme."}
    assert seen.body["messages"][3]["tool_call_id"] == "call_1"


async def test_no_key_variable_sends_no_authorization(
    server: FakeServer,
) -> None:
    gateway = OpenAIGateway(base_url=server.base_url)
    server.queue(Canned(chunks=sse(chunk({"content": "hi"}, finish="stop"), "[DONE]")))
    try:
        deltas = await collect(gateway, replace(REQUEST, system="", tools=(), max_output_tokens=64))
    finally:
        await gateway.aclose()
    assert deltas == [TextDelta("hi"), UsageDelta(Usage()), FinishDelta("stop")]
    [seen] = server.seen
    assert "authorization" not in seen.headers
    assert seen.body["max_tokens"] == 64
    assert "tools" not in seen.body
    assert seen.body["messages"][0]["role"] == "user"


async def test_servers_that_repeat_index_zero_give_separate_calls(
    server: FakeServer, gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ollama style: every call complete in one chunk, "stop" as the finish reason, reasoning
    # under `reasoning`, no usage chunk.
    monkeypatch.setenv(KEY_ENV, "k")
    calls = [
        {"index": 0, "id": f"call_{n}", "function": {"name": "list_files", "arguments": "{}"}}
        for n in (1, 2)
    ]
    server.queue(
        Canned(
            chunks=sse(
                chunk({"reasoning": "hmm"}),
                chunk({"tool_calls": [calls[0]]}),
                chunk({"tool_calls": [calls[1]]}),
                chunk({}, finish="stop"),
                "[DONE]",
            )
        )
    )
    deltas = await collect(gateway, REQUEST)
    assert deltas == [
        ReasoningDelta("hmm"),
        ToolCallDelta(index=0, id="call_1", name="list_files", arguments="{}"),
        ToolCallDelta(index=1, id="call_2", name="list_files", arguments="{}"),
        UsageDelta(Usage()),
        FinishDelta("tool_calls"),
    ]


@pytest.mark.parametrize(
    ("reason", "finish"), [("length", "length"), ("content_filter", "refusal"), ("odd", "stop")]
)
async def test_finish_reasons_map_to_finish(
    server: FakeServer,
    gateway: Gateway,
    monkeypatch: pytest.MonkeyPatch,
    reason: str,
    finish: str,
) -> None:
    monkeypatch.setenv(KEY_ENV, "k")
    server.queue(Canned(chunks=sse(chunk({"content": "x"}, finish=reason), "[DONE]")))
    deltas = await collect(gateway, REQUEST)
    assert deltas[-1] == FinishDelta(finish)  # type: ignore[arg-type]


def test_request_body_is_plain_json() -> None:
    body = OpenAIGateway().request_body(REQUEST)
    assert json.loads(json.dumps(body)) == body
