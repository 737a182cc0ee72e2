"""`trellis store copy`: every session of one store into another (SQLite into PostgreSQL), each
verified by its event count and last seq once written.

A session is copied as it is stored: its id, workspace, title, model, parent and fork point,
times and events, an interrupted tail too (the target repairs it when it is loaded, as the source
would). A session the target already holds with the same count and last seq is skipped, so a copy
interrupted half-way is run again; one it holds differently is an error and nothing of it changes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from engine.store.base import SessionInfo
from engine.store.errors import StoreError
from engine.store.postgres.store import PostgresStore
from engine.store.sqlite.store import SQLiteStore


@dataclass(frozen=True, slots=True, kw_only=True)
class Copied:
    """One session as the target holds it after the copy."""

    id: str
    events: int
    last_seq: int
    skipped: bool = False  # already there, the same


async def every_session(store: SQLiteStore | PostgresStore) -> AsyncIterator[SessionInfo]:
    cursor: str | None = None
    while True:
        page = await store.list(limit=200, cursor=cursor)
        for info in page.sessions:
            yield info
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


async def copy_sessions(source: SQLiteStore, target: PostgresStore) -> AsyncIterator[Copied]:
    """Copy and verify each session of `source`; raises `StoreError` at the first mismatch."""
    async for info in every_session(source):
        events = await source.read(info.id, 0, info.event_count - 1) if info.event_count else []
        last = events[-1].seq if events else -1
        if len(events) != info.event_count or last != info.event_count - 1:
            raise StoreError(
                f"{source.path}: session {info.id!r} holds {len(events)} events up to seq {last}, "
                f"its row says {info.event_count}"
            )
        held = await target.stored_extent(info.id)
        if held is not None:
            if held != (info.event_count, last):
                raise StoreError(
                    f"{target.shown}: session {info.id!r} is there already with {held[0]} events "
                    f"up to seq {held[1]}; the source has {info.event_count} up to seq {last}"
                )
            yield Copied(id=info.id, events=held[0], last_seq=held[1], skipped=True)
            continue
        await target.import_session(info, events)
        copied = await target.stored_extent(info.id)
        if copied != (info.event_count, last):
            raise StoreError(
                f"{target.shown}: session {info.id!r} was copied with {copied}; "
                f"expected {info.event_count} events up to seq {last}"
            )
        yield Copied(id=info.id, events=info.event_count, last_seq=last)
