"""The harness of the subtask, permission, command, CLI, orchestration and area tests.

`opened()` builds an Agent the way a front end does (`open_agent`) on a `SQLiteStore` in the test's
temp dir, with a `ScriptedGateway` whose requests the tests decode; `stored()` reads the log back
with `inspect` (no lease), which is what the assertions are made on.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from engine.agent import Agent, open_agent
from engine.config import Config
from engine.events import Event, Payload
from engine.gateway.base import GatewayType, ModelRequest
from engine.gateway.codecs import codec_for
from engine.gateway.scripted import Reply, ScriptedGateway
from engine.message import Message, ToolCall
from engine.permission_mode import PermissionMode
from engine.privacy import PrivacyClass, PrivatizationLabel
from engine.store.sqlite.store import SQLiteStore
from engine.tools import Tool, ToolContext, ToolOutput, ToolRegistry, default_registry
from engine.tools.front_end import FrontEndLender
from engine.tools.permission import PermissionResponder

P = TypeVar("P", bound=Payload)

INTERNAL = PrivatizationLabel(cls=PrivacyClass.internal)
REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(slots=True)
class Opened:
    agent: Agent
    store: SQLiteStore
    gateway: ScriptedGateway
    workspace: Path

    async def run(self, text: str) -> None:
        """One send, waited for."""
        self.agent.send(text)
        await self.agent.when_idle()

    async def events(self) -> tuple[Event, ...]:
        """What the store holds: nothing for a session not stored yet (it has no message)."""
        await self.agent.when_idle()
        if not self.agent.stored:
            return ()
        return (await self.store.inspect(self.agent.session_id)).events


@asynccontextmanager
async def opened(
    tmp_path: Path,
    replies: Iterable[Reply] = (),
    *,
    config: Config | None = None,
    responder: PermissionResponder | None = None,
    tools: ToolRegistry | None = None,
    model: str | None = None,
    strict: bool = True,
    mode: PermissionMode | None = None,
    front_end: FrontEndLender | None = None,
) -> AsyncIterator[Opened]:
    """An Agent on a new stored session in `tmp_path/workspace`; disposed on exit."""
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    gateway = ScriptedGateway(replies, strict=strict)
    async with SQLiteStore(tmp_path / "data" / "sessions.sqlite") as store:
        agent = await open_agent(
            config=config or Config(),
            cwd=workspace,
            store=store,
            gateway=gateway,
            responder=responder,
            tools=tools,
            model=model,
            mode=mode,
            front_end=front_end,
        )
        try:
            yield Opened(agent, store, gateway, workspace)
        finally:
            await agent.aclose()


def decoded(request: ModelRequest) -> list[Message]:
    """The request's items as generic messages."""
    codec = codec_for(GatewayType.scripted)
    return [codec.decode(item) for item in request.items]


def contents(request: ModelRequest) -> list[str]:
    return [m.content for m in decoded(request)]


def payloads(events: Iterable[Event], kind: type[P]) -> list[P]:
    return [e.data for e in events if isinstance(e.data, kind)]


def of_type(events: Iterable[Event], event_type: str) -> list[Event]:
    return [e for e in events if e.type == event_type]


class NoArgs(BaseModel):
    pass


class Gate(Tool[NoArgs]):
    """A tool that waits until the test opens it, so a turn can be held open without timing."""

    name = "gate"
    description = "Waits for the test."
    args_model = NoArgs

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def run(self, args: NoArgs, ctx: ToolContext) -> ToolOutput:
        self.entered.set()
        await self.release.wait()
        return ToolOutput("opened", label=INTERNAL)

    async def reached(self, agent: Agent) -> None:
        """Wait until the tool runs; fail (instead of hanging) if the agent went idle first."""
        entered = asyncio.ensure_future(self.entered.wait())
        idle = asyncio.ensure_future(agent.when_idle())
        await asyncio.wait({entered, idle}, return_when=asyncio.FIRST_COMPLETED)
        entered.cancel()
        idle.cancel()
        assert self.entered.is_set(), "the turn ended before the gate tool ran"


def gate_call() -> ToolCall:
    return ToolCall("", Gate.name, {})


def registry_with(*extra: Tool[NoArgs]) -> ToolRegistry:
    registry = default_registry()
    for tool in extra:
        registry.register(tool)
    return registry


# --- the real `trellis` command ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CliRun:
    code: int
    stdout: str
    stderr: str


def trellis_argv(args: Sequence[str]) -> list[str]:
    """The command line of `trellis ARGS` run from this checkout."""
    return [sys.executable, "-m", "app.cli", *args]


def trellis_env(*, home: Path, config: Path) -> dict[str, str]:
    """This environment without Trellis settings, API keys or a provider's endpoint, with
    TRELLIS_HOME and TRELLIS_CONFIG in the test's temp dir and no local server asked for its
    models (a test that wants one names its own: `TRELLIS_LOCAL_SERVERS`)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("TRELLIS_")
        and not key.endswith("_API_KEY")
        and key not in PROVIDER_ENDPOINTS
    }
    env.update(
        TRELLIS_HOME=str(home),
        TRELLIS_CONFIG=str(config),
        TRELLIS_LOCAL_SERVERS="",
        PYTHONPATH=str(REPO_ROOT),
        NO_COLOR="1",
    )
    return env


PROVIDER_ENDPOINTS = ("OPENAI_BASE_URL",)
"""Variables that move a provider's endpoint: a test never inherits the machine's."""


def trellis(
    args: Sequence[str], *, home: Path, config: Path, cwd: Path, timeout: float = 60.0
) -> CliRun:
    """Run `python -m app.cli ARGS` with TRELLIS_HOME and TRELLIS_CONFIG in the test's temp dir.

    The timeout only stops a hung child; no assertion is made on time.
    """
    done = subprocess.run(
        trellis_argv(args),
        cwd=cwd,
        env=trellis_env(home=home, config=config),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return CliRun(done.returncode, done.stdout, done.stderr)


def context_messages(agent: Agent) -> list[Message]:
    """The agent's whole working Context as generic messages."""
    codec = codec_for(agent.context.gateway_type)
    return [codec.decode(item) for item in agent.context[:]]
