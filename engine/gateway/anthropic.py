"""Anthropic's Messages API, natively: thinking blocks, their signatures, tool use, stream errors.

Thinking blocks must be sent back verbatim with their signatures on the next request, so the
reader collects them and emits one `ProviderStateDelta` at the end of the stream, before the one
`UsageDelta` (totals) and the one `FinishDelta` that close every stream.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx

from engine.events import Finish, Usage
from engine.gateway.base import (
    DEFAULT_TIMEOUT,
    FinishDelta,
    GatewayError,
    GatewayType,
    ModelRequest,
    ProviderStateDelta,
    ReasoningDelta,
    StreamDelta,
    TextDelta,
    ToolCallDelta,
    UsageDelta,
)
from engine.gateway.cache_breakpoints import DEFAULT_MIN_TOKENS, place_breakpoints
from engine.gateway.deadlines import StreamDeadlines
from engine.gateway.http import (
    HttpGateway,
    SseEvent,
    json_int,
    json_str,
    parse_json_event,
)
from engine.redaction import Redactor

DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
DEFAULT_MAX_TOKENS = 4096
API_VERSION = "2023-06-01"
THINKING_STATE_KEY = "thinking"
"""`provider_state` key of the thinking blocks (with signatures), in order, as the codec reads it."""

_FINISH: dict[str, Finish] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "refusal",
}
_USAGE_PARTS = {
    "input_tokens": "input_tokens",
    "cache_read_input_tokens": "cache_read_tokens",
    "cache_creation_input_tokens": "cache_write_tokens",
    "output_tokens": "output_tokens",
}
"""The Messages API's usage fields, each the `Usage` part it is."""
_TRANSIENT_ERRORS = frozenset(
    {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}
)


@dataclass(slots=True)
class _Block:
    """An open content block: its type, and what must be kept of it when it stops."""

    type: str
    tool_index: int = -1
    start_input: dict[str, Any] = field(default_factory=dict)
    has_arguments: bool = False
    thinking: list[str] = field(default_factory=list)
    signature: str = ""
    data: str = ""


class AnthropicStreamReader:
    """Messages API stream events to deltas."""

    def __init__(self, provider: str = "anthropic") -> None:
        self.provider = provider
        self.done = False
        self._started = False
        self._usage: dict[str, int] = {}
        self._stop_reason: str | None = None
        self._blocks: dict[int, _Block] = {}
        self._tool_count = 0
        self._thinking: list[dict[str, Any]] = []

    def feed(self, event: SseEvent) -> list[StreamDelta]:
        payload = parse_json_event(self.provider, event)
        kind = payload.get("type") or event.event
        match kind:
            case "ping":
                return []
            case "error":
                raise self._error(payload.get("error"))
            case "message_start":
                self._started = True
                message = payload.get("message") or {}
                self._count_usage(message.get("usage") if isinstance(message, dict) else None)
                return []
            case "content_block_start":
                return self._block_start(payload)
            case "content_block_delta":
                return self._block_delta(payload)
            case "content_block_stop":
                return self._block_stop(payload)
            case "message_delta":
                delta = payload.get("delta") or {}
                reason = delta.get("stop_reason") if isinstance(delta, dict) else None
                if isinstance(reason, str):
                    self._stop_reason = reason
                self._count_usage(payload.get("usage"))
                return []
            case "message_stop":
                self.done = True
                return []
            case _:
                return []  # the API may add event types; the docs ask clients to ignore them

    def _count_usage(self, usage: Any) -> None:
        """Input arrives in message_start, in parts that do not overlap (`input_tokens` excludes
        the cache reads and writes); output grows with each message_delta. A part a later event
        repeats replaces the earlier count."""
        if not isinstance(usage, dict):
            return
        for key, part in _USAGE_PARTS.items():
            if usage.get(key) is not None:
                self._usage[part] = json_int(usage.get(key))

    def _index(self, payload: dict[str, Any]) -> int:
        index = payload.get("index")
        if not isinstance(index, int):
            raise GatewayError(f"{self.provider}: malformed stream: a content block has no index")
        return index

    def _block_start(self, payload: dict[str, Any]) -> list[StreamDelta]:
        index = self._index(payload)
        content = payload.get("content_block")
        if not isinstance(content, dict):
            raise GatewayError(f"{self.provider}: malformed stream: content_block is missing")
        block = _Block(type=str(content.get("type", "")))
        self._blocks[index] = block
        match block.type:
            case "text":
                text = json_str(content.get("text"))
                return [TextDelta(text)] if text else []
            case "thinking":
                text = json_str(content.get("thinking"))
                block.thinking.append(text)
                block.signature = json_str(content.get("signature"))
                return [ReasoningDelta(text)] if text else []
            case "redacted_thinking":
                block.data = json_str(content.get("data"))
                return []
            case "tool_use":
                block.tool_index = self._tool_count
                self._tool_count += 1
                start_input = content.get("input")
                block.start_input = start_input if isinstance(start_input, dict) else {}
                return [
                    ToolCallDelta(
                        index=block.tool_index,
                        id=json_str(content.get("id")),
                        name=json_str(content.get("name")),
                    )
                ]
            case _:
                return []

    def _block_delta(self, payload: dict[str, Any]) -> list[StreamDelta]:
        index = self._index(payload)
        block = self._blocks.get(index)
        if block is None:
            raise GatewayError(
                f"{self.provider}: malformed stream: content_block_delta for block {index} "
                "that never started"
            )
        delta = payload.get("delta")
        if not isinstance(delta, dict):
            raise GatewayError(
                f"{self.provider}: malformed stream: content_block_delta has no delta"
            )
        match delta.get("type"):
            case "text_delta":
                text = json_str(delta.get("text"))
                return [TextDelta(text)] if text else []
            case "thinking_delta":
                text = json_str(delta.get("thinking"))
                block.thinking.append(text)
                return [ReasoningDelta(text)] if text else []
            case "signature_delta":
                block.signature += json_str(delta.get("signature"))
                return []
            case "input_json_delta":
                if block.tool_index < 0:
                    raise GatewayError(
                        f"{self.provider}: malformed stream: input_json_delta in a "
                        f"{block.type or 'untyped'} block"
                    )
                fragment = json_str(delta.get("partial_json"))
                if not fragment:
                    return []
                block.has_arguments = True
                return [ToolCallDelta(index=block.tool_index, arguments=fragment)]
            case _:
                return []

    def _block_stop(self, payload: dict[str, Any]) -> list[StreamDelta]:
        block = self._blocks.pop(self._index(payload), None)
        if block is None:
            return []
        match block.type:
            case "thinking":
                self._thinking.append(
                    {
                        "type": "thinking",
                        "thinking": "".join(block.thinking),
                        "signature": block.signature,
                    }
                )
            case "redacted_thinking":
                self._thinking.append({"type": "redacted_thinking", "data": block.data})
            case "tool_use" if not block.has_arguments:
                # A call without input deltas still needs its (empty) arguments object.
                return [
                    ToolCallDelta(index=block.tool_index, arguments=json.dumps(block.start_input))
                ]
        return []

    def _error(self, error: Any) -> GatewayError:
        kind = json_str(error.get("type")) if isinstance(error, dict) else ""
        message = json_str(error.get("message")) if isinstance(error, dict) else str(error)
        return GatewayError(
            f"{self.provider}: error in stream: {message or 'no message'} ({kind or 'unknown'})",
            transient=kind in _TRANSIENT_ERRORS,
        )

    def close(self) -> list[StreamDelta]:
        """The thinking state, usage and finish; a stream without a stop reason was cut off."""
        if not self._started:
            raise GatewayError(f"{self.provider}: malformed stream: no message_start event")
        if self._stop_reason is None:
            raise GatewayError(
                f"{self.provider}: stream ended before the response finished (no stop_reason)",
                transient=True,
            )
        deltas: list[StreamDelta] = []
        if self._thinking:
            deltas.append(ProviderStateDelta({THINKING_STATE_KEY: list(self._thinking)}))
        deltas.append(UsageDelta(Usage(**self._usage)))
        deltas.append(FinishDelta(_FINISH.get(self._stop_reason, "stop")))
        return deltas


class AnthropicGateway(HttpGateway):
    """The Messages API over SSE; thinking blocks and their signatures go back verbatim."""

    gateway_type = GatewayType.anthropic
    default_base_url = DEFAULT_BASE_URL
    keepalive_events = frozenset({"ping"})

    def __init__(
        self,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key_env: str = "ANTHROPIC_API_KEY",
        timeout: float = DEFAULT_TIMEOUT,
        deadlines: StreamDeadlines | None = None,
        redactor: Redactor | None = None,
        provider_name: str = "anthropic",
        max_tokens: int = DEFAULT_MAX_TOKENS,
        cache_min_tokens: int = DEFAULT_MIN_TOKENS,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(
            base_url=base_url,
            api_key_env=api_key_env,
            timeout=timeout,
            deadlines=deadlines,
            redactor=redactor,
            provider_name=provider_name,
            transport=transport,
        )
        self._max_tokens = max_tokens
        self._cache_min_tokens = cache_min_tokens

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body sent for `request`, its prompt cache marked (`place_breakpoints`);
        `max_tokens` is required by the API."""
        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_output_tokens or self._max_tokens,
            "stream": True,
            "messages": self._codec.serialize(request.items),
        }
        if request.system:
            body["system"] = request.system
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
        place_breakpoints(body, min_tokens=self._cache_min_tokens)
        return body

    def _headers(self) -> dict[str, str]:
        headers = {"accept": "text/event-stream", "anthropic-version": API_VERSION}
        key = self._endpoint.api_key()
        if key:
            headers["x-api-key"] = key
        return headers

    def _path(self, request: ModelRequest) -> str:
        return "messages"

    def _reader(self) -> AnthropicStreamReader:
        return AnthropicStreamReader(self._endpoint.provider)
