"""The `SessionStore` contract: every store (SQLite now, PostgreSQL later) passes one test suite."""

from __future__ import annotations

import builtins
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # annotations only: the session catalog imports this without the event models
    from collections.abc import Callable

    from engine.events import Event
    from engine.store.search import SearchHit


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionInfo:
    """A session's row in the sessions table."""

    id: str
    cwd: str
    title: str = ""
    model: str = ""
    parent_id: str | None = None
    fork_seq: int | None = None
    created: float
    updated: float
    event_count: int = 0
    turns: int = 0  # turn/start events in the log

    def record(self) -> dict[str, Any]:
        """The session as `trellis sessions --json` prints it and the JSON export heads it."""
        return {
            "id": self.id,
            "title": self.title,
            "cwd": self.cwd,
            "model": self.model,
            "created": self.created,
            "updated": self.updated,
            "turns": self.turns,
            "events": self.event_count,
            "parent": self.parent_id,
            "fork_seq": self.fork_seq,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionPage:
    """One page of a listing, newest first; `next_cursor` fetches the next."""

    sessions: tuple[SessionInfo, ...]
    next_cursor: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadedSession:
    """A whole log. `repaired` are the events the tail repair added (already in `events`)."""

    info: SessionInfo
    events: tuple[Event, ...]
    repaired: tuple[Event, ...] = ()


class SessionStore(Protocol):
    """Durable, append-only session logs.

    `append` stages a batch; `flush` makes every staged batch durable at once, or raises and keeps
    none of it (the caller still holds the events and stages them again). Writing needs the session's
    writer lease, taken by `create` and `load` and given back by `release` or `aclose`.

    A store may set `flush_runs_to_its_end = True` when its `flush`, cancelled while its write is
    under way, still waits for that write's outcome, returns or raises it, and lets the
    cancellation reach the caller only at its next await (both stores here do). A `Session` then
    awaits `flush` directly; otherwise it shields it in a task of its own.
    """

    async def create(
        self, *, cwd: str, title: str = "", model: str = "", session_id: str | None = None
    ) -> SessionInfo: ...

    async def append(self, session_id: str, events: Sequence[Event]) -> None: ...

    async def flush(self, session_id: str | None = None) -> None: ...

    async def load(self, session_id: str) -> LoadedSession: ...

    async def acquire(self, session_id: str) -> SessionInfo:
        """`load` without reading the log: takes the writer lease and commits the repair of an
        interrupted tail (computed from its last turn alone), and returns the session as stored
        after it. The writer then reads the log by range (`read`), so reopening a long session
        never holds all of it."""
        ...

    async def inspect(self, session_id: str) -> LoadedSession: ...

    async def read(
        self, session_id: str, start: int = 0, end: int | None = None
    ) -> list[Event]: ...

    async def read_last_turns(self, session_id: str, turns: int) -> list[Event]: ...

    async def info(self, session_id: str) -> SessionInfo: ...

    async def resolve(self, id_or_prefix: str) -> SessionInfo:
        """The session with this id, or else the only one whose id starts with it (as git takes
        a commit prefix, of at least 4 characters). Raises `UnknownSessionError` when none
        matches, `ShortPrefixError` for a prefix under 4 characters (or an empty one) and
        `AmbiguousSessionError`, naming the candidates, when several do."""
        ...

    async def list(
        self, *, cwd: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> SessionPage: ...

    async def fork(self, session_id: str, at_seq: int) -> SessionInfo: ...

    async def delete(self, session_id: str) -> None:
        """Remove a session, its events and their entries in the search index."""
        ...

    async def search(
        self, text: str, *, cwd: str | None = None, limit: int = 20, offset: int = 0
    ) -> builtins.list[SearchHit]:
        """The events whose text (the user's, injected, the assistant's, a tool's) matches the
        query `text` (`engine.store.search_query`), best first, of workspace `cwd`'s sessions
        or of all. Raises `SearchSyntaxError` for a query that cannot be read and
        `SearchUnavailableError` where the store cannot search. The index is fed after each
        flush, off the turn's path, so an event flushed a moment ago may not be found yet."""
        ...

    async def unindexed(self) -> int:
        """How many stored events the search index has not seen yet."""
        ...

    async def update_index(self, progress: Callable[[int], object] | None = None) -> int:
        """Index every event waiting for it (a store from before the index, once); `progress`
        is told the count done after each batch. Returns the count."""
        ...

    async def release(self, session_id: str) -> None: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class FollowingStore(SessionStore, Protocol):
    """A store whose sessions can be followed as other processes write them (PostgreSQL: every
    flush notifies its session and last seq on commit). `isinstance(store, FollowingStore)` tells
    a front end whether it can follow a session another process writes."""

    def follow(self, session_id: str, from_seq: int = 0) -> AsyncGenerator[Event, None]:
        """The stored events from `from_seq`, then each one as it is committed, with no gap."""
        ...

    def writers(self, session_id: str) -> AsyncGenerator[str | None, None]:
        """Who else holds the session's writer lease (a name for a front end to show), or None
        once it is given back or expired: now, then each time that changes, so a follower can
        say who writes what it shows and when the writer let go."""
        ...
