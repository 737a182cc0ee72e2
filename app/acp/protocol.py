"""The ACP protocol of one connection, without I/O: text in, typed messages out; answers and
notifications in, text out.

`AcpProtocol.receive` takes one incoming message and returns what it is (a `Request` whose params
are already the method's schema model, a `Notification`, a `CancelRequest`, or the `Response` to a
request sent with `send_request`), answering by itself whatever needs no handler: unreadable
JSON, an invalid request, an unknown method, a request before `initialize`, params that do not fit
the method's schema. Everything to send is queued by the `send_*` methods and taken with
`data_to_send()`, serialized and within `rpc.MAX_OUTGOING_BYTES`.

It owns the framing, the `initialize` order, the ids of the requests sent to the client, the
mapping of an exception to an error answer, and the count of prompts in flight per session (so a
`session/cancel` read right behind a prompt is for that prompt, even before it starts). It never
waits, schedules or writes: `app.acp.connection` drives it on an event loop, and its tests drive it
with plain calls.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from acp.exceptions import RequestError
from acp.schema import (
    CancelNotification,
    CancelRequestNotification,
    ClientCapabilities,
    InitializeRequest,
)
from pydantic import BaseModel, ValidationError

from app.acp import rpc
from engine.errors import TrellisError
from engine.store.errors import UnknownSessionError
from replay.acp import AcpUpdate

log = logging.getLogger(__name__)

EVENTS_META_KEY = "trellis/events"
"""`clientCapabilities._meta["trellis/events"] = true`: the client wants every engine event."""

EXTENSION_PREFIX = "_trellis/"
"""Trellis's own methods, offered only to a client that asked for engine events."""

Methods = Mapping[str, type[BaseModel] | None]
"""The requests a connection answers, each with the schema model its params must fit (None: the
params object is handed over as it is, for the handler to check)."""


@dataclass(frozen=True, slots=True)
class Request:
    """A request to answer: `params` is the method's schema model, or the params object."""

    id: rpc.RequestId
    method: str
    params: Any


@dataclass(frozen=True, slots=True)
class Notification:
    """A notification a handler acts on: `session/cancel` (its params a `CancelNotification`)."""

    method: str
    params: Any


@dataclass(frozen=True, slots=True)
class CancelRequest:
    """`$/cancel_request` for request `id`, still in flight: its handler should stop and it be
    answered -32800, or, for a prompt (`session_id` set), its turn end and it answer
    `cancelled` (the partial result ACP's cancellation allows)."""

    id: rpc.RequestId
    method: str
    session_id: str | None


@dataclass(frozen=True, slots=True)
class Response:
    """The client's answer to a request sent with `send_request`: a result or an error."""

    id: int
    method: str
    result: Any
    error: RequestError | None


Incoming = Request | Notification | CancelRequest | Response


class AcpProtocol:
    """One connection's protocol state. Not thread-safe; never blocks."""

    def __init__(self, methods: Methods, *, name: str = "") -> None:
        self._methods = methods
        self.name = name
        """How the log names the connection."""
        self.initialized = False
        self.client_capabilities: ClientCapabilities | None = None
        """What the client offered in `initialize` (its `fs` and `terminal` are lent to tools)."""
        self.wants_events = False
        """The client asked for every engine event (`EVENTS_META_KEY`)."""
        self.closed = False
        self._outgoing: list[str] = []
        self._in_flight: dict[rpc.RequestId, str] = {}  # received, not answered: id -> method
        self._initializing: dict[rpc.RequestId, InitializeRequest] = {}
        self._next_request = 0
        self._sent: dict[int, str] = {}  # sent to the client, not answered: id -> method
        self._prompt_of: dict[rpc.RequestId, str] = {}  # a prompt in flight -> its session
        self._prompts: dict[str, int] = {}  # session -> its prompts in flight
        self._cancelled: set[str] = set()  # sessions whose prompts in flight were cancelled

    # --- input ---------------------------------------------------------------------------------

    def receive(self, text: str) -> Incoming | None:
        """One incoming message: what a handler must act on, or None when there is nothing to
        do (it was answered here, or is a notification nobody needs, or a stray response)."""
        if self.closed:
            return None
        try:
            message = rpc.parse(text)
        except rpc.BadMessage as bad:
            log.info("connection %s: bad message: %s", self.name, bad.error)
            self._queue(rpc.error_message(bad.ident, bad.error))
            return None
        except rpc.BadResponse as bad:
            return self._bad_response(bad)
        if message.is_response:
            return self._response(message)
        method = message.method
        assert method is not None
        if not message.has_id:
            return self._notification(method, message.params)
        return self._request(message.id, method, message.params)

    def receive_error(self, error: RequestError) -> None:
        """A message the transport could not take (over its size limit): answered with `error`
        and id null, as an unreadable message is."""
        log.info("connection %s: unread message: %s", self.name, error)
        self._queue(rpc.error_message(None, error))

    def _request(self, ident: rpc.RequestId, method: str, params: Any) -> Request | None:
        params = params if params is not None else {}
        refusal = self._refusal(ident, method)
        model = self._methods.get(method)
        if refusal is None and model is not None:
            try:
                typed = model.model_validate(params)
            except ValidationError as error:
                refusal = rpc.invalid_params(error)
            else:
                refusal = rpc.replaced_field(typed, params) or _unusable_name(typed)
                params = typed
        if refusal is not None:
            self._queue(rpc.error_message(ident, refusal))
            return None
        self._in_flight[ident] = method
        if isinstance(params, InitializeRequest):
            self._initializing[ident] = params
        elif method == "session/prompt":
            session_id: str = params.session_id
            self._prompt_of[ident] = session_id
            self._prompts[session_id] = self._prompts.get(session_id, 0) + 1
        return Request(ident, method, params)

    def _refusal(self, ident: rpc.RequestId, method: str) -> RequestError | None:
        """Why request `ident` is not handed to a handler, in the order a client should learn it:
        an id in use, an unknown method, no `initialize` yet."""
        if ident in self._in_flight:
            return RequestError(
                rpc.INVALID_REQUEST,
                f"Invalid request: id {ident!r} is already in use by a request in flight",
            )
        if method not in self._methods or (
            method.startswith(EXTENSION_PREFIX) and not self.wants_events
        ):
            return RequestError(
                rpc.METHOD_NOT_FOUND, f"Method not found: {method}", {"method": method}
            )
        if not self.initialized and method != "initialize":
            return RequestError(
                rpc.NOT_INITIALIZED, f"{method} before initialize: send initialize first"
            )
        return None

    def _notification(self, method: str, params: Any) -> Incoming | None:
        if method == "$/cancel_request":
            return self._cancel_request(params)
        if method != "session/cancel" or not self.initialized:
            return None  # unknown notifications are ignored, as JSON-RPC asks
        try:
            cancel = CancelNotification.model_validate(params)
        except ValidationError as error:
            log.info("connection %s: bad session/cancel: %s", self.name, error)
            return None
        self.cancel_prompts(cancel.session_id)
        return Notification(method, cancel)

    def _cancel_request(self, params: Any) -> CancelRequest | None:
        try:
            cancel = CancelRequestNotification.model_validate(params)
        except ValidationError as error:
            log.info("connection %s: bad $/cancel_request: %s", self.name, error)
            return None
        method = self._in_flight.get(cancel.request_id)
        if method is None:  # answered already, or never asked: nothing to do
            log.info(
                "connection %s: $/cancel_request for %r, which is not in flight",
                self.name,
                cancel.request_id,
            )
            return None
        session_id = self._prompt_of.get(cancel.request_id)
        if session_id is not None:
            self.cancel_prompts(session_id)
        return CancelRequest(cancel.request_id, method, session_id)

    def _response(self, message: rpc.Incoming) -> Response | None:
        method = self._sent.pop(message.id, None) if isinstance(message.id, int) else None
        if method is None:
            log.warning(
                "connection %s: dropped a response to %r, which names no request sent",
                self.name,
                message.id,
            )
            return None
        assert isinstance(message.id, int)
        error = None
        if message.error is not None:
            code, text = message.error["code"], message.error["message"]
            error = RequestError(code, text, message.error.get("data"))
        return Response(message.id, method, message.result, error)

    def _bad_response(self, bad: rpc.BadResponse) -> Response | None:
        """A malformed response: logged, never answered. One that names a request sent fails
        that request, so nothing waits for an answer that came."""
        method = self._sent.pop(bad.ident, None) if isinstance(bad.ident, int) else None
        if method is None:
            log.warning(
                "connection %s: dropped a malformed response to %r: %s", self.name, bad.ident, bad
            )
            return None
        assert isinstance(bad.ident, int)
        log.warning("connection %s: a malformed answer to %s: %s", self.name, method, bad)
        error = RequestError(
            rpc.INVALID_REQUEST, f"the client's answer to {method} is malformed: {bad}"
        )
        return Response(bad.ident, method, None, error)

    # --- state ---------------------------------------------------------------------------------

    def prompts(self, session_id: str) -> int:
        """This connection's prompts to `session_id` that arrived and are not answered."""
        return self._prompts.get(session_id, 0)

    def prompt_cancelled(self, session_id: str) -> bool:
        """A `session/cancel` (or a `$/cancel_request` for one of them) came after this
        session's prompts in flight: one that has not reached the Agent yet does not run. Spent once they are all
        answered."""
        return session_id in self._cancelled

    def cancel_prompts(self, session_id: str) -> bool:
        """This session's prompts in flight are cancelled (one not started yet will not run);
        False when there are none."""
        if not self._prompts.get(session_id):
            return False
        self._cancelled.add(session_id)
        return True

    def in_flight(self, ident: rpc.RequestId) -> bool:
        return ident in self._in_flight

    # --- output --------------------------------------------------------------------------------

    def send_result(self, ident: rpc.RequestId, result: Any) -> None:
        """The answer to request `ident` (a schema model is written as ACP writes it)."""
        body = rpc.dump(result) if isinstance(result, BaseModel) else result
        self._answered(ident, succeeded=True)
        self._queue(rpc.result_message(ident, body if body is not None else {}))

    def send_error(self, ident: rpc.RequestId, error: BaseException) -> None:
        """An error answer to request `ident`, mapped from what the handler raised: its own
        `RequestError`; -32602 for params that fit no schema; -32002 for an unknown session;
        -32014 for what the engine refused (`TrellisError`); anything else is a bug, logged with
        its traceback and answered -32603."""
        method = self._in_flight.get(ident, "request")
        self._answered(ident, succeeded=False)
        self._queue(rpc.error_message(ident, self._error_of(method, error)))

    def _error_of(self, method: str, error: BaseException) -> RequestError:
        if isinstance(error, RequestError):
            return error
        if isinstance(error, ValidationError):
            return rpc.invalid_params(error)
        if isinstance(error, UnknownSessionError):
            return RequestError(rpc.UNKNOWN_SESSION, str(error))
        if isinstance(error, TrellisError):
            return RequestError(rpc.REFUSED, str(error))
        log.error("connection %s: %s failed", self.name, method, exc_info=error)
        return RequestError(rpc.INTERNAL_ERROR, f"Internal error: {type(error).__name__}: {error}")

    def _answered(self, ident: rpc.RequestId, *, succeeded: bool) -> None:
        self._in_flight.pop(ident, None)
        initialize = self._initializing.pop(ident, None)
        if initialize is not None and succeeded:
            capabilities = initialize.client_capabilities
            meta = capabilities.field_meta if capabilities is not None else None
            self.client_capabilities = capabilities
            self.wants_events = bool(meta and meta.get(EVENTS_META_KEY) is True)
            self.initialized = True
        session_id = self._prompt_of.pop(ident, None)
        if session_id is not None:
            left = self._prompts[session_id] - 1
            if left:
                self._prompts[session_id] = left
            else:
                del self._prompts[session_id]
                self._cancelled.discard(session_id)

    def send_notification(self, method: str, params: Any) -> None:
        self._queue(rpc.notification(method, params))

    def send_messages(self, messages: Iterable[dict[str, Any]]) -> None:
        """Messages built already (a feed's notifications), in order."""
        self._outgoing += self.frames(messages)

    def frames(self, messages: Iterable[dict[str, Any]]) -> list[str]:
        """`messages` serialized as `data_to_send` would give them, without queueing them: for
        a caller that writes them at once, with nothing queued before them (a feed keeping up,
        one event at a time)."""
        if self.closed:
            return []
        limit, serialize = rpc.MAX_OUTGOING_BYTES, rpc.serialize
        texts: list[str] = []
        for message in messages:
            text, size = serialize(message)
            if size > limit:
                replaced = self._frame(message)
                if replaced is None:
                    continue
                text = replaced
            texts.append(text)
        return texts

    def send_request(self, method: str, params: Any) -> int:
        """A request to the client; returns its id, which its `Response` carries."""
        ident = self._next_request
        self._next_request += 1
        self._sent[ident] = method
        self._queue(rpc.request(ident, method, params))
        return ident

    def withdraw(self, ident: int) -> None:
        """Nothing waits for request `ident` any more: an answer that comes later is dropped."""
        self._sent.pop(ident, None)

    def encode_updates(
        self, encoder: rpc.UpdateEncoder, updates: Iterable[AcpUpdate]
    ) -> list[bytes]:
        """`updates` as encoded `session/update` messages, for a transport that takes bytes (a
        `session/load`); one over the size limit (which the translator keeps below) is logged and
        left out. Not queued: the caller writes them."""
        frames = encoder.encode(updates)
        if self.closed:
            return []
        if frames and max(map(len, frames)) > rpc.MAX_OUTGOING_BYTES:
            for frame in frames:
                if len(frame) > rpc.MAX_OUTGOING_BYTES:
                    log.error(
                        "connection %s: a %d-byte session/update was not sent",
                        self.name,
                        len(frame),
                    )
            frames = [frame for frame in frames if len(frame) <= rpc.MAX_OUTGOING_BYTES]
        return frames

    def data_to_send(self) -> list[str]:
        """What is queued, in order, each message one serialized text; the queue is emptied."""
        outgoing, self._outgoing = self._outgoing, []
        return outgoing

    def close(self) -> None:
        """The transport is gone: nothing more is queued, and what was is dropped."""
        self.closed = True
        self._outgoing.clear()

    def _queue(self, message: dict[str, Any]) -> None:
        if self.closed:
            return
        text = self._frame(message)
        if text is not None:
            self._outgoing.append(text)

    def _frame(self, message: dict[str, Any]) -> str | None:
        """`message` serialized. One over the size limit is never sent: an answer becomes an
        error answer saying so, an engine event a stub naming it, anything else None."""
        text, size = rpc.serialize(message)
        if size <= rpc.MAX_OUTGOING_BYTES:
            return text
        what = message.get("method") or "answer"
        log.error("connection %s: a %d-byte %s was not sent", self.name, size, what)
        replacement = _too_big(message, size)
        return None if replacement is None else rpc.serialize(replacement)[0]


NAMES = (("session_id", "sessionId"), ("cwd", "cwd"))
"""The params that name a session or a directory: text a store key or a file name can hold."""


def _unusable_name(params: BaseModel) -> RequestError | None:
    """-32602 for a session id or cwd no store or file system can take (a NUL, a lone surrogate)."""
    for attribute, field in NAMES:
        value = getattr(params, attribute, None)
        problem = rpc.text_problem(value) if isinstance(value, str) else None
        if problem is not None:
            return RequestError(rpc.INVALID_PARAMS, f"Invalid params: {field}: {problem}")
    return None


def _too_big(message: dict[str, Any], size: int) -> dict[str, Any] | None:
    if message.get("method") == "_trellis/event":
        params = message["params"]
        event = {k: v for k, v in params["event"].items() if k != "data"}
        event["omitted"] = f"the event is {size} bytes, over the 1 MiB limit; read it from the log"
        return rpc.notification(
            "_trellis/event", {"sessionId": params["sessionId"], "event": event}
        )
    if "id" in message and "method" not in message:
        error = RequestError(
            rpc.INTERNAL_ERROR,
            f"Internal error: the answer would be {size} bytes, over the 1 MiB limit",
        )
        return rpc.error_message(message["id"], error)
    return None
