"""`PostgresStore`: the `SessionStore` on a PostgreSQL server (asyncpg), for several `trellis serve`
processes, on several hosts, sharing sessions.

Open it with `async with PostgresStore(url) as store:`. The same contract suite as `SQLiteStore`
runs against it (tests/store/test_contract.py). Beyond the contract it follows a session written
by another process (`follow`): every flush notifies the session's id and last seq on commit, and a
follower reads the events by range.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager, suppress

import asyncpg

from engine.events import Event
from engine.invariants import LogState
from engine.store.base import SessionInfo
from engine.store.errors import SequenceError, StoreError
from engine.store.lease import LeaseHolder
from engine.store.leased_logs import LeasedLogs, Taken
from engine.store.log_view import decode, decode_and_check
from engine.store.postgres import lease as pg_lease
from engine.store.postgres import search as pg_search
from engine.store.postgres.database import PostgresDatabase, fetch_on
from engine.store.postgres.follow import Listener
from engine.store.postgres.schema import DEFAULT_SCHEMA, Connection
from engine.store.queries import (
    SELECT_EVENTS,
    Fetch,
    numbered,
    session_info,
)
from engine.store.search import SearchHit
from engine.store.search_query import SearchQuery
from engine.store.staging import Row, StagedLog, rows_of

log = logging.getLogger(__name__)

_FLUSH = f"""WITH fence AS ({pg_lease.FENCE}),
advanced AS (
    UPDATE sessions SET event_count = $4, updated = $5, title = coalesce($6, title),
        model = coalesce($7, model)
    WHERE id = $1 AND event_count = $8 AND EXISTS (SELECT FROM fence)
    RETURNING pg_notify($9, $1 || ' ' || ($4 - 1))
),
inserted AS (
    INSERT INTO events (session_id, seq, time, type, data)
    SELECT $1, r.seq, r.at, r.kind, r.data
    FROM unnest($10::bigint[], $11::float8[], $12::text[], $13::text[]) AS r(seq, at, kind, data)
    WHERE EXISTS (SELECT FROM advanced)
)
SELECT EXISTS (SELECT FROM fence) AS fenced, EXISTS (SELECT FROM advanced) AS advanced"""
"""A batch of one session in one statement, so one round trip: the lease fence, the session's
count advanced only from the count the writer expects (notifying followers on commit), the rows.
Each step runs only if the one before it matched, and the result says which did."""
_FOLLOW_CHUNK = 1000
_EXPIRY_MARGIN = 0.05
"""Seconds past a lease's expiry before it is checked again: the server's clock decides."""


class PostgresStore(LeasedLogs):
    """Durable session logs in one PostgreSQL schema (see `SessionStore` for the contract).

    `password` is the server's password (never in `url`; None: `PGPASSFILE` or none). `schema`
    is where the tables live. A lease lives `lease_ttl` seconds past its holder's last heartbeat;
    the holder renews it every third of that while it runs, and on every flush.
    """

    def __init__(
        self,
        url: str,
        *,
        password: str | None = None,
        schema: str = DEFAULT_SCHEMA,
        busy_timeout: float = 5.0,
        clock: Callable[[], float] = time.time,
        lease_ttl: float = pg_lease.DEFAULT_TTL,
        search_index: bool = True,
    ) -> None:
        self._db = PostgresDatabase(
            url, password=password, schema=schema, busy_timeout=busy_timeout
        )
        self.shown = self._db.shown
        super().__init__(self.shown, clock, search_index=search_index)
        self._ttl = lease_ttl
        self._holder = LeaseHolder()
        self._heartbeat: asyncio.Task[None] | None = None
        self._lost: dict[str, StagedLog] = {}  # the writers whose lost lease was logged
        self._listener = Listener(self._db)

    @property
    def channel(self) -> str:
        """The notification channel of this store's schema."""
        return f"trellis_events.{self._db.schema}"

    # --- lifecycle ------------------------------------------------------------------------------

    async def open(self) -> PostgresStore:
        """Connect and migrate the schema; start renewing the leases this store will hold."""
        await self._db.open()
        if self._heartbeat is None:
            self._heartbeat = asyncio.create_task(self._beat(), name="trellis lease heartbeat")
        return self

    @property
    def _is_open(self) -> bool:
        return self._db.is_open

    async def _forget_all_leases(self) -> None:
        await self._stop_heartbeat()
        if self._writers:
            async with self._db.transaction("releasing leases") as conn:
                await pg_lease.drop(conn, self._holder, self.channel)

    async def _disconnect(self) -> None:
        try:
            await self._listener.aclose()
        finally:
            await self._db.aclose()

    @asynccontextmanager
    async def _reading(self, action: str) -> AsyncIterator[Fetch]:
        async with self._db.transaction(action) as conn:
            # one snapshot: the session's row and its events agree even while a writer flushes
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            yield fetch_on(conn)

    @asynccontextmanager
    async def _writing(self, action: str) -> AsyncIterator[Fetch]:
        async with self._db.transaction(action) as conn:
            yield fetch_on(conn)

    async def _stop_heartbeat(self) -> None:
        task, self._heartbeat = self._heartbeat, None
        if task is not None:
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task

    async def _beat(self) -> None:
        """Renew this store's leases every third of their time to live. A lease taken over is
        logged once; the session's next flush is refused by the fence, naming the new holder."""
        while True:
            await asyncio.sleep(self._ttl / 3)
            # leases taken before the renewal starts: one taken meanwhile is not judged by it
            writers = dict(self._writers)
            if not writers:
                continue
            try:
                async with self._db.transaction("renewing leases") as conn:
                    held = await pg_lease.heartbeat(conn, self._holder, self._ttl)
            except StoreError as exc:
                log.warning("%s", exc)  # the server is away: try again at the next beat
                continue
            for session_id, writer in writers.items():
                if session_id not in held and self._lost.get(session_id) is not writer:
                    self._lost[session_id] = writer
                    log.warning("session %s: the writer lease was taken over", session_id)

    # --- writing --------------------------------------------------------------------------------

    async def create(
        self, *, cwd: str, title: str = "", model: str = "", session_id: str | None = None
    ) -> SessionInfo:
        """A new empty session, leased to this store."""
        sid = session_id or uuid.uuid4().hex
        now = self._clock()
        async with self._db.transaction(f"creating session {sid}") as conn:
            created = await conn.fetchval(
                "INSERT INTO sessions (id, cwd, title, model, created, updated) "
                "VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (id) DO NOTHING RETURNING 1",
                sid,
                cwd,
                title,
                model,
                now,
            )
            if not created:
                raise StoreError(f"{self.shown}: a session with id {sid!r} already exists")
            await pg_lease.take(conn, self._holder, sid, self._ttl, self.shown, self.channel)
        self._writers[sid] = StagedLog.at(sid, 0, LogState())
        return SessionInfo(id=sid, cwd=cwd, title=title, model=model, created=now, updated=now)

    async def _write(self, taken: Taken, now: float) -> None:
        await _to_its_end(asyncio.ensure_future(self._write_batches(taken, now)))

    async def _write_repair(
        self, session_id: str, stored: int, rows: Sequence[Row], now: float
    ) -> None:
        async with self._db.transaction(f"repairing session {session_id}") as conn:
            await self._extend(conn, session_id, stored, rows, now)

    async def _write_batches(self, taken: Taken, now: float) -> None:
        if len(taken) == 1:  # one statement is a transaction of its own: no BEGIN, no COMMIT
            ((w, batch),) = taken
            async with self._db.connection("flushing events") as conn:
                await self._extend(
                    conn, w.session_id, w.stored, batch.rows, now, batch.title, batch.model
                )
            return
        async with self._db.transaction("flushing events") as conn:
            for w, batch in taken:
                await self._extend(
                    conn, w.session_id, w.stored, batch.rows, now, batch.title, batch.model
                )

    async def _extend(
        self,
        conn: Connection,
        session_id: str,
        stored: int,
        rows: Sequence[Row],
        now: float,
        title: str | None = None,
        model: str | None = None,
    ) -> None:
        """Append `rows` after the `stored` events, if this store still holds the lease and the
        stored log is the one they extend; commit notifies followers of the last seq."""
        _, seqs, times, kinds, data = zip(*rows, strict=True) if rows else ((),) * 5
        row = await conn.fetchrow(
            _FLUSH,
            session_id,
            self._holder.token,
            self._ttl,
            stored + len(rows),
            now,
            title,
            model,
            stored,
            self.channel,
            seqs,
            times,
            kinds,
            data,
        )
        assert row is not None
        if not row["fenced"]:
            await pg_lease.lost(conn, session_id, self.shown)
        if not row["advanced"]:
            count = await conn.fetchval(
                "SELECT event_count FROM sessions WHERE id = $1", session_id
            )
            raise SequenceError(
                f"{self.shown}: session {session_id!r} has {count} stored events, "
                f"this writer expected {stored}"
            )

    # --- leases ---------------------------------------------------------------------------------

    async def _take_lease(self, session_id: str) -> None:
        async with self._db.transaction(f"taking the lease of session {session_id}") as conn:
            await pg_lease.take(conn, self._holder, session_id, self._ttl, self.shown, self.channel)

    async def _forget_lease(self, session_id: str) -> None:
        async with self._db.transaction(f"releasing the lease of session {session_id}") as conn:
            await pg_lease.drop(conn, self._holder, self.channel, session_id)

    # --- loading --------------------------------------------------------------------------------

    async def _read_whole(
        self, session_id: str, action: str, *, checked: bool
    ) -> tuple[SessionInfo, list[Event], LogState]:
        async with self._reading(f"{action} session {session_id}") as fetch:
            info = await session_info(fetch, session_id, self.shown)
            rows = await fetch(f"{SELECT_EVENTS} ORDER BY seq", (session_id,))
        return await asyncio.to_thread(decode_and_check, self.shown, info, rows, checked=checked)

    # --- following ------------------------------------------------------------------------------

    async def follow(self, session_id: str, from_seq: int = 0) -> AsyncGenerator[Event, None]:
        """The stored events from `from_seq`, then each event as another process (or this one)
        commits it, in order, with no gap and no duplicate; it never ends by itself.

        Woken by the notification each flush sends on commit, not by polling: the listener is
        subscribed before the first read, so a flush between the read and the wait still wakes
        it. Raises `UnknownSessionError` for an unknown session, `FollowError` if the
        notification connection is lost (nothing after the last event yielded is skipped: follow
        again from there).
        """
        next_seq = max(from_seq, 0)
        async with self._listener.watch(self.channel, session_id) as wakeup:
            await self.info(session_id)
            while True:
                rows = await self._rows_from(session_id, next_seq)
                for event in decode(self.shown, session_id, rows):
                    next_seq = event.seq + 1
                    yield event
                if len(rows) < _FOLLOW_CHUNK:
                    await wakeup.past(next_seq - 1)

    async def writers(self, session_id: str) -> AsyncGenerator[str | None, None]:
        """Who else writes the session: the holder of another process's live lease (named as
        `LeaseError.holder` names it), or None; at once, then each time that changes.

        Woken by the notification each take and release of a lease sends, not by polling; a
        holder that crashed or was stopped sends nothing, so its lease is looked at again when
        it would expire (the server's clock decides). Raises `FollowError` if the notification
        connection is lost.
        """
        loop = asyncio.get_running_loop()
        async with self._listener.watch(self.channel, session_id) as wakeup:
            told: list[str | None] = []  # the last holder yielded, once there is one
            while True:
                wakeup.lease_moved = False  # a change after this look wakes the wait below
                async with self._db.connection(f"reading the lease of {session_id}") as conn:
                    other = await pg_lease.other_writer(conn, self._holder, session_id)
                expiry = None if other is None else loop.time() + other.expires_in
                holder = None if other is None else other.holder
                if told != [holder]:
                    told = [holder]
                    yield holder
                with suppress(TimeoutError):
                    async with asyncio.timeout_at(
                        None if expiry is None else expiry + _EXPIRY_MARGIN
                    ):
                        await wakeup.lease_change()

    async def _rows_from(self, session_id: str, start: int) -> Sequence[asyncpg.Record]:
        """One statement, one round trip: a follower reads as soon as it is woken."""
        return await self._db.fetch(
            f"following session {session_id}",
            f"{_numbered_select()} AND seq >= $2 ORDER BY seq LIMIT $3",
            session_id,
            start,
            _FOLLOW_CHUNK,
        )

    # --- copying in (engine.store.copy) --------------------------------------------------------

    async def stored_extent(self, session_id: str) -> tuple[int, int] | None:
        """How many events are stored and the last seq, counted in the events table (None for
        an unknown session): what a copy is verified by."""
        async with self._db.transaction(f"counting session {session_id}") as conn:
            if await conn.fetchval("SELECT 1 FROM sessions WHERE id = $1", session_id) is None:
                return None
            row = await conn.fetchrow(
                "SELECT count(*), coalesce(max(seq), -1) FROM events WHERE session_id = $1",
                session_id,
            )
        assert row is not None
        return int(row[0]), int(row[1])

    async def import_session(self, info: SessionInfo, events: Sequence[Event]) -> None:
        """Store a session from another store as it is there (row and events), unleased."""
        async with self._db.transaction(f"copying session {info.id}") as conn:
            await conn.execute(
                "INSERT INTO sessions (id, cwd, title, model, parent_id, fork_seq, created, "
                "updated, event_count) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                info.id,
                info.cwd,
                info.title,
                info.model,
                info.parent_id,
                info.fork_seq,
                info.created,
                info.updated,
                len(events),
            )
            await conn.copy_records_to_table(
                "events",
                records=rows_of(info.id, events),
                columns=("session_id", "seq", "time", "type", "data"),
                schema_name=self._db.schema,
            )

    # --- search ---------------------------------------------------------------------------------

    async def _index_some(self, session_ids: Sequence[str] | None, budget: int) -> int:
        async with self._db.transaction("indexing for search") as conn:
            return await pg_search.index_some(conn, session_ids, budget)

    async def _unindexed(self) -> int:
        async with self._db.transaction("counting unindexed events") as conn:
            count = await conn.fetchval(
                "SELECT coalesce(sum(event_count - search_indexed), 0) FROM sessions"
            )
        return int(count)

    async def _search(
        self, query: SearchQuery, cwd: str | None, limit: int, offset: int
    ) -> list[SearchHit]:
        async with self._db.transaction("searching") as conn:
            return await pg_search.search(conn, query, cwd=cwd, limit=limit, offset=offset)

    # --- delete ------------------------------------------------------------------------

    async def delete(self, session_id: str) -> None:
        """Remove a session and its events; refused while another live writer holds its lease."""
        async with self._db.transaction(f"deleting session {session_id}") as conn:
            await pg_lease.check(conn, self._holder, session_id, self.shown, "deleting it")
            await conn.execute("DELETE FROM events WHERE session_id = $1", session_id)
            await conn.execute("DELETE FROM search_docs WHERE session_id = $1", session_id)
            await conn.execute("DELETE FROM leases WHERE session_id = $1", session_id)
            await conn.execute("DELETE FROM sessions WHERE id = $1", session_id)
        self._writers.pop(session_id, None)


def _numbered_select() -> str:
    """`SELECT_EVENTS` with its one placeholder numbered: `$1` is the session id."""
    return numbered(SELECT_EVENTS)


async def _to_its_end(task: asyncio.Future[None]) -> None:
    """Await a transaction to its outcome even if the caller is cancelled meanwhile: a failure
    is raised, a commit returns, and the cancellation reaches the caller at its next await, so
    it records what was committed first (as `SQLiteDatabase.run` does)."""
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.cancelled():
                raise
            cancelled = True
    if cancelled and (current := asyncio.current_task()) is not None:
        current.cancel()
    task.result()
