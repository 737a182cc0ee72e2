"""A hypothesis state machine: random register/render/retire/flow/append sequences against a
simple reference model of the collection and scheduling rules (quadratic, obviously correct).

A `ContextRebuilder` follows the log one event at a time beside the live CoopContext: after every
step it must hold the live Context item for item (provenance and owners included), and a copy
taken earlier must not move when the rebuilder goes on."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from engine.context import (
    AreaFlowState,
    AreaLifeState,
    ContextRebuilder,
    NativeContent,
    rebuild_context,
)
from engine.events import AreaRender, GcCollect
from engine.gateway.base import GatewayType
from engine.message import Message, Role
from tests.context.fakes import LoggedLoop

RETAIN, RETIRED = AreaLifeState.retain, AreaLifeState.retired
EXCLUSIVE, YIELDED = AreaFlowState.exclusive, AreaFlowState.yielded


class ScriptArea:
    """Renders `pending` messages on its next render, promotes `promotes` messages."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.life = RETAIN
        self.flow = YIELDED
        self.pending = 0
        self.promotes = 0
        self.retire_on_observe = False
        self.count = 0
        self.observed: list[str] | None = None  # the contents of its last observe() snapshot

    @property
    def life_state(self) -> AreaLifeState:
        return self.life

    @property
    def flow_state(self) -> AreaFlowState:
        return self.flow

    def observe(self, context: Sequence[NativeContent]) -> None:
        self.observed = [item["content"] for item in context]
        if self.retire_on_observe:
            self.life = RETIRED

    def render(self) -> list[Message]:
        texts = [f"A{self.name}-{self.count + i}" for i in range(self.pending)]
        self.count += self.pending
        self.pending = 0
        return [Message(Role.user, t) for t in texts]

    def promote(self) -> tuple[Message, ...]:
        return tuple(Message(Role.user, f"P{self.name}-{i}") for i in range(self.promotes))

    def gc_prologue(self) -> None:
        pass


@dataclass
class ModelArea:
    id: str
    life: AreaLifeState = RETAIN
    flow: AreaFlowState = YIELDED
    pending: int = 0
    promotes: int = 0
    retire_on_observe: bool = False
    count: int = 0
    range: tuple[int, int] | None = None
    observed: list[str] | None = None  # what its range held when the pass reached it


@dataclass
class Model:
    """The rules, written the simplest way: lists, fixed points, no incremental structure."""

    items: list[tuple[str, str | None]] = field(default_factory=list)  # (content, owner)
    order: list[ModelArea] = field(default_factory=list)
    cursor: ModelArea | None = None
    holder: str | None = None
    garbage: list[str] = field(default_factory=list)
    collections: list[tuple[str, ...]] = field(default_factory=list)

    def append(self, content: str) -> None:
        self.items.append((content, self.holder))

    def render(self) -> None:
        self.collect()
        self.run_pass()
        c = self.cursor
        self.holder = c.id if c is not None and (c.life, c.flow) == (RETAIN, EXCLUSIVE) else None

    def collect(self) -> None:
        ranged = [a for a in self.order if a.range is not None]
        component: list[ModelArea] = []
        earliest: int | None = None
        if ranged:
            top = max(ranged, key=lambda a: a.range[1] if a.range else -1)
            component, earliest = [top], top.range[0] if top.range else 0
            grew = True
            while grew:
                grew = False
                for a in ranged:
                    if a not in component and a.range is not None and a.range[1] >= earliest:
                        component.append(a)
                        earliest = min(earliest, a.range[0])
                        grew = True
            if any(a.life is RETAIN for a in component):
                component, earliest = [], None
        planned = component + [a for a in self.order if a.range is None and a.life is RETIRED]
        if not planned:
            return
        planned.sort(key=self.order.index)
        ids = {a.id for a in planned}
        promoted = [(f"P{a.id}-{i}", None) for a in planned for i in range(a.promotes)]
        tail: list[tuple[str, str | None]] = []
        if earliest is not None:
            tail, self.items = self.items[earliest:], self.items[:earliest]
        self.garbage += [content for content, owner in tail if owner in ids]
        self.items += promoted + [(c, o) for c, o in tail if o not in ids]
        self.collections.append(tuple(a.id for a in planned))
        if self.cursor is not None and self.cursor.id in ids:
            start = self.order.index(self.cursor)
            rotated = self.order[start:] + self.order[:start]
            self.cursor = next((a for a in rotated if a.id not in ids), None)
        self.order = [a for a in self.order if a.id not in ids]

    def run_pass(self) -> None:
        if not self.order:
            return
        if self.cursor is None:
            self.cursor = self.order[0]
        start = self.order.index(self.cursor)
        for k in range(len(self.order)):
            a = self.order[(start + k) % len(self.order)]
            if a.life is not RETAIN:
                continue
            if a.range is not None:
                a.observed = [content for content, _ in self.items[a.range[0] : a.range[1] + 1]]
            if a.range is not None and a.retire_on_observe:
                a.life = RETIRED
                continue
            texts = [f"A{a.id}-{a.count + i}" for i in range(a.pending)]
            a.count += a.pending
            a.pending = 0
            if texts:
                first = len(self.items)
                self.items += [(t, a.id) for t in texts]
                latest = len(self.items) - 1
                a.range = (first, latest) if a.range is None else (a.range[0], latest)
            if a.flow is EXCLUSIVE:
                self.cursor = a
                return


class CoopContextMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = LoggedLoop()
        self.loop.open_turn()
        self.model = Model()
        self.rebuilder = ContextRebuilder(GatewayType.scripted)
        self.areas: list[tuple[ScriptArea, ModelArea]] = []
        self.said = 0
        self.gc_seen = 0

    def live(self) -> list[tuple[ScriptArea, ModelArea]]:
        return [(a, m) for a, m in self.areas if a in self.loop.coop]

    @precondition(lambda self: len(self.live()) < 6)
    @rule(exclusive=st.booleans(), pending=st.integers(0, 2), promotes=st.integers(0, 1))
    def register(self, exclusive: bool, pending: int, promotes: int) -> None:
        area = ScriptArea("")
        area.flow = EXCLUSIVE if exclusive else YIELDED
        area.pending, area.promotes = pending, promotes
        area.name = self.loop.coop.register(area)
        model = ModelArea(area.name, flow=area.flow, pending=pending, promotes=promotes)
        self.areas.append((area, model))
        self.model.order.append(model)

    @precondition(lambda self: bool(self.live()))
    @rule(index=st.integers(0, 5), pending=st.integers(1, 2))
    def publish(self, index: int, pending: int) -> None:
        area, model = self.live()[index % len(self.live())]
        area.pending = model.pending = pending

    @precondition(lambda self: bool(self.live()))
    @rule(index=st.integers(0, 5))
    def retire(self, index: int) -> None:
        area, model = self.live()[index % len(self.live())]
        area.life = model.life = RETIRED

    @precondition(lambda self: bool(self.live()))
    @rule(index=st.integers(0, 5))
    def retire_in_observe(self, index: int) -> None:
        area, model = self.live()[index % len(self.live())]
        area.retire_on_observe = model.retire_on_observe = True

    @precondition(lambda self: bool(self.live()))
    @rule(index=st.integers(0, 5), exclusive=st.booleans())
    def flow(self, index: int, exclusive: bool) -> None:
        area, model = self.live()[index % len(self.live())]
        area.flow = model.flow = EXCLUSIVE if exclusive else YIELDED

    @rule()
    def append(self) -> None:
        self.said += 1
        self.loop.user(f"U{self.said}")
        self.model.append(f"U{self.said}")

    @rule()
    def render(self) -> None:
        context = self.loop.context
        guarded = [
            (r.earliest, context[: r.earliest])
            for area_id, r in self.loop.coop.ranges.items()
            if self.loop.coop.area_by_id(area_id).life_state is RETAIN
        ]
        for area, model in self.areas:
            area.observed = model.observed = None
        self.loop.render()
        self.model.render()
        # each Area observed what its range held, kept snapshots or not
        for area, model in self.areas:
            assert area.observed == model.observed, area.name
        # the Context before the earliest range of any retained Area never changes
        for earliest, prefix in guarded:
            assert context[:earliest] == prefix
        # collected components are exactly the fully retired tail components
        collections = [
            e.data.areas for e in self.loop.session.held if isinstance(e.data, GcCollect)
        ]
        assert collections == self.model.collections
        rebuilt = rebuild_context(GatewayType.scripted, self.loop.session.held)
        assert rebuilt.context.entries() == context.entries()
        assert rebuilt.garbage == self.loop.coop.garbage_entries

    @invariant()
    def the_incremental_rebuilder_follows_the_live_context(self) -> None:
        before = self.rebuilder.copy()
        frozen = before.snapshot()
        for event in self.loop.session.held[self.rebuilder.seq + 1 :]:
            self.rebuilder.apply(event)
        assert self.rebuilder.context.entries() == self.loop.context.entries()
        assert self.rebuilder.garbage == self.loop.coop.garbage_entries
        assert self.rebuilder.cursor == self.loop.coop.cursor_id
        assert set(self.rebuilder.areas) == {
            self.loop.coop.area_id(a) for a in self.loop.coop.areas
        }
        # copies taken before are independent of what was applied since
        assert before.context.entries() == frozen.context.entries()
        assert (before.garbage, dict(before.areas)) == (frozen.garbage, frozen.areas)

    @invariant()
    def matches_the_model(self) -> None:
        contents = [m.content for m in self.loop.context.messages()]
        owners = [p.owner for p in self.loop.context.provenances]
        assert list(zip(contents, owners, strict=True)) == self.model.items
        assert self.loop.coop.cursor_id == (self.model.cursor.id if self.model.cursor else None)

    @invariant()
    def every_item_is_in_the_context_or_in_garbage_exactly_once(self) -> None:
        appended: Counter[str] = Counter(f"U{i}" for i in range(1, self.said + 1))
        promoted: list[str] = []
        for event in self.loop.session.held:
            if isinstance(event.data, AreaRender):
                appended.update(m.content for m in event.data.messages)
            if isinstance(event.data, GcCollect):
                promoted += [m.content for m in event.data.promoted]
        appended.update(promoted)
        codec = self.loop.context.codec
        garbage = [codec.decode(item).content for item in self.loop.coop.garbage]
        present = [m.content for m in self.loop.context.messages()]
        assert Counter(present + garbage) == appended
        assert garbage == self.model.garbage
        # promoted messages are never lost
        assert set(promoted) <= set(present)


CoopContextMachine.TestCase.settings = settings(
    max_examples=100, stateful_step_count=30, deadline=None
)
TestCoopContextMachine = CoopContextMachine.TestCase
