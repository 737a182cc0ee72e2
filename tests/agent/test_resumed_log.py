"""A resumed session holds only what it appends; every view of its log reads the rest by range.

Issue 10, "Memory": reopening streams the stored log in chunks through what rebuilds the working
state, and the views (`read_log`, `subscribe_from`, `events`) give what the whole log gave.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import engine.session
from engine.agent import Agent, open_agent
from engine.config import Config, ModelEntry
from engine.context import rebuild_context
from engine.events import Event, LiveEvent
from engine.gateway.base import GatewayType
from engine.gateway.scripted import Reply
from engine.held_log import NotHeldError
from tests.agent.conftest import FlakyStore, MakeAgent, stored_log


async def _resumed(
    make_agent: MakeAgent, store: FlakyStore, turns: int
) -> tuple[Agent, tuple[Event, ...]]:
    """A session of `turns` turns, resumed (its next reply is "more"), and its stored log."""
    first = await make_agent([Reply(text=f"answer {n}") for n in range(turns)])
    for n in range(turns):
        await first.send(f"question {n}")
    await first.aclose()
    before = await stored_log(store, first.session_id)
    return await make_agent([Reply(text="more")], session_id=first.session_id), before


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Range reads of 7 events, so a short log takes several chunks."""
    monkeypatch.setattr(engine.session, "READ_CHUNK", 7)


@pytest.mark.usefixtures("small_chunks")
async def test_a_resumed_agent_holds_only_what_it_appends_and_reads_the_rest(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent, before = await _resumed(make_agent, store, 6)
    session_id = agent.session_id
    assert agent.log_start == len(agent.log) == len(before)
    await agent.send("once more")
    after = await stored_log(store, session_id)
    assert len(agent.log) == len(after)
    assert list(agent.log[len(before) :]) == list(after[len(before) :])
    assert agent.log[-1] == after[-1]
    with pytest.raises(NotHeldError, match="read_log"):
        list(agent.log)
    with pytest.raises(NotHeldError):
        agent.log[len(before) - 1 :]
    with pytest.raises(NotHeldError):
        agent.log[0]
    assert list(await agent.read_log()) == list(after)
    assert list(await agent.read_log(5, 23)) == list(after[5:23])
    assert list(await agent.read_log(len(before) - 3, len(before) + 2)) == list(
        after[len(before) - 3 : len(before) + 2]
    )
    # the Context is what the whole log rebuilds
    rebuilt = rebuild_context(GatewayType.scripted, after)
    assert agent.context.entries() == rebuilt.context.entries()


@pytest.mark.usefixtures("small_chunks")
async def test_catch_up_on_a_resumed_session_reads_the_store_then_follows_live(
    make_agent: MakeAgent, store: FlakyStore
) -> None:
    agent, before = await _resumed(make_agent, store, 4)
    session_id = agent.session_id

    with pytest.raises(ValueError, match="subscribe_from"):
        agent.subscribe(print, from_seq=0)
    seen: list[Event | LiveEvent] = []
    late: list[Event | LiveEvent] = []
    await agent.subscribe_from(seen.append, 0)
    await agent.subscribe_from(late.append, len(before) - 2)
    await agent.send("once more")
    log = await stored_log(store, session_id)
    streamed: list[Event | LiveEvent] = []
    async for event in agent.events(3):
        streamed.append(event)
        if isinstance(event, Event) and event.seq == len(log) - 1:
            break
    durable = [e for e in seen if isinstance(e, Event)]
    assert durable == list(log)
    assert [e for e in late if isinstance(e, Event)] == list(log[len(before) - 2 :])
    assert [e for e in streamed if isinstance(e, Event)] == list(log[3:])


async def test_a_wrong_guess_of_the_bound_provider_replays_the_log_again(
    make_agent: MakeAgent, store: FlakyStore, tmp_path: Path
) -> None:
    """Resume replays the Context in the format of the model the session record names; when the
    log's last binding is of another provider, the Context is replayed again in its format."""
    remote = Config(
        default_model="remote",
        models={
            "remote": ModelEntry(provider="openai", base_url="http://127.0.0.1:9/v1"),
            "local": ModelEntry(provider="scripted"),
        },
    )
    first = await make_agent([Reply(text="one")], config=remote)
    await first.send("the first question")
    await first.aclose()
    with sqlite3.connect(store.path) as conn:  # the record disagrees with the log
        conn.execute("UPDATE sessions SET model = 'local' WHERE id = ?", (first.session_id,))

    second = await open_agent(
        config=remote, cwd=tmp_path / "ws", store=store, session_id=first.session_id
    )
    try:
        log = await stored_log(store, first.session_id)
        assert second.model.name == "remote"
        assert second.context.gateway_type is GatewayType.openai
        rebuilt = rebuild_context(GatewayType.openai, log)
        assert second.context.entries() == rebuilt.context.entries()
    finally:
        await second.aclose()


async def test_a_long_running_session_holds_a_bounded_tail(
    make_agent: MakeAgent, store: FlakyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine.session, "HELD_TAIL", 10)
    agent = await make_agent([Reply(text=f"answer {n}") for n in range(5)])
    seen: list[Event | LiveEvent] = []
    agent.subscribe(seen.append, from_seq=0)
    for n in range(5):
        await agent.send(f"question {n}")
    log = await stored_log(store, agent.session_id)
    assert agent.log_start > 0
    assert len(agent.log) == len(log)
    assert list(agent.log[agent.log_start :]) == list(log[agent.log_start :])
    assert list(await agent.read_log()) == list(log)
    caught_up: list[Event | LiveEvent] = []
    await agent.subscribe_from(caught_up.append, 1)
    assert caught_up == list(log[1:]) == [e for e in seen if isinstance(e, Event)][1:]
