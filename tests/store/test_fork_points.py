"""Store edge cases: fork points, repair idempotence, paging with equal times, lease takeover."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from engine.events import (
    CompactEnd,
    CompactStart,
    CompactSummary,
    ModelBind,
    PinAdd,
    SessionTitle,
)
from engine.session import Session
from engine.store.base import SessionStore
from engine.store.errors import ForkPointError, LeaseError
from engine.store.sqlite.store import SQLiteStore
from tests.store.conftest import StoreFactory, full_turn, inject, open_turn, step


async def new_session(store: SessionStore, cwd: str = "/w") -> Session:
    info = await store.create(cwd=cwd)
    return Session(info.id, store)


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


async def test_fork_after_out_of_turn_session_events(store: SessionStore) -> None:
    """A turn boundary followed by session-level events (a new session's model/bind, a pin, a
    finished compaction) is still a turn boundary: `/fork` forks at the end of the log."""
    session = await new_session(store)
    session.append(ModelBind(model="a", grant_epoch=1))
    await session.flush()
    fresh = await store.fork(session.id, 1)  # only the binding: no turn was ever open
    assert fresh.event_count == 1
    assert fresh.model == "a"

    full_turn(session)
    session.append(PinAdd(pin_id="p1", text="remember"))
    await session.flush()
    pinned = await store.fork(session.id, session.state.next_seq)
    assert pinned.event_count == len(session.held)

    session.append(CompactStart(groups=1, earliest=0))
    session.append(CompactSummary(content="summary"))
    session.append(CompactEnd(earliest=0))
    await session.flush()
    compacted = await store.fork(session.id, session.state.next_seq)
    assert await store.read(compacted.id) == list(session.held)


async def test_fork_refuses_a_cut_inside_a_compaction(store: SessionStore) -> None:
    session = await new_session(store)
    full_turn(session)
    session.append(CompactStart(groups=1, earliest=0))
    session.append(CompactSummary(content="summary"))
    session.append(CompactEnd(earliest=0))
    await session.flush()
    end = session.state.next_seq
    for at_seq in (end - 2, end - 1):
        with pytest.raises(ForkPointError, match=rf"{session.id}.*seq {at_seq}.*compact"):
            await store.fork(session.id, at_seq)


async def test_fork_still_refuses_a_cut_inside_a_turn(store: SessionStore) -> None:
    session = await new_session(store)
    turn = open_turn(session)
    session.append(PinAdd(pin_id="p1", text="pinned mid-turn"))  # session-level, inside a turn
    step(session, turn)
    await session.flush()
    with pytest.raises(ForkPointError, match="inside an open turn"):
        await store.fork(session.id, 3)


async def test_fork_right_after_a_repair(store_factory: StoreFactory) -> None:
    writer = await store_factory()
    session = await new_session(writer)
    turn = open_turn(session)
    step(session, turn, calls=2, results=1)
    await session.flush()
    await writer.release(session.id)
    loaded = await writer.load(session.id)
    assert loaded.repaired
    fork = await writer.fork(session.id, len(loaded.events))
    assert await writer.read(fork.id) == list(loaded.events)


async def test_fork_title_is_the_one_in_force_at_the_cut(store: SessionStore) -> None:
    """A session made by the agent starts untitled; a title set after the cut is not the fork's."""
    session = await new_session(store)
    session.append(ModelBind(model="a", grant_epoch=1))
    inject(session, "context before the first prompt")
    cut = session.state.next_seq
    session.append(SessionTitle(title="later title"))
    full_turn(session)
    await session.flush()
    assert (await store.info(session.id)).title == "later title"
    fork = await store.fork(session.id, cut)
    assert fork.title == ""
    assert (await store.info(fork.id)).title == ""


async def test_loading_twice_adds_one_repair(store_factory: StoreFactory) -> None:
    writer = await store_factory()
    session = await new_session(writer)
    turn = open_turn(session)
    step(session, turn, calls=1, results=0)
    await session.flush()
    await writer.release(session.id)
    reader = await store_factory()
    first = await reader.load(session.id)
    second = await reader.load(session.id)
    assert second.repaired == ()
    assert second.events == first.events
    assert (await reader.info(session.id)).event_count == len(first.events)


async def test_paging_is_stable_when_updated_times_are_equal(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "s.sqlite", clock=lambda: 1_700_000_000.123) as store:
        made = {(await store.create(cwd="/w")).id for _ in range(7)}
        seen: list[str] = []
        cursor: str | None = None
        while True:
            page = await store.list(limit=2, cursor=cursor)
            seen += [s.id for s in page.sessions]
            cursor = page.next_cursor
            if cursor is None:
                break
        assert seen == sorted(made, reverse=True)


async def test_a_dead_writers_lease_is_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    async with SQLiteStore(path) as first:
        session = await new_session(first)
        full_turn(session)
        await session.flush()
        with closing(sqlite3.connect(path)) as conn, conn:
            conn.execute("UPDATE sessions SET lease_pid = ?", (dead_pid(),))
        async with SQLiteStore(path) as second, SQLiteStore(path) as third:
            # two stores race for the dead lease: exactly one wins, the other is told who has it
            results = await asyncio.gather(
                second.load(session.id), third.load(session.id), return_exceptions=True
            )
            errors = [r for r in results if isinstance(r, BaseException)]
            assert len(errors) == 1
            assert isinstance(errors[0], LeaseError)
            assert session.id in str(errors[0])
            assert str(path) in str(errors[0])
            full_turn(session)
            with pytest.raises(LeaseError, match=rf"{session.id}.*lost its writer lease"):
                await session.flush()  # the old holder may not write over the new one
