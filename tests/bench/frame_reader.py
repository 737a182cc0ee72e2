"""A WebSocket client for the benchmarks that reads frames cheaply: it finds each frame by its
header and decodes only the ones that are not `session/update` notifications.

A `websockets` client that decodes every frame (`recv()` then `json.loads`) costs about as much
per frame as the server that sends it, so with tens of thousands of frames the time to an answer
measures the client as much as the server. This one parses the frame headers in place from large
reads (unmasked server frames, RFC 6455 section 5.2), which costs a small fraction of that; the
benchmark reports both clients, so the client's cost stays visible.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from websockets.frames import Frame, Opcode

NOTIFICATION_PREFIX = b'{"jsonrpc":"2.0","method":'
"""How every notification Trellis (and the raw sender, which sends its frames) begins; any other
frame is decoded."""

READ_SIZE = 1 << 20


class FrameError(Exception):
    """The server sent what this client does not read: a refused upgrade, a fragmented or binary
    frame, or a close."""


@dataclass(slots=True)
class FrameReader:
    """One connection: `send` a text frame, `until_answer` counts frames up to an answer."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    buffer: bytearray

    @classmethod
    async def connect(cls, url: str, headers: dict[str, str]) -> FrameReader:
        """Opens `url` (ws://, 127.0.0.1) with `headers` on the upgrade; no compression."""
        target = urlsplit(url)
        host, port = target.hostname or "127.0.0.1", target.port or 80
        reader, writer = await asyncio.open_connection(host, port, limit=READ_SIZE)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [
            f"GET {target.path or '/'}{'?' + target.query if target.query else ''} HTTP/1.1",
            f"Host: {host}:{port}",
            "Upgrade: websocket",
            "Connection: Upgrade",
            f"Sec-WebSocket-Key: {key}",
            "Sec-WebSocket-Version: 13",
            *(f"{name}: {value}" for name, value in headers.items()),
        ]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        response = await reader.readuntil(b"\r\n\r\n")
        if not response.startswith(b"HTTP/1.1 101"):
            writer.close()
            raise FrameError(f"upgrade refused: {response.splitlines()[0].decode()}")
        return cls(reader, writer, bytearray())

    async def send(self, message: dict[str, Any]) -> None:
        frame = Frame(Opcode.TEXT, json.dumps(message).encode())
        self.writer.write(frame.serialize(mask=True, extensions=[]))
        await self.writer.drain()

    async def until_answer(self, ident: int) -> tuple[dict[str, Any], int]:
        """The answer to request `ident`, and how many frames came before it."""
        frames = 0
        while True:
            for payload in await self._frames():
                if payload.startswith(NOTIFICATION_PREFIX):
                    frames += 1
                    continue
                message = json.loads(payload)
                if "method" not in message and message.get("id") == ident:
                    return message, frames
                frames += 1

    async def _frames(self) -> list[bytes]:
        """The whole frames read so far, at least one; a partial frame stays buffered."""
        found: list[bytes] = []
        while not found:
            data = await self.reader.read(READ_SIZE)
            if not data:
                raise FrameError("the server closed the connection")
            self.buffer += data
            found = self._split()
        return found

    def _split(self) -> list[bytes]:
        buffer, at = self.buffer, 0
        found: list[bytes] = []
        while len(buffer) - at >= 2:
            first, second = buffer[at], buffer[at + 1]
            if first != 0x81 or second & 0x80:  # FIN + text, unmasked; else after what came
                if found:
                    break
                raise FrameError(f"unexpected frame header {first:#x} {second:#x}")
            size, start = second & 0x7F, at + 2
            if size == 126:
                if len(buffer) - at < 4:
                    break
                size, start = int.from_bytes(buffer[at + 2 : at + 4], "big"), at + 4
            elif size == 127:
                if len(buffer) - at < 10:
                    break
                size, start = int.from_bytes(buffer[at + 2 : at + 10], "big"), at + 10
            if len(buffer) - start < size:
                break
            found.append(bytes(buffer[start : start + size]))
            at = start + size
        del buffer[:at]
        return found

    async def aclose(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()
