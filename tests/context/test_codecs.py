"""Native codecs: round-trips, system handling, signatures, merging and alternation."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from engine.gateway.base import GatewayType, NativeContent
from engine.gateway.codecs import codec_for
from engine.message import Message, Role, Source, ToolCall, ToolResult

CALLS = (ToolCall("c1", "read_file", {"path": "a.txt"}), ToolCall("c2", "search", {"q": "x"}))


@pytest.mark.parametrize("gateway_type", list(GatewayType))
def test_round_trips(gateway_type: GatewayType) -> None:
    codec = codec_for(gateway_type)
    assert codec_for(gateway_type) is codec
    user = Message(Role.user, "hello")
    assert codec.decode(codec.encode_message(user)) == user
    assistant = codec.decode(codec.encode_assistant("let me look", CALLS))
    assert (assistant.role, assistant.content, assistant.tool_calls) == (
        Role.assistant,
        "let me look",
        CALLS,
    )
    for is_error in (False, True):
        item = codec.encode_tool_result(ToolResult("c1", "text", is_error), name="read_file")
        decoded = codec.decode(item)
        assert (decoded.role, decoded.content, decoded.tool_call_id) == (Role.tool, "text", "c1")
        if gateway_type is not GatewayType.openai:  # OpenAI tool messages carry no error flag
            assert decoded.is_error is is_error
    # items are JSON-shaped
    json.dumps(codec.encode_assistant("x", CALLS, reasoning="r", provider_state={"k": "v"}))


@pytest.mark.parametrize("gateway_type", list(GatewayType))
def test_tool_role_messages_need_encode_tool_result(gateway_type: GatewayType) -> None:
    with pytest.raises(ValueError, match="encode_tool_result"):
        codec_for(gateway_type).encode_message(Message(Role.tool, "x", tool_call_id="c"))


def test_scripted_keeps_everything() -> None:
    codec = codec_for(GatewayType.scripted)
    message = Message(Role.system, "rules", Source("plugin", "x"))
    assert codec.decode(codec.encode_message(message)) == message
    item = codec.encode_assistant("a", CALLS, reasoning="why", provider_state={"s": 1})
    assert (item["reasoning"], item["provider_state"]) == ("why", {"s": 1})


def test_openai_shapes() -> None:
    codec = codec_for(GatewayType.openai)
    assert codec.encode_message(Message(Role.system, "s")) == {"role": "system", "content": "s"}
    item = codec.encode_assistant("", CALLS[:1])
    assert item == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path":"a.txt"}'},
            }
        ],
    }
    result = codec.encode_tool_result(ToolResult("c1", "r"), name="read_file")
    assert result == {"role": "tool", "tool_call_id": "c1", "content": "r"}


@pytest.mark.parametrize("gateway_type", [GatewayType.openai, GatewayType.scripted])
def test_openai_and_scripted_serialize_one_per_item(gateway_type: GatewayType) -> None:
    codec = codec_for(gateway_type)
    items = [codec.encode_message(Message(Role.user, t)) for t in ("a", "b", "c")]
    assert codec.serialize(items) == items


def test_anthropic_system_as_user_text_and_thinking_from_provider_state() -> None:
    codec = codec_for(GatewayType.anthropic)
    system = codec.encode_message(Message(Role.system, "rules"))
    assert system == {"role": "user", "content": [{"type": "text", "text": "rules"}]}
    block = {"type": "thinking", "thinking": "hmm", "signature": "sig"}
    item = codec.encode_assistant("ok", CALLS[:1], provider_state={"thinking": [block]})
    assert item["content"][0] == block
    assert item["content"][2] == {
        "type": "tool_use",
        "id": "c1",
        "name": "read_file",
        "input": {"path": "a.txt"},
    }
    built = codec.encode_assistant("ok", reasoning="why", provider_state={"signature": "s2"})
    assert built["content"][0] == {"type": "thinking", "thinking": "why", "signature": "s2"}


def test_anthropic_merges_adjacent_same_role_with_tool_results_first() -> None:
    codec = codec_for(GatewayType.anthropic)
    items = [
        codec.encode_message(Message(Role.user, "q")),
        codec.encode_assistant("", CALLS),
        codec.encode_tool_result(ToolResult("c1", "r1"), name="read_file"),
        codec.encode_message(Message(Role.user, "injected")),
        codec.encode_tool_result(ToolResult("c2", "r2", True), name="search"),
        codec.encode_assistant("done"),
    ]
    request = codec.serialize(items)
    assert [m["role"] for m in request] == ["user", "assistant", "user", "assistant"]
    merged = [b["type"] for b in request[2]["content"]]
    assert merged == ["tool_result", "tool_result", "text"]
    assert [b.get("tool_use_id") for b in request[2]["content"][:2]] == ["c1", "c2"]
    assert len(items) == 6  # the Context keeps one item per message
    assert items[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": "r1", "is_error": False}
    ]


def test_gemini_shapes_signatures_and_merging() -> None:
    codec = codec_for(GatewayType.gemini)
    assert codec.encode_message(Message(Role.system, "s")) == {
        "role": "user",
        "parts": [{"text": "s"}],
    }
    state = {"thought_signatures": {"text": "t-sig", "c2": "c-sig"}}
    item = codec.encode_assistant("hm", CALLS, provider_state=state)
    assert item["role"] == "model"
    assert item["parts"][0] == {"text": "hm", "thoughtSignature": "t-sig"}
    assert item["parts"][2] == {
        "functionCall": {"id": "c2", "name": "search", "args": {"q": "x"}},
        "thoughtSignature": "c-sig",
    }
    result = codec.encode_tool_result(ToolResult("c1", "r", True), name="read_file")
    assert result["parts"][0]["functionResponse"] == {
        "id": "c1",
        "name": "read_file",
        "response": {"error": "r"},
    }
    items: list[NativeContent] = [
        codec.encode_message(Message(Role.user, "q")),
        item,
        codec.encode_message(Message(Role.user, "note")),
        result,
        codec.encode_tool_result(ToolResult("c2", "ok"), name="search"),
        codec.encode_assistant("done"),
        codec.encode_assistant("more"),
    ]
    request = codec.serialize(items)
    assert [c["role"] for c in request] == ["user", "model", "user", "model"]
    parts: list[dict[str, Any]] = request[2]["parts"]
    assert ["functionResponse" in p for p in parts] == [True, True, False]
    assert [p["text"] for p in request[3]["parts"]] == ["done", "more"]


@pytest.mark.parametrize("gateway_type", [GatewayType.anthropic, GatewayType.gemini])
def test_serialized_requests_alternate(gateway_type: GatewayType) -> None:
    codec = codec_for(gateway_type)
    roles = [Role.user, Role.user, Role.assistant, Role.assistant, Role.user, Role.system]
    items = [codec.encode_message(Message(role, f"{i}")) for i, role in enumerate(roles)]
    request = codec.serialize(items)
    assert all(a["role"] != b["role"] for a, b in itertools.pairwise(request))
    assert items[0] is not request[0]
