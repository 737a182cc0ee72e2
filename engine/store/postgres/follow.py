"""Following sessions written elsewhere: one listening connection per store, woken by the
notification each flush sends on commit (`<session id> <last seq>`), and each take and release of
a lease (`<session id> taken`, `<session id> released`), never by polling."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import asyncpg

from engine.store.errors import FollowError
from engine.store.postgres.database import PostgresDatabase
from engine.store.postgres.lease import RELEASED, TAKEN

log = logging.getLogger(__name__)


class Wakeup:
    """What one follower of one session waits on: the highest seq notified so far, and whether
    a writer took or gave back the session's lease since `lease_moved` was last cleared."""

    def __init__(self) -> None:
        self.latest = -1
        self.lost: str | None = None
        self.lease_moved = False
        self._changed = asyncio.Event()

    def notified(self, seq: int) -> None:
        if seq > self.latest:
            self.latest = seq
            self._changed.set()

    def moved(self) -> None:
        self.lease_moved = True
        self._changed.set()

    async def lease_change(self) -> None:
        """Return once a writer took or gave back the lease (raise if the connection is lost)."""
        while not self.lease_moved:
            await self._change()

    async def _change(self) -> None:
        if self.lost is not None:
            raise FollowError(self.lost)
        self._changed.clear()
        await self._changed.wait()

    def fail(self, why: str) -> None:
        self.lost = why
        self._changed.set()

    async def past(self, seq: int) -> None:
        """Return once an event after `seq` was committed (raise if the connection is lost)."""
        while self.latest <= seq:
            await self._change()


class Listener:
    """The store's listening connection, opened with the first follower and kept until close."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db
        self._conn: asyncpg.Connection[asyncpg.Record] | None = None
        self._lock = asyncio.Lock()
        self._watchers: dict[str, set[Wakeup]] = {}

    @asynccontextmanager
    async def watch(self, channel: str, session_id: str) -> AsyncIterator[Wakeup]:
        """A wakeup for `session_id`, subscribed before the block starts."""
        await self._listen(channel)
        wakeup = Wakeup()
        self._watchers.setdefault(session_id, set()).add(wakeup)
        try:
            yield wakeup
        finally:
            watchers = self._watchers.get(session_id, set())
            watchers.discard(wakeup)
            if not watchers:
                self._watchers.pop(session_id, None)

    async def _listen(self, channel: str) -> None:
        async with self._lock:
            if self._conn is not None and not self._conn.is_closed():
                return
            with self._db.faults("listening for new events"):
                conn = await asyncpg.connect(**self._db.connect_args())
                try:
                    await conn.add_listener(channel, self._on_notify)
                except BaseException:
                    await conn.close()
                    raise
            conn.add_termination_listener(self._on_lost)
            self._conn = conn

    def _on_notify(self, _conn: object, _pid: int, _channel: str, payload: object) -> None:
        session_id, _, what = str(payload).rpartition(" ")
        for wakeup in self._watchers.get(session_id, ()):
            if what in (RELEASED, TAKEN):
                wakeup.moved()
            else:
                wakeup.notified(int(what))

    def _on_lost(self, _conn: object) -> None:
        why = f"{self._db.shown}: the connection that follows sessions was lost"
        log.warning("%s", why)
        for watchers in self._watchers.values():
            for wakeup in watchers:
                wakeup.fail(why)
        self._conn = None

    async def aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        conn.remove_termination_listener(self._on_lost)
        for watchers in self._watchers.values():
            for wakeup in watchers:
                wakeup.fail(f"{self._db.shown}: the store was closed")
        with suppress(asyncpg.PostgresError, OSError, asyncpg.InterfaceError):
            await conn.close()
