"""The thread that commits a SQLite store's log writes: a connection of its own, fed by a C
`SimpleQueue`, answering each transaction with one wake-up of the event loop.

A flush is a short transaction, and going through aiosqlite's thread cost more than the
statements (a partial, logging and its private `_execute` on every call, and the waiter
kept when its caller was cancelled). This thread does one thing: BEGIN IMMEDIATE, the work,
COMMIT (ROLLBACK if the work raises), then posts the outcome to the loop. The commit, which may
wait on another process's lock, never runs on the loop.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from queue import SimpleQueue
from typing import Any, Generic, TypeVar, cast

T = TypeVar("T")


class _Job(Generic[T]):
    """One transaction handed to the thread; `outcome` is set on the loop once it has run."""

    __slots__ = ("outcome", "waiter", "work")

    def __init__(
        self, work: Callable[[sqlite3.Connection], T], waiter: asyncio.Future[None]
    ) -> None:
        self.work = work
        self.waiter = waiter  # resolved (with None) once `outcome` is set, on its own loop
        self.outcome: tuple[bool, object] | None = None


class SQLiteWriter:
    """A write connection to the database at `path` on a thread of its own.

    `busy_timeout` (seconds) is how long a transaction waits for another connection's lock.
    `open` starts the thread and connects; `write` runs a transaction on it; `aclose` lets the
    queued transactions finish, closes the connection and ends the thread.
    """

    def __init__(self, path: Path, *, busy_timeout: float) -> None:
        self.path = path
        self._busy_timeout = busy_timeout
        self._jobs: SimpleQueue[_Job[Any] | None] | None = None
        self._thread: threading.Thread | None = None

    async def open(self) -> None:
        """Start the thread and connect on it; sqlite3's error if the connection fails."""
        loop = asyncio.get_running_loop()
        jobs: SimpleQueue[_Job[Any] | None] = SimpleQueue()
        opened: _Job[None] = _Job(_nothing, loop.create_future())
        thread = threading.Thread(
            target=_serve,
            args=(self.path, self._busy_timeout, jobs, opened),
            name=f"trellis-writer:{self.path.name}",
            daemon=True,  # a store never closed must not keep the process alive
        )
        thread.start()
        try:
            await _outcome(opened)
        except BaseException:
            jobs.put(None)  # a failed connect has ended the thread already; this is a no-op then
            raise
        self._jobs, self._thread = jobs, thread

    @property
    def is_open(self) -> bool:
        return self._jobs is not None

    @property
    def thread(self) -> threading.Thread | None:
        """The writing thread while the writer is open."""
        return self._thread

    async def write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """`work(connection)` between BEGIN IMMEDIATE and COMMIT on the thread; what it returns,
        or what it (or the commit) raised, after a ROLLBACK.

        A transaction handed to the thread runs to its end: a caller cancelled meanwhile still
        waits for the outcome; a failure is raised, a commit is returned and the cancellation is
        delivered at the caller's next await, so the caller can record what was committed first.
        """
        jobs = self._jobs
        if jobs is None:
            raise RuntimeError("the writer is not open")
        # the loop of this call, not of `open`: the answer goes where the caller waits
        job: _Job[T] = _Job(work, asyncio.get_running_loop().create_future())
        jobs.put(job)
        return await _outcome(job)

    async def aclose(self) -> None:
        """Run what is queued, close the connection and wait for the thread to end; idempotent."""
        jobs, thread = self._jobs, self._thread
        self._jobs = self._thread = None
        if jobs is None or thread is None:
            return
        jobs.put(None)
        await asyncio.to_thread(thread.join)


async def _outcome(job: _Job[T]) -> T:
    """Wait for `job`'s outcome on the loop; a cancellation meanwhile is passed on once it is in."""
    try:
        await job.waiter
    except asyncio.CancelledError:
        # the thread runs every job it was given: wait for this one, then pass the cancel on
        while job.outcome is None:
            job.waiter = job.waiter.get_loop().create_future()
            with suppress(asyncio.CancelledError):
                await job.waiter
        task = asyncio.current_task()
        if task is not None:
            task.cancel()
    assert job.outcome is not None
    ok, value = job.outcome
    if ok:
        return cast(T, value)
    raise cast(BaseException, value)


def _settle(job: _Job[Any], ok: bool, value: object) -> None:
    """On the loop: record the outcome and wake the waiter."""
    job.outcome = (ok, value)
    if not job.waiter.done():
        job.waiter.set_result(None)


def _answer(job: _Job[Any], ok: bool, value: object) -> None:
    """On the thread: hand the outcome to the waiter's loop (one wake-up)."""
    with suppress(RuntimeError):  # the loop is closed: no one is left to wait for the answer
        job.waiter.get_loop().call_soon_threadsafe(_settle, job, ok, value)


def _nothing(conn: sqlite3.Connection) -> None:
    """The work of the job that stands for the connect: it only carries its outcome."""


def _connect(path: Path, busy_timeout: float) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        # WAL with NORMAL: a commit survives the process being killed (not a power cut).
        conn.execute("PRAGMA synchronous = NORMAL")
    except BaseException:
        conn.close()
        raise
    return conn


def _serve(
    path: Path,
    busy_timeout: float,
    jobs: SimpleQueue[_Job[Any] | None],
    opened: _Job[None],
) -> None:
    """The thread: connect, then run each queued transaction until `None` arrives."""
    try:
        conn = _connect(path, busy_timeout)
    except BaseException as exc:
        _answer(opened, False, exc)
        return
    _answer(opened, True, None)
    try:
        while (job := jobs.get()) is not None:
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    result = job.work(conn)
                    conn.execute("COMMIT")
                except BaseException:
                    with suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                    raise
            except BaseException as exc:
                _answer(job, False, exc)
            else:
                _answer(job, True, result)
    finally:
        with suppress(sqlite3.Error):
            conn.close()
