"""The ACP server of a process: the store and one Agent per session (`app.acp.sessions`), shared
by every connection that opens the session.

A transport (`app.acp.transport`) asks it for a connection per client (`AcpServer.connect`). The
layers below, each in its own module: `app.acp.protocol` (JSON-RPC and ACP without I/O),
`app.acp.handlers` (the session operations), `app.acp.connection` (the protocol on the event loop:
tasks, the send lock, pacing). Every failure inside a handler becomes a JSON-RPC error answer for
that request only; the connection and the other sessions go on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp.exceptions import RequestError

from app.acp import rpc
from app.acp.connection import AcpConnection
from app.acp.sessions import AcpSession, SessionTable
from app.acp.transport import Send
from engine.store.settings import StoreSettings
from engine.tools.permission import PermissionAnswer, PermissionQuestion


@dataclass(frozen=True, slots=True)
class AcpOptions:
    """What the server needs to open sessions.

    `roots`: a session's cwd must lie under one of them. `store`: which store holds the sessions
    (`engine.store.settings`: a PostgreSQL URL, or none for SQLite); `store_path`: the SQLite
    file when `store` names no URL (None: the data directory's).
    `config`: one configuration for every session (tests); None reads each workspace's config as
    the CLI does, with its trust rules. `model`, `script`: as `trellis run --model/--script`.
    `clock`: event times. `gateway_factory` (tests): a fresh Gateway for each session.
    `secrets`: what the server holds beyond each configuration's secrets (the serve token, also
    when generated), redacted from every session's errors as API keys are.
    """

    roots: list[Path]
    store_path: Path | None = None
    store: StoreSettings = field(default_factory=StoreSettings)
    config: Any = None  # engine.config.Config | None
    model: str | None = None
    script: Path | None = None
    trust_project: bool = False
    clock: Callable[[], float] = time.time
    agent_name: str = "trellis"
    gateway_factory: Callable[[], Any] | None = field(default=None)
    secrets: tuple[str, ...] = ()


class AcpServer:
    """Process-wide: the store and one Agent per session, shared by the connections."""

    def __init__(self, options: AcpOptions) -> None:
        self.options = options
        self.sessions = SessionTable(options, self._ask)
        self._connections: dict[str, AcpConnection] = {}
        self._closed = False

    async def open(self) -> None:
        """Open the store now, so a store that cannot be opened (a server away, a bad file)
        stops the command at its start instead of failing each request; raises `StoreError`
        (the server is closed then)."""
        try:
            await self.sessions.store()
        except BaseException:
            await self.aclose()
            raise

    def connect(self, send: Send, *, connection_id: str) -> AcpConnection:
        if self._closed:
            raise RuntimeError("the ACP server is closed")
        connection = AcpConnection(self, send, connection_id)
        self._connections[connection_id] = connection
        return connection

    def holding(self, session: AcpSession) -> list[AcpConnection]:
        """The connections that have `session` open (its holders still connected)."""
        connections = self._connections
        return [connections[i] for i in sorted(session.holders) if i in connections]

    def forget(self, connection: AcpConnection) -> None:
        if self._connections.get(connection.id) is connection:
            del self._connections[connection.id]

    async def aclose(self) -> None:
        """Close every connection (their turns end `cancelled`), then the agents and the store."""
        self._closed = True
        for connection in list(self._connections.values()):
            await connection.aclose()
        await self.sessions.aclose()

    async def _ask(self, session: AcpSession, question: PermissionQuestion) -> PermissionAnswer:
        connection = session.prompting
        if not isinstance(connection, AcpConnection):
            return PermissionAnswer.deny_once
        return await connection.ask_permission(session, question)

    async def workspace(self, cwd: str) -> Path:
        """The resolved `cwd` if it is an absolute directory under a configured root."""
        if not cwd or not Path(cwd).is_absolute():
            raise RequestError(
                rpc.INVALID_PARAMS, f"Invalid params: cwd: must be an absolute path, got {cwd!r}"
            )
        roots = self.options.roots

        def resolve() -> tuple[Path, bool, bool]:
            path = Path(cwd).resolve()
            inside = any(path.is_relative_to(root.resolve()) for root in roots)
            return path, path.is_dir(), inside

        try:
            path, is_dir, inside = await asyncio.to_thread(resolve)
        except (OSError, ValueError) as error:  # a name too long, a NUL, a loop of links
            reason = error.strerror if isinstance(error, OSError) and error.strerror else error
            raise RequestError(
                rpc.INVALID_PARAMS, f"Invalid params: cwd: cannot be resolved: {reason}"
            ) from None
        if not inside:
            shown = ", ".join(str(root) for root in roots) or "none"
            raise RequestError(
                rpc.INVALID_PARAMS,
                f"Invalid params: cwd: {cwd} is not under the served roots ({shown})",
            )
        if not is_dir:
            raise RequestError(rpc.INVALID_PARAMS, f"Invalid params: cwd: {cwd} is not a directory")
        return path
