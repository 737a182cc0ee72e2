"""Where a session may be forked (docs/ARCHITECTURE.md, the store), and what the fork inherits."""

from __future__ import annotations

import json

from engine.store.base import SessionInfo
from engine.store.errors import ForkPointError
from engine.store.queries import Fetch


async def check_fork_point(fetch: Fetch, parent: SessionInfo, at_seq: int) -> None:
    """`ForkPointError` unless `at_seq` is in 1..event_count (a fork copies at least one event)
    and lies where no turn is open: after a `turn/end`, or after out-of-turn events (an injected
    `user/message`, a pin, a binding, a finished compaction) that follow one or precede the first
    turn. A cut between `compact/start` and `compact/end` would keep half a compaction: refused."""

    def refuse(why: str) -> ForkPointError:
        return ForkPointError(f"session {parent.id!r}: cannot fork at seq {at_seq}: {why}")

    if not 0 < at_seq <= parent.event_count:
        raise refuse(
            f"a fork copies the events before it, so it must lie in 1..{parent.event_count}"
        )
    rows = await fetch(
        "SELECT type FROM events WHERE session_id = ? AND seq = ?", (parent.id, at_seq - 1)
    )
    before = rows[0][0]
    for opening, closing, inside in (
        ("turn/start", "turn/end", "an open turn; fork at the turn's end or before the turn"),
        ("compact/start", "compact/end", "a compaction; fork after its compact/end or before it"),
    ):
        last = await fetch(
            "SELECT type FROM events WHERE session_id = ? AND seq < ? AND type IN (?, ?) "
            "ORDER BY seq DESC LIMIT 1",
            (parent.id, at_seq, opening, closing),
        )
        if last and last[0][0] == opening:
            raise refuse(f"the event before it (seq {at_seq - 1}, {before}) is inside {inside}")


async def value_at(
    fetch: Fetch, parent: SessionInfo, at_seq: int, event_type: str, key: str
) -> str:
    """The `key` of the last `event_type` event before the fork point (the title or model then in
    force). Without one, the parent's current one, which was set when the session was created,
    unless a later event changed it: a title first set after the cut was not yet in force."""
    rows = await fetch(
        "SELECT data FROM events WHERE session_id = ? AND seq < ? "
        "AND type = ? ORDER BY seq DESC LIMIT 1",
        (parent.id, at_seq, event_type),
    )
    if rows:
        return str(json.loads(rows[0][0])[key])  # one small row: parsed here, in either dialect
    if key == "title" and await _set_later(fetch, parent, at_seq, event_type):
        return ""  # titled only after the cut: untitled then (the agent creates sessions untitled)
    return parent.title if key == "title" else parent.model


async def _set_later(fetch: Fetch, parent: SessionInfo, at_seq: int, event_type: str) -> bool:
    rows = await fetch(
        "SELECT 1 FROM events WHERE session_id = ? AND seq >= ? AND type = ? LIMIT 1",
        (parent.id, at_seq, event_type),
    )
    return bool(rows)
