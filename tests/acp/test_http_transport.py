"""The streamable HTTP transport in process, on Hypercorn at 127.0.0.1, around a fake of the core's
interface (`connect`, `receive`, `aclose`): its limits (message sizes, the orphan timeout, the
keepalive comment, back-pressure), the server's close, and the WebSocket on the same path. The real
core behind the real command is tested in `test_http_status` and `test_http_sessions`."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, cast

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from app.acp import rpc
from app.acp.core import AcpServer
from app.acp.http_connection import HttpLimits
from app.acp.http_server import HttpServer, listen_http
from app.acp.http_transport import AcpHttpApp
from app.acp.transport import Send
from engine.store.errors import StoreError
from tests.acp.http_peer import h2_client, post, sse
from tests.acp.http_peer import rpc as message
from tests.acp.ws_peer import WAIT, bearer
from tests.processes import POLL, POLLS


@dataclass(slots=True)
class FakeConnection:
    """Answers each request with its method; `closed` is set when the transport closes it."""

    send: Send
    received: list[dict[str, Any]] = field(default_factory=list)
    closed: asyncio.Event = field(default_factory=asyncio.Event)

    async def receive(self, text: str) -> None:
        incoming = json.loads(text)
        self.received.append(incoming)
        if "id" in incoming and "method" in incoming:
            answer = rpc.result_message(incoming["id"], {"method": incoming["method"]})
            await self.send(rpc.serialize(answer)[0])

    async def aclose(self) -> None:
        self.closed.set()


class UnreadableStore:
    """A session table whose store cannot be read (a database away)."""

    def get(self, session_id: str) -> None:
        return None

    async def store(self) -> UnreadableStore:
        return self

    async def info(self, session_id: str) -> None:
        raise StoreError("the store cannot be reached")


@dataclass(slots=True)
class FakeCore:
    connections: dict[str, FakeConnection] = field(default_factory=dict)
    sessions: UnreadableStore = field(default_factory=UnreadableStore)

    def connect(self, send: Send, *, connection_id: str) -> FakeConnection:
        self.connections[connection_id] = FakeConnection(send)
        return self.connections[connection_id]


@dataclass(slots=True)
class Served:
    core: FakeCore
    server: HttpServer
    url: str


LIMITS = HttpLimits(
    max_incoming=4000,
    max_outgoing=1000,
    high_water=2000,
    keepalive=0.2,
    orphan_timeout=0.5,
    initialize_timeout=WAIT,
    auth_timeout=0.5,
)


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    core = FakeCore()
    app = AcpHttpApp(cast(AcpServer, core), token="test-token-0123456789abcdef", limits=LIMITS)
    server = await listen_http(app, "127.0.0.1", 0)
    try:
        yield Served(core, server, f"http://127.0.0.1:{server.port}/acp")
    finally:
        await server.aclose()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with h2_client() as client:
        yield client


async def opened(served: Served, http: httpx.AsyncClient) -> tuple[str, FakeConnection]:
    response = await post(http, served.url, message(0, "initialize", {}))
    assert response.status_code == 200
    assert response.json()["result"] == {"method": "initialize"}
    name = response.headers["acp-connection-id"]
    return name, served.core.connections[name]


async def test_a_post_over_the_size_limit_is_413_and_reaches_no_core(
    served: Served, http: httpx.AsyncClient
) -> None:
    name, fake = await opened(served, http)
    big = message(1, "session/list", {"pad": "x" * LIMITS.max_incoming})
    response = await post(http, served.url, big, connection_id=name)
    assert response.status_code == 413
    assert [m["method"] for m in fake.received] == ["initialize"]


async def test_an_outgoing_message_over_the_limit_is_logged_and_not_sent(
    served: Served, http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    name, fake = await opened(served, http)
    async with sse(http, served.url, name) as stream:
        with caplog.at_level(logging.ERROR):
            big = rpc.notification("x/big", {"pad": "x" * LIMITS.max_outgoing})
            await fake.send(rpc.serialize(big)[0])
            await fake.send(rpc.serialize(rpc.notification("x/small", {}))[0])
            after = await stream.next()
    assert after["method"] == "x/small"
    assert "exceeds the 1000-byte limit; not sent" in caplog.text


async def test_a_quiet_stream_gets_a_keepalive_comment(
    served: Served, http: httpx.AsyncClient
) -> None:
    name, fake = await opened(served, http)
    async with sse(http, served.url, name) as stream:
        await asyncio.sleep(LIMITS.keepalive * 3)
        await fake.send(rpc.serialize(rpc.notification("x/late", {}))[0])
        late = await stream.next()
    assert late["method"] == "x/late"
    assert ": keepalive" in stream.comments


async def test_a_connection_without_a_stream_is_closed_after_the_orphan_timeout(
    served: Served, http: httpx.AsyncClient
) -> None:
    name, fake = await opened(served, http)
    # a client of its own, whose going the server sees (httpx does not reset an HTTP/2 stream it
    # stops reading; it closes the connection when the client closes)
    async with h2_client() as streamer, sse(streamer, served.url, name):
        await asyncio.sleep(LIMITS.orphan_timeout * 2)
        assert not fake.closed.is_set()  # a stream is open: not an orphan
    await asyncio.wait_for(fake.closed.wait(), WAIT)
    again = await post(http, served.url, message(2, "session/list"), connection_id=name)
    assert again.status_code == 404


async def test_a_client_with_no_stream_open_holds_the_core_back(
    served: Served, http: httpx.AsyncClient
) -> None:
    name, fake = await opened(served, http)
    note = rpc.serialize(rpc.notification("x/n", {"pad": "y" * 500}))[0]
    sending = asyncio.ensure_future(_send_many(fake, note, 10))
    await asyncio.sleep(0.1)
    assert not sending.done()  # 10 x 540 bytes pass the 2,000-byte high-water mark
    async with sse(http, served.url, name) as stream:
        received = [await stream.next() for _ in range(10)]
        await asyncio.wait_for(sending, WAIT)
    assert [m["method"] for m in received] == ["x/n"] * 10


async def _send_many(fake: FakeConnection, text: str, count: int) -> None:
    for _ in range(count):
        await fake.send(text)


async def test_closing_the_server_ends_streams_and_closes_each_core_connection(
    served: Served, http: httpx.AsyncClient
) -> None:
    name, fake = await opened(served, http)
    async with sse(http, served.url, name) as stream:
        await served.server.aclose()
        with pytest.raises(AssertionError, match="the stream ended"):
            await stream.next()
    assert fake.closed.is_set()


async def test_websocket_text_frames_reach_the_core_and_binary_ones_do_not(
    served: Served,
) -> None:
    ws_url = served.url.replace("http://", "ws://")
    async with connect(ws_url, additional_headers={**bearer("test-token-0123456789abcdef")}) as ws:
        assert ws.response is not None
        name = ws.response.headers["Acp-Connection-Id"]
        await ws.send(b"\x00binary")
        await ws.send(json.dumps(message(1, "initialize", {})))
        answer = json.loads(await ws.recv())
        fake = served.core.connections[name]
        assert [m["method"] for m in fake.received] == ["initialize"]
    assert answer["result"] == {"method": "initialize"}
    for _ in range(POLLS):  # the handler closes the core's connection once the socket is gone
        if fake.closed.is_set():
            break
        await asyncio.sleep(POLL)
    assert fake.closed.is_set()


async def test_a_websocket_message_over_the_size_limit_closes_with_1009(served: Served) -> None:
    ws_url = served.url.replace("http://", "ws://")
    async with connect(ws_url, additional_headers={**bearer("test-token-0123456789abcdef")}) as ws:
        await ws.send("x" * (LIMITS.max_incoming + 1))
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), WAIT)
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1009


def authenticate(token: str) -> str:
    params = {"methodId": "trellis-token", "_meta": {"trellis/token": token}}
    return json.dumps(message(0, "authenticate", params))


async def test_a_websocket_may_authenticate_by_its_first_message(served: Served) -> None:
    ws_url = served.url.replace("http://", "ws://") + "?auth=message"
    async with connect(ws_url) as ws:
        await ws.send(authenticate("test-token-0123456789abcdef"))
        assert json.loads(await ws.recv()) == {"jsonrpc": "2.0", "id": 0, "result": {}}
        await ws.send(json.dumps(message(1, "initialize", {})))
        answer = json.loads(await ws.recv())
    assert answer["result"] == {"method": "initialize"}


async def test_a_websocket_with_a_wrong_first_message_token_is_closed_with_1008(
    served: Served,
) -> None:
    ws_url = served.url.replace("http://", "ws://") + "?auth=message"
    async with connect(ws_url) as ws:
        await ws.send(authenticate("wrong"))
        refused = json.loads(await ws.recv())
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), WAIT)
    assert refused["error"]["code"] == -32000
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1008
    assert served.core.connections == {}


async def test_closing_the_server_closes_its_websockets_with_1001(served: Served) -> None:
    ws_url = served.url.replace("http://", "ws://")
    async with connect(ws_url, additional_headers={**bearer("test-token-0123456789abcdef")}) as ws:
        await ws.send(json.dumps(message(1, "initialize", {})))
        await ws.recv()
        closing = asyncio.ensure_future(served.server.aclose())
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), WAIT)
        await asyncio.wait_for(closing, WAIT)
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1001
    assert all(fake.closed.is_set() for fake in served.core.connections.values())


async def test_a_websocket_that_never_authenticates_is_closed_with_1008(served: Served) -> None:
    ws_url = served.url.replace("http://", "ws://") + "?auth=message"
    async with connect(ws_url) as ws:
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), WAIT)
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1008
    assert served.core.connections == {}


async def test_a_session_id_the_store_cannot_check_is_503(
    served: Served, http: httpx.AsyncClient
) -> None:
    name, _ = await opened(served, http)
    headers = {
        **bearer(),
        "Accept": "text/event-stream",
        "Acp-Connection-Id": name,
        "Acp-Session-Id": "s-1",
    }
    response = await http.get(served.url, headers=headers)
    assert response.status_code == 503
    assert response.text == "the store cannot be reached\n"
