"""The session log's vocabulary: every event type, declared once, one pydantic model each.

A payload class declares its type string and its scope in its class statement
(`class TurnStart(Payload, event="turn/start", scope=Scope.turn)`); the registry, the type sets and
the decoders are derived from those declarations. A durable event is `{seq, time, type, data}`;
writers build the payload and the `Session` wraps it with its seq and time. Live events
(`assistant/delta`, ...) reach subscribers with `after_seq`, the seq of the last durable event
before them, and are never stored. Readers refuse an unknown type, naming it and its seq.

No `from __future__ import annotations` here: pydantic would turn each of the ~45 models' string
annotations into a `typing.ForwardRef`, which compiles it, and then evaluate it; written as
objects they are taken as they are, which keeps start-up short (docs/DESIGN-NOTES.md).
A name used before its class is defined is quoted.
"""

import json
from collections.abc import Callable, Iterable, Mapping
from enum import StrEnum
from functools import lru_cache
from types import MappingProxyType
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    SerializeAsAny,
    ValidationError,
    WithJsonSchema,
    model_validator,
)

from engine.message import Message, Role, Source, ToolCall
from engine.permission_mode import PermissionMode
from engine.privacy import PrivacyClass, PrivatizationLabel


@lru_cache(maxsize=1024)
def _parsed_source(text: str) -> Source:
    """`Source.parse`, remembered: a log names a few sources over and over, and a `Source` is
    frozen, so one value serves every event that names it (decoding a log parses each)."""
    return Source.parse(text)


SourceField = Annotated[
    Source,
    BeforeValidator(lambda v: _parsed_source(v) if isinstance(v, str) else v),
    PlainSerializer(str, return_type=str),
]
ClassField = Annotated[
    PrivacyClass,
    BeforeValidator(lambda v: PrivacyClass.parse(v) if isinstance(v, str | int) else v),
    PlainSerializer(lambda c: c.name, return_type=str),
    WithJsonSchema({"type": "string", "enum": [c.name for c in PrivacyClass]}),
]


class Scope(StrEnum):
    """Where an event may stand in the log (docs/ARCHITECTURE.md, the one event log)."""

    turn = "turn"  # only inside an open turn
    session = "session"  # anywhere
    live = "live"  # never stored


class _Model(BaseModel):
    # built on first use: a command that decodes no event never pays for the ~45 schemas
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


# --- values carried inside payloads ---------------------------------------------------------------


class MessageData(_Model):
    """A generic `Message` as the log stores it (area renders, promoted messages)."""

    role: Role
    content: str
    source: SourceField | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""
    is_error: bool = False

    @classmethod
    def of(cls, message: Message) -> "MessageData":
        return cls(
            role=message.role,
            content=message.content,
            source=message.source,
            tool_calls=message.tool_calls,
            tool_call_id=message.tool_call_id,
            is_error=message.is_error,
        )

    def to_message(self) -> Message:
        return Message(
            role=self.role,
            content=self.content,
            source=self.source,
            tool_calls=self.tool_calls,
            tool_call_id=self.tool_call_id,
            is_error=self.is_error,
        )


class Usage(_Model):
    """The tokens of one step, in parts that do not overlap, one definition across providers:
    `input_tokens` is the input billed at the plain input price (not read from or written to a
    provider's prompt cache), `cache_read_tokens` and `cache_write_tokens` the cached parts. A
    provider's own sum (OpenAI's `prompt_tokens`, Gemini's `promptTokenCount`) is split into them;
    `prompt_tokens` adds them back. Logs from before the parts hold the whole input in
    `input_tokens`."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        """Every input token of the request, cached or not: what it took of the window."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )


class Cost(_Model):
    """What one step cost at its model entry's price (`ModelPrice`), from the tokens the provider
    reported; `currency` is an ISO 4217 code."""

    amount: float
    currency: str


class Figures(_Model):
    """The budget figures of one request (context-orchestration governors): `chars` of `cap`
    characters, and `window`, the bound model's window in tokens (None when its entry declares
    none), so a viewer of the log alone can show the request against the window."""

    chars: int = 0
    cap: int = 0
    groups_kept: int = 0
    groups_dropped: int = 0
    reserved: int = 0
    window: int | None = None


class Attachment(_Model):
    """A file or resource the user attached to a prompt."""

    name: str
    uri: str = ""
    mime_type: str = "text/plain"
    text: str = ""


class FileChangeRecord(_Model):
    """What a write_file or edit_file call did to its file, exact enough to put the file back:
    its text before (`existed` false: the call created it, so undoing it removes the file) and
    after, each with the SHA-256 of its UTF-8 bytes. A text is withheld, its hash kept, when the
    file matches a secret pattern (`withheld="secret"`, both texts), is larger than the record
    keeps (`"size"`), was not UTF-8 text before (`"binary"`) or could not be read
    (`"unreadable"`, no hash either); `label` is the file's, as a read of it would have. `line` is the first line the change touches, in the new text."""

    path: str
    """Relative to the workspace, as the tool's result names it."""
    existed: bool
    old_text: str | None = None
    new_text: str | None = None
    old_sha256: str | None = None
    new_sha256: str
    withheld: Literal["secret", "size", "binary", "unreadable"] | None = None
    line: int = 1
    label: PrivatizationLabel | None = None

    @property
    def restorable(self) -> bool:
        """Whether the log alone can put the file back as it was before the call."""
        return not self.existed or self.old_text is not None


class WorkspaceFileChange(_Model):
    """One file's change between two checkpoints of the workspace (`engine.checkpoints`), what
    a shell command or an MCP tool did as much as a file tool: its status, the git object ids of
    its bytes before and after (git's, as the shadow repository names them; None where the file
    was not), git's modes (`100755` executable, `120000` a symlink), the line counts and a unified
    diff for text within the cap. `withheld` says why there is no diff (`secret`: a file that
    matches a secret pattern, ids only; `size`; `binary`); `restorable` is false when either side
    was over `[checkpoints] max_file_bytes`, so its bytes were never kept. `label` is the file's,
    as a read of it would have."""

    path: str
    """Relative to the workspace; a name that is not UTF-8 escaped as `engine.os_text` does."""
    status: Literal["added", "modified", "deleted"]
    old_blob: str | None = None
    new_blob: str | None = None
    old_mode: str | None = None
    new_mode: str | None = None
    added_lines: int | None = None
    removed_lines: int | None = None
    diff: str | None = None
    withheld: Literal["size", "binary", "secret"] | None = None
    restorable: bool = True
    label: PrivatizationLabel | None = None


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
AgentState = Literal["idle", "running", "waiting"]
BreakReason = Literal[
    "model",
    "grant",
    "compaction",
    "eviction",
    "pins",
    "instructions",
    "tools",
    "rebuilt",
    "collection",
]
"""Why a request's prefix is short on purpose (`prefix/break`): another model entry; a new grant of
the same entry (a fresh environment block); a compaction; an eviction batch; pins joining or leaving
the floor; changed instruction files; another set of tools offered; state rebuilt from the log (a
resume or a rewind: the previous request is not known); a collection that detached history."""


# --- payloads ---------------------------------------------------------------------------------------

_PAYLOADS: dict[str, type["Payload"]] = {}


class Payload(_Model):
    """The `data` of one event type; subclasses declare `event=` and `scope=` in their class line.

    A payload class is never subclassed (refused below), so a payload is an instance of its own
    class only and a `match` on class patterns is as exact as `type(data) is`. The folds that
    read every event of a log (resume, the timeline) find the handler in a table keyed by
    `type(data)` instead: a class pattern is an `isinstance` test through pydantic's ABC
    metaclass, and a miss costs several times a lookup (DESIGN-NOTES: "What reads every event of
    a log"); readers of a few events use `match`."""

    event_type: ClassVar[str]
    scope: ClassVar[Scope]

    def __init_subclass__(cls, *, event: str = "", scope: Scope | None = None, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        if not event or scope is None:
            raise TypeError(f"{cls.__name__} must declare event= and scope=")
        if any(base is not Payload and issubclass(base, Payload) for base in cls.__bases__):
            raise TypeError(f"{cls.__name__} subclasses a payload class: derive it from Payload")
        if event in _PAYLOADS:
            raise TypeError(f"event type {event!r} is declared twice")
        cls.event_type = event
        cls.scope = scope
        _PAYLOADS[event] = cls


# turn-level: only inside an open turn


class TurnStart(Payload, event="turn/start", scope=Scope.turn):
    turn: int


class TurnEnd(Payload, event="turn/end", scope=Scope.turn):
    turn: int
    reason: TurnEndReason
    message: str = ""


class StepStart(Payload, event="step/start", scope=Scope.turn):
    """What a viewer needs to show this step's request from the log alone.

    `kept` holds the first seq of each history group the request kept; `egress` is the highest
    class the endpoint accepts and `label` the joined label of the request; `tools` the hashes of
    the tool definitions it offered (`tool/define`).
    """

    turn: int
    step: int
    prefix_digest: str = ""
    floor: tuple[str, ...] = ()
    figures: Figures = Figures.model_construct()  # a default that does not build Figures at import
    kept: tuple[int, ...] = ()
    egress: ClassField | None = None
    label: PrivatizationLabel | None = None
    tools: tuple[str, ...] = ()  # the hashes of the `tool/define`s the request offered, in order
    prefix_chars: int = 0
    """Leading characters of the request's wire text identical to the previous step's request."""
    request_chars: int = 0
    """The request's wire text length; 0 in logs from before it was measured."""


class StepEnd(Payload, event="step/end", scope=Scope.turn):
    turn: int
    step: int
    usage: Usage = Usage.model_construct()
    cost: Cost | None = None
    """At the bound entry's price, when it has one and the provider reported tokens."""


class AssistantMessage(Payload, event="assistant/message", scope=Scope.turn):
    turn: int
    step: int
    content: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    model: str = ""
    usage: Usage = Usage.model_construct()
    finish: Finish = "stop"
    provider_state: dict[str, Any] = Field(default_factory=dict)
    label: PrivatizationLabel | None = None


class ToolCallRecord(Payload, event="tool/call", scope=Scope.turn):
    """The log's record of a `ToolCall` the model made; labelled like the reply that made it."""

    turn: int
    step: int
    call_id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    label: PrivatizationLabel | None = None


class ToolResultRecord(Payload, event="tool/result", scope=Scope.turn):
    """The log's record of a `ToolResult`: the one record of what the tool returned."""

    turn: int
    step: int
    call_id: str
    content: str
    is_error: bool = False
    label: PrivatizationLabel | None = None
    change: FileChangeRecord | None = None
    """The file the call changed (write_file, edit_file), when it did."""


class AreaRender(Payload, event="area/render", scope=Scope.turn):
    area: str
    messages: tuple[MessageData, ...]
    earliest: int
    latest: int
    label: PrivatizationLabel | None = None


class AreaCursor(Payload, event="area/cursor", scope=Scope.turn):
    area: str | None


class GcCollect(Payload, event="gc/collect", scope=Scope.turn):
    """One collection: Context indices reclaimed and carried, in the order they were detached."""

    areas: tuple[str, ...]
    earliest: int
    reclaimed: tuple[int, ...] = ()
    promoted: tuple[MessageData, ...] = ()
    carried: tuple[int, ...] = ()
    label: PrivatizationLabel | None = None  # of the promoted messages: what they stand for


class PrefixBreak(Payload, event="prefix/break", scope=Scope.turn):
    """A planned break of the request prefix, logged just before the `step/start` it shortens, so
    a reader sees why that request shares little with the one before."""

    turn: int
    before_step: int  # the step whose request it shortens (not open yet: no `step` field)
    reason: BreakReason
    detail: str = ""


class Retry(Payload, event="retry", scope=Scope.turn):
    turn: int
    step: int
    attempt: int
    reason: str


class PermissionDecision(Payload, event="permission/decision", scope=Scope.turn):
    call_id: str
    decision: Decision


# session-level: anywhere


class ToolChanges(Payload, event="tool/changes", scope=Scope.turn):
    """What a batch of calls that no file record covers (a shell command, an MCP tool) changed
    in the workspace: the checkpoints taken right before and after the batch, and the files."""

    turn: int
    step: int
    call_ids: tuple[str, ...]
    before: str
    after: str
    files: tuple[WorkspaceFileChange, ...] = ()


class TurnChanges(Payload, event="turn/changes", scope=Scope.session):
    """What a turn changed in the workspace, from the checkpoint taken before its first call
    that could change it to the one taken when it ended (after its `turn/end`, so what a
    cancelled command left is in it). A rewind to the turn puts back `before`."""

    turn: int
    before: str
    after: str
    files: tuple[WorkspaceFileChange, ...] = ()


class CheckpointsOff(Payload, event="checkpoints/off", scope=Scope.session):
    """The workspace gets no checkpoints from here on, and why (said once)."""

    reason: str


class UserMessage(Payload, event="user/message", scope=Scope.session):
    """Direct user input (`source` is `user`) or injected context (any other source)."""

    content: str
    source: SourceField = Source("user")
    original_content: str | None = None
    attachments: tuple[Attachment, ...] = ()
    label: PrivatizationLabel | None = None


class AreaRegister(Payload, event="area/register", scope=Scope.session):
    area: str
    kind: str = ""
    name: str = ""
    state: dict[str, Any] | None = None


class AreaState(Payload, event="area/state", scope=Scope.session):
    area: str
    life: Literal["retain", "retired"]
    flow: Literal["exclusive", "yielded"]
    state: dict[str, Any] | None = None


class FloorBlock(Payload, event="floor/block", scope=Scope.session):
    hash: str
    layer: int
    key: str
    text: str
    label: PrivatizationLabel | None = None


class ToolDefinition(Payload, event="tool/define", scope=Scope.session):
    """A tool as requests offer it to the model: its name, description and argument schema as
    compact JSON (`text`, what its cost counts), logged once and addressed by its hash; each
    `step/start` names those its request carried (`tools`)."""

    hash: str
    name: str
    text: str
    label: PrivatizationLabel | None = None


class PinAdd(Payload, event="pin/add", scope=Scope.session):
    pin_id: str
    text: str


class PinRemove(Payload, event="pin/remove", scope=Scope.session):
    pin_id: str


class ModelBind(Payload, event="model/bind", scope=Scope.session):
    model: str
    grant_epoch: int


class PermissionRule(Payload, event="permission/rule", scope=Scope.session):
    tool: str
    decision: RuleDecision


class PermissionModeSet(Payload, event="permission/mode", scope=Scope.session):
    """The session's permission mode from here on. `resumed`: the session was reopened while in
    `approve-all`, which never outlives the process it was set in, so it fell back to `ask`."""

    mode: PermissionMode
    resumed: bool = False


class CommandRun(Payload, event="command/run", scope=Scope.session):
    """A slash command that changed the session, with what it answered: a replay shows the
    exchange where it happened, as the front end showed it live. `line` is the command as typed
    (it may hold the user's words), `result` the answer; both carry `label`."""

    line: str
    result: str
    label: PrivatizationLabel | None = None


class CompactStart(Payload, event="compact/start", scope=Scope.session):
    groups: int
    earliest: int


class CompactSummary(Payload, event="compact/summary", scope=Scope.session):
    content: str
    model: str = ""
    label: PrivatizationLabel | None = None


class CompactEnd(Payload, event="compact/end", scope=Scope.session):
    earliest: int
    reclaimed: tuple[int, ...] = ()
    carried: tuple[int, ...] = ()


class SessionRewind(Payload, event="session/rewind", scope=Scope.session):
    """The session goes back to just before turn `to_turn`'s prompt. With `conversation`, the
    events from `to_seq` (that turn's `turn/start`) up to this one leave the history the
    session's state is built from (`engine.rewind_intervals`); they stay in the log, and in its
    transcript. `prompt` is that turn's words (labelled as they were), for a front end to put
    back in the input. Turn numbers go on from the log's last turn, never reused."""

    to_turn: int
    to_seq: int
    conversation: bool = True
    code: bool = False
    prompt: str = ""
    label: PrivatizationLabel | None = None
    undoes: int | None = None
    """The seq of the rewind this one undoes: its history comes back as it was just before it
    (`to_seq` is that rewind's seq), and its files as they were (`code_target` is the
    checkpoint it took first)."""
    code_target: str | None = None
    """With `code`: the checkpoint the files were brought back to."""
    code_before: str | None = None
    """The checkpoint taken just before the files were written: what undoing this rewind
    brings back."""
    code_after: str | None = None
    """The checkpoint taken once they were: what the agent's files are from here on."""
    restored: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()
    """Files changed by someone else since the agent left them, kept as they were."""
    failed: tuple[str, ...] = ()
    """Files that could not be written or removed, each with why (`path: reason`)."""
    code_refused: str | None = None
    """Why the files were not rewound although asked (no checkpoints here, an editor holds them)."""


class SessionTitle(Payload, event="session/title", scope=Scope.session):
    title: str
    label: PrivatizationLabel | None = None


# live: reach subscribers, never stored


class AssistantDelta(Payload, event="assistant/delta", scope=Scope.live):
    turn: int
    step: int
    text: str = ""
    reasoning: str = ""


class AssistantReset(Payload, event="assistant/reset", scope=Scope.live):
    """Withdraws what this step streamed so far: the attempt failed and is retried."""

    turn: int
    step: int


class ToolPending(Payload, event="tool/pending", scope=Scope.live):
    """A tool call as the model streams it; `arguments` is the raw JSON text received so far."""

    turn: int
    step: int
    index: int
    call_id: str = ""
    name: str = ""
    arguments: str = ""


class ToolOutputDelta(Payload, event="tool/output", scope=Scope.live):
    """Output of a running tool as it arrives; the stored `tool/result` stays the one record."""

    turn: int
    step: int
    call_id: str
    text: str


class PermissionRequest(Payload, event="permission/request", scope=Scope.live):
    """A tool call waits for an answer; its `permission/decision` resolves it."""

    turn: int
    step: int
    call_id: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    kind: str = "other"


class AgentStatus(Payload, event="agent/status", scope=Scope.live):
    status: AgentState


class AgentQueued(Payload, event="agent/queued", scope=Scope.live):
    messages: tuple[str, ...] = ()
    steering: tuple[str, ...] = ()


class AgentError(Payload, event="agent/error", scope=Scope.live):
    """A failure the user must hear about; `turn` is None when no turn was open (admission)."""

    turn: int | None
    message: str


class OutboxChanged(Payload, event="outbox/changed", scope=Scope.live):
    contexts: tuple[MessageData, ...] = ()
    steering: tuple[str, ...] = ()


class SteerDropped(Payload, event="steer/dropped", scope=Scope.live):
    text: str


class StreamOverflow(Payload, event="stream/overflow", scope=Scope.live):
    """An `events()` consumer fell too far behind: live events after `last_seq` were dropped for it,
    and the durable ones follow again from `last_seq + 1`."""

    last_seq: int


# --- the registry, derived from the declarations ----------------------------------------------------

PAYLOADS: Mapping[str, type[Payload]] = MappingProxyType(_PAYLOADS)
EVENT_TYPES: frozenset[str] = frozenset(
    t for t, p in _PAYLOADS.items() if p.scope is not Scope.live
)
LIVE_EVENT_TYPES: frozenset[str] = frozenset(
    t for t, p in _PAYLOADS.items() if p.scope is Scope.live
)
_DURABLE_VALIDATORS: dict[str, Callable[[str | bytes], Payload]] = {}
"""Each durable type's JSON validator, called directly: `model_validate_json` without its
Python-level wrapper, since a whole log is decoded through it. Filled at the first decode: the
models build on first use (`defer_build`), so a command that decodes nothing never builds them."""


def _durable_validators() -> dict[str, Callable[[str | bytes], Payload]]:
    if not _DURABLE_VALIDATORS:
        for t, p in _PAYLOADS.items():
            if p.scope is not Scope.live:
                p.model_rebuild()  # a deferred model's validator is a placeholder until built
                _DURABLE_VALIDATORS[t] = p.__pydantic_validator__.validate_json
    return _DURABLE_VALIDATORS


class UnknownEventTypeError(ValueError):
    """A reader met a type it does not know; it names the type and the seq."""

    def __init__(self, event_type: object, seq: object) -> None:
        self.event_type = event_type
        self.seq = seq
        super().__init__(f"unknown event type {event_type!r} at seq {seq}")


class EventDecodeError(ValueError):
    """A stored or received event does not match its type's model."""


def payload_class(event_type: str, seq: object = "?", *, live: bool = False) -> type[Payload]:
    """The payload model of a durable (or, with `live`, a live) type; any other raises
    `UnknownEventTypeError`."""
    cls = _PAYLOADS.get(event_type)
    if cls is None or (cls.scope is Scope.live) is not live:
        raise UnknownEventTypeError(event_type, seq)
    return cls


def _typed_data(raw: Any, *, live: bool) -> Any:
    """Before validation: parse `data` with the model its `type` names."""
    if isinstance(raw, dict) and isinstance(raw.get("data"), dict):
        cls = payload_class(str(raw.get("type")), raw.get("seq", "?"), live=live)
        raw = {**raw, "data": cls.model_validate(raw["data"])}
    return raw


class Event(_Model):
    """A durable event: its place in the log (`seq`), its wall time, its type and its data."""

    seq: int
    time: float
    type: str
    data: Annotated[Payload, SerializeAsAny()]

    @model_validator(mode="before")
    @classmethod
    def _data(cls, raw: Any) -> Any:
        return _typed_data(raw, live=False)

    @model_validator(mode="after")
    def _matches(self) -> "Event":
        if self.data.event_type != self.type or self.data.scope is Scope.live:
            raise ValueError(f"data of {type(self.data).__name__} does not fit type {self.type!r}")
        return self


class LiveEvent(_Model):
    """A live-only event: reaches subscribers, never stored. `after_seq` is the seq of the last
    durable event before it (-1 when the log is empty), so a late subscriber can place it."""

    time: float
    type: str
    after_seq: int
    data: Annotated[Payload, SerializeAsAny()]

    @model_validator(mode="before")
    @classmethod
    def _data(cls, raw: Any) -> Any:
        return _typed_data(raw, live=True)

    @model_validator(mode="after")
    def _matches(self) -> "LiveEvent":
        if self.data.event_type != self.type or self.data.scope is not Scope.live:
            raise ValueError(f"data of {type(self.data).__name__} does not fit type {self.type!r}")
        return self


def make_event(payload: Payload, seq: int, time: float) -> Event:
    """Wrap a durable payload with its place in the log."""
    if payload.scope is Scope.live:
        raise TypeError(f"{type(payload).__name__} is not a durable event payload")
    return _envelope(seq, time, payload.event_type, payload)


def assistant_delta(turn: int, step: int, *, text: str = "", reasoning: str = "") -> AssistantDelta:
    """`AssistantDelta(turn=..., step=..., text=...)` from the values a turn holds (its ints and
    the gateway's strs), built as `_envelope` builds an event: validating each of a reply's
    thousands of deltas cost as much as the rest of the live event's way to a subscriber."""
    set_dict, set_fields, set_extra, set_private = _ENVELOPE_SLOTS
    delta = _new(AssistantDelta)
    set_dict(delta, {"turn": turn, "step": step, "text": text, "reasoning": reasoning})
    set_fields(delta, {"turn", "step", "reasoning" if reasoning else "text"})
    set_extra(delta, None)
    set_private(delta, None)
    return delta


def make_live_event(payload: Payload, time: float, after_seq: int) -> LiveEvent:
    if payload.scope is not Scope.live:
        raise TypeError(f"{type(payload).__name__} is not a live event payload")
    # built as `_envelope` builds a durable event: `model_construct`'s generic per-field loop
    # cost more than the rest of a streamed delta's way from the model to a subscriber
    set_dict, set_fields, set_extra, set_private = _ENVELOPE_SLOTS
    event = _new(LiveEvent)
    set_dict(
        event, {"time": time, "type": payload.event_type, "after_seq": after_seq, "data": payload}
    )
    set_fields(event, set(_LIVE_EVENT_FIELDS))
    set_extra(event, None)
    set_private(event, None)
    return event


def decode_event(raw: dict[str, Any]) -> Event:
    """A durable event from its JSON object; unknown types and bad data raise with the seq."""
    seq = raw.get("seq", "?")
    payload_class(str(raw.get("type")), seq)  # an unknown type is named as such, not as bad data
    try:
        return Event.model_validate(raw)
    except ValidationError as exc:
        raise EventDecodeError(f"invalid {raw.get('type')} event at seq {seq}: {exc}") from exc


def decode_live_event(raw: dict[str, Any]) -> LiveEvent:
    """A live event from its JSON object (a peer's stream, `--json` output)."""
    payload_class(str(raw.get("type")), "live", live=True)
    try:
        return LiveEvent.model_validate(raw)
    except ValidationError as exc:
        raise EventDecodeError(f"invalid live {raw.get('type')} event: {exc}") from exc


def decode_event_json(text: str | bytes) -> Event:
    """Like `decode_event`, from JSON text."""
    try:
        raw = json.loads(text)
    except ValueError as exc:  # malformed JSON or bytes that are not UTF-8
        raise EventDecodeError(f"an event must be JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise EventDecodeError(f"an event must be a JSON object, got {type(raw).__name__}")
    return decode_event(raw)


def decode_row(seq: int, time: float, event_type: str, data_json: str | bytes) -> Event:
    """An event from a store row (`data` as JSON): the type is checked first, then the data."""
    cls = payload_class(event_type, seq)
    try:
        payload = cls.model_validate_json(data_json)
    except ValidationError as exc:
        raise EventDecodeError(f"invalid {event_type} event at seq {seq}: {exc}") from exc
    return _envelope(seq, time, event_type, payload)


def decode_rows(rows: Iterable[tuple[int, float, str, str | bytes]]) -> list[Event]:
    """`decode_row` over many rows (a whole log), with the per-row lookups hoisted: loading is
    what every view of a long session pays first."""
    durable = _durable_validators()
    new, set_dict, set_fields, set_extra, set_private = _new, *_ENVELOPE_SLOTS
    fields = _EVENT_FIELDS
    events: list[Event] = []
    append = events.append
    for seq, time, event_type, data_json in rows:
        validate = durable.get(event_type)
        if validate is None:  # a live type is no more a stored one than an unknown type
            raise UnknownEventTypeError(event_type, seq)
        try:
            payload = validate(data_json)
        except ValidationError as exc:
            raise EventDecodeError(f"invalid {event_type} event at seq {seq}: {exc}") from exc
        # `_envelope`, inlined: a call per row is a large share of the row's decoding
        event = new(Event)
        set_dict(event, {"seq": seq, "time": time, "type": event_type, "data": payload})
        set_fields(event, set(fields))
        set_extra(event, None)
        set_private(event, None)
        append(event)
    return events


_EVENT_FIELDS = frozenset(("seq", "time", "type", "data"))
_LIVE_EVENT_FIELDS = frozenset(("time", "type", "after_seq", "data"))
_new = object.__new__
_ENVELOPE_SLOTS: tuple[Callable[[Any, Any], None], ...] = tuple(
    BaseModel.__dict__[name].__set__
    for name in (
        "__dict__",
        "__pydantic_fields_set__",
        "__pydantic_extra__",
        "__pydantic_private__",
    )
)
"""The setters of a pydantic model's four slots, taken from `BaseModel` once: `object.__setattr__`
finds the slot's descriptor by name on every call, which cost as much as the rest of the envelope."""


def _envelope(seq: int, time: float, event_type: str, payload: Payload) -> Event:
    """What `Event.model_construct` builds, without its generic per-field loop, which costs as
    much as validating the payload itself: every event appended or decoded passes here."""
    set_dict, set_fields, set_extra, set_private = _ENVELOPE_SLOTS
    event = _new(Event)
    set_dict(event, {"seq": seq, "time": time, "type": event_type, "data": payload})
    set_fields(event, set(_EVENT_FIELDS))
    set_extra(event, None)
    set_private(event, None)
    return event


def encode_event(event: Event | LiveEvent) -> str:
    return event.model_dump_json()


def encode_data(event: Event | LiveEvent) -> str:
    """The payload as the store writes it: `model_dump_json()` without its Python wrapper, since
    every appended event is encoded (once to check it can be stored, once to stage it)."""
    data = event.data
    return data.__pydantic_serializer__.to_json(data).decode()


def is_turn_level(event: Event) -> bool:
    return event.data.scope is Scope.turn
