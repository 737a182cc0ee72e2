"""What every store does the same around its database: staging batches for the sessions it holds
the lease of, flushing them together, loading (with the tail repair committed) and inspecting.

Each store supplies the database half: taking and dropping a lease, writing batches in one
transaction, writing a repair, reading a whole log.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import replace

from engine.events import Event
from engine.invariants import LogState
from engine.store.base import LoadedSession, SessionInfo
from engine.store.errors import LeaseError, StoreError
from engine.store.log_view import repair
from engine.store.staging import Batch, Row, StagedLog, rows_of

Taken = Sequence[tuple[StagedLog, Batch]]


class LeasedLogs(ABC):
    """The writer half of a `SessionStore`; `where` names the store in messages."""

    def __init__(self, where: str, clock: Callable[[], float]) -> None:
        self._where = where
        self._clock = clock
        self._writers: dict[str, StagedLog] = {}

    # --- the database half ----------------------------------------------------------------------

    @abstractmethod
    async def info(self, session_id: str) -> SessionInfo: ...

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
    async def _read_whole(
        self, session_id: str, action: str
    ) -> tuple[SessionInfo, list[Event], LogState]: ...

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
        self._writers.pop(session_id, None)
        await self._take_lease(session_id)
        try:
            info, events, state = await self._read_whole(session_id, "loading")
            repaired = repair(state, self._clock())
            if repaired:
                now = self._clock()
                stored = len(events)
                await self._write_repair(session_id, stored, rows_of(session_id, repaired), now)
                for event in repaired:
                    state.apply(event)
                info = replace(info, event_count=stored + len(repaired), updated=now)
        except BaseException:
            with suppress(StoreError):
                await self._drop_lease(session_id)
            raise
        self._writers[session_id] = StagedLog.at(session_id, info.event_count, state)
        return LoadedSession(info=info, events=(*events, *repaired), repaired=tuple(repaired))

    async def inspect(self, session_id: str) -> LoadedSession:
        """The whole log, for reading: no lease; the repair is computed but not written.

        `info` describes what is stored, so its `event_count` excludes the repair.
        """
        info, events, state = await self._read_whole(session_id, "inspecting")
        repaired = repair(state, events[-1].time if events else 0.0)
        return LoadedSession(info=info, events=(*events, *repaired), repaired=tuple(repaired))
