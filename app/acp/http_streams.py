"""Where each message for an HTTP client goes: the remote-transport RFD's SSE streams.

A client of the streamable HTTP transport reads the server's messages from long-lived GET streams:
one for its connection, and one for each session it opened a stream for. `Outbox` holds what is
waiting for them. A message of a session goes to that session's stream while one is open, and to
the connection's stream otherwise (a client may open the session's stream late, or never, and must
still get every message); when a session's stream opens, what of that session still waits on the
connection's stream moves to it, so a session's messages keep their order. Nothing here does I/O:
the HTTP transport takes the bytes (`take`) and writes them as SSE events.

`addressed` tells where one serialized JSON-RPC message belongs without decoding it when it has
the shape the protocol core writes (`app.acp.rpc.serialize`): a `session/update` or a request
names its session first in its params, an answer its id first; anything else is decoded.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import deque
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any

Destination = str | None
"""A session id (that session's stream), or None (the connection's stream)."""

RequestKey = Hashable
"""A JSON-RPC id as a key that tells `5` from `"5"` (`request_key`)."""

_ADDRESSED = re.compile(
    rb'\{"jsonrpc":"2\.0",(?:"id":(?:-?\d+|"[^"\\]*"),)?"method":"[^"\\]*",'
    rb'"params":\{"sessionId":"([^"\\]*)"'
)
_ANSWER = re.compile(rb'\{"jsonrpc":"2\.0","id":(-?\d+|"[^"\\]*"|null),"(?:result|error)"')


def request_key(ident: Any) -> RequestKey:
    """The key of a JSON-RPC id (a number, a string, or null)."""
    return None if ident is None else (type(ident).__name__, ident)


@dataclass(frozen=True, slots=True)
class Address:
    """Where a message goes: an answer to the client's request `answers`, or else the stream of
    `session` (None: the connection's)."""

    session: Destination = None
    answers: RequestKey = None
    is_answer: bool = False


def addressed(data: bytes) -> Address:
    """Where the serialized message `data` belongs (its session, or the request it answers)."""
    found = _ADDRESSED.match(data)
    if found is not None:
        return Address(session=found.group(1).decode())
    found = _ANSWER.match(data)
    if found is not None:
        token = found.group(1)
        if token == b"null":
            return Address(is_answer=True)
        ident: int | str = token[1:-1].decode() if token.startswith(b'"') else int(token)
        return Address(answers=request_key(ident), is_answer=True)
    message = json.loads(data)
    if "method" in message:
        params = message.get("params")
        session = params.get("sessionId") if isinstance(params, dict) else None
        return Address(session=session if isinstance(session, str) else None)
    return Address(answers=request_key(message.get("id")), is_answer=True)


class StreamTicket:
    """One open GET stream: the transport writes what `Outbox.take` gives it until `ended`."""

    def __init__(self, destination: Destination) -> None:
        self.destination = destination
        self.ended = False
        self.wake = asyncio.Event()
        """Set when there is something to take, or the stream has ended."""

    def end(self) -> None:
        self.ended = True
        self.wake.set()


class Outbox:
    """The messages waiting for a connection's streams, and the back-pressure on their writer.

    `high_water`: once this many bytes wait, `ready()` is false and `room()` waits until the
    streams have taken enough (or the outbox is closed): a client that reads slowly, or has no
    stream open, slows the session down as a slow WebSocket peer does, and memory stays bounded.
    """

    def __init__(self, *, high_water: int) -> None:
        self._high_water = high_water
        self._queues: dict[Destination, deque[tuple[Destination, bytes]]] = {None: deque()}
        self._tickets: dict[Destination, StreamTicket] = {}
        self._size = 0
        self._room = asyncio.Event()
        self._room.set()
        self.closed = False

    @property
    def size(self) -> int:
        """Bytes waiting to be taken."""
        return self._size

    @property
    def streams(self) -> int:
        """How many streams are open."""
        return len(self._tickets)

    def ready(self) -> bool:
        """Whether a message may be put without waiting for room."""
        return self._size < self._high_water and not self.closed

    async def room(self) -> None:
        """Wait until fewer than `high_water` bytes wait, or the outbox is closed."""
        while self._size >= self._high_water and not self.closed:
            self._room.clear()
            await self._room.wait()

    def put(self, destination: Destination, data: bytes) -> None:
        """Queue `data` for `destination`'s stream when it is open, else the connection's."""
        if self.closed:
            return
        target = destination if destination in self._tickets else None
        self._queues[target].append((destination, data))
        self._size += len(data)
        ticket = self._tickets.get(target)
        if ticket is not None:
            ticket.wake.set()

    def put_all(self, destination: Destination, messages: Iterable[bytes]) -> None:
        for data in messages:
            self.put(destination, data)

    def attach(self, destination: Destination) -> StreamTicket:
        """A stream for `destination` opened; one already open for it ends (the client opened it
        again: the old one is a dead connection it gave up on). What of a session still waits
        on the connection's stream moves to the session's, in order."""
        previous = self._tickets.get(destination)
        if previous is not None:
            previous.end()
        ticket = StreamTicket(destination)
        self._tickets[destination] = ticket
        if destination is not None:
            waiting = self._queues[None]
            mine = deque(item for item in waiting if item[0] == destination)
            if mine:
                self._queues[None] = deque(item for item in waiting if item[0] != destination)
            self._queues[destination] = mine
        if self._queues[destination]:
            ticket.wake.set()
        return ticket

    def detach(self, ticket: StreamTicket) -> None:
        """The stream of `ticket` closed: what still waits for it goes back to the connection's
        stream (a session's), or waits for the next one (the connection's)."""
        ticket.end()
        if self._tickets.get(ticket.destination) is not ticket:
            return
        del self._tickets[ticket.destination]
        if ticket.destination is None:
            return
        left = self._queues.pop(ticket.destination)
        self._queues[None].extend(left)
        owner = self._tickets.get(None)
        if left and owner is not None:
            owner.wake.set()

    def take(self, ticket: StreamTicket) -> list[bytes]:
        """Everything waiting for `ticket`'s stream, in order (none once it has ended)."""
        ticket.wake.clear()
        if ticket.ended:
            return []
        queue = self._queues[ticket.destination]
        taken = [data for _, data in queue]
        queue.clear()
        self._size -= sum(map(len, taken))
        if self._size < self._high_water:
            self._room.set()
        return taken

    def close(self) -> None:
        """Every stream ends and what waits is dropped; waiters for room are let go."""
        self.closed = True
        for ticket in list(self._tickets.values()):
            ticket.end()
        self._tickets.clear()
        self._queues = {None: deque()}
        self._size = 0
        self._room.set()
