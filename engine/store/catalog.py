"""The session catalog: the sessions table, read without the event log.

Listing sessions needs neither the event models nor the log's invariants, and building those is
most of what `trellis sessions` would otherwise spend starting. `open_catalog` opens the database as
`SQLiteStore` does and lists through the same function; this module imports no event model.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from engine.store.base import SessionInfo, SessionPage
from engine.store.sqlite_db import SQLiteDatabase

# `turns` is counted on the partial index of turn/start rows (schema version 2)
INFO_COLUMNS = (
    "id, cwd, title, model, parent_id, fork_seq, created, updated, event_count, "
    "(SELECT count(*) FROM events WHERE events.session_id = sessions.id "
    "AND events.type = 'turn/start')"
)


def info_of(row: Sequence[Any]) -> SessionInfo:
    """A `SessionInfo` from a row of `INFO_COLUMNS`."""
    return SessionInfo(
        id=row[0],
        cwd=row[1],
        title=row[2],
        model=row[3],
        parent_id=row[4],
        fork_seq=row[5],
        created=row[6],
        updated=row[7],
        event_count=row[8],
        turns=row[9],
    )


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
    db: SQLiteDatabase, *, cwd: str | None = None, limit: int = 50, cursor: str | None = None
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
    async with db.transaction("listing sessions", write=False) as conn:
        rows = list(
            await conn.execute_fetchall(
                f"SELECT {INFO_COLUMNS} FROM sessions {clause} "
                "ORDER BY updated DESC, id DESC LIMIT ?",
                (*params, limit + 1),
            )
        )
    sessions = tuple(info_of(row) for row in rows[:limit])
    more = len(rows) > limit
    return SessionPage(
        sessions=sessions, next_cursor=_encode_cursor(sessions[-1]) if more else None
    )


class SessionCatalog:
    """The sessions of one open SQLite file, for a front end that only lists them."""

    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db

    async def list(
        self, *, cwd: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> SessionPage:
        """As `SQLiteStore.list`."""
        return await list_sessions(self._db, cwd=cwd, limit=limit, cursor=cursor)


@asynccontextmanager
async def open_catalog(path: Path, *, busy_timeout: float = 5.0) -> AsyncIterator[SessionCatalog]:
    """The catalog of the file at `path`, opened (created and migrated) like `SQLiteStore.open`
    and closed on exit; `busy_timeout` (seconds) is how long a read waits for another
    connection's lock before `DatabaseLockedError`."""
    db = SQLiteDatabase(Path(path), busy_timeout=busy_timeout)
    await db.open()
    try:
        yield SessionCatalog(db)
    finally:
        await db.close()
