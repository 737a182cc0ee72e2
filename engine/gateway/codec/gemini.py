"""Gemini `contents`: `{"role": "user"|"model", "parts": [...]}`, one item per message.

Gemini takes the system instruction outside the contents, so a system-role message kept in the
Context is encoded as user-role text. Thought signatures come back from `provider_state`:
`{"thought_signatures": {"text": sig, CALL_KEY: sig}}` where CALL_KEY is the call id, or `#i` (its
position) for a call without an id; each signature is put back on the part it came with. Thought
summaries (reasoning) are not sent back. Function responses are `{"output": text}` or
`{"error": text}`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.gateway.base import GatewayType, NativeContent
from engine.gateway.codec._common import merge_adjacent
from engine.message import Message, Role, ToolCall, ToolResult


class GeminiCodec:
    @property
    def gateway_type(self) -> GatewayType:
        return GatewayType.gemini

    def encode_message(self, message: Message) -> NativeContent:
        match message.role:
            case Role.system | Role.user:
                return {"role": "user", "parts": [{"text": message.content}]}
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
        signatures: Mapping[str, str] = (provider_state or {}).get("thought_signatures", {})
        parts: list[dict[str, Any]] = []
        if content or not tool_calls:
            part: dict[str, Any] = {"text": content}
            if "text" in signatures:
                part["thoughtSignature"] = signatures["text"]
            parts.append(part)
        for i, call in enumerate(tool_calls):
            function: dict[str, Any] = {"name": call.name, "args": dict(call.arguments)}
            if call.id:
                function["id"] = call.id
            part = {"functionCall": function}
            key = call.id or f"#{i}"
            if key in signatures:
                part["thoughtSignature"] = signatures[key]
            parts.append(part)
        return {"role": "model", "parts": parts}

    def encode_tool_result(self, result: ToolResult, *, name: str) -> NativeContent:
        response = {"error": result.content} if result.is_error else {"output": result.content}
        function: dict[str, Any] = {"name": name, "response": response}
        if result.call_id:
            function["id"] = result.call_id
        return {"role": "user", "parts": [{"functionResponse": function}]}

    def decode(self, item: NativeContent) -> Message:
        parts: list[dict[str, Any]] = item["parts"]
        responses = [p["functionResponse"] for p in parts if "functionResponse" in p]
        if responses:
            response: dict[str, Any] = responses[0].get("response", {})
            is_error = "error" in response
            content = response.get("error") if is_error else response.get("output", "")
            return Message(
                Role.tool,
                content if isinstance(content, str) else str(content),
                tool_call_id=responses[0].get("id", ""),
                is_error=is_error,
            )
        text = "".join(p["text"] for p in parts if "text" in p and not p.get("thought"))
        calls = tuple(
            ToolCall(
                p["functionCall"].get("id", ""),
                p["functionCall"]["name"],
                dict(p["functionCall"].get("args", {})),
            )
            for p in parts
            if "functionCall" in p
        )
        role = Role.assistant if item["role"] == "model" else Role.user
        return Message(role, text, tool_calls=calls)

    def serialize(self, items: Sequence[NativeContent]) -> list[dict[str, Any]]:
        """Adjacent same-role contents merge; function responses lead a merged user content."""
        return merge_adjacent(items, blocks_key="parts", first=lambda p: "functionResponse" in p)
