"""`trellis serve` as a real process (issue 13, items 1, 5, 7 and 8): who may connect, what a
connection is told, and frames the server must survive. One server serves the whole module: each
test also shows that whatever the previous one did left it serving."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosedError, InvalidStatus

from app.acp.auth import TOKEN_META_KEY, TOKEN_METHOD_ID
from app.acp.websocket import CONNECTION_ID_HEADER
from tests.acp.ws_peer import (
    TOKEN,
    ServeProcess,
    acp_client,
    answer_to,
    bearer,
    close_quietly,
    initialized,
    raw_socket,
    request,
    serving,
    wait_for_log,
)

SIXTEEN_MIB = 16 * 1024 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    config = '[serve]\nallowed_origins = ["https://editor.example"]\n'
    with serving(tmp_path_factory.mktemp("upgrade"), config=config) as running:
        yield running


async def status_of(url: str, headers: dict[str, str]) -> int:
    """The HTTP status an upgrade is refused with."""
    with pytest.raises(InvalidStatus) as refused:
        async with raw_socket(url, headers=headers):
            pass
    return refused.value.response.status_code


async def test_an_upgrade_without_a_token_gets_401(server: ServeProcess) -> None:
    assert await status_of(server.url, {}) == 401


async def test_an_upgrade_with_a_wrong_token_gets_401(server: ServeProcess) -> None:
    assert await status_of(server.url, bearer("not-" + TOKEN)) == 401
    assert await status_of(server.url, {"Authorization": f"Basic {TOKEN}"}) == 401


async def test_a_browser_origin_outside_the_allow_list_gets_403(server: ServeProcess) -> None:
    headers = {**bearer(), "Origin": "https://evil.example"}
    assert await status_of(server.url, headers) == 403


async def test_an_allowed_origin_connects(server: ServeProcess) -> None:
    async with raw_socket(
        server.url, headers={**bearer(), "Origin": "https://editor.example"}
    ) as ws:
        assert (await initialized(ws))["result"]["protocolVersion"] == 1


async def test_another_path_gets_404(server: ServeProcess) -> None:
    assert await status_of(server.url.replace("/acp", "/other"), bearer()) == 404


async def test_the_package_client_connects_with_the_bearer_token(server: ServeProcess) -> None:
    async with acp_client(server.url) as (connection, _):
        listed = await connection.list_sessions(cwd=str(server.root))
    assert listed.sessions == []


async def test_the_upgrade_names_the_connection(server: ServeProcess) -> None:
    ids = []
    for _ in range(2):
        async with raw_socket(server.url) as ws:
            assert ws.response is not None
            ids.append(ws.response.headers[CONNECTION_ID_HEADER])
    assert all(ids)
    assert ids[0] != ids[1]


def authenticate(token: str, ident: int = 0) -> str:
    params = {"methodId": TOKEN_METHOD_ID, "_meta": {TOKEN_META_KEY: token}}
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": "authenticate", "params": params})


async def test_a_client_without_headers_authenticates_with_its_first_message(
    server: ServeProcess,
) -> None:
    async with raw_socket(server.url + "?auth=message", headers={}) as ws:
        await ws.send(authenticate(TOKEN, ident=7))
        assert await answer_to(ws, 7) == {"jsonrpc": "2.0", "id": 7, "result": {}}
        assert (await initialized(ws))["result"]["protocolVersion"] == 1


@pytest.mark.parametrize(
    "first",
    [
        authenticate("not-" + TOKEN),
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}),
        "not json",
    ],
    ids=["wrong token", "no authenticate", "not json"],
)
async def test_a_first_message_without_the_token_closes_the_connection(
    server: ServeProcess, first: str
) -> None:
    async with raw_socket(server.url + "?auth=message", headers={}) as ws:
        await ws.send(first)
        refused = json.loads(await ws.recv())
        assert refused["error"]["code"] == -32000
        with pytest.raises(ConnectionClosedError) as closed:
            await ws.recv()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1008


async def test_binary_frames_are_ignored(server: ServeProcess) -> None:
    async with raw_socket(server.url) as ws:
        await ws.send(b'{"jsonrpc": "2.0", "id": 0, "method": "initialize"}')
        answer = await initialized(ws)
    assert answer["id"] == 0
    assert answer["result"]["protocolVersion"] == 1


async def test_invalid_json_answers_parse_error_and_the_connection_goes_on(
    server: ServeProcess,
) -> None:
    async with raw_socket(server.url) as ws:
        await ws.send("{not json")
        assert (await answer_to(ws, None))["error"]["code"] == -32700
        assert (await initialized(ws))["result"]["protocolVersion"] == 1


async def request_and_read(ws: ClientConnection, params: object) -> None:
    await request(ws, 0, "initialize", params)
    await ws.recv()


def malformed(rng: random.Random) -> str | bytes:
    """A frame no client should send: random bytes, text or JSON that is no valid request."""
    pieces: list[str | bytes] = [
        rng.randbytes(rng.randrange(1, 64)),
        "".join(chr(rng.randrange(32, 0x2FF)) for _ in range(rng.randrange(1, 64))),
        json.dumps(rng.choice([None, 1, "x", [1, 2], {"a": 1}, True])),
        json.dumps({"jsonrpc": "2.0", "id": rng.randrange(9), "method": rng.randrange(9)}),
        json.dumps({"jsonrpc": "2.0", "id": [1], "method": "initialize"}),
        json.dumps({"jsonrpc": "2.0", "id": 5, "method": "session/prompt", "params": "x"}),
        json.dumps({"jsonrpc": "2.0", "id": 6, "method": "session/load", "params": {}}),
        '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": ',
    ]
    return rng.choice(pieces)


async def test_a_thousand_malformed_frames_leave_the_connection_and_server_serving(
    server: ServeProcess,
) -> None:
    rng = random.Random(13)
    async with raw_socket(server.url) as ws:
        await initialized(ws)
        for _ in range(1000):
            await ws.send(malformed(rng))
        await request(ws, 1000, "session/list", {"cwd": str(server.root)})
        assert "result" in await answer_to(ws, 1000)
    async with raw_socket(server.url) as ws:
        assert (await initialized(ws))["result"]["protocolVersion"] == 1


async def test_a_message_over_16_mib_closes_with_1009_and_the_server_serves_on(
    server: ServeProcess,
) -> None:
    params = {"protocolVersion": 1, "pad": "x" * SIXTEEN_MIB}
    ws = await connect(server.url, additional_headers=bearer(), max_size=None)
    try:
        # the close may come while the message is still being written, or at the next read
        with pytest.raises(ConnectionClosedError) as closed:
            await request_and_read(ws, params)
    finally:
        close_quietly(ws)  # the server closed first: a closing handshake would write to nothing
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1009
    async with raw_socket(server.url) as ws:
        assert (await initialized(ws))["result"]["protocolVersion"] == 1
    wait_for_log(server, "closed with 1009")


async def test_a_message_of_just_under_16_mib_is_read(server: ServeProcess) -> None:
    pad = "x" * (SIXTEEN_MIB - 1000)
    async with raw_socket(server.url, max_size=None) as ws:
        await request(ws, 0, "initialize", {"protocolVersion": 1, "_meta": {"pad": pad}})
        answer = await answer_to(ws, 0)
    assert answer["result"]["protocolVersion"] == 1


async def test_a_session_outside_the_roots_is_refused(server: ServeProcess, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    async with raw_socket(server.url) as ws:
        await initialized(ws)
        await request(ws, 1, "session/new", {"cwd": str(outside), "mcpServers": []})
        refused = await answer_to(ws, 1)
        await request(ws, 2, "session/new", {"cwd": str(server.root), "mcpServers": []})
        accepted = await answer_to(ws, 2)
    assert "error" in refused
    assert str(outside) in refused["error"]["message"]
    assert accepted["result"]["sessionId"]
