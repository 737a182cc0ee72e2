"""The SQLite store's writer thread (`engine/store/sqlite/writer_thread.py`): errors cross back to the
caller with the transaction rolled back, a cancelled caller still gets the outcome, and closing
runs what was queued before the thread ends."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import closing
from pathlib import Path

import pytest

from engine.store.sqlite.writer_thread import SQLiteWriter, _answer, _Job, _nothing


@pytest.fixture
def path(tmp_path: Path) -> Path:
    path = tmp_path / "w.sqlite"
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
    return path


@pytest.fixture
async def writer(path: Path) -> AsyncIterator[SQLiteWriter]:
    writer = SQLiteWriter(path, busy_timeout=1.0)
    await writer.open()
    yield writer
    await writer.aclose()


def rows(path: Path) -> list[int]:
    with closing(sqlite3.connect(path)) as conn:
        return [x for (x,) in conn.execute("SELECT x FROM t ORDER BY x")]


def insert(*values: int) -> Callable[[sqlite3.Connection], int]:
    def work(conn: sqlite3.Connection) -> int:
        conn.executemany("INSERT INTO t (x) VALUES (?)", [(v,) for v in values])
        return len(values)

    return work


async def test_a_transaction_returns_what_its_work_returns(
    writer: SQLiteWriter, path: Path
) -> None:
    assert await writer.write(insert(1, 2)) == 2
    assert rows(path) == [1, 2]


async def test_an_error_crosses_the_thread_and_the_transaction_is_rolled_back(
    writer: SQLiteWriter, path: Path
) -> None:
    class Trouble(Exception):
        pass

    def half_then_fail(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO t (x) VALUES (1)")
        raise Trouble("after the first row")

    with pytest.raises(Trouble, match="after the first row"):
        await writer.write(half_then_fail)
    with pytest.raises(sqlite3.IntegrityError):
        await writer.write(insert(3, 3))
    assert rows(path) == []
    await writer.write(insert(4))
    assert rows(path) == [4]


class Gate:
    """Work that holds the thread until `release` is set, then inserts `values` (a repeated
    value fails on the primary key)."""

    def __init__(self, *values: int) -> None:
        self.values = values
        self.started, self.release = threading.Event(), threading.Event()

    def __call__(self, conn: sqlite3.Connection) -> str:
        self.started.set()
        self.release.wait()
        insert(*self.values)(conn)
        return "committed"

    async def reached(self) -> None:
        await asyncio.to_thread(self.started.wait)


async def test_a_cancelled_caller_waits_for_the_commit_then_is_cancelled(
    writer: SQLiteWriter, path: Path
) -> None:
    gate = Gate(7)
    outcome: list[str] = []

    async def caller() -> None:
        outcome.append(await writer.write(gate))
        await asyncio.sleep(0)  # the cancellation arrives here, after the outcome is recorded

    task = asyncio.ensure_future(caller())
    await gate.reached()
    try:
        task.cancel()
        await asyncio.sleep(0.01)
        assert not task.done()  # still waiting for the thread
        task.cancel()  # a second cancel changes nothing either
    finally:
        gate.release.set()  # else the thread never ends
    with pytest.raises(asyncio.CancelledError):
        await task
    assert outcome == ["committed"]
    assert rows(path) == [7]


async def test_a_cancelled_caller_gets_the_failure_of_its_transaction(
    writer: SQLiteWriter, path: Path
) -> None:
    gate = Gate(1, 1)
    task = asyncio.ensure_future(writer.write(gate))
    await gate.reached()
    task.cancel()
    gate.release.set()
    with pytest.raises(sqlite3.IntegrityError):
        await task
    assert rows(path) == []


async def test_close_runs_what_was_queued_then_ends_the_thread(path: Path) -> None:
    writer = SQLiteWriter(path, busy_timeout=1.0)
    await writer.open()
    thread = writer.thread
    assert thread is not None
    assert thread.is_alive()
    queued = [asyncio.ensure_future(writer.write(insert(n))) for n in range(5)]
    await asyncio.sleep(0)  # each has put its job on the queue
    await writer.aclose()
    assert not thread.is_alive()
    assert [q.result() for q in queued] == [1] * 5
    assert rows(path) == list(range(5))
    assert not writer.is_open
    assert writer.thread is None
    with pytest.raises(RuntimeError, match="not open"):
        await writer.write(insert(9))
    await writer.aclose()  # idempotent


async def test_a_failed_connect_is_raised_and_leaves_no_thread(tmp_path: Path) -> None:
    writer = SQLiteWriter(tmp_path / "missing" / "gone.sqlite", busy_timeout=1.0)
    with pytest.raises(sqlite3.OperationalError, match="unable to open"):
        await writer.open()
    assert not writer.is_open
    assert writer.thread is None
    threads = [t for t in threading.enumerate() if t.name == "trellis-writer:gone.sqlite"]
    for thread in threads:  # it answered, then returned
        await asyncio.to_thread(thread.join, 5.0)
        assert not thread.is_alive()


def test_an_answer_for_a_closed_loop_is_dropped() -> None:
    """The thread may finish after the loop that asked is gone; it must not die on that."""
    loop = asyncio.new_event_loop()
    job = _Job(_nothing, loop.create_future())
    loop.close()
    _answer(job, True, None)
    assert job.outcome is None


def test_each_call_is_answered_on_its_own_loop(path: Path) -> None:
    """A writer opened under one event loop answers a caller on another (the thread posts to
    the loop that waits, not to the one that opened it, which is closed here)."""
    writer = SQLiteWriter(path, busy_timeout=1.0)
    asyncio.run(writer.open())

    async def use() -> int:
        try:
            return await asyncio.wait_for(writer.write(insert(1)), timeout=30)
        finally:
            await writer.aclose()

    assert asyncio.run(use()) == 1
    assert rows(path) == [1]
