"""Store failures: each names the file or session and the cause."""

from engine.errors import TrellisError


class StoreError(TrellisError):
    """Base of every store failure."""


class NotADatabaseError(StoreError):
    """The data file exists but is not a SQLite database (or is corrupt)."""


class DatabaseLockedError(StoreError):
    """Another connection held the database longer than the busy timeout."""


class StoreUnavailableError(StoreError):
    """The data directory or file cannot be created, opened or written."""


class UnknownSessionError(StoreError, KeyError):
    """No session has this id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown session"


class AmbiguousSessionError(StoreError, LookupError):
    """An id prefix that more than one session's id starts with."""


class ShortPrefixError(StoreError, LookupError):
    """An id prefix too short to name a session on purpose."""


class LeaseError(StoreError):
    """Another live writer holds this session's lease; `holder` names it for a front end that
    shows the session read-only ("" when the error is this writer's own lost lease)."""

    def __init__(self, message: str, *, holder: str = "") -> None:
        super().__init__(message)
        self.holder = holder


class ForkPointError(StoreError, ValueError):
    """`fork` was asked to cut a session where it is not allowed."""


class SequenceError(StoreError, ValueError):
    """A batch does not continue the stored log (seq gap, overlap or invariant violation)."""


class SchemaVersionError(StoreError):
    """The database was written by a newer Trellis, or a migration failed."""


class StoreConfigError(StoreError):
    """The store's configuration is refused: a project naming `[store]`, a URL with a password,
    a server off loopback without verified TLS."""


class FollowError(StoreError):
    """Following a session stopped: the notification connection was lost."""


class SearchUnavailableError(StoreError):
    """The store cannot search: its SQLite has no FTS5, or the index was made by a newer one."""


class SearchSyntaxError(StoreError, ValueError):
    """A search query that cannot be read; the message says what is wrong and how to write it."""
