"""The WebSocket transport in process, around a fake of the core's interface (`connect`, `receive`,
`close`): what reaches the core, what leaves it, and that a dropped socket closes its connection.
The real core behind the real command is tested in the other `test_ws_*` modules."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import Server
from websockets.exceptions import ConnectionClosedError

from app.acp.core import AcpServer
from app.acp.transport import Send
from app.acp.websocket import AcpWebSocketServer, FrameLimits, FrameSender, close_server
from tests.acp.ws_peer import WAIT, bearer, close_quietly
from tests.processes import POLL, POLLS


@dataclass(slots=True)
class FakeConnection:
    """Echoes each message back; `closed` is set when the transport closes it."""

    send: Send
    received: list[str] = field(default_factory=list)
    closed: asyncio.Event = field(default_factory=asyncio.Event)

    async def receive(self, text: str) -> None:
        self.received.append(text)
        await self.send(text)

    async def aclose(self) -> None:
        self.closed.set()


@dataclass(slots=True)
class FakeCore:
    connections: dict[str, FakeConnection] = field(default_factory=dict)

    def connect(self, send: Send, *, connection_id: str) -> FakeConnection:
        self.connections[connection_id] = FakeConnection(send)
        return self.connections[connection_id]


@dataclass(slots=True)
class Served:
    core: FakeCore
    server: Server
    url: str

    async def connection(self, ws: ClientConnection) -> FakeConnection:
        """The core's side of a client's connection (named by the upgrade's header)."""
        assert ws.response is not None
        name = ws.response.headers["Acp-Connection-Id"]
        for _ in range(POLLS):  # the handler runs once the upgrade is answered
            if name in self.core.connections:
                return self.core.connections[name]
            await asyncio.sleep(POLL)
        raise AssertionError(f"connection {name} never reached the core")


@pytest.fixture
def limits() -> FrameLimits:
    return FrameLimits(max_outgoing=1000, max_incoming=4000, auth_timeout=WAIT)


@pytest.fixture
async def served(limits: FrameLimits) -> AsyncIterator[Served]:
    core = FakeCore()
    transport = AcpWebSocketServer(cast(AcpServer, core), token="tok", limits=limits)
    server = await transport.listen("127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield Served(core, server, f"ws://127.0.0.1:{port}/acp")
    finally:
        await close_server(server)


async def test_text_frames_reach_the_core_in_order_and_binary_ones_do_not(served: Served) -> None:
    async with connect(served.url, additional_headers=bearer("tok")) as ws:
        await ws.send("one")
        await ws.send(b"binary")
        await ws.send("two")
        assert [await ws.recv(), await ws.recv()] == ["one", "two"]
        assert (await served.connection(ws)).received == ["one", "two"]


async def test_a_dropped_socket_closes_its_core_connection(served: Served) -> None:
    ws = await connect(served.url, additional_headers=bearer("tok"))
    connection = await served.connection(ws)
    close_quietly(ws)
    await asyncio.wait_for(connection.closed.wait(), WAIT)


async def test_stopping_the_server_closes_every_core_connection(served: Served) -> None:
    sockets = [await connect(served.url, additional_headers=bearer("tok")) for _ in range(3)]
    connections = [await served.connection(ws) for ws in sockets]
    await close_server(served.server)
    assert all(connection.closed.is_set() for connection in connections)
    for ws in sockets:
        await ws.close()


async def test_an_outgoing_frame_over_the_limit_is_logged_and_not_sent(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    async with connect(served.url, additional_headers=bearer("tok")) as ws:
        connection = await served.connection(ws)
        with caplog.at_level(logging.ERROR, logger="app.acp.websocket"):
            await connection.send("é" * 501)  # 1,002 bytes in UTF-8, 501 characters
            await connection.send("a" * 1000)
        assert await ws.recv() == "a" * 1000
    assert "an outgoing message of 1002 bytes exceeds the 1000-byte frame limit" in caplog.text


async def test_an_incoming_message_over_the_limit_closes_with_1009(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    ws = await connect(served.url, additional_headers=bearer("tok"))
    connection = await served.connection(ws)
    with caplog.at_level(logging.WARNING, logger="app.acp.websocket"):
        await ws.send("x" * 4001)
        await asyncio.wait_for(connection.closed.wait(), WAIT)
    close_quietly(ws)
    assert "sent a message over 4000 bytes; closed with 1009" in caplog.text
    assert connection.received == []


async def test_a_message_authenticated_connection_reaches_the_core_after_its_token(
    served: Served,
) -> None:
    first = (
        '{"jsonrpc":"2.0","id":1,"method":"authenticate",'
        '"params":{"methodId":"trellis-token","_meta":{"trellis/token":"tok"}}}'
    )
    async with connect(served.url + "?auth=message") as ws:
        await ws.send(first)
        assert await ws.recv() == '{"jsonrpc":"2.0","id":1,"result":{}}'
        await ws.send("hello")
        assert await ws.recv() == "hello"
        assert (await served.connection(ws)).received == ["hello"]


@pytest.mark.parametrize("limits", [FrameLimits(auth_timeout=0.1)])
async def test_a_connection_that_never_authenticates_is_closed_without_reaching_the_core(
    served: Served,
) -> None:
    async with connect(served.url + "?auth=message") as ws:
        await ws.send(b"binary frames do not count")
        with pytest.raises(ConnectionClosedError) as closed:
            await ws.recv()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1008
    assert served.core.connections == {}


def count_writes(connection: FakeConnection, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the server's socket writes for this connection, as they happen."""
    transport = cast(FrameSender, connection.send).ws.transport
    writes: list[int] = []
    write = transport.write

    def counted(data: bytes | bytearray | memoryview) -> None:
        writes.append(len(data))
        write(data)

    monkeypatch.setattr(transport, "write", counted)
    return writes


async def test_a_burst_of_frames_is_written_together_whole_and_in_order_before_the_close(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = [f"frame {i} " + "x" * (i % 97) for i in range(3000)]  # about 200 KB
    async with connect(served.url, additional_headers=bearer("tok")) as ws:
        connection = await served.connection(ws)
        writes = count_writes(connection, monkeypatch)
        for frame in sent:  # nothing here yields to the loop: the frames are written together
            await connection.send(frame)
        await close_server(served.server)
        received = [frame async for frame in ws]
    assert received == sent
    assert ws.close_code == 1001
    # one write per 64 KiB (and the close frame), not one per frame
    assert len(writes) <= sum(writes) // (64 * 1024) + 2


@pytest.mark.parametrize("limits", [FrameLimits(coalesce_seconds=0.05)])
async def test_frames_that_keep_coming_are_written_together(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = [f"delta {i}" for i in range(200)]
    async with connect(served.url, additional_headers=bearer("tok")) as ws:
        connection = await served.connection(ws)
        writes = count_writes(connection, monkeypatch)
        for frame in sent:  # one frame per turn of the loop, as a streamed reply sends them
            await connection.send(frame)
            await asyncio.sleep(0)
        received = [await ws.recv() for _ in sent]
    assert received == sent
    # the first frame at once, then what gathered every 50 ms: not a write per frame
    assert len(writes) < len(sent) // 4


async def test_many_connections_at_once(served: Served) -> None:
    async def talk(n: int) -> Any:
        async with connect(served.url, additional_headers=bearer("tok")) as ws:
            for i in range(5):
                await ws.send(f"{n}:{i}")
            return [await ws.recv() for _ in range(5)]

    answers = await asyncio.gather(*(talk(n) for n in range(30)))
    assert answers == [[f"{n}:{i}" for i in range(5)] for n in range(30)]
    assert len(served.core.connections) == 30


async def test_a_client_that_does_not_read_holds_the_sender_back(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = [f"{i:06} " + "z" * 900 for i in range(20_000)]  # about 18 MB, far above any buffer
    async with connect(served.url, additional_headers=bearer("tok"), max_queue=1) as ws:
        connection = await served.connection(ws)
        server_side = cast(FrameSender, connection.send).ws
        transport = server_side.transport
        buffered: list[int] = []
        write = transport.write

        def measured(data: bytes | bytearray | memoryview) -> None:
            write(data)
            buffered.append(transport.get_write_buffer_size())

        monkeypatch.setattr(transport, "write", measured)

        async def send_all() -> None:
            for frame in sent:
                await connection.send(frame)

        sender = asyncio.create_task(send_all())
        for _ in range(POLLS):  # the client reads nothing: the transport fills and pauses
            if server_side.paused:
                break
            await asyncio.sleep(POLL)
        assert server_side.paused
        assert not sender.done()
        received = [await ws.recv() for _ in sent]
        await sender
    assert received == sent
    high_water = transport.get_write_buffer_limits()[1]
    assert max(buffered) <= high_water + 64 * 1024 + 1024


@pytest.mark.parametrize("limits", [FrameLimits(max_outgoing=1024 * 1024)])
async def test_frames_of_every_header_length_reach_the_client_whole(served: Served) -> None:
    """`send_text` writes the frame header itself: a 7-bit, a 16-bit and a 64-bit length, at
    each boundary, with text that is not ASCII too."""
    sizes = (0, 1, 125, 126, 127, 65_535, 65_536, 300_000)
    sent = [*("x" * size for size in sizes), "é" * 40_000]
    async with connect(served.url, additional_headers=bearer("tok"), max_size=None) as ws:
        connection = await served.connection(ws)
        for frame in sent:
            await connection.send(frame)
        received = [await ws.recv() for _ in sent]
    assert received == sent


@pytest.mark.parametrize("limits", [FrameLimits(max_outgoing=300_000)])
async def test_encoded_frames_reach_the_client_whole_and_in_order_and_none_over_the_limit(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    """`write_encoded` (a `session/load` range at once) writes the frames `send` would, each
    header length included, after what was sent before it; one over the limit is not sent."""
    sizes = (0, 1, 125, 126, 127, 65_535, 65_536, 300_000)
    encoded = [*("x" * size for size in sizes), "é" * 40_000, "y" * 300_001, "last"]
    async with connect(served.url, additional_headers=bearer("tok"), max_size=None) as ws:
        connection = await served.connection(ws)
        sender = cast(FrameSender, connection.send)
        await connection.send("first")
        with caplog.at_level(logging.ERROR):
            sender.write_encoded([text.encode("utf-8") for text in encoded])
        received = [await ws.recv() for _ in range(len(encoded))]
    assert received == ["first", *(text for text in encoded if len(text) != 300_001)]
    assert "300001 bytes exceeds the 300000-byte frame limit" in caplog.text
