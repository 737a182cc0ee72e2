"""The session catalog: the sessions table, read without the event log.

Listing sessions needs neither the event models nor the log's invariants, and building those is
most of what `trellis sessions` would otherwise spend starting. `open_catalog` opens the database as
the store does and lists through the same function (`engine.store.session_list`); no module here
imports an event model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Protocol

from engine.store.base import SessionPage
from engine.store.settings import StoreSettings
from engine.store.sqlite.catalog import open_sqlite_catalog
from engine.store.step_usage import StepRow


class SessionCatalog(Protocol):
    """The sessions of one open store, for a front end that only lists them."""

    async def list(
        self, *, cwd: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> SessionPage:
        """As `SessionStore.list`."""
        ...

    async def step_rows(self, since: float | None) -> tuple[StepRow, ...]:
        """Every step from `since` on, with the bindings that name its model
        (`engine.store.step_usage`)."""
        ...


@asynccontextmanager
async def open_catalog(
    settings: StoreSettings, path: Path, *, busy_timeout: float = 5.0
) -> AsyncIterator[SessionCatalog]:
    """The catalog of the store `settings` name (the SQLite file at `path` when they name none),
    opened (created and migrated) as the store opens and closed on exit; `busy_timeout`
    (seconds) is how long a read waits for another connection's lock before
    `DatabaseLockedError`."""
    if settings.url is not None:
        from engine.store.postgres.catalog import open_pg_catalog  # its driver only when it is used

        async with open_pg_catalog(settings, busy_timeout=busy_timeout) as catalog:
            yield catalog
        return
    async with open_sqlite_catalog(Path(path), busy_timeout=busy_timeout) as sqlite_catalog:
        yield sqlite_catalog
