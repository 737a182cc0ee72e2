"""Turning sqlite3 failures into store errors that name the file and the cause."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from engine.store.errors import (
    DatabaseLockedError,
    NotADatabaseError,
    StoreError,
    StoreUnavailableError,
)

# Primary result codes (https://sqlite.org/rescode.html); extended codes keep them in the low byte.
_LOCKED = {5, 6}  # SQLITE_BUSY, SQLITE_LOCKED
_NOT_A_DATABASE = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB
_UNAVAILABLE = {3, 8, 10, 13, 14}  # PERM, READONLY, IOERR, FULL, CANTOPEN


def translate(exc: sqlite3.Error, path: Path, action: str) -> StoreError:
    """The store error for a sqlite3 failure while doing `action` on the database at `path`."""
    code = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF
    cause = f"{path}: {action} failed: {exc}"
    if code in _LOCKED:
        return DatabaseLockedError(f"{cause} (another process held the database too long)")
    if code in _NOT_A_DATABASE:
        return NotADatabaseError(f"{cause} (the file is not a SQLite database, or it is corrupt)")
    if code in _UNAVAILABLE:
        return StoreUnavailableError(f"{cause} (the file or its directory cannot be written)")
    return StoreError(cause)


@contextmanager
def sqlite_faults(path: Path, action: str) -> Iterator[None]:
    """Re-raise any sqlite3 error inside the block as the matching `StoreError`."""
    try:
        yield
    except sqlite3.Error as exc:
        raise translate(exc, path, action) from exc
