"""Shared fixtures for the agent-loop tests: an Agent on the scripted model, its log and requests.

Every test here runs a real `Agent` (built by `engine.agent.open_agent`, as front ends build it)
against a `ScriptedGateway`, and asserts on two things only: the durable log as the store holds it
(`stored_log`) and the requests the scripted model received (`requests_of`). Timing is controlled by
the tools below (a tool that waits for the test, a tool that returns additional contexts) and by the
scripted replies' `chunk_delay`; nothing asserts on wall time.

Fixtures: `store` (a `FlakyStore`: a real SQLite store whose flushes a test can fail or hold),
`make_agent` (an async factory; every agent it made is disposed at teardown). Helpers are plain
functions and classes, importable as `from tests.agent.conftest import ...`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from pydantic import BaseModel

from engine.agent import Agent, AgentOptions, PromptDecision, PromptSubmission, open_agent
from engine.agent.admission import Next
from engine.agent.runtime import Runtime
from engine.config import Config
from engine.events import Event, LiveEvent, Payload, UserMessage
from engine.gateway.base import Gateway, GatewayType
from engine.gateway.codecs import codec_for
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.message import AdditionalContext, Message, Role, Source, ToolCall
from engine.store import StoreError, UnknownSessionError
from engine.store.sqlite.store import SQLiteStore
from engine.tools import (
    PermissionQuestion,
    PermissionReply,
    PermissionResponder,
    Tool,
    ToolContext,
    ToolKind,
    ToolOutput,
    ToolRegistry,
)

P = TypeVar("P", bound=Payload)

# --- the store ------------------------------------------------------------------------------------


class FlakyStore(SQLiteStore):
    """A real SQLite store that a test can make fail or wait at its next flushes.

    `fail_flushes = n`: the next n flushes fail as the contract says a flush fails, with a
    `StoreError` and keeping none of the batches appended since the last flush.
    `hold_flushes()`: flushes wait (`flush_waiting` is set once one does) until
    `release_flushes()`.
    """

    flush_runs_to_its_end = False  # a held flush is cancelled where it waits, its batch dropped

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.fail_flushes = 0
        self.failed = 0
        self.flush_waiting = asyncio.Event()
        self._gate: asyncio.Event | None = None
        self._held: dict[str, list[Event]] = {}

    def hold_flushes(self) -> None:
        """Make every flush from now on wait until `release_flushes()`."""
        self._gate = asyncio.Event()
        self.flush_waiting.clear()

    def release_flushes(self) -> None:
        """Let held flushes go on (and stop holding new ones)."""
        if self._gate is not None:
            self._gate.set()
            self._gate = None

    async def append(self, session_id: str, events: Sequence[Event]) -> None:
        self._held.setdefault(session_id, []).extend(events)

    async def flush(self, session_id: str | None = None) -> None:
        ids = list(self._held) if session_id is None else [session_id]
        held = {sid: self._held.pop(sid) for sid in ids if sid in self._held}
        if self._gate is not None:
            self.flush_waiting.set()
            await self._gate.wait()
        if self.fail_flushes > 0:
            self.fail_flushes -= 1
            self.failed += 1
            raise StoreError("flush failed on purpose (test)")
        for sid, events in held.items():
            await super().append(sid, events)
        await super().flush(session_id)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[FlakyStore]:
    """A SQLite store in the test's temp dir (flushes succeed unless `fail_flushes` is set)."""
    opened = FlakyStore(tmp_path / "data" / "sessions.sqlite")
    await opened.open()
    yield opened
    opened.fail_flushes = 0
    opened.release_flushes()
    await opened.aclose()


async def stored_log(store: SQLiteStore, session_id: str) -> tuple[Event, ...]:
    """The log as the store holds it (read without a lease; an open tail shows its repair);
    empty for a session not stored yet (a new session enters the store with its first message)."""
    try:
        return (await store.inspect(session_id)).events
    except UnknownSessionError:
        return ()


# --- building agents ------------------------------------------------------------------------------

MakeAgent = Callable[..., Awaitable[Agent]]


@pytest.fixture
async def make_agent(tmp_path: Path, store: FlakyStore) -> AsyncIterator[MakeAgent]:
    """`await make_agent(replies, *, tools=None, responder=None, options=None, stored=True,
    session_id=None, gateway=None, config=None)`: an Agent on a strict `ScriptedGateway` playing
    `replies` (a spent script is a gateway error, so a test states every reply it expects).

    With `stored=True` (the default) it writes to the `store` fixture; `stored=False` builds one
    with no store. `session_id` resumes a stored session. `tools` defaults to an empty registry so
    the model is offered only what the test registers; `responder` answers permission requests
    (default: the headless policy, which denies). The workspace is `tmp_path / "ws"`. Every agent
    is disposed at teardown.
    """
    agents: list[Agent] = []
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)

    async def make(
        replies: Iterable[Reply] = (),
        *,
        tools: ToolRegistry | None = None,
        responder: PermissionResponder | None = None,
        options: AgentOptions | None = None,
        stored: bool = True,
        session_id: str | None = None,
        gateway: Gateway | None = None,
        config: Config | None = None,
    ) -> Agent:
        agent = await open_agent(
            config=config or Config(),
            cwd=workspace,
            store=store if stored else None,
            session_id=session_id,
            gateway=gateway if gateway is not None else ScriptedGateway(replies, strict=True),
            responder=responder,
            tools=tools if tools is not None else ToolRegistry(),
            options=options,
        )
        agents.append(agent)
        return agent

    yield make
    for agent in agents:
        await agent.aclose()


def runtime_of(agent: Agent) -> Runtime:
    """The engine's working state behind an Agent: only tests of the engine itself look here."""
    return agent._rt


def scripted(agent: Agent) -> ScriptedGateway:
    """The agent's gateway, which these fixtures always make a ScriptedGateway."""
    gateway = runtime_of(agent).gateway
    assert isinstance(gateway, ScriptedGateway)
    return gateway


# --- what the model received ----------------------------------------------------------------------


def requests_of(agent: Agent) -> list[list[Message]]:
    """Each request the scripted model received, decoded into generic messages."""
    codec = codec_for(GatewayType.scripted)
    return [[codec.decode(item) for item in r.items] for r in scripted(agent).requests]


def contents(messages: Iterable[Message]) -> list[str]:
    return [m.content for m in messages]


def user_texts(messages: Iterable[Message]) -> list[tuple[str, str]]:
    """(source, content) of the user-role messages, e.g. `("user", "hi")`, `("plugin", "note")`."""
    return [(str(m.source), m.content) for m in messages if m.role is Role.user]


# --- reading the log ------------------------------------------------------------------------------


def types(events: Iterable[Event | LiveEvent]) -> list[str]:
    return [e.type for e in events]


def of_type(events: Iterable[Event | LiveEvent], kind: type[P]) -> list[P]:
    """The payloads of one type, in order."""
    return [e.data for e in events if isinstance(e.data, kind)]


def turn_shape(events: Iterable[Event]) -> list[str]:
    """The log with the bookkeeping left out (model binding, floor, tool definitions, title), each
    user/message as `user/message:<source>:<content>`: short enough to compare whole in an
    assertion."""
    skip = {
        "model/bind",
        "floor/block",
        "tool/define",
        "session/title",
        "area/register",
        "area/state",
    }
    shape: list[str] = []
    for event in events:
        if event.type in skip:
            continue
        if isinstance(event.data, UserMessage):
            shape.append(f"user/message:{event.data.source}:{event.data.content}")
        else:
            shape.append(event.type)
    return shape


@dataclass
class Recorder:
    """A subscriber that keeps every durable and live event it is given."""

    events: list[Event | LiveEvent] = field(default_factory=list)

    def __call__(self, event: Event | LiveEvent) -> None:
        self.events.append(event)

    def types(self) -> list[str]:
        return types(self.events)

    def of(self, kind: type[P]) -> list[P]:
        return of_type(self.events, kind)


def record(agent: Agent) -> Recorder:
    """Subscribe a new Recorder to the agent's session."""
    recorder = Recorder()
    agent.subscribe(recorder)
    return recorder


# --- tools and responders whose timing the test controls ------------------------------------------


class NoArgs(BaseModel):
    pass


class GateTool(Tool[NoArgs]):
    """Waits until the test opens its gate; `started` is set once the call is running.

    Lets a test act (inject, steer, cancel) while a tool call is in flight.
    """

    description = "Waits for the test."
    args_model = NoArgs

    def __init__(
        self, name: str = "gate", output: ToolOutput | None = None, *, streams: str = ""
    ) -> None:
        # Built-in tools name themselves per class; a test names each instance.
        self.name = name  # type: ignore[misc]
        self.started = asyncio.Event()
        self.gate = asyncio.Event()
        self.cancelled = False
        self._output = output or ToolOutput(f"{name} done")
        self._streams = streams  # live output sent before it waits, as a command prints

    async def run(self, args: NoArgs, ctx: ToolContext) -> ToolOutput:
        if self._streams and ctx.on_output is not None:
            ctx.on_output(self._streams)
        self.started.set()
        try:
            await self.gate.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return self._output


class FixedTool(Tool[NoArgs]):
    """Returns a fixed output at once (with any additional contexts it was given)."""

    description = "Returns what the test gave it."
    args_model = NoArgs

    def __init__(
        self,
        name: str,
        content: str = "",
        additional_contexts: Sequence[AdditionalContext] = (),
        *,
        needs_permission: bool = False,
    ) -> None:
        self.name = name  # type: ignore[misc]
        self.needs_permission = needs_permission  # type: ignore[misc]
        self.kind = ToolKind.execute if needs_permission else ToolKind.other  # type: ignore[misc]
        self.calls = 0
        self._output = ToolOutput(
            content or f"{name} result", additional_contexts=tuple(additional_contexts)
        )

    async def run(self, args: NoArgs, ctx: ToolContext) -> ToolOutput:
        self.calls += 1
        return self._output


class HeldAdmission:
    """A prompt listener that holds admission (of `only`, or of every prompt) until `release()`.

    `deciding` is set once a held prompt is waiting, so a test can act while it is admitted.
    """

    def __init__(self, only: str | None = None) -> None:
        self.only = only
        self.deciding = asyncio.Event()
        self._decide = asyncio.Event()

    def release(self) -> None:
        self._decide.set()

    async def __call__(self, submission: PromptSubmission, next: Next) -> PromptDecision:
        if self.only is None or submission.content == self.only:
            self.deciding.set()
            await self._decide.wait()
        return await next()


class SilentResponder:
    """A permission responder that never answers; `asked` is set when a question arrives."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.requests: list[PermissionQuestion] = []
        self.withdrawn = False

    async def __call__(self, request: PermissionQuestion) -> PermissionReply:
        self.requests.append(request)
        self.asked.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.withdrawn = True
            raise
        raise AssertionError("unreachable")


def context(text: str, kind: str = "plugin", name: str = "") -> AdditionalContext:
    return AdditionalContext(text, Source(kind, name))


def call(name: str, call_id: str = "", **arguments: Any) -> ToolCall:
    """A scripted tool call; an empty id lets the scripted model number it."""
    return ToolCall(call_id, name, dict(arguments))
