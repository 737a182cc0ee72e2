"""The store benchmark's helpers: the rotation that keeps its comparisons fair, and the hop it
measures beside the one-event flush."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from engine.store.sqlite.writer_thread import SQLiteWriter
from tests.bench.store import awaitable, rotated, writer_hops

T = TypeVar("T")


async def test_each_side_goes_first_in_turn() -> None:
    order: list[str] = []

    def side(name: str) -> float:
        order.append(name)
        return float(len(order))

    measured = await rotated(3, [awaitable(lambda: side("a")), awaitable(lambda: side("b"))])
    assert order == ["a", "b", "b", "a", "a", "b"]
    assert measured == [[1.0, 4.0, 5.0], [2.0, 3.0, 6.0]]


class CountingWriter(SQLiteWriter):
    def __init__(self, path: Path) -> None:
        super().__init__(path, busy_timeout=1.0)
        self.threads: list[str] = []

    async def write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        def counted(conn: sqlite3.Connection) -> T:
            self.threads.append(threading.current_thread().name)
            return work(conn)

        return await super().write(counted)


async def test_the_hops_are_transactions_on_the_writer_thread(tmp_path: Path) -> None:
    writer = CountingWriter(tmp_path / "hops.sqlite")
    await writer.open()
    try:
        assert await writer_hops(writer, 3) > 0
        assert writer.threads == ["trellis-writer:hops.sqlite"] * 3
        # the writer still answers: the empty transactions left it idle, not stuck
        assert await writer.write(lambda conn: conn.execute("SELECT 1").fetchone()) == (1,)
    finally:
        await writer.aclose()
