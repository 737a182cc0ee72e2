"""Listing sessions a page at a time, newest first: the query every store and catalog shares."""

from __future__ import annotations

import base64
import binascii
import json

from engine.store.base import SessionInfo, SessionPage
from engine.store.queries import INFO_COLUMNS, Fetch, info_of


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
