"""What a transport and a connection give each other: the one interface every ACP transport
(stdio, WebSocket, and any other) implements.

A transport gives the connection text in and takes text out, and tells it when the peer is slow
or gone:

1. `connection = server.connect(send, connection_id=...)` (`app.acp.core.AcpServer`), with a
   `Send` for what goes out;
2. each incoming message, one JSON-RPC message as text: `await connection.receive(text)`; a
   message the transport could not read whole (over its size limit): `await
   connection.receive_error(error)`;
3. the peer is slow: the `Send` waits (until the transport is below its high-water mark), and a
   `SendNow` says `ready()` is False; the connection then writes nothing else until it drains;
4. the peer is gone: `await connection.aclose()` (its running turns end `cancelled`, stored),
   whatever happened, also after a `Send` raised (which stops all writing at once).

Everything else (the tasks that run requests, the send lock, the order of messages, pacing a
`session/load`) is the connection's (`app.acp.connection`), and the protocol itself is
`app.acp.protocol`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, runtime_checkable

from acp.exceptions import RequestError

Send = Callable[[str], Awaitable[None]]
"""One outgoing JSON-RPC message, already serialized (at most `rpc.MAX_OUTGOING_BYTES` UTF-8
bytes, no newline): returns once the transport has taken it, waiting while the peer is slow."""


@runtime_checkable
class SendNow(Protocol):
    """A `Send` that can also write without waiting (the WebSocket and stdio transports):
    `ready()` says whether it can take a message at once (open, below its high-water mark), then
    `write(text)` takes it as the send would. The feeds write streamed updates this way from
    inside the engine's event callbacks; a transport that is not ready is sent to as usual."""

    def ready(self) -> bool: ...

    def write(self, text: str) -> None: ...

    def write_encoded(self, messages: Sequence[bytes]) -> None:
        """Messages already encoded (UTF-8, each within `rpc.MAX_OUTGOING_BYTES`), taken as
        `write` takes each, in order: what `session/load` writes a range of at once."""


class ConnectionEnd(Protocol):
    """The connection as a transport drives it (`app.acp.connection.AcpConnection`)."""

    async def receive(self, text: str) -> None:
        """One incoming message; returns once it is taken (requests run on their own)."""

    async def receive_error(self, error: RequestError) -> None:
        """A message the transport could not take: answered with `error`, id null."""

    async def aclose(self) -> None:
        """The peer is gone: nothing more is sent; safe to call more than once."""
