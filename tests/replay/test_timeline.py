"""The timeline: at the last seq it equals the live Agent's Context and views; any seq equals a
replay of the log up to that seq; seeking back and forth and following live agree."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from engine.agent import Agent
from engine.context import ContextRebuilder
from engine.events import Event, SessionTitle, StepStart, ToolDefinition, UserMessage, make_event
from engine.gateway.base import GatewayType
from replay.projection import Projection
from replay.timeline import Timeline, last_requests
from tests.agent.conftest import (
    FlakyStore,
    MakeAgent,
    Recorder,
    record,
    runtime_of,
    stored_log,
)
from tests.replay.live_scenarios import NAMES, play
from tests.replay.scenarios import SCENARIOS


def _views(agent: Agent) -> tuple[object, ...]:
    return (agent.context.entries(), agent.areas, agent.pins, agent.model, agent.last_assembly)


@pytest.mark.parametrize("name", NAMES)
async def test_the_timeline_at_the_last_seq_is_the_live_agent(
    name: str, make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await play(name, make_agent, store)
    agent, log = played.agent, played.stored
    config = runtime_of(agent).assembler.config  # the models the timeline resolves bindings by
    timeline = Timeline.of(agent.context.gateway_type, log, config=config, every=7)
    state = timeline.at(log[-1].seq)
    request = timeline.request_at(log[-1].seq)
    seen = (state.context.entries(), state.areas, state.pins, state.model, request)
    assert seen == _views(agent)
    # every item's label and cost, on demand, agree with what the last request carried
    by_index = {view.index: view for view in state.item_views()}
    for item in request.items if request is not None else ():
        assert (by_index[item.index].label, by_index[item.index].chars) == (item.label, item.chars)
    assert isinstance(timeline, Projection)


@pytest.mark.parametrize("name", NAMES)
async def test_the_last_requests_of_a_log_are_the_live_agents_last_two(
    name: str, make_agent: MakeAgent, store: FlakyStore
) -> None:
    played = await play(name, make_agent, store)
    agent, log = played.agent, played.stored
    config = runtime_of(agent).assembler.config
    current, previous = last_requests(log, agent.context.gateway_type, config=config)
    # as the console captured it during its step: the Agent's, once the turn ended, names none
    assert current is not None
    assert replace(current, turn=None) == agent.last_assembly
    steps = [e.data for e in log if isinstance(e.data, StepStart)]
    assert current.turn == steps[-1].turn
    if len(steps) < 2:
        assert previous is None
    else:
        assert previous is not None
        assert (previous.turn, previous.figures) == (steps[-2].turn, steps[-2].figures)


def test_a_log_without_a_request_has_no_last_request() -> None:
    log = [
        make_event(UserMessage(content="hi"), 0, 1.0),
        make_event(SessionTitle(title="t"), 1, 2.0),
    ]
    assert last_requests(log, GatewayType.scripted) == (None, None)
    assert last_requests([], GatewayType.scripted) == (None, None)


@pytest.mark.parametrize(
    "name", ["subtask", "compaction", "areas", "cancel_mid_tool", "permission_rule"]
)
async def test_every_seq_is_a_replay_of_the_log_up_to_it(
    name: str, make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await SCENARIOS[name](make_agent)
    log = await stored_log(store, agent.session_id)
    timeline = Timeline.of(agent.context.gateway_type, log, every=5)
    gateway_type = agent.context.gateway_type
    # forward, backward and at random: each state equals a fresh replay of the prefix
    order = [*range(-1, len(log)), *reversed(range(-1, len(log))), 3, 17, 2, len(log) - 1, 0]
    for seq in order:
        state = timeline.at(seq)
        expected = ContextRebuilder.of(gateway_type, log[: seq + 1])
        assert state.seq == seq
        assert state.context.entries() == expected.context.entries()
        assert [a.id for a in state.areas] == list(expected.areas)
        assert state.cursor == expected.cursor
        assert state.turn == expected.turn


async def test_the_gc_history_holds_what_each_collection_reclaimed(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await SCENARIOS["subtask"](make_agent)
    log = await stored_log(store, agent.session_id)
    timeline = Timeline.of(agent.context.gateway_type, log, every=4)
    (collection,) = timeline.snapshot().collections
    collected = next(e for e in log if e.type == "gc/collect")
    assert collection.seq == collected.seq
    assert collection.areas == ("subtask#1",)
    assert collection.promoted == 1
    assert {p.owner for _, p in collection.reclaimed} == {"subtask#1"}
    assert timeline.at(collected.seq - 1).collections == ()


async def test_a_live_timeline_fed_by_the_stream_equals_the_stored_one(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    recorders: list[Recorder] = []

    async def recording(*args: Any, **kwargs: Any) -> Agent:
        made = await make_agent(*args, **kwargs)
        recorders.append(record(made))
        return made

    agent = await SCENARIOS["subtask"](recording)
    live = Timeline(agent.context.gateway_type, every=3)
    for event in recorders[0].events:
        if isinstance(event, Event):
            live.apply(event)
    stored = Timeline.of(agent.context.gateway_type, await stored_log(store, agent.session_id))
    assert live.seq == stored.seq
    assert live.snapshot().context.entries() == stored.snapshot().context.entries()
    assert live.snapshot().areas == stored.snapshot().areas == agent.areas


async def test_each_request_lists_the_tools_it_offered_each_definition_logged_once(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    """A subtask offers `subtask_done` beside `probe` while it is active: the timeline gives
    each request the tools it offered, from definitions logged once each."""
    played = await play("subtask", make_agent, store)
    log = played.stored
    defined = [e.data for e in log if isinstance(e.data, ToolDefinition)]
    assert sorted(d.name for d in defined) == ["probe", "subtask_done"]
    timeline = Timeline.of(played.agent.context.gateway_type, log)
    steps = [e.seq for e in log if isinstance(e.data, StepStart)]
    offered = []
    for seq in steps:
        request = timeline.request_at(seq)
        assert request is not None
        offered.append([tool.name for tool in request.tools])
        assert all(json.loads(tool.text)["name"] == tool.name for tool in request.tools)
        assert all(tool.chars == len(tool.text) for tool in request.tools)
    # its second step called `subtask_done`, which went with the subtask: later steps lack it
    assert offered == [["probe", "subtask_done"]] * 2 + [["probe"]] * 2
