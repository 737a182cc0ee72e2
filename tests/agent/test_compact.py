"""/compact through the agent: the summary replaces the oldest turns, and a failure changes nothing."""

from __future__ import annotations

from engine.agent import Agent
from engine.commands import REGISTRY
from engine.context import ItemKind, rebuild_context
from engine.events import CompactEnd, CompactStart, CompactSummary
from engine.gateway.scripted import Reply
from tests.agent.conftest import (
    FlakyStore,
    MakeAgent,
    contents,
    of_type,
    requests_of,
    scripted,
    stored_log,
)
from tests.waiting import until


async def three_turns(agent: Agent) -> None:
    for prompt in ("q1", "q2", "q3"):
        agent.send(prompt)
        await agent.when_idle()


async def test_compact_summarizes_the_oldest_turns_through_the_model(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent(
        [
            Reply(text="a1"),
            Reply(text="a2"),
            Reply(text="a3"),
            Reply(text="the gist"),
            Reply(text="a4"),
        ]
    )
    await three_turns(agent)
    result = await REGISTRY.run(agent, "/compact 1")
    assert result.ok, result.text
    assert "2 turn(s)" in result.text
    # The summary request carried exactly the compacted turns, then the instruction.
    summary_request = requests_of(agent)[3]
    assert contents(summary_request)[:4] == ["q1", "a1", "q2", "a2"]
    assert "Summarize" in summary_request[-1].content
    assert scripted(agent).requests[3].tools == ()
    # The Context: the summary first, then the kept turn, in order.
    assert [m.content for m in agent.context.messages()] == [
        "Summary of 2 earlier turn(s):\n\nthe gist",
        "q3",
        "a3",
    ]
    assert agent.context.provenance(0).kind is ItemKind.summary
    # The next request starts from the summary.
    agent.send("q4")
    await agent.when_idle()
    assert contents(requests_of(agent)[4]) == [
        "Summary of 2 earlier turn(s):\n\nthe gist",
        "q3",
        "a3",
        "q4",
    ]
    # The log holds everything; rebuilding it gives the live Context.
    log = await stored_log(store, agent.session_id)
    start = of_type(log, CompactStart)
    end = of_type(log, CompactEnd)
    assert [s.groups for s in start] == [2]
    assert of_type(log, CompactSummary)[0].content.endswith("the gist")
    assert end[0].reclaimed == (0, 1, 2, 3)
    rebuilt = rebuild_context(agent.context.gateway_type, log)
    assert rebuilt.context.entries() == agent.context.entries()


async def test_a_resumed_session_keeps_its_compaction(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent = await make_agent(
        [Reply(text="a1"), Reply(text="a2"), Reply(text="a3"), Reply(text="the gist")]
    )
    await three_turns(agent)
    assert (await agent.compact(1)) is not None
    session_id = agent.session_id
    await agent.aclose()
    await store.release(session_id)
    resumed = await make_agent([Reply(text="a4")], session_id=session_id)
    assert resumed.context.messages()[0].content.endswith("the gist")
    resumed.send("q4")
    await resumed.when_idle()
    assert contents(requests_of(resumed)[0])[0].endswith("the gist")


async def test_a_failed_summary_changes_nothing(make_agent: MakeAgent, store: FlakyStore) -> None:
    agent = await make_agent(
        [Reply(text="a1"), Reply(text="a2"), Reply(text="a3"), Reply(error="model is down")]
    )
    await three_turns(agent)
    before = agent.context.entries()
    log_before = len(agent.log)
    result = await REGISTRY.run(agent, "/compact 1")
    assert not result.ok
    assert "model is down" in result.text
    assert agent.context.entries() == before
    assert len(agent.log) == log_before


async def test_nothing_to_compact_and_bad_arguments(make_agent: MakeAgent) -> None:
    agent = await make_agent([Reply(text="a1")])
    agent.send("q1")
    await agent.when_idle()
    assert (await REGISTRY.run(agent, "/compact")).text == "nothing to compact"
    bad = await REGISTRY.run(agent, "/compact many")
    assert not bad.ok
    assert "usage: /compact [KEEP]" in bad.text


async def test_compaction_is_refused_while_a_turn_runs(make_agent: MakeAgent) -> None:
    agent = await make_agent([Reply(text="a slow reply, word by word", chunk_delay=0.05)])
    agent.send("q1")
    await until(lambda: agent.turn_open, "a turn opened")
    result = await REGISTRY.run(agent, "/compact 0")
    assert not result.ok
    assert "while a turn is running" in result.text
    await agent.when_idle()
