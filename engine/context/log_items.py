"""One logged message to one Context item: the helpers the live loop and the rebuilder share.

The live agent appends through `emplace_event`, and `ContextRebuilder` (engine/context/rebuilder.py)
applies the log through the same functions, so a rebuilt Context matches the live one item for
item, provenance included.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.context.context import Context
from engine.context.provenance import ItemKind, Provenance
from engine.events import AssistantMessage, CompactSummary, Event, ToolResultRecord, UserMessage
from engine.message import Message, Role, Source, ToolResult

SUMMARY_SOURCE = "compaction"
"""The source of a compaction's summary in the Context."""


def message_provenance(event: Event, turn: int | None, tool_name: str = "") -> Provenance:
    """The provenance of the item a `user/message`, `assistant/message` or `tool/result` appends.

    The agent loop uses it too, so live and rebuilt provenance are the same by construction; the
    owner is stamped by CoopContext (live) or the ledger (rebuild). A tool result is sourced
    `tool:<name>` (`tool_name` is the called tool's), so labels and messages can name the tool.
    """
    # by exact class (see `Payload`)
    data = event.data
    if type(data) is UserMessage:
        return Provenance(
            kind=ItemKind.message, seq=event.seq, turn=turn, source=data.source, label=data.label
        )
    if type(data) is AssistantMessage:
        return Provenance(
            kind=ItemKind.assistant,
            seq=event.seq,
            turn=data.turn,
            source=Source("model", data.model),
            label=data.label,
        )
    if type(data) is ToolResultRecord:
        return Provenance(
            kind=ItemKind.tool_result,
            seq=event.seq,
            turn=data.turn,
            source=Source("tool", tool_name),
            label=data.label,
        )
    raise TypeError(f"{event.type} does not append a message to the Context")


LINK_ONLY = "[a link: its content was not included]"
"""The body the model sees for an attachment without text: a link no front end could read (an
ACP `resource_link` outside the workspace, say), never an empty file."""


def user_message_text(message: UserMessage) -> str:
    """What the model sees of a user/message: its content, then each attachment's text, named."""
    if not message.attachments:
        return message.content
    parts = [message.content]
    for attachment in message.attachments:
        name = attachment.uri or attachment.name
        kind = f' type="{attachment.mime_type}"' if attachment.mime_type else ""
        body = attachment.text or LINK_ONLY
        parts.append(f'<attachment name="{name}"{kind}>\n{body}\n</attachment>')
    return "\n\n".join(parts)


def emplace_event(
    context: Context,
    event: Event,
    *,
    turn: int | None,
    tool_name: str = "",
    stamp: Callable[[Provenance], Provenance] | None = None,
) -> int:
    """Put the message a `user/message`, `assistant/message` or `tool/result` carries into the
    Context, with its provenance; returns its index.

    The live agent and `ContextRebuilder` both append through here, so the two Contexts agree by
    construction. `tool_name` is the called tool's (its source, and Gemini needs it); `stamp` sets the owner where
    no CoopContext does it (the rebuild).
    """
    provenance = message_provenance(event, turn, tool_name)
    if stamp is not None:
        provenance = stamp(provenance)
    data = event.data
    if type(data) is UserMessage:
        message = Message(Role.user, user_message_text(data), data.source)
        return context.emplace_message(message, provenance)
    if type(data) is AssistantMessage:
        return context.emplace_assistant(
            data.content,
            data.tool_calls,
            provenance,
            reasoning=data.reasoning,
            provider_state=data.provider_state,
        )
    if type(data) is ToolResultRecord:
        return context.emplace_tool_result(
            ToolResult(data.call_id, data.content, data.is_error), tool_name, provenance
        )
    raise TypeError(f"{event.type} does not append a message to the Context")


def summary_message(summary: CompactSummary) -> Message:
    """The message a compaction summary becomes in the Context."""
    return Message(Role.user, summary.content, Source(SUMMARY_SOURCE))


def summary_provenance(seq: int | None, summary: CompactSummary) -> Provenance:
    return Provenance(
        kind=ItemKind.summary,
        seq=seq,
        turn=None,
        source=Source(SUMMARY_SOURCE),
        label=summary.label,
    )
