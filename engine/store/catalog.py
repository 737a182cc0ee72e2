"""The session catalog: the sessions table, read without the event log.

Listing sessions needs neither the event models nor the log's invariants, and building those is
most of what `trellis sessions` would otherwise spend starting. `open_catalog` opens the database as
the store does and lists through the same function; no module here imports an event model.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Protocol

from engine.store.base import SessionInfo, SessionPage
from engine.store.queries import INFO_COLUMNS, Fetch, info_of
from engine.store.settings import StoreSettings
from engine.store.step_usage import StepRow


def _encode_cursor(info: SessionInfo) -> str:
    raw = json.dumps([info.updated, info.id]).encode()
    return base64.urlsafe_b64encode(raw).decode("ascii")


def _decode_cursor(cursor: str) -> tuple[float, str]:
    try:
        updated, session_id = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
    except (ValueError, TypeError, binascii.Error) as exc:
        raise ValueError(f"invalid session list cursor {cursor!r}") from exc
    if not isinstance(updated, int | float) or not isinstance(session_id, str):
        raise ValueError(f"invalid session list cursor {cursor!r}")
    return float(updated), session_id


async def list_sessions(
    fetch: Fetch, *, cwd: str | None = None, limit: int = 50, cursor: str | None = None
) -> SessionPage:
    """Newest first (by `updated`, then id); `next_cursor` fetches the following page.

    Raises `ValueError` for a limit below 1 or a cursor this store did not hand out.
    """
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    where: list[str] = []
    params: list[object] = []
    if cwd is not None:
        where.append("cwd = ?")
        params.append(cwd)
    if cursor is not None:
        updated, last_id = _decode_cursor(cursor)
        where.append("(updated < ? OR (updated = ? AND id < ?))")
        params += [updated, updated, last_id]
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    rows = await fetch(
        f"SELECT {INFO_COLUMNS} FROM sessions {clause} ORDER BY updated DESC, id DESC LIMIT ?",
        (*params, limit + 1),
    )
    sessions = tuple(info_of(row) for row in rows[:limit])
    more = len(rows) > limit
    return SessionPage(
        sessions=sessions, next_cursor=_encode_cursor(sessions[-1]) if more else None
    )


class SessionCatalog(Protocol):
    """The sessions of one open store, for a front end that only lists them."""

    async def list(
        self, *, cwd: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> SessionPage:
        """As `SessionStore.list`."""
        ...

    async def step_rows(self, since: float | None) -> tuple[StepRow, ...]:
        """Every step from `since` on, with the bindings that name its model
        (`engine.store.step_usage`)."""
        ...


@asynccontextmanager
async def open_catalog(
    settings: StoreSettings, path: Path, *, busy_timeout: float = 5.0
) -> AsyncIterator[SessionCatalog]:
    """The catalog of the store `settings` name (the SQLite file at `path` when they name none),
    opened (created and migrated) as the store opens and closed on exit; `busy_timeout`
    (seconds) is how long a read waits for another connection's lock before
    `DatabaseLockedError`."""
    if settings.url is not None:
        from engine.store.pg_catalog import open_pg_catalog

        async with open_pg_catalog(settings, busy_timeout=busy_timeout) as catalog:
            yield catalog
        return
    from engine.store.sqlite_catalog import open_sqlite_catalog

    async with open_sqlite_catalog(Path(path), busy_timeout=busy_timeout) as sqlite_catalog:
        yield sqlite_catalog
