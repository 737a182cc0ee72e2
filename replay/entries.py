"""The entries of a transcript: one frozen value per kind of thing a reader sees.

Each entry holds the seq it started at (for a live-only entry, the seq of the durable event
before it) and a `key` that stays the same while the entry is updated, so a UI can update the one
widget that shows it. Labels are the privacy labels the log recorded (None where it records none).

Entries keep their fields in a `__dict__` (no `__slots__`): `evolve` copies that dict whole,
which is what makes updating an entry for most events of a long log cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, fields
from typing import Any, Literal, TypeVar, dataclass_transform

from engine.events import (
    Attachment,
    Decision,
    FileChangeRecord,
    Finish,
    MessageData,
    TurnChanges,
    TurnEndReason,
    Usage,
    WorkspaceFileChange,
)
from engine.message import Source
from engine.permission_mode import PermissionMode
from engine.privacy import PrivatizationLabel

NO_USAGE = Usage()  # frozen, so one shared default is safe

T = TypeVar("T")
_new = object.__new__
_set_attribute = object.__setattr__


@dataclass_transform(frozen_default=True, kw_only_default=True)
def entry(cls: type[T]) -> type[T]:
    """A frozen, keyword-only dataclass whose `__init__` sets the instance's `__dict__` in one
    step: the generated one assigns each field through `object.__setattr__`, slow enough to make
    building entries a large share of a long log's projection."""
    made = dataclass(frozen=True, kw_only=True)(cls)
    made.__init__ = _init_of(made)  # type: ignore[method-assign]
    return made


def _init_of(made: type) -> Callable[..., None]:
    """An `__init__` with the fields as keyword-only parameters (so Python's own argument binding
    refuses a missing or unknown field, as the dataclass's would) that builds the `__dict__` in
    one dict display. Written as source and compiled, as `dataclasses` writes its own: a generic
    `**values` version cost several times as much as the entry it built."""
    declared = fields(made)
    namespace: dict[str, Any] = {
        # the class's `__dict__` descriptor, taken once: `object.__setattr__` looks it up by name
        "_set_dict": made.__dict__["__dict__"].__set__,
        **{f"_default_{f.name}": f.default for f in declared if f.default is not MISSING},
    }
    parameters = ", ".join(
        f.name if f.default is MISSING else f"{f.name}=_default_{f.name}" for f in declared
    )
    values = ", ".join(f"{f.name!r}: {f.name}" for f in declared)
    source = f"def __init__(self, *, {parameters}):\n    _set_dict(self, {{{values}}})\n"
    exec(source, namespace)  # the source holds only the class's field names
    init: Callable[..., None] = namespace["__init__"]
    init.__qualname__ = f"{made.__qualname__}.__init__"
    return init


TurnStatus = Literal["running", "ended"]
ToolStatus = Literal["pending", "running", "done", "error", "cancelled"]


@entry
class TurnEntry:
    """A turn's header: its number, how it ended and how long it took."""

    key: str
    seq: int
    number: int
    status: TurnStatus = "running"
    reason: TurnEndReason | None = None
    message: str = ""
    steps: int = 0  # steps ended (`step/end`), so a stored log and a live feed count alike
    usage: Usage = NO_USAGE
    cost: Mapping[str, float] | None = None
    """What its steps cost, per currency (`StepEnd.cost`); None before a priced step."""
    start: float
    end: float | None = None
    repaired: bool = False  # the store closed it after a crash (`turn/end {interrupted}`)
    changes: TurnChanges | None = None
    """What the turn changed in the workspace (`turn/changes`, after its end); None when no
    checkpoint recorded it (a turn that changed nothing it could, checkpoints off, an old log)."""


@entry
class TurnEndEntry:
    """Why a turn did not complete (`turn/end`'s message), after everything the turn showed."""

    key: str
    seq: int
    turn: int
    reason: TurnEndReason
    message: str


@entry
class UserEntry:
    """The user's own words; `original` is what they typed when a listener rewrote it."""

    key: str
    seq: int
    time: float
    content: str
    original: str | None = None
    attachments: tuple[Attachment, ...] = ()
    label: PrivatizationLabel | None = None


@entry
class ContextEntry:
    """Injected context: shown as its own card with its source, never as the user's words."""

    key: str
    seq: int
    time: float
    content: str
    source: Source
    label: PrivatizationLabel | None = None

    @property
    def heading(self) -> str:
        """What the card is titled with: `kind` or `kind: name`."""
        return f"{self.source.kind}: {self.source.name}" if self.source.name else self.source.kind


@entry
class AssistantEntry:
    """One step's reply; while `streaming` it holds what the stream sent so far."""

    key: str
    seq: int
    turn: int
    step: int
    content: str = ""
    reasoning: str = ""
    finish: Finish | None = None
    model: str = ""
    usage: Usage = NO_USAGE
    label: PrivatizationLabel | None = None
    streaming: bool = False


@entry
class ToolEntry:
    """A tool call paired with its result and its permission decision."""

    key: str
    seq: int
    turn: int
    step: int
    call_id: str
    name: str
    arguments: dict[str, Any]
    status: ToolStatus
    raw_arguments: str = ""  # while `pending`: the argument text streamed so far
    output: str = ""  # while `running`: live output; the result replaces it
    result: str | None = None
    is_error: bool = False
    asking: bool = False  # a permission question is open
    permission: Decision | None = None
    label: PrivatizationLabel | None = None  # of the call (the reply that made it)
    change: FileChangeRecord | None = None  # the file the call changed, as its result records
    files: tuple[WorkspaceFileChange, ...] = ()
    """What a call no file record covers (a shell command, an MCP tool) changed in the workspace,
    as its batch's `tool/changes` records it (`batch_files`)."""


@entry
class AreaEntry:
    """An Area rendered messages into the Context."""

    key: str
    seq: int
    area: str
    messages: tuple[MessageData, ...]
    earliest: int
    latest: int
    label: PrivatizationLabel | None = None


@entry
class GcEntry:
    """A collection: which Areas, what was reclaimed, promoted and carried over."""

    key: str
    seq: int
    areas: tuple[str, ...]
    earliest: int
    reclaimed: tuple[int, ...]
    promoted: tuple[MessageData, ...]
    carried: tuple[int, ...]
    label: PrivatizationLabel | None = None


@entry
class CompactEntry:
    """A compaction marker: how many groups, the model's summary, what it reclaimed."""

    key: str
    seq: int
    groups: int
    earliest: int
    summary: str = ""
    model: str = ""
    reclaimed: tuple[int, ...] = ()
    carried: tuple[int, ...] = ()
    done: bool = False
    label: PrivatizationLabel | None = None


@entry
class RetryEntry:
    """A failed model request that is tried again."""

    key: str
    seq: int
    turn: int
    step: int
    attempt: int
    reason: str


@entry
class ModelEntry:
    """The session was bound to a model (the first binding, or a switch)."""

    key: str
    seq: int
    model: str


@entry
class ModeEntry:
    """The session's permission mode changed; `resumed`: `approve-all` fell back to `ask` as the
    session was reopened."""

    key: str
    seq: int
    mode: PermissionMode
    resumed: bool = False


@entry
class CommandEntry:
    """A slash command that changed the session (`line`) and what it answered (`result`)."""

    key: str
    seq: int
    line: str
    result: str
    label: PrivatizationLabel | None = None


@entry
class RewindEntry:
    """The session was rewound to just before turn `to_turn`'s prompt (`to_seq`, its
    `turn/start`): its conversation, its code, or both. The turns after stay in the transcript;
    `prompt` is the rewound prompt's words."""

    key: str
    seq: int
    to_turn: int
    to_seq: int
    conversation: bool
    code: bool
    prompt: str
    label: PrivatizationLabel | None = None
    undoes: int | None = None  # the seq of the rewind this one undoes
    restored: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()  # changed by someone else since: left as they were
    failed: tuple[str, ...] = ()
    code_refused: str | None = None


@entry
class CheckpointsOffEntry:
    """From here on the workspace got no checkpoints, so no changes recorded, and why."""

    key: str
    seq: int
    reason: str


@entry
class ErrorEntry:
    """A failure the user must hear about (`agent/error`); live only, never stored."""

    key: str
    seq: int
    turn: int | None
    message: str


TranscriptEntry = (
    TurnEntry
    | TurnEndEntry
    | UserEntry
    | ContextEntry
    | AssistantEntry
    | ToolEntry
    | AreaEntry
    | GcEntry
    | CompactEntry
    | RetryEntry
    | ModelEntry
    | ModeEntry
    | CommandEntry
    | RewindEntry
    | CheckpointsOffEntry
    | ErrorEntry
)


E = TypeVar("E", bound=TranscriptEntry)


def evolve(entry: E, **changes: Any) -> E:
    """`dataclasses.replace` for the projection's frozen entries, several times cheaper: the
    projection updates an entry for most events of a long log. An entry has no `__post_init__`
    and keeps its fields, and only them, in its `__dict__`, so a copy of that dict with the
    changes is the same value as `replace` builds field by field through the frozen
    `__setattr__`, and a change that adds a key names no field."""
    current = entry.__dict__
    values = {**current, **changes}
    if len(values) != len(current):
        kind = type(entry).__name__
        raise TypeError(f"{kind} has no field {sorted(values.keys() - current.keys())}")
    new = _new(type(entry))
    _set_attribute(new, "__dict__", values)
    return new


def is_live_only(entry: TranscriptEntry) -> bool:
    """True for what only a live feed shows: streaming text, pending calls, errors."""
    match entry:
        case ErrorEntry():
            return True
        case AssistantEntry(streaming=streaming):
            return streaming
        case ToolEntry(status=status):
            return status == "pending"
        case _:
            return False
