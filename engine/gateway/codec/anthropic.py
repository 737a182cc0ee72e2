"""Anthropic Messages items: `{"role", "content": [blocks]}`, one item per message.

The system prompt travels outside the messages in Anthropic's API, so a system-role message kept in
the Context is encoded as user-role text. Thinking blocks come back from `provider_state`:
`{"thinking": [block, ...]}` verbatim (thinking with its signature, redacted_thinking), or
`{"signature": str}` together with the reasoning text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.gateway.base import GatewayType, NativeContent
from engine.gateway.codec._common import merge_adjacent
from engine.message import Message, Role, ToolCall, ToolResult

_THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})


class AnthropicCodec:
    @property
    def gateway_type(self) -> GatewayType:
        return GatewayType.anthropic

    def encode_message(self, message: Message) -> NativeContent:
        match message.role:
            case Role.system | Role.user:
                return {"role": "user", "content": [{"type": "text", "text": message.content}]}
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
        state = provider_state or {}
        blocks: list[dict[str, Any]] = [dict(b) for b in state.get("thinking", ())]
        if not blocks and reasoning and state.get("signature"):
            blocks.append(
                {"type": "thinking", "thinking": reasoning, "signature": state["signature"]}
            )
        if content or not tool_calls:
            blocks.append({"type": "text", "text": content})
        blocks.extend(
            {"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments)}
            for c in tool_calls
        )
        return {"role": "assistant", "content": blocks}

    def encode_tool_result(self, result: ToolResult, *, name: str) -> NativeContent:
        block = {
            "type": "tool_result",
            "tool_use_id": result.call_id,
            "content": result.content,
            "is_error": result.is_error,
        }
        return {"role": "user", "content": [block]}

    def decode(self, item: NativeContent) -> Message:
        blocks: list[dict[str, Any]] = item["content"]
        results = [b for b in blocks if b.get("type") == "tool_result"]
        if results:
            block = results[0]
            return Message(
                Role.tool,
                _result_text(block.get("content", "")),
                tool_call_id=block["tool_use_id"],
                is_error=bool(block.get("is_error", False)),
            )
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        calls = tuple(
            ToolCall(b["id"], b["name"], dict(b.get("input", {})))
            for b in blocks
            if b.get("type") == "tool_use"
        )
        role = Role.assistant if item["role"] == "assistant" else Role.user
        return Message(role, text, tool_calls=calls)

    def serialize(self, items: Sequence[NativeContent]) -> list[dict[str, Any]]:
        """Adjacent same-role items merge; tool_result blocks lead a merged user message."""
        merged = merge_adjacent(
            items, blocks_key="content", first=lambda b: b.get("type") == "tool_result"
        )
        for item in merged:
            # An empty text block is refused by the API; it only stands in for an empty reply.
            kept = [b for b in item["content"] if not (b.get("type") == "text" and not b["text"])]
            item["content"] = kept or item["content"]
        return merged


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return str(content)
