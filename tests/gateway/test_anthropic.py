"""The Anthropic gateway against a loopback server speaking the Messages API event stream."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from engine.events import Usage
from engine.gateway.base import (
    FinishDelta,
    Gateway,
    GatewayType,
    ModelRequest,
    ProviderStateDelta,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolSpec,
    UsageDelta,
)
from engine.gateway.codecs import codec_for
from engine.message import Message, Role, Source, ToolCall, ToolResult
from tests.gateway.fake_http import Canned, FakeServer, sse
from tests.gateway.providers import KEY_ENV, collect

LIST_FILES = ToolSpec(
    "list_files",
    "List a directory.",
    {"type": "object", "properties": {"path": {"type": "string"}}},
)
THINKING = {"type": "thinking", "thinking": "Earlier thought.", "signature": "c2lnLTE="}


def events(*payloads: dict[str, Any]) -> list[bytes]:
    """The wire form: each event named after its payload's type, as the API sends it."""
    return sse(*payloads, event_names=[str(p["type"]) for p in payloads])


def block_delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


RECORDED = events(
    {
        "type": "message_start",
        "message": {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "claude-test",
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 30, "cache_read_input_tokens": 12, "output_tokens": 1},
        },
    },
    {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "thinking", "thinking": "", "signature": ""},
    },
    {"type": "ping"},
    block_delta(0, {"type": "thinking_delta", "thinking": "Which directory? "}),
    block_delta(0, {"type": "thinking_delta", "thinking": "The root."}),
    block_delta(0, {"type": "signature_delta", "signature": "RXF1YWxz"}),
    {"type": "content_block_stop", "index": 0},
    {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
    block_delta(1, {"type": "text_delta", "text": "Listing "}),
    block_delta(1, {"type": "text_delta", "text": "the root."}),
    {"type": "content_block_stop", "index": 1},
    {
        "type": "content_block_start",
        "index": 2,
        "content_block": {"type": "tool_use", "id": "toolu_01", "name": "list_files", "input": {}},
    },
    block_delta(2, {"type": "input_json_delta", "partial_json": ""}),
    block_delta(2, {"type": "input_json_delta", "partial_json": '{"path"'}),
    block_delta(2, {"type": "input_json_delta", "partial_json": ': "."}'}),
    {"type": "content_block_stop", "index": 2},
    {
        "type": "content_block_start",
        "index": 3,
        "content_block": {"type": "tool_use", "id": "toolu_02", "name": "list_files", "input": {}},
    },
    {"type": "content_block_stop", "index": 3},
    {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use", "stop_sequence": None},
        "usage": {"output_tokens": 57},
    },
    {"type": "message_stop"},
)


PROVIDER = "anthropic"
"""The one provider these tests run with (tests/gateway/conftest.py)."""
CODEC = codec_for(GatewayType.anthropic)
REQUEST = ModelRequest(
    model="claude-test",
    system="Be brief.",
    tools=(LIST_FILES,),
    items=(
        CODEC.encode_message(
            Message(Role.user, "Context from a plugin.", Source("plugin", "notes"))
        ),
        CODEC.encode_message(Message(Role.user, "What is here?", Source("user"))),
        CODEC.encode_assistant(
            "",
            [ToolCall("toolu_00", "list_files", {"path": "."})],
            reasoning="Earlier thought.",
            provider_state={"thinking": [THINKING]},
        ),
        CODEC.encode_tool_result(ToolResult("toolu_00", "README.md"), name="list_files"),
        CODEC.encode_message(Message(Role.user, "Injected after the result.", Source("plugin"))),
    ),
)
"""The conversation each test sends unless it says otherwise."""


async def test_streams_thinking_text_tool_calls_signature_usage_finish(
    server: FakeServer, gateway: Gateway
) -> None:
    server.queue(Canned(chunks=RECORDED))

    deltas = await collect(gateway, REQUEST)

    assert deltas == [
        ReasoningDelta("Which directory? "),
        ReasoningDelta("The root."),
        TextDelta("Listing "),
        TextDelta("the root."),
        ToolCallDelta(index=0, id="toolu_01", name="list_files"),
        ToolCallDelta(index=0, arguments='{"path"'),
        ToolCallDelta(index=0, arguments=': "."}'),
        ToolCallDelta(index=1, id="toolu_02", name="list_files"),
        ToolCallDelta(index=1, arguments="{}"),  # a call without input deltas gets `{}`
        ProviderStateDelta(
            {
                "thinking": [
                    {
                        "type": "thinking",
                        "thinking": "Which directory? The root.",
                        "signature": "RXF1YWxz",
                    }
                ]
            }
        ),
        UsageDelta(Usage(input_tokens=30, cache_read_tokens=12, output_tokens=57)),
        FinishDelta("tool_calls"),
    ]


async def test_request_merges_adjacent_items_and_sends_thinking_back(
    server: FakeServer, gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-ant-test")
    server.queue(Canned(chunks=RECORDED))
    await collect(gateway, REQUEST)

    [seen] = server.seen
    assert seen.target == "/v1/messages"
    assert seen.headers["x-api-key"] == "sk-ant-test"
    assert seen.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in seen.headers
    assert seen.body == {
        "model": "claude-test",
        "max_tokens": 4096,
        "stream": True,
        "system": "Be brief.",
        "tools": [
            {
                "name": "list_files",
                "description": "List a directory.",
                "input_schema": LIST_FILES.parameters,
            }
        ],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Context from a plugin."},
                    {"type": "text", "text": "What is here?"},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    THINKING,
                    {
                        "type": "tool_use",
                        "id": "toolu_00",
                        "name": "list_files",
                        "input": {"path": "."},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_00",
                        "content": "README.md",
                        "is_error": False,
                    },
                    {"type": "text", "text": "Injected after the result."},
                ],
            },
        ],
    }


async def test_max_output_tokens_and_stop_reasons(server: FakeServer, gateway: Gateway) -> None:
    start = {"type": "message_start", "message": {"usage": {"input_tokens": 3}}}
    text = [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "text", "text": "Hi"},
        },
        {"type": "content_block_stop", "index": 0},
    ]
    stop = {
        "type": "message_delta",
        "delta": {"stop_reason": "max_tokens"},
        "usage": {"output_tokens": 2},
    }
    server.queue(Canned(chunks=events(start, *text, stop, {"type": "message_stop"})))

    deltas = await collect(gateway, replace(REQUEST, system="", tools=(), max_output_tokens=16))

    assert deltas == [
        TextDelta("Hi"),
        UsageDelta(Usage(input_tokens=3, output_tokens=2)),
        FinishDelta("length"),
    ]
    body = server.seen[0].body
    assert body["max_tokens"] == 16
    assert "system" not in body
    assert "tools" not in body


async def test_redacted_thinking_is_kept_for_the_next_request(
    server: FakeServer, gateway: Gateway
) -> None:
    server.queue(
        Canned(
            chunks=events(
                {"type": "message_start", "message": {"usage": {"input_tokens": 1}}},
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
                },
                {"type": "content_block_stop", "index": 0},
                {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}},
                {"type": "message_stop"},
            )
        )
    )
    deltas = await collect(gateway, REQUEST)
    assert deltas[0] == ProviderStateDelta(
        {"thinking": [{"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"}]}
    )
    assert deltas[-1] == FinishDelta("stop")
