"""What a SQLiteStore flush costs and how it ends when its caller is cancelled (issue 10).

A flush is BEGIN IMMEDIATE, the session's count, the rows and COMMIT; sent one statement at a time,
each was a round trip to aiosqlite's thread, which cost more than the statement. They are now one
job on the store's writer thread (`SQLiteWriter`); a job handed to the thread cannot be stopped
half-way, so a cancelled caller waits for its outcome and the store keeps track of what was
committed.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from engine.session import Session
from engine.store.sqlite.store import SQLiteStore
from engine.store.sqlite.writer_thread import SQLiteWriter
from tests.store.conftest import full_turn, inject


async def hold_the_thread(store: SQLiteStore) -> tuple[asyncio.Future[None], threading.Event]:
    """Occupy the store's aiosqlite thread until the returned event is set, so what is sent next
    queues behind it; the future ends once the thread is free."""
    busy, release = threading.Event(), threading.Event()

    def hold() -> None:
        busy.set()
        release.wait()

    conn = store._db._conn
    assert conn is not None
    held = asyncio.ensure_future(conn._execute(hold))  # type: ignore[no-untyped-call]
    await asyncio.to_thread(busy.wait)
    return held, release


async def hold_the_writer(store: SQLiteStore) -> tuple[asyncio.Future[None], threading.Event]:
    """Occupy the store's writer thread (inside a transaction) until the returned event is set,
    so a flush sent next queues behind it; the future ends once the thread is free."""
    busy, release = threading.Event(), threading.Event()

    def hold(conn: sqlite3.Connection) -> None:
        busy.set()
        release.wait()

    held = asyncio.ensure_future(store._db._writer.write(hold))
    await asyncio.to_thread(busy.wait)
    return held, release


async def test_a_flush_is_one_round_trip_to_the_writer_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with SQLiteStore(tmp_path / "s.sqlite") as store:
        info = await store.create(cwd="/w")
        session = Session(info.id, store)
        full_turn(session)
        writes = statements = 0
        write, queue = SQLiteWriter.write, aiosqlite.Connection._execute

        async def counting_writes(self: SQLiteWriter, work: Any) -> Any:
            nonlocal writes
            writes += 1
            return await write(self, work)

        async def counting_statements(self: aiosqlite.Connection, fn: Any, *args: Any) -> Any:
            nonlocal statements
            statements += 1
            return await queue(self, fn, *args)  # type: ignore[no-untyped-call]

        monkeypatch.setattr(SQLiteWriter, "write", counting_writes)
        monkeypatch.setattr(aiosqlite.Connection, "_execute", counting_statements)
        await session.flush()
        assert (writes, statements) == (1, 0)
        inject(session)
        await session.flush()
        assert (writes, statements) == (2, 0)
        monkeypatch.undo()
        assert await store.read(info.id) == list(session.held)


async def test_a_flush_cancelled_while_the_thread_writes_keeps_the_store_in_step(
    tmp_path: Path,
) -> None:
    async with SQLiteStore(tmp_path / "s.sqlite") as store:
        info = await store.create(cwd="/w")
        session = Session(info.id, store)
        full_turn(session)
        await store.append(info.id, session.held)
        # hold the writer thread, so the flush is queued behind it when it is cancelled
        held, release = await hold_the_writer(store)
        flush = asyncio.ensure_future(store.flush(info.id))
        await asyncio.sleep(0.01)
        flush.cancel()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await flush
        await held
        # the transaction ran to its end: the store counts the batch as written, so what
        # follows continues the log instead of failing on a seq it thinks is free
        assert await store.read(info.id) == list(session.held)
        stored = len(session.held)
        inject(session)
        await store.append(info.id, session.held[stored:])
        await store.flush(info.id)
        assert await store.read(info.id) == list(session.held)


async def test_a_lease_taken_by_a_cancelled_caller_leaves_no_transaction_open(
    tmp_path: Path,
) -> None:
    """A caller cancelled while its BEGIN waits on the thread has still queued it: the block must
    roll it back, or every later transaction fails ("within a transaction")."""
    async with SQLiteStore(tmp_path / "s.sqlite") as store:
        info = await store.create(cwd="/w")
        await store.release(info.id)
        held, release = await hold_the_thread(store)
        acquiring = asyncio.ensure_future(store.acquire(info.id))
        await asyncio.sleep(0.01)  # its BEGIN is queued behind `hold`
        acquiring.cancel()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await acquiring
        await held
        assert (await store.acquire(info.id)).id == info.id
        await store.release(info.id)


async def test_a_session_flush_cancelled_mid_write_records_the_write_before_the_cancel(
    tmp_path: Path,
) -> None:
    """The store finishes the write, so the Session awaits it without a shield: the cancelled
    caller sees its cancellation only once the Session counts the events as durable."""
    async with SQLiteStore(tmp_path / "s.sqlite") as store:
        assert store.flush_runs_to_its_end
        info = await store.create(cwd="/w")
        session = Session(info.id, store)
        full_turn(session)
        held, release = await hold_the_writer(store)
        seen: list[int] = []

        async def flush() -> None:
            try:
                await session.flush()
                await asyncio.sleep(0)  # the caller's next await: the cancellation arrives here
            except asyncio.CancelledError:
                seen.append(session.pending)
                raise

        caller = asyncio.ensure_future(flush())
        await asyncio.sleep(0.01)
        caller.cancel()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await caller
        await held
        assert seen == [0]  # durable before the cancellation arrived, not written twice later
        assert await store.read(info.id) == list(session.held)
        inject(session)
        await session.flush()
        assert await store.read(info.id) == list(session.held)
