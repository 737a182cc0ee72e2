"""The PostgreSQL schema and its migrations: one function per version step, applied in one
transaction while an advisory lock keeps a second process from migrating at the same time."""

from __future__ import annotations

import zlib
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeAlias

import asyncpg

from engine.store.errors import SchemaVersionError

Connection: TypeAlias = (
    "asyncpg.pool.PoolConnectionProxy[asyncpg.Record] | asyncpg.Connection[asyncpg.Record]"
)
"""A connection of a store's pool, or its own (the stubs' generics; not subscriptable at run
time)."""

DEFAULT_SCHEMA = "trellis"
"""The PostgreSQL schema the tables live in, beside whatever else the database holds."""
Migration = Callable[[Connection], Awaitable[None]]

# Ids compare byte by byte (COLLATE "C"), as in SQLite: the ids with a prefix follow it directly.
# `data` is the event's JSON as text, byte for byte what the writer encoded: jsonb would reorder
# keys and cost a parse per row on the way in and out. Times are Unix seconds, as in SQLite.
_V1 = (
    "CREATE TABLE meta (schema_version integer NOT NULL)",
    """CREATE TABLE sessions (
        id text COLLATE "C" PRIMARY KEY,
        cwd text NOT NULL,
        title text NOT NULL DEFAULT '',
        model text NOT NULL DEFAULT '',
        parent_id text,
        fork_seq bigint,
        created double precision NOT NULL,
        updated double precision NOT NULL,
        event_count bigint NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX sessions_by_updated ON sessions (updated DESC, id DESC)",
    "CREATE INDEX sessions_by_cwd ON sessions (cwd, updated DESC, id DESC)",
    # one writer per session across hosts: the row is the lease, its token fences every flush;
    # `expires` is the holder's last heartbeat plus the time to live it declared
    """CREATE TABLE leases (
        session_id text COLLATE "C" PRIMARY KEY,
        token text NOT NULL,
        holder text NOT NULL,
        host text NOT NULL,
        pid integer NOT NULL,
        heartbeat double precision NOT NULL,
        expires double precision NOT NULL
    )""",
    """CREATE TABLE events (
        session_id text COLLATE "C" NOT NULL,
        seq bigint NOT NULL,
        time double precision NOT NULL,
        type text NOT NULL,
        data text NOT NULL,
        PRIMARY KEY (session_id, seq)
    )""",
    # listings count turns and `read_last_turns` seeks them: only the turn/start rows
    "CREATE INDEX events_turn_starts ON events (session_id, seq) WHERE type = 'turn/start'",
)


async def _create_v1(conn: Connection) -> None:
    for statement in _V1:
        await conn.execute(statement)
    await conn.execute("INSERT INTO meta (schema_version) VALUES (0)")


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


async def _add_search(conn: Connection) -> None:
    """The search index: each event's words as a `tsvector` (the 'simple' configuration: the
    words as the index of a SQLite store splits them, without stemming), fed after the flush
    (`search_indexed` counts each session's events it has seen, so the sessions stored before
    it are indexed once, by `trellis search`)."""
    await conn.execute("ALTER TABLE sessions ADD COLUMN search_indexed bigint NOT NULL DEFAULT 0")
    await conn.execute(
        """CREATE TABLE search_docs (
            session_id text COLLATE "C" NOT NULL,
            seq bigint NOT NULL,
            words tsvector NOT NULL,
            PRIMARY KEY (session_id, seq)
        )"""
    )
    await conn.execute("CREATE INDEX search_docs_words ON search_docs USING gin (words)")


# MIGRATIONS[v] brings a database from version v to v + 1.
MIGRATIONS: Sequence[Migration] = (_create_v1, _add_search)


def schema_version() -> int:
    """The version this code writes (the number of migrations)."""
    return len(MIGRATIONS)


async def stored_version(conn: Connection) -> int:
    """The schema's version; 0 for a schema that has never held Trellis tables."""
    if await conn.fetchval("SELECT to_regclass('meta')") is None:
        return 0
    version = await conn.fetchval("SELECT schema_version FROM meta")
    return int(version) if version is not None else 0


async def migrate(conn: Connection, schema: str, shown: str) -> int:
    """Bring `schema` up to date inside the caller's transaction; returns the version.

    Raises `SchemaVersionError` for a schema written by a newer Trellis, or naming the step that
    failed (the caller rolls back, so a failed migration changes nothing).
    """
    # Two first opens at once would both create the tables: the second waits here, then finds
    # them. The lock is the transaction's, so it goes with the commit or the rollback.
    await conn.execute("SELECT pg_advisory_xact_lock($1)", zlib.crc32(f"trellis:{schema}".encode()))
    if await conn.fetchval("SELECT 1 FROM pg_namespace WHERE nspname = $1", schema) is None:
        await conn.execute(f"CREATE SCHEMA {quote_ident(schema)}")
    current = await stored_version(conn)
    target = schema_version()
    if current > target:
        raise SchemaVersionError(
            f"{shown}: schema {schema!r} is at version {current}, newer than this Trellis "
            f"supports ({target}); upgrade Trellis to open it"
        )
    for version in range(current, target):
        try:
            async with conn.transaction():  # a savepoint: the step's own error, not a cascade
                await MIGRATIONS[version](conn)
        except asyncpg.PostgresError as exc:
            raise SchemaVersionError(
                f"{shown}: migration from schema version {version} to {version + 1} failed: {exc}"
            ) from exc
        await conn.execute("UPDATE meta SET schema_version = $1", version + 1)
    return target
