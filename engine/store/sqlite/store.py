"""`SQLiteStore`: the embedded `SessionStore` — WAL, one row per event, writer leases; reads on
aiosqlite, flushes on a writer thread of its own (`SQLiteWriter`).

Open it with `async with SQLiteStore(path) as store:` (or `await store.open()` ... `await
store.aclose()`).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from engine.events import (
    Event,
)
from engine.invariants import LogState
from engine.store.base import SessionInfo
from engine.store.errors import SearchUnavailableError, StoreError
from engine.store.lease import LeaseHolder, LeasePolicy, check_lease, drop_leases, take_lease
from engine.store.leased_logs import LeasedLogs, Taken
from engine.store.log_view import decode_and_check
from engine.store.queries import (
    SELECT_EVENTS,
    Fetch,
    session_info,
)
from engine.store.search import SearchHit
from engine.store.search_query import SearchQuery
from engine.store.sqlite.database import SQLiteDatabase
from engine.store.sqlite.log_statements import LogWrites
from engine.store.staging import Row, StagedLog


class SQLiteStore(LeasedLogs):
    """Durable session logs in one SQLite file (see `SessionStore` for the contract).

    `busy_timeout` (seconds) is how long a statement waits for another connection's lock before
    `DatabaseLockedError`. Staged batches live in this instance until `flush`. A lease held from another host cannot be probed by pid, so it counts as
    live until its holder has not flushed for `foreign_lease_ttl` seconds.
    """

    def __init__(
        self,
        path: Path,
        *,
        busy_timeout: float = 5.0,
        clock: Callable[[], float] = time.time,
        foreign_lease_ttl: float = 3600.0,
        search_index: bool = True,
    ) -> None:
        self.path = Path(path)
        super().__init__(str(self.path), clock, search_index=search_index)
        self._holder = LeaseHolder()
        self._lease_policy = LeasePolicy(
            holder=self._holder, path=self.path, foreign_ttl=foreign_lease_ttl
        )
        self._db = SQLiteDatabase(self.path, busy_timeout=busy_timeout)
        self._writes = LogWrites(self.path, self._holder.token)

    # --- lifecycle ------------------------------------------------------------------------------

    async def open(self) -> SQLiteStore:
        """Create the directory if needed, connect, switch to WAL and migrate the schema."""
        await self._db.open()
        if self._db.search.unusable is not None:
            self._index.enabled = False  # nothing to feed; `search` says why
        return self

    @property
    def _is_open(self) -> bool:
        return self._db.is_open

    async def _forget_all_leases(self) -> None:
        if self._writers:
            async with self._db.transaction("releasing leases") as conn:
                await drop_leases(conn, self._holder)

    async def _disconnect(self) -> None:
        await self._db.aclose()

    @asynccontextmanager
    async def _reading(self, action: str) -> AsyncIterator[Fetch]:
        async with self._db.transaction(action, write=False) as conn:
            yield self._db.fetch_on(conn)

    @asynccontextmanager
    async def _writing(self, action: str) -> AsyncIterator[Fetch]:
        async with self._db.transaction(action) as conn:
            yield self._db.fetch_on(conn)

    # --- writing --------------------------------------------------------------------------------

    async def create(
        self, *, cwd: str, title: str = "", model: str = "", session_id: str | None = None
    ) -> SessionInfo:
        """A new empty session, leased to this store."""
        sid = session_id or uuid.uuid4().hex
        now = self._clock()
        h = self._holder
        async with self._db.transaction(f"creating session {sid}") as conn:
            if list(await conn.execute_fetchall("SELECT 1 FROM sessions WHERE id = ?", (sid,))):
                raise StoreError(f"{self.path}: a session with id {sid!r} already exists")
            await conn.execute(
                "INSERT INTO sessions (id, cwd, title, model, created, updated, lease_token, "
                "lease_pid, lease_host, lease_heartbeat) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (sid, cwd, title, model, now, now, h.token, h.pid, h.host, now),
            )
        self._writers[sid] = StagedLog.at(sid, 0, LogState())
        return SessionInfo(id=sid, cwd=cwd, title=title, model=model, created=now, updated=now)

    async def _write(self, taken: Taken, now: float) -> None:
        writes = self._writes

        def write(conn: sqlite3.Connection) -> None:
            for w, batch in taken:
                writes.extend(
                    conn, w.session_id, w.stored, batch.rows, now, batch.title, batch.model
                )

        await self._db.run("flushing events", write)

    async def _write_repair(
        self, session_id: str, stored: int, rows: Sequence[Row], now: float
    ) -> None:
        await self._db.run(
            f"repairing session {session_id}",
            lambda conn: self._writes.extend(conn, session_id, stored, rows, now),
        )

    # --- leases ---------------------------------------------------------------------------------

    async def _take_lease(self, session_id: str) -> None:
        async with self._db.transaction(f"taking the lease of session {session_id}") as conn:
            await take_lease(conn, self._lease_policy, session_id, self._clock())

    async def _forget_lease(self, session_id: str) -> None:
        async with self._db.transaction(f"releasing the lease of session {session_id}") as conn:
            await drop_leases(conn, self._holder, session_id)

    # --- loading --------------------------------------------------------------------------------

    async def _read_whole(
        self, session_id: str, action: str, *, checked: bool
    ) -> tuple[SessionInfo, list[Event], LogState]:
        async with self._db.transaction(f"{action} session {session_id}", write=False) as conn:
            info = await session_info(self._db.fetch_on(conn), session_id, str(self.path))
            rows = await conn.execute_fetchall(f"{SELECT_EVENTS} ORDER BY seq", (session_id,))
        # Decoding a long log is CPU work; a worker thread keeps the event loop responsive.
        return await asyncio.to_thread(
            decode_and_check, str(self.path), info, rows, checked=checked
        )

    # --- search ---------------------------------------------------------------------------------

    def _searchable(self) -> None:
        if (why := self._db.search.unusable) is not None:
            raise SearchUnavailableError(f"{self.path}: cannot search: {why}")

    async def _index_some(self, session_ids: Sequence[str] | None, budget: int) -> int:
        self._searchable()
        index = self._db.search
        return await self._db.run(
            "indexing for search", lambda conn: index.index_some(conn, session_ids, budget)
        )

    async def _unindexed(self) -> int:
        async with self._db.transaction("counting unindexed events", write=False) as conn:
            rows = list(
                await conn.execute_fetchall(
                    "SELECT coalesce(sum(event_count - search_indexed), 0) FROM sessions"
                )
            )
        return int(rows[0][0])

    async def _search(
        self, query: SearchQuery, cwd: str | None, limit: int, offset: int
    ) -> list[SearchHit]:
        self._searchable()
        async with self._db.transaction("searching", write=False) as conn:
            return await self._db.search.search(conn, query, cwd=cwd, limit=limit, offset=offset)

    # --- delete ------------------------------------------------------------------------

    async def delete(self, session_id: str) -> None:
        """Remove a session and its events; refused while another live writer holds its lease."""
        now = self._clock()
        async with self._db.transaction(f"deleting session {session_id}") as conn:
            await check_lease(conn, self._lease_policy, session_id, now, "deleting it")
            await self._db.search.forget(conn, session_id)
            await conn.execute("DELETE FROM events WHERE session_id = ?", (session_id,))
            await conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        self._writers.pop(session_id, None)
