"""Session stores: the protocol and the embedded SQLite implementation."""

from engine.store.base import LoadedSession, SessionInfo, SessionPage, SessionStore
from engine.store.errors import (
    AmbiguousSessionError,
    DatabaseLockedError,
    ForkPointError,
    LeaseError,
    NotADatabaseError,
    SchemaVersionError,
    SequenceError,
    StoreError,
    StoreUnavailableError,
    UnknownSessionError,
)

__all__ = [
    "AmbiguousSessionError",
    "DatabaseLockedError",
    "ForkPointError",
    "LeaseError",
    "LoadedSession",
    "NotADatabaseError",
    "SchemaVersionError",
    "SequenceError",
    "SessionInfo",
    "SessionPage",
    "SessionStore",
    "StoreError",
    "StoreUnavailableError",
    "UnknownSessionError",
]
