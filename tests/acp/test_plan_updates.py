"""`/plan` (and any plan Area) shows in the client's plan panel: a `plan` update with the whole
list each time it changes, live and in `session/load`."""

from __future__ import annotations

from engine.commands import REGISTRY
from engine.events import AreaRegister, AreaState, Event
from engine.gateway.scripted import Reply
from replay.acp import AcpProjection, AcpUpdate, replay_updates
from tests.acp.schema_check import check_update
from tests.agent.conftest import FlakyStore, MakeAgent, record


def plans(updates: list[AcpUpdate]) -> list[list[tuple[str, str, str]]]:
    found = []
    for update in updates:
        check_update({"sessionId": "s" * 32, "update": update})
        if update["sessionUpdate"] == "plan":
            found.append([(e["content"], e["status"], e["priority"]) for e in update["entries"]])
    return found


async def test_plan_commands_send_the_whole_plan_each_time(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent([Reply(text="ok")])
    agent.send("hello")  # a session is stored from its first message on
    await agent.when_idle()
    live = record(agent)
    for line in ("/plan add read the code", "/plan add fix the bug", "/plan check 1", "/plan"):
        assert (await REGISTRY.run(agent, line)).ok, line
    await agent.when_idle()
    projection = AcpProjection("/ws")
    shown = plans([u for event in live.events for u in projection.apply(event)])
    expected = [
        [("read the code", "pending", "medium")],
        [("read the code", "pending", "medium"), ("fix the bug", "pending", "medium")],
        [("read the code", "completed", "medium"), ("fix the bug", "pending", "medium")],
    ]
    assert shown == expected  # `/plan` alone changes nothing: nothing is sent
    await agent.aclose()
    loaded = plans(list(replay_updates((await store.inspect(agent.session_id)).events, "/ws")))
    assert loaded == expected


def test_an_area_of_kind_plan_with_another_shape_shows_no_plan() -> None:
    projection = AcpProjection("/ws")
    events = [
        Event(seq=0, time=0.0, type="area/register", data=AreaRegister(area="a1", kind="plan")),
        Event(
            seq=1,
            time=0.0,
            type="area/state",
            data=AreaState(area="a1", life="retain", flow="yielded", state={"items": "x"}),
        ),
    ]
    assert [u for e in events for u in projection.apply(e)] == []
