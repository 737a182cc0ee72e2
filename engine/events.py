"""The session log's vocabulary: every event type, one pydantic model each, in one union.

A durable event is `{seq, time, type, data}`; writers build the payload (`TurnStart(turn=1)`) and the
`Session` wraps it with its seq and time. Live events (`assistant/delta`, ...) reach subscribers but are
never stored. Readers refuse an unknown type, naming it and its seq.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    TypeAdapter,
    ValidationError,
)

from engine.message import Message, Role, Source, ToolCall
from engine.privacy import PrivatizationLabel

SourceField = Annotated[
    Source,
    BeforeValidator(lambda v: Source.parse(v) if isinstance(v, str) else v),
    PlainSerializer(str, return_type=str),
]


class Scope(StrEnum):
    """Where an event may stand in the log (DESIGN.md, "Events")."""

    turn = "turn"  # only inside an open turn
    session = "session"  # anywhere
    live = "live"  # never stored


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# --- values carried inside payloads ---------------------------------------------------------------


class ToolCallData(_Model):
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, call: ToolCall) -> ToolCallData:
        return cls(id=call.id, name=call.name, arguments=dict(call.arguments))

    def to_call(self) -> ToolCall:
        return ToolCall(self.id, self.name, dict(self.arguments))


class MessageData(_Model):
    """A generic `Message` as the log stores it (area renders, promoted messages)."""

    role: Role
    content: str
    source: SourceField | None = None
    tool_calls: tuple[ToolCallData, ...] = ()
    tool_call_id: str = ""
    is_error: bool = False

    @classmethod
    def of(cls, message: Message) -> MessageData:
        return cls(
            role=message.role,
            content=message.content,
            source=message.source,
            tool_calls=tuple(ToolCallData.of(c) for c in message.tool_calls),
            tool_call_id=message.tool_call_id,
            is_error=message.is_error,
        )

    def to_message(self) -> Message:
        return Message(
            role=self.role,
            content=self.content,
            source=self.source,
            tool_calls=tuple(c.to_call() for c in self.tool_calls),
            tool_call_id=self.tool_call_id,
            is_error=self.is_error,
        )


class Usage(_Model):
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


class Figures(_Model):
    """The budget figures of one request (context-orchestration governors)."""

    chars: int = 0
    cap: int = 0
    groups_kept: int = 0
    groups_dropped: int = 0
    reserved: int = 0


class Attachment(_Model):
    """A file or resource the user attached to a prompt."""

    name: str
    uri: str = ""
    mime_type: str = "text/plain"
    text: str = ""


TurnEndReason = Literal[
    "completed",
    "cancelled",
    "error",
    "max_steps",
    "max_tokens",
    "refusal",
    "egress",
    "budget",
    "interrupted",
    "disposed",
]
Finish = Literal["stop", "tool_calls", "length", "refusal", "cancelled", "error"]
Decision = Literal["allow", "deny", "cancelled"]
RuleDecision = Literal["allow", "deny"]
AgentStatus = Literal["idle", "running"]


# --- payloads ---------------------------------------------------------------------------------------


class Payload(_Model):
    """The `data` of one event type."""

    event_type: ClassVar[str]
    scope: ClassVar[Scope]


class StepStart(Payload):
    event_type = "step/start"
    scope = Scope.turn
    turn: int
    step: int
    prefix_digest: str = ""
    floor: tuple[str, ...] = ()
    figures: Figures = Figures()


class StepEnd(Payload):
    event_type = "step/end"
    scope = Scope.turn
    turn: int
    step: int
    usage: Usage = Usage()


class AssistantMessage(Payload):
    event_type = "assistant/message"
    scope = Scope.turn
    turn: int
    step: int
    content: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCallData, ...] = ()
    model: str = ""
    usage: Usage = Usage()
    finish: Finish = "stop"
    provider_state: dict[str, Any] = Field(default_factory=dict)
    label: PrivatizationLabel | None = None


class ToolCallRecord(Payload):
    event_type = "tool/call"
    scope = Scope.turn
    turn: int
    step: int
    call_id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolResultRecord(Payload):
    event_type = "tool/result"
    scope = Scope.turn
    turn: int
    step: int
    call_id: str
    content: str
    is_error: bool = False
    label: PrivatizationLabel | None = None


class AreaRender(Payload):
    event_type = "area/render"
    scope = Scope.turn
    area: str
    messages: tuple[MessageData, ...]
    earliest: int
    latest: int
    label: PrivatizationLabel | None = None


class AreaCursor(Payload):
    event_type = "area/cursor"
    scope = Scope.turn
    area: str | None


class GcCollect(Payload):
    """One collection: Context indices reclaimed and carried, in the order they were detached."""

    event_type = "gc/collect"
    scope = Scope.turn
    areas: tuple[str, ...]
    earliest: int
    reclaimed: tuple[int, ...] = ()
    promoted: tuple[MessageData, ...] = ()
    carried: tuple[int, ...] = ()
    label: PrivatizationLabel | None = None  # of the promoted messages: what they stand for


class Retry(Payload):
    event_type = "retry"
    scope = Scope.turn
    turn: int
    step: int
    attempt: int
    reason: str


class PermissionDecision(Payload):
    event_type = "permission/decision"
    scope = Scope.turn
    call_id: str
    decision: Decision


class TurnStart(Payload):
    event_type = "turn/start"
    scope = Scope.turn
    turn: int


class TurnEnd(Payload):
    event_type = "turn/end"
    scope = Scope.turn
    turn: int
    reason: TurnEndReason
    message: str = ""


class UserMessage(Payload):
    """Direct user input (`source` is `user`) or injected context (any other source)."""

    event_type = "user/message"
    scope = Scope.session
    content: str
    source: SourceField = Source("user")
    original_content: str | None = None
    attachments: tuple[Attachment, ...] = ()
    label: PrivatizationLabel | None = None


class AreaRegister(Payload):
    event_type = "area/register"
    scope = Scope.session
    area: str
    kind: str = ""
    name: str = ""
    state: dict[str, Any] | None = None


class AreaState(Payload):
    event_type = "area/state"
    scope = Scope.session
    area: str
    life: Literal["retain", "retired"]
    flow: Literal["exclusive", "yielded"]
    state: dict[str, Any] | None = None


class FloorBlock(Payload):
    event_type = "floor/block"
    scope = Scope.session
    hash: str
    layer: int
    key: str
    text: str


class PinAdd(Payload):
    event_type = "pin/add"
    scope = Scope.session
    pin_id: str
    text: str


class PinRemove(Payload):
    event_type = "pin/remove"
    scope = Scope.session
    pin_id: str


class ModelBind(Payload):
    event_type = "model/bind"
    scope = Scope.session
    model: str
    grant_epoch: int


class PermissionRule(Payload):
    event_type = "permission/rule"
    scope = Scope.session
    tool: str
    decision: RuleDecision


class CompactStart(Payload):
    event_type = "compact/start"
    scope = Scope.session
    groups: int
    earliest: int


class CompactSummary(Payload):
    event_type = "compact/summary"
    scope = Scope.session
    content: str
    model: str = ""
    label: PrivatizationLabel | None = None


class CompactEnd(Payload):
    event_type = "compact/end"
    scope = Scope.session
    earliest: int
    reclaimed: tuple[int, ...] = ()
    carried: tuple[int, ...] = ()


class SessionTitle(Payload):
    event_type = "session/title"
    scope = Scope.session
    title: str


class AssistantDelta(Payload):
    event_type = "assistant/delta"
    scope = Scope.live
    turn: int
    step: int
    text: str = ""
    reasoning: str = ""


class AgentStatusChanged(Payload):
    event_type = "agent/status"
    scope = Scope.live
    status: AgentStatus


class AgentQueued(Payload):
    event_type = "agent/queued"
    scope = Scope.live
    messages: tuple[str, ...] = ()
    steering: tuple[str, ...] = ()


class AgentError(Payload):
    """A failure the user must hear about; `turn` is None when no turn was open (admission)."""

    event_type = "agent/error"
    scope = Scope.live
    turn: int | None
    message: str


class OutboxChanged(Payload):
    event_type = "outbox/changed"
    scope = Scope.live
    contexts: tuple[MessageData, ...] = ()
    steering: tuple[str, ...] = ()


class SteerDropped(Payload):
    event_type = "steer/dropped"
    scope = Scope.live
    text: str


# --- events ---------------------------------------------------------------------------------------


class Event(_Model):
    """A durable event: its place in the log (`seq`), its wall time, its type and its data."""

    seq: int
    time: float
    type: str = ""
    data: Payload


class LiveEvent(_Model):
    """A live-only event: reaches subscribers, never stored."""

    time: float
    type: str = ""
    data: Payload


class StepStartEvent(Event):
    type: Literal["step/start"] = "step/start"
    data: StepStart


class StepEndEvent(Event):
    type: Literal["step/end"] = "step/end"
    data: StepEnd


class AssistantMessageEvent(Event):
    type: Literal["assistant/message"] = "assistant/message"
    data: AssistantMessage


class ToolCallEvent(Event):
    type: Literal["tool/call"] = "tool/call"
    data: ToolCallRecord


class ToolResultEvent(Event):
    type: Literal["tool/result"] = "tool/result"
    data: ToolResultRecord


class AreaRenderEvent(Event):
    type: Literal["area/render"] = "area/render"
    data: AreaRender


class AreaCursorEvent(Event):
    type: Literal["area/cursor"] = "area/cursor"
    data: AreaCursor


class GcCollectEvent(Event):
    type: Literal["gc/collect"] = "gc/collect"
    data: GcCollect


class RetryEvent(Event):
    type: Literal["retry"] = "retry"
    data: Retry


class PermissionDecisionEvent(Event):
    type: Literal["permission/decision"] = "permission/decision"
    data: PermissionDecision


class TurnStartEvent(Event):
    type: Literal["turn/start"] = "turn/start"
    data: TurnStart


class TurnEndEvent(Event):
    type: Literal["turn/end"] = "turn/end"
    data: TurnEnd


class UserMessageEvent(Event):
    type: Literal["user/message"] = "user/message"
    data: UserMessage


class AreaRegisterEvent(Event):
    type: Literal["area/register"] = "area/register"
    data: AreaRegister


class AreaStateEvent(Event):
    type: Literal["area/state"] = "area/state"
    data: AreaState


class FloorBlockEvent(Event):
    type: Literal["floor/block"] = "floor/block"
    data: FloorBlock


class PinAddEvent(Event):
    type: Literal["pin/add"] = "pin/add"
    data: PinAdd


class PinRemoveEvent(Event):
    type: Literal["pin/remove"] = "pin/remove"
    data: PinRemove


class ModelBindEvent(Event):
    type: Literal["model/bind"] = "model/bind"
    data: ModelBind


class PermissionRuleEvent(Event):
    type: Literal["permission/rule"] = "permission/rule"
    data: PermissionRule


class CompactStartEvent(Event):
    type: Literal["compact/start"] = "compact/start"
    data: CompactStart


class CompactSummaryEvent(Event):
    type: Literal["compact/summary"] = "compact/summary"
    data: CompactSummary


class CompactEndEvent(Event):
    type: Literal["compact/end"] = "compact/end"
    data: CompactEnd


class SessionTitleEvent(Event):
    type: Literal["session/title"] = "session/title"
    data: SessionTitle


class AssistantDeltaEvent(LiveEvent):
    type: Literal["assistant/delta"] = "assistant/delta"
    data: AssistantDelta


class AgentStatusEvent(LiveEvent):
    type: Literal["agent/status"] = "agent/status"
    data: AgentStatusChanged


class AgentQueuedEvent(LiveEvent):
    type: Literal["agent/queued"] = "agent/queued"
    data: AgentQueued


class AgentErrorEvent(LiveEvent):
    type: Literal["agent/error"] = "agent/error"
    data: AgentError


class OutboxChangedEvent(LiveEvent):
    type: Literal["outbox/changed"] = "outbox/changed"
    data: OutboxChanged


class SteerDroppedEvent(LiveEvent):
    type: Literal["steer/dropped"] = "steer/dropped"
    data: SteerDropped


AnyDurableEvent = Annotated[
    StepStartEvent
    | StepEndEvent
    | AssistantMessageEvent
    | ToolCallEvent
    | ToolResultEvent
    | AreaRenderEvent
    | AreaCursorEvent
    | GcCollectEvent
    | RetryEvent
    | PermissionDecisionEvent
    | TurnStartEvent
    | TurnEndEvent
    | UserMessageEvent
    | AreaRegisterEvent
    | AreaStateEvent
    | FloorBlockEvent
    | PinAddEvent
    | PinRemoveEvent
    | ModelBindEvent
    | PermissionRuleEvent
    | CompactStartEvent
    | CompactSummaryEvent
    | CompactEndEvent
    | SessionTitleEvent,
    Field(discriminator="type"),
]
AnyLiveEvent = Annotated[
    AssistantDeltaEvent
    | AgentStatusEvent
    | AgentQueuedEvent
    | AgentErrorEvent
    | OutboxChangedEvent
    | SteerDroppedEvent,
    Field(discriminator="type"),
]

_DURABLE_CLASSES: tuple[type[Event], ...] = (
    StepStartEvent,
    StepEndEvent,
    AssistantMessageEvent,
    ToolCallEvent,
    ToolResultEvent,
    AreaRenderEvent,
    AreaCursorEvent,
    GcCollectEvent,
    RetryEvent,
    PermissionDecisionEvent,
    TurnStartEvent,
    TurnEndEvent,
    UserMessageEvent,
    AreaRegisterEvent,
    AreaStateEvent,
    FloorBlockEvent,
    PinAddEvent,
    PinRemoveEvent,
    ModelBindEvent,
    PermissionRuleEvent,
    CompactStartEvent,
    CompactSummaryEvent,
    CompactEndEvent,
    SessionTitleEvent,
)
_LIVE_CLASSES: tuple[type[LiveEvent], ...] = (
    AssistantDeltaEvent,
    AgentStatusEvent,
    AgentQueuedEvent,
    AgentErrorEvent,
    OutboxChangedEvent,
    SteerDroppedEvent,
)


def _payload_of(cls: type[Event] | type[LiveEvent]) -> type[Payload]:
    annotation = cls.model_fields["data"].annotation
    assert isinstance(annotation, type)
    assert issubclass(annotation, Payload)
    return annotation


DURABLE_EVENT_CLASSES: dict[type[Payload], type[Event]] = {
    _payload_of(c): c for c in _DURABLE_CLASSES
}
LIVE_EVENT_CLASSES: dict[type[Payload], type[LiveEvent]] = {
    _payload_of(c): c for c in _LIVE_CLASSES
}
EVENT_TYPES: frozenset[str] = frozenset(p.event_type for p in DURABLE_EVENT_CLASSES)
LIVE_EVENT_TYPES: frozenset[str] = frozenset(p.event_type for p in LIVE_EVENT_CLASSES)
_BY_TYPE: dict[str, type[Event]] = {p.event_type: c for p, c in DURABLE_EVENT_CLASSES.items()}

DurableEventAdapter: TypeAdapter[Event] = TypeAdapter(AnyDurableEvent)
LiveEventAdapter: TypeAdapter[LiveEvent] = TypeAdapter(AnyLiveEvent)


class UnknownEventTypeError(ValueError):
    """A reader met a type it does not know; it names the type and the seq."""

    def __init__(self, event_type: object, seq: object) -> None:
        self.event_type = event_type
        self.seq = seq
        super().__init__(f"unknown event type {event_type!r} at seq {seq}")


class EventDecodeError(ValueError):
    """A stored or received event does not match its type's model."""


def make_event(payload: Payload, seq: int, time: float) -> Event:
    """Wrap a durable payload with its place in the log."""
    cls = DURABLE_EVENT_CLASSES.get(type(payload))
    if cls is None:
        raise TypeError(f"{type(payload).__name__} is not a durable event payload")
    return cls(seq=seq, time=time, data=payload)


def make_live_event(payload: Payload, time: float) -> LiveEvent:
    cls = LIVE_EVENT_CLASSES.get(type(payload))
    if cls is None:
        raise TypeError(f"{type(payload).__name__} is not a live event payload")
    return cls(time=time, data=payload)


def event_class(event_type: str, seq: object = "?") -> type[Event]:
    """The durable event class of a type name; raises `UnknownEventTypeError` for any other."""
    cls = _BY_TYPE.get(event_type)
    if cls is None:
        raise UnknownEventTypeError(event_type, seq)
    return cls


def decode_event(raw: dict[str, Any]) -> Event:
    """A durable event from its JSON object; unknown types and bad data raise with the seq."""
    seq = raw.get("seq", "?")
    cls = event_class(str(raw.get("type")), seq)
    try:
        return cls.model_validate(raw)
    except ValidationError as exc:
        raise EventDecodeError(
            f"invalid {cls.model_fields['type'].default} event at seq {seq}: {exc}"
        ) from exc


def decode_event_json(text: str | bytes) -> Event:
    """Like `decode_event`, from JSON text; the fast path validates in one pass."""
    import json

    try:
        raw = json.loads(text)
    except ValueError as exc:  # malformed JSON or bytes that are not UTF-8
        raise EventDecodeError(f"an event must be JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise EventDecodeError(f"an event must be a JSON object, got {type(raw).__name__}")
    return decode_event(raw)


def decode_row(seq: int, time: float, event_type: str, data_json: str | bytes) -> Event:
    """An event from a store row (`data` as JSON): the type is checked first, then the data."""
    cls = event_class(event_type, seq)
    payload_cls = _payload_of(cls)
    try:
        payload = payload_cls.model_validate_json(data_json)
    except ValidationError as exc:
        raise EventDecodeError(f"invalid {event_type} event at seq {seq}: {exc}") from exc
    return cls.model_construct(seq=seq, time=time, type=event_type, data=payload)


def encode_event(event: Event) -> str:
    return event.model_dump_json()


def encode_data(event: Event | LiveEvent) -> str:
    return event.data.model_dump_json()


def is_turn_level(event: Event) -> bool:
    return event.data.scope is Scope.turn
