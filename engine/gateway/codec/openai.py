"""OpenAI Chat Completions messages: the item is the wire message itself."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.gateway.base import GatewayType, NativeContent
from engine.gateway.codec._common import arguments_json, copies, parse_arguments
from engine.message import Message, Role, ToolCall, ToolResult


class OpenAICodec:
    """System messages stay system messages; reasoning and provider state are not sent back."""

    @property
    def gateway_type(self) -> GatewayType:
        return GatewayType.openai

    def encode_message(self, message: Message) -> NativeContent:
        match message.role:
            case Role.system | Role.user:
                return {"role": message.role.value, "content": message.content}
            case Role.assistant:
                return self.encode_assistant(message.content, message.tool_calls)
            case Role.tool:
                raise ValueError("tool-role messages are encoded with encode_tool_result")

    def encode_assistant(
        self,
        content: str,
        tool_calls: Sequence[ToolCall] = (),
        *,
        reasoning: str = "",
        provider_state: Mapping[str, Any] | None = None,
    ) -> NativeContent:
        item: NativeContent = {"role": "assistant", "content": content or None}
        if tool_calls:
            item["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": arguments_json(call.arguments)},
                }
                for call in tool_calls
            ]
        return item

    def encode_tool_result(self, result: ToolResult, *, name: str) -> NativeContent:
        # OpenAI has no error flag on tool messages; the flag lives in the Context's provenance.
        return {"role": "tool", "tool_call_id": result.call_id, "content": result.content}

    def decode(self, item: NativeContent) -> Message:
        role = Role(item["role"])
        content = item.get("content") or ""
        if not isinstance(content, str):  # content parts: keep their text
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        calls = tuple(
            ToolCall(c["id"], c["function"]["name"], parse_arguments(c["function"]["arguments"]))
            for c in item.get("tool_calls") or ()
        )
        return Message(role, content, tool_calls=calls, tool_call_id=item.get("tool_call_id", ""))

    def serialize(self, items: Sequence[NativeContent]) -> list[dict[str, Any]]:
        return copies(items)
