"""The stdio transport's line splitting: lines up to the limit, a longer one skipped whole."""

from __future__ import annotations

from app.acp.stdio import LineReader


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
