"""The session catalog of a SQLite file (see `engine.store.catalog`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from engine.store.base import SessionPage
from engine.store.session_list import list_sessions
from engine.store.sqlite.database import SQLiteDatabase
from engine.store.step_usage import StepRow, step_rows


class SQLiteCatalog:
    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db

    async def list(
        self, *, cwd: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> SessionPage:
        """As `SQLiteStore.list`."""
        async with self._db.transaction("listing sessions", write=False) as conn:
            return await list_sessions(self._db.fetch_on(conn), cwd=cwd, limit=limit, cursor=cursor)

    async def step_rows(self, since: float | None) -> tuple[StepRow, ...]:
        """As `engine.store.step_usage.step_rows`."""
        async with self._db.transaction("reading usage", write=False) as conn:
            return await step_rows(self._db.fetch_on(conn), since)


@asynccontextmanager
async def open_sqlite_catalog(path: Path, *, busy_timeout: float) -> AsyncIterator[SQLiteCatalog]:
    db = SQLiteDatabase(path, busy_timeout=busy_timeout)
    await db.open()
    try:
        yield SQLiteCatalog(db)
    finally:
        await db.aclose()
