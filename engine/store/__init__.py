"""Session stores: the protocol, the embedded SQLite store and the PostgreSQL store."""

from engine.store.base import LoadedSession, SessionInfo, SessionPage, SessionStore
from engine.store.errors import (
    AmbiguousSessionError,
    DatabaseLockedError,
    FollowError,
    ForkPointError,
    LeaseError,
    NotADatabaseError,
    SchemaVersionError,
    SequenceError,
    StoreConfigError,
    StoreError,
    StoreUnavailableError,
    UnknownSessionError,
)

__all__ = [
    "AmbiguousSessionError",
    "DatabaseLockedError",
    "FollowError",
    "ForkPointError",
    "LeaseError",
    "LoadedSession",
    "NotADatabaseError",
    "SchemaVersionError",
    "SequenceError",
    "SessionInfo",
    "SessionPage",
    "SessionStore",
    "StoreConfigError",
    "StoreError",
    "StoreUnavailableError",
    "UnknownSessionError",
]
