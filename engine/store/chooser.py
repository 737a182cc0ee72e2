"""`open_store`: the one place a front end gets its session store, SQLite or PostgreSQL.

Every command that opens a store asks here, so a new front end's option (`trellis serve --store
URL`) is one line: `open_store(url_settings(args.store, "--store"))`, or
`open_store(store_settings(cwd))` for the configured store. The PostgreSQL store (and asyncpg) is
imported only when a URL names it: the SQLite commands start without it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from engine.paths import sessions_db_path
from engine.store.settings import StoreSettings
from engine.store.sqlite.store import SQLiteStore

if TYPE_CHECKING:
    from engine.store.postgres.store import PostgresStore

Store: TypeAlias = "SQLiteStore | PostgresStore"


def open_store(
    settings: StoreSettings, *, path: Path | None = None, clock: Callable[[], float] = time.time
) -> Store:
    """The store `settings` name, not yet opened (`async with` it, or `await store.open()`):
    PostgreSQL for a URL, else the SQLite file at `path` (default: the data directory's).
    `clock` stamps what the store writes (tests fix it)."""
    if settings.url is not None:
        from engine.store.postgres.store import PostgresStore

        return PostgresStore(settings.url, password=settings.password(), clock=clock)
    return SQLiteStore(path or sessions_db_path(), clock=clock)
