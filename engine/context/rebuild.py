"""Events to Context: the one function resume and replay both use to rebuild the working Context.

It replays the events that append to the Context (`user/message`, `assistant/message`,
`tool/result`, `area/render`, `gc/collect`) and the ones that decide ownership (`area/state`,
`area/cursor`), so the rebuilt Context matches the live one item for item, provenance included.
`compact/summary` and `compact/end` replay a compaction the same way it ran live.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from engine.context.area import (
    AreaFlowState,
    AreaLifeState,
    ContextAreaImplementation,
    EffectRange,
    RestorableArea,
)
from engine.context.compaction import SUMMARY_SOURCE, apply_compaction
from engine.context.context import Context
from engine.context.coop_context import CoopContext, Sink, area_serial
from engine.context.ownership import OwnershipLedger
from engine.context.provenance import ItemKind, Provenance
from engine.events import (
    AreaCursor,
    AreaRegister,
    AreaRender,
    AreaState,
    AssistantMessage,
    CompactEnd,
    CompactSummary,
    Event,
    GcCollect,
    ToolCallRecord,
    ToolResultRecord,
    TurnEnd,
    TurnStart,
    UserMessage,
)
from engine.gateway.base import GatewayType, NativeContent
from engine.message import Message, Role, Source, ToolResult


@dataclass(slots=True)
class AreaRecord:
    """What the log says about one Area still registered at the end of the events."""

    kind: str
    name: str
    life: AreaLifeState = AreaLifeState.retain
    flow: AreaFlowState = AreaFlowState.yielded
    state: dict[str, Any] | None = None
    range: EffectRange | None = None


@dataclass(frozen=True, slots=True)
class RebuiltContext:
    context: Context
    areas: dict[str, AreaRecord]  # registration order
    cursor: str | None
    garbage: tuple[tuple[NativeContent, Provenance], ...]
    last_serial: int = 0  # the highest `#n` ever registered: new ids continue after it


def message_provenance(event: Event, turn: int | None, tool_name: str = "") -> Provenance:
    """The provenance of the item a `user/message`, `assistant/message` or `tool/result` appends.

    The agent loop uses it too, so live and rebuilt provenance are the same by construction; the
    owner is stamped by CoopContext (live) or the ledger (rebuild). A tool result is sourced
    `tool:<name>` (`tool_name` is the called tool's), so labels and messages can name the tool.
    """
    match event.data:
        case UserMessage(source=source, label=label):
            return Provenance(
                kind=ItemKind.message, seq=event.seq, turn=turn, source=source, label=label
            )
        case AssistantMessage(turn=own_turn, model=model, label=label):
            source = Source("model", model)
            return Provenance(
                kind=ItemKind.assistant, seq=event.seq, turn=own_turn, source=source, label=label
            )
        case ToolResultRecord(turn=own_turn, label=label):
            return Provenance(
                kind=ItemKind.tool_result,
                seq=event.seq,
                turn=own_turn,
                source=Source("tool", tool_name),
                label=label,
            )
        case _:
            raise TypeError(f"{event.type} does not append a message to the Context")


def user_message_text(message: UserMessage) -> str:
    """What the model sees of a user/message: its content, then each attachment's text, named."""
    if not message.attachments:
        return message.content
    parts = [message.content]
    for attachment in message.attachments:
        name = attachment.uri or attachment.name
        parts.append(
            f'<attachment name="{name}" type="{attachment.mime_type}">\n{attachment.text}\n</attachment>'
        )
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

    The live agent and `rebuild_context` both append through here, so the two Contexts agree by
    construction. `tool_name` is the called tool's (its source, and Gemini needs it); `stamp` sets the owner where
    no CoopContext does it (the rebuild).
    """
    provenance = message_provenance(event, turn, tool_name)
    if stamp is not None:
        provenance = stamp(provenance)
    match event.data:
        case UserMessage() as user:
            message = Message(Role.user, user_message_text(user), user.source)
            return context.emplace_message(message, provenance)
        case AssistantMessage() as reply:
            return context.emplace_assistant(
                reply.content,
                reply.tool_calls,
                provenance,
                reasoning=reply.reasoning,
                provider_state=reply.provider_state,
            )
        case ToolResultRecord() as result:
            return context.emplace_tool_result(
                ToolResult(result.call_id, result.content, result.is_error), tool_name, provenance
            )
        case _:
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


def rebuild_context(gateway_type: GatewayType, events: Iterable[Event]) -> RebuiltContext:
    """Replay `events` into a new Context; returns it with the Areas' records, cursor and garbage."""
    context = Context(gateway_type)
    ledger = OwnershipLedger()
    areas: dict[str, AreaRecord] = {}
    garbage: list[tuple[NativeContent, Provenance]] = []
    tool_names: dict[str, str] = {}
    turn: int | None = None
    last_serial = 0
    pending_summary: tuple[int, CompactSummary] | None = None

    def stamped(provenance: Provenance) -> Provenance:
        holder = ledger.holder()
        return provenance.owned_by(holder) if holder is not None else provenance

    for event in events:
        match event.data:
            case TurnStart(turn=number):
                turn = number
            case TurnEnd():
                turn = None
            case UserMessage() | AssistantMessage():
                emplace_event(context, event, turn=turn, stamp=stamped)
            case ToolCallRecord(call_id=call_id, name=name):
                tool_names[call_id] = name
            case ToolResultRecord(call_id=call_id):
                emplace_event(
                    context, event, turn=turn, tool_name=tool_names.get(call_id, ""), stamp=stamped
                )
            case AreaRegister(area=area_id, kind=kind, name=name, state=state):
                areas[area_id] = AreaRecord(kind, name, state=state)
                last_serial = max(last_serial, area_serial(area_id))
            case AreaState(area=area_id, life=life, flow=flow, state=state):
                record = areas[area_id]
                record.life, record.flow = AreaLifeState(life), AreaFlowState(flow)
                if state is not None:
                    record.state = state
                ledger.states[area_id] = (record.life, record.flow)
            case AreaCursor(area=area_id):
                ledger.cursor = area_id
            case AreaRender(
                area=area_id, messages=messages, earliest=earliest, latest=latest, label=label
            ):
                for rendered in messages:
                    provenance = Provenance(
                        kind=ItemKind.area,
                        seq=event.seq,
                        turn=turn,
                        source=rendered.source,
                        label=label,
                        owner=area_id,
                    )
                    context.append_native(
                        context.codec.encode_message(rendered.to_message()), provenance
                    )
                areas[area_id].range = EffectRange(earliest, latest)
            case CompactSummary() as summary:
                pending_summary = (event.seq, summary)
            case CompactEnd() as end if pending_summary is not None:
                seq, summary = pending_summary
                pending_summary = None
                garbage += apply_compaction(
                    context,
                    earliest=end.earliest,
                    reclaimed=end.reclaimed,
                    carried=end.carried,
                    summary=context.codec.encode_message(summary_message(summary)),
                    provenance=summary_provenance(seq, summary),
                )
                shift = 1 - len(end.reclaimed)
                for record in areas.values():
                    if record.range is not None:
                        record.range = record.range.shifted(shift)
            case GcCollect() as collect:
                detached = context.detach_tail(collect.earliest)
                garbage += [detached[i - collect.earliest] for i in collect.reclaimed]
                for promoted in collect.promoted:
                    provenance = Provenance(
                        kind=ItemKind.promoted,
                        seq=event.seq,
                        turn=turn,
                        source=promoted.source,
                        label=collect.label,
                    )
                    context.append_native(
                        context.codec.encode_message(promoted.to_message()), provenance
                    )
                for i in collect.carried:
                    context.append_native(*detached[i - collect.earliest])
                for area_id in collect.areas:
                    areas.pop(area_id, None)
                    ledger.forget(area_id)
            case _:
                pass
    return RebuiltContext(context, areas, ledger.cursor, tuple(garbage), last_serial)


@dataclass(eq=False, slots=True)
class UnrestorableArea:
    """Stands in for an Area that could not be restored: retired, so its component can go."""

    area_id: str
    kind: str
    reason: str
    name: str = field(default="")

    @property
    def life_state(self) -> AreaLifeState:
        return AreaLifeState.retired

    @property
    def flow_state(self) -> AreaFlowState:
        return AreaFlowState.yielded

    def observe(self, context: object) -> None:
        _ = context

    def render(self) -> list[Message]:
        return []

    def promote(self) -> tuple[Message, ...]:
        return ()

    def gc_prologue(self) -> None:
        pass


@dataclass(frozen=True, slots=True)
class Resumed:
    coop: CoopContext
    unrestored: tuple[UnrestorableArea, ...]  # reported by name to the user


def resume_coop_context(
    rebuilt: RebuiltContext,
    kinds: Mapping[str, type[RestorableArea]],
    *,
    sink: Sink | None = None,
) -> Resumed:
    """A CoopContext over the rebuilt Context with each recorded Area restored from its state.

    DESIGN.md: an Area that cannot be restored (unknown kind, no recorded state, restore() raised)
    is treated as retired from the resume on and reported.
    """
    coop = CoopContext(rebuilt.context, sink, first_serial=rebuilt.last_serial + 1)
    unrestored: list[UnrestorableArea] = []
    adopted: list[tuple[str, AreaRecord, ContextAreaImplementation]] = []
    for area_id, record in rebuilt.areas.items():
        area: ContextAreaImplementation
        cls = kinds.get(record.kind)
        try:
            if cls is None or record.state is None:
                raise LookupError(f"no restorable kind {record.kind!r} with a recorded state")
            area = _as_area(cls.restore(record.state))
        except Exception as exc:
            area = UnrestorableArea(
                area_id, record.kind, f"{type(exc).__name__}: {exc}", record.name
            )
            unrestored.append(area)
        adopted.append((area_id, record, area))
    for area_id, record, area in adopted:
        coop.adopt(area, area_id, reported=(record.life, record.flow), snapshot=record.state)
    # Ranges go in order of increasing latest, the order the Collector walks backward.
    ranged = [(record.range, area) for _, record, area in adopted if record.range is not None]
    for effect, area in sorted(ranged, key=lambda entry: entry[0].latest):
        coop.adopt_range(area, effect)
    if rebuilt.cursor is not None and rebuilt.cursor in rebuilt.areas:
        coop.set_cursor(rebuilt.cursor)
    # Retired from the resume on, in the log as well: a stand-in that was exclusive at the cursor
    # must not own what is appended after the resume (live and rebuilt ownership agree).
    for stand_in in unrestored:
        coop.report_state(stand_in)
    return Resumed(coop, tuple(unrestored))


def _as_area(value: object) -> ContextAreaImplementation:
    required = ("life_state", "flow_state", "observe", "render", "promote", "gc_prologue")
    missing = [name for name in required if not hasattr(value, name)]
    if missing:
        raise TypeError(f"restore() returned {type(value).__name__} without {', '.join(missing)}")
    return cast(ContextAreaImplementation, value)
