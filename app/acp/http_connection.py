"""One connection of the streamable HTTP transport (`Acp-Connection-Id`): the third transport
driver of the protocol core (`app.acp.transport`), fed by POSTs and read from SSE streams.

The connection writes its messages through `StreamSender` (a `SendNow`) as it writes to a
WebSocket; each goes to the stream the RFD names (`app.acp.http_streams`): the answer to
`initialize` back to its POST, the answer to a session-scoped request (one POSTed with
`Acp-Session-Id`) to that session's stream, a request or notification about a session to that
session's stream, the rest to the connection's stream. A connection ends on DELETE, when the
server stops, or when no stream of it has been open for `HttpLimits.orphan_timeout` (a client
that vanished without a DELETE); its running prompts are cancelled and stored then, as when a
WebSocket drops.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.acp.http_streams import (
    Destination,
    Outbox,
    RequestKey,
    StreamTicket,
    addressed,
)
from app.acp.rpc import MAX_INCOMING_BYTES, MAX_OUTGOING_BYTES
from app.acp.transport import ConnectionEnd
from engine.store.errors import UnknownSessionError

if TYPE_CHECKING:
    from app.acp.core import AcpServer

log = logging.getLogger(__name__)

SESSION_SCOPED = frozenset(
    {
        "session/prompt",
        "session/cancel",
        "session/set_mode",
        "session/set_config_option",
        "session/close",
    }
)
"""Methods about a session the client has: their POST must carry `Acp-Session-Id`, and their
answer goes to the session's stream. The methods that open a session (`session/new`, `load`,
`resume`) are not among them: the client has no stream for it before their answer, which goes to
the connection's stream. The same list as the `acp` package's client."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpLimits:
    """The HTTP transport's limits; every one is named here, with its default."""

    max_incoming: int = MAX_INCOMING_BYTES
    """Largest POST body in bytes (the WebSocket's message limit); a larger one is refused
    with 413."""
    max_outgoing: int = MAX_OUTGOING_BYTES
    """Largest outgoing message in UTF-8 bytes; the core keeps below it, so a larger one is a
    bug: it is logged and not sent."""
    high_water: int = 1024 * 1024
    """Bytes waiting for a connection's streams past which the core's writes wait."""
    coalesce_seconds: float = 0.005
    """While messages keep coming, a stream is written at most once per this many seconds, with
    everything gathered since (a streamed reply reaches the client in pieces at most 5 ms late;
    a message after a quiet spell is not delayed): one write per message cost more than the
    messages, as on the WebSocket (`app.acp.websocket.CoalescingConnection`)."""
    keepalive: float = 15.0
    """Seconds of silence after which a stream gets an SSE comment, so that proxies and load
    balancers do not time out a quiet stream."""
    orphan_timeout: float = 30.0
    """Seconds a connection lives with no stream open before it is closed."""
    initialize_timeout: float = 30.0
    """Seconds the `initialize` POST waits for the core's answer."""
    auth_timeout: float = 10.0
    """Seconds a WebSocket upgraded at `/acp?auth=message` has to send its `authenticate` frame
    (as on the WebSocket port)."""


class StreamSender:
    """The `Send` and `SendNow` (`app.acp.transport`) the connection writes through: each message
    to its stream; it waits (and `ready()` is False) while `HttpLimits.high_water` bytes wait."""

    def __init__(self, connection: HttpConnection) -> None:
        self._connection = connection
        self._outbox = connection.outbox

    async def __call__(self, text: str) -> None:
        self._connection.deliver(text.encode())
        if not self._outbox.ready():
            await self._outbox.room()

    def ready(self) -> bool:
        """Whether `write` may take a message now (`app.acp.transport.SendNow`)."""
        return self._outbox.ready()

    def write(self, text: str) -> None:
        self._connection.deliver(text.encode())

    def write_encoded(self, messages: Sequence[bytes]) -> None:
        deliver = self._connection.deliver
        for data in messages:
            deliver(data)


class HttpConnection:
    """One client of the HTTP transport: its core connection, its streams, and where answers go."""

    def __init__(
        self,
        acp: AcpServer,
        connection_id: str,
        limits: HttpLimits,
        *,
        on_closed: Callable[[HttpConnection], None],
    ) -> None:
        self.id = connection_id
        self.limits = limits
        self.outbox = Outbox(high_water=limits.high_water)
        self._acp = acp
        self._on_closed = on_closed
        self._routes: dict[RequestKey, str] = {}
        self._initializing: RequestKey = None
        self._initialize_answer: asyncio.Future[bytes] | None = None
        self._sessions: set[str] = set()
        self._orphan: asyncio.TimerHandle | None = None
        self._closing: asyncio.Task[None] | None = None
        self.closed = False
        self._core: ConnectionEnd = acp.connect(StreamSender(self), connection_id=connection_id)
        self._arm_orphan_timer()

    async def initialize(self, text: str, ident: RequestKey) -> bytes:
        """Hand the `initialize` request `text` to the core and return its answer (which goes
        to no stream: it is the POST's body). Raises `TimeoutError` when none comes in time."""
        self._initializing = ident
        self._initialize_answer = asyncio.get_running_loop().create_future()
        try:
            await self._core.receive(text)
            async with asyncio.timeout(self.limits.initialize_timeout):
                return await self._initialize_answer
        finally:
            self._initializing = None
            self._initialize_answer = None

    async def post(self, text: str, *, ident: RequestKey, session: str | None) -> None:
        """Hand one POSTed message to the core; a request with `session` (a session-scoped
        method) is answered on that session's stream."""
        if ident is not None and session is not None:
            self._routes[ident] = session
        await self._core.receive(text)

    def deliver(self, data: bytes) -> None:
        """One message from the core, to the stream it belongs to."""
        if len(data) > self.limits.max_outgoing:
            log.error(
                "connection %s: an outgoing message of %d bytes exceeds the %d-byte limit; "
                "not sent",
                self.id,
                len(data),
                self.limits.max_outgoing,
            )
            return
        try:
            address = addressed(data)
        except ValueError:
            log.error("connection %s: an outgoing message is not JSON; not sent", self.id)
            return
        destination: Destination = address.session
        if address.is_answer:
            waiting = self._initialize_answer
            if waiting is not None and address.answers == self._initializing:
                if not waiting.done():
                    waiting.set_result(data)
                return
            destination = (
                self._routes.pop(address.answers, None) if address.answers is not None else None
            )
        self.outbox.put(destination, data)

    async def knows_session(self, session_id: str) -> bool:
        """Whether `session_id` names a session this server has (open, or stored): a client may
        open a session's stream before it loads the session (the RFD's resume flow)."""
        if session_id in self._sessions:
            return True
        if self._acp.sessions.get(session_id) is None:
            store = await self._acp.sessions.store()
            try:
                await store.info(session_id)
            except UnknownSessionError:
                return False
        self._sessions.add(session_id)
        return True

    def open_stream(self, destination: Destination) -> StreamTicket:
        """A GET stream opened for `destination`; the connection is no longer an orphan."""
        if self._orphan is not None:
            self._orphan.cancel()
            self._orphan = None
        return self.outbox.attach(destination)

    def close_stream(self, ticket: StreamTicket) -> None:
        """A GET stream closed; with none left open, the orphan timer starts."""
        self.outbox.detach(ticket)
        if not self.closed and self.outbox.streams == 0:
            self._arm_orphan_timer()

    def _arm_orphan_timer(self) -> None:
        if self._orphan is None:
            loop = asyncio.get_running_loop()
            self._orphan = loop.call_later(self.limits.orphan_timeout, self._orphaned)

    def _orphaned(self) -> None:
        self._orphan = None
        if self.outbox.streams == 0 and not self.closed:
            log.info(
                "connection %s: no stream open for %.0f s; closed",
                self.id,
                self.limits.orphan_timeout,
            )
            self._closing = asyncio.ensure_future(self.aclose())

    async def aclose(self) -> None:
        """End the connection: its streams end, its running prompts are cancelled (and stored)
        and its sessions let go, as when a WebSocket drops."""
        if self.closed:
            return
        self.closed = True
        if self._orphan is not None:
            self._orphan.cancel()
            self._orphan = None
        self.outbox.close()
        self._on_closed(self)
        await self._core.aclose()
