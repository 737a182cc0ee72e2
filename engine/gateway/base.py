"""What every model gateway is: a codec for its native items and a stream of deltas.

A gateway converts generic messages to provider-native items (one item per message, per assistant
message with its tool calls, per tool result), serializes a request from them, and streams the answer
as deltas. Nothing here knows a front end.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from engine.errors import TrellisError
from engine.events import Finish, Usage
from engine.message import Message, ToolCall, ToolResult


class GatewayType(StrEnum):
    scripted = "scripted"
    openai = "openai"
    gemini = "gemini"
    anthropic = "anthropic"


DEFAULT_TIMEOUT = 120.0
"""Seconds to connect and send a model request before it counts as a (transient) timeout; the
response is bounded by the stream deadlines (`engine/gateway/deadlines.py`)."""

NativeContent = dict[str, Any]
"""One provider-native item, JSON-shaped (an OpenAI message, a Gemini content, ...)."""


class Codec(Protocol):
    """Generic messages to native items and back; request serialization merges where required."""

    @property
    def gateway_type(self) -> GatewayType: ...

    def encode_message(self, message: Message) -> NativeContent: ...

    def encode_assistant(
        self,
        content: str,
        tool_calls: Sequence[ToolCall] = (),
        *,
        reasoning: str = "",
        provider_state: Mapping[str, Any] | None = None,
    ) -> NativeContent: ...

    def encode_tool_result(self, result: ToolResult, *, name: str) -> NativeContent: ...

    def decode(self, item: NativeContent) -> Message: ...

    def serialize(self, items: Sequence[NativeContent]) -> list[dict[str, Any]]: ...


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it. `schema` is its JSON schema, or what builds it: a built-in
    tool's schema comes from its argument model, built when a gateway first reads `parameters`
    (the scripted model never does, so a run on it builds none)."""

    name: str
    description: str
    schema: dict[str, Any] | Callable[[], dict[str, Any]]

    @property
    def parameters(self) -> dict[str, Any]:
        return self.schema() if callable(self.schema) else self.schema


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequest:
    """One request as a gateway sends it: the model, the system text, the items, the tools."""

    model: str
    system: str = ""
    items: tuple[NativeContent, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    max_output_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class TextDelta:
    """Reply text as it streams."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """Reasoning text as it streams."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A fragment of the tool call at `index`; `id` and `name` arrive once, arguments in pieces."""

    index: int
    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class UsageDelta:
    """The tokens the provider reports for the request."""

    usage: Usage


@dataclass(frozen=True, slots=True)
class FinishDelta:
    """Why the response ended."""

    finish: Finish


@dataclass(frozen=True, slots=True)
class ProviderStateDelta:
    """Opaque provider data the next request must send back (thought or thinking signatures)."""

    state: dict[str, Any] = field(default_factory=dict)


StreamDelta = (
    TextDelta | ReasoningDelta | ToolCallDelta | UsageDelta | FinishDelta | ProviderStateDelta
)


class GatewayError(TrellisError):
    """A model call failed; `transient` ones (timeouts, 429, 5xx) may be retried."""

    def __init__(self, message: str, *, transient: bool = False, status: int | None = None) -> None:
        super().__init__(message)
        self.transient = transient
        self.status = status


class Gateway(Protocol):
    @property
    def gateway_type(self) -> GatewayType: ...

    @property
    def codec(self) -> Codec: ...

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamDelta]: ...

    async def aclose(self) -> None: ...
