"""One PostgreSQL database on a connection of its own and an asyncpg pool: connecting, migrating,
transactions, and asyncpg failures turned into store errors that name the server (never a
password) and the cause.

Imports no event model: `trellis sessions` lists through it (`engine.store.postgres.catalog`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import Any, cast

import asyncpg

from engine.redaction import Redactor, redacted_url
from engine.store.errors import (
    DatabaseLockedError,
    SchemaVersionError,
    StoreError,
    StoreUnavailableError,
)
from engine.store.postgres.schema import Connection, migrate, quote_ident
from engine.store.queries import Fetch, Rows, numbered

CONNECT_TIMEOUT = 10.0
"""Seconds to reach the server before `StoreUnavailableError`."""
POOL_SIZE = 4
"""Connections one store keeps: concurrent reads and a flush need not wait for each other."""


_LOCKED = (
    asyncpg.exceptions.LockNotAvailableError,
    asyncpg.exceptions.QueryCanceledError,  # lock_timeout, statement_timeout
    asyncpg.exceptions.DeadlockDetectedError,
    asyncpg.exceptions.SerializationError,
)
_UNAVAILABLE = (
    OSError,
    asyncio.TimeoutError,
    asyncpg.exceptions.InterfaceError,
    asyncpg.exceptions.ConnectionFailureError,
    asyncpg.exceptions.CannotConnectNowError,
    asyncpg.exceptions.InvalidAuthorizationSpecificationError,
    asyncpg.exceptions.InvalidCatalogNameError,
    asyncpg.exceptions.InsufficientPrivilegeError,
    asyncpg.exceptions.ClientConfigurationError,
)


class PooledConnection(asyncpg.Connection):
    """A pool connection handed back without asyncpg's reset query (advisory unlock, CLOSE ALL,
    UNLISTEN, RESET ALL): the store keeps no session state on one (its settings are connection
    parameters, its advisory lock is transaction-scoped, it LISTENs on a connection of its own),
    and the reset cost a round trip after every flush and read, which on a busy machine is
    where a follower's latency went. An open transaction is still rolled back."""

    def get_reset_query(self) -> str:
        return ""


def fetch_on(conn: Connection) -> Fetch:
    """The shared queries' `Fetch` on one connection (engine.store.queries)."""

    async def fetch(sql: str, params: Sequence[Any]) -> Rows:
        return cast(Rows, await conn.fetch(numbered(sql), *params))  # a Record is a sequence

    return fetch


class PostgresDatabase:
    """The pool of one store. `schema` is the PostgreSQL schema its tables live in (several
    Trellis installations, or tests, can share one database); `busy_timeout` (seconds) is how
    long a statement waits for a row another connection locked before `DatabaseLockedError`."""

    def __init__(self, url: str, *, password: str | None, schema: str, busy_timeout: float) -> None:
        self.url = url
        self.shown = redacted_url(url)
        self.schema = schema
        self._password = password
        self._redact = Redactor([password] if password else [])
        self._busy_timeout = busy_timeout
        self._pool: asyncpg.Pool[asyncpg.Record] | None = None
        self._own: Connection | None = None  # see `_acquired`
        self._own_free = asyncio.Lock()

    @property
    def is_open(self) -> bool:
        return self._pool is not None

    def connect_args(self) -> dict[str, Any]:
        """What `asyncpg.connect` needs for one more connection (the follower's listener)."""
        return {
            "dsn": self.url,
            "password": self._password,
            "timeout": CONNECT_TIMEOUT,
            "server_settings": {
                "search_path": quote_ident(self.schema),
                "lock_timeout": str(int(self._busy_timeout * 1000)),
                "application_name": "trellis",
            },
        }

    async def open(self) -> None:
        """Connect and bring the schema up to date (one migrating process at a time)."""
        if self._pool is not None:
            return
        with self.faults("connecting"):
            # the pool connects only when statements overlap: a command that runs one at a time
            # (`trellis sessions`, `show`) opens one connection, the store's own
            own = await self._connect()
            try:
                pool = await asyncpg.create_pool(
                    min_size=0,
                    max_size=POOL_SIZE,
                    connection_class=PooledConnection,
                    **self.connect_args(),
                )
            except BaseException:
                own.terminate()
                raise
        self._own, self._pool = own, pool
        try:
            async with self.transaction("migrating the schema") as conn:
                await migrate(conn, self.schema, self.shown)
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        own, self._own = self._own, None
        if own is not None:
            if self._own_free.locked():
                own.terminate()  # its user is cut off, as the pool's would be
            else:
                with suppress(*_UNAVAILABLE, asyncpg.PostgresError):
                    await own.close(timeout=CONNECT_TIMEOUT)
        pool, self._pool = self._pool, None
        if pool is not None:
            with self.faults("closing"):
                await pool.close()

    @asynccontextmanager
    async def transaction(self, action: str) -> AsyncIterator[Connection]:
        """One connection in one transaction: committed if the block succeeds, rolled back if
        anything escapes it; asyncpg errors come out as `StoreError`s naming `action`."""
        if self._pool is None:
            raise StoreError(f"{self.shown}: the store is not open (use open() or async with)")
        with self.faults(action):
            async with self._acquired(self._pool) as conn, conn.transaction():
                yield conn

    @asynccontextmanager
    async def connection(self, action: str) -> AsyncIterator[Connection]:
        """One connection, each statement a transaction of its own (one round trip each);
        asyncpg errors come out as `StoreError`s naming `action`."""
        if self._pool is None:
            raise StoreError(f"{self.shown}: the store is not open (use open() or async with)")
        with self.faults(action):
            async with self._acquired(self._pool) as conn:
                yield conn

    async def _connect(self) -> Connection:
        return await asyncpg.connect(connection_class=PooledConnection, **self.connect_args())

    @asynccontextmanager
    async def _acquired(self, pool: asyncpg.Pool[asyncpg.Record]) -> AsyncIterator[Connection]:
        """The store's own connection while no one else uses it, else one of the pool's.

        The pool's acquire and release cost event loop turns on every statement (a shielded
        task, timers), and a follower waits for two statements per event: the writer's
        flush and its own range read. The own connection is opened with the store and dropped
        (opened again at its next use) when a block leaves it in doubt: a driver error, a
        cancellation, a transaction left open."""
        if self._own_free.locked():
            async with pool.acquire() as pooled:
                yield pooled
            return
        async with self._own_free:
            conn = self._own
            if conn is None or conn.is_closed():
                conn = self._own = await self._connect()
            try:
                yield conn
            except BaseException as exc:
                if not isinstance(exc, StoreError) or conn.is_in_transaction():
                    self._own = None
                    conn.terminate()
                raise

    async def fetch(self, action: str, sql: str, *args: Any) -> list[asyncpg.Record]:
        """One statement on its own (no BEGIN and COMMIT around it: one round trip)."""
        async with self.connection(action) as conn:
            return await conn.fetch(sql, *args)

    @contextmanager
    def faults(self, action: str) -> Iterator[None]:
        """Re-raise any driver failure inside the block as the matching `StoreError`."""
        try:
            yield
        except StoreError:
            raise
        except _LOCKED as exc:
            raise DatabaseLockedError(
                self._cause(action, exc, "another connection held the rows too long")
            ) from None
        except _UNAVAILABLE as exc:
            raise StoreUnavailableError(
                self._cause(action, exc, "the server cannot be reached or refused us")
            ) from None
        except asyncpg.exceptions.UndefinedTableError as exc:
            raise SchemaVersionError(
                self._cause(action, exc, "the schema is missing or was changed by hand")
            ) from None
        except asyncpg.PostgresError as exc:
            raise StoreError(self._cause(action, exc, "")) from None

    def _cause(self, action: str, exc: BaseException, why: str) -> str:
        text = self._redact(str(exc) or type(exc).__name__)
        return f"{self.shown}: {action} failed: {text}" + (f" ({why})" if why else "")
