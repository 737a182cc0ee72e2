"""What `trellis replay ID` plays: the stored log, and on a store that can follow (PostgreSQL) the
events another process commits while the screen is open, and who writes them.

While another process holds the session's writer lease, its open turn is the writer's, not a
crash: the log is shown as written (the repair `inspect` computes is left out) and followed from
its end. A session no one writes is shown as `inspect` shows it, its computed repair included, and
followed from there: a writer that takes it later writes that same repair (stamped with its own
time) before its turns. On SQLite, which cannot learn of another process's commits without
polling, the log is shown as stored when the screen opened.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Protocol

from app.tui.following import follow_events, watch_writers
from engine.events import Event
from engine.store.base import FollowingStore, SessionInfo, SessionStore


class ReplayFollower(Protocol):
    """What a followed replay tells its screen."""

    def extend(self, event: Event) -> None:
        """The next event of the log, committed by its writer."""

    def writer_is(self, holder: str | None) -> None:
        """Who writes the session now (None: no one; its writer let go)."""


class FollowedLog:
    """The feed of a replay that follows: `run` tells a screen each new event and each change of
    writer until it is cancelled; `aclose` ends what `open` started."""

    def __init__(
        self,
        store: FollowingStore,
        session_id: str,
        holders: AsyncGenerator[str | None, None],
        holder: str | None,
        from_seq: int,
    ) -> None:
        self.session_id = session_id
        self.holder = holder  # the writer when the log was read (None: no one)
        self._store = store
        self._holders = holders
        self._from_seq = from_seq

    async def run(self, screen: ReplayFollower) -> None:
        """Feed `screen` until cancelled."""
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(
                watch_writers(self._store, self.session_id, screen.writer_is, self._holders)
            )
            tasks.create_task(
                follow_events(self._store, self.session_id, self._from_seq, screen.extend)
            )

    async def aclose(self) -> None:
        await self._holders.aclose()


@dataclass(frozen=True, slots=True)
class ReplayLog:
    """A session to replay: its record, its events so far, and the feed of those to come."""

    info: SessionInfo
    events: Sequence[Event]
    followed: FollowedLog | None


async def load_replay_log(store: SessionStore, session_id: str) -> ReplayLog:
    """The session's log to replay, read without a lease, followed where the store can."""
    if not isinstance(store, FollowingStore):
        loaded = await store.inspect(session_id)
        return ReplayLog(loaded.info, loaded.events, None)
    # listening before the lease and the log are read: no change after them goes unseen
    holders = store.writers(session_id)
    try:
        holder = await anext(holders)
        loaded = await store.inspect(session_id)
    except BaseException:
        await holders.aclose()
        raise
    events = loaded.events if holder is None else loaded.events[: loaded.info.event_count]
    followed = FollowedLog(store, session_id, holders, holder, from_seq=len(events))
    return ReplayLog(loaded.info, events, followed)
