"""A session another process writes, shown read-only as it grows (`trellis --resume ID` of a
session whose writer lease is held elsewhere).

On a store that can follow (PostgreSQL) the console shows a replica of the session
(`engine.replica`): its stored tail first, as a resume does, then each turn of the other process as
it is committed, through the bridge and the transcript the live console uses; and it says when the
writer lets go, and who writes it when another process takes it. An SQLite store cannot learn of another process's commits without polling, so there
a held session is refused with one line that says what shows it instead.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import AsyncExitStack, suppress
from functools import partial

from app.tui.screens.main import MainScreen
from engine import replica
from engine.events import Event
from engine.store.base import FollowingStore, SessionStore
from engine.store.errors import LeaseError, StoreError, UnknownSessionError

log = logging.getLogger(__name__)


class FollowedSession:
    """The replica a screen shows and the watch for its writer to let go; `aclose` ends both."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self._stack = AsyncExitStack()

    @classmethod
    async def open(
        cls, store: SessionStore, screen: MainScreen, session_id: str, held: LeaseError
    ) -> FollowedSession:
        """Follow `session_id` on `screen` (mounted, its tail painted) from the first seq it
        has not shown. Raises `held`, saying what to do instead, on a store that cannot follow."""
        if not isinstance(store, FollowingStore):
            raise LeaseError(
                f"{held}; this store cannot show another process's turns as they come "
                f"(a PostgreSQL store can): `trellis replay {session_id}` shows it as stored",
                holder=held.holder,
            ) from None
        followed = cls(session_id)
        try:
            session = await followed._stack.enter_async_context(
                replica.followed_session(store, session_id)
            )
            start = screen.transcript.last_seq + 1
            await screen.follow(session, from_seq=start, holder=held.holder or "another process")
            watch = asyncio.create_task(
                watch_writers(store, session_id, partial(_writer_changed, screen))
            )
            followed._stack.push_async_callback(_stopped, watch)
        except BaseException:
            await followed.aclose()
            raise
        return followed

    async def aclose(self) -> None:
        await self._stack.aclose()


def _writer_changed(screen: MainScreen, holder: str | None) -> None:
    if holder is None:
        screen.writer_let_go()
    else:
        screen.writer_is(holder)


async def _stopped(task: asyncio.Task[None]) -> None:
    task.cancel()
    with suppress(asyncio.CancelledError):
        await task


async def watch_writers(
    store: FollowingStore,
    session_id: str,
    told: Callable[[str | None], None],
    holders: AsyncGenerator[str | None, None] | None = None,
) -> None:
    """Call `told` with each change of the session's writer (another process's name, or None once
    it let go: gave the lease back, or the lease ran out), from `holders` if given (a
    `store.writers` iterator already started), until cancelled. A lost connection to the store
    is waited out as the replica waits it out, then watched again."""
    while True:
        stream = holders if holders is not None else store.writers(session_id)
        holders = None
        try:
            async for holder in stream:
                told(holder)
        except StoreError as lost:
            log.warning("session %s: %s; watching its writer again", session_id, lost)
            await asyncio.sleep(replica.RETRY_AFTER)
        finally:
            await stream.aclose()


async def follow_events(
    store: FollowingStore, session_id: str, from_seq: int, take: Callable[[Event], None]
) -> None:
    """Call `take` with each event of the session from `from_seq` on as it is committed, until
    cancelled or the session is deleted; after a lost connection it follows again from the event
    after the last taken."""
    next_seq = from_seq
    while True:
        stream = store.follow(session_id, next_seq)
        try:
            async for event in stream:
                next_seq = event.seq + 1
                take(event)
        except UnknownSessionError:
            log.warning("session %s: deleted while followed", session_id)
            return
        except StoreError as lost:
            log.warning("session %s: %s; following again from seq %d", session_id, lost, next_seq)
            await asyncio.sleep(replica.RETRY_AFTER)
        finally:
            await stream.aclose()
