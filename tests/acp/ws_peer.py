"""The WebSocket side of the ACP tests: `trellis serve` started as a real process, and clients that
speak to it through the `acp` package's WebSocket client (or raw `websockets` frames where the test
is about what the package's client would never send).

The server is started with `--port 0` and the URL is read from its banner, so tests never race for
a port. Every wait is bounded (a hung server fails the test); no assertion is made on time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import queue
import signal
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from acp import connect_to_agent
from acp.client.connection import ClientSideConnection
from acp.interfaces import Client
from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)
from acp.ws import create_websocket_stream
from websockets.asyncio.client import ClientConnection, connect

from tests.agent.harness import trellis_argv, trellis_env
from tests.processes import POLL, POLLS

TOKEN = "test-token-0123456789abcdef"
"""The token the test servers take from TRELLIS_SERVE_TOKEN."""
WAIT = 30.0
"""Upper bound of every wait on the server (start, stop, an answer): a bound, not a measure."""


@dataclass(slots=True)
class ServeProcess:
    """A running `trellis serve`: its URL, its data directory and the root its sessions live in."""

    process: subprocess.Popen[str]
    url: str
    home: Path
    root: Path
    stderr: list[str]

    @property
    def db(self) -> Path:
        return self.home / "sessions.sqlite"

    @property
    def log(self) -> Path:
        return self.home / "trellis.log"

    def stop(self, signum: int = signal.SIGTERM) -> int:
        """Send `signum` and wait for the exit; returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signum)
        return self.process.wait(timeout=WAIT)


@contextmanager
def serving(
    tmp_path: Path,
    *,
    config: str = "",
    token: str | None = TOKEN,
    root: Path | None = None,
    name: str = "serve",
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> Iterator[ServeProcess]:
    """`trellis serve --port 0 ARGS` in `root` (default `tmp_path/name/root`) with the user config
    `config` and the variables `env` added; stopped with SIGTERM (killed if it hangs) when the
    block ends."""
    base = tmp_path / name
    home = base / "home"
    root = root or base / "root"
    root.mkdir(parents=True, exist_ok=True)
    base.mkdir(parents=True, exist_ok=True)
    config_file = base / "config.toml"
    config_file.write_text(config, encoding="utf-8")
    variables = {**trellis_env(home=home, config=config_file), **(env or {})}
    if token is not None:
        variables["TRELLIS_SERVE_TOKEN"] = token
    process = subprocess.Popen(
        trellis_argv(["serve", "--port", "0", *args]),
        cwd=root,
        env=variables,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()
    stderr: list[str] = []
    reader = threading.Thread(target=_drain, args=(process, lines, stderr), daemon=True)
    reader.start()
    try:
        url = _wait_for_url(lines, stderr)
        yield ServeProcess(process, url, home, root.resolve(), stderr)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=WAIT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        reader.join(timeout=WAIT)


def _drain(process: subprocess.Popen[str], lines: queue.Queue[str | None], kept: list[str]) -> None:
    assert process.stderr is not None
    for line in process.stderr:
        kept.append(line)
        lines.put(line)
    lines.put(None)


def _wait_for_url(lines: queue.Queue[str | None], stderr: list[str]) -> str:
    marker = "serving ACP at "
    while True:
        try:
            line = lines.get(timeout=WAIT)
        except queue.Empty:
            raise AssertionError(f"trellis serve printed no URL: {''.join(stderr)}") from None
        if line is None:
            raise AssertionError(f"trellis serve exited: {''.join(stderr)}")
        if marker in line:
            return line.split(marker, 1)[1].split()[0]


def bearer(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@dataclass(slots=True)
class RecordingClient:
    """An ACP client that keeps every `session/update` (as sent, by session) and answers
    permission requests with `permission` (an option kind such as `allow_once`, or `reject`)."""

    permission: str = "allow_once"
    updates: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    permission_requests: list[ToolCallUpdate] = field(default_factory=list)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        dumped = update.model_dump(mode="json", by_alias=True, exclude_none=True)
        self.updates.setdefault(session_id, []).append(dumped)

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        self.permission_requests.append(tool_call)
        for option in options:
            if option.kind == self.permission:
                return RequestPermissionResponse(
                    outcome=AllowedOutcome(outcome="selected", option_id=option.option_id)
                )
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    def kinds(self, session_id: str) -> list[str]:
        """The `sessionUpdate` kind of each update of the session, in order."""
        return [update["sessionUpdate"] for update in self.updates.get(session_id, [])]

    def text(self, session_id: str, kind: str = "agent_message_chunk") -> str:
        """The text of every update of `kind`, joined."""
        return "".join(
            update["content"].get("text", "")
            for update in self.updates.get(session_id, [])
            if update["sessionUpdate"] == kind
        )


@asynccontextmanager
async def acp_client(
    url: str, client: RecordingClient | None = None, *, token: str = TOKEN
) -> AsyncIterator[tuple[ClientSideConnection, RecordingClient]]:
    """The `acp` package's client over its WebSocket transport, initialized, bearer token set."""
    recorder = client or RecordingClient()
    transport = await create_websocket_stream(url, headers=bearer(token))
    connection = connect_to_agent(cast(Client, recorder), transport)
    try:
        await asyncio.wait_for(connection.initialize(protocol_version=1), WAIT)
        yield connection, recorder
    finally:
        await connection.close()


@asynccontextmanager
async def raw_socket(
    url: str, *, headers: dict[str, str] | None = None, **options: Any
) -> AsyncIterator[ClientConnection]:
    """A plain `websockets` client (frames the package's client would never send)."""
    async with connect(
        url, additional_headers=bearer() if headers is None else headers, **options
    ) as ws:
        yield ws


async def request(ws: ClientConnection, ident: int, method: str, params: Any = None) -> None:
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}))


async def answer_to(ws: ClientConnection, ident: int | None) -> dict[str, Any]:
    """The next message that answers `ident` (notifications on the way are skipped)."""
    async with asyncio.timeout(WAIT):
        while True:
            frame = await ws.recv()
            message = json.loads(frame)
            if "method" not in message and message.get("id") == ident:
                return cast(dict[str, Any], message)


async def initialized(ws: ClientConnection) -> dict[str, Any]:
    await request(ws, 0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    return await answer_to(ws, 0)


def close_quietly(ws: ClientConnection) -> None:
    """Drop the TCP connection without a closing handshake (a client that dies)."""
    with contextlib.suppress(Exception):
        ws.transport.abort()


def wait_for_log(server: ServeProcess, text: str) -> str:
    """The server's `trellis.log` once it holds `text` (bounded polling: the line is written when
    the connection's handler ends, which the client does not wait for)."""
    for _ in range(POLLS):
        logged = server.log.read_text(encoding="utf-8") if server.log.exists() else ""
        if text in logged:
            return logged
        time.sleep(POLL)
    raise AssertionError(f"{text!r} never reached {server.log}")
