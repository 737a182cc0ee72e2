"""The transcript fed live equals the transcript rebuilt from SQLite, scenario by scenario."""

from __future__ import annotations

from engine.agent import Agent
from engine.events import Event, LiveEvent
from engine.gateway.scripted import Reply
from engine.tools import ToolRegistry
from replay.transcript import (
    AssistantEntry,
    ContextEntry,
    ToolEntry,
    Transcript,
    TurnEntry,
    UserEntry,
    transcript_of,
)
from tests.agent.conftest import FixedTool, FlakyStore, MakeAgent, call, context


def follow(agent: Agent) -> Transcript:
    """A transcript fed every durable and live event of the agent's session as it happens."""
    transcript = Transcript()

    def feed(event: Event | LiveEvent) -> None:
        transcript.apply(event)

    agent.subscribe(feed, from_seq=0)
    return transcript


async def stored(store: FlakyStore, agent: Agent) -> Transcript:
    await agent.when_idle()
    return transcript_of((await store.inspect(agent.session_id)).events)


async def test_tool_calls_pair_with_their_results(make_agent: MakeAgent, store: FlakyStore) -> None:
    tools = ToolRegistry([FixedTool("look", "seen", [context("note", "ci", "main")])])
    agent = await make_agent(
        [
            Reply(text="let me look", tool_calls=[call("look", "c1")], chunk_delay=0.001),
            Reply("done"),
        ],
        tools=tools,
    )
    live = follow(agent)
    agent.send("look around")
    from_store = await stored(store, agent)

    assert live.durable_entries() == from_store.entries
    talk = [
        e
        for e in from_store.entries
        if isinstance(e, UserEntry | AssistantEntry | ToolEntry | ContextEntry)
    ]
    assert [type(e).__name__ for e in talk] == [
        "UserEntry",
        "AssistantEntry",
        "ToolEntry",
        "ContextEntry",
        "AssistantEntry",
    ]
    user, assistant, tool, ctx, _ = talk
    assert isinstance(user, UserEntry)
    assert user.content == "look around"
    assert isinstance(assistant, AssistantEntry)
    assert assistant.content == "let me look"
    assert isinstance(tool, ToolEntry)
    assert (tool.name, tool.status, tool.result) == ("look", "done", "seen")
    assert isinstance(ctx, ContextEntry)
    assert ctx.heading == "ci: main"
    (turn,) = [e for e in from_store.entries if isinstance(e, TurnEntry)]
    assert isinstance(turn, TurnEntry)
    assert (turn.status, turn.reason, turn.steps) == ("ended", "completed", 2)
