"""Any OpenAI-compatible Chat Completions endpoint (OpenAI, Ollama, vLLM, llama.cpp, LM Studio, ...).

Streams with `stream_options.include_usage`, so the last chunk carries the token counts. Every
stream ends with exactly one `UsageDelta` (the totals) and then one `FinishDelta`.
"""

from __future__ import annotations

from typing import Any

from engine.events import Finish, Usage
from engine.gateway.base import (
    FinishDelta,
    GatewayError,
    GatewayType,
    ModelRequest,
    ReasoningDelta,
    StreamDelta,
    TextDelta,
    ToolCallDelta,
    UsageDelta,
)
from engine.gateway.http import (
    HttpGateway,
    SseEvent,
    json_int,
    json_str,
    parse_json_event,
    stream_error,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"

_FINISH: dict[str, Finish] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "refusal",
}


def _usage(usage: dict[str, Any]) -> Usage:
    """The parts of `prompt_tokens`, which includes what `prompt_tokens_details` names as read
    from the cache (`cached_tokens`) and, where a router reports it, written to it
    (`cache_write_tokens`); DeepSeek names its reads `prompt_cache_hit_tokens`. A server that
    reports none of them cached nothing."""
    details = usage.get("prompt_tokens_details")
    details = details if isinstance(details, dict) else {}
    prompt = json_int(usage.get("prompt_tokens"))
    read = json_int(details.get("cached_tokens")) or json_int(usage.get("prompt_cache_hit_tokens"))
    read = min(read, prompt)
    write = min(json_int(details.get("cache_write_tokens")), prompt - read)
    return Usage(
        input_tokens=prompt - read - write,
        cache_read_tokens=read,
        cache_write_tokens=write,
        output_tokens=json_int(usage.get("completion_tokens")),
    )


class OpenAIStreamReader:
    """Chat Completions chunks to deltas; keeps what must be known at the end (usage, finish)."""

    def __init__(self, provider: str = "openai") -> None:
        self.provider = provider
        self.done = False
        self._usage = Usage()
        self._finish: str | None = None
        self._refused = False
        # The provider's (index, id) to our tool-call index: some servers repeat index 0 for
        # every complete call, so a new id at a known index starts a new call.
        self._calls: dict[int, tuple[str, int]] = {}
        self._count = 0

    def feed(self, event: SseEvent) -> list[StreamDelta]:
        if event.data.strip() == "[DONE]":
            self.done = True
            return []
        chunk = parse_json_event(self.provider, event)
        if "error" in chunk:
            raise stream_error(self.provider, chunk["error"])
        deltas: list[StreamDelta] = []
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = _usage(usage)
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise GatewayError(f"{self.provider}: malformed stream: `choices` is not a list")
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                raise GatewayError(f"{self.provider}: malformed stream: `delta` is not an object")
            deltas.extend(self._choice_deltas(delta))
            reason = choice.get("finish_reason")
            if isinstance(reason, str) and reason:
                self._finish = reason
        return deltas

    def _choice_deltas(self, delta: dict[str, Any]) -> list[StreamDelta]:
        deltas: list[StreamDelta] = []
        # Servers name the reasoning stream differently: DeepSeek and vLLM `reasoning_content`,
        # OpenRouter and Ollama `reasoning`.
        for key in ("reasoning_content", "reasoning"):
            reasoning = delta.get(key)
            if isinstance(reasoning, str) and reasoning:
                deltas.append(ReasoningDelta(reasoning))
        content = delta.get("content")
        if isinstance(content, str) and content:
            deltas.append(TextDelta(content))
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            self._refused = True
            deltas.append(TextDelta(refusal))
        for fragment in delta.get("tool_calls") or []:
            deltas.append(self._tool_fragment(fragment))
        return deltas

    def _tool_fragment(self, fragment: Any) -> ToolCallDelta:
        if not isinstance(fragment, dict):
            raise GatewayError(f"{self.provider}: malformed stream: a tool call is not an object")
        function = fragment.get("function") or {}
        raw_index = fragment.get("index")
        provider_index = raw_index if isinstance(raw_index, int) else self._count
        call_id = json_str(fragment.get("id"))
        known = self._calls.get(provider_index)
        if known is None or (call_id and known[0] and call_id != known[0]):
            known = (call_id, self._count)
            self._calls[provider_index] = known
            self._count += 1
        elif call_id and not known[0]:
            self._calls[provider_index] = (call_id, known[1])
        return ToolCallDelta(
            index=known[1],
            id=call_id,
            name=json_str(function.get("name")),
            arguments=json_str(function.get("arguments")),
        )

    def close(self) -> list[StreamDelta]:
        """The closing usage and finish; a stream that never said why it stopped was cut off."""
        if self._finish is None:
            raise GatewayError(
                f"{self.provider}: stream ended before the response finished (no finish_reason)",
                transient=True,
            )
        finish = _FINISH.get(self._finish, "stop")
        if self._refused:
            finish = "refusal"
        elif self._count and finish == "stop":
            finish = "tool_calls"  # Ollama and others say "stop" after tool calls
        return [UsageDelta(self._usage), FinishDelta(finish)]


class OpenAIGateway(HttpGateway):
    """Chat Completions over SSE; the system prompt goes first as a `system` message."""

    gateway_type = GatewayType.openai
    default_base_url = DEFAULT_BASE_URL

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body sent for `request`."""
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.extend(self._codec.serialize(request.items))
        body: dict[str, Any] = {
            "model": request.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    },
                }
                for tool in request.tools
            ]
        if request.max_output_tokens is not None:
            body["max_tokens"] = request.max_output_tokens
        return body

    def _headers(self) -> dict[str, str]:
        headers = {"accept": "text/event-stream"}
        key = self._endpoint.api_key()
        if key:
            headers["authorization"] = f"Bearer {key}"
        return headers

    def _path(self, request: ModelRequest) -> str:
        return "chat/completions"

    def _reader(self) -> OpenAIStreamReader:
        return OpenAIStreamReader(self._endpoint.provider)
