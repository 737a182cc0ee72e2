"""The writer lease across hosts: a row per leased session (token, holder, host, pid, heartbeat,
expiry), taken and checked with the server's clock, so hosts whose clocks disagree still agree on
who holds it.

Fencing: a flush first updates its own lease row (`FENCE`, the first step of the flush's one
statement), which locks the row and rechecks the token after any concurrent takeover commits; a takeover updates the same row, so it waits for a
flush in progress and every flush after it finds the token changed. A holder that was paused past
its expiry and taken over can never write again.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import asyncpg

from engine.store.errors import LeaseError, UnknownSessionError
from engine.store.lease import LeaseHolder, StoredLease, process_alive
from engine.store.postgres.schema import Connection

log = logging.getLogger(__name__)


NOW = "extract(epoch FROM clock_timestamp())::double precision"
"""The server's time in Unix seconds: every host's lease is judged by one clock."""

DEFAULT_TTL = 30.0
"""Seconds a lease outlives its holder's last heartbeat (the holder beats every third of it)."""


def holder_name() -> str:
    """What the lease row calls its holder: the program, as its process was started."""
    return Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"


RELEASED = "released"
"""The notification payload's last word when a writer gives a lease back (`<session id> released`;
a flush notifies `<session id> <last seq>`)."""
TAKEN = "taken"
"""The payload's last word when a writer takes a session's lease (`<session id> taken`)."""


_SELECT = (
    f"SELECT token, holder, host, pid, heartbeat, expires, {NOW} AS now FROM leases "
    "WHERE session_id = $1"
)


async def check(
    conn: Connection, me: LeaseHolder, session_id: str, where: str, doing: str
) -> asyncpg.Record | None:
    """The session's lease row, locked for this transaction; `LeaseError` naming its holder if
    another live writer has it (`UnknownSessionError` for an unknown session)."""
    if await conn.fetchval("SELECT 1 FROM sessions WHERE id = $1", session_id) is None:
        raise UnknownSessionError(f"{where}: no session with id {session_id!r}")
    row = await conn.fetchrow(f"{_SELECT} FOR UPDATE", session_id)
    if row is None or row["token"] == me.token:
        return row
    if _live(row, me):
        holder = _holder(row)
        raise LeaseError(
            f"{where}: session {session_id!r} is being written by {holder}, its heartbeat "
            f"{row['now'] - row['heartbeat']:.1f} s ago; {doing} is refused while it runs",
            holder=holder,
        )
    return row


def _holder(row: asyncpg.Record) -> str:
    """`trellis (process 12 on host)`: who holds a lease, as a front end names it."""
    lease = StoredLease(token=row["token"], pid=row["pid"], host=row["host"], heartbeat=0.0)
    return f"{row['holder']} ({lease.describe()})"


def _live(row: asyncpg.Record, me: LeaseHolder) -> bool:
    """Whether another holder's lease still blocks `me`: not expired, and its process not known
    dead (a holder on this host is checked at once)."""
    gone = row["host"] == me.host and not process_alive(row["pid"])
    return row["token"] != me.token and row["now"] < row["expires"] and not gone


@dataclass(frozen=True, slots=True)
class OtherWriter:
    """Another process's live lease of a session: who (as `LeaseError.holder` names it) and the
    seconds until it expires unless renewed."""

    holder: str
    expires_in: float


async def other_writer(conn: Connection, me: LeaseHolder, session_id: str) -> OtherWriter | None:
    """The live lease of the session another holder than `me` has; None when none blocks `me`.
    Reads without locking the row: a reader never delays a writer's flush."""
    row = await conn.fetchrow(_SELECT, session_id)
    if row is None or not _live(row, me):
        return None
    return OtherWriter(_holder(row), float(row["expires"] - row["now"]))


async def take(
    conn: Connection, me: LeaseHolder, session_id: str, ttl: float, where: str, channel: str
) -> None:
    """Take the session's lease, taking over one whose holder is gone or whose heartbeat is
    stale; `LeaseError` while another writer holds it. Followers are told on commit that the
    session has a (new) writer."""
    mine = (session_id, me.token, holder_name(), me.host, me.pid, ttl, channel)
    notify = f"pg_notify($7, $1 || ' {TAKEN}')"
    inserted = await conn.fetchval(
        "INSERT INTO leases (session_id, token, holder, host, pid, heartbeat, expires) "
        f"SELECT $1, $2, $3, $4, $5, {NOW}, {NOW} + $6 WHERE EXISTS "
        "(SELECT 1 FROM sessions WHERE id = $1) "
        f"ON CONFLICT (session_id) DO NOTHING RETURNING 1, {notify}",
        *mine,
    )
    if inserted:
        return
    row = await check(conn, me, session_id, where, "a second writer")
    if row is not None and row["token"] != me.token:
        log.info(
            "session %s: taking over the lease of %s (process %s on %s)",
            session_id,
            row["holder"],
            row["pid"],
            row["host"],
        )
    await conn.execute(
        f"UPDATE leases SET token = $2, holder = $3, host = $4, pid = $5, heartbeat = {NOW}, "
        f"expires = {NOW} + $6 WHERE session_id = $1 RETURNING {notify}",
        *mine,
    )


FENCE = (
    f"UPDATE leases SET heartbeat = {NOW}, expires = {NOW} + $3 "
    "WHERE session_id = $1 AND token = $2 RETURNING 1"
)
"""Inside a flush: renew the lease ($1 session, $2 token, $3 ttl) if this store still holds it;
no row if not. The update locks the row until the flush commits, and a takeover committed
meanwhile is seen (PostgreSQL rechecks the condition on the newest row version)."""


async def lost(conn: Connection, session_id: str, where: str) -> NoReturn:
    """Raise why a flush's `FENCE` found no lease of ours: `LeaseError` naming the holder now, or
    `UnknownSessionError` for a session deleted meanwhile."""
    row = await conn.fetchrow(
        "SELECT s.id, l.holder, l.pid, l.host FROM sessions s "
        "LEFT JOIN leases l ON l.session_id = s.id WHERE s.id = $1",
        session_id,
    )
    if row is None:
        raise UnknownSessionError(f"{where}: session {session_id!r} was deleted")
    now_held = (
        f"now held by {row['holder']} (process {row['pid']} on {row['host']})"
        if row["holder"] is not None
        else "now held by no one"
    )
    raise LeaseError(f"{where}: session {session_id!r} lost its writer lease ({now_held})")


async def heartbeat(conn: Connection, me: LeaseHolder, ttl: float) -> set[str]:
    """Renew every lease this store still holds; the ids of those it holds."""
    rows = await conn.fetch(
        f"UPDATE leases SET heartbeat = {NOW}, expires = {NOW} + $2 WHERE token = $1 "
        "RETURNING session_id",
        me.token,
        ttl,
    )
    return {row["session_id"] for row in rows}


async def drop(
    conn: Connection, me: LeaseHolder, channel: str, session_id: str | None = None
) -> None:
    """Give back the lease of one session, or of every session this store holds; followers are
    told on commit that the writer let go."""
    notify = f"RETURNING pg_notify($2, session_id || ' {RELEASED}')"
    if session_id is None:
        await conn.execute(f"DELETE FROM leases WHERE token = $1 {notify}", me.token, channel)
    else:
        await conn.execute(
            f"DELETE FROM leases WHERE token = $1 AND session_id = $3 {notify}",
            me.token,
            channel,
            session_id,
        )
