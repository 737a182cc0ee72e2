"""CoopContext: schedules Areas over one Context and reclaims retired tails
(docs/spec/context-areas.md).

Areas sit on a ring in registration order (the cursor walks it); Areas with an effect range sit in
an insertion-ordered dict kept in order of increasing `latest`, so the Collector walks only the
tail component. A render touches only the Areas it collects, observes or renders.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar

from engine.context.area import (
    AreaFlowState,
    AreaLifeState,
    ContextAreaImplementation,
    EffectRange,
    is_restorable,
)
from engine.context.context import Context
from engine.context.egress import label_for_provenance
from engine.context.errors import AreaCallbackError, AreaRegistrationError
from engine.context.ownership import holds_exclusively
from engine.context.provenance import ItemKind, Provenance
from engine.context.slots import RangesView, Ring, Slot
from engine.events import (
    AreaCursor,
    AreaRegister,
    AreaRender,
    AreaState,
    Event,
    GcCollect,
    MessageData,
    Payload,
)
from engine.gateway.base import NativeContent
from engine.message import Message, Source
from engine.privacy import PrivacyClass, PrivatizationLabel, join_all

if TYPE_CHECKING:  # imported when first needed: a run without a collection or /compact never is
    from engine.context.collector import Component
    from engine.context.compaction import CompactionPlan

INTERNAL = PrivatizationLabel(cls=PrivacyClass.internal)

Sink = Callable[[Payload], object]
"""Receives every area and GC event; if it returns the logged `Event`, its seq is the provenance's."""

T = TypeVar("T")

# Looking an Enum member up on its class is slow (it goes through EnumType): hot paths use this.
_RETAIN, _RETIRED = AreaLifeState.retain, AreaLifeState.retired

_serial = attrgetter("serial")


def area_serial(area_id: str) -> int:
    """The session-wide number `n` of an id `kind#n`."""
    number = area_id.rpartition("#")[2]
    return int(number) if number.isdigit() else 0


class CoopContext:
    """Registers Areas, renders them into the Context and collects their reclaimable tails."""

    def __init__(
        self, context: Context, sink: Sink | None = None, *, first_serial: int = 1
    ) -> None:
        """`first_serial` numbers the next registered Area (resume continues the session's ids)."""
        self._context = context
        self._sink = sink
        self._slots: dict[ContextAreaImplementation, Slot] = {}
        self._by_id: dict[str, Slot] = {}
        self._ring = Ring()
        self._cursor: Slot | None = None
        self._ranged: dict[Slot, None] = {}  # increasing latest
        # Never-rendered Areas: those without a retirement notice are read at every collection;
        # those known to have retired (noticed or reported) are collected at the next one.
        self._silent: dict[Slot, None] = {}
        self._retiring: dict[Slot, None] = {}
        self._garbage: list[tuple[NativeContent, Provenance]] = []
        self._serial = first_serial - 1
        self._rendering = False
        self._notice = self._noticed  # one bound method handed to every Area that takes it
        self._cuts = context.cuts  # the Context's cuts when the kept observe() snapshots were made
        context.set_owner_stamp(self._stamp)

    # --- public view ----------------------------------------------------------------------

    @property
    def context(self) -> Context:
        return self._context

    @property
    def cursor(self) -> ContextAreaImplementation | None:
        return self._cursor.area if self._cursor is not None else None

    @property
    def cursor_id(self) -> str | None:
        return self._cursor.id if self._cursor is not None else None

    @property
    def ranges(self) -> Mapping[str, EffectRange]:
        """The effect ranges by Area id, in order of increasing `latest` (read-only)."""
        return RangesView(self._by_id, self._ranged)

    @property
    def areas(self) -> tuple[ContextAreaImplementation, ...]:
        """The registered Areas in registration (cursor) order."""
        return tuple(slot.area for slot in self._ring)

    @property
    def garbage(self) -> tuple[NativeContent, ...]:
        """Every reclaimed item, in the order it was reclaimed."""
        return tuple(item for item, _ in self._garbage)

    @property
    def garbage_entries(self) -> tuple[tuple[NativeContent, Provenance], ...]:
        return tuple(self._garbage)

    @property
    def holder(self) -> str | None:
        """The id of the Area that owns items appended now (it holds the cursor exclusively)."""
        slot = self._cursor
        if slot is not None and holds_exclusively(slot.reported_life, slot.reported_flow):
            return slot.id
        return None

    def area_id(self, area: ContextAreaImplementation) -> str:
        return self._slots[area].id

    def reported_state(
        self, area: ContextAreaImplementation
    ) -> tuple[AreaLifeState, AreaFlowState] | None:
        """The life and flow last recorded for the Area (what the log says), without calling it."""
        return self._slots[area].reported

    def area_by_id(self, area_id: str) -> ContextAreaImplementation:
        return self._by_id[area_id].area

    def __contains__(self, area: object) -> bool:
        try:
            return area in self._slots
        except TypeError:
            return False

    # --- registration ---------------------------------------------------------------------

    def register(self, area: ContextAreaImplementation) -> str:
        """Add an Area at the end of the ring and return its session-unique id.

        Raises `AreaRegistrationError` for an unhashable Area or a second registration.
        """
        try:
            existing = self._slots.get(area)
        except TypeError as exc:
            message = (
                f"cannot register {type(area).__name__}: an Area must be hashable by identity "
                "(for a dataclass use @dataclass(eq=False))"
            )
            raise AreaRegistrationError(message) from exc
        if existing is not None:
            same = "this instance" if existing.area is area else "an equal Area"
            message = f"cannot register {type(area).__name__}: {same} is already registered as {existing.id}"
            raise AreaRegistrationError(message)
        kind = getattr(area, "kind", None)
        restorable = kind is not None and is_restorable(area)
        if not restorable:
            kind = type(area).__name__
        serial = self._serial + 1
        slot = Slot(area, f"{kind}#{serial}", serial, restorable)
        # Every callback runs before anything is recorded: a failing one registers nothing. The
        # name is read only for the `area/register` event: nothing else keeps it, and without a
        # sink register() is on a hot path (tests/bench/context.py).
        sink = self._sink
        snapshot = self._snapshot(slot) if restorable else None
        name = self._name(slot) if sink is not None else ""
        # The life, flow and notice reads of _life, _flow and _subscribe, inlined: register() is
        # on a hot path, and a call each is a share of it.
        try:
            life = area.life_state
            if type(life) is not AreaLifeState:
                life = AreaLifeState(life)
        except Exception as exc:
            raise AreaCallbackError(slot.id, type(area).__name__, "life_state", exc) from exc
        try:
            flow = area.flow_state
            if type(flow) is not AreaFlowState:
                flow = AreaFlowState(flow)
        except Exception as exc:
            raise AreaCallbackError(slot.id, type(area).__name__, "flow_state", exc) from exc
        try:
            subscribe = getattr(area, "subscribe_retirement", None)
            if subscribe is not None:
                subscribe(self._notice)
                slot.notice = _RETAIN
        except Exception as exc:
            message = "subscribe_retirement"
            raise AreaCallbackError(slot.id, type(area).__name__, message, exc) from exc
        if sink is not None:
            sink(AreaRegister(area=slot.id, kind=kind, name=name, state=snapshot))
        self._serial = serial
        self._link(slot, life)
        slot.reported_life, slot.reported_flow, slot.snapshot = life, flow, snapshot
        if sink is not None:
            sink(AreaState(area=slot.id, life=life.value, flow=flow.value, state=snapshot))
        return slot.id

    def report_state(self, area: ContextAreaImplementation) -> None:
        """Record the Area's current life, flow and (a restorable one's) state: `area/state`
        when any changed since last reported. Resume retires an Area it could not restore this
        way, in the log too; an Area changed between renders (a command edited it) is recorded
        at once, so a resume restores it as it is now."""
        slot = self._slots[area]
        self._note(slot, self._life(slot), self._flow(slot), check_snapshot=True)

    def adopt(
        self,
        area: ContextAreaImplementation,
        area_id: str,
        *,
        reported: tuple[AreaLifeState, AreaFlowState],
        snapshot: dict[str, Any] | None,
    ) -> None:
        """Re-seat a restored Area under its recorded id (resume), in registration order; emits
        nothing."""
        serial = area_serial(area_id)
        self._serial = max(self._serial, serial)
        slot = Slot(area, area_id, serial, is_restorable(area), snapshot)
        self._subscribe(slot)
        self._link(slot, self._life(slot) if slot.notice is not None else reported[0])
        slot.report(reported)

    def adopt_range(self, area: ContextAreaImplementation, effect: EffectRange) -> None:
        """Give an adopted Area its recorded range; call in order of increasing `latest`."""
        slot = self._slots[area]
        slot.range, slot.observed = effect, None
        self._silent.pop(slot, None)
        self._retiring.pop(slot, None)
        self._ranged[slot] = None

    def set_cursor(self, area_id: str | None) -> None:
        """Re-seat the cursor (resume); emits nothing."""
        self._cursor = self._by_id[area_id] if area_id is not None else None

    # --- render ---------------------------------------------------------------------------

    def render(self, *, turn: int | None = None) -> Context:
        """Collect first, then run one pass from the cursor; returns the same Context every time.

        `turn` is recorded in the provenance of rendered and promoted items. An exception in an
        Area callback propagates as `AreaCallbackError`; the Context is as before that callback.
        """
        self._rendering = True
        try:
            self._collect(turn)
            self._pass(turn)
            if self._cursor is not None:
                # Report the cursor Area's state so ownership can be read from the events.
                self._report(self._cursor)
        finally:
            self._rendering = False
        return self._context

    def _pass(self, turn: int | None) -> None:
        # spec: one pass from the cursor; each retained Area at most once, wrapping once.
        if self._ring.head is None:
            return
        if self._cursor is None:
            self._move_cursor(self._ring.head)
        assert self._cursor is not None
        # The hot path: the Context's length kept here, changed only by what this pass appends.
        retain, retired = AreaLifeState.retain, AreaLifeState.retired
        exclusive, yielded = AreaFlowState.exclusive, AreaFlowState.yielded
        context = self._context
        length = len(context)
        items = context.item_list  # the same list for the whole pass (only rebind() replaces it)
        if context.cuts != self._cuts:
            # items were detached or replaced: the kept observe() snapshots may not hold them
            for ranged in self._ranged:
                ranged.observed = None
            self._cuts = context.cuts
        start = slot = self._cursor
        while True:
            area = slot.area
            # Life is read on arrival; after observe() and render() an Area that took the
            # retirement notice is known from it (it promised to send it), any other read again.
            try:
                life = area.life_state
                if life is not retain and life is not retired:
                    life = AreaLifeState(life)
            except Exception as exc:
                raise self._failed(slot, "life_state", exc, length) from exc
            if life is retain:
                effect = slot.range
                if effect is not None:
                    # spec: observe() only after a non-empty render created an EffectRange.
                    observed = slot.observed
                    if observed is None:
                        observed = tuple(items[effect.earliest : effect.latest + 1])
                        slot.observed = observed
                    try:
                        area.observe(observed)
                    except Exception as exc:
                        raise self._failed(slot, "observe", exc, length) from exc
                    noticed = slot.notice
                    life = self._life(slot) if noticed is None else noticed
            if life is not retain:
                self._note(slot, life, self._flow(slot))
            else:
                # spec: an Area that retires inside observe() is not rendered in this pass.
                try:
                    result = area.render()
                except Exception as exc:
                    raise self._failed(slot, "render", exc, length) from exc
                # spec: an empty render creates or moves no range (the common case).
                if type(result) is list and not result:
                    rendered = False
                else:
                    rendered = self._render_one(slot, result, turn)
                    length = len(context)
                # spec: flow_state is read after render(); exclusive keeps the cursor. Life is
                # known again for the log's `area/state`.
                noticed = slot.notice
                life = self._life(slot) if noticed is None else noticed
                try:
                    flow = area.flow_state
                    if flow is not yielded and flow is not exclusive:
                        flow = AreaFlowState(flow)
                except Exception as exc:
                    raise self._failed(slot, "flow_state", exc, length) from exc
                if rendered or slot.reported_life is not life or slot.reported_flow is not flow:
                    self._note(slot, life, flow, check_snapshot=rendered)
                if flow is exclusive:
                    self._move_cursor(slot)
                    return
            slot = slot.next
            if slot is start:
                # spec: after a pass in which every Area yielded, the cursor is where it started.
                return

    def _render_one(self, slot: Slot, rendered: object, turn: int | None) -> bool:
        """Append what one Area's render() returned; True when it rendered any."""
        messages, natives = self._encode(slot, "render", rendered)
        if not messages:
            return False
        start = len(self._context)
        latest = start + len(natives) - 1
        # spec: the first non-empty render fixes earliest; later ones move latest.
        effect = (
            EffectRange(start, latest) if slot.range is None else slot.range.extended_to(latest)
        )
        label = self._label(slot)
        seq = None
        if self._sink is not None:
            seq = self._emit(
                AreaRender(
                    area=slot.id,
                    messages=tuple(MessageData.of(m) for m in messages),
                    earliest=effect.earliest,
                    latest=effect.latest,
                    label=label,
                )
            )
        for message, native in zip(messages, natives, strict=True):
            provenance = Provenance(
                kind=ItemKind.area,
                seq=seq,
                turn=turn,
                source=message.source,
                label=label,
                owner=slot.id,
            )
            self._context.append_native(native, provenance)
        if slot.range is None:
            self._silent.pop(slot, None)
            self._retiring.pop(slot, None)
        slot.range, slot.observed = effect, None
        self._ranged.pop(slot, None)
        self._ranged[slot] = None  # now the range reaching furthest toward the tail
        return True

    # --- collection -------------------------------------------------------------------------

    def _collect(self, turn: int | None) -> None:
        """One collection, at the start of render(): a safe point between model invocations."""
        # 1. Plan: the tail component when every Area in it is retired, and the Areas that
        #    retired without ever rendering (nothing of theirs to detach).
        #    An Area selected by an earlier, rolled-back collection stays selected.
        component = self._reclaimable_tail()
        planned = list(component.areas) if component is not None else []
        # Never-rendered Areas: those known to have retired, and every one without a notice.
        if self._retiring:
            planned += [slot for slot in self._retiring if self._retired(slot)]
        if self._silent:
            planned += [slot for slot in self._silent if self._retired(slot)]
        if not planned:
            return
        if len(planned) > 1:  # one, the common case, is in order
            planned.sort(key=_serial)
        for slot in planned:
            self._report(slot)
        # What each Area declares it renders is read before any GC callback can change it.
        for slot in planned:
            if slot.gc_label is None:
                slot.gc_label = self._label(slot)
            slot.gc_selected = True
        # 2. Every promote() before any gc_prologue(); state changes inside change nothing.
        #    Each runs once per Area: a retry after a failing callback skips what succeeded.
        for slot in planned:
            if slot.gc_promoted is None:
                result = self._call(slot, "promote", slot.area.promote)
                # An empty tuple, the common case, has nothing to check or encode.
                empty = type(result) is tuple and not result
                slot.gc_promoted = () if empty else tuple(self._encode(slot, "promote", result)[0])
        encode = self._context.codec.encode_message
        promoted = [(m, encode(m)) for slot in planned for m in slot.gc_promoted or ()]
        # 3. Every gc_prologue(), the last word before detachment.
        for slot in planned:
            if not slot.gc_done:
                self._call(slot, "gc_prologue", slot.area.gc_prologue)
                slot.gc_done = True
        # 4. Detach the tail from the component's earliest index (nothing when none is planned:
        #    only never-rendered Areas, the common case, detach nothing).
        earliest = len(self._context) if component is None else component.earliest
        collected = {slot.id for slot in planned}
        provenances: Sequence[Provenance] = ()
        reclaimed: list[int] = []
        carried: list[int] = []
        if component is not None:
            provenances = self._context.provenances_from(earliest)
            for i, p in enumerate(provenances, earliest):
                (reclaimed if p.owner in collected else carried).append(i)
        # A promoted message stands for what was reclaimed: its label is their join, never lower
        # (joined only when something reads it: the log or a promoted message).
        label = INTERNAL
        if promoted or self._sink is not None:
            label = join_all(
                [slot.gc_label or INTERNAL for slot in planned]
                + [label_for_provenance(provenances[i - earliest]) for i in reclaimed]
            )
        seq = None
        if self._sink is not None:
            seq = self._emit(
                GcCollect(
                    areas=tuple(slot.id for slot in planned),
                    earliest=earliest,
                    reclaimed=tuple(reclaimed),
                    promoted=tuple(MessageData.of(m) for m, _ in promoted),
                    carried=tuple(carried),
                    label=label,
                )
            )
        detached = self._context.detach_tail(earliest) if provenances else []
        # 5. Items owned by a collected Area go to garbage, in order.
        if reclaimed:
            self._garbage += [detached[i - earliest] for i in reclaimed]
        # 6. The promoted messages are appended; they belong to no Area.
        for message, native in promoted:
            provenance = Provenance(
                kind=ItemKind.promoted, seq=seq, turn=turn, source=message.source, label=label
            )
            self._context.append_native(native, provenance)
        # 7. Every other detached item is re-appended in its original order, with its provenance.
        for i in carried:
            self._context.append_native(*detached[i - earliest])
        # 8. The Areas are removed; a cursor on a collected Area moves to the next surviving one.
        cursor = self._cursor
        if cursor is not None and cursor.id in collected:
            survivor = cursor.next
            while survivor.id in collected and survivor is not cursor:
                survivor = survivor.next
            cursor = None if survivor is cursor else survivor
        for slot in planned:
            self._unlink(slot)
        self._move_cursor(cursor)

    def _reclaimable_tail(self) -> Component[Slot] | None:
        """The tail component when every Area in it is retired, else None.

        The Area whose range reaches furthest toward the tail is read first and alone decides
        when it is retained (the usual case): the Collector stops reading at the first retained
        Area, so walking the rest of the component would only allocate.
        """
        nearest = next(reversed(self._ranged), None)  # every slot in it has a range
        if nearest is None or not self._retired(nearest):
            return None
        from engine.context.collector import tail_component

        ranges = ((slot, slot.range) for slot in reversed(self._ranged) if slot.range is not None)
        component = tail_component(ranges, self._retired)
        return component if component is not None and component.reclaimable else None

    # --- compaction ---------------------------------------------------------------------------

    def compact(self, plan: CompactionPlan, summary: Message, provenance: Provenance) -> None:
        """Replace the planned groups by their summary; every effect range shifts with the tail.

        The plan lies before every Area's range (`plan_compaction`'s barrier), so no Area loses
        an item: ranges only move by `plan.shift`.
        """
        barrier = min((slot.range.earliest for slot in self._ranged if slot.range), default=None)
        if barrier is not None and plan.cut > barrier:
            raise ValueError(
                f"compaction up to index {plan.cut} would cut the effect range starting at {barrier}"
            )
        from engine.context.compaction import apply_compaction

        native = self._context.codec.encode_message(summary)
        self._garbage += apply_compaction(
            self._context,
            earliest=plan.earliest,
            reclaimed=plan.reclaimed,
            carried=plan.carried,
            summary=native,
            provenance=provenance,
        )
        for slot in self._ranged:
            if slot.range is not None:
                slot.range, slot.observed = slot.range.shifted(plan.shift), None

    # --- helpers ------------------------------------------------------------------------------

    def _stamp(self, provenance: Provenance) -> Provenance:
        # Items the loop appends between renders belong to the Area holding the cursor exclusively.
        if self._rendering or provenance.owner is not None:
            return provenance
        holder = self.holder
        return provenance.owned_by(holder) if holder is not None else provenance

    def _call(self, slot: Slot, callback: str, function: Callable[[], T]) -> T:
        """Run one Area callback; on an exception, roll the Context back and name the Area."""
        length = len(self._context)
        try:
            return function()
        except Exception as exc:
            raise self._failed(slot, callback, exc, length) from exc

    def _failed(self, slot: Slot, callback: str, exc: Exception, length: int) -> AreaCallbackError:
        """Undo what the failed callback appended; the error names the Area and the callback."""
        if len(self._context) > length:
            self._context.detach_tail(length)
        return AreaCallbackError(slot.id, type(slot.area).__name__, callback, exc)

    def _encode(
        self, slot: Slot, callback: str, result: object
    ) -> tuple[list[Message], list[NativeContent]]:
        """Check a callback's messages and encode them; a default source names the Area's kind."""

        def encode() -> tuple[list[Message], list[NativeContent]]:
            if not isinstance(result, list | tuple):
                raise TypeError(f"expected a list of Message, got {type(result).__name__}")
            messages: list[Message] = []
            for message in result:
                if not isinstance(message, Message):
                    raise TypeError(f"expected Message, got {type(message).__name__}")
                if message.source is None:
                    message = replace(message, source=Source("area", slot.id.partition("#")[0]))
                messages.append(message)
            return messages, [self._context.codec.encode_message(m) for m in messages]

        return self._call(slot, callback, encode)

    def _label(self, slot: Slot) -> PrivatizationLabel:
        """What the Area declares it renders (`LabelledArea`); its producer's default, internal,
        otherwise. Read as an attribute: a runtime Protocol check costs microseconds per call."""
        try:
            label: PrivatizationLabel | None = getattr(slot.area, "label", None)
        except Exception as exc:
            raise AreaCallbackError(slot.id, type(slot.area).__name__, "label", exc) from exc
        return INTERNAL if label is None else label

    def _retired(self, slot: Slot) -> bool:
        return slot.gc_selected or self._life(slot) is _RETIRED

    def _life(self, slot: Slot) -> AreaLifeState:
        # Read directly (no closure): the pass and the Collector read it for every Area they touch.
        try:
            life = slot.area.life_state
            return life if type(life) is AreaLifeState else AreaLifeState(life)
        except Exception as exc:
            raise AreaCallbackError(slot.id, type(slot.area).__name__, "life_state", exc) from exc

    def _flow(self, slot: Slot) -> AreaFlowState:
        try:
            flow = slot.area.flow_state
            return flow if type(flow) is AreaFlowState else AreaFlowState(flow)
        except Exception as exc:
            raise AreaCallbackError(slot.id, type(slot.area).__name__, "flow_state", exc) from exc

    def _snapshot(self, slot: Slot) -> dict[str, Any] | None:
        if not slot.restorable:
            return None
        area = slot.area
        assert is_restorable(area)
        return self._call(slot, "snapshot", area.snapshot)

    def _name(self, slot: Slot) -> str:
        try:
            name = getattr(slot.area, "name", "")
        except Exception as exc:
            raise AreaCallbackError(slot.id, type(slot.area).__name__, "name", exc) from exc
        return name if isinstance(name, str) else ""

    def _report(self, slot: Slot, *, force: bool = False) -> None:
        self._note(slot, self._life(slot), self._flow(slot), force=force)

    def _note(
        self,
        slot: Slot,
        life: AreaLifeState,
        flow: AreaFlowState,
        *,
        force: bool = False,
        check_snapshot: bool = False,
    ) -> None:
        """Emit `area/state` when life or flow changed since last reported (or, after a
        non-empty render, the snapshot did)."""
        changed = force or slot.reported_life is not life or slot.reported_flow is not flow
        if not changed and not (check_snapshot and slot.restorable):
            return
        snapshot = self._snapshot(slot)
        if not changed and snapshot == slot.snapshot:
            return
        slot.reported_life, slot.reported_flow = life, flow
        slot.snapshot = snapshot
        if life is _RETIRED and slot.range is None:
            # Reported retired without rendering: collected at the next collection.
            self._silent.pop(slot, None)
            self._retiring[slot] = None
        if self._sink is not None:
            self._sink(AreaState(area=slot.id, life=life.value, flow=flow.value, state=snapshot))

    def _move_cursor(self, slot: Slot | None) -> None:
        if slot is self._cursor:
            return
        self._cursor = slot
        if self._sink is not None:
            self._emit(AreaCursor(area=slot.id if slot is not None else None))

    def _emit(self, payload: Payload) -> int | None:
        """Send one event to the sink; the callers build it only when a sink listens (payload
        models cost a validation each, and a closure to defer one costs a render its cells)."""
        assert self._sink is not None
        result = self._sink(payload)
        return result.seq if isinstance(result, Event) else None

    def _subscribe(self, slot: Slot) -> None:
        """Hand the Area the retirement notice when it takes one (`RetirementNotifyingArea`)."""
        try:
            subscribe = getattr(slot.area, "subscribe_retirement", None)
            if subscribe is not None:
                subscribe(self._notice)
                slot.notice = _RETAIN
        except Exception as exc:
            raise AreaCallbackError(
                slot.id, type(slot.area).__name__, "subscribe_retirement", exc
            ) from exc

    def _noticed(self, area: ContextAreaImplementation) -> None:
        """An Area says it retired: a pass reads no more of its state after this; if it never
        rendered, the next collection removes it."""
        try:
            slot = self._slots.get(area)
        except TypeError:
            return
        if slot is None:
            return
        slot.notice = _RETIRED
        if slot.range is None:
            self._retiring[slot] = None

    def _link(self, slot: Slot, life: AreaLifeState) -> None:
        self._slots[slot.area] = slot
        self._by_id[slot.id] = slot
        if slot.range is None:
            if life is _RETIRED:
                self._retiring[slot] = None
            elif slot.notice is None:
                self._silent[slot] = None
        # Ring.append, inlined (register() is on a hot path).
        ring = self._ring
        head = ring.head
        if head is None:
            slot.prev = slot.next = ring.head = slot
        else:
            last = head.prev
            slot.prev, slot.next = last, head
            last.next = head.prev = slot

    def _unlink(self, slot: Slot) -> None:
        del self._slots[slot.area]
        del self._by_id[slot.id]
        self._ranged.pop(slot, None)
        self._silent.pop(slot, None)
        self._retiring.pop(slot, None)
        self._ring.remove(slot)

    def __repr__(self) -> str:
        return f"CoopContext({len(self._slots)} areas, cursor={self.cursor_id}, {self._context!r})"
