"""Google's Gemini API, natively: thought summaries, complete function calls, thought signatures.

Gemini sends each function call whole, often without an id; the engine needs an id to pair the
call with its result, and the codec keys the call's thought signature by that id when it sends
the call back, so the reader gives every id-less call a fresh unique id. Signatures are collected
and emitted as one `ProviderStateDelta` (`{"thought_signatures": {"text" | call id: signature}}`,
the shape the Gemini codec reads), then one `UsageDelta` (totals) and one `FinishDelta`.
"""

from __future__ import annotations

import json
import uuid
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
from engine.gateway.deadlines import StreamDeadlines
from engine.gateway.http import (
    HttpGateway,
    SseEvent,
    json_int,
    json_str,
    parse_json_event,
    stream_error,
)
from engine.redaction import Redactor

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
SIGNATURES_STATE_KEY = "thought_signatures"
TEXT_SIGNATURE_KEY = "text"

_FINISH: dict[str, Finish] = {
    "STOP": "stop",
    "FINISH_REASON_UNSPECIFIED": "stop",
    "OTHER": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "refusal",
    "RECITATION": "refusal",
    "LANGUAGE": "refusal",
    "BLOCKLIST": "refusal",
    "PROHIBITED_CONTENT": "refusal",
    "SPII": "refusal",
    "IMAGE_SAFETY": "refusal",
    "MALFORMED_FUNCTION_CALL": "error",
    "UNEXPECTED_TOOL_CALL": "error",
}


def _usage(usage: dict[str, Any]) -> Usage:
    """The parts of the prompt count: `promptTokenCount` (with `toolUsePromptTokenCount`, the
    input of tool use) includes `cachedContentTokenCount`, read from the cache; thoughts are
    output."""
    prompt = json_int(usage.get("promptTokenCount")) + json_int(
        usage.get("toolUsePromptTokenCount")
    )
    cached = min(json_int(usage.get("cachedContentTokenCount")), prompt)
    return Usage(
        input_tokens=prompt - cached,
        cache_read_tokens=cached,
        output_tokens=json_int(usage.get("candidatesTokenCount"))
        + json_int(usage.get("thoughtsTokenCount")),
    )


class GeminiStreamReader:
    """`streamGenerateContent?alt=sse` chunks (each a GenerateContentResponse) to deltas."""

    def __init__(self, provider: str = "gemini") -> None:
        self.provider = provider
        self.done = False  # Gemini streams end with the connection, not a terminal event
        self._usage = Usage()
        self._finish: str | None = None
        self._calls = 0
        self._signatures: dict[str, str] = {}

    def feed(self, event: SseEvent) -> list[StreamDelta]:
        chunk = parse_json_event(self.provider, event)
        if "error" in chunk:
            raise stream_error(self.provider, chunk["error"])
        usage = chunk.get("usageMetadata")
        if isinstance(usage, dict):  # cumulative in every chunk; the last one is the total
            self._usage = _usage(usage)
        feedback = chunk.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            self._finish = "SAFETY"
        candidates = chunk.get("candidates") or []
        if not isinstance(candidates, list):
            raise GatewayError(f"{self.provider}: malformed stream: `candidates` is not a list")
        if not candidates:
            return []
        candidate = candidates[0]
        if not isinstance(candidate, dict):
            raise GatewayError(f"{self.provider}: malformed stream: a candidate is not an object")
        reason = candidate.get("finishReason")
        if isinstance(reason, str) and reason:
            self._finish = reason
        content = candidate.get("content") or {}
        parts = content.get("parts") if isinstance(content, dict) else None
        deltas: list[StreamDelta] = []
        for part in parts or []:
            if not isinstance(part, dict):
                raise GatewayError(f"{self.provider}: malformed stream: a part is not an object")
            deltas.extend(self._part_deltas(part))
        return deltas

    def _part_deltas(self, part: dict[str, Any]) -> list[StreamDelta]:
        signature = json_str(part.get("thoughtSignature"))
        call = part.get("functionCall")
        if isinstance(call, dict):
            name = json_str(call.get("name"))
            if not name:
                raise GatewayError(f"{self.provider}: malformed stream: a functionCall has no name")
            call_id = json_str(call.get("id")) or f"call_{uuid.uuid4().hex[:24]}"
            if signature:
                self._signatures[call_id] = signature
            index = self._calls
            self._calls += 1
            args = call.get("args")
            arguments = json.dumps(args if isinstance(args, dict) else {}, ensure_ascii=False)
            return [ToolCallDelta(index=index, id=call_id, name=name, arguments=arguments)]
        if signature:
            self._signatures[TEXT_SIGNATURE_KEY] = signature
        text = json_str(part.get("text"))
        if not text:
            return []
        return [ReasoningDelta(text) if part.get("thought") else TextDelta(text)]

    def close(self) -> list[StreamDelta]:
        """The signatures, usage and finish; a stream without a finishReason was cut off."""
        if self._finish is None:
            raise GatewayError(
                f"{self.provider}: stream ended before the response finished (no finishReason)",
                transient=True,
            )
        finish = _FINISH.get(self._finish, "stop")
        if self._calls and finish == "stop":
            finish = "tool_calls"  # Gemini says STOP after function calls
        deltas: list[StreamDelta] = []
        if self._signatures:
            deltas.append(ProviderStateDelta({SIGNATURES_STATE_KEY: dict(self._signatures)}))
        deltas.append(UsageDelta(self._usage))
        deltas.append(FinishDelta(finish))
        return deltas


class GeminiGateway(HttpGateway):
    """`models/{model}:streamGenerateContent` over SSE; the key goes in `x-goog-api-key`."""

    gateway_type = GatewayType.gemini
    default_base_url = DEFAULT_BASE_URL

    def __init__(
        self,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key_env: str = "GEMINI_API_KEY",
        timeout: float = DEFAULT_TIMEOUT,
        deadlines: StreamDeadlines | None = None,
        redactor: Redactor | None = None,
        provider_name: str = "gemini",
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

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body sent for `request`.

        Tool schemas go in `parametersJsonSchema` (full JSON Schema), because the older
        `parameters` field takes only an OpenAPI subset and refuses `$defs`, titles and the like.
        """
        body: dict[str, Any] = {"contents": self._codec.serialize(request.items)}
        if request.system:
            body["systemInstruction"] = {"parts": [{"text": request.system}]}
        if request.tools:
            body["tools"] = [
                {
                    "functionDeclarations": [
                        {
                            "name": t.name,
                            "description": t.description,
                            "parametersJsonSchema": t.parameters,
                        }
                        for t in request.tools
                    ]
                }
            ]
        if request.max_output_tokens is not None:
            body["generationConfig"] = {"maxOutputTokens": request.max_output_tokens}
        return body

    def _headers(self) -> dict[str, str]:
        headers = {"accept": "text/event-stream"}
        key = self._endpoint.api_key()
        if key:
            headers["x-goog-api-key"] = key
        return headers

    def _path(self, request: ModelRequest) -> str:
        model = request.model.removeprefix("models/")
        return f"models/{model}:streamGenerateContent?alt=sse"

    def _reader(self) -> GeminiStreamReader:
        return GeminiStreamReader(self._endpoint.provider)
