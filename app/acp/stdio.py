"""`trellis acp`: ACP over stdio for editors that launch their agent (Zed, Toad, acpx, JetBrains).

Newline-delimited JSON: one message per line each way. stdout carries nothing but ACP: the
protocol writes to a duplicate of the original stdout, and file descriptor 1 (and `sys.stdout`)
are pointed at stderr, so a stray print, a warning or a child process that inherits stdout cannot
corrupt the stream. Diagnostics go to `trellis.log` in the data directory (`app.log_file`).

Incoming lines may be up to 16 MiB. A longer line is discarded up to its newline, answered with one
-32600 error and logged; the connection goes on with the next line.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from contextlib import suppress
from typing import Any, BinaryIO

from acp.exceptions import RequestError

from app.acp import rpc
from app.acp.core import AcpOptions, AcpServer
from app.stop_signals import on_stop_signals

log = logging.getLogger(__name__)

READ_CHUNK = 64 * 1024


class LineReader:
    """Splits a byte stream into lines of at most `limit` bytes; a longer line is skipped whole
    (up to its newline) and reported once through `on_overlong` with the bytes it held."""

    def __init__(self, limit: int, on_overlong: Callable[[int], Awaitable[None]]) -> None:
        self._limit = limit
        self._on_overlong = on_overlong
        self._buffer = bytearray()
        self._skipping = 0  # bytes of an overlong line skipped so far (0: not skipping)

    async def feed(self, data: bytes) -> list[bytes]:
        """The complete lines `data` finishes, without their newline."""
        lines: list[bytes] = []
        start = 0
        while start < len(data):
            end = data.find(b"\n", start)
            piece = data[start:] if end < 0 else data[start:end]
            if self._skipping:
                self._skipping += len(piece)
            elif len(self._buffer) + len(piece) > self._limit:
                self._skipping = len(self._buffer) + len(piece)
                self._buffer.clear()
            else:
                self._buffer += piece
            if end < 0:
                break
            if self._skipping:
                skipped, self._skipping = self._skipping, 0
                await self._on_overlong(skipped)
            else:
                lines.append(bytes(self._buffer))
                self._buffer.clear()
            start = end + 1
        return lines

    def rest(self) -> bytes | None:
        """A last line without a newline at end of input."""
        return bytes(self._buffer) if self._buffer and not self._skipping else None


def protect_stdout() -> BinaryIO:
    """The original stdout for the protocol alone; fd 1 and `sys.stdout` now lead to stderr."""
    sys.stdout.flush()
    protocol = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol


STOP_SIGNALS = ("SIGTERM", "SIGHUP")
"""Each one closes the connection as end of input does (SIGINT keeps asyncio's behaviour)."""


async def serve_stdio(options: AcpOptions, reader: BinaryIO, writer: BinaryIO) -> None:
    """Serve one ACP client on `reader`/`writer` until end of input or SIGTERM/SIGHUP; then the
    running turns end (cancelled, stored) and the sessions are closed."""
    read = await _chunk_reader(reader)
    send = await _line_sender(writer)
    server = AcpServer(options)
    await server.open()
    connection = server.connect(send, connection_id="stdio")

    async def overlong(size: int) -> None:
        log.warning("acp stdio: an incoming line of %d bytes was over the 16 MiB limit", size)
        too_big = RequestError(
            rpc.INVALID_REQUEST,
            f"Invalid request: the message is {size} bytes, over the 16 MiB limit; not read",
        )
        await connection.receive_error(too_big)

    lines = LineReader(rpc.MAX_INCOMING_BYTES, overlong)
    stop = asyncio.Event()
    stopping = asyncio.create_task(stop.wait())
    try:
        with on_stop_signals(STOP_SIGNALS, stop.set):
            while True:
                reading = asyncio.create_task(read())
                done, _ = await asyncio.wait(
                    {reading, stopping}, return_when=asyncio.FIRST_COMPLETED
                )
                if reading not in done:
                    reading.cancel()
                    break
                data = reading.result()
                if not data:
                    last = lines.rest()
                    if last is not None:
                        await _receive(connection.receive, last)
                    break
                for line in await lines.feed(data):
                    await _receive(connection.receive, line)
    finally:
        stopping.cancel()
        try:
            await server.aclose()
        finally:
            await send.aclose()  # the lines still kept go out, whatever happened


async def _chunk_reader(reader: BinaryIO) -> Callable[[], Coroutine[Any, Any, bytes]]:
    """Reads of up to `READ_CHUNK` bytes: through the event loop for a pipe, socket or terminal,
    in a worker thread for anything else (a regular file given as stdin)."""
    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader(limit=2**31 - 1)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), reader)
    except ValueError:
        return lambda: asyncio.to_thread(
            reader.read1 if hasattr(reader, "read1") else reader.read, READ_CHUNK
        )
    return lambda: stream.read(READ_CHUNK)


class LineSender:
    """Writes each message and its newline, the lines of one turn of the event loop together.

    A `session/load` sends thousands of lines in one go; one write per line cost a system call
    each (and woke the reader each time). Here a line is kept until the end of the current turn
    of the loop, or until `coalesce_bytes` have gathered, and written with the others. Flow
    control holds: once the pipe is above its high-water mark a send waits for it to drain.
    `aclose()` writes what is kept, waits until the pipe has taken all of it, and closes it.
    """

    def __init__(self, out: asyncio.StreamWriter, *, coalesce_bytes: int = 64 * 1024) -> None:
        self._out = out
        self._coalesce_bytes = coalesce_bytes
        self._pending: list[bytes] = []
        self._size = 0
        self._handle: asyncio.Handle | None = None

    async def __call__(self, text: str) -> None:
        self.write(text)
        await self._out.drain()  # returns at once unless the pipe is above its high-water mark

    def ready(self) -> bool:
        """Whether `write` may take a line now (`app.acp.transport.SendNow`): the pipe is open and
        not above its high-water mark."""
        transport = self._out.transport
        return (
            not transport.is_closing()
            and transport.get_write_buffer_size() <= transport.get_write_buffer_limits()[1]
        )

    def write(self, text: str) -> None:
        """One line kept with the others, without waiting (after `ready()`, or from a send)."""
        line = text.encode("utf-8") + b"\n"
        self._pending.append(line)
        self._size += len(line)
        self._kept()

    def _kept(self) -> None:
        """Lines were kept: written now if enough have gathered, else at the end of this turn
        of the loop."""
        if self._size >= self._coalesce_bytes:
            self._write()
        elif self._handle is None:
            self._handle = asyncio.get_running_loop().call_soon(self._write)

    def write_encoded(self, messages: Sequence[bytes]) -> None:
        """Lines of messages already encoded (UTF-8), kept with the others as `write` keeps one,
        in order, without waiting (after `ready()`)."""
        pending = self._pending
        for message in messages:
            pending.append(message)
            pending.append(b"\n")
        self._size += sum(map(len, messages)) + len(messages)
        self._kept()

    async def aclose(self) -> None:
        self._write()
        self._out.transport.set_write_buffer_limits(high=0)  # drain now waits for an empty buffer
        with suppress(ConnectionError):
            await self._out.drain()
        self._out.close()

    def _write(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self._pending and not self._out.is_closing():
            self._out.write(b"".join(self._pending))
        self._pending.clear()
        self._size = 0


class BlockingLineSender:
    """Writes each message and its newline in a worker thread: for an output that is no pipe or
    socket (stdout redirected to a file), which the event loop cannot write without blocking."""

    def __init__(self, writer: BinaryIO) -> None:
        self._writer = writer

    async def __call__(self, text: str) -> None:
        await asyncio.to_thread(self._writer.write, text.encode("utf-8") + b"\n")

    async def aclose(self) -> None:
        await asyncio.to_thread(self._writer.close)


async def _line_sender(writer: BinaryIO) -> LineSender | BlockingLineSender:
    """Through the event loop (with flow control) for a pipe or socket, in a worker thread for
    anything else."""
    loop = asyncio.get_running_loop()
    try:
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, writer
        )
    except ValueError:
        return BlockingLineSender(writer)
    return LineSender(asyncio.StreamWriter(transport, protocol, None, loop))


async def _receive(receive: Callable[[str], Awaitable[None]], line: bytes) -> None:
    if not line.strip():
        return  # blank lines between messages are allowed
    # bytes that are not UTF-8 reach the parser as replacement characters: a parse error there,
    # or text the engine stores escaped, never a crash of the reader
    await receive(line.decode("utf-8", "replace"))
