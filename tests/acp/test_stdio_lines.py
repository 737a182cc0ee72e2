"""The stdio transport's lines: incoming ones split up to the limit (a longer one skipped whole),
outgoing ones written together, in order, with nothing lost at the end."""

from __future__ import annotations

import asyncio
import os

import pytest

from app.acp.stdio import LineReader, LineSender, _line_sender


async def test_lines_across_chunks_and_an_overlong_line_skipped_to_its_newline() -> None:
    skipped: list[int] = []

    async def overlong(size: int) -> None:
        skipped.append(size)

    reader = LineReader(10, overlong)
    assert await reader.feed(b"abc\nde") == [b"abc"]
    assert await reader.feed(b"f\n0123456789") == [b"def"]
    assert await reader.feed(b"X") == []  # eleven bytes: over the limit, skipped from here
    assert await reader.feed(b"more and more\nok\n") == [b"ok"]
    assert skipped == [24]
    assert await reader.feed(b"0123456789\n") == [b"0123456789"]  # exactly the limit is read
    assert await reader.feed(b"tail") == []
    assert reader.rest() == b"tail"


async def test_lines_sent_in_one_go_are_written_together_whole_and_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read_end, write_end = os.pipe()
    writes: list[int] = []
    write = os.write

    def counted(fd: int, data: bytes) -> int:
        if fd == write_end:
            writes.append(len(data))
        return write(fd, data)

    monkeypatch.setattr(os, "write", counted)
    lines = [f"message {i} " + "x" * (i % 97) for i in range(5000)]  # about 300 KB
    expected = "".join(line + "\n" for line in lines).encode()

    def read_all() -> bytes:
        with os.fdopen(read_end, "rb") as pipe:
            return pipe.read()

    reading = asyncio.create_task(asyncio.to_thread(read_all))
    send = await _line_sender(os.fdopen(write_end, "wb", buffering=0))
    for line in lines:  # nothing here yields to the loop unless the pipe is full
        await send(line)
    await send.aclose()  # what is still kept is written before the pipe closes
    assert await reading == expected
    # a write per 64 KiB gathered, not one per line; more when the pipe is full and the reader
    # drains it in pieces (a loaded CI run: 13 writes, some of 16 bytes), never near one a line
    assert len(writes) <= len(lines) // 50


async def test_encoded_lines_are_kept_in_order_with_the_others() -> None:
    """`write_encoded` (a `session/load` range at once) writes each message as its own line,
    after the lines written before it and before those after."""
    read_end, write_end = os.pipe()

    def read_all() -> bytes:
        with os.fdopen(read_end, "rb") as pipe:
            return pipe.read()

    reading = asyncio.create_task(asyncio.to_thread(read_all))
    send = await _line_sender(os.fdopen(write_end, "wb", buffering=0))
    assert isinstance(send, LineSender)
    encoded = [f"range {i} é".encode() for i in range(3000)]
    send.write("before")
    send.write_encoded(encoded)
    send.write("after")
    await send.aclose()
    lines = (await reading).split(b"\n")
    assert lines == [b"before", *encoded, b"after", b""]
