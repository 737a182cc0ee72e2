"""One redactor for every secret Trellis holds, so no endpoint can make the console print one.

A hostile or broken endpoint may echo the API key it was sent (in an error body, a malformed
stream line, an error object inside a 200 stream); MCP server `env` values and the bridge's token
are held the same way. Every text that comes from outside passes through a `Redactor` before it
reaches the screen, the log or `trellis.log`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable

REDACTED = "[redacted]"
"""What a secret is replaced with."""

MIN_SECRET_CHARS = 6
"""Shorter values (`1`, `true`, `debug` in an MCP server's env) are not secrets worth the damage
redacting them would do to every message; a real key or token is far longer."""


def _spellings(secret: str) -> set[str]:
    """The forms a value takes in endpoint text: raw, JSON-escaped (ASCII or not), Python repr."""
    return {
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        repr(secret)[1:-1],
    }


class Redactor:
    """Replaces each held secret, in each of its spellings, with `REDACTED`.

    Immutable: `with_secrets` returns a wider one (a gateway adds the key it read at request time).
    """

    __slots__ = ("_secrets", "_spellings")

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets = frozenset(s for s in secrets if len(s) >= MIN_SECRET_CHARS)
        spellings = set[str]().union(*(_spellings(s) for s in self._secrets))
        # longest first: a secret that contains another is replaced whole
        self._spellings = tuple(sorted(spellings, key=len, reverse=True))

    def __repr__(self) -> str:
        return f"Redactor({len(self._secrets)} secrets)"  # never the values

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def with_secrets(self, *secrets: str | None) -> Redactor:
        """This redactor plus `secrets` (None and short values are skipped)."""
        added = [s for s in secrets if s]
        return Redactor([*self._secrets, *added]) if added else self

    def __call__(self, text: str) -> str:
        for spelling in self._spellings:
            text = text.replace(spelling, REDACTED)
        return text


class RedactingLogFilter(logging.Filter):
    """Redacts a log record's message, its arguments, its traceback and its stack before any
    handler formats it (`trellis.log` must not carry what the screen may not)."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor
        """Replaceable: the command line widens it once the configuration is read."""
        self._formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        redact = self.redactor
        if not redact:
            return True
        record.msg = redact(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def redacted_url(url: str) -> str:
    """`url` with the password of its user part (and any `password=` parameter) replaced by
    `REDACTED`, so a connection string can be named in a message or the log."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return REDACTED  # not even a URL: nothing of it is safe to show
    netloc = parts.netloc
    if password is not None:
        user, _, host = netloc.rpartition("@")
        name = user.partition(":")[0]
        netloc = f"{name}:{REDACTED}@{host}"
    query = parse_qsl(parts.query, keep_blank_values=True)
    if any(key == "password" for key, _ in query):
        shown = [(key, REDACTED if key == "password" else value) for key, value in query]
        return urlunsplit((parts.scheme, netloc, parts.path, urlencode(shown, safe="[]"), ""))
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
