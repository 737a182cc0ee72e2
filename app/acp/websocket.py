"""ACP over WebSocket (`trellis serve`): a thin transport around the protocol core.

One JSON-RPC message per text frame at `/acp`; binary frames are ignored. The upgrade is checked
before anything else runs (`UpgradeGate`: 404 off `/acp`, 403 for a browser Origin outside the allow
list, 401 without the token) and answered with an `Acp-Connection-Id` header. Each connection gets its
own `AcpConnection` from the one process-wide `AcpServer`; when the socket drops, `aclose()` cancels
that connection's running turns (the turns are stored). Served with `websockets`, not the `acp`
package's ASGI server, which drops invalid JSON silently and checks neither Origin nor size.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode
from websockets.http11 import Request, Response
from websockets.protocol import State

from app.acp.auth import UpgradeGate, authenticate_first_message
from app.acp.rpc import MAX_INCOMING_BYTES, MAX_OUTGOING_BYTES

if TYPE_CHECKING:
    from app.acp.core import AcpServer
    from app.acp.transport import ConnectionEnd

ACP_PATH = "/acp"
CONNECTION_ID_HEADER = "Acp-Connection-Id"

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class FrameLimits:
    """The transport's limits; every one is named here, with its default."""

    max_incoming: int = MAX_INCOMING_BYTES
    """Largest incoming message in bytes; a larger one closes the connection with 1009."""
    max_outgoing: int = MAX_OUTGOING_BYTES
    """Largest outgoing frame in UTF-8 bytes; the core keeps below it, so a larger frame is a
    bug: it is logged and not sent."""
    auth_timeout: float = 10.0
    """Seconds an `?auth=message` connection has to send its `authenticate` frame."""
    coalesce_bytes: int = 64 * 1024
    """Frames are written together (`CoalescingConnection`), up to this many bytes per write..."""
    coalesce_seconds: float = 0.005
    """...and, while frames keep coming, at most once per this many seconds (a streamed reply
    reaches the client in pieces at most 5 ms late; a frame after a quiet spell is not delayed)."""


class AcpWebSocketServer:
    """Serves one `AcpServer` to many WebSocket connections at once."""

    def __init__(
        self,
        acp: AcpServer,
        *,
        token: str,
        allowed_origins: Sequence[str] = (),
        limits: FrameLimits | None = None,
    ) -> None:
        self._acp = acp
        self._token = token
        self._gate = UpgradeGate.of(token, allowed_origins)
        self._limits = limits or FrameLimits()

    async def listen(self, host: str, port: int) -> Server:
        """Bind and start serving; the returned `Server` is closed by `close_server`.

        Raises `OSError` when the address cannot be bound. Compression is off: the peer is
        usually on the same machine, and deflate would cost CPU on every streamed update.
        """
        limits = self._limits

        def connection(*args: Any, **kwargs: Any) -> CoalescingConnection:
            return CoalescingConnection(
                *args,
                coalesce_bytes=limits.coalesce_bytes,
                coalesce_seconds=limits.coalesce_seconds,
                **kwargs,
            )

        return await serve(
            self._handle,
            host,
            port,
            process_request=self._check_upgrade,
            process_response=self._name_connection,
            max_size=self._limits.max_incoming,
            compression=None,
            create_connection=cast(type[ServerConnection], connection),
        )

    def _check_upgrade(self, ws: ServerConnection, request: Request) -> Response | None:
        """404 off `/acp`, then the gate (403 for Origin, 401 for the token); None accepts."""
        target = urlsplit(request.path)
        if target.path != ACP_PATH:
            return ws.respond(HTTPStatus.NOT_FOUND, f"ACP is served at {ACP_PATH}\n")
        refusal = self._gate.check(
            origins=request.headers.get_all("Origin"),
            authorization=request.headers.get_all("Authorization"),
            query=target.query,
        )
        if refusal is None:
            return None
        logger.warning(
            "refused a WebSocket upgrade from %s: %d %s",
            _peer(ws),
            refusal.status.value,
            refusal.reason,
        )
        response = ws.respond(refusal.status, refusal.reason + "\n")
        if refusal.status is HTTPStatus.UNAUTHORIZED:
            response.headers["WWW-Authenticate"] = 'Bearer realm="trellis"'
        return response

    @staticmethod
    def _name_connection(ws: ServerConnection, request: Request, response: Response) -> None:
        if response.status_code == HTTPStatus.SWITCHING_PROTOCOLS:
            response.headers[CONNECTION_ID_HEADER] = str(ws.id)

    async def _handle(self, ws: ServerConnection) -> None:
        """One connection: authenticate by message when asked to, then pump text frames into the
        core until the socket closes, and close the core's connection whatever happened."""
        assert ws.request is not None  # the handler only runs after a handshake
        request = ws.request
        if UpgradeGate.needs_message_auth(
            authorization=request.headers.get_all("Authorization"),
            query=urlsplit(request.path).query,
        ) and not await self._authenticate_by_message(ws):
            return
        connection_id = str(ws.id)
        connection = self._acp.connect(
            FrameSender(cast(CoalescingConnection, ws), self._limits.max_outgoing),
            connection_id=connection_id,
        )
        try:
            await self._pump(ws, connection)
        finally:
            await connection.aclose()

    async def _pump(self, ws: ServerConnection, connection: ConnectionEnd) -> None:
        try:
            async for frame in ws:
                if isinstance(frame, str):  # binary frames carry nothing in ACP
                    await connection.receive(frame)
        except ConnectionClosed as closed:
            if closed.sent is not None and closed.sent.code == CloseCode.MESSAGE_TOO_BIG:
                logger.warning(
                    "connection %s sent a message over %d bytes; closed with 1009",
                    ws.id,
                    self._limits.max_incoming,
                )

    async def _authenticate_by_message(self, ws: ServerConnection) -> bool:
        """The first text frame must be `authenticate` with the token (`app.acp.auth`); anything
        else, or nothing within `auth_timeout`, closes the connection with 1008."""
        try:
            async with asyncio.timeout(self._limits.auth_timeout):
                frame: str | bytes = b""
                while isinstance(frame, bytes):
                    frame = await ws.recv()
        except TimeoutError:
            logger.warning("connection %s sent no authenticate message; closed", ws.id)
            await ws.close(CloseCode.POLICY_VIOLATION, "authentication required")
            return False
        except ConnectionClosed:
            return False
        outcome = authenticate_first_message(self._token, frame)
        try:
            await ws.send(outcome.answer)
            if not outcome.accepted:
                logger.warning("connection %s failed to authenticate; closed", ws.id)
                await ws.close(CloseCode.POLICY_VIOLATION, "authentication failed")
        except ConnectionClosed:
            return False
        return outcome.accepted


class CoalescingConnection(ServerConnection):
    """A connection that writes frames together instead of with one system call each.

    A frame after a quiet spell goes out at the end of the current turn of the event loop, with
    whatever else that turn sent; while frames keep coming, what gathers is written at most once
    every `coalesce_seconds`, or as soon as `coalesce_bytes` have gathered. On loopback every
    `send()` system call also wakes and runs the receiving side, and one call per frame cost more
    than producing the frames (`tests/bench/acp.py`): a replay sends tens of thousands of small
    frames in one go, a streamed reply one per delta. Frames keep their order, and flow control
    still applies (what is written fills the transport's buffer, and `send` waits while it is
    above the high-water mark). Only while the connection is open: the handshake, the closing
    handshake and the end of the stream are written as `websockets` writes them, after anything
    still pending.
    """

    def __init__(
        self, *args: Any, coalesce_bytes: int, coalesce_seconds: float, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._coalesce_bytes = coalesce_bytes
        self._coalesce_seconds = coalesce_seconds
        self._pending: list[bytes] = []
        self._pending_size = 0
        self._flush: asyncio.Handle | None = None
        self._last_write = -coalesce_seconds

    async def send_text(self, text: str) -> None:
        """One text frame, as `send(text)` sends it, without `send`'s per-message context
        manager and the protocol's frame object (together they cost more than the frame itself
        while a replay sends tens of thousands). Flow control holds: when the transport is above
        its high-water mark this waits for it to drain, as `send` does. Anything but a plain
        open connection goes through `send` (which raises `ConnectionClosed` once the connection
        is closing)."""
        if not self._plain():
            await self.send(text)
            return
        self.write_text(text)
        if self.paused:
            await self.drain()

    def writable(self) -> bool:
        """Whether `write_text` may take a frame now: a plain open connection whose transport
        is below its high-water mark."""
        return self._plain() and not self.paused

    def write_text(self, text: str) -> None:
        """One text frame gathered with the others, without waiting (after `writable`, or from
        `send_text`): what `protocol.send_text` writes for a server's unfragmented text frame
        with no extension (RFC 6455 section 5.2: FIN and the opcode, the length, no mask)."""
        data = text.encode()
        header = _text_frame_header(len(data))
        self._pending.append(header)
        self._pending.append(data)
        self._pending_size += len(header) + len(data)
        self._gathered()

    def write_encoded(self, payloads: Sequence[bytes]) -> None:
        """Text frames whose payloads are UTF-8 already, gathered at once as `write_text` gathers
        one (after `writable`): a `session/load` range is thousands of frames, and a call per
        frame cost more than building them."""
        pending, header = self._pending, _text_frame_header
        size = 0
        for data in payloads:
            head = header(len(data))
            pending.append(head)
            pending.append(data)
            size += len(head) + len(data)
        self._pending_size += size
        self._gathered()

    def _plain(self) -> bool:
        """Open, with no extension, no fragmented message and no debug logging: frames may be
        written as `write_text` writes them."""
        protocol = self.protocol
        return (
            protocol.state is State.OPEN
            and self.send_in_progress is None
            and not protocol.expect_continuation_frame
            and not protocol.extensions
            and not protocol.debug
        )

    def send_data(self) -> None:
        if self.protocol.state is not State.OPEN:
            self._write_pending()
            super().send_data()
            return
        for data in self.protocol.data_to_send():  # open: no end-of-stream marker among them
            self._pending.append(data)
            self._pending_size += len(data)
        self._gathered()

    def _gathered(self) -> None:
        """Something was added to what is pending: written now if enough has gathered, else
        soon (`coalesce_seconds` after the last write at most)."""
        if self._pending_size >= self._coalesce_bytes:
            self._write_pending()
        elif self._pending and self._flush is None:
            wait = self._last_write + self._coalesce_seconds - self.loop.time()
            if wait > 0:
                self._flush = self.loop.call_later(wait, self._write_pending)
            else:
                self._flush = self.loop.call_soon(self._write_pending)

    def _write_pending(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        if not self._pending:
            return
        data = b"".join(self._pending)
        self._pending.clear()
        self._pending_size = 0
        self._last_write = self.loop.time()
        if not self.transport.is_closing():
            self.transport.write(data)


class FrameSender:
    """The `Send` the core writes through: one text frame per message, none over the limit.

    The core splits long text and turns an oversized answer into an error answer before it
    sends; a frame over `max_outgoing` reaching the transport anyway is logged and not sent. A
    connection that has gone drops what is sent to it: the core learns of the drop from
    `AcpConnection.aclose()`, not from its writes.
    """

    def __init__(self, ws: CoalescingConnection, max_outgoing: int) -> None:
        self.ws = ws
        self._max = max_outgoing

    async def __call__(self, text: str) -> None:
        if self._too_large(text):
            return
        try:
            await self.ws.send_text(text)
        except ConnectionClosed:
            return

    def ready(self) -> bool:
        """Whether `write` may take a frame now (`app.acp.transport.SendNow`)."""
        return self.ws.writable()

    def write(self, text: str) -> None:
        """One frame without waiting, after `ready()`."""
        if not self._too_large(text):
            self.ws.write_text(text)

    def write_encoded(self, messages: Sequence[bytes]) -> None:
        """Frames of messages already encoded (UTF-8), in order, without waiting, after
        `ready()`; one over the limit is logged and not sent, as `write` does."""
        if messages and max(map(len, messages)) > self._max:
            messages = [m for m in messages if not self._oversized(len(m))]
        self.ws.write_encoded(messages)

    def _too_large(self, text: str) -> bool:
        return self._oversized(utf8_size(text))

    def _oversized(self, size: int) -> bool:
        if size <= self._max:
            return False
        logger.error(
            "connection %s: an outgoing message of %d bytes exceeds the %d-byte frame limit; "
            "not sent",
            self.ws.id,
            size,
            self._max,
        )
        return True


def _text_frame_header(size: int) -> bytes:
    """The header of a final, unmasked text frame of `size` payload bytes."""
    if size < 126:
        return bytes((0x81, size))
    if size < 1 << 16:
        return struct.pack("!BBH", 0x81, 126, size)
    return struct.pack("!BBQ", 0x81, 127, size)


def utf8_size(text: str) -> int:
    """The size of `text` in UTF-8; ASCII text (the usual JSON) is not encoded to learn it."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _peer(ws: ServerConnection) -> str:
    address = ws.remote_address
    return f"{address[0]}:{address[1]}" if isinstance(address, tuple) else str(address)


async def close_server(server: Server) -> None:
    """Stop accepting, close every connection with 1001 (going away) and wait for their handlers,
    each of which closes its core connection (cancelling that connection's turns)."""
    server.close()
    await server.wait_closed()
