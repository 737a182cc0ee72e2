"""`/model NAME` brings every setting of the new entry (issue 28, item 4).

A session opens on entry `a`, runs a turn, switches to `b` with `/model b`; the next request must
go to `b` with `b`'s settings: its retries, its deadlines, its connect timeout, its windows and its
egress class. Both entries point at a real HTTP server on 127.0.0.1 (`FakeServer`), which tells
the two apart by the model name in the request body. A switch is a `model/bind` event in the
log, so a resumed session runs with the entry it was switched to.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from engine.agent import Agent, AgentOptions, open_agent
from engine.commands import REGISTRY
from engine.config import Config
from engine.events import Event, Retry, StepStart, TurnEnd
from engine.store.sqlite.store import SQLiteStore
from engine.tools import ToolRegistry
from tests.agent.harness import payloads
from tests.gateway.fake_http import Canned, FakeServer, sse

KEEPALIVE = b": keep-alive\n\n"
LONG_WORDS = "lorem ipsum " * 300
"""A first prompt of 3,600 characters: more than a small window leaves for history."""
SLOW = 30.0
"""Entry `a`'s deadlines and timeout: a test that wrongly kept them would hang this long."""


def reply(text: str) -> Canned:
    """A complete Chat Completions stream answering `text`."""
    return Canned(
        chunks=sse(
            {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            "[DONE]",
        )
    )


PARTIAL = sse({"choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": None}]})


@pytest.fixture
async def server(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeServer]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    fake = FakeServer()
    await fake.start()
    yield fake
    await fake.aclose()


@pytest.fixture
def unanswered() -> Iterator[str]:
    """A base URL on 127.0.0.1 whose connections never complete: a listening socket that
    accepts none, its queue filled, so a client's handshake waits until its own timeout."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(3):
        filler = socket.socket()
        filler.setblocking(False)
        with suppress(BlockingIOError):
            filler.connect(("127.0.0.1", port))
        fillers.append(filler)
    yield f"http://127.0.0.1:{port}"
    for filler in fillers:
        filler.close()
    listener.close()


def entries(server: FakeServer, a: dict[str, Any], b: dict[str, Any]) -> Config:
    """Two OpenAI-compatible entries on the fake server, `a` the default."""
    base = {"provider": "openai", "base_url": server.base_url}
    return Config.model_validate(
        {
            "default_model": "a",
            "models": {
                "a": {**base, "model": "model-a", **a},
                "b": {**base, "model": "model-b", **b},
            },
        }
    )


@asynccontextmanager
async def session(tmp_path: Path, config: Config) -> AsyncIterator[tuple[Agent, SQLiteStore]]:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    async with SQLiteStore(tmp_path / "data" / "sessions.sqlite") as store:
        agent = await open_agent(
            config=config,
            cwd=workspace,
            store=store,
            tools=ToolRegistry(),
            options=AgentOptions(retry_backoff=0.0),
        )
        try:
            yield agent, store
        finally:
            await agent.aclose()


async def switched(agent: Agent, server: FakeServer, first: str = "hello") -> None:
    """One turn on `a`, then `/model b`."""
    server.queue(reply("hi from a"))
    agent.send(first)
    await agent.when_idle()
    result = await REGISTRY.run(agent, "/model b")
    assert result.ok, result.text


async def second_turn(agent: Agent, store: SQLiteStore) -> tuple[Event, ...]:
    agent.send("again")
    await agent.when_idle()
    return (await store.inspect(agent.session_id)).events


def models_asked(server: FakeServer) -> list[str]:
    return [seen.body["model"] for seen in server.seen]


def last_end(events: tuple[Event, ...]) -> TurnEnd:
    return payloads(events, TurnEnd)[-1]


async def test_the_new_entrys_max_retries_apply(server: FakeServer, tmp_path: Path) -> None:
    config = entries(server, {"max_retries": 0}, {"max_retries": 2})
    async with session(tmp_path, config) as (agent, store):
        await switched(agent, server)
        server.queue(*[Canned(status=503)] * 3)
        events = await second_turn(agent, store)
    assert models_asked(server) == ["model-a", "model-b", "model-b", "model-b"]
    assert [r.attempt for r in payloads(events, Retry)] == [1, 2]
    assert last_end(events).reason == "error"


async def test_the_new_entrys_first_event_timeout_applies(
    server: FakeServer, tmp_path: Path
) -> None:
    config = entries(
        server,
        {"first_event_timeout": SLOW, "max_retries": 0},
        {"first_event_timeout": 0.3, "max_retries": 0},
    )
    async with session(tmp_path, config) as (agent, store):
        await switched(agent, server)
        server.queue(Canned(chunks=[KEEPALIVE], trickle=KEEPALIVE))
        events = await second_turn(agent, store)
    assert models_asked(server) == ["model-a", "model-b"]
    assert "(first_event_timeout = 0.3)" in last_end(events).message


async def test_the_new_entrys_idle_timeout_applies(server: FakeServer, tmp_path: Path) -> None:
    config = entries(
        server,
        {"idle_timeout": SLOW, "max_retries": 0},
        {"idle_timeout": 0.3, "max_retries": 0},
    )
    async with session(tmp_path, config) as (agent, store):
        await switched(agent, server)
        server.queue(Canned(chunks=PARTIAL, stall=True))
        events = await second_turn(agent, store)
    assert "(idle_timeout = 0.3)" in last_end(events).message


async def test_the_new_entrys_request_timeout_applies(server: FakeServer, tmp_path: Path) -> None:
    config = entries(
        server,
        {"request_timeout": SLOW, "max_retries": 0},
        {"request_timeout": 0.3, "max_retries": 0},
    )
    async with session(tmp_path, config) as (agent, store):
        await switched(agent, server)
        # an event every 50 ms, forever: only the deadline for the whole response ends it
        server.queue(Canned(chunks=PARTIAL, trickle=PARTIAL[0], every=0.05))
        events = await second_turn(agent, store)
    assert "(request_timeout = 0.3)" in last_end(events).message


async def test_the_new_entrys_connect_timeout_applies(
    server: FakeServer, unanswered: str, tmp_path: Path
) -> None:
    config = entries(
        server,
        {"timeout": SLOW, "max_retries": 0},
        {"timeout": 0.2, "max_retries": 0, "base_url": unanswered},
    )
    async with session(tmp_path, config) as (agent, store):
        await switched(agent, server)
        events = await second_turn(agent, store)
    assert "could not connect and send within 0.2s" in last_end(events).message


@pytest.mark.parametrize(
    "window",
    [{"context_window": 1000}, {"context_window": 100_000, "generation_window": 1000}],
    ids=["context_window", "generation_window"],
)
async def test_the_new_entrys_window_bounds_the_next_request(
    server: FakeServer, tmp_path: Path, window: dict[str, int]
) -> None:
    """`a` knows no window, so the long first turn is history in its requests; `b`'s small
    window leaves no room for it."""
    config = entries(server, {}, window)
    async with session(tmp_path, config) as (agent, store):
        await switched(agent, server, first=LONG_WORDS)
        server.queue(reply("short"), reply("shorter"))
        events = await second_turn(agent, store)
    first, second = (payloads([e], StepStart)[0] for e in events if e.type == "step/start")
    assert second.figures.cap < first.figures.cap
    assert second.figures.groups_dropped == 1
    asked = server.seen[-1].body
    assert asked["model"] == "model-b"
    assert LONG_WORDS not in str(asked["messages"])


async def test_the_new_entrys_egress_class_applies(server: FakeServer, tmp_path: Path) -> None:
    """`a` may receive anything (loopback); `b` is declared public, so the user's own words
    (internal) may not go to it."""
    config = entries(server, {}, {"egress": "public"})
    async with session(tmp_path, config) as (agent, store):
        await switched(agent, server)
        events = await second_turn(agent, store)
    assert models_asked(server) == ["model-a"]
    assert last_end(events).reason == "egress"


async def test_compact_after_a_switch_asks_the_new_entry(
    server: FakeServer, tmp_path: Path
) -> None:
    """`/model` between turns and then `/compact`: the summary is asked of `b`, the entry the
    session is bound to, not of the gateway the last turn used."""
    config = entries(server, {}, {})
    async with session(tmp_path, config) as (agent, _):
        server.queue(reply("one"), reply("two"), reply("three"))
        for prompt in ("first", "second", "third"):
            agent.send(prompt)
            await agent.when_idle()
        assert (await REGISTRY.run(agent, "/model b")).ok
        server.queue(reply("the summary"))
        result = await REGISTRY.run(agent, "/compact 1")
    assert result.ok, result.text
    assert models_asked(server) == ["model-a", "model-a", "model-a", "model-b"]


async def test_a_switch_survives_a_resume(server: FakeServer, tmp_path: Path) -> None:
    """The log's `model/bind` is replayed: the resumed session asks `b`, with `b`'s retries."""
    config = entries(server, {"max_retries": 0}, {"max_retries": 1})
    async with session(tmp_path, config) as (agent, _):
        await switched(agent, server)
        session_id = agent.session_id
    server.queue(Canned(status=503), reply("hi from b"))
    async with SQLiteStore(tmp_path / "data" / "sessions.sqlite") as store:
        resumed = await open_agent(
            config=config,
            cwd=tmp_path / "workspace",
            store=store,
            session_id=session_id,
            tools=ToolRegistry(),
            options=AgentOptions(retry_backoff=0.0),
        )
        try:
            assert resumed.model.name == "b"
            events = await second_turn(resumed, store)
        finally:
            await resumed.aclose()
    assert models_asked(server) == ["model-a", "model-b", "model-b"]
    assert last_end(events).reason == "completed"
