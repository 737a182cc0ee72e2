"""The session catalog of a PostgreSQL store (see `engine.store.catalog`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from engine.store.base import SessionPage
from engine.store.postgres.database import PostgresDatabase, fetch_on
from engine.store.postgres.schema import DEFAULT_SCHEMA
from engine.store.session_list import list_sessions
from engine.store.settings import StoreSettings
from engine.store.step_usage import StepRow, step_rows


class PostgresCatalog:
    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    async def list(
        self, *, cwd: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> SessionPage:
        """As `PostgresStore.list`."""
        async with self._db.transaction("listing sessions") as conn:
            return await list_sessions(fetch_on(conn), cwd=cwd, limit=limit, cursor=cursor)

    async def step_rows(self, since: float | None) -> tuple[StepRow, ...]:
        """As `engine.store.step_usage.step_rows`."""
        async with self._db.transaction("reading usage") as conn:
            return await step_rows(fetch_on(conn), since)


@asynccontextmanager
async def open_pg_catalog(
    settings: StoreSettings, *, busy_timeout: float
) -> AsyncIterator[PostgresCatalog]:
    assert settings.url is not None
    db = PostgresDatabase(
        settings.url,
        password=settings.password(),
        schema=DEFAULT_SCHEMA,
        busy_timeout=busy_timeout,
    )
    await db.open()
    try:
        yield PostgresCatalog(db)
    finally:
        await db.aclose()
