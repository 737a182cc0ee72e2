"""The scripted gateway's items: a plain JSON form of the generic message that loses nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.gateway.base import GatewayType, NativeContent
from engine.gateway.codec._common import copies
from engine.message import Message, Role, Source, ToolCall, ToolResult


class ScriptedCodec:
    """`{role, content, source, tool_calls, tool_call_id, is_error}` plus reasoning and state."""

    @property
    def gateway_type(self) -> GatewayType:
        return GatewayType.scripted

    def encode_message(self, message: Message) -> NativeContent:
        if message.role is Role.tool:
            raise ValueError("tool-role messages are encoded with encode_tool_result")
        item = self._item(message.role, message.content, message.tool_calls)
        item["source"] = str(message.source) if message.source is not None else None
        return item

    def encode_assistant(
        self,
        content: str,
        tool_calls: Sequence[ToolCall] = (),
        *,
        reasoning: str = "",
        provider_state: Mapping[str, Any] | None = None,
    ) -> NativeContent:
        item = self._item(Role.assistant, content, tool_calls)
        if reasoning:
            item["reasoning"] = reasoning
        if provider_state:
            item["provider_state"] = dict(provider_state)
        return item

    def encode_tool_result(self, result: ToolResult, *, name: str) -> NativeContent:
        item = self._item(Role.tool, result.content, ())
        item.update(name=name, tool_call_id=result.call_id, is_error=result.is_error)
        return item

    def decode(self, item: NativeContent) -> Message:
        source = item.get("source")
        return Message(
            Role(item["role"]),
            item.get("content", ""),
            source=Source.parse(source) if source else None,
            tool_calls=tuple(
                ToolCall(c["id"], c["name"], dict(c.get("arguments", {})))
                for c in item.get("tool_calls", ())
            ),
            tool_call_id=item.get("tool_call_id", ""),
            is_error=bool(item.get("is_error", False)),
        )

    def serialize(self, items: Sequence[NativeContent]) -> list[dict[str, Any]]:
        return copies(items)

    @staticmethod
    def _item(role: Role, content: str, tool_calls: Sequence[ToolCall]) -> NativeContent:
        item: NativeContent = {"role": role.value, "content": content}
        if tool_calls:
            item["tool_calls"] = [
                {"id": c.id, "name": c.name, "arguments": dict(c.arguments)} for c in tool_calls
            ]
        return item
