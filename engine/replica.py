"""A read-only `Session` that follows a session another process writes.

A second `trellis serve` answering `session/load`, or a console watching a session, reads through
the ordinary Session API: `subscribe(fn, from_seq=N)` and `stream(from_seq)` deliver the stored
events and then each one as the writer commits it (`FollowingStore.follow`), with no gap.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

from engine.session import Session
from engine.store.base import FollowingStore
from engine.store.errors import StoreError, UnknownSessionError

log = logging.getLogger(__name__)

RETRY_AFTER = 1.0
"""Seconds before following again once the notification connection was lost (a restarted
server); the replica goes on from the last event it holds, so nothing is skipped."""


@asynccontextmanager
async def followed_session(store: FollowingStore, session_id: str) -> AsyncIterator[Session]:
    """A Session without a store, fed the followed events for as long as the block runs.

    The block starts once the replica holds every event stored when it was called, so a reader
    that replays `held` then streams from its end shows the whole log. Each event is appended
    with its stored time (the replica's clock is the event's), so the replica's events equal the
    stored ones and its invariants are checked as the writer's were. Raises
    `UnknownSessionError` for an unknown session, and the store's error if the first catch-up
    fails; a connection lost later is followed again from the last event held.
    """
    stamp = 0.0
    session = Session(session_id, None, clock=lambda: stamp)
    stored = (await store.info(session_id)).event_count
    reached = asyncio.Event()
    if stored == 0:
        reached.set()

    async def pump() -> None:
        nonlocal stamp
        while True:
            try:
                async for event in store.follow(session_id, session.next_seq):
                    stamp = event.time
                    session.append(event.data)
                    if event.seq + 1 >= stored:
                        reached.set()
            except UnknownSessionError:
                if not reached.is_set():
                    raise
                log.warning("session %s: deleted while followed", session_id)
                return
            except StoreError as lost:  # the server away: follow again from what is held
                if not reached.is_set():
                    raise
                log.warning(
                    "session %s: %s; following again from seq %d",
                    session_id,
                    lost,
                    session.next_seq,
                )
                await asyncio.sleep(RETRY_AFTER)
            except Exception:
                if not reached.is_set():
                    raise
                log.exception("session %s: following stopped", session_id)
                return

    task = asyncio.create_task(pump(), name=f"following session {session_id}")
    caught_up = asyncio.create_task(reached.wait())
    try:
        await asyncio.wait((task, caught_up), return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            task.result()  # the first catch-up failed: its error
        yield session
    finally:
        caught_up.cancel()
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task
