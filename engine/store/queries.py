"""The reads both stores share, written once in SQL that SQLite and PostgreSQL both take.

Each takes a `Fetch`: the rows of one statement with `?` placeholders, on the caller's connection
inside its transaction (PostgreSQL's adapter numbers the placeholders, `numbered`). Imports no
event model: the session catalog reads through it.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from functools import lru_cache
from typing import Any

from engine.store.base import SessionInfo
from engine.store.errors import AmbiguousSessionError, ShortPrefixError, UnknownSessionError

Rows = Sequence[Sequence[Any]]
Fetch = Callable[[str, Sequence[Any]], Awaitable[Rows]]

SELECT_EVENTS = "SELECT seq, time, type, data FROM events WHERE session_id = ?"
MAX_SEQ = 2**63 - 1
AMBIGUOUS_SHOWN = 5  # candidates an ambiguous prefix error names
MIN_PREFIX = 4
"""Characters of an id a prefix must give: fewer name a session by chance (one in sixteen)."""

# `turns` is counted on the partial index of turn/start rows
INFO_COLUMNS = (
    "id, cwd, title, model, parent_id, fork_seq, created, updated, event_count, "
    "(SELECT count(*) FROM events WHERE events.session_id = sessions.id "
    "AND events.type = 'turn/start')"
)


@lru_cache(maxsize=256)
def numbered(sql: str) -> str:
    """`sql` with its `?` placeholders as PostgreSQL's `$1`, `$2`, ... (no `?` in literals)."""
    count = iter(range(1, sql.count("?") + 1))
    return re.sub(r"\?", lambda _: f"${next(count)}", sql)


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


async def session_info(fetch: Fetch, session_id: str, where: str) -> SessionInfo:
    """The session's row; `UnknownSessionError` naming `where` (the store) if there is none."""
    rows = await fetch(f"SELECT {INFO_COLUMNS} FROM sessions WHERE id = ?", (session_id,))
    if not rows:
        raise UnknownSessionError(f"{where}: no session with id {session_id!r}")
    return info_of(rows[0])


async def resolve_session(fetch: Fetch, id_or_prefix: str, where: str) -> SessionInfo:
    """See `SessionStore.resolve`."""
    exact = await fetch(f"SELECT {INFO_COLUMNS} FROM sessions WHERE id = ?", (id_or_prefix,))
    if exact:
        return info_of(exact[0])
    if len(id_or_prefix) < MIN_PREFIX:
        # `trellis delete 4 --yes` deleted whichever session's id began with a 4
        raise ShortPrefixError(
            f"{where}: session id prefix {id_or_prefix!r} is too short: "
            f"give at least {MIN_PREFIX} characters of the id"
        )
    # ids sort byte by byte, so those with the prefix follow it directly in the primary key
    rows = await fetch(
        f"SELECT {INFO_COLUMNS} FROM sessions WHERE id > ? ORDER BY id LIMIT ?",
        (id_or_prefix, AMBIGUOUS_SHOWN + 1),
    )
    found = [row for row in rows if id_or_prefix and str(row[0]).startswith(id_or_prefix)]
    if not found:
        raise UnknownSessionError(f"{where}: no session with id {id_or_prefix!r}")
    if len(found) > 1:
        names = ", ".join(str(row[0]) for row in found[:AMBIGUOUS_SHOWN])
        more = ", ..." if len(found) > AMBIGUOUS_SHOWN else ""
        raise AmbiguousSessionError(
            f"{where}: session id prefix {id_or_prefix!r} is ambiguous: {names}{more}"
        )
    return info_of(found[0])


async def range_rows(fetch: Fetch, session_id: str, start: int, end: int = MAX_SEQ) -> Rows:
    """The stored rows with `start <= seq <= end`, in order."""
    return await fetch(
        f"{SELECT_EVENTS} AND seq >= ? AND seq <= ? ORDER BY seq", (session_id, start, end)
    )


async def open_turn_rows(fetch: Fetch, session_id: str) -> Rows:
    """The rows from the last `turn/start` on if that turn is open (no `turn/end` after it),
    else none: all a computed repair needs."""
    markers = await fetch(
        "SELECT seq, type FROM events WHERE session_id = ? "
        "AND type IN ('turn/start', 'turn/end') ORDER BY seq DESC LIMIT 1",
        (session_id,),
    )
    if not markers or markers[0][1] != "turn/start":
        return []
    return await range_rows(fetch, session_id, int(markers[0][0]))


async def last_turns_rows(fetch: Fetch, session_id: str, turns: int) -> Rows:
    """The rows from the `turn/start` of the `turns`-th last turn (all if there are fewer)."""
    starts = await fetch(
        "SELECT seq FROM events WHERE session_id = ? AND type = 'turn/start' "
        "ORDER BY seq DESC LIMIT 1 OFFSET ?",
        (session_id, turns - 1),
    )
    return await range_rows(fetch, session_id, int(starts[0][0]) if starts else 0)
