"""`trellis acp` started as a real process and driven by the `acp` package's own client side
(`spawn_agent_process` / `ClientSideConnection`).

Every message Trellis writes is recorded in order (the connection's observer) and, when the peer
closes, checked against the package's schema models (`schema_check`): answers by the method they
answer, notifications and requests by their method. Raw lines (malformed JSON, oversized
messages) can be written to the process's stdin beside the client's own traffic.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from acp import Client, spawn_agent_process, text_block
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    PermissionOption,
    PromptResponse,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from tests.acp.schema_check import check_outgoing
from tests.agent.harness import REPO_ROOT, trellis_env
from tests.waiting import until

MAX_LINE = 1024 * 1024

LONG_REPLY = {"text": "word " * 500, "chunk_delay": 0.01}
"""A scripted reply that streams for seconds: a prompt to cancel in flight."""

Permission = Callable[[ToolCallUpdate, list[PermissionOption]], Awaitable[str | None]]
"""Chooses an option id for a permission request; None: never answer."""


async def allow_once(_: ToolCallUpdate, __: list[PermissionOption]) -> str | None:
    return "allow_once"


@dataclass
class Recorder:
    """The client the package's connection calls: it records updates and answers permission."""

    permission: Permission = allow_once
    updates: list[tuple[str, Any]] = field(default_factory=list)
    asked: list[ToolCallUpdate] = field(default_factory=list)
    unanswered: list[asyncio.Future[None]] = field(default_factory=list)

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **_: Any
    ) -> RequestPermissionResponse:
        self.asked.append(tool_call)
        choice = await self.permission(tool_call, options)
        if choice is None:  # a client that never answers
            never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self.unanswered.append(never)
            await never
        if choice == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=str(choice))
        )

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append((session_id, update))

    async def write_text_file(self, **_: Any) -> Any:
        raise NotImplementedError("this client offers no fs capability")

    async def read_text_file(self, **_: Any) -> Any:
        raise NotImplementedError("this client offers no fs capability")

    def on_connect(self, _: Any) -> None:
        return None


@dataclass
class StdioPeer:
    conn: ClientSideConnection
    process: asyncio.subprocess.Process
    client: Recorder
    received: list[dict[str, Any]]
    """Every message Trellis wrote, in order."""
    asked: dict[Any, str]
    """The ids of the requests the client sent, with their methods."""

    async def raw(self, line: bytes) -> None:
        """Write bytes to Trellis's stdin beside the client's traffic (a newline is added)."""
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(line + b"\n")
        await stdin.drain()

    async def errors_for(self, *ids: Any) -> list[dict[str, Any]]:
        """Wait for error answers with these ids (None: to an unreadable message), in order."""
        wanted = list(ids)
        for _ in range(12_000):
            found = [m for m in self.received if "error" in m and m.get("id") in ids]
            if [m["id"] for m in found] == wanted:
                return found
            await asyncio.sleep(0.005)
        raise AssertionError(f"expected error answers to {wanted}, got {found}")

    def updates(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """The `session/update` payloads Trellis sent, as JSON, in order."""
        return [
            m["params"]["update"]
            for m in self.received
            if m.get("method") == "session/update"
            and (session_id is None or m["params"]["sessionId"] == session_id)
        ]

    def text(self, session_id: str, kind: str = "agent_message_chunk") -> str:
        return "".join(
            u["content"]["text"]
            for u in self.updates(session_id)
            if u["sessionUpdate"] == kind and u["content"]["type"] == "text"
        )

    def check_schema(self) -> None:
        for message in self.received:
            check_outgoing(message, self.asked)


def acp_argv(args: Sequence[str] = ()) -> list[str]:
    return [sys.executable, "-m", "app.cli", "acp", *args]


def script_args(tmp_path: Path, *replies: dict[str, Any]) -> list[str]:
    """`--script PATH` for `trellis acp`: the scripted model's replies, in order."""
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"replies": list(replies)}))
    return ["--script", str(path)]


async def open_session(
    peer: StdioPeer, workspace: Path, capabilities: ClientCapabilities | None = None
) -> str:
    """`initialize` (offering `capabilities`, by default none), then `session/new` in
    `workspace`: the new session's id."""
    await peer.conn.initialize(
        protocol_version=1, client_capabilities=capabilities or ClientCapabilities()
    )
    return (await peer.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id


async def streaming_prompt(peer: StdioPeer, session_id: str) -> asyncio.Task[PromptResponse]:
    """A prompt sent, once its reply (`LONG_REPLY`) has begun to stream: its answer to come."""
    prompt = asyncio.create_task(
        peer.conn.prompt(session_id=session_id, prompt=[text_block("talk")])
    )
    await until(lambda: len(peer.text(session_id)) > 20, "the reply streamed past 20 characters")
    return prompt


@asynccontextmanager
async def trellis_acp(
    *,
    home: Path,
    config: Path,
    cwd: Path,
    args: Sequence[str] = (),
    permission: Permission = allow_once,
    client: Recorder | None = None,
) -> AsyncIterator[StdioPeer]:
    """`trellis acp ARGS` in `cwd`, connected (through `client`, by default a `Recorder` that
    answers `permission`); on exit stdin is closed, the process waited for and every message it
    sent checked against the schema."""
    received: list[dict[str, Any]] = []
    asked: dict[Any, str] = {}

    def observe(event: StreamEvent) -> None:
        message = event.message
        if event.direction is StreamDirection.INCOMING:
            received.append(message)
        elif "method" in message and "id" in message:
            asked[message["id"]] = message["method"]

    if client is None:
        client = Recorder(permission=permission)
    argv = acp_argv(args)
    env = trellis_env(home=home, config=config)
    env["PYTHONPATH"] = str(REPO_ROOT)
    async with (
        spawn_agent_process(
            cast(Client, client),  # it answers what a client without fs or terminal must
            argv[0],
            *argv[1:],
            env=env,
            cwd=cwd,
            transport_kwargs={"limit": MAX_LINE + 1, "stderr": None, "shutdown_timeout": 30.0},
            observers=[observe],
        ) as (conn, process)
    ):
        peer = StdioPeer(conn, process, client, received, asked)
        yield peer
    peer.check_schema()
    for message in received:
        compact = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        assert len(compact.encode("utf-8")) <= MAX_LINE
