"""The replay scenarios as a live viewer sees them: every agent a scenario makes is subscribed
from seq 0 as soon as it exists, so a test can feed a projection the live stream and compare it
with the log SQLite holds.

`play(name, make_agent, store)` runs one of `tests/replay/scenarios.py`'s `SCENARIOS` or one of
`MORE` below: sessions that need the store or a network gateway (a crash-repaired tail, a fork, a
model switch, a switch across provider formats on a fake endpoint at 127.0.0.1). `reopen` resumes
a played session as the next process would, on the gateway its bound model needs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from engine.agent import Agent
from engine.commands import REGISTRY
from engine.config import Config, ModelEntry
from engine.events import Event, LiveEvent
from engine.gateway.factory import make_gateway
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.session import Session
from engine.tools import ToolRegistry
from tests.agent.conftest import FixedTool, FlakyStore, MakeAgent, Recorder
from tests.gateway.fake_http import Canned, FakeServer, sse
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
    await parent.aclose()
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


def _openai_call(call_id: str, name: str) -> list[bytes]:
    """An OpenAI chat-completions stream: a line of text, then one tool call."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    call = {"index": 0, "id": call_id, "type": "function"}
    return sse(
        chunk({"role": "assistant", "content": "Checking."}),
        chunk({"tool_calls": [{**call, "function": {"name": name, "arguments": "{}"}}]}),
        chunk({}, finish="tool_calls"),
        {"choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 5}},
        "[DONE]",
    )


def _openai_text(text: str) -> list[bytes]:
    return sse(
        {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]},
        "[DONE]",
    )


def _anthropic_text(text: str) -> list[bytes]:
    """An Anthropic messages stream with one text block (reasoning signed, as Claude sends)."""
    return sse(
        {"type": "message_start", "message": {"usage": {"input_tokens": 30}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "Hm."},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "c2ln"},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 1},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 4},
        },
        {"type": "message_stop"},
    )


KEY_ENV = "TRELLIS_REPLAY_TEST_KEY"  # set by tests/replay/conftest.py


def cross_config(base_url: str) -> Config:
    """An OpenAI-format model and an Anthropic-format one, both served by the fake endpoint."""
    return Config(
        default_model="gpt",
        models={
            "gpt": ModelEntry(provider="openai", base_url=f"{base_url}/v1", model="gpt-test"),
            "claude": ModelEntry(
                provider="anthropic", base_url=base_url, model="claude-test", api_key_env=KEY_ENV
            ),
        },
    )


_CROSS_BASE = "http://127.0.0.1:9"  # a resumed session makes no request; the port is never used


async def cross_provider(make_agent: MakeAgent, store: FlakyStore) -> Agent:
    """A tool call and its result on an OpenAI-format endpoint, `/model claude`, then a turn on
    an Anthropic-format endpoint: the history is sent again in the other provider's format."""
    server = FakeServer()
    await server.start()
    try:
        server.queue(
            Canned(chunks=_openai_call("call_1", "probe")),
            Canned(chunks=_openai_text("probe says hi")),
            Canned(chunks=_anthropic_text("hello from claude")),
        )
        config = cross_config(server.base_url)
        agent = await make_agent(
            config=config,
            gateway=make_gateway("gpt", config.models["gpt"]),
            tools=ToolRegistry([FixedTool("probe", "hi")]),
        )
        await agent.send("what does probe say?")
        result = await REGISTRY.run(agent, "/model claude")
        assert result.ok, result.text
        await agent.send("and you?")
        await agent.when_idle()
        targets = [seen.target for seen in server.seen]
        assert targets == [
            "/v1/chat/completions",
            "/v1/chat/completions",
            "/messages",
        ]
    finally:
        await server.aclose()
    return agent


async def reopen(name: str, make_agent: MakeAgent, session_id: str) -> Agent:
    """The played session `name` resumed (its lease taken, its Context rebuilt from the log)."""
    if name == "cross_provider":
        config = cross_config(_CROSS_BASE)
        gateway = make_gateway("claude", config.models["claude"])
        return await make_agent(session_id=session_id, config=config, gateway=gateway)
    if name == "model_switch":
        return await make_agent(session_id=session_id, config=REMOTE)
    return await make_agent(session_id=session_id)


MORE: dict[str, Callable[[MakeAgent, FlakyStore], Awaitable[Agent]]] = {
    "crash_repaired": crash_repaired,
    "fork": fork,
    "model_switch": model_switch,
    "cross_provider": cross_provider,
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
