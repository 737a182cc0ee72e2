"""A real HTTP/1.1 server on 127.0.0.1 that records requests and plays canned responses.

Each provider test queues the responses (an SSE stream in the provider's exact wire format, an
error body, a stream cut short) and afterwards asserts what the gateway actually sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any


@dataclass(frozen=True, slots=True)
class Canned:
    """One response: sent in `chunks` (flushed one by one), or never, if `hold` is set.

    After the chunks a hostile endpoint may `trickle` the same bytes every `every` seconds (a
    keep-alive comment, garbage) or `stall` (keep the connection open and send nothing), until
    the client or the server closes the connection.
    """

    status: int = 200
    chunks: Sequence[bytes] = ()
    content_type: str = "text/event-stream"
    headers: dict[str, str] = field(default_factory=dict)
    hold: bool = False
    trickle: bytes = b""
    every: float = 0.02
    stall: bool = False


@dataclass(frozen=True, slots=True)
class Seen:
    method: str
    target: str
    headers: dict[str, str]
    body: Any


def sse(*payloads: Any, event_names: Sequence[str] = (), newline: str = "\n") -> list[bytes]:
    """Server-sent events, one chunk per event: JSON payloads (or raw strings) as `data:` lines."""
    chunks: list[bytes] = []
    for i, payload in enumerate(payloads):
        data = payload if isinstance(payload, str) else json.dumps(payload)
        head = f"event: {event_names[i]}{newline}" if i < len(event_names) else ""
        chunks.append(f"{head}data: {data}{newline}{newline}".encode())
    return chunks


def json_body(status: int, payload: Any, headers: dict[str, str] | None = None) -> Canned:
    return Canned(
        status=status,
        chunks=[json.dumps(payload).encode()],
        content_type="application/json",
        headers=headers or {},
    )


class FakeServer:
    """Answers each request with the next queued `Canned` (HTTP 500 when the queue is empty)."""

    def __init__(self) -> None:
        self.responses: list[Canned] = []
        self.seen: list[Seen] = []
        self._server: asyncio.Server | None = None
        self._stop = asyncio.Event()
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    def queue(self, *responses: Canned) -> None:
        self.responses.extend(responses)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)

    async def aclose(self) -> None:
        self._stop.set()
        for writer in list(self._writers):
            writer.close()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            await self._answer(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request_line = (await reader.readline()).decode("latin-1").strip()
        method, target, _ = request_line.split(" ", 2)
        headers: dict[str, str] = {}
        while (line := (await reader.readline()).decode("latin-1").strip()) != "":
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        raw = await reader.readexactly(int(headers.get("content-length", "0")))
        self.seen.append(Seen(method, target, headers, json.loads(raw) if raw else None))
        canned = self.responses.pop(0) if self.responses else Canned(status=500)
        if canned.hold:
            await self._stop.wait()
            return
        head = [
            f"HTTP/1.1 {canned.status} {_phrase(canned.status)}",
            f"content-type: {canned.content_type}",
            "connection: close",
            *(f"{name}: {value}" for name, value in canned.headers.items()),
        ]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        for chunk in canned.chunks:
            writer.write(chunk)
            await writer.drain()
        while canned.trickle and not self._stop.is_set() and not reader.at_eof():
            await asyncio.sleep(canned.every)
            writer.write(canned.trickle)
            await writer.drain()
        if canned.stall:
            await self._stop.wait()


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:  # Anthropic's 529 "Overloaded" is not a registered status
        return "Unknown"
