"""Registered Areas as slots on a ring (registration and cursor order) plus the ranges view."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.context.area import AreaFlowState, AreaLifeState, ContextAreaImplementation, EffectRange
from engine.gateway.base import NativeContent
from engine.message import Message
from engine.privacy import PrivatizationLabel


@dataclass(eq=False, slots=True)
class Slot:
    """One registered Area: its id, place on the ring, effect range and last reported snapshot."""

    # What a render pass reads of every Area it visits comes first, for the reader: the order
    # does not place them in memory (CPython lays out `__slots__` in sorted name order).
    area: ContextAreaImplementation
    range: EffectRange | None = field(default=None, kw_only=True)
    # The last `area/state` sent, as two fields: a pass compares them for every Area it visits,
    # and a tuple would be one more object to reach (and one more to build) per visit.
    reported_life: AreaLifeState | None = field(default=None, kw_only=True)
    reported_flow: AreaFlowState | None = field(default=None, kw_only=True)
    next: Slot = field(init=False, repr=False)
    prev: Slot = field(init=False, repr=False)
    id: str
    serial: int
    restorable: bool
    snapshot: dict[str, Any] | None = None
    # What observe() was last given, while `range` and the Context's `cuts` are unchanged:
    # the same items, so a pass hands it over again instead of copying them per visit.
    observed: tuple[NativeContent, ...] | None = None
    # The life the retirement notice tells (`RetirementNotifyingArea`): None when the Area takes
    # none, retain until it sends it, retired after. An Area that takes it is not read at every
    # collection while it has never rendered, and a pass reads its life once, before observe(),
    # and after that takes it from here (one load instead of a test of the notice per read).
    notice: AreaLifeState | None = None
    # Once selected for GC the Area stays selected (state changes inside GC change nothing), and
    # a collection rolled back by a failing callback is retried without repeating what succeeded.
    gc_selected: bool = False
    gc_label: PrivatizationLabel | None = None  # read before any GC callback
    gc_promoted: tuple[Message, ...] | None = None  # what promote() returned
    gc_done: bool = False  # gc_prologue() returned

    @property
    def reported(self) -> tuple[AreaLifeState, AreaFlowState] | None:
        if self.reported_life is None or self.reported_flow is None:
            return None
        return (self.reported_life, self.reported_flow)

    def report(self, state: tuple[AreaLifeState, AreaFlowState]) -> None:
        self.reported_life, self.reported_flow = state


class Ring:
    """A circular doubly linked list: O(1) insertion at the end, removal and cursor steps."""

    def __init__(self) -> None:
        self.head: Slot | None = None

    def append(self, slot: Slot) -> None:
        if self.head is None:
            slot.prev = slot.next = slot
            self.head = slot
            return
        last = self.head.prev
        slot.prev, slot.next = last, self.head
        last.next = self.head.prev = slot

    def remove(self, slot: Slot) -> None:
        if slot.next is slot:
            self.head = None
            return
        slot.prev.next = slot.next
        slot.next.prev = slot.prev
        if self.head is slot:
            self.head = slot.next

    def __iter__(self) -> Iterator[Slot]:
        slot = self.head
        while slot is not None:
            yield slot
            slot = slot.next
            if slot is self.head:
                return


class RangesView(Mapping[str, EffectRange]):
    """A read-only view of the effect ranges by Area id, in order of increasing `latest`.

    Keyed by id, not by Area object, so a front end reads it like every other public view.
    """

    def __init__(self, by_id: Mapping[str, Slot], ranged: dict[Slot, None]):
        self._by_id = by_id
        self._ranged = ranged

    def __getitem__(self, area_id: str) -> EffectRange:
        slot = self._by_id.get(area_id)
        if slot is None or slot.range is None:
            raise KeyError(area_id)
        return slot.range

    def __iter__(self) -> Iterator[str]:
        return (slot.id for slot in self._ranged)

    def __len__(self) -> int:
        return len(self._ranged)
