"""Events to Context, one event at a time: the one rebuilder resume, rebind and replay all use.

`ContextRebuilder.apply(event)` applies the events that append to the Context (`user/message`,
`assistant/message`, `tool/result`, `area/render`, `gc/collect`, a compaction's `compact/summary`
and `compact/end`) and the ones that decide ownership (`area/state`, `area/cursor`), through the
same helpers the live loop appends with, so the Context it holds after any prefix of a log equals
the live one at that point, item for item, provenance and owners included. It is incremental, so a
live viewer feeds it each new event instead of folding the whole log again; `snapshot()` and
`copy()` take independent copies, `mark()` and `from_mark()` let a timeline checkpoint it cheaply.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from engine.context.area import AreaFlowState, AreaLifeState, EffectRange
from engine.context.compaction import apply_compaction
from engine.context.context import Context
from engine.context.coop_context import area_serial
from engine.context.log_items import emplace_event, summary_message, summary_provenance
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
    Payload,
    SessionRewind,
    ToolCallRecord,
    ToolResultRecord,
    TurnEnd,
    TurnStart,
    UserMessage,
)
from engine.gateway.base import GatewayType, NativeContent
from engine.gc_policy import gc_paused
from engine.rewind_intervals import RewoundIntervals

GarbageEntry = tuple[NativeContent, Provenance]


@dataclass(frozen=True, slots=True)
class AreaRecord:
    """What the log says about one registered Area (replaced, never changed, as events arrive)."""

    kind: str
    name: str
    life: AreaLifeState = AreaLifeState.retain
    flow: AreaFlowState = AreaFlowState.yielded
    state: dict[str, Any] | None = None
    range: EffectRange | None = None


@dataclass(frozen=True, slots=True)
class RebuiltContext:
    """A rebuilder's state as independent copies: what resume and a rebind start from."""

    context: Context
    areas: dict[str, AreaRecord]  # registration order
    cursor: str | None
    garbage: tuple[GarbageEntry, ...]
    last_serial: int = 0  # the highest `#n` ever registered: new ids continue after it


@dataclass(frozen=True, slots=True, kw_only=True)
class RebuildMark:
    """Everything a rebuilder holds at one seq except its Context and garbage, as frozen values.

    A timeline keeps one per checkpoint beside its own compact record of the Context, and resumes a
    rebuilder from it with `ContextRebuilder.from_mark`.
    """

    seq: int
    turn: int | None
    cursor: str | None
    states: tuple[tuple[str, tuple[AreaLifeState, AreaFlowState]], ...]
    areas: tuple[tuple[str, AreaRecord], ...]
    tool_names: tuple[tuple[str, str], ...]
    last_serial: int
    pending_summary: tuple[int, CompactSummary] | None


class ContextRebuilder:
    """Rebuilds the working Context from a log, one `apply(event)` at a time."""

    __slots__ = (
        "_areas",
        "_context",
        "_garbage",
        "_last_serial",
        "_ledger",
        "_pending_summary",
        "_seq",
        "_tool_names",
        "_turn",
    )

    def __init__(self, gateway_type: GatewayType) -> None:
        self._context = Context(gateway_type)
        self._ledger = OwnershipLedger()
        self._areas: dict[str, AreaRecord] = {}
        self._garbage: list[GarbageEntry] = []
        # Names of this turn's tool calls: a result follows its call in the same step.
        self._tool_names: dict[str, str] = {}
        self._turn: int | None = None
        self._last_serial = 0
        self._pending_summary: tuple[int, CompactSummary] | None = None
        self._seq = -1

    @classmethod
    def of(cls, gateway_type: GatewayType, events: Iterable[Event]) -> ContextRebuilder:
        """A rebuilder fed the history of `events` (a whole log, from seq 0): what its rewinds
        took out is skipped."""
        log = events if isinstance(events, Sequence) else list(events)
        rewound = RewoundIntervals(e for e in log if type(e.data) is SessionRewind)
        rebuilder = cls(gateway_type)
        with gc_paused():  # bulk work that makes no cycles (engine/gc_policy.py)
            rebuilder.feed(log, rewound)
        return rebuilder

    def feed(self, events: Iterable[Event], rewound: RewoundIntervals) -> None:
        """Apply `events` in order, skipping those `rewound` took out of the history."""
        for event in events:
            if event.seq in rewound:
                self.skip(event)
            else:
                self.apply(event)

    # --- reading ------------------------------------------------------------------------------

    @property
    def context(self) -> Context:
        """The Context rebuilt so far (the rebuilder's own: read it, copy it, never change it)."""
        return self._context

    @property
    def seq(self) -> int:
        """The seq of the last event applied (-1 before the first)."""
        return self._seq

    @property
    def turn(self) -> int | None:
        """The open turn after the last event applied."""
        return self._turn

    @property
    def areas(self) -> Mapping[str, AreaRecord]:
        """The registered Areas' records, in registration order (read-only)."""
        return MappingProxyType(self._areas)

    @property
    def cursor(self) -> str | None:
        return self._ledger.cursor

    @property
    def garbage(self) -> tuple[GarbageEntry, ...]:
        """Every item reclaimed by the events applied (since `from_mark`, for a resumed one)."""
        return tuple(self._garbage)

    @property
    def garbage_count(self) -> int:
        return len(self._garbage)

    def garbage_from(self, start: int) -> tuple[GarbageEntry, ...]:
        """The reclaimed items from position `start` on (costs what it returns)."""
        return tuple(self._garbage[start:])

    def snapshot(self) -> RebuiltContext:
        """Independent copies of the state: later `apply` calls do not change them."""
        return RebuiltContext(
            self._context.copy(),
            dict(self._areas),
            self._ledger.cursor,
            tuple(self._garbage),
            self._last_serial,
        )

    def copy(self) -> ContextRebuilder:
        """An independent rebuilder in the same state (items are shared; none is ever changed)."""
        twin = ContextRebuilder.from_mark(self._context.gateway_type, self.mark(), self._context)
        twin._garbage = list(self._garbage)
        return twin

    def mark(self) -> RebuildMark:
        return RebuildMark(
            seq=self._seq,
            turn=self._turn,
            cursor=self._ledger.cursor,
            states=tuple(self._ledger.states.items()),
            areas=tuple(self._areas.items()),
            tool_names=tuple(self._tool_names.items()),
            last_serial=self._last_serial,
            pending_summary=self._pending_summary,
        )

    @classmethod
    def from_mark(
        cls, gateway_type: GatewayType, mark: RebuildMark, context: Context
    ) -> ContextRebuilder:
        """A rebuilder in the state `mark` recorded, over a copy of `context` (the Context at the
        mark, in the rebuilder's format). Its garbage starts empty."""
        if context.gateway_type is not gateway_type:
            raise ValueError(
                f"the Context at the mark is {context.gateway_type.value}, not {gateway_type.value}"
            )
        rebuilder = cls(gateway_type)
        rebuilder._context = context.copy()
        rebuilder._ledger = OwnershipLedger(dict(mark.states), mark.cursor)
        rebuilder._areas = dict(mark.areas)
        rebuilder._tool_names = dict(mark.tool_names)
        rebuilder._turn = mark.turn
        rebuilder._last_serial = mark.last_serial
        rebuilder._pending_summary = mark.pending_summary
        rebuilder._seq = mark.seq
        return rebuilder

    # --- replaying ----------------------------------------------------------------------------

    def apply(self, event: Event) -> None:
        """Replay one event; events must come in log order."""
        if event.seq <= self._seq:
            raise ValueError(f"event {event.seq} arrives after event {self._seq}: out of order")
        self._seq = event.seq
        # by exact class (see `Payload`)
        data = event.data
        step = _STEPS.get(type(data))
        if step is not None:
            step(self, event, data)

    def skip(self, event: Event) -> None:
        """Pass an event a rewind took out of the history (`engine.rewind_intervals`): it changes
        nothing but the position, and the Area numbering, which never reuses an id."""
        if event.seq <= self._seq:
            raise ValueError(f"event {event.seq} arrives after event {self._seq}: out of order")
        self._seq = event.seq
        data = event.data
        if type(data) is AreaRegister:
            self._last_serial = max(self._last_serial, area_serial(data.area))

    def _turn_start(self, event: Event, data: TurnStart) -> None:
        self._turn = data.turn
        self._tool_names.clear()

    def _turn_end(self, event: Event, data: TurnEnd) -> None:
        self._turn = None

    def _message(self, event: Event, data: UserMessage | AssistantMessage) -> None:
        emplace_event(self._context, event, turn=self._turn, stamp=self._stamped)

    def _tool_call(self, event: Event, data: ToolCallRecord) -> None:
        self._tool_names[data.call_id] = data.name

    def _tool_result(self, event: Event, data: ToolResultRecord) -> None:
        name = self._tool_names.get(data.call_id, "")
        emplace_event(self._context, event, turn=self._turn, tool_name=name, stamp=self._stamped)

    def _area_register(self, event: Event, data: AreaRegister) -> None:
        self._areas[data.area] = AreaRecord(data.kind, data.name, state=data.state)
        self._last_serial = max(self._last_serial, area_serial(data.area))

    def _area_state(self, event: Event, data: AreaState) -> None:
        record = self._areas[data.area]
        record = replace(
            record,
            life=AreaLifeState(data.life),
            flow=AreaFlowState(data.flow),
            state=data.state if data.state is not None else record.state,
        )
        self._areas[data.area] = record
        self._ledger.states[data.area] = (record.life, record.flow)

    def _area_cursor(self, event: Event, data: AreaCursor) -> None:
        self._ledger.cursor = data.area

    def _area_render(self, event: Event, data: AreaRender) -> None:
        self._render(event.seq, data)

    def _compact_summary(self, event: Event, data: CompactSummary) -> None:
        self._pending_summary = (event.seq, data)

    def _compact_end(self, event: Event, data: CompactEnd) -> None:
        if self._pending_summary is not None:
            self._compact(data)

    def _gc_collect(self, event: Event, data: GcCollect) -> None:
        self._collect(event.seq, data)

    def _stamped(self, provenance: Provenance) -> Provenance:
        holder = self._ledger.holder()
        return provenance.owned_by(holder) if holder is not None else provenance

    def _render(self, seq: int, render: AreaRender) -> None:
        context = self._context
        for rendered in render.messages:
            provenance = Provenance(
                kind=ItemKind.area,
                seq=seq,
                turn=self._turn,
                source=rendered.source,
                label=render.label,
                owner=render.area,
            )
            context.append_native(context.codec.encode_message(rendered.to_message()), provenance)
        record = self._areas[render.area]
        self._areas[render.area] = replace(
            record, range=EffectRange(render.earliest, render.latest)
        )

    def _compact(self, end: CompactEnd) -> None:
        assert self._pending_summary is not None
        seq, summary = self._pending_summary
        self._pending_summary = None
        context = self._context
        self._garbage += apply_compaction(
            context,
            earliest=end.earliest,
            reclaimed=end.reclaimed,
            carried=end.carried,
            summary=context.codec.encode_message(summary_message(summary)),
            provenance=summary_provenance(seq, summary),
        )
        shift = 1 - len(end.reclaimed)
        for area_id, record in self._areas.items():
            if record.range is not None:
                self._areas[area_id] = replace(record, range=record.range.shifted(shift))

    def _collect(self, seq: int, collect: GcCollect) -> None:
        # Same order as the live Collector: detach, garbage, promoted, carried.
        context = self._context
        detached = context.detach_tail(collect.earliest)
        self._garbage += [detached[i - collect.earliest] for i in collect.reclaimed]
        for promoted in collect.promoted:
            provenance = Provenance(
                kind=ItemKind.promoted,
                seq=seq,
                turn=self._turn,
                source=promoted.source,
                label=collect.label,
            )
            context.append_native(context.codec.encode_message(promoted.to_message()), provenance)
        for i in collect.carried:
            context.append_native(*detached[i - collect.earliest])
        for area_id in collect.areas:
            self._areas.pop(area_id, None)
            self._ledger.forget(area_id)


_STEPS: dict[type[Payload], Callable[[ContextRebuilder, Event, Any], None]] = {
    TurnStart: ContextRebuilder._turn_start,
    TurnEnd: ContextRebuilder._turn_end,
    UserMessage: ContextRebuilder._message,
    AssistantMessage: ContextRebuilder._message,
    ToolCallRecord: ContextRebuilder._tool_call,
    ToolResultRecord: ContextRebuilder._tool_result,
    AreaRegister: ContextRebuilder._area_register,
    AreaState: ContextRebuilder._area_state,
    AreaCursor: ContextRebuilder._area_cursor,
    AreaRender: ContextRebuilder._area_render,
    CompactSummary: ContextRebuilder._compact_summary,
    CompactEnd: ContextRebuilder._compact_end,
    GcCollect: ContextRebuilder._gc_collect,
}
"""What each kind of event does to the replayed state; the other kinds change nothing."""


def rebuild_context(gateway_type: GatewayType, events: Iterable[Event]) -> RebuiltContext:
    """The Context, Areas, cursor and garbage after `events`: a rebuilder fed them all, snapshot."""
    return ContextRebuilder.of(gateway_type, events).snapshot()
