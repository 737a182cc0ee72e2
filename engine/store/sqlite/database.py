"""One SQLite file: opening it (WAL, migrations), transactions on an aiosqlite connection, and the
log writes on a writer thread of its own (`SQLiteWriter`)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from engine.store.errors import DatabaseLockedError, StoreError, StoreUnavailableError
from engine.store.queries import Fetch, Rows
from engine.store.sqlite.errors import sqlite_faults, translate
from engine.store.sqlite.schema import migrate
from engine.store.sqlite.search import FtsIndex
from engine.store.sqlite.writer_thread import SQLiteWriter

log = logging.getLogger(__name__)

T = TypeVar("T")

OPEN_RETRY_FIRST = 0.005
OPEN_RETRY_MAX = 0.1
"""Seconds between attempts at the schema work of `open`, doubling from the first to the most."""


class SQLiteDatabase:
    """Every statement runs off the event loop, so it never waits on the disk: `transaction`
    blocks on aiosqlite's thread, `run` on the writer's. An asyncio lock keeps the transactions of
    concurrent callers from interleaving, on one connection or across the two.

    `busy_timeout` (seconds) is how long a statement waits for another connection's lock before
    `DatabaseLockedError`.
    """

    def __init__(self, path: Path, *, busy_timeout: float) -> None:
        self.path = path
        self._busy_timeout = busy_timeout
        self._conn: aiosqlite.Connection | None = None
        self._writer = SQLiteWriter(path, busy_timeout=busy_timeout)
        self._lock = asyncio.Lock()
        self.search = FtsIndex(contentless_delete=False, unusable="the store is not open")
        """The search index as this process can use it, read at `open`."""

    @property
    def is_open(self) -> bool:
        return self._conn is not None

    async def open(self) -> None:
        """Create the directory if needed, connect, switch to WAL and migrate the schema, then
        connect the writer."""
        if self._conn is not None:
            return
        await asyncio.to_thread(self._prepare_directory)
        with sqlite_faults(self.path, "opening the database"):
            conn = await aiosqlite.connect(
                self.path, timeout=self._busy_timeout, isolation_level=None
            )
        try:
            with sqlite_faults(self.path, "opening the database"):
                await conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
            await self._retry_while_locked(lambda: self._set_up(conn))
            with sqlite_faults(self.path, "opening the database"):
                await self._writer.open()
        except BaseException:
            await self._writer.aclose()
            await conn.close()
            raise
        self._conn = conn

    async def _set_up(self, conn: aiosqlite.Connection) -> None:
        with sqlite_faults(self.path, "opening the database"):
            await conn.execute("PRAGMA journal_mode = WAL")
            # WAL with NORMAL: a commit survives the process being killed (not a power cut).
            await conn.execute("PRAGMA synchronous = NORMAL")
        async with self._in_transaction(conn, "migrating the schema", write=True):
            await migrate(conn, self.path)
            self.search = await FtsIndex.open(conn)

    async def _retry_while_locked(self, attempt: Callable[[], Awaitable[None]]) -> None:
        """Run `attempt` until it is not locked out, for at most the busy timeout.

        Switching a fresh file to WAL upgrades a read lock to a write lock, and SQLite answers a
        conflict there with SQLITE_BUSY at once, without its busy handler (two first opens at the
        same moment meet it); so the schema work of `open` waits here instead.
        """
        deadline = time.monotonic() + self._busy_timeout
        pause = OPEN_RETRY_FIRST
        while True:
            try:
                await attempt()
                return
            except DatabaseLockedError as exc:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DatabaseLockedError(
                        f"{self.path}: opening the database failed: still locked after "
                        f"{self._busy_timeout:g} s (another process held the database too long)"
                    ) from exc
                log.debug("%s: locked while opening, retrying: %s", self.path, exc)
                await asyncio.sleep(min(pause, left))
                pause = min(pause * 2, OPEN_RETRY_MAX)

    def _prepare_directory(self) -> None:
        directory = self.path.parent
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailableError(
                f"{directory}: cannot create the directory for {self.path.name}: "
                f"{exc.strerror or exc}"
            ) from exc

    @staticmethod
    def fetch_on(conn: aiosqlite.Connection) -> Fetch:
        """The shared queries' `Fetch` on the connection, inside a `transaction` block."""

        async def fetch(sql: str, params: Sequence[Any]) -> Rows:
            return list(await conn.execute_fetchall(sql, params))

        return fetch

    async def aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                await self._writer.aclose()
            finally:
                await conn.close()

    async def run(self, action: str, work: Callable[[sqlite3.Connection], T]) -> T:
        """`work` in one write transaction on the writer's thread (`SQLiteWriter.write`).

        A flush is a handful of statements; sent one by one, each is a round trip to a thread
        that costs more than the statement. Here BEGIN IMMEDIATE, the work and COMMIT
        (or ROLLBACK if `work` raises) are a single round trip. A transaction handed to the thread
        cannot be stopped half-way, so a cancelled caller still waits for its outcome: a failure
        is raised, a commit is returned and the cancellation is delivered at the caller's next
        await, so the caller can record what was committed first.
        """
        async with self._lock:
            if self._conn is None:
                raise StoreError(f"{self.path}: the store is not open (use open() or async with)")
            try:  # not `sqlite_faults`: a generator context per flush costs a few microseconds
                return await self._writer.write(work)
            except sqlite3.Error as exc:
                raise translate(exc, self.path, action) from exc

    @asynccontextmanager
    async def transaction(
        self, action: str, *, write: bool = True
    ) -> AsyncIterator[aiosqlite.Connection]:
        """Commit if the block succeeds, roll back if anything escapes it; sqlite3 errors come out
        as `StoreError`s naming the file and `action`."""
        async with self._lock:
            conn = self._conn
            if conn is None:
                raise StoreError(f"{self.path}: the store is not open (use open() or async with)")
            async with self._in_transaction(conn, action, write=write):
                yield conn

    @asynccontextmanager
    async def _in_transaction(
        self, conn: aiosqlite.Connection, action: str, *, write: bool
    ) -> AsyncIterator[aiosqlite.Connection]:
        with sqlite_faults(self.path, action):
            try:
                # IMMEDIATE takes the write lock up front, so a busy database fails before any
                # work. Inside the try: a caller cancelled while it waits has still queued the
                # BEGIN, which the thread runs, so the ROLLBACK queued after it must follow.
                await conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                yield conn
                await conn.execute("COMMIT")
            except BaseException:
                with suppress(sqlite3.Error):
                    await conn.execute("ROLLBACK")
                raise
