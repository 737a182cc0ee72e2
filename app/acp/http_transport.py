"""ACP over streamable HTTP (the remote-transport RFD), as an ASGI application for `trellis serve`.

One endpoint, `/acp`:
- POST a JSON-RPC message (`Content-Type: application/json`, else 415). `initialize`, sent without
  `Acp-Connection-Id`, opens a connection: 200 with the answer as the body, the connection's id in
  `Acp-Connection-Id` and the server's cookie (`AFFINITY_COOKIE`). Any other message needs the
  id (400 without, 404 for one this server does not have) and is answered 202 at once; its answer
  comes on a stream. A session-scoped method (`SESSION_SCOPED`) needs `Acp-Session-Id` too (400
  without); a batch (a JSON array) is 501.
- GET (`Accept: text/event-stream`, else 406) with `Acp-Connection-Id` opens the connection's SSE
  stream, with `Acp-Session-Id` too the session's (404 for a session the server does not have).
- DELETE with `Acp-Connection-Id` ends the connection: 202.
- GET with `Upgrade: websocket`: the same ACP over one WebSocket (ASGI's websocket scope).
Every request passes the token and Origin check of the WebSocket server first (`UpgradeGate`: 403
for a foreign Origin, 401 without the bearer token); a page of `[serve] allowed_origins` gets CORS
answers (an OPTIONS preflight, which carries no token, and the headers its script may read).
Served by Hypercorn (`app.acp.http_server`), which speaks HTTP/2 (and HTTP/1.1, for clients that
cannot do HTTP/2 without TLS).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from http import HTTPStatus
from http.cookies import CookieError, SimpleCookie
from typing import TYPE_CHECKING, Any

from acp.exceptions import RequestError

from app.acp import rpc
from app.acp.auth import Refusal, UpgradeGate, authenticate_first_message, normalized_origin
from app.acp.http_connection import SESSION_SCOPED, HttpConnection, HttpLimits
from app.acp.http_streams import Destination, StreamTicket, request_key
from app.acp.websocket import ACP_PATH, CONNECTION_ID_HEADER
from engine.store.errors import StoreError

if TYPE_CHECKING:
    from app.acp.core import AcpServer

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

SESSION_ID_HEADER = "Acp-Session-Id"
AFFINITY_COOKIE = "trellis_server"
"""Set on `initialize` (and the WebSocket upgrade) to this server's id: a load balancer that
keeps a client on the host whose cookie it carries keeps its connection's requests together
(the RFD requires clients to send back the cookies a server sets)."""
JSON = "application/json"
EVENT_STREAM = "text/event-stream"
ALLOWED_METHODS = "GET, POST, DELETE"
CORS_REQUEST_HEADERS = "authorization, content-type, acp-connection-id, acp-session-id"
CORS_MAX_AGE = 600
"""Seconds a browser may keep a preflight's answer."""

log = logging.getLogger(__name__)


class AcpHttpApp:
    """The ASGI application: one `AcpServer` served to many HTTP connections at once."""

    def __init__(
        self,
        acp: AcpServer,
        *,
        token: str,
        allowed_origins: Sequence[str] = (),
        limits: HttpLimits | None = None,
        server_id: str | None = None,
    ) -> None:
        self._acp = acp
        self._token = token
        self._gate = UpgradeGate.of(token, allowed_origins)
        self.limits = limits or HttpLimits()
        self.server_id = server_id or uuid.uuid4().hex[:16]
        self._connections: dict[str, HttpConnection] = {}
        self._sockets: dict[str, Send] = {}
        """The WebSockets open on this port, by connection id: what closes each."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "websocket":
            await self._websocket(scope, receive, send)
        elif kind == "lifespan":
            await _lifespan(receive, send)

    async def aclose(self) -> None:
        """End every connection: its streams end, or its WebSocket is closed with 1001 (going
        away); their running prompts are cancelled and stored."""
        for connection in list(self._connections.values()):
            await connection.aclose()
        for send in list(self._sockets.values()):
            with contextlib.suppress(OSError):
                await send({"type": "websocket.close", "code": 1001})

    # --- HTTP ----------------------------------------------------------------------------------

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = _Request(scope)
        # the body is read before any answer: Hypercorn's HTTP/2 drops the client's whole
        # connection, its other streams with it, when a request's data arrives after its answer
        # (pgjones/hypercorn#329)
        body = await _body(receive, self.limits.max_incoming)
        if request.path != ACP_PATH:
            await _refuse(send, HTTPStatus.NOT_FOUND, f"ACP is served at {ACP_PATH}")
            return
        method = scope["method"]
        if method == "OPTIONS":  # a browser's preflight carries no token
            await self._preflight(request, send)
            return
        if not await self._admitted(request, send):
            return
        origin = request.header("origin")
        if origin:  # admitted: an allowed page, whose browser reads the answer only with these
            send = _with_cors(send, origin)
        if method == "POST":
            await self._post(request, body, send)
        elif method == "GET" and request.header("upgrade").lower() == "websocket":
            await _refuse(send, HTTPStatus.BAD_REQUEST, "the WebSocket upgrade is incomplete")
        elif method == "GET":
            await self._get(request, receive, send)
        elif method == "DELETE":
            await self._delete(request, send)
        else:
            await _refuse(
                send,
                HTTPStatus.METHOD_NOT_ALLOWED,
                f"{method} is not served at {ACP_PATH}; use {ALLOWED_METHODS}",
                [(b"allow", ALLOWED_METHODS.encode())],
            )

    async def _preflight(self, request: _Request, send: Send) -> None:
        """CORS for the pages of `[serve] allowed_origins`: the methods and headers they may send
        (the token among them); any other origin is 403, as its request would be."""
        origins = request.headers("origin")
        if len(origins) != 1 or normalized_origin(origins[0]) not in self._gate.allowed_origins:
            shown = ", ".join(origins) or "none"
            await _refuse(send, HTTPStatus.FORBIDDEN, f"origin {shown} is not allowed")
            return
        headers = [
            (b"access-control-allow-origin", origins[0].encode("latin-1")),
            (b"access-control-allow-credentials", b"true"),
            (b"access-control-allow-methods", ALLOWED_METHODS.encode()),
            (b"access-control-allow-headers", CORS_REQUEST_HEADERS.encode()),
            (b"access-control-max-age", str(CORS_MAX_AGE).encode()),
            (b"vary", b"origin"),
        ]
        await send({"type": "http.response.start", "status": 204, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    async def _admitted(self, request: _Request, send: Send) -> bool:
        """The WebSocket server's gate: 403 for a foreign Origin, 401 without the token."""
        refusal = self._gate.check(
            origins=request.headers("origin"),
            authorization=request.headers("authorization"),
            query="",
        )
        if refusal is None:
            return True
        log.warning(
            "refused an HTTP %s from %s: %d %s",
            request.method,
            request.peer,
            refusal.status.value,
            refusal.reason,
        )
        extra = []
        if refusal.status is HTTPStatus.UNAUTHORIZED:
            extra.append((b"www-authenticate", b'Bearer realm="trellis"'))
        await _refuse(send, refusal.status, refusal.reason, extra)
        return False

    async def _post(self, request: _Request, body: bytes | None, send: Send) -> None:
        if request.media_type() != JSON:
            await _refuse(
                send,
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
                f"a POST must be {JSON}, got {request.header('content-type') or 'no Content-Type'}",
            )
            return
        if body is None:
            await _refuse(
                send,
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"a message may be at most {self.limits.max_incoming} bytes",
            )
            return
        try:
            text = body.decode("utf-8")
            message = json.loads(text)
        except (UnicodeDecodeError, ValueError, RecursionError) as error:
            failure = RequestError.parse_error({"details": str(error)[:200]})
            await _answer_json(send, HTTPStatus.BAD_REQUEST, rpc.error_message(None, failure))
            return
        if isinstance(message, list):
            await _refuse(send, HTTPStatus.NOT_IMPLEMENTED, "batches are not supported")
            return
        if not isinstance(message, dict):
            failure = RequestError(
                rpc.INVALID_REQUEST, "Invalid request: a message must be a JSON object"
            )
            await _answer_json(send, HTTPStatus.BAD_REQUEST, rpc.error_message(None, failure))
            return
        if message.get("method") == "initialize" and "id" in message:
            ident = message["id"]
            if isinstance(ident, bool) or not isinstance(ident, int | str | None):
                failure = RequestError(
                    rpc.INVALID_REQUEST, "Invalid request: id must be a number, a string or null"
                )
                await _answer_json(send, HTTPStatus.BAD_REQUEST, rpc.error_message(None, failure))
                return
            await self._initialize(request, text, message, send)
            return
        connection = await self._connection(request, send)
        if connection is None:
            return
        method = message.get("method")
        session = request.header(SESSION_ID_HEADER) or None
        if session is None and method in SESSION_SCOPED:
            await _refuse(
                send, HTTPStatus.BAD_REQUEST, f"{method} needs the {SESSION_ID_HEADER} header"
            )
            return
        if session is not None:
            params = message.get("params")
            named = params.get("sessionId") if isinstance(params, dict) else None
            if isinstance(named, str) and named != session:
                await _refuse(
                    send,
                    HTTPStatus.BAD_REQUEST,
                    f"{SESSION_ID_HEADER} {session} is not the message's sessionId {named}",
                )
                return
            if not await self._session_known(connection, session, send):
                return
        scoped = session if method in SESSION_SCOPED else None
        ident = request_key(message.get("id")) if "method" in message else None
        await connection.post(text, ident=ident, session=scoped)
        await _empty(send, HTTPStatus.ACCEPTED)

    async def _initialize(
        self, request: _Request, text: str, message: dict[str, Any], send: Send
    ) -> None:
        if request.header(CONNECTION_ID_HEADER):
            await _refuse(
                send,
                HTTPStatus.BAD_REQUEST,
                f"initialize opens a connection: send it without {CONNECTION_ID_HEADER}",
            )
            return
        try:
            connection = HttpConnection(
                self._acp, str(uuid.uuid4()), self.limits, on_closed=self._forget
            )
        except RuntimeError:  # the server is stopping
            await _refuse(send, HTTPStatus.SERVICE_UNAVAILABLE, "the server is stopping")
            return
        self._connections[connection.id] = connection
        try:
            answer = await connection.initialize(text, request_key(message.get("id")))
        except TimeoutError:
            await connection.aclose()
            await _refuse(send, HTTPStatus.GATEWAY_TIMEOUT, "initialize was not answered")
            return
        if b'"error":' in answer and "error" in json.loads(answer):
            # no connection for a client that did not initialize; the error says why
            await connection.aclose()
            await _answer_bytes(send, HTTPStatus.BAD_REQUEST, answer)
            return
        cookie = f"{AFFINITY_COOKIE}={self.server_id}; Path={ACP_PATH}; HttpOnly; SameSite=Strict"
        await _answer_bytes(
            send,
            HTTPStatus.OK,
            answer,
            [
                (CONNECTION_ID_HEADER.lower().encode(), connection.id.encode()),
                (b"set-cookie", cookie.encode()),
            ],
        )

    async def _connection(self, request: _Request, send: Send) -> HttpConnection | None:
        """The connection `Acp-Connection-Id` names; None once 400 or 404 is sent."""
        connection_id = request.header(CONNECTION_ID_HEADER)
        if not connection_id:
            await _refuse(
                send,
                HTTPStatus.BAD_REQUEST,
                f"{CONNECTION_ID_HEADER} is missing: POST initialize first",
            )
            return None
        connection = self._connections.get(connection_id)
        if connection is not None:
            return connection
        why = f"no connection {connection_id} on this server"
        elsewhere = request.cookie(AFFINITY_COOKIE)
        if elsewhere is not None and elsewhere != self.server_id:
            why += f" (its cookie names server {elsewhere}; this is {self.server_id})"
        await _refuse(send, HTTPStatus.NOT_FOUND, why)
        return None

    async def _session_known(self, connection: HttpConnection, session: str, send: Send) -> bool:
        """Whether the server has `session`; False once 404 (or 503: the store cannot say) is
        sent."""
        try:
            if await connection.knows_session(session):
                return True
        except StoreError as error:
            await _refuse(send, HTTPStatus.SERVICE_UNAVAILABLE, str(error))
            return False
        await _refuse(send, HTTPStatus.NOT_FOUND, f"no session {session} on this server")
        return False

    async def _get(self, request: _Request, receive: Receive, send: Send) -> None:
        if EVENT_STREAM not in request.accepted():
            await _refuse(
                send, HTTPStatus.NOT_ACCEPTABLE, f"a stream is {EVENT_STREAM}: Accept must name it"
            )
            return
        connection = await self._connection(request, send)
        if connection is None:
            return
        session = request.header(SESSION_ID_HEADER) or None
        if session is not None and not await self._session_known(connection, session, send):
            return
        if connection.closed:
            await _refuse(send, HTTPStatus.NOT_FOUND, f"connection {connection.id} has ended")
            return
        await self._stream(connection, session, receive, send)

    async def _stream(
        self, connection: HttpConnection, destination: Destination, receive: Receive, send: Send
    ) -> None:
        """Write the stream's messages as SSE events until the client goes, the connection ends,
        or the client opens the same stream again."""
        ticket = connection.open_stream(destination)
        watcher = asyncio.ensure_future(_until_disconnect(receive, ticket))
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": HTTPStatus.OK.value,
                    "headers": [
                        (b"content-type", EVENT_STREAM.encode()),
                        (b"cache-control", b"no-cache"),
                    ],
                }
            )
            await _pump(connection, ticket, send)
        finally:
            watcher.cancel()
            connection.close_stream(ticket)

    async def _delete(self, request: _Request, send: Send) -> None:
        connection = await self._connection(request, send)
        if connection is None:
            return
        await connection.aclose()
        await _empty(send, HTTPStatus.ACCEPTED)

    def _forget(self, connection: HttpConnection) -> None:
        if self._connections.get(connection.id) is connection:
            del self._connections[connection.id]

    # --- WebSocket -----------------------------------------------------------------------------

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A GET with `Upgrade: websocket`: one text frame per JSON-RPC message both ways, as on
        the WebSocket server's port."""
        request = _Request(scope)
        if (await receive())["type"] != "websocket.connect":
            return
        query = scope.get("query_string", b"").decode("latin-1")
        refusal = (
            Refusal(HTTPStatus.NOT_FOUND, f"ACP is served at {ACP_PATH}")
            if request.path != ACP_PATH
            else self._gate.check(
                origins=request.headers("origin"),
                authorization=request.headers("authorization"),
                query=query,
            )
        )
        if refusal is not None:
            log.warning(
                "refused a WebSocket upgrade from %s: %d %s",
                request.peer,
                refusal.status.value,
                refusal.reason,
            )
            extra = []
            if refusal.status is HTTPStatus.UNAUTHORIZED:
                extra.append((b"www-authenticate", b'Bearer realm="trellis"'))
            await _refuse(send, refusal.status, refusal.reason, extra, prefix="websocket.")
            return
        connection_id = str(uuid.uuid4())
        cookie = f"{AFFINITY_COOKIE}={self.server_id}; Path={ACP_PATH}; HttpOnly; SameSite=Strict"
        await send(
            {
                "type": "websocket.accept",
                "headers": [
                    (CONNECTION_ID_HEADER.lower().encode(), connection_id.encode()),
                    (b"set-cookie", cookie.encode()),
                ],
            }
        )
        if UpgradeGate.needs_message_auth(
            authorization=request.headers("authorization"), query=query
        ) and not await self._authenticate_by_message(receive, send):
            return
        outgoing = _WebSocketSender(send, self.limits.max_outgoing, connection_id)
        try:
            connection = self._acp.connect(outgoing, connection_id=connection_id)
        except RuntimeError:  # the server is stopping
            await send({"type": "websocket.close", "code": 1001})
            return
        self._sockets[connection_id] = send
        try:
            while True:
                message = await receive()
                if message["type"] == "websocket.disconnect":
                    break
                text = message.get("text")
                if text is not None:  # binary frames carry nothing in ACP
                    await connection.receive(text)
        finally:
            del self._sockets[connection_id]
            await connection.aclose()

    async def _authenticate_by_message(self, receive: Receive, send: Send) -> bool:
        """`/acp?auth=message`: the first text frame must be `authenticate` with the token
        (`app.acp.auth`); anything else, or nothing within `auth_timeout`, closes the connection
        with 1008."""
        text: str | None = None
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.limits.auth_timeout):
                while text is None:
                    message = await receive()
                    if message["type"] == "websocket.disconnect":
                        return False
                    text = message.get("text")
        if text is None:
            await send({"type": "websocket.close", "code": 1008})
            return False
        outcome = authenticate_first_message(self._token, text)
        await send({"type": "websocket.send", "text": outcome.answer})
        if not outcome.accepted:
            await send({"type": "websocket.close", "code": 1008})
        return outcome.accepted


class _WebSocketSender:
    """The connection's `Send` (`app.acp.transport`) on a WebSocket of the HTTP port: one text
    frame per message; it waits while Hypercorn's buffer for the socket is full."""

    def __init__(self, send: Send, max_outgoing: int, connection_id: str) -> None:
        self._send = send
        self._max = max_outgoing
        self._id = connection_id

    async def __call__(self, text: str) -> None:
        size = len(text.encode())
        if size > self._max:
            log.error(
                "connection %s: an outgoing message of %d bytes exceeds the %d-byte limit; "
                "not sent",
                self._id,
                size,
                self._max,
            )
            return
        with contextlib.suppress(OSError):  # gone: the connection learns of it from close()
            await self._send({"type": "websocket.send", "text": text})


def _with_cors(send: Send, origin: str) -> Send:
    """`send` with the CORS headers of an allowed page added to the answer's start: the origin,
    its cookie, and the connection's id it may read."""
    added = [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"access-control-allow-credentials", b"true"),
        (b"access-control-expose-headers", CONNECTION_ID_HEADER.lower().encode()),
        (b"vary", b"origin"),
    ]

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *added]}
        await send(message)

    return sending


async def _pump(connection: HttpConnection, ticket: StreamTicket, send: Send) -> None:
    """The stream's messages as SSE events, everything waiting in one write (at most one write
    per `coalesce_seconds` while they keep coming); a comment after `keepalive` seconds of
    silence; the response ends with the stream."""
    outbox, limits = connection.outbox, connection.limits
    loop = asyncio.get_running_loop()
    last_write = -limits.coalesce_seconds
    while True:
        wait = last_write + limits.coalesce_seconds - loop.time()
        if wait > 0 and not ticket.ended:
            await asyncio.sleep(wait)
        taken = outbox.take(ticket)
        if taken:
            body = b"data: " + b"\n\ndata: ".join(taken) + b"\n\n"
            last_write = loop.time()
            await send({"type": "http.response.body", "body": body, "more_body": True})
            continue
        if ticket.ended:
            break
        try:
            async with asyncio.timeout(limits.keepalive):
                await ticket.wake.wait()
        except TimeoutError:
            await send(
                {"type": "http.response.body", "body": b": keepalive\n\n", "more_body": True}
            )
    with contextlib.suppress(OSError):
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _until_disconnect(receive: Receive, ticket: StreamTicket) -> None:
    """End the stream when its client goes."""
    while (await receive())["type"] != "http.disconnect":
        pass
    ticket.end()


async def _body(receive: Receive, limit: int) -> bytes | None:
    """The request's body; None when it passes `limit` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b""
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


class _Request:
    """What the transport reads of a request's scope."""

    def __init__(self, scope: Scope) -> None:
        self.path: str = scope.get("path", "")
        self.method: str = scope.get("method", "GET")
        self._headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
        client = scope.get("client")
        self.peer = f"{client[0]}:{client[1]}" if client else "?"

    def headers(self, name: str) -> list[str]:
        key = name.lower().encode()
        return [value.decode("latin-1") for header, value in self._headers if header == key]

    def header(self, name: str) -> str:
        """The header's value ('' when absent; several are joined as HTTP joins them)."""
        return ", ".join(self.headers(name)).strip()

    def media_type(self) -> str:
        return self.header("content-type").split(";", 1)[0].strip().lower()

    def accepted(self) -> set[str]:
        """The media ranges of `Accept`, without their parameters."""
        return {part.split(";", 1)[0].strip().lower() for part in self.header("accept").split(",")}

    def cookie(self, name: str) -> str | None:
        jar: SimpleCookie = SimpleCookie()
        for value in self.headers("cookie"):
            with contextlib.suppress(CookieError):
                jar.load(value)
        morsel = jar.get(name)
        return morsel.value if morsel is not None else None


async def _refuse(
    send: Send,
    status: HTTPStatus,
    reason: str,
    headers: Sequence[tuple[bytes, bytes]] = (),
    *,
    prefix: str = "",
) -> None:
    """A refusal: the status and its one-line reason as plain text (`prefix` "websocket.": as
    the answer to a WebSocket upgrade)."""
    body = (reason + "\n").encode()
    await send(
        {
            "type": f"{prefix}http.response.start",
            "status": status.value,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), *headers],
        }
    )
    await send({"type": f"{prefix}http.response.body", "body": body})


async def _answer_json(send: Send, status: HTTPStatus, message: dict[str, Any]) -> None:
    await _answer_bytes(send, status, rpc.serialize(message)[0].encode())


async def _answer_bytes(
    send: Send, status: HTTPStatus, body: bytes, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status.value,
            "headers": [(b"content-type", JSON.encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _empty(send: Send, status: HTTPStatus) -> None:
    await send({"type": "http.response.start", "status": status.value, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def _lifespan(receive: Receive, send: Send) -> None:
    """Nothing to start or stop with the server: `trellis serve` owns the core."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
