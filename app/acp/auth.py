"""Who may talk to `trellis serve` (docs/ARCHITECTURE.md, "The ACP bridge"): the token and the
Origin check.

A local WebSocket server that runs shell commands is an attack surface: web pages can open
WebSockets to 127.0.0.1, and other local users can connect to a loopback port. So a token is always
required, on loopback too, and a browser `Origin` outside the allow list is refused. Everything here
is decided from header values and message text, without sockets, so it is tested on its own.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path

from acp.exceptions import RequestError
from acp.schema import AuthenticateRequest, AuthenticateResponse
from pydantic import ValidationError

from app.acp import rpc
from engine.errors import TrellisError
from engine.paths import serve_token_path

TOKEN_METHOD_ID = "trellis-token"
"""The `methodId` of the first-message `authenticate` request (see `MessageAuthentication`)."""
TOKEN_META_KEY = "trellis/token"
"""Where that request carries the token: `params._meta["trellis/token"]`."""
MESSAGE_AUTH_QUERY = "auth=message"
"""An upgrade to `/acp?auth=message` without an `Authorization` header is accepted; its first text
frame must then authenticate. Any other upgrade without a valid bearer token gets 401."""
TOKEN_BYTES = 32
"""Entropy of a generated token (43 URL-safe characters)."""


class TokenFileError(TrellisError):
    """The stored token cannot be used (unreadable, empty, or readable by others)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeToken:
    """The token in force, and where it came from, for the banner."""

    value: str
    source: str
    """`the environment variable NAME` or the file's path: never the value itself."""
    created: bool = False
    """True when this run generated it (the only time its value is printed)."""


def load_token(env_name: str, path: Path | None = None) -> ServeToken:
    """The environment variable `env_name` when set and non-empty, else the token stored in the data
    directory, generated there (mode 0600, created exclusively) when there is none yet.

    Raises `TokenFileError` when the stored file is unreadable, empty, or open to the group or
    others (a token other local users can read protects nothing).
    """
    from_env = os.environ.get(env_name) if env_name else None
    if from_env:
        return ServeToken(value=from_env, source=f"the environment variable {env_name}")
    file = path if path is not None else serve_token_path()
    try:
        return _create_token(file)
    except FileExistsError:
        return _read_token(file)


def _create_token(file: Path) -> ServeToken:
    value = secrets.token_urlsafe(TOKEN_BYTES)
    file.parent.mkdir(parents=True, exist_ok=True)
    # O_EXCL: two servers starting at once never overwrite each other's token
    descriptor = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="ascii") as out:
        out.write(value + "\n")
    return ServeToken(value=value, source=str(file), created=True)


def _read_token(file: Path) -> ServeToken:
    try:
        mode = file.stat().st_mode
        text = file.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenFileError(f"cannot read the serve token {file}: {exc}") from exc
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise TokenFileError(
            f"the serve token {file} is open to other users (mode {stat.S_IMODE(mode):o}); "
            "run `chmod 600` on it, or delete it to get a new token"
        )
    if not text:
        raise TokenFileError(f"the serve token {file} is empty; delete it to get a new token")
    return ServeToken(value=text, source=str(file))


def token_matches(expected: str, given: str | None) -> bool:
    """Whether `given` is the token, compared in constant time (no timing oracle on the prefix)."""
    if given is None:
        return False
    return hmac.compare_digest(expected.encode(), given.encode())


def bearer_token(values: Sequence[str]) -> str | None:
    """The token of the one `Authorization: Bearer TOKEN` header; None for none, several, or
    another scheme."""
    if len(values) != 1:
        return None
    scheme, _, token = values[0].strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def normalized_origin(origin: str) -> str:
    """`scheme://host[:port]` in lower case without a trailing slash, as browsers send it."""
    return origin.strip().rstrip("/").lower()


@dataclass(frozen=True, slots=True)
class Refusal:
    """An upgrade refused: the HTTP status and the one-line reason sent as the body."""

    status: HTTPStatus
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class UpgradeGate:
    """Decides an upgrade from its headers: a disallowed `Origin` is 403, a missing or wrong token
    401; an upgrade that asks for message authentication passes to its first frame."""

    token: str
    allowed_origins: frozenset[str]
    """Normalized (`normalized_origin`); empty: no browser page may connect."""

    @classmethod
    def of(cls, token: str, allowed_origins: Sequence[str]) -> UpgradeGate:
        return cls(
            token=token, allowed_origins=frozenset(normalized_origin(o) for o in allowed_origins)
        )

    def check(
        self, *, origins: Sequence[str], authorization: Sequence[str], query: str
    ) -> Refusal | None:
        """None when the upgrade may proceed (then `needs_message_auth` says how it continues)."""
        # a browser always sends Origin; other clients usually send none
        if len(origins) > 1 or (
            origins and normalized_origin(origins[0]) not in self.allowed_origins
        ):
            shown = ", ".join(origins)
            return Refusal(HTTPStatus.FORBIDDEN, f"origin {shown} is not allowed")
        if authorization:
            if token_matches(self.token, bearer_token(authorization)):
                return None
            return Refusal(HTTPStatus.UNAUTHORIZED, "the bearer token is wrong")
        if self.needs_message_auth(authorization=authorization, query=query):
            return None
        return Refusal(
            HTTPStatus.UNAUTHORIZED,
            "a token is required: send `Authorization: Bearer TOKEN`, or connect to "
            f"/acp?{MESSAGE_AUTH_QUERY} and send it as the first message",
        )

    @staticmethod
    def needs_message_auth(*, authorization: Sequence[str], query: str) -> bool:
        """Whether an accepted upgrade must still authenticate with its first text frame."""
        return not authorization and MESSAGE_AUTH_QUERY in query.split("&")


@dataclass(frozen=True, slots=True)
class MessageAuthentication:
    """The outcome of a first frame on an `?auth=message` connection.

    The frame is ACP's own `authenticate` request, with the token in `_meta` (ACP reserves `_meta`
    for exactly such additions):
    `{"jsonrpc": "2.0", "id": 0, "method": "authenticate",
      "params": {"methodId": "trellis-token", "_meta": {"trellis/token": TOKEN}}}`.
    `answer` is the frame to send back: `{}` (`AuthenticateResponse`) when `accepted`, otherwise a
    JSON-RPC error (-32000, authentication required, saying why), after which the connection is
    closed.
    """

    accepted: bool
    answer: str


def authenticate_first_message(token: str, text: str) -> MessageAuthentication:
    """Judge the first text frame of a connection that authenticates by message."""
    try:
        message = rpc.parse(text)
    except rpc.BadMessage:
        return _refused(None, "the first message is not a JSON-RPC request")
    if message.method != "authenticate" or message.id is None:
        return _refused(
            message.id, "the first message must be an `authenticate` request carrying the token"
        )
    try:
        params = AuthenticateRequest.model_validate(message.params)
    except ValidationError:
        return _refused(message.id, "`authenticate` needs params {methodId, _meta}")
    given = (params.field_meta or {}).get(TOKEN_META_KEY)
    if params.method_id != TOKEN_METHOD_ID or not isinstance(given, str):
        return _refused(
            message.id,
            f'`authenticate` needs methodId "{TOKEN_METHOD_ID}" and _meta["{TOKEN_META_KEY}"]',
        )
    if not token_matches(token, given):
        return _refused(message.id, "the token is wrong")
    answer = rpc.result_message(message.id, rpc.dump(AuthenticateResponse()))
    return MessageAuthentication(True, rpc.serialize(answer)[0])


def _refused(request_id: rpc.RequestId, why: str) -> MessageAuthentication:
    error = RequestError.auth_required({"reason": why})
    return MessageAuthentication(False, rpc.serialize(rpc.error_message(request_id, error))[0])
