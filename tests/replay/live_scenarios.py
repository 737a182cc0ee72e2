"""The replay scenarios as a live viewer sees them: every agent a scenario makes is subscribed
from seq 0 as soon as it exists, so a test can feed a projection the live stream and compare it
with the log SQLite holds.

`play(name, make_agent, store)` runs one of `tests/replay/scenarios.py`'s `SCENARIOS` or one of
`MORE` below: sessions the transcript must read too (a crash-repaired tail, a fork, a model switch
across providers).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from engine.agent import Agent
from engine.commands import REGISTRY
from engine.config import Config, ModelEntry
from engine.events import Event, LiveEvent
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.session import Session
from tests.agent.conftest import FlakyStore, MakeAgent, Recorder
from tests.replay.scenarios import SCENARIOS
from tests.store.conftest import full_turn, open_turn, step


@dataclass(frozen=True, slots=True)
class Played:
    """A finished scenario: its last agent, the live feed that agent gave, the log SQLite holds."""

    agent: Agent
    live: tuple[Event | LiveEvent, ...]
    stored: tuple[Event, ...]


async def crash_repaired(make_agent: MakeAgent, store: FlakyStore) -> Agent:
    """A log that stops inside a tool call (a crash), resumed: the store repairs the tail."""
    session = Session((await store.create(cwd="/crashed")).id, store)
    full_turn(session, "before the crash")
    turn = open_turn(session, "during the crash")
    step(session, turn, calls=2, results=1)
    await session.flush()
    await store.release(session.id)
    agent = await make_agent([Reply(text="back again")], session_id=session.id)
    agent.send("are you there?")
    return agent


async def fork(make_agent: MakeAgent, store: FlakyStore) -> Agent:
    """A session forked after its first turn, continued on the fork."""
    parent = await make_agent([Reply(text="one"), Reply(text="two")])
    await parent.send("first")
    cut = len(parent.log)
    await parent.send("second")
    await parent.dispose()
    forked = await store.fork(parent.session_id, cut)
    agent = await make_agent([Reply(text="other two")], session_id=forked.id)
    agent.send("second, differently")
    return agent


REMOTE = Config(
    default_model="remote",
    models={
        "remote": ModelEntry(
            provider="openai", base_url="http://127.0.0.1:9/v1", model="remote-model"
        ),
        "local": ModelEntry(provider="scripted"),
    },
)


async def model_switch(make_agent: MakeAgent, store: FlakyStore) -> Agent:
    """A turn on an OpenAI-format model (played by the scripted gateway), `/model local`, a turn
    on the scripted provider."""
    agent = await make_agent(
        gateway=ScriptedGateway([Reply(text="from remote")], strict=True), config=REMOTE
    )
    await agent.send("hello remote")
    result = await REGISTRY.run(agent, "/model local")
    assert result.ok, result.text
    agent.send("hello local")
    return agent


MORE: dict[str, Callable[[MakeAgent, FlakyStore], Awaitable[Agent]]] = {
    "crash_repaired": crash_repaired,
    "fork": fork,
    "model_switch": model_switch,
}
NAMES = sorted([*SCENARIOS, *MORE])


async def play(name: str, make_agent: MakeAgent, store: FlakyStore) -> Played:
    recorders: dict[str, Recorder] = {}

    async def watched(*args: Any, **kwargs: Any) -> Agent:
        agent = await make_agent(*args, **kwargs)
        recorders[agent.session_id] = Recorder()
        await agent.subscribe_from(recorders[agent.session_id], 0)
        return agent

    if name in SCENARIOS:
        agent = await SCENARIOS[name](watched)
    else:
        agent = await MORE[name](watched, store)
    await agent.when_idle()
    stored = (await store.inspect(agent.session_id)).events
    return Played(agent, tuple(recorders[agent.session_id].events), stored)
