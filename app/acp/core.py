"""The ACP protocol core, without I/O: a transport hands it one incoming message at a time
(`AcpConnection.receive`) and gives it a `Send` for what goes out.

`AcpServer` is process-wide: it holds the store and one Agent per session, shared by every
connection that opens the session. `AcpConnection` is one client: it answers requests (each in its
own task, so a long prompt never blocks a `session/cancel`), sends `session/update` notifications
and asks the client for permission. Every failure inside a handler becomes a JSON-RPC error answer
for that request only; the connection and the other sessions go on.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp.exceptions import RequestError
from acp.meta import PROTOCOL_VERSION
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    McpCapabilities,
    PromptCapabilities,
    SessionCapabilities,
    SessionListCapabilities,
)
from pydantic import BaseModel, ValidationError

from app.acp import rpc

log = logging.getLogger(__name__)

Send = Callable[[str], Awaitable[None]]
"""One outgoing JSON-RPC message, already serialized (at most `rpc.MAX_OUTGOING_BYTES`)."""

EVENTS_META_KEY = "trellis/events"
"""`clientCapabilities._meta["trellis/events"] = true`: the client wants every engine event."""


@dataclass(frozen=True, slots=True)
class AcpOptions:
    """What the server needs to open sessions.

    `store_path`: the sessions database. `roots`: a session's cwd must lie under one of them.
    `config`: one configuration for every session (tests); None reads each workspace's config as
    the CLI does. `model`, `script`: as `trellis run --model/--script`. `clock`: event times.
    """

    store_path: Path
    roots: list[Path]
    config: Any = None  # engine.config.Config | None, imported lazily (start time)
    model: str | None = None
    script: Path | None = None
    trust_project: bool = False
    clock: Callable[[], float] = time.time
    agent_name: str = "trellis"
    gateway_factory: Callable[[], Any] | None = field(default=None)
    """Tests: a fresh Gateway for each session instead of the model entry's."""


def agent_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("trellis")
    except PackageNotFoundError:
        return "unknown"


class AcpServer:
    """Process-wide: the store and one Agent per session, shared by the connections."""

    def __init__(self, options: AcpOptions) -> None:
        self.options = options
        self._connections: dict[str, AcpConnection] = {}
        self._closed = False

    def connect(self, send: Send, *, connection_id: str) -> AcpConnection:
        if self._closed:
            raise RuntimeError("the ACP server is closed")
        connection = AcpConnection(self, send, connection_id)
        self._connections[connection_id] = connection
        return connection

    def _forget(self, connection: AcpConnection) -> None:
        if self._connections.get(connection.id) is connection:
            del self._connections[connection.id]

    async def aclose(self) -> None:
        """Close every connection (their turns end `cancelled`), then the agents and the store."""
        self._closed = True
        for connection in list(self._connections.values()):
            await connection.close()


Handler = Callable[[Any], Awaitable[BaseModel | dict[str, Any] | None]]


class AcpConnection:
    """One client. `receive` takes each incoming message; answers go out through `send`."""

    def __init__(self, server: AcpServer, send: Send, connection_id: str) -> None:
        self.server = server
        self.id = connection_id
        self._send = send
        self._send_lock = asyncio.Lock()
        self._initialized = False
        self._closed = False
        self.wants_events = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._requests: dict[str, Handler] = {"initialize": self._initialize}

    # --- input ---------------------------------------------------------------------------------

    async def receive(self, text: str) -> None:
        """One incoming message. Requests run in their own task; this returns at once."""
        if self._closed:
            return
        try:
            message = rpc.parse(text)
        except RequestError as error:
            log.info("connection %s: bad message: %s", self.id, error)
            await self._write(rpc.error_message(None, error))
            return
        if message.is_response:
            return
        method = message.method
        assert method is not None
        if not message.has_id:
            return
        if method == "initialize":  # answered before any later message is looked at
            await self._answer(message.id, method, message.params)
            return
        task = asyncio.create_task(
            self._answer(message.id, method, message.params), name=f"acp {self.id} {method}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        """The transport dropped: nothing more is sent; requests still running are cancelled."""
        if self._closed:
            return
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self.server._forget(self)

    # --- requests ------------------------------------------------------------------------------

    async def _answer(self, ident: rpc.RequestId, method: str, params: Any) -> None:
        try:
            handler = self._requests.get(method)
            if handler is None:
                raise RequestError(-32601, f"Method not found: {method}", {"method": method})
            if not self._initialized and method != "initialize":
                raise RequestError(
                    rpc.NOT_INITIALIZED, f"{method} before initialize: send initialize first"
                )
            result = await handler(params)
            body = rpc.dump(result) if isinstance(result, BaseModel) else result
            await self._write(rpc.result_message(ident, body if body is not None else {}))
        except RequestError as error:
            await self._write(rpc.error_message(ident, error))
        except ValidationError as error:
            await self._write(rpc.error_message(ident, rpc.invalid_params(error)))
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.exception("connection %s: %s failed", self.id, method)
            internal = RequestError(-32603, f"Internal error: {type(error).__name__}: {error}")
            await self._write(rpc.error_message(ident, internal))

    async def _initialize(self, params: Any) -> InitializeResponse:
        request = InitializeRequest.model_validate(params if params is not None else {})
        meta = request.client_capabilities.field_meta if request.client_capabilities else None
        self.wants_events = bool(meta and meta.get(EVENTS_META_KEY) is True)
        self._initialized = True
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                mcp_capabilities=McpCapabilities(),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            agent_info=Implementation(
                name=self.server.options.agent_name, title="Trellis", version=agent_version()
            ),
            auth_methods=[],
        )

    # --- output --------------------------------------------------------------------------------

    async def _write(self, message: dict[str, Any]) -> None:
        """Send one message, in order with every other; a message over the size limit is never
        sent (an answer becomes an error answer saying so)."""
        if self._closed:
            return
        text, size = rpc.serialize(message)
        if size > rpc.MAX_OUTGOING_BYTES:
            log.error("connection %s: a %d-byte message was not sent", self.id, size)
            if "id" not in message or "method" in message:
                return
            too_big = RequestError(
                -32603, f"Internal error: the answer would be {size} bytes, over the 1 MiB limit"
            )
            text, _ = rpc.serialize(rpc.error_message(message["id"], too_big))
        async with self._send_lock:
            if self._closed:
                return
            try:
                await self._send(text)
            except Exception:
                log.info("connection %s: the transport refused a message; closing", self.id)
                self._closed = True
