"""The Gemini gateway against a loopback server speaking `streamGenerateContent?alt=sse`."""

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

READ_FILE = ToolSpec(
    "read_file",
    "Read a file.",
    {
        "type": "object",
        "properties": {"path": {"type": "string", "title": "Path"}},
        "required": ["path"],
        "additionalProperties": False,
    },
)


def response(parts: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    candidate.update(extra.pop("candidate", {}))
    return {
        "candidates": [candidate],
        "modelVersion": "gemini-test",
        "responseId": "resp-1",
        **extra,
    }


RECORDED = sse(
    response(
        [{"text": "**Finding the file**\n\nThe user wants README.", "thought": True}],
        usageMetadata={"promptTokenCount": 50, "totalTokenCount": 50},
    ),
    response([{"text": "I will read "}]),
    response([{"text": "it.", "thoughtSignature": "dGV4dC1zaWc="}]),
    response(
        [
            {
                "functionCall": {"name": "read_file", "args": {"path": "README.md"}},
                "thoughtSignature": "Y2FsbC1zaWc=",
            },
            {"functionCall": {"id": "fc-2", "name": "read_file", "args": {"path": "a.py"}}},
        ],
        candidate={"finishReason": "STOP"},
        usageMetadata={
            "promptTokenCount": 50,
            "candidatesTokenCount": 20,
            "thoughtsTokenCount": 9,
            "totalTokenCount": 79,
        },
    ),
    newline="\r\n",  # Gemini frames its events with CRLF
)


PROVIDER = "gemini"
"""The one provider these tests run with (tests/gateway/conftest.py)."""
CODEC = codec_for(GatewayType.gemini)
REQUEST = ModelRequest(
    model="gemini-test",
    system="Be brief.",
    tools=(READ_FILE,),
    items=(
        CODEC.encode_message(Message(Role.user, "Show me a.py", Source("user"))),
        CODEC.encode_message(Message(Role.user, "a.py is new.", Source("plugin", "watch"))),
        CODEC.encode_assistant(
            "",
            [ToolCall("call_x", "read_file", {"path": "a.py"})],
            provider_state={"thought_signatures": {"call_x": "b2xkLXNpZw=="}},
        ),
        CODEC.encode_tool_result(ToolResult("call_x", "print(1)"), name="read_file"),
        CODEC.encode_message(Message(Role.user, "Steering: be quick.", Source("user"))),
    ),
)
"""The conversation each test sends unless it says otherwise."""


async def test_streams_thoughts_text_calls_signatures_usage_finish(
    server: FakeServer, gateway: Gateway
) -> None:
    server.queue(Canned(chunks=RECORDED))

    deltas = await collect(gateway, REQUEST)

    first_call = deltas[3]
    assert isinstance(first_call, ToolCallDelta)
    assert first_call.id.startswith("call_")  # Gemini gave none; the engine needs one
    assert deltas == [
        ReasoningDelta("**Finding the file**\n\nThe user wants README."),
        TextDelta("I will read "),
        TextDelta("it."),
        ToolCallDelta(
            index=0, id=first_call.id, name="read_file", arguments=json.dumps({"path": "README.md"})
        ),
        ToolCallDelta(index=1, id="fc-2", name="read_file", arguments=json.dumps({"path": "a.py"})),
        ProviderStateDelta(
            {"thought_signatures": {"text": "dGV4dC1zaWc=", first_call.id: "Y2FsbC1zaWc="}}
        ),
        UsageDelta(Usage(input_tokens=50, output_tokens=29)),
        FinishDelta("tool_calls"),
    ]


async def test_signatures_round_trip_through_the_codec(
    server: FakeServer, gateway: Gateway
) -> None:
    server.queue(Canned(chunks=RECORDED))
    deltas = await collect(gateway, REQUEST)
    call = next(d for d in deltas if isinstance(d, ToolCallDelta))
    state = next(d.state for d in deltas if isinstance(d, ProviderStateDelta))

    item = gateway.codec.encode_assistant(
        "I will read it.",
        [ToolCall(call.id, "read_file", {"path": "README.md"})],
        provider_state=state,
    )

    assert item["parts"][0]["thoughtSignature"] == "dGV4dC1zaWc="
    assert item["parts"][1]["thoughtSignature"] == "Y2FsbC1zaWc="


async def test_request_merges_adjacent_contents(
    server: FakeServer, gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "AIza-test")
    server.queue(Canned(chunks=RECORDED))
    await collect(gateway, replace(REQUEST, max_output_tokens=100))

    [seen] = server.seen
    assert seen.target == "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
    assert seen.headers["x-goog-api-key"] == "AIza-test"
    assert seen.body == {
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "read_file",
                        "description": "Read a file.",
                        "parametersJsonSchema": READ_FILE.parameters,
                    }
                ]
            }
        ],
        "generationConfig": {"maxOutputTokens": 100},
        "contents": [
            {"role": "user", "parts": [{"text": "Show me a.py"}, {"text": "a.py is new."}]},
            {
                "role": "model",
                "parts": [
                    {
                        "functionCall": {
                            "name": "read_file",
                            "args": {"path": "a.py"},
                            "id": "call_x",
                        },
                        "thoughtSignature": "b2xkLXNpZw==",
                    }
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "name": "read_file",
                            "response": {"output": "print(1)"},
                            "id": "call_x",
                        }
                    },
                    {"text": "Steering: be quick."},
                ],
            },
        ],
    }


async def test_blocked_prompt_and_max_tokens(server: FakeServer, gateway: Gateway) -> None:
    server.queue(
        Canned(chunks=sse({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {}})),
        Canned(chunks=sse(response([{"text": "cut"}], candidate={"finishReason": "MAX_TOKENS"}))),
    )
    assert (await collect(gateway, REQUEST))[-1] == FinishDelta("refusal")
    deltas = await collect(
        gateway, replace(REQUEST, model="models/gemini-test", system="", tools=())
    )
    assert deltas == [TextDelta("cut"), UsageDelta(Usage()), FinishDelta("length")]
    body = server.seen[1].body
    assert "systemInstruction" not in body
    assert "tools" not in body
    assert server.seen[1].target.startswith("/v1beta/models/gemini-test:")
