"""The ContextOrchestrator: what one model request carries, bounded, ordered and attributed.

`assemble()` takes the Context's native items and their aligned provenance and returns the floor,
the reserved lane, the newest complete history groups that fit, and the current turn whole
(docs/spec/context-orchestration.md, "Governors"). The agent loop sends exactly what it
returns, after the egress gate.

Cost stays flat as a session grows (docs/ARCHITECTURE.md, principle 5): a `GroupIndex` is kept
beside the Context and updated only with what changed, so a step touches the new items, the reserved
lane, the current turn and the groups it keeps, never the whole history.
"""

from __future__ import annotations

import itertools
import pickle
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from engine.context.budget import (
    Budget,
    BudgetBreakdown,
    ContextBudgetExceededError,
    item_chars,
)
from engine.context.egress import (
    DEFAULT_SHELL_CLASS,
    label_for_provenance,
)
from engine.context.floor import (
    Block,
    prefix_digest,
    system_text,
)
from engine.context.provenance import ItemKind, Provenance
from engine.events import Figures, StepStart
from engine.gateway.base import NativeContent
from engine.gc_policy import gc_paused
from engine.privacy import PrivacyClass, PrivatizationLabel, join_all

__all__ = [
    "AssembledContext",
    "ContextOrchestrator",
    "GroupIndex",
]

ALWAYS_RESERVED: frozenset[ItemKind] = frozenset({ItemKind.promoted, ItemKind.summary})
"""Kinds that never age out: a promoted message or a summary stands for reclaimed material."""


@dataclass(slots=True)
class _Group:
    """One complete past-turn group: its members in Context order and what they cost.

    `fixed` are the members that are never reserved, `fixed_chars` what they cost (-1 until a
    budget first asks); `rendered` are the members an Area rendered, reserved only while they are
    a retained Area's latest render.
    """

    turn: int
    start: int
    members: list[int]
    fixed: list[int] = field(default_factory=list)
    fixed_chars: int = -1
    rendered: list[int] = field(default_factory=list)


@dataclass(slots=True)
class GroupIndex:
    """The history's groups, kept incrementally beside the Context.

    Grouping: promoted items and summaries are in no group (always reserved). Every other item joins
    the group of its turn; consecutive items of one turn form one group, and items appended between
    turns (turn None) join the group of the turn that follows them, or stay pending at the tail as
    the next turn's pre-prompt context. Items an Area rendered are group members too, remembered
    per Area, because the reserved lane holds each retained Area's latest render, and which Areas
    are retained is known at the time of assembly, not at the time of append. An Area's earlier
    renders (and anything else it owns) are ordinary history in their turn's group.

    Upkeep: `sync()` indexes only the items appended since the last call (each item's label
    computed once). An item is costed when a budget first asks for it, once: the governors look
    at the current turn and the newest groups only, so a resumed long session does not serialize
    its whole history again before its first request. Detaching the tail must be reported with `note_detached(index)`: the index drops
    the groups touching the cut and re-indexes the survivors of the last one, a cost proportional to
    the change. As a safety net, `sync()` rebuilds from scratch when the Context shrank below the
    indexed length or its last indexed provenance differs from the recorded one.
    """

    shell_class: PrivacyClass = DEFAULT_SHELL_CLASS
    _provenances: list[Provenance] = field(default_factory=list)
    _chars: list[int] = field(default_factory=list)  # -1: not costed yet
    _items: Sequence[NativeContent] = ()  # as of the last sync, to cost items on demand
    _labels: list[PrivatizationLabel] = field(default_factory=list)
    _groups: list[_Group] = field(default_factory=list)
    _starts: list[int] = field(default_factory=list)
    _first_of_turn: dict[int, int] = field(default_factory=dict)
    _pending: list[int] = field(default_factory=list)
    _always: list[int] = field(default_factory=list)
    _renders: dict[str, list[int]] = field(default_factory=dict)  # by Area id, Context order
    _interned: dict[PrivatizationLabel, PrivatizationLabel] = field(default_factory=dict)

    def sync(self, items: Sequence[NativeContent], provenances: Sequence[Provenance]) -> None:
        """Index the items appended since the last call."""
        count = len(provenances)
        if len(items) != count:
            raise ValueError(f"{len(items)} items but {count} provenances: they must be aligned")
        indexed = len(self._provenances)
        if indexed > count:
            self.note_detached(count)
        elif indexed:
            last, recorded = provenances[indexed - 1], self._provenances[indexed - 1]
            if last is not recorded and last != recorded:
                self.note_detached(0)  # an unreported rewrite: rebuild rather than trust the index
        self._items = items
        with gc_paused():  # the first sync of a resumed session indexes all its history
            for index in range(len(self._provenances), count):
                provenance = provenances[index]
                self._provenances.append(provenance)
                self._chars.append(-1)
                label = label_for_provenance(provenance, shell_class=self.shell_class)
                self._labels.append(self._interned.setdefault(label, label))
                self._add(index)

    def note_detached(self, from_index: int) -> None:
        """The Context's tail from `from_index` was detached; forget it."""
        if from_index >= len(self._provenances):
            return
        from_index = max(from_index, 0)
        position = bisect_left(self._starts, from_index) - 1
        replay_from = self._starts[position] if position >= 0 else 0
        kept = slice(replay_from, from_index)
        survivors = (self._provenances[kept], self._chars[kept], self._labels[kept])
        self._truncate(replay_from)
        for provenance, chars, label in zip(*survivors, strict=True):
            self._provenances.append(provenance)
            self._chars.append(chars)
            self._labels.append(label)
            self._add(len(self._provenances) - 1)

    def _add(self, index: int) -> None:
        provenance = self._provenances[index]
        if provenance.kind in ALWAYS_RESERVED:
            self._always.append(index)
            return
        if provenance.owner is not None and _is_render(provenance):
            self._renders.setdefault(provenance.owner, []).append(index)
        if provenance.turn is None:
            self._pending.append(index)
            return
        joining = [*self._pending, index]
        self._pending.clear()
        if self._groups and self._groups[-1].turn == provenance.turn:
            group = self._groups[-1]
        else:
            group = _Group(turn=provenance.turn, start=joining[0], members=[])
            self._first_of_turn.setdefault(provenance.turn, len(self._groups))
            self._groups.append(group)
            self._starts.append(group.start)
        for member in joining:
            group.members.append(member)
            if _is_render(self._provenances[member]):
                group.rendered.append(member)
            else:
                group.fixed.append(member)
                group.fixed_chars = -1

    def _truncate(self, cut: int) -> None:
        while self._groups and self._groups[-1].start >= cut:
            group = self._groups.pop()
            self._starts.pop()
            if self._first_of_turn.get(group.turn) == len(self._groups):
                del self._first_of_turn[group.turn]
        del self._pending[bisect_left(self._pending, cut) :]
        del self._always[bisect_left(self._always, cut) :]
        for owner in list(self._renders):
            indices = self._renders[owner]
            del indices[bisect_left(indices, cut) :]
            if not indices:
                del self._renders[owner]
        del self._provenances[cut:], self._chars[cut:], self._labels[cut:]

    # --- reads used by assembly -------------------------------------------------------------

    def reserved(self, retained_owners: frozenset[str]) -> list[int]:
        """The reserved lane's indices in Context order: promoted items, summaries, and each
        retained Area's latest render (its earlier renders are history and may age out)."""
        lanes = [self._always]
        lanes.extend(self._latest(self._renders[o]) for o in retained_owners if o in self._renders)
        return sorted(itertools.chain.from_iterable(lanes))

    def _latest(self, rendered: list[int]) -> list[int]:
        """The items of the last render among one Area's rendered items: the trailing run that is
        contiguous in the Context and comes from one `area/render` (one seq)."""
        first = len(rendered) - 1
        seq = self._provenances[rendered[first]].seq
        while (
            first > 0
            and rendered[first - 1] == rendered[first] - 1
            and self._provenances[rendered[first - 1]].seq == seq
        ):
            first -= 1
        return rendered[first:]

    def current_start(self, current_turn: int) -> int:
        """The position of the first group of the current turn: everything from it on is the turn."""
        position = len(self._groups)
        while position > 0 and self._groups[position - 1].turn >= current_turn:
            position -= 1
        first = self._first_of_turn.get(current_turn)
        return position if first is None else min(first, position)

    def group_chars(self, position: int, reserved: frozenset[int]) -> int:
        """What a history group costs once its reserved renders are already counted."""
        group = self._groups[position]
        if group.fixed_chars < 0:
            group.fixed_chars = sum(self.chars(m) for m in group.fixed)
        rendered = sum(self.chars(m) for m in group.rendered if m not in reserved)
        return group.fixed_chars + rendered

    def members(self, start: int, stop: int, reserved: frozenset[int]) -> Iterator[int]:
        """Unreserved members of the groups at positions `start..stop-1`, in Context order."""
        for position in range(start, stop):
            yield from self._unreserved(self._groups[position].members, reserved)

    def current(self, start: int, reserved: frozenset[int]) -> Iterator[int]:
        """Unreserved items of the current turn: its groups from `start` and the pending tail."""
        yield from self.members(start, len(self._groups), reserved)
        yield from self._unreserved(self._pending, reserved)

    @staticmethod
    def _unreserved(indices: list[int], reserved: frozenset[int]) -> Iterator[int]:
        return (index for index in indices if index not in reserved)

    def first_seqs(self, start: int, stop: int) -> tuple[int, ...]:
        """The seq of the first logged member of each group at positions `start..stop-1`."""
        seqs = (
            next(
                (s for m in self._groups[p].members if (s := self._provenances[m].seq) is not None),
                None,
            )
            for p in range(start, stop)
        )
        return tuple(s for s in seqs if s is not None)

    def turn_of(self, position: int) -> int:
        """The turn of the history group at `position`."""
        return self._groups[position].turn

    def count_from(self, turn: int, *, stop: int) -> int:
        """How many groups before position `stop` belong to `turn` or a later one (groups are
        in turn order, so the walk ends at the first earlier turn)."""
        position = stop
        while position > 0 and self._groups[position - 1].turn >= turn:
            position -= 1
        return stop - position

    def first_start(self, turn: int) -> int:
        """The Context index where the first group of `turn` or a later one starts (the
        Context's indexed length when there is none)."""
        position = len(self._groups) - self.count_from(turn, stop=len(self._groups))
        return self._starts[position] if position < len(self._groups) else len(self._provenances)

    def chars(self, index: int) -> int:
        """What the item at `index` costs (DESIGN-NOTES: its compact JSON length), from the items
        of the last `sync()`."""
        chars = self._chars[index]
        if chars < 0:
            chars = self._chars[index] = item_chars(self._items[index])
        return chars

    def label(self, index: int) -> PrivatizationLabel:
        return self._labels[index]

    def provenance(self, index: int) -> Provenance:
        return self._provenances[index]


@dataclass(frozen=True, slots=True, kw_only=True)
class AssembledContext:
    """One request's context: what the loop sends, with everything needed to attribute it.

    `items`, `indices`, `provenances` and `labels` are aligned and in Context order; the items are
    copies, so a gateway may merge or mutate them without touching the Context.
    """

    floor: tuple[Block, ...]
    system: str
    items: tuple[NativeContent, ...]
    indices: tuple[int, ...]
    provenances: tuple[Provenance, ...]
    labels: tuple[PrivatizationLabel, ...]
    reserved_indices: tuple[int, ...]
    current_indices: tuple[int, ...]
    context_window: int | None  # the window the cap derives from (generation window preferred)
    prefix_digest: str
    label: PrivatizationLabel
    figures: Figures
    groups_kept: int
    groups_dropped: int
    kept_groups: tuple[int, ...] = ()  # the first seq of each history group kept
    evicted: int = 0  # history groups this request dropped that the one before could keep
    released: int = 0  # superseded renders held before the history that this request dropped

    @property
    def floor_hashes(self) -> tuple[str, ...]:
        return tuple(b.content_hash for b in self.floor)

    def step_start(
        self,
        *,
        turn: int,
        step: int,
        egress: PrivacyClass | None = None,
        tools: tuple[str, ...] = (),
        prefix_chars: int = 0,
        request_chars: int = 0,
    ) -> StepStart:
        """The `step/start` payload: what a viewer needs to show this request from the log alone
        (`tools`: the hashes of the tool definitions it offers; `prefix_chars` of its
        `request_chars` wire characters repeat the request before it)."""
        return StepStart(
            turn=turn,
            step=step,
            prefix_digest=self.prefix_digest,
            floor=self.floor_hashes,
            figures=self.figures,
            kept=self.kept_groups,
            egress=egress,
            label=self.label,
            tools=tools,
            prefix_chars=prefix_chars,
            request_chars=request_chars,
        )


@dataclass(slots=True)
class ContextOrchestrator:
    """Assembles each request from the Context; one per session, because it keeps the GroupIndex."""

    shell_class: PrivacyClass = DEFAULT_SHELL_CLASS
    index: GroupIndex = field(init=False)
    base_turn: int = 0
    """History groups of earlier turns were evicted: they never return, so the requests between
    two eviction batches share their prefix (a group that came back would rewrite it)."""
    _held: tuple[int, ...] = ()
    """What the last request sent before its history (the reserved lane there): an item that
    leaves the lane is still sent until the next batch, so the request does not change early."""

    def __post_init__(self) -> None:
        self.index = GroupIndex(shell_class=self.shell_class)

    def note_detached(self, from_index: int) -> None:
        """Report that the Context's tail from `from_index` was detached (collection, compaction).

        A cut at or before the oldest group still eligible rebuilt what history is: eviction
        starts again from the newest groups that fit."""
        if self.base_turn and from_index <= self.index.first_start(self.base_turn):
            self.restart_eviction()
        self._held = tuple(i for i in self._held if i < from_index)
        self.index.note_detached(from_index)

    def restart_eviction(self) -> None:
        """Forget what earlier requests evicted and held: the next one keeps the newest groups
        that fit, as a first request does."""
        self.base_turn = 0
        self._held = ()

    def assemble(
        self,
        items: Sequence[NativeContent],
        provenances: Sequence[Provenance],
        *,
        current_turn: int,
        retained_owners: frozenset[str],
        floor: Sequence[Block],
        budget: Budget,
    ) -> AssembledContext:
        """Bound and order one request; raises `ContextBudgetExceededError` when nothing fits.

        The floor, the reserved lane and the whole current turn are reserved first; history keeps the
        newest complete groups that fit, at most `turn_window`, stopping at the first that does not.
        """
        index = self.index
        index.sync(items, provenances)
        floor = tuple(floor)
        cap = budget.cap
        # 1. the reserved lane: promoted items, summaries, each retained Area's latest render;
        #    and what the last request sent before its history that has left the lane since (an
        #    Area's superseded render): it stays until the next eviction batch, as history does
        reserved = index.reserved(retained_owners)
        lane = frozenset(reserved)
        held = [i for i in self._held if i not in lane]
        in_lane = lane.union(held)
        # 2. the current turn, whole: from its first group (pre-prompt contexts included) to the tail
        start = index.current_start(current_turn)
        current = list(index.current(start, in_lane))
        # 3. reserve floor, lane and turn before any history; fail with the numbers if they overflow
        floor_chars = sum(b.chars for b in floor)
        reserved_chars = sum(index.chars(i) for i in reserved)
        current_chars = sum(index.chars(i) for i in current)
        used = floor_chars + reserved_chars + current_chars
        if used > cap:
            raise _exceeded(
                index, floor_chars, reserved, reserved_chars, current, current_chars, cap
            )
        held_chars = sum(index.chars(i) for i in held)
        released = 0
        if used + held_chars > cap:  # no room to hold them: they go now, a planned break
            released, held, held_chars = len(held), [], 0
        used += held_chars
        reserved_total = used
        # 4. history: newest complete groups first, stopping at the window, the first misfit or
        #    the groups evicted before
        kept = 0
        window = max(budget.turn_window, 0)
        base = self.base_turn
        costs: list[int] = []
        while kept < window and start - kept > 0 and index.turn_of(start - kept - 1) >= base:
            cost = index.group_chars(start - kept - 1, in_lane)
            if used + cost > cap:
                break
            used += cost
            costs.append(cost)
            kept += 1
        # 5. the window or the cap is exceeded: evict at least a batch of the oldest groups
        evicted = index.count_from(base, stop=start - kept)
        if evicted:
            # a batch at least, and room for a batch of new groups before the window is full
            batch = budget.batch
            keep = max(0, min(kept, kept + evicted - batch, window - batch + 1))
            extra = kept - keep
            for cost in costs[kept - extra :]:
                used -= cost
            kept -= extra
            evicted += extra
            self.base_turn = index.turn_of(start - kept) if kept else current_turn
            # the request breaks after the floor anyway: the held renders go with the batch
            released, used, reserved_total = (
                len(held),
                used - held_chars,
                reserved_total - held_chars,
            )
            held = []
        history = list(index.members(start - kept, start, in_lane))
        # 6. everything sent, in Context order, as copies; what precedes the history is held
        reserved = sorted((*reserved, *held))
        sent = tuple(sorted((*reserved, *history, *current)))  # sorted runs: timsort merges them
        first = history[0] if history else current[0] if current else len(provenances)
        self._held = tuple(i for i in reserved if i < first)
        labels = tuple(index.label(i) for i in sent)
        distinct = {id(x): x for x in (*(b.label for b in floor), *labels)}  # labels are interned
        return AssembledContext(
            floor=floor,
            system=system_text(floor),
            items=_copies(items, sent),
            indices=sent,
            provenances=tuple(index.provenance(i) for i in sent),
            labels=labels,
            reserved_indices=tuple(reserved),
            current_indices=tuple(current),
            context_window=budget.window,
            prefix_digest=prefix_digest(floor),
            label=join_all(list(distinct.values())),
            figures=Figures(
                chars=used,
                cap=cap,
                groups_kept=kept,
                groups_dropped=start - kept,
                reserved=reserved_total,
                window=budget.window,
            ),
            groups_kept=kept,
            groups_dropped=start - kept,
            kept_groups=index.first_seqs(start - kept, start),
            evicted=evicted,
            released=released,
        )


def _is_render(provenance: Provenance) -> bool:
    """An item an Area rendered (what the reserved lane may hold of it)."""
    return provenance.kind is ItemKind.area and provenance.owner is not None


def _copies(items: Sequence[NativeContent], indices: Sequence[int]) -> tuple[NativeContent, ...]:
    """Deep copies of the sent items in one C-level pickle round trip (JSON-shaped, so picklable),
    several times cheaper than `copy.deepcopy` item by item."""
    chosen = [items[i] for i in indices]
    copied: list[NativeContent] = pickle.loads(pickle.dumps(chosen, pickle.HIGHEST_PROTOCOL))
    return tuple(copied)


def _exceeded(
    index: GroupIndex,
    floor_chars: int,
    reserved: list[int],
    reserved_chars: int,
    current: list[int],
    current_chars: int,
    cap: int,
) -> ContextBudgetExceededError:
    largest = max([*reserved, *current], key=index.chars, default=None)
    breakdown = BudgetBreakdown(
        floor=floor_chars,
        reserved_lane=reserved_chars,
        current_turn=current_chars,
        largest_index=largest,
        largest_chars=0 if largest is None else index.chars(largest),
    )
    return ContextBudgetExceededError(needed=breakdown.total, allowed=cap, breakdown=breakdown)
