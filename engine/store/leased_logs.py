"""What every store does the same around its database: staging batches for the sessions it holds
the lease of, flushing them together, loading (with the tail repair committed), inspecting, range
reads, finding, listing and forking sessions.

Each store supplies the database half: a read and a write transaction (a `Fetch` that runs the
shared SQL), taking and dropping a lease, writing batches in one transaction, writing a repair,
reading a whole log.
"""

from __future__ import annotations

import builtins
import uuid
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, suppress
from dataclasses import replace
from types import TracebackType
from typing import ClassVar, Self

from engine.events import Event
from engine.invariants import LogState
from engine.store.base import LoadedSession, SessionInfo, SessionPage
from engine.store.errors import LeaseError, StoreError
from engine.store.fork import check_fork_point, value_at
from engine.store.indexing import BATCH, BackgroundIndex
from engine.store.log_view import decode, repair, repair_view
from engine.store.queries import (
    MAX_SEQ,
    Fetch,
    last_turns_rows,
    open_turn_rows,
    range_rows,
    resolve_session,
    session_info,
)
from engine.store.search import SEARCH_LIMIT, SearchHit
from engine.store.search_query import SearchQuery, parse_query
from engine.store.session_list import list_sessions
from engine.store.staging import Batch, Row, StagedLog, rows_of

Taken = Sequence[tuple[StagedLog, Batch]]


class LeasedLogs(ABC):
    """The writer half of a `SessionStore`; `where` names the store in messages."""

    flush_runs_to_its_end: ClassVar[bool] = True
    """`flush` writes through `_write`, which waits for the outcome of a transaction it started
    when its caller is cancelled and passes the cancellation on at the caller's next await
    (`SessionStore`)."""

    def __init__(
        self, where: str, clock: Callable[[], float], *, search_index: bool = True
    ) -> None:
        self._where = where
        self._clock = clock
        self._writers: dict[str, StagedLog] = {}
        self._index = BackgroundIndex(self._index_some, enabled=search_index)
        """Feeds the search index after flushes; `search_index=False` leaves that to others
        (`update_index`), as a benchmark's baseline does."""

    # --- the database half ----------------------------------------------------------------------

    @abstractmethod
    async def open(self) -> Self: ...

    @property
    @abstractmethod
    def _is_open(self) -> bool: ...

    @abstractmethod
    async def _forget_all_leases(self) -> None:
        """Give back, in the database, every lease this store holds."""

    @abstractmethod
    async def _disconnect(self) -> None: ...

    @abstractmethod
    def _reading(self, action: str) -> AbstractAsyncContextManager[Fetch]:
        """A read transaction that sees one snapshot; its errors name `action`."""

    @abstractmethod
    def _writing(self, action: str) -> AbstractAsyncContextManager[Fetch]:
        """A write transaction; its errors name `action`."""

    @abstractmethod
    async def _take_lease(self, session_id: str) -> None: ...

    @abstractmethod
    async def _forget_lease(self, session_id: str) -> None:
        """Give back the session's lease in the database."""

    @abstractmethod
    async def _write(self, taken: Taken, now: float) -> None:
        """Every batch in one transaction, each after its writer's stored count, if this store
        still holds its lease; raises (and writes nothing) otherwise. A caller cancelled
        meanwhile still waits for the outcome, then is cancelled at its next await."""

    @abstractmethod
    async def _write_repair(
        self, session_id: str, stored: int, rows: Sequence[Row], now: float
    ) -> None: ...

    @abstractmethod
    async def _index_some(self, session_ids: Sequence[str] | None, budget: int) -> int:
        """Index up to about `budget` waiting events of `session_ids` (None: any session) in
        one transaction; how many it covered (0: nothing waits). `SearchUnavailableError` if
        the store cannot search."""

    @abstractmethod
    async def _unindexed(self) -> int:
        """Events of every session the index has not seen yet."""

    @abstractmethod
    async def _search(
        self, query: SearchQuery, cwd: str | None, limit: int, offset: int
    ) -> builtins.list[SearchHit]: ...

    @abstractmethod
    async def _read_whole(
        self, session_id: str, action: str, *, checked: bool
    ) -> tuple[SessionInfo, list[Event], LogState]:
        """The stored log decoded, and its state at the end (`log_view.decode_and_check`)."""

    # --- writing --------------------------------------------------------------------------------

    async def append(self, session_id: str, events: Sequence[Event]) -> None:
        """Stage a batch; it must continue the stored and staged log and keep its invariants.

        Raises `LeaseError` unless this store holds the session's lease, `SequenceError` for a seq
        gap or overlap or a broken invariant; a refused batch stages nothing.
        """
        writer = self._writers.get(session_id)
        if writer is None:
            await self.info(session_id)  # an unknown id is UnknownSessionError, not a lease problem
            raise LeaseError(
                f"{self._where}: this store does not hold the writer lease of session "
                f"{session_id!r}; load it first"
            )
        writer.stage(events)

    async def flush(self, session_id: str | None = None) -> None:
        """Write every staged batch (of one session, or of all) in one transaction and commit.

        On any failure nothing is written, the staged batches are discarded, and a `StoreError`
        says why; the writer stages its events again.
        """
        ids = list(self._writers) if session_id is None else [session_id]
        batches = [w for sid in ids if (w := self._writers.get(sid)) and w.rows]
        if not batches:
            return
        taken = [(w, w.take()) for w in batches]
        try:
            await self._write(taken, self._clock())
        except BaseException:
            for w, _ in taken:
                w.discard()
            raise
        for w, batch in taken:
            w.stored_batch(batch)
        self._index.flushed([w.session_id for w, _ in taken])

    # --- leases ---------------------------------------------------------------------------------

    async def _drop_lease(self, session_id: str) -> None:
        self._writers.pop(session_id, None)
        await self._forget_lease(session_id)

    async def release(self, session_id: str) -> None:
        """Flush the session's staged batches, then give its lease back (no-op if not held).

        If the flush fails the lease is kept, so the writer can stage and flush again.
        """
        if session_id not in self._writers:
            return
        await self.flush(session_id)
        await self._drop_lease(session_id)

    # --- loading --------------------------------------------------------------------------------

    async def load(self, session_id: str) -> LoadedSession:
        """The whole log, for writing: takes the lease and commits the repair of an open turn.

        Reloading a session this store already holds starts again from what is stored; staged
        batches are dropped.
        """
        events: list[Event] = []

        async def whole() -> tuple[SessionInfo, LogState]:
            info, read, state = await self._read_whole(session_id, "loading", checked=False)
            events.extend(read)
            return info, state

        info, repaired = await self._open_writer(session_id, whole)
        return LoadedSession(info=info, events=(*events, *repaired), repaired=tuple(repaired))

    async def acquire(self, session_id: str) -> SessionInfo:
        """Like `load` (the lease taken, an interrupted tail repaired and committed, staged
        batches dropped), but reads only the log's last turn: the writer's position and the
        repair follow from it."""

        async def last_turn() -> tuple[SessionInfo, LogState]:
            async with self._reading(f"opening session {session_id}") as fetch:
                info = await session_info(fetch, session_id, self._where)
                rows = await last_turns_rows(fetch, session_id, 1)
            state = LogState.following(decode(self._where, session_id, rows))
            state.next_seq = info.event_count
            return info, state

        info, _ = await self._open_writer(session_id, last_turn)
        return info

    async def _open_writer(
        self, session_id: str, position: Callable[[], Awaitable[tuple[SessionInfo, LogState]]]
    ) -> tuple[SessionInfo, list[Event]]:
        """Take the lease, find the log's end (`position`), commit the repair of an interrupted
        tail and stage from there; returns the session after the repair, and the repair. The
        lease is given back if any of it fails."""
        self._writers.pop(session_id, None)
        await self._take_lease(session_id)
        try:
            info, state = await position()
            repaired = repair(state, self._clock())
            if repaired:
                now = self._clock()
                stored = info.event_count
                await self._write_repair(session_id, stored, rows_of(session_id, repaired), now)
                for event in repaired:
                    state.apply(event)
                info = replace(info, event_count=stored + len(repaired), updated=now)
        except BaseException:
            with suppress(StoreError):
                await self._drop_lease(session_id)
            raise
        self._writers[session_id] = StagedLog.at(session_id, info.event_count, state)
        return info, repaired

    async def inspect(self, session_id: str) -> LoadedSession:
        """The whole log, for reading: no lease; the repair is computed but not written.

        `info` describes what is stored, so its `event_count` excludes the repair.
        """
        info, events, state = await self._read_whole(session_id, "inspecting", checked=True)
        repaired = repair(state, events[-1].time if events else 0.0)
        return LoadedSession(info=info, events=(*events, *repaired), repaired=tuple(repaired))

    # --- reading --------------------------------------------------------------------------------

    async def read(self, session_id: str, start: int = 0, end: int | None = None) -> list[Event]:
        """Events with `start <= seq <= end` (`end=None`: to the last) of the log as `inspect`
        shows it: stored events, then the repair of an interrupted tail (computed, not written);
        staged events are not included. Raises `ValueError` for a negative start."""
        if start < 0:
            raise ValueError(f"start must be >= 0, got {start}")
        last = MAX_SEQ if end is None else end
        async with self._reading(f"reading session {session_id}") as fetch:
            info = await session_info(fetch, session_id, self._where)
            rows = await range_rows(fetch, session_id, start, last)
            # a repair follows the stored events, so only a range reaching past them shows it;
            # it is computed from the open turn alone, so paging costs what the page costs
            tail = await open_turn_rows(fetch, session_id) if last >= info.event_count else []
        events = decode(self._where, session_id, rows)
        repaired = repair_view(decode(self._where, session_id, tail))
        return events + [e for e in repaired if start <= e.seq <= last]

    async def read_last_turns(self, session_id: str, turns: int) -> list[Event]:
        """From the `turn/start` of the `turns`-th last turn to the end (all events if the session
        has fewer turns), so a front end can open a long session at its end. Like `read`, an
        interrupted tail is shown repaired, as `inspect` shows it."""
        if turns < 1:
            raise ValueError(f"turns must be >= 1, got {turns}")
        async with self._reading(f"reading session {session_id}") as fetch:
            await session_info(fetch, session_id, self._where)
            rows = await last_turns_rows(fetch, session_id, turns)
        events = decode(self._where, session_id, rows)
        return [*events, *repair_view(events)]  # the events start at a turn/start

    async def info(self, session_id: str) -> SessionInfo:
        async with self._reading(f"reading session {session_id}") as fetch:
            return await session_info(fetch, session_id, self._where)

    async def resolve(self, id_or_prefix: str) -> SessionInfo:
        async with self._reading(f"finding session {id_or_prefix}") as fetch:
            return await resolve_session(fetch, id_or_prefix, self._where)

    async def list(
        self, *, cwd: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> SessionPage:
        """Newest first (by `updated`, then id); `next_cursor` fetches the following page.

        Raises `ValueError` for a limit below 1 or a cursor this store did not hand out.
        """
        async with self._reading("listing sessions") as fetch:
            return await list_sessions(fetch, cwd=cwd, limit=limit, cursor=cursor)

    # --- search -------------------------------------------------------------------------------

    async def search(
        self, text: str, *, cwd: str | None = None, limit: int = SEARCH_LIMIT, offset: int = 0
    ) -> builtins.list[SearchHit]:
        """The events whose text matches `text` (`search_query`), best first: of the sessions of
        workspace `cwd`, or of all. `SearchSyntaxError` for a query that cannot be read,
        `SearchUnavailableError` if the store cannot search. Events not indexed yet are not
        found: `update_index` first for a complete answer."""
        if limit < 1 or offset < 0:
            raise ValueError(f"limit must be >= 1 and offset >= 0, got {limit} and {offset}")
        return await self._search(parse_query(text), cwd, limit, offset)

    async def unindexed(self) -> int:
        """How many stored events the search index has not seen yet."""
        return await self._unindexed()

    async def update_index(self, progress: Callable[[int], object] | None = None) -> int:
        """Index every waiting event of every session, batch by batch (each its own
        transaction, so an interrupted run keeps what it did); `progress` is told the events
        covered so far after each batch. Returns how many were covered."""
        done = 0
        while (covered := await self._index_some(None, BATCH)) > 0:
            done += covered
            if progress is not None:
                progress(done)
        return done

    # --- fork -----------------------------------------------------------------------------------

    async def fork(self, session_id: str, at_seq: int) -> SessionInfo:
        """A new session holding the events with seq < `at_seq`; its parent and fork point are
        recorded, and its title and model are those in force at the fork point.

        `at_seq` must be in 1..event_count (a fork copies at least one event) and lie where no
        turn (and no compaction) is open: after a `turn/end` or the out-of-turn events that follow
        it; otherwise `ForkPointError`. The fork is not leased: load it to write to it.
        """
        new_id = uuid.uuid4().hex
        now = self._clock()
        async with self._writing(f"forking session {session_id}") as fetch:
            parent = await session_info(fetch, session_id, self._where)
            await check_fork_point(fetch, parent, at_seq)
            title = await value_at(fetch, parent, at_seq, "session/title", "title")
            model = await value_at(fetch, parent, at_seq, "model/bind", "model")
            await fetch(
                "INSERT INTO sessions (id, cwd, title, model, parent_id, fork_seq, created, "
                "updated, event_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (new_id, parent.cwd, title, model, session_id, at_seq, now, now, at_seq),
            )
            await fetch(
                "INSERT INTO events (session_id, seq, time, type, data) "
                "SELECT ?, seq, time, type, data FROM events WHERE session_id = ? AND seq < ?",
                (new_id, session_id, at_seq),
            )
            return await session_info(fetch, new_id, self._where)

    # --- lifecycle ------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Flush what is staged, give back every lease, close the connections; idempotent."""
        if not self._is_open:
            return
        try:
            await self.flush()
        finally:
            try:
                await self._index.aclose()  # what this store flushed, indexed before it goes
                await self._forget_all_leases()
            finally:
                self._writers.clear()
                await self._disconnect()

    async def __aenter__(self) -> Self:
        return await self.open()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
