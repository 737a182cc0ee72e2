"""The statements that move a session's log forward; they run together in one transaction on the
connection's thread (`SQLiteDatabase.run`), so a flush costs one round trip to it."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.store.errors import LeaseError, SequenceError, UnknownSessionError
from engine.store.staging import Row

INSERT_EVENT = "INSERT INTO events (session_id, seq, time, type, data) VALUES (?, ?, ?, ?, ?)"
_GUARD = "WHERE id = ? AND lease_token = ? AND event_count = ?"
_ADVANCE = f"UPDATE sessions SET event_count = ?, updated = ?, lease_heartbeat = ? {_GUARD}"
# a batch rarely names a title or a model, and coalescing the two columns cost every flush's
# UPDATE about a quarter of its time
_ADVANCE_NAMING = (
    "UPDATE sessions SET event_count = ?, updated = ?, lease_heartbeat = ?, "
    f"title = coalesce(?, title), model = coalesce(?, model) {_GUARD}"
)
_PRIMARY_KEY_VIOLATION = 1555  # SQLITE_CONSTRAINT_PRIMARYKEY


@dataclass(frozen=True, slots=True)
class LogWrites:
    """Writes of the store at `path` holding leases under `token`; each method runs inside a
    transaction on the connection's thread."""

    path: Path
    token: str

    def extend(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        stored: int,
        rows: Sequence[Row],
        now: float,
        title: str | None = None,
        model: str | None = None,
    ) -> None:
        """Append `rows` after the `stored` events, if this store still holds the lease and the
        stored log is the one they extend."""
        self._advance(conn, session_id, stored, stored + len(rows), now, title, model)
        try:
            conn.executemany(INSERT_EVENT, rows)
        except sqlite3.IntegrityError as exc:
            if exc.sqlite_errorcode != _PRIMARY_KEY_VIOLATION:
                raise
            raise SequenceError(
                f"{self.path}: session {session_id!r}: seqs {rows[0][1]}..{rows[-1][1]} "
                f"overlap stored events: {exc}"
            ) from exc

    def _advance(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        stored: int,
        count: int,
        now: float,
        title: str | None,
        model: str | None,
    ) -> None:
        """Move a session's count forward, but only if this store still holds its lease and the
        stored log is the one it extends (another writer may have taken over or deleted it)."""
        if title is None and model is None:
            advanced = conn.execute(_ADVANCE, (count, now, now, session_id, self.token, stored))
        else:
            params = (count, now, now, title, model, session_id, self.token, stored)
            advanced = conn.execute(_ADVANCE_NAMING, params)
        if advanced.rowcount == 1:
            return
        rows = conn.execute(
            "SELECT lease_token, lease_pid, lease_host, event_count FROM sessions WHERE id = ?",
            (session_id,),
        ).fetchall()
        if not rows:
            raise UnknownSessionError(f"{self.path}: session {session_id!r} was deleted")
        token, pid, host, stored_count = rows[0]
        if token != self.token:
            raise LeaseError(
                f"{self.path}: session {session_id!r} lost its writer lease "
                f"(now held by process {pid} on {host})"
            )
        raise SequenceError(
            f"{self.path}: session {session_id!r} has {stored_count} stored events, "
            f"this writer expected {stored}"
        )
