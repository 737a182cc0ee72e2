"""JSON-RPC 2.0 framing for the ACP bridge: reading one incoming message, writing answers.

The envelopes' parts come from the `acp` package's schema (`Error`); what is checked here is only
what the package's own connection leaves to chance: a text that is no JSON, a JSON value that is no
object, a method that is no string. Each becomes an error answer, never a dropped connection.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, get_args

from acp.exceptions import RequestError
from acp.schema import Error
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError, to_json

MAX_OUTGOING_BYTES = 1024 * 1024
"""No outgoing WebSocket frame or stdio line is larger (UTF-8 bytes of the serialized message)."""

MAX_INCOMING_BYTES = 16 * 1024 * 1024
"""Incoming messages up to this size are read; larger ones are refused by the transport."""

RequestId = int | str | None

JSONRPC_VERSION = "2.0"
"""Every request and notification names exactly this version (JSON-RPC 2.0, section 4)."""

_MISSING = object()

# JSON-RPC 2.0's own error codes
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800  # ACP's answer to a request the client withdrew (`$/cancel_request`)

# Trellis's own error codes (JSON-RPC leaves -32000..-32099 to servers; ACP uses -32000 and -32002)
UNKNOWN_SESSION = -32002  # ACP's "resource not found"
SESSION_BUSY = -32010
SESSION_READ_ONLY = -32011
TURN_FAILED = -32012
NOT_INITIALIZED = -32013
REFUSED = -32014  # the engine refused (a config, store or MCP server error): its message says why


@dataclass(frozen=True, slots=True)
class Incoming:
    """One parsed message: a request (`id` set), a notification, or an answer to our request."""

    method: str | None
    id: RequestId
    has_id: bool
    params: Any
    result: Any = None
    error: dict[str, Any] | None = None

    @property
    def is_response(self) -> bool:
        return self.method is None


class BadMessage(Exception):
    """A message that cannot be handled: the error to answer, with the id when it had one."""

    def __init__(self, error: RequestError, ident: RequestId = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.ident = ident


class BadResponse(Exception):
    """A message with an id and no method that is no valid response: never answered (JSON-RPC
    answers no response), only logged; `ident` is the id it names."""

    def __init__(self, ident: RequestId, reason: str) -> None:
        super().__init__(reason)
        self.ident = ident


def parse(text: str) -> Incoming:
    """One incoming message; raises `BadMessage` (parse error, invalid request: to be answered)
    or `BadResponse` (a malformed response: to be dropped) otherwise."""
    try:
        message = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise BadMessage(RequestError.parse_error({"details": str(error)[:200]})) from None
    if not isinstance(message, dict):
        raise BadMessage(
            RequestError(INVALID_REQUEST, "Invalid request: a message must be a JSON object")
        )
    has_id = "id" in message
    ident = message.get("id")
    if ident is not None and (not isinstance(ident, int | str) or isinstance(ident, bool)):
        raise BadMessage(
            RequestError(INVALID_REQUEST, "Invalid request: id must be a number, a string or null")
        )
    method = message.get("method")
    if method is None:
        if not has_id or ("result" not in message and "error" not in message):
            raise BadMessage(
                RequestError(INVALID_REQUEST, "Invalid request: no method, and no result or error"),
                ident,
            )
        return _response(message, ident)
    if not isinstance(method, str):
        raise BadMessage(
            RequestError(INVALID_REQUEST, "Invalid request: method must be a string"), ident
        )
    version = message.get("jsonrpc", _MISSING)
    if version != JSONRPC_VERSION or type(version) is not str:
        got = "it is missing" if version is _MISSING else f"got {json.dumps(version)}"
        raise BadMessage(
            RequestError(INVALID_REQUEST, f'Invalid request: jsonrpc must be "2.0"; {got}'), ident
        )
    params = message.get("params")
    if params is not None and not isinstance(params, dict):  # ACP passes params by name only
        raise BadMessage(
            RequestError(INVALID_PARAMS, "Invalid params: params must be an object"), ident
        )
    return Incoming(method, ident, has_id, params)


def _response(message: dict[str, Any], ident: RequestId) -> Incoming:
    """A response: version 2.0, and a result or an error object with a code and a message."""
    version = message.get("jsonrpc", _MISSING)
    if version != JSONRPC_VERSION or type(version) is not str:
        raise BadResponse(ident, 'jsonrpc is not "2.0"')
    if "result" in message and "error" in message:
        raise BadResponse(ident, "it has both a result and an error")
    has_error = "error" in message
    failure = message.get("error")
    if has_error:
        code = failure.get("code") if isinstance(failure, dict) else None
        text = failure.get("message") if isinstance(failure, dict) else None
        if not isinstance(code, int) or isinstance(code, bool) or not isinstance(text, str):
            raise BadResponse(
                ident, "its error is not an object with an integer code and a message"
            )
    return Incoming(
        None,
        ident,
        True,
        None,
        result=message.get("result"),
        error=failure if isinstance(failure, dict) else None,
    )


def invalid_params(error: ValidationError) -> RequestError:
    """-32602 whose message names the first field that is wrong (e.g. `sessionId`)."""
    problems = error.errors(include_url=False)
    first = problems[0] if problems else None
    where = ".".join(str(part) for part in first["loc"]) if first else "params"
    what = first["msg"] if first else "invalid"
    details = [
        {"field": ".".join(str(part) for part in p["loc"]), "problem": p["msg"]} for p in problems
    ]
    return RequestError(
        INVALID_PARAMS, f"Invalid params: {where or 'params'}: {what}", {"errors": details}
    )


def replaced_field(model: BaseModel, params: Any) -> RequestError | None:
    """-32602 naming the first field of `params` that the `acp` package's lenient validation
    replaced with its default because it did not fit (`clientCapabilities: 5` becomes a plain
    dict where a model belongs, which a handler would trip on), or None."""
    where = _replaced(model, ())
    if where is None:
        return None
    given = params
    for key in where:
        given = given.get(key) if isinstance(given, dict) else None
    shown = json.dumps(given)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    return RequestError(
        INVALID_PARAMS,
        f"Invalid params: {'.'.join(where)}: {shown} is not an object of the expected shape",
        {"errors": [{"field": ".".join(where), "problem": "not an object of the expected shape"}]},
    )


def _replaced(model: BaseModel, path: tuple[str, ...]) -> tuple[str, ...] | None:
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        where = (*path, info.alias or name)
        if isinstance(value, BaseModel):
            found = _replaced(value, where)
            if found is not None:
                return found
        elif isinstance(value, dict) and _names_a_model(info.annotation):
            return where
    return None


def _names_a_model(annotation: Any) -> bool:
    if isinstance(annotation, type):
        return issubclass(annotation, BaseModel)
    return any(_names_a_model(arg) for arg in get_args(annotation))


def text_problem(text: str) -> str | None:
    """Why `text` cannot name a session or a path (a NUL, or a lone surrogate that no UTF-8 file
    name or store can hold), or None."""
    nul = text.find("\0")
    if nul >= 0:
        return f"holds a NUL character at position {nul}"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return f"holds a lone surrogate at position {error.start}, which no UTF-8 text can carry"
    return None


def dump(model: BaseModel) -> Any:
    """A schema model as ACP writes it: camelCase aliases, no unset optional fields."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def result_message(ident: RequestId, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def error_message(ident: RequestId, error: RequestError) -> dict[str, Any]:
    """An error answer whose `data.details` says why (what clients such as Toad show): the
    error's own details, else its message."""
    data = error.data
    if data is None:
        data = {"details": str(error)}
    elif isinstance(data, dict) and "details" not in data:
        data = {**data, "details": str(error)}
    body = Error(code=error.code, message=str(error), data=data)
    return {"jsonrpc": "2.0", "id": ident, "error": dump(body)}


def notification(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def request(ident: int, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}


class UpdateEncoder:
    """One session's `session/update` notifications as the UTF-8 bytes `serialize` writes for
    them (the very same bytes), for `session/load`, which sends tens of thousands: the envelope
    around each update is encoded once, not built and serialized again for every message."""

    def __init__(self, session_id: str) -> None:
        self._session_id = session_id
        try:
            self._head: bytes | None = (
                b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":'
                + to_json(session_id)
                + b',"update":'
            )
        except PydanticSerializationError:  # a lone surrogate: every message goes the slow way
            self._head = None

    def encode(self, updates: Iterable[Any]) -> list[bytes]:
        """The notifications carrying `updates`, in order, serialized; text with a lone surrogate
        is written with JSON escapes, as `serialize` writes it."""
        head = self._head
        if head is None:
            return [self._escaped(update) for update in updates]
        messages: list[bytes] = []
        append = messages.append
        for update in updates:
            try:
                append(head + to_json(update) + b"}}")
            except PydanticSerializationError:
                append(self._escaped(update))
        return messages

    def _escaped(self, update: Any) -> bytes:
        params = {"sessionId": self._session_id, "update": update}
        return serialize(notification("session/update", params))[0].encode()


def serialize(message: dict[str, Any]) -> tuple[str, int]:
    """One message as one line of compact JSON and its size in UTF-8 bytes (a raw newline inside
    a string is escaped). Written by pydantic-core's encoder, which takes about a quarter of the
    time `json.dumps` takes and gives the UTF-8 bytes, so the size comes free. Text holding a lone
    surrogate, which no UTF-8 transport can carry, is written with JSON escapes instead."""
    try:
        data = to_json(message)
    except PydanticSerializationError:
        text = json.dumps(message, ensure_ascii=True, separators=(",", ":"))
        return text, len(text)
    return data.decode("utf-8"), len(data)
