"""An in-process ACP client for the core's unit tests: it drives `AcpConnection.receive` and
collects what the core sends, each message checked against the schema (`schema_check`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from app.acp.connection import AcpConnection
from app.acp.core import AcpServer
from tests.acp.schema_check import check_outgoing

PermissionPolicy = Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]


async def allow_once(_: dict[str, Any]) -> dict[str, Any] | None:
    return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


class _Transport:
    """The peer's end as the core sees a transport: a `Send` that can also take a message
    without waiting (`app.acp.transport.SendNow`) while `Peer.ready()` says so."""

    def __init__(self, peer: Peer) -> None:
        self._peer = peer

    async def __call__(self, text: str) -> None:
        await self._peer._receive(text)

    def ready(self) -> bool:
        return self._peer.ready()

    def write(self, text: str) -> None:
        self._peer.took(text)

    def write_encoded(self, messages: Sequence[bytes]) -> None:
        for message in messages:
            self._peer.took(message.decode("utf-8"))


class Peer:
    """One connection. `request` sends and waits for the answer; `sent` holds every message.
    `written_at_once` counts the messages the core wrote without waiting (`SendNow`)."""

    def __init__(self, server: AcpServer, connection_id: str = "peer") -> None:
        self.sent: list[dict[str, Any]] = []
        self.asked: dict[Any, str] = {}
        self.permission: PermissionPolicy = allow_once
        self.permission_requests: list[dict[str, Any]] = []
        self._answers: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self._next = 1000
        self.written_at_once = 0
        self.connection: AcpConnection = server.connect(
            _Transport(self), connection_id=connection_id
        )

    def ready(self) -> bool:
        """Whether the core may write a message at once."""
        return True

    def took(self, text: str) -> None:
        self.written_at_once += 1
        self._take(text)

    async def _receive(self, text: str) -> None:
        self._take(text)

    def _take(self, text: str) -> None:
        assert len(text.encode("utf-8")) <= 1024 * 1024
        assert "\n" not in text
        message = json.loads(text)
        check_outgoing(message, self.asked)
        self.sent.append(message)
        if message.get("method") == "session/request_permission":
            self.permission_requests.append(message)
            asyncio.get_running_loop().create_task(self._answer_permission(message))
        elif "method" not in message and message.get("id") in self._answers:
            self._answers.pop(message["id"]).set_result(message)

    async def _answer_permission(self, message: dict[str, Any]) -> None:
        result = await self.permission(message)
        if result is not None:
            await self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    async def send(self, message: dict[str, Any]) -> None:
        await self.connection.receive(json.dumps(message))

    async def cancel(self, session_id: str) -> None:
        await self.send(
            {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}}
        )

    async def start(self, method: str, params: Any = None) -> asyncio.Future[dict[str, Any]]:
        """Send a request; the future resolves to its whole answer (result or error)."""
        self._next += 1
        ident = self._next
        self.asked[ident] = method
        answer = asyncio.get_running_loop().create_future()
        self._answers[ident] = answer
        await self.send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params or {}})
        return answer

    async def request(self, method: str, params: Any = None) -> dict[str, Any]:
        return await (await self.start(method, params))

    async def result(self, method: str, params: Any = None) -> Any:
        answer = await self.request(method, params)
        assert "result" in answer, answer
        return answer["result"]

    async def initialize(self, meta: dict[str, Any] | None = None) -> Any:
        capabilities: dict[str, Any] = {}
        if meta is not None:
            capabilities["_meta"] = meta
        return await self.result(
            "initialize", {"protocolVersion": 1, "clientCapabilities": capabilities}
        )

    def updates(self, session_id: str | None = None) -> list[dict[str, Any]]:
        return [
            m["params"]["update"]
            for m in self.sent
            if m.get("method") == "session/update"
            and (session_id is None or m["params"]["sessionId"] == session_id)
        ]

    def text(self, session_id: str | None = None, kind: str = "agent_message_chunk") -> str:
        return "".join(
            u["content"]["text"]
            for u in self.updates(session_id)
            if u["sessionUpdate"] == kind and u["content"]["type"] == "text"
        )
