"""Where a session may be forked (DESIGN.md, "Store"), and what the fork inherits."""

from __future__ import annotations

import aiosqlite

from engine.store.base import SessionInfo
from engine.store.errors import ForkPointError


async def check_fork_point(conn: aiosqlite.Connection, parent: SessionInfo, at_seq: int) -> None:
    """`ForkPointError` unless `at_seq` is in 1..event_count (a fork copies at least one event)
    and follows a `turn/end` or an out-of-turn `user/message`, so no turn is open in the fork."""

    def refuse(why: str) -> ForkPointError:
        return ForkPointError(f"session {parent.id!r}: cannot fork at seq {at_seq}: {why}")

    if not 0 < at_seq <= parent.event_count:
        raise refuse(
            f"a fork copies the events before it, so it must lie in 1..{parent.event_count}"
        )
    rows = await conn.execute_fetchall(
        "SELECT type FROM events WHERE session_id = ? AND seq = ?", (parent.id, at_seq - 1)
    )
    before = next(iter(rows))[0]
    if before == "turn/end":
        return
    if before != "user/message":
        raise refuse(
            f"the event before it (seq {at_seq - 1}) is {before}; a fork point must follow "
            "a turn/end or an out-of-turn user/message"
        )
    boundary = list(
        await conn.execute_fetchall(
            "SELECT type FROM events WHERE session_id = ? AND seq < ? "
            "AND type IN ('turn/start', 'turn/end') ORDER BY seq DESC LIMIT 1",
            (parent.id, at_seq),
        )
    )
    if boundary and boundary[0][0] == "turn/start":
        raise refuse(
            f"the user/message at seq {at_seq - 1} is inside an open turn; "
            "fork at the turn's end or before the turn"
        )


async def value_at(
    conn: aiosqlite.Connection, parent: SessionInfo, at_seq: int, event_type: str, key: str
) -> str:
    """The `key` of the last `event_type` event before the fork point (the title or model then in
    force), else the parent's current one (it was set when the session was created)."""
    rows = list(
        await conn.execute_fetchall(
            "SELECT json_extract(data, ?) FROM events WHERE session_id = ? AND seq < ? "
            "AND type = ? ORDER BY seq DESC LIMIT 1",
            (f"$.{key}", parent.id, at_seq, event_type),
        )
    )
    if rows:
        return str(rows[0][0])
    return parent.title if key == "title" else parent.model
