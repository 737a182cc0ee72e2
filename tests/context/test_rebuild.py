"""Rebuilding from events gives the live Context item for item, provenance included; resume."""

from __future__ import annotations

import pytest

from engine.context import (
    AreaFlowState,
    AreaLifeState,
    EffectRange,
    UnrestorableArea,
    rebuild_context,
    resume_coop_context,
)
from engine.context.areas import BUILTIN_KINDS, NoticeArea, PlanArea, SubtaskArea
from engine.gateway.base import GatewayType
from engine.message import Source, ToolCall
from tests.context.fakes import FakeArea, LoggedLoop


def scenario(loop: LoggedLoop) -> tuple[SubtaskArea, PlanArea]:
    loop.user("hello")
    loop.coop.register(NoticeArea("be brief"))
    plan = PlanArea("Plan", ["read"])
    loop.coop.register(plan)
    loop.open_turn()
    loop.render()
    call = ToolCall("c1", "read_file", {"path": "a"})
    loop.assistant("reading", [call])
    loop.tool_result(call, "contents")
    loop.user("injected", Source("plugin", "hook"))
    loop.render()
    task = SubtaskArea("dig")
    loop.coop.register(task)
    loop.render()
    call2 = ToolCall("c2", "search", {"q": "x"})
    loop.assistant("searching", [call2])
    loop.tool_result(call2, "found")
    task.complete("x is in y")
    loop.render()
    plan.check(1)
    loop.render()
    loop.assistant("done")
    loop.close_turn()
    return task, plan


@pytest.mark.parametrize("gateway_type", list(GatewayType))
def test_rebuilding_from_the_events_gives_the_live_context(gateway_type: GatewayType) -> None:
    loop = LoggedLoop(gateway_type)
    scenario(loop)
    rebuilt = rebuild_context(gateway_type, loop.session.held)
    assert rebuilt.context.entries() == loop.context.entries()
    assert rebuilt.garbage == loop.coop.garbage_entries
    assert rebuilt.cursor == loop.coop.cursor_id
    assert set(rebuilt.areas) == {loop.coop.area_id(a) for a in loop.coop.areas}
    owners = {p.owner for _, p in rebuilt.garbage}
    assert "subtask#3" in owners  # the subtask's chatter was reclaimed with it
    assert any(p.seq is not None and p.turn == 1 for p in rebuilt.context.provenances)


def test_rebuilt_area_records_carry_kind_state_and_range() -> None:
    loop = LoggedLoop()
    _, plan = scenario(loop)
    record = rebuild_context(GatewayType.scripted, loop.session.held).areas["plan#2"]
    assert (record.kind, record.name, record.life, record.flow) == (
        "plan",
        "Plan",
        AreaLifeState.retain,
        AreaFlowState.yielded,
    )
    assert record.state == plan.snapshot()
    assert record.range == loop.coop.ranges[loop.coop.area_id(plan)]
    assert isinstance(record.range, EffectRange)


def test_resume_restores_areas_and_continues_like_the_live_session() -> None:
    live = LoggedLoop()
    _, plan = scenario(live)
    rebuilt = rebuild_context(GatewayType.scripted, live.session.held)
    resumed = resume_coop_context(rebuilt, BUILTIN_KINDS)
    assert resumed.unrestored == ()
    restored_plan = resumed.coop.area_by_id("plan#2")
    assert isinstance(restored_plan, PlanArea)
    assert restored_plan.snapshot() == plan.snapshot()
    # the same change on both sides gives the same Context
    plan.add("ship")
    restored_plan.add("ship")
    live.open_turn()
    live.render()
    resumed.coop.render(turn=2)
    assert [i for i, _ in resumed.coop.context.entries()] == [i for i, _ in live.context.entries()]
    assert resumed.coop.register(NoticeArea("n")).endswith("#4")


def test_an_area_that_cannot_be_restored_is_retired_and_reported() -> None:
    loop = LoggedLoop()
    loop.open_turn()
    fake = FakeArea([], "custom", every=["x"])
    loop.coop.register(fake)
    loop.render()
    loop.close_turn()
    rebuilt = rebuild_context(GatewayType.scripted, loop.session.held)
    resumed = resume_coop_context(rebuilt, BUILTIN_KINDS)
    (stand_in,) = resumed.unrestored
    assert isinstance(stand_in, UnrestorableArea)
    assert stand_in.area_id == "FakeArea#1"
    assert "FakeArea" in stand_in.reason
    resumed.coop.render()
    assert resumed.coop.areas == ()
    assert len(resumed.coop.garbage) == 1


def test_an_unrestorable_exclusive_area_takes_nothing_appended_after_the_resume() -> None:
    # docs/spec/context-areas.md, "Resume": an Area that cannot be restored is retired from the
    # resume on, so it no longer holds the cursor exclusively: the first prompt after the resume is
    # not its chatter.
    loop = LoggedLoop()
    loop.open_turn()
    loop.coop.register(FakeArea([], "custom", flow=AreaFlowState.exclusive, renders=[["goal"]]))
    loop.render()
    loop.user("chatter")
    loop.close_turn()
    rebuilt = rebuild_context(GatewayType.scripted, loop.session.held)
    resumed = resume_coop_context(rebuilt, BUILTIN_KINDS, sink=loop.session.append)
    loop.coop, loop.context = resumed.coop, resumed.coop.context
    loop.user("new prompt")
    loop.open_turn()
    loop.render()
    assert [m.content for m in loop.context.messages()] == ["new prompt"]
    assert [loop.context.codec.decode(i).content for i in loop.coop.garbage] == [
        "custom:goal",
        "chatter",
    ]
    again = rebuild_context(GatewayType.scripted, loop.session.held)
    assert again.context.entries() == loop.context.entries()
    assert again.garbage[-2:] == loop.coop.garbage_entries
