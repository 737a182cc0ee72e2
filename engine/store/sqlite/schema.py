"""The SQLite schema and its migrations: one function per version step, applied in one transaction."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import aiosqlite

from engine.store.errors import SchemaVersionError

Migration = Callable[[aiosqlite.Connection], Awaitable[None]]

# `events` keeps the rowid: payloads (file reads, tool output) can be large, and SQLite advises
# WITHOUT ROWID only for rows well under a twentieth of a page. The primary key index serves every
# read, which is always by session and seq.
_V1 = (
    "CREATE TABLE meta (schema_version INTEGER NOT NULL)",
    """CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        cwd TEXT NOT NULL,
        title TEXT NOT NULL DEFAULT '',
        model TEXT NOT NULL DEFAULT '',
        parent_id TEXT,
        fork_seq INTEGER,
        created REAL NOT NULL,
        updated REAL NOT NULL,
        event_count INTEGER NOT NULL DEFAULT 0,
        lease_token TEXT,
        lease_pid INTEGER,
        lease_host TEXT,
        lease_heartbeat REAL
    )""",
    "CREATE INDEX sessions_by_updated ON sessions (updated DESC, id DESC)",
    "CREATE INDEX sessions_by_cwd ON sessions (cwd, updated DESC, id DESC)",
    """CREATE TABLE events (
        session_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        time REAL NOT NULL,
        type TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    )""",
)


async def _create_v1(conn: aiosqlite.Connection) -> None:
    for statement in _V1:
        await conn.execute(statement)
    await conn.execute("INSERT INTO meta (schema_version) VALUES (0)")


async def _index_turn_starts(conn: aiosqlite.Connection) -> None:
    """Session listings count turns and `read_last_turns` seeks them: a partial index over the
    `turn/start` rows keeps both to the turns alone, however long the log."""
    await conn.execute(
        "CREATE INDEX events_turn_starts ON events (session_id, seq) WHERE type = 'turn/start'"
    )


async def _unindex_updated(conn: aiosqlite.Connection) -> None:
    """Every flush moves its session's `updated`, and each index over it costs the flush two more
    pages written (docs/DESIGN-NOTES.md, "Store").
    A listing reads a table of one row per session and keeps the newest page of them while it
    scans, so it is cheap without them however long the logs are."""
    await conn.execute("DROP INDEX sessions_by_updated")
    await conn.execute("DROP INDEX sessions_by_cwd")


async def _count_searched(conn: aiosqlite.Connection) -> None:
    """How many of each session's events the search index has seen: the sessions stored before
    the index start at none and are indexed once (`trellis search` shows its progress). The
    index's FTS5 table itself is made at open (`engine.store.sqlite.search.FtsIndex`): a SQLite without FTS5
    must still open the store."""
    await conn.execute("ALTER TABLE sessions ADD COLUMN search_indexed INTEGER NOT NULL DEFAULT 0")


# MIGRATIONS[v] brings a database from version v to v + 1.
MIGRATIONS: Sequence[Migration] = (
    _create_v1,
    _index_turn_starts,
    _unindex_updated,
    _count_searched,
)


def schema_version() -> int:
    """The version this code writes (the number of migrations)."""
    return len(MIGRATIONS)


async def stored_version(conn: aiosqlite.Connection) -> int:
    """The database's version; 0 for a database that has never held Trellis tables."""
    rows = await conn.execute_fetchall(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
    )
    if not list(rows):
        return 0
    versions = list(await conn.execute_fetchall("SELECT schema_version FROM meta"))
    return int(versions[0][0]) if versions else 0


async def migrate(conn: aiosqlite.Connection, path: Path) -> int:
    """Bring the schema up to date inside the caller's write transaction; returns the version.

    Raises `SchemaVersionError` for a database written by a newer Trellis, or naming the step that
    failed (the caller rolls back, so a failed migration changes nothing).
    """
    current = await stored_version(conn)
    target = schema_version()
    if current > target:
        raise SchemaVersionError(
            f"{path}: schema version {current} is newer than this Trellis supports ({target}); "
            "upgrade Trellis to open it"
        )
    for version in range(current, target):
        try:
            await MIGRATIONS[version](conn)
        except Exception as exc:
            raise SchemaVersionError(
                f"{path}: migration from schema version {version} to {version + 1} failed: {exc}"
            ) from exc
        await conn.execute("UPDATE meta SET schema_version = ?", (version + 1,))
    return target
