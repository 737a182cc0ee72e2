"""The writer lease: who may append to a session, and when a holder is gone for good."""

from __future__ import annotations

import logging
import os
import socket
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import aiosqlite

from engine.store.errors import LeaseError, UnknownSessionError

log = logging.getLogger(__name__)


def process_alive(pid: int) -> bool:
    """Whether `pid` names a running process on this host (a zombie counts as dead)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    try:
        # Linux: a killed child that its parent has not reaped yet still answers kill(0).
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaseHolder:
    """One store instance as a lease holder: a token of its own, its process and host."""

    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    pid: int = field(default_factory=os.getpid)
    host: str = field(default_factory=socket.gethostname)


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredLease:
    """A lease as the sessions table records it."""

    token: str
    pid: int
    host: str
    heartbeat: float

    def blocks(self, me: LeaseHolder, *, now: float, foreign_ttl: float) -> bool:
        """Whether it keeps `me` out: another holder whose process runs, or (on another host, where
        its pid cannot be probed) it wrote within `foreign_ttl` seconds."""
        if self.token == me.token:
            return False
        if self.host != me.host:
            return now - self.heartbeat < foreign_ttl
        return process_alive(self.pid)

    def describe(self) -> str:
        return f"process {self.pid} on {self.host}"


@dataclass(frozen=True, slots=True, kw_only=True)
class LeasePolicy:
    """Who this store is, where, and how long a lease from another host stays live."""

    holder: LeaseHolder
    path: Path
    foreign_ttl: float


async def check_lease(
    conn: aiosqlite.Connection, policy: LeasePolicy, session_id: str, now: float, doing: str
) -> StoredLease | None:
    """The session's current lease; `LeaseError` naming its holder if another live writer has it."""
    rows = list(
        await conn.execute_fetchall(
            "SELECT lease_token, lease_pid, lease_host, lease_heartbeat FROM sessions WHERE id = ?",
            (session_id,),
        )
    )
    if not rows:
        raise UnknownSessionError(f"{policy.path}: no session with id {session_id!r}")
    token, pid, host, heartbeat = rows[0]
    if token is None:
        return None
    lease = StoredLease(token=token, pid=pid, host=host, heartbeat=heartbeat)
    if lease.blocks(policy.holder, now=now, foreign_ttl=policy.foreign_ttl):
        raise LeaseError(
            f"{policy.path}: session {session_id!r} is being written by {lease.describe()}; "
            f"{doing} is refused while it runs",
            holder=lease.describe(),
        )
    return lease


async def take_lease(
    conn: aiosqlite.Connection, policy: LeasePolicy, session_id: str, now: float
) -> None:
    """Take the session's lease for `policy.holder`, taking over one whose holder is gone."""
    lease = await check_lease(conn, policy, session_id, now, "a second writer")
    h = policy.holder
    if lease is not None and lease.token != h.token:
        log.info("session %s: taking over the lease of %s", session_id, lease.describe())
    await conn.execute(
        "UPDATE sessions SET lease_token = ?, lease_pid = ?, lease_host = ?, lease_heartbeat = ? "
        "WHERE id = ?",
        (h.token, h.pid, h.host, now, session_id),
    )


async def drop_leases(
    conn: aiosqlite.Connection, holder: LeaseHolder, session_id: str | None = None
) -> None:
    """Give back the holder's lease of one session, or of every session it holds."""
    sql = (
        "UPDATE sessions SET lease_token = NULL, lease_pid = NULL, lease_host = NULL, "
        "lease_heartbeat = NULL WHERE lease_token = ?"
    )
    if session_id is None:
        await conn.execute(sql, (holder.token,))
    else:
        await conn.execute(f"{sql} AND id = ?", (holder.token, session_id))
