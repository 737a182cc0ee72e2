"""A read-only `Session` that follows a session another process writes.

A second `trellis serve` answering `session/load`, or a console watching a session, reads through
the ordinary Session API: `subscribe(fn, from_seq=N)` and `stream(from_seq)` deliver the stored
events and then each one as the writer commits it (`FollowingStore.follow`), with no gap.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

from engine.session import Session
from engine.store.base import FollowingStore


@asynccontextmanager
async def followed_session(store: FollowingStore, session_id: str) -> AsyncIterator[Session]:
    """A Session without a store, fed the followed events for as long as the block runs.

    Each event is appended with its stored time (the replica's clock is the event's), so the
    replica's events equal the stored ones and its invariants are checked as the writer's were.
    """
    stamp = 0.0
    session = Session(session_id, None, clock=lambda: stamp)

    async def pump() -> None:
        nonlocal stamp
        async for event in store.follow(session_id, 0):
            stamp = event.time
            session.append(event.data)

    task = asyncio.create_task(pump(), name=f"following session {session_id}")
    try:
        yield session
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task
