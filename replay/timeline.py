"""The context timeline: what the session's working state was at any seq, from its log alone.

As of any seq it gives the Context (items with provenance; label and cost on demand), the Areas
with life, flow and effect range, the cursor, the GC history, the pins, the bound model and the
last step's request (`request_at`), as the same frozen views the Agent gives live
(`engine/agent/views.py`), so the timeline at the last seq equals the Agent's views.

It is a projection (`replay/projection.py`): fed one event at a time it follows a live session,
built from a stored log it replays it, with the same result. Seeking is cheap: every `every`
events a checkpoint keeps the rebuilder's small state and only the Context items that changed since
the previous checkpoint (the items themselves are shared), so a seek restores the nearest
checkpoint and replays at most `every` events, and the checkpoints cost pointers, not items.
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.agent.views import (
    FLOOR_DEFAULT_LABEL,
    AreaView,
    AssemblyView,
    ModelView,
    PinView,
    RequestItemView,
    area_view,
    floor_view,
    item_view,
    model_view,
    pin_views,
    tool_views,
)
from engine.config import Config
from engine.context import Context, ContextRebuilder, Provenance, RebuildMark
from engine.context.budget import item_text
from engine.context.egress import label_for_provenance
from engine.context.floor import PinBoard
from engine.context.grants import GrantState, GrantTracker
from engine.context.orchestrator import GroupIndex
from engine.context.prefix import PrefixTally, PrefixView
from engine.context.rebuilder import GarbageEntry
from engine.context.usage import ContextUsage, TokenRate, context_usage
from engine.errors import TrellisError
from engine.events import (
    CompactEnd,
    Event,
    FloorBlock,
    GcCollect,
    ModelBind,
    Payload,
    PinAdd,
    PinRemove,
    SessionRewind,
    StepEnd,
    StepStart,
    ToolDefinition,
    TurnEnd,
    TurnStart,
)
from engine.gateway.base import GatewayType, NativeContent
from engine.privacy import PrivacyClass

DEFAULT_CHECKPOINT_EVERY = 64
"""Events between checkpoints: a seek replays at most this many."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Collection:
    """One entry of the GC history: a `gc/collect`, or a compaction (`compact/end`)."""

    seq: int
    turn: int | None
    compaction: bool
    areas: tuple[str, ...]  # the collected Areas (none for a compaction)
    earliest: int
    reclaimed: tuple[GarbageEntry, ...]
    promoted: int  # items appended in their place (promoted messages, or the summary)
    carried: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TimelineState:
    """The session as of `seq`: plain values, independent of the timeline."""

    seq: int
    turn: int | None  # the open turn, None between turns
    context: Context  # a copy: items with their provenance
    areas: tuple[AreaView, ...]
    cursor: str | None
    collections: tuple[Collection, ...]  # the GC history so far, oldest first
    pins: tuple[PinView, ...]
    model: ModelView | None  # None before the first binding, or for a model the config lacks
    last_step: StepStart | None  # the last step's figures, digest, floor and kept groups
    last_step_seq: int | None
    shell_class: PrivacyClass

    def item_views(self) -> tuple[RequestItemView, ...]:
        """Every Context item with its provenance, label and cost (computed when asked)."""
        return tuple(
            item_view(
                i,
                provenance,
                label_for_provenance(provenance, shell_class=self.shell_class),
                item_text(item),
                reserved=False,
            )
            for i, (item, provenance) in enumerate(self.context.entries())
        )


@dataclass(slots=True)
class _Cursor:
    """The replaying state at one seq: the Context rebuilder and what the views need beside it."""

    rebuilder: ContextRebuilder
    grants: GrantTracker = field(default_factory=GrantTracker)
    pins: PinBoard = field(default_factory=PinBoard)
    last_step: tuple[int, StepStart] | None = None

    def apply(self, event: Event) -> None:
        self.rebuilder.apply(event)
        data = event.data
        if (step := _CURSOR_STEPS.get(type(data))) is not None:
            step(self, event, data)

    def skip(self, event: Event) -> None:
        """An event a rewind took out of the history (`engine.rewind_intervals`)."""
        self.rebuilder.skip(event)
        if type(event.data) is ModelBind:
            self.grants.skip(event.data)

    def _turn_start(self, event: Event, data: TurnStart) -> None:
        self.grants.begin_turn()

    def _turn_end(self, event: Event, data: TurnEnd) -> None:
        self.grants.end_turn()

    def _model_bind(self, event: Event, data: ModelBind) -> None:
        self.grants.apply(data)

    def _step_start(self, event: Event, data: StepStart) -> None:
        self.last_step = (event.seq, data)

    def _pin(self, event: Event, data: PinAdd | PinRemove) -> None:
        self.pins.apply(data)


_CURSOR_STEPS: dict[type[Payload], Callable[[_Cursor, Event, Any], None]] = {
    TurnStart: _Cursor._turn_start,
    TurnEnd: _Cursor._turn_end,
    ModelBind: _Cursor._model_bind,
    StepStart: _Cursor._step_start,
    PinAdd: _Cursor._pin,
    PinRemove: _Cursor._pin,
}
"""What each kind of event does to a cursor beside its rebuilder, found by the payload's exact
class (see `engine.events.Payload`: a table, as the timeline folds every event of the log)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Checkpoint:
    """A cursor's state at `seq`; its Context is the previous checkpoint's first `prefix` items
    followed by `items`/`provenances`."""

    seq: int
    mark: RebuildMark
    grants: GrantState
    pins: tuple[tuple[str, str], ...]
    last_step: tuple[int, StepStart] | None
    prefix: int
    items: tuple[NativeContent, ...]
    provenances: tuple[Provenance, ...]

    @property
    def length(self) -> int:
        return self.prefix + len(self.items)


class Timeline:
    """Replays a session's log with checkpoints; `at(seq)` is the state as of any seq."""

    def __init__(
        self,
        gateway_type: GatewayType,
        *,
        config: Config | None = None,
        every: int = DEFAULT_CHECKPOINT_EVERY,
    ) -> None:
        if every < 1:
            raise ValueError(f"checkpoints need at least 1 event between them, got {every}")
        self._gateway_type = gateway_type
        self._config = config if config is not None else Config()
        self._shell_class = self._config.context.shell_privacy_class()
        self._every = every
        self._events: list[Event] = []
        self._head = _Cursor(ContextRebuilder(gateway_type))
        self._low = 0  # the shortest the head's Context was since the last checkpoint
        self._checkpoints: list[_Checkpoint] = []
        self._checkpoint_seqs: list[int] = []
        self._collections: list[Collection] = []
        self._collection_seqs: list[int] = []
        self._step_seqs: list[int] = []
        self._prefix = PrefixTally()  # every step's figures, as the live agent tallied them
        self._prefixes: dict[int, PrefixView] = {}  # by the seq of the step/start
        self._step_ends: dict[int, tuple[int, StepEnd]] = {}  # by step/start seq: seq, payload
        self._step_rates: dict[int, TokenRate | None] = {}  # by step/start seq: the rate then
        self._rate: TokenRate | None = None  # as `UsageTally` keeps it
        self._floor: dict[str, FloorBlock] = {}
        self._tools: dict[str, ToolDefinition] = {}
        self._seek: _Cursor | None = None  # the last seek's cursor: stepping forward reuses it
        # the Context of the last checkpoint restored, gathered from the checkpoints' pieces:
        # stepping back within one checkpoint's span restores it again and again
        self._gathered: tuple[int, Context] | None = None
        self._checkpoint()

    @property
    def gateway_type(self) -> GatewayType:
        """The provider whose wire shape the requests are projected into."""
        return self._gateway_type

    @classmethod
    def of(
        cls,
        gateway_type: GatewayType,
        events: Iterable[Event],
        *,
        config: Config | None = None,
        every: int = DEFAULT_CHECKPOINT_EVERY,
    ) -> Timeline:
        """A timeline fed every event of `events`."""
        timeline = cls(gateway_type, config=config, every=every)
        for event in events:
            timeline.apply(event)
        return timeline

    @property
    def seq(self) -> int:
        """The seq of the last event applied (-1 before the first)."""
        return self._head.rebuilder.seq

    @property
    def first_seq(self) -> int:
        return self._events[0].seq if self._events else -1

    @property
    def events(self) -> Sequence[Event]:
        return tuple(self._events)

    # --- the projection ------------------------------------------------------------------------

    def apply(self, event: Event) -> None:
        """Follow the next event of the log (live or stored)."""
        garbage = self._head.rebuilder.garbage_count
        self._events.append(event)
        self._head = self._advance(self._head, event)
        data = event.data
        if (note := _TIMELINE_NOTES.get(type(data))) is not None:
            note(self, event, data, garbage)
        if (view := self._prefix.apply(data)) is not None:
            self._prefixes[event.seq] = view
        if len(self._events) % self._every == 0:
            self._checkpoint()

    # Each `_note_*` takes the event, its payload and the head rebuilder's garbage count before it.

    def _note_rewind(self, event: Event, data: SessionRewind, garbage: int) -> None:
        self._low = 0  # the Context is another one: the next checkpoint keeps all of it

    def _note_gc(self, event: Event, data: GcCollect, garbage: int) -> None:
        self._low = min(self._low, data.earliest)
        self._note_collection(event, garbage, data.areas, data.earliest, False)

    def _note_compact(self, event: Event, data: CompactEnd, garbage: int) -> None:
        self._low = min(self._low, data.earliest)
        self._note_collection(event, garbage, (), data.earliest, True)

    def _note_step_start(self, event: Event, data: StepStart, garbage: int) -> None:
        self._step_seqs.append(event.seq)
        self._step_rates[event.seq] = self._rate

    def _note_step_end(self, event: Event, data: StepEnd, garbage: int) -> None:
        if not self._step_seqs:
            return
        step_seq = self._step_seqs[-1]
        self._step_ends[step_seq] = (event.seq, data)
        figures = self._step_start(step_seq).figures
        self._rate = TokenRate.of(figures, data.usage) or self._rate

    def _note_floor(self, event: Event, data: FloorBlock, garbage: int) -> None:
        self._floor[data.hash] = data

    def _note_tool(self, event: Event, data: ToolDefinition, garbage: int) -> None:
        self._tools[data.hash] = data

    def snapshot(self) -> TimelineState:
        """The state after the last event applied."""
        return self._state(self._head)

    # --- seeking --------------------------------------------------------------------------------

    def at(self, seq: int) -> TimelineState:
        """The state right after the event `seq` (before the first event for -1)."""
        return self._state(self._cursor_at(seq))

    def request_at(self, seq: int) -> AssemblyView | None:
        """What the last request up to `seq` held, as the Agent's `last_assembly` showed it then:
        the floor blocks, the figures, and every item with its provenance, label and cost."""
        position = bisect_right(self._step_seqs, seq) - 1
        if position < 0:
            return None
        step_seq = self._step_seqs[position]
        cursor = self._cursor_at(step_seq)
        assert cursor.last_step is not None
        step = cursor.last_step[1]
        rebuilder = cursor.rebuilder
        context = rebuilder.context
        retained = frozenset(
            area_id for area_id, record in rebuilder.areas.items() if record.life.value == "retain"
        )
        index = GroupIndex(shell_class=self._shell_class)
        index.sync(context, context.provenance_view)
        reserved = index.reserved(retained)
        in_lane = frozenset(reserved)
        start = index.current_start(step.turn)
        kept = step.figures.groups_kept
        sent = sorted(
            (
                *reserved,
                *index.members(start - kept, start, in_lane),
                *index.current(start, in_lane),
            )
        )
        egress = step.egress if step.egress is not None else _egress_of(self._model(cursor))
        items = tuple(
            item_view(
                i, index.provenance(i), index.label(i), item_text(context[i]), reserved=i in in_lane
            )
            for i in sent
        )
        return AssemblyView(
            turn=self._cursor_at(seq).rebuilder.turn,  # the turn open at `seq`, as live
            figures=step.figures,
            prefix_digest=step.prefix_digest,
            floor=tuple(floor_view(self._floor[h]) for h in step.floor),
            items=items,
            kept_groups=step.kept,
            egress=egress,
            label=step.label if step.label is not None else FLOOR_DEFAULT_LABEL,
            tools=tool_views(self._tools[h] for h in step.tools),
            prefix=self._prefixes.get(step_seq),
        )

    def usage_at(self, seq: int) -> ContextUsage | None:
        """The request tokens of the step `request_at(seq)` gives, as the live status line showed
        them at `seq`: reported once its `step/end` came, estimated before (at the rate of the
        last step that reported, as `UsageTally`); None before any step."""
        position = bisect_right(self._step_seqs, seq) - 1
        if position < 0:
            return None
        step_seq = self._step_seqs[position]
        ended = self._step_ends.get(step_seq)
        usage = ended[1].usage if ended is not None and ended[0] <= seq else None
        rate = self._step_rates[step_seq]
        return context_usage(self._step_start(step_seq).figures, usage, rate=rate)

    def _step_start(self, seq: int) -> StepStart:
        start = self._events[self._position(seq)].data
        assert type(start) is StepStart
        return start

    def _cursor_at(self, seq: int) -> _Cursor:
        if seq > self.seq or seq < -1:
            raise IndexError(f"seq {seq} is outside the timeline (-1..{self.seq})")
        if seq == self.seq:
            return self._head
        cached = self._seek
        nearest = self._checkpoint_seqs[bisect_right(self._checkpoint_seqs, seq) - 1]
        if cached is None or not (nearest <= cached.rebuilder.seq <= seq):
            cached = self._restore(bisect_right(self._checkpoint_seqs, seq) - 1)
        first = self._position(cached.rebuilder.seq + 1)
        # a slice, not `islice`: that walks the list from its start, so a step in a long log
        # cost as many item visits as the events before it
        for event in self._events[first : self._position(seq + 1)]:
            cached = self._advance(cached, event)
        self._seek = cached
        return cached

    def _advance(self, cursor: _Cursor, event: Event) -> _Cursor:
        """`cursor` moved past `event`: a conversation rewind gives the cursor as of the seq
        before its `to_seq`, which then passes over the rewound events (the truncated history,
        which equals the history with the rewound intervals left out)."""
        data = event.data
        if type(data) is not SessionRewind or not data.conversation:
            cursor.apply(event)
            return cursor
        before = data.to_seq - 1
        rewound = self._restore(bisect_right(self._checkpoint_seqs, before) - 1)
        start = self._position(rewound.rebuilder.seq + 1)
        for earlier in self._events[start : self._position(before + 1)]:
            rewound = self._advance(rewound, earlier)
        for taken_out in self._events[self._position(data.to_seq) : self._position(event.seq)]:
            rewound.skip(taken_out)
        rewound.apply(event)
        return rewound

    def _position(self, seq: int) -> int:
        """The index in `_events` of the event `seq` (or where it would be)."""
        return seq - self.first_seq if self._events else 0

    # --- checkpoints --------------------------------------------------------------------------

    def _checkpoint(self) -> None:
        head = self._head
        context = head.rebuilder.context
        previous = self._checkpoints[-1].length if self._checkpoints else 0
        prefix = min(self._low, previous)
        self._checkpoints.append(
            _Checkpoint(
                seq=head.rebuilder.seq,
                mark=head.rebuilder.mark(),
                grants=head.grants.snapshot(),
                pins=head.pins.pins,
                last_step=head.last_step,
                prefix=prefix,
                items=context[prefix:],
                provenances=context.provenances_from(prefix),
            )
        )
        self._checkpoint_seqs.append(head.rebuilder.seq)
        self._low = len(context)

    def _restore(self, position: int) -> _Cursor:
        checkpoint = self._checkpoints[position]
        gathered = self._gathered
        if gathered is None or gathered[0] != position:
            # kept for the next seek behind the same checkpoint; the rebuilder copies it
            gathered = self._gathered = (position, self._gather(position))
        context = gathered[1]
        pins = PinBoard(dict(checkpoint.pins))
        return _Cursor(
            ContextRebuilder.from_mark(self._gateway_type, checkpoint.mark, context),
            GrantTracker.restored(checkpoint.grants),
            pins,
            checkpoint.last_step,
        )

    def _gather(self, position: int) -> Context:
        """The Context's items and provenances at checkpoint `position`, from the pieces each
        checkpoint keeps (what changed since the one before)."""
        checkpoint = self._checkpoints[position]
        items: list[Sequence[NativeContent]] = []
        provenances: list[Sequence[Provenance]] = []
        need = checkpoint.length
        for older in reversed(self._checkpoints[: position + 1]):
            if need <= 0:
                break
            if need > older.prefix:
                items.append(older.items[: need - older.prefix])
                provenances.append(older.provenances[: need - older.prefix])
                need = older.prefix
        return Context.restored(
            self._gateway_type,
            list(itertools.chain.from_iterable(reversed(items))),
            list(itertools.chain.from_iterable(reversed(provenances))),
        )

    # --- views --------------------------------------------------------------------------------

    def _note_collection(
        self, event: Event, garbage: int, areas: tuple[str, ...], earliest: int, compaction: bool
    ) -> None:
        head = self._head.rebuilder
        context_after = len(head.context)
        carried = len(event.data.carried) if isinstance(event.data, GcCollect | CompactEnd) else 0
        self._collections.append(
            Collection(
                seq=event.seq,
                turn=head.turn,
                compaction=compaction,
                areas=areas,
                earliest=earliest,
                reclaimed=head.garbage_from(garbage),
                promoted=context_after - earliest - carried,
                carried=carried,
            )
        )
        self._collection_seqs.append(event.seq)

    def _state(self, cursor: _Cursor) -> TimelineState:
        rebuilder = cursor.rebuilder
        seq = rebuilder.seq
        cursor_id = rebuilder.cursor
        areas = tuple(
            area_view(
                area_id, record.name, record.life, record.flow, record.range, cursor=cursor_id
            )
            for area_id, record in rebuilder.areas.items()
        )
        return TimelineState(
            seq=seq,
            turn=rebuilder.turn,
            context=rebuilder.context.copy(),
            areas=areas,
            cursor=cursor_id,
            collections=tuple(self._collections[: bisect_right(self._collection_seqs, seq)]),
            pins=pin_views(cursor.pins.pins),
            model=self._model(cursor),
            last_step=None if cursor.last_step is None else cursor.last_step[1],
            last_step_seq=None if cursor.last_step is None else cursor.last_step[0],
            shell_class=self._shell_class,
        )

    def _model(self, cursor: _Cursor) -> ModelView | None:
        grants = cursor.grants
        active = grants.active
        if active is None:
            return None
        try:
            _, entry = self._config.model(active.model)
        except TrellisError:
            return None
        upcoming = grants.staged or active
        return model_view(
            active.model,
            active.epoch,
            entry,
            model_id=entry.model or active.model,
            next_name=upcoming.model,
        )


_TIMELINE_NOTES: dict[type[Payload], Callable[[Timeline, Event, Any, int], None]] = {
    SessionRewind: Timeline._note_rewind,
    GcCollect: Timeline._note_gc,
    CompactEnd: Timeline._note_compact,
    StepStart: Timeline._note_step_start,
    StepEnd: Timeline._note_step_end,
    FloorBlock: Timeline._note_floor,
    ToolDefinition: Timeline._note_tool,
}
"""What each kind of event notes in the timeline beside its head cursor, by exact class (as
`_CURSOR_STEPS`)."""


def _egress_of(model: ModelView | None) -> PrivacyClass:
    return model.egress if model is not None else PrivacyClass.restricted


def last_requests(
    events: Iterable[Event], gateway_type: GatewayType, *, config: Config | None = None
) -> tuple[AssemblyView | None, AssemblyView | None]:
    """The last request a log records and the one before it, as the inspector shows them: what
    a resumed session asked before this run, which its Agent did not assemble. Pure CPU work
    over the whole log (a front end runs it off its event loop)."""
    timeline = Timeline(gateway_type, config=config)
    steps: list[int] = []
    for event in events:
        timeline.apply(event)
        if type(event.data) is StepStart:
            steps.append(event.seq)
    # each as of its own step/start, as the live console captured it (its turn open)
    current = timeline.request_at(steps[-1]) if steps else None
    previous = timeline.request_at(steps[-2]) if len(steps) > 1 else None
    return current, previous
