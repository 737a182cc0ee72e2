"""A session's log as OpenTelemetry GenAI spans: one `invoke_agent` span per turn, one `chat` span
per step (the model call) and one `execute_tool` span per tool call, children of their turn's.

The conventions followed are `open-telemetry/semantic-conventions-genai` as docs/DESIGN-NOTES.md
names them ("Traces"). This module imports no OpenTelemetry package: it turns events into
`SpanRecord`s, which `replay.otlp` hands to the SDK. Live telemetry and `trellis export --format
otlp` feed the same projection, and ids come from the session id and the seq of the event that
opens a span, so a session sent live and exported later gives the same trace.

Span times are the events' times. Content (`gen_ai.input.messages`, `gen_ai.output.messages`,
`gen_ai.system_instructions`, tool arguments and results) is recorded only with `capture_content`,
and from events redacted to `max_class` as exports redact them (`replay.redaction`). A `chat`
span's input is the whole request the model was given (its floor as system instructions, every
Context item it carried, in order), read from the request view live (`Agent.last_assembly`) and
from the `Timeline` for a stored log; each item above `max_class` is a marker.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.agent.views import AssemblyView, RequestItemView
from engine.events import (
    AssistantMessage,
    Event,
    FloorBlock,
    ModelBind,
    StepEnd,
    StepStart,
    ToolCallRecord,
    ToolResultRecord,
    TurnEnd,
    TurnStart,
    Usage,
    UserMessage,
)
from engine.gateway.base import GatewayType
from engine.privacy import PrivacyClass, PrivatizationLabel
from replay.redaction import redact, redacted_text
from replay.timeline import Timeline

AttributeValue = str | int | float | bool | tuple[str, ...]
SpanKind = Literal["internal", "client"]

AGENT_NAME = "Trellis"
"""`gen_ai.agent.name`: the agent every turn invokes."""
UNKNOWN_PROVIDER = "unknown"
"""`gen_ai.provider.name` of a model entry the configuration no longer defines."""

PROVIDER_NAMES: Mapping[str, str] = {
    "openai": "openai",
    "anthropic": "anthropic",
    "gemini": "gcp.gemini",
    "scripted": "trellis.scripted",
}
"""A model entry's `provider` as the conventions' well-known `gen_ai.provider.name` values name it
(the scripted model is Trellis's own, so a custom value)."""

_FINISH_REASONS: Mapping[str, str] = {"tool_calls": "tool_call", "refusal": "content_filter"}
"""Trellis's `finish` in the output-message schema's words, where they differ."""


@dataclass(frozen=True, slots=True)
class ModelEndpoint:
    """What a model entry names: the provider (`gen_ai.provider.name`) and the model as requests
    name it (`gen_ai.request.model`)."""

    provider: str
    model: str


ModelResolver = Callable[[str], ModelEndpoint]
"""A `model/bind`'s entry name to its endpoint."""
RequestOf = Callable[[Event], "AssemblyView | None"]
"""The request a `step/start` sent, as the inspector shows it (None: not known)."""


def resolver_of(models: Mapping[str, Any]) -> ModelResolver:
    """A resolver over configured entries (`Config.models`: each with `provider` and `model`); an
    entry it does not know keeps its name as the model and an unknown provider."""

    def resolve(name: str) -> ModelEndpoint:
        entry = models.get(name)
        if entry is None:
            return ModelEndpoint(UNKNOWN_PROVIDER, name)
        return ModelEndpoint(
            PROVIDER_NAMES.get(entry.provider, entry.provider), entry.model or name
        )

    return resolve


@dataclass(frozen=True, slots=True, kw_only=True)
class SpanRecord:
    """One finished span, ready for an OTLP exporter; `error` is `error.type` (status ERROR)."""

    name: str
    kind: SpanKind
    trace_id: int
    span_id: int
    parent_id: int | None
    start_ns: int
    end_ns: int
    attributes: Mapping[str, AttributeValue]
    error: str | None = None


def _id(bits: int, *parts: object) -> int:
    """A stable, non-zero id from the parts (the conventions need ids, not secrets)."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[: bits // 8], "big") or 1


def _ns(seconds: float) -> int:
    return round(seconds * 1_000_000_000)


def _usage_attributes(usage: Usage) -> dict[str, AttributeValue]:
    """The conventions' usage attributes: `input_tokens` is every input token, cached included."""
    if not (usage.prompt_tokens or usage.output_tokens):
        return {}  # the provider reported none
    return {
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
    }


def _text_message(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


@dataclass(slots=True)
class _Chat:
    span_id: int
    start_ns: int
    model: str
    inputs: list[dict[str, Any]]
    system: list[dict[str, Any]]
    replied_ns: int | None = None
    reply: AssistantMessage | None = None


@dataclass(slots=True)
class _Tool:
    span_id: int
    start_ns: int
    call: ToolCallRecord


@dataclass(slots=True)
class _Turn:
    number: int
    trace_id: int
    span_id: int
    start_ns: int
    endpoint: ModelEndpoint
    steps: int = 0
    inputs: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    output: AssistantMessage | None = None
    chat: _Chat | None = None
    tools: dict[str, _Tool] = field(default_factory=dict)


class TraceProjection:
    """Events in log order to finished spans (`replay/projection.py`'s contract): `apply` returns
    the spans an event finished, children before their turn's; `snapshot` all so far."""

    def __init__(
        self,
        conversation_id: str,
        resolve: ModelResolver,
        *,
        capture_content: bool = False,
        max_class: PrivacyClass | None = None,
        bound: str = "",
        request_of: RequestOf | None = None,
    ) -> None:
        """`bound` is the model entry bound before the first event applied (a resumed session's
        `model/bind` lies in the part of the log not followed); `request_of` gives the request of
        a `step/start` for the `chat` span's content (without it, the messages since the last
        call)."""
        self.conversation_id = conversation_id
        self._resolve = resolve
        self._capture = capture_content
        self._max_class = max_class
        self._request_of = request_of
        self._bound = bound
        self._floor: dict[str, str] = {}
        self._pending: list[dict[str, Any]] = []
        """What entered the conversation since the last model call: the next chat's input."""
        self._turn: _Turn | None = None
        self._finished: list[SpanRecord] = []

    def snapshot(self) -> tuple[SpanRecord, ...]:
        return tuple(self._finished)

    def apply(self, event: Event) -> tuple[SpanRecord, ...]:
        before = len(self._finished)
        self._follow(redact(event, self._max_class) if self._capture else event)
        if self._capture and self._request_of is not None and type(event.data) is StepStart:
            chat = self._turn.chat if self._turn is not None else None
            request = self._request_of(event)
            if chat is not None and request is not None:
                chat.system = [self._part(b.text, b.label) for b in request.floor]
                chat.inputs = [self._request_message(item) for item in request.items]
        return tuple(self._finished[before:])

    def close(self, at: float) -> tuple[SpanRecord, ...]:
        """End a turn the log leaves open (a stored session whose process died), as unfinished."""
        before = len(self._finished)
        if self._turn is not None:
            self._end_turn(self._turn, _ns(at), "unfinished")
        return tuple(self._finished[before:])

    # --- events ------------------------------------------------------------------------------------

    def _follow(self, event: Event) -> None:
        data, at = event.data, _ns(event.time)
        turn = self._turn
        match data:
            case ModelBind(model=model):
                self._bound = model
            case FloorBlock(hash=digest, text=text) if self._capture:
                self._floor[digest] = text
            case TurnStart(turn=number):
                key = (self.conversation_id, number)
                self._turn = _Turn(
                    number=number,
                    trace_id=_id(128, *key),
                    span_id=_id(64, *key, event.seq),
                    start_ns=at,
                    endpoint=self._resolve(self._bound),
                )
            case UserMessage(content=content) if self._capture:
                message = _text_message("user", content)
                self._pending.append(message)
                if turn is not None and not turn.steps:
                    turn.inputs.append(message)  # the turn's prompt and what came with it
            case StepStart(floor=floor) if turn is not None:
                system = [
                    {"type": "text", "content": self._floor[h]} for h in floor if h in self._floor
                ]
                span_id = _id(64, self.conversation_id, event.seq)
                turn.steps += 1
                turn.chat = _Chat(span_id, at, turn.endpoint.model, self._pending, system)
                self._pending = []
            case AssistantMessage() if turn is not None and turn.chat is not None:
                turn.chat.replied_ns, turn.chat.reply = at, data
                turn.chat.model = data.model or turn.chat.model
                turn.output = data
                if self._capture:
                    self._pending.append(self._output_message(data))
            case ToolCallRecord(call_id=call_id) if turn is not None:
                span_id = _id(64, self.conversation_id, event.seq)
                turn.tools[call_id] = _Tool(span_id, at, data)
            case ToolResultRecord(call_id=call_id) if turn is not None:
                tool = turn.tools.pop(call_id, None)
                if tool is not None:
                    self._end_tool(turn, tool, at, data)
                if self._capture:
                    part = {"type": "tool_call_response", "id": call_id, "response": data.content}
                    self._pending.append({"role": "tool", "parts": [part]})
            case StepEnd(usage=usage, cost=cost) if turn is not None and turn.chat is not None:
                extra: dict[str, AttributeValue] = {}
                if cost is not None:
                    extra = {
                        "trellis.cost.amount": cost.amount,
                        "trellis.cost.currency": cost.currency,
                    }
                turn.usage = turn.usage + usage
                self._end_chat(turn, turn.chat, at, usage, extra, None)
            case TurnEnd(reason=reason) if turn is not None:
                self._end_turn(turn, at, reason)
            case _:
                pass

    # --- spans ---------------------------------------------------------------------------------------

    def _common(self, operation: str, endpoint: ModelEndpoint) -> dict[str, AttributeValue]:
        return {
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": endpoint.provider,
            "gen_ai.conversation.id": self.conversation_id,
        }

    def _end_chat(
        self,
        turn: _Turn,
        chat: _Chat,
        at: int,
        usage: Usage,
        extra: Mapping[str, AttributeValue],
        error: str | None,
    ) -> None:
        turn.chat = None
        reply = chat.reply
        attributes = self._common("chat", turn.endpoint)
        attributes["gen_ai.request.model"] = chat.model
        if reply is not None:
            attributes["gen_ai.response.finish_reasons"] = (self._finish(reply),)
        attributes.update(_usage_attributes(usage))
        attributes.update(extra)
        if self._capture:
            if chat.system:
                attributes["gen_ai.system_instructions"] = _json(chat.system)
            attributes["gen_ai.input.messages"] = _json(chat.inputs)
            if reply is not None:
                attributes["gen_ai.output.messages"] = _json([self._output_message(reply)])
        self._finished.append(
            SpanRecord(
                name=f"chat {chat.model}",
                kind="client",
                trace_id=turn.trace_id,
                span_id=chat.span_id,
                parent_id=turn.span_id,
                start_ns=chat.start_ns,
                end_ns=chat.replied_ns if chat.replied_ns is not None else at,
                attributes=attributes,
                error=error if error is not None else self._reply_error(reply),
            )
        )

    def _end_tool(self, turn: _Turn, tool: _Tool, at: int, result: ToolResultRecord | None) -> None:
        call = tool.call
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.conversation.id": self.conversation_id,
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.call_id,
            "gen_ai.tool.type": "function",
        }
        if self._capture:
            attributes["gen_ai.tool.call.arguments"] = _json(call.arguments)
            if result is not None and not result.is_error:
                attributes["gen_ai.tool.call.result"] = result.content
        error = "unfinished" if result is None else "tool_error" if result.is_error else None
        self._finished.append(
            SpanRecord(
                name=f"execute_tool {call.name}",
                kind="internal",
                trace_id=turn.trace_id,
                span_id=tool.span_id,
                parent_id=turn.span_id,
                start_ns=tool.start_ns,
                end_ns=at,
                attributes=attributes,
                error=error,
            )
        )

    def _end_turn(self, turn: _Turn, at: int, reason: str) -> None:
        if turn.chat is not None:  # the step never ended: its call failed or was cut short
            self._end_chat(turn, turn.chat, at, Usage(), {}, reason)
        for tool in turn.tools.values():
            self._end_tool(turn, tool, at, None)
        self._turn = None
        attributes = self._common("invoke_agent", turn.endpoint)
        attributes["gen_ai.agent.name"] = AGENT_NAME
        attributes["gen_ai.request.model"] = turn.endpoint.model
        attributes["trellis.turn"] = turn.number
        attributes["trellis.turn.end_reason"] = reason
        attributes.update(_usage_attributes(turn.usage))
        if self._capture:
            attributes["gen_ai.input.messages"] = _json(turn.inputs)
            if turn.output is not None:
                attributes["gen_ai.output.messages"] = _json([self._output_message(turn.output)])
        self._finished.append(
            SpanRecord(
                name=f"invoke_agent {AGENT_NAME}",
                kind="internal",
                trace_id=turn.trace_id,
                span_id=turn.span_id,
                parent_id=None,
                start_ns=turn.start_ns,
                end_ns=at,
                attributes=attributes,
                error=reason if reason in ("error", "unfinished") else None,
            )
        )

    def _hidden(self, label: PrivatizationLabel) -> bool:
        return self._max_class is not None and label.cls > self._max_class

    def _part(self, text: str, label: PrivatizationLabel) -> dict[str, Any]:
        return {
            "type": "text",
            "content": redacted_text(label.cls) if self._hidden(label) else text,
        }

    def _request_message(self, item: RequestItemView) -> dict[str, Any]:
        """A Context item (its JSON as sent) in the conventions' message form."""
        data = json.loads(item.text)
        role = str(data.get("role") or "user")
        hidden = self._hidden(item.label)
        marker = redacted_text(item.label.cls)
        content = data.get("content")
        text = content if isinstance(content, str) else _json(content) if content else ""
        if role == "tool":
            response = marker if hidden else text
            call_id = str(data.get("tool_call_id") or "")
            part = {"type": "tool_call_response", "id": call_id, "response": response}
            return {"role": role, "parts": [part]}
        parts: list[dict[str, Any]] = []
        if text:
            parts.append({"type": "text", "content": marker if hidden else text})
        for call in data.get("tool_calls") or ():
            arguments = {} if hidden else call.get("arguments", {})
            parts.append(
                {
                    "type": "tool_call",
                    "id": call.get("id", ""),
                    "name": call.get("name", ""),
                    "arguments": arguments,
                }
            )
        return {"role": role, "parts": parts}

    @staticmethod
    def _finish(reply: AssistantMessage) -> str:
        return _FINISH_REASONS.get(reply.finish, reply.finish)

    @staticmethod
    def _reply_error(reply: AssistantMessage | None) -> str | None:
        return "error" if reply is not None and reply.finish == "error" else None

    def _output_message(self, reply: AssistantMessage) -> dict[str, Any]:
        parts: list[dict[str, Any]] = []
        if reply.reasoning:
            parts.append({"type": "reasoning", "content": reply.reasoning})
        if reply.content:
            parts.append({"type": "text", "content": reply.content})
        parts.extend(
            {"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments}
            for c in reply.tool_calls
        )
        return {"role": "assistant", "parts": parts, "finish_reason": self._finish(reply)}


def spans_of(
    events: list[Event] | tuple[Event, ...],
    conversation_id: str,
    resolve: ModelResolver,
    *,
    capture_content: bool = False,
    max_class: PrivacyClass | None = None,
    gateway_type: GatewayType = GatewayType.scripted,
) -> tuple[SpanRecord, ...]:
    """Every span of a stored log, a turn it leaves open ended at its last event; with content,
    each request rebuilt by a `Timeline` in `gateway_type`'s wire shape."""
    timeline = Timeline(gateway_type) if capture_content else None
    projection = TraceProjection(
        conversation_id,
        resolve,
        capture_content=capture_content,
        max_class=max_class,
        request_of=None if timeline is None else (lambda event: timeline.request_at(event.seq)),
    )
    for event in events:
        if timeline is not None:
            timeline.apply(event)
        projection.apply(event)
    if events:
        projection.close(events[-1].time)
    return projection.snapshot()
