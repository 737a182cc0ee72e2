"""`SQLiteStore`: the embedded `SessionStore` on aiosqlite — WAL, one row per event, writer leases.

Open it with `async with SQLiteStore(path) as store:` (or `await store.open()` ... `await
store.close()`).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

import aiosqlite

from engine.events import (
    Event,
)
from engine.invariants import LogState
from engine.store.base import SessionInfo, SessionPage
from engine.store.catalog import list_sessions
from engine.store.errors import StoreError
from engine.store.fork import check_fork_point, value_at
from engine.store.lease import LeaseHolder, LeasePolicy, check_lease, drop_leases, take_lease
from engine.store.leased_logs import LeasedLogs, Taken
from engine.store.log_view import decode, decode_and_check, repair_view
from engine.store.queries import (
    MAX_SEQ,
    SELECT_EVENTS,
    last_turns_rows,
    open_turn_rows,
    range_rows,
    resolve_session,
    session_info,
)
from engine.store.sqlite_db import SQLiteDatabase
from engine.store.sqlite_writes import LogWrites
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
    ) -> None:
        self.path = Path(path)
        super().__init__(str(self.path), clock)
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
        return self

    async def close(self) -> None:
        """Flush what is staged, give back every lease, close the connection; idempotent."""
        if not self._db.is_open:
            return
        try:
            await self.flush()
        finally:
            try:
                if self._writers:
                    async with self._db.transaction("releasing leases") as conn:
                        await drop_leases(conn, self._holder)
            finally:
                self._writers.clear()
                await self._db.close()

    async def __aenter__(self) -> SQLiteStore:
        return await self.open()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _info(self, conn: aiosqlite.Connection, session_id: str) -> SessionInfo:
        return await session_info(self._db.fetch_on(conn), session_id, str(self.path))

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

    async def _open_turn_repair(self, conn: aiosqlite.Connection, session_id: str) -> list[Event]:
        """The repair `inspect` shows, computed from the open turn alone (none if no turn is
        open), so a range read costs what the range and the last turn cost, not the whole log."""
        rows = await open_turn_rows(self._db.fetch_on(conn), session_id)
        return repair_view(decode(str(self.path), session_id, rows))

    async def _read_whole(
        self, session_id: str, action: str
    ) -> tuple[SessionInfo, list[Event], LogState]:
        async with self._db.transaction(f"{action} session {session_id}", write=False) as conn:
            info = await self._info(conn, session_id)
            rows = await conn.execute_fetchall(f"{SELECT_EVENTS} ORDER BY seq", (session_id,))
        # Decoding a long log is CPU work; a worker thread keeps the event loop responsive.
        return await asyncio.to_thread(decode_and_check, str(self.path), info, rows)

    # --- reading --------------------------------------------------------------------------------

    async def read(self, session_id: str, start: int = 0, end: int | None = None) -> list[Event]:
        """Events with `start <= seq <= end` (`end=None`: to the last) of the log as `inspect`
        shows it: stored events, then the repair of an interrupted tail (computed, not written);
        staged events are not included. Raises `ValueError` for a negative start."""
        if start < 0:
            raise ValueError(f"start must be >= 0, got {start}")
        last = MAX_SEQ if end is None else end
        async with self._db.transaction(f"reading session {session_id}", write=False) as conn:
            info = await self._info(conn, session_id)
            rows = await range_rows(self._db.fetch_on(conn), session_id, start, last)
            # a repair follows the stored events, so only a range reaching past them shows it
            reaches_repair = last >= info.event_count
            repaired = await self._open_turn_repair(conn, session_id) if reaches_repair else []
        events = decode(str(self.path), session_id, rows)
        return events + [e for e in repaired if start <= e.seq <= last]

    async def read_last_turns(self, session_id: str, turns: int) -> list[Event]:
        """From the `turn/start` of the `turns`-th last turn to the end (all events if the session
        has fewer turns), so a front end can open a long session at its end. Like `read`, an
        interrupted tail is shown repaired, as `inspect` shows it."""
        if turns < 1:
            raise ValueError(f"turns must be >= 1, got {turns}")
        async with self._db.transaction(f"reading session {session_id}", write=False) as conn:
            await self._info(conn, session_id)
            rows = await last_turns_rows(self._db.fetch_on(conn), session_id, turns)
        events = decode(str(self.path), session_id, rows)
        return [*events, *repair_view(events)]  # the events start at a turn/start

    async def info(self, session_id: str) -> SessionInfo:
        async with self._db.transaction(f"reading session {session_id}", write=False) as conn:
            return await self._info(conn, session_id)

    async def resolve(self, id_or_prefix: str) -> SessionInfo:
        async with self._db.transaction(f"finding session {id_or_prefix}", write=False) as conn:
            return await resolve_session(self._db.fetch_on(conn), id_or_prefix, str(self.path))

    async def list(
        self, *, cwd: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> SessionPage:
        """Newest first (by `updated`, then id); `next_cursor` fetches the following page.

        Raises `ValueError` for a limit below 1 or a cursor this store did not hand out.
        """
        async with self._db.transaction("listing sessions", write=False) as conn:
            return await list_sessions(self._db.fetch_on(conn), cwd=cwd, limit=limit, cursor=cursor)

    # --- fork and delete ------------------------------------------------------------------------

    async def fork(self, session_id: str, at_seq: int) -> SessionInfo:
        """A new session holding the events with seq < `at_seq`; its parent and fork point are
        recorded, and its title and model are those in force at the fork point.

        `at_seq` must be in 1..event_count (a fork copies at least one event) and lie where no
        turn (and no compaction) is open: after a `turn/end` or the out-of-turn events that follow
        it; otherwise `ForkPointError`. The fork is not leased: load it to write to it.
        """
        new_id = uuid.uuid4().hex
        now = self._clock()
        async with self._db.transaction(f"forking session {session_id}") as conn:
            parent = await self._info(conn, session_id)
            fetch = self._db.fetch_on(conn)
            await check_fork_point(fetch, parent, at_seq)
            title = await value_at(fetch, parent, at_seq, "session/title", "title")
            model = await value_at(fetch, parent, at_seq, "model/bind", "model")
            await conn.execute(
                "INSERT INTO sessions (id, cwd, title, model, parent_id, fork_seq, created, "
                "updated, event_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (new_id, parent.cwd, title, model, session_id, at_seq, now, now, at_seq),
            )
            await conn.execute(
                "INSERT INTO events (session_id, seq, time, type, data) "
                "SELECT ?, seq, time, type, data FROM events WHERE session_id = ? AND seq < ?",
                (new_id, session_id, at_seq),
            )
            return await self._info(conn, new_id)

    async def delete(self, session_id: str) -> None:
        """Remove a session and its events; refused while another live writer holds its lease."""
        now = self._clock()
        async with self._db.transaction(f"deleting session {session_id}") as conn:
            await check_lease(conn, self._lease_policy, session_id, now, "deleting it")
            await conn.execute("DELETE FROM events WHERE session_id = ?", (session_id,))
            await conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        self._writers.pop(session_id, None)
