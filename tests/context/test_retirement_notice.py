"""The optional retirement notice: a never-rendered Area that takes it is not read at every
collection, yet is still removed at the next collection after it retires (issue 10)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.context import AreaFlowState, AreaLifeState, Context, CoopContext, NativeContent
from engine.context.area import RetirementNotice
from engine.events import AreaRender, AreaState, Payload
from engine.gateway.base import GatewayType
from engine.message import Message, Role


class CountingArea:
    """Counts every life_state read; retires when told. Takes no retirement notice."""

    def __init__(self, flow: AreaFlowState = AreaFlowState.yielded) -> None:
        self.life = AreaLifeState.retain
        self.flow = flow
        self.reads = 0
        self.pending: list[str] = []
        self.retire_in_render = False
        self.calls: list[str] = []

    @property
    def life_state(self) -> AreaLifeState:
        self.reads += 1
        return self.life

    @property
    def flow_state(self) -> AreaFlowState:
        return self.flow

    def retire(self) -> None:
        self.life = AreaLifeState.retired

    def observe(self, context: Sequence[NativeContent]) -> None:
        pass

    def render(self) -> list[Message]:
        if self.retire_in_render:
            self.life = AreaLifeState.retired
        texts, self.pending = self.pending, []
        return [Message(Role.user, t) for t in texts]

    def promote(self) -> tuple[Message, ...]:
        self.calls.append("promote")
        return ()

    def gc_prologue(self) -> None:
        self.calls.append("gc_prologue")


class NotifyingArea(CountingArea):
    """Takes the retirement notice and calls it when it retires."""

    notice: RetirementNotice | None = None

    def subscribe_retirement(self, notice: RetirementNotice) -> None:
        self.notice = notice

    def retire(self) -> None:
        super().retire()
        if self.notice is not None:
            self.notice(self)


def holder_and_idle(*, notifies: bool) -> tuple[CoopContext, CountingArea, CountingArea]:
    """An exclusive Area holds the cursor, so a pass never reaches the idle Area after it."""
    coop = CoopContext(Context(GatewayType.scripted))
    holder = CountingArea(AreaFlowState.exclusive)
    idle = NotifyingArea() if notifies else CountingArea()
    coop.register(holder)
    coop.register(idle)
    coop.render()
    return coop, holder, idle


def test_a_notifying_never_rendered_area_is_not_read_by_collections() -> None:
    coop, _, idle = holder_and_idle(notifies=True)
    reads = idle.reads
    for _ in range(5):
        coop.render()
    assert idle.reads == reads


def test_an_area_without_the_notice_is_still_read_at_every_collection() -> None:
    coop, _, idle = holder_and_idle(notifies=False)
    reads = idle.reads
    for _ in range(5):
        coop.render()
    assert idle.reads == reads + 5


def test_a_noticed_retirement_between_renders_is_collected_at_the_next_render() -> None:
    coop, holder, idle = holder_and_idle(notifies=True)
    idle.retire()
    coop.render()
    assert idle not in coop
    assert holder in coop
    assert idle.calls == ["promote", "gc_prologue"]


def test_an_area_retiring_in_render_without_rendering_is_collected_once() -> None:
    coop = CoopContext(Context(GatewayType.scripted))
    quiet = CountingArea()
    quiet.retire_in_render = True
    other = CountingArea()
    coop.register(quiet)
    coop.register(other)
    coop.render()
    coop.render()
    assert coop.areas == (other,)
    assert quiet.calls == ["promote", "gc_prologue"]


def test_a_notifying_area_registered_retired_is_collected_at_the_next_render() -> None:
    coop = CoopContext(Context(GatewayType.scripted))
    area = NotifyingArea()
    area.life = AreaLifeState.retired
    coop.register(area)
    coop.render()
    assert area not in coop
    assert area.calls == ["promote", "gc_prologue"]


def test_a_notice_after_the_area_rendered_or_left_changes_nothing() -> None:
    coop = CoopContext(Context(GatewayType.scripted))
    area = NotifyingArea()
    area.pending = ["a"]
    coop.register(area)
    coop.render()
    area.retire()  # it has a range: the Collector's tail component decides
    coop.render()
    assert area not in coop
    area.retire()  # a notice from an Area no longer registered is ignored
    coop.render()


class RetiringNotifyingArea(NotifyingArea):
    """Retires (with its notice) inside observe() or render() when told."""

    retire_in_observe = False

    def observe(self, context: Sequence[NativeContent]) -> None:
        if self.retire_in_observe:
            self.retire()

    def render(self) -> list[Message]:
        if self.retire_in_render:
            self.retire()
        texts, self.pending = self.pending, []
        return [Message(Role.user, t) for t in texts]


def ranged(area: CountingArea) -> tuple[CoopContext, list[Payload]]:
    """`area` registered with a sink and rendered once, so it has a range and is observed."""
    events: list[Payload] = []
    coop = CoopContext(Context(GatewayType.scripted), events.append)
    area.pending = ["x"]
    coop.register(area)
    coop.render()
    events.clear()
    area.reads = 0
    return coop, events


def test_a_pass_reads_a_notifying_areas_life_once_and_one_without_the_notice_twice_more() -> None:
    notifying, counting = NotifyingArea(), CountingArea()
    for area in (notifying, counting):
        coop, _ = ranged(area)
        coop.render()
    # a render reads it as the Collector's tail, before observe() and as the cursor's Area at
    # the end; without a notice to rely on, also after observe() and after render()
    assert (notifying.reads, counting.reads) == (3, 5)


def test_a_notifying_area_retiring_in_observe_is_not_rendered_and_is_reported_retired() -> None:
    area = RetiringNotifyingArea()
    coop, events = ranged(area)
    area.retire_in_observe = True
    area.pending = ["never"]
    coop.render()
    assert area.pending == ["never"]
    assert not any(isinstance(e, AreaRender) for e in events)
    assert [e.life for e in events if isinstance(e, AreaState)] == [AreaLifeState.retired]


def test_a_notifying_area_retiring_in_render_is_reported_retired_right_after_its_render() -> None:
    area = RetiringNotifyingArea()
    coop, events = ranged(area)
    area.retire_in_render = True
    area.pending = ["last"]
    coop.render()
    kinds = [type(e) for e in events]
    assert kinds[:2] == [AreaRender, AreaState]
    state = events[1]
    assert isinstance(state, AreaState)
    assert state.life == AreaLifeState.retired
