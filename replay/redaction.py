"""`--max-class`: what an export may show, decided per event by the label the log stored.

An event whose class lies above the limit keeps its place, its type, its ids and its label, and loses
its content: each text becomes a marker naming the class (docs/spec/context-orchestration.md,
privacy: anything without provenance is restricted, so content stored without a label counts as
restricted). Every export format is built from the redacted events, so no format can show what
another hides.
"""

from __future__ import annotations

from typing import Any

from engine.events import (
    AreaRegister,
    AreaRender,
    AreaState,
    AssistantMessage,
    Attachment,
    CommandRun,
    CompactSummary,
    Event,
    FloorBlock,
    GcCollect,
    MessageData,
    Payload,
    PinAdd,
    SessionRewind,
    SessionTitle,
    ToolCallRecord,
    ToolChanges,
    ToolDefinition,
    ToolResultRecord,
    TurnChanges,
    UserMessage,
    WorkspaceFileChange,
)
from engine.message import ToolCall
from engine.privacy import PrivacyClass, PrivatizationLabel


def redacted_text(cls: PrivacyClass) -> str:
    """The marker that stands where redacted text was."""
    return f"[redacted: {cls.name}]"


def content_class(payload: Payload) -> PrivacyClass | None:
    """The class of what an event says, or None for an event that holds no content (turn and
    step boundaries, ids, counts, model names)."""
    match payload:
        case PinAdd():
            return PrivacyClass.internal  # the user's own words (direct user input is internal)
        case AreaRegister(state=None) | AreaState(state=None) | SessionRewind(prompt=""):
            return None
        case AreaRegister() | AreaState():
            return PrivacyClass.restricted  # an Area's state has no stored label
        case ToolResultRecord(label=label, change=change) if change is not None:
            return max(_class_of(label), _class_of(change.label))  # the file's own label
        case TurnChanges(files=files) | ToolChanges(files=files):
            # paths, counts and ids are no content; each diff is its file's, by its own label
            return max((_class_of(f.label) for f in files if f.diff is not None), default=None)
        case (
            UserMessage(label=label)
            | AssistantMessage(label=label)
            | ToolCallRecord(label=label)
            | ToolResultRecord(label=label)
            | AreaRender(label=label)
            | GcCollect(label=label)
            | FloorBlock(label=label)
            | ToolDefinition(label=label)
            | CompactSummary(label=label)
            | SessionTitle(label=label)
            | CommandRun(label=label)
            | SessionRewind(label=label)
        ):
            return _class_of(label)
        case _:
            return None


def _class_of(label: PrivatizationLabel | None) -> PrivacyClass:
    return PrivacyClass.restricted if label is None else label.cls


def hidden_class(event: Event, max_class: PrivacyClass | None) -> PrivacyClass | None:
    """The class of the event's content when it lies above `max_class` (None: shown as is)."""
    cls = content_class(event.data)
    if max_class is None or cls is None or cls <= max_class:
        return None
    return cls


def redact(event: Event, max_class: PrivacyClass | None) -> Event:
    """The event as an export limited to `max_class` shows it (None: no limit)."""
    cls = hidden_class(event, max_class)
    if cls is None:
        return event
    data = event.data
    if isinstance(data, TurnChanges | ToolChanges):
        assert max_class is not None  # a class is hidden only under a limit
        files = tuple(_file_within(change, max_class) for change in data.files)
        return event.model_copy(update={"data": data.model_copy(update={"files": files})})
    return event.model_copy(update={"data": _without_content(data, redacted_text(cls))})


def _file_within(change: WorkspaceFileChange, max_class: PrivacyClass) -> WorkspaceFileChange:
    """The file's change with its diff a marker when the file's class lies above the limit (a
    restricted file's lines never leave with a lower limit); the rest of the record stays."""
    cls = _class_of(change.label)
    if change.diff is None or cls <= max_class:
        return change
    return change.model_copy(update={"diff": redacted_text(cls)})


def _message(message: MessageData, marker: str) -> MessageData:
    return message.model_copy(update={"content": marker, "tool_calls": _calls(message.tool_calls)})


def _calls(calls: tuple[ToolCall, ...]) -> tuple[ToolCall, ...]:
    return tuple(ToolCall(call.id, call.name, {}) for call in calls)


def _without_content(payload: Payload, marker: str) -> Payload:
    update: dict[str, Any]
    match payload:
        case UserMessage():
            update = {
                "content": marker,
                "original_content": None if payload.original_content is None else marker,
                "attachments": tuple(Attachment(name=marker) for _ in payload.attachments),
            }
        case AssistantMessage():
            update = {
                "content": marker if payload.content else "",
                "reasoning": marker if payload.reasoning else "",
                "tool_calls": _calls(payload.tool_calls),
                "provider_state": {},
            }
        case ToolCallRecord():
            update = {"arguments": {}}
        case ToolResultRecord():
            change = payload.change
            update = {"content": marker}
            if change is not None:  # the hashes, the path and the line stay
                update["change"] = change.model_copy(update={"old_text": None, "new_text": None})
        case CompactSummary():
            update = {"content": marker}
        case AreaRender():
            update = {"messages": tuple(_message(m, marker) for m in payload.messages)}
        case GcCollect():
            update = {"promoted": tuple(_message(m, marker) for m in payload.promoted)}
        case FloorBlock() | PinAdd() | ToolDefinition():
            update = {"text": marker}
        case SessionTitle():
            update = {"title": marker}
        case SessionRewind():
            update = {"prompt": marker}  # the turn it went back to is no secret
        case CommandRun():
            # the command's name stays: what it was is no secret, what it said may be
            update = {"line": f"{payload.line.split(maxsplit=1)[0]} {marker}", "result": marker}
        case AreaRegister() | AreaState():
            update = {"state": {"redacted": marker}}
        case _:
            raise TypeError(f"{payload.event_type} holds no content to redact")
    return payload.model_copy(update=update)
