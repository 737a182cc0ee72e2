"""Opening a fresh database while others open it too: switching to WAL answers "busy" at once,
without SQLite's busy handler, so the store retries it until its busy timeout (issue 9, item 8)."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import sqlite3
from contextlib import closing
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest

from engine.store.errors import DatabaseLockedError
from engine.store.sqlite.store import SQLiteStore

RETRY_LOGGER = "engine.store.sqlite.database"
OPENS = 200


def hold_write_lock(path: Path) -> sqlite3.Connection:
    """A rollback-journal connection holding the write (RESERVED) lock: the WAL switch of another
    connection then fails at once with SQLITE_BUSY, its busy timeout not consulted."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    return conn


async def test_a_busy_wal_switch_is_retried_until_the_lock_is_released(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "sessions.sqlite"
    caplog.set_level(logging.DEBUG, logger=RETRY_LOGGER)
    with closing(hold_write_lock(path)) as holder:
        opening = asyncio.create_task(SQLiteStore(path, busy_timeout=60.0).open())
        for _ in range(400):  # bounded: release only once the opener has met the lock
            if opening.done() or any("retrying" in r.getMessage() for r in caplog.records):
                break
            await asyncio.sleep(0.025)
        holder.execute("COMMIT")
    store = await opening
    try:
        assert (await store.list(cwd=None)).sessions == ()
    finally:
        await store.aclose()
    with closing(sqlite3.connect(path)) as check:
        assert check.execute("PRAGMA journal_mode").fetchone() == ("wal",)


async def test_a_wal_switch_still_busy_at_the_timeout_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite"
    with closing(hold_write_lock(path)), pytest.raises(DatabaseLockedError) as raised:
        await SQLiteStore(path, busy_timeout=0.2).open()
    message = str(raised.value)
    assert str(path) in message
    assert "still locked after 0.2 s" in message


def _open_each_in_step(paths: list[Path], barrier: Barrier) -> None:
    """One of the processes that open each fresh database at the same moment as the others;
    exits with the number of opens that failed."""

    async def main() -> int:
        failed = 0
        for path in paths:
            store = SQLiteStore(path)
            await asyncio.to_thread(barrier.wait)
            try:
                async with store:
                    await store.list(cwd=None)
            except DatabaseLockedError:
                failed += 1
        return failed

    raise SystemExit(min(asyncio.run(main()), 255))


@pytest.mark.slow
def test_simultaneous_first_opens_all_succeed(tmp_path: Path) -> None:
    """Two processes open each of many fresh databases in step. Pairs collide most (a larger
    crowd is spread out by the barrier's wake-ups): before the fix about one pair in twenty
    failed."""
    fork = multiprocessing.get_context("fork")
    paths = [tmp_path / f"db{n}" / "sessions.sqlite" for n in range(OPENS)]
    barrier = fork.Barrier(2)
    openers = [fork.Process(target=_open_each_in_step, args=(paths, barrier)) for _ in range(2)]
    for opener in openers:
        opener.start()
    for opener in openers:
        opener.join(timeout=120)
        if opener.is_alive():  # hung: stop it, and count it as a failure
            opener.kill()
            opener.join()
    assert [opener.exitcode for opener in openers] == [0, 0]
