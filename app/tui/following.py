"""A session another process writes, shown read-only as it grows (`trellis --resume ID` of a
session whose writer lease is held elsewhere).

On a store that can follow (PostgreSQL) the console shows a replica of the session
(`engine.replica`): its stored tail first, as a resume does, then each turn of the other process as
it is committed, through the bridge and the transcript the live console uses; and it says when the
writer lets go. An SQLite store cannot learn of another process's commits without polling, so there
a held session is refused with one line that says what shows it instead.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import AsyncExitStack, suppress

from app.tui.screens.main import MainScreen
from engine import replica
from engine.store.base import FollowingStore, SessionStore
from engine.store.errors import LeaseError, StoreError

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
            watch = asyncio.create_task(_until_let_go(store, session_id, screen))
            followed._stack.push_async_callback(_stopped, watch)
        except BaseException:
            await followed.aclose()
            raise
        return followed

    async def aclose(self) -> None:
        await self._stack.aclose()


async def _stopped(task: asyncio.Task[None]) -> None:
    task.cancel()
    with suppress(asyncio.CancelledError):
        await task


async def _until_let_go(store: FollowingStore, session_id: str, screen: MainScreen) -> None:
    """Tell `screen` once the session's writer gave it back or its lease ran out; a lost
    connection to the store is waited out as the replica waits it out."""
    while True:
        try:
            await store.until_released(session_id)
        except StoreError as lost:
            log.warning("session %s: %s; watching its writer again", session_id, lost)
            await asyncio.sleep(replica.RETRY_AFTER)
            continue
        screen.writer_let_go()
        return
