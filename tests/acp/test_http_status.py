"""The streamable HTTP endpoint of `trellis serve` (issue 29, section 4) as a real process, spoken
to in HTTP/2 with httpx: the RFD's status codes for each bad request, the token and Origin rules of
the WebSocket, which stream carries what, and the WebSocket upgrade on the same path."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.acp.http_peer import SseReader, h2_client, http_url, initialized, post, rpc, sse
from tests.acp.ws_peer import WAIT, ServeProcess, bearer, serving

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    config = '[serve]\nallowed_origins = ["https://editor.example"]\n'
    with serving(tmp_path_factory.mktemp("http"), config=config) as served:
        yield served


@pytest.fixture
def url(server: ServeProcess) -> str:
    return http_url(server)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with h2_client() as client:
        yield client


async def new_session(
    http: httpx.AsyncClient, url: str, connection: str, stream: SseReader, server: ServeProcess
) -> str:
    """A `session/new` (id 1) in the served root, answered on the connection's `stream`: its id."""
    new = rpc(1, "session/new", {"cwd": str(server.root), "mcpServers": []})
    await post(http, url, new, connection_id=connection)
    answer, _ = await stream.until_answer(1)
    return str(answer["result"]["sessionId"])


def prompt_message(session_id: str) -> dict[str, Any]:
    """A `session/prompt` (id 2) saying "hi" to `session_id`."""
    return rpc(
        2, "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]}
    )


async def post_prompt(
    http: httpx.AsyncClient, url: str, connection: str, session_id: str
) -> httpx.Response:
    """`prompt_message` POSTed for the session, with its `Acp-Session-Id`."""
    message = prompt_message(session_id)
    return await post(http, url, message, connection_id=connection, session_id=session_id)


async def sent_anyhow(
    http: httpx.AsyncClient, url: str, method: str, headers: dict[str, str]
) -> httpx.Response:
    """A `method` request with the token, JSON in, events accepted and `headers`; a POST
    carries a `session/list`."""
    sent = {**bearer(), "Content-Type": "application/json", "Accept": "text/event-stream"}
    body = json.dumps(rpc(1, "session/list")) if method == "POST" else None
    return await http.request(method, url, content=body, headers={**sent, **headers})


async def test_initialize_is_answered_200_with_the_connection_id_and_a_cookie(
    http: httpx.AsyncClient, url: str
) -> None:
    response = await post(http, url, rpc(7, "initialize", {"protocolVersion": 1}))
    assert response.http_version == "HTTP/2"
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers["acp-connection-id"]
    body = response.json()
    assert body["id"] == 7
    assert body["result"]["agentCapabilities"]["loadSession"] is True
    cookie = response.headers["set-cookie"]
    assert cookie.startswith("trellis_server=")
    assert "Path=/acp" in cookie
    assert "trellis_server" in http.cookies  # httpx keeps it, and sends it back


async def test_a_failed_initialize_opens_no_connection(http: httpx.AsyncClient, url: str) -> None:
    response = await post(http, url, rpc(1, "initialize", {}))
    assert response.status_code == 400
    assert "acp-connection-id" not in response.headers
    assert response.json()["error"]["code"] == -32602


async def test_a_post_is_answered_202_and_its_answer_comes_on_the_connection_stream(
    http: httpx.AsyncClient, url: str, server: ServeProcess
) -> None:
    connection = await initialized(http, url)
    async with sse(http, url, connection) as stream:
        new = rpc(1, "session/new", {"cwd": str(server.root), "mcpServers": []})
        response = await post(http, url, new, connection_id=connection)
        assert (response.status_code, response.content) == (202, b"")
        answer, _ = await stream.until_answer(1)
    assert answer["result"]["sessionId"]


async def test_a_session_stream_carries_the_session_and_its_prompt_answer(
    http: httpx.AsyncClient, url: str, server: ServeProcess
) -> None:
    connection = await initialized(http, url)
    async with sse(http, url, connection) as connection_stream:
        session = await new_session(http, url, connection, connection_stream, server)
        async with sse(http, url, connection, session) as session_stream:
            response = await post_prompt(http, url, connection, session)
            assert response.status_code == 202
            answer, before = await session_stream.until_answer(2)
    assert answer["result"]["stopReason"] == "end_turn"
    updates = [m["params"]["update"]["sessionUpdate"] for m in before if "method" in m]
    assert "agent_message_chunk" in updates
    assert all(m["params"]["sessionId"] == session for m in before if "method" in m)


async def test_a_post_that_is_not_json_is_415(http: httpx.AsyncClient, url: str) -> None:
    response = await post(
        http, url, rpc(1, "initialize", {}), headers={"Content-Type": "text/plain"}
    )
    assert response.status_code == 415
    assert "application/json" in response.text


async def test_a_stream_without_event_stream_in_accept_is_406(
    http: httpx.AsyncClient, url: str
) -> None:
    connection = await initialized(http, url)
    headers = {**bearer(), "Accept": "application/json", "Acp-Connection-Id": connection}
    response = await http.get(url, headers=headers)
    assert response.status_code == 406


async def test_a_batch_is_501(http: httpx.AsyncClient, url: str) -> None:
    connection = await initialized(http, url)
    batch = [rpc(1, "session/list"), rpc(2, "session/list")]
    response = await post(http, url, batch, connection_id=connection)
    assert response.status_code == 501


async def test_a_body_that_is_no_json_is_400_with_a_parse_error(
    http: httpx.AsyncClient, url: str
) -> None:
    response = await http.post(
        url, content=b"{not json", headers={**bearer(), "Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700


@pytest.mark.parametrize("method", ["POST", "GET", "DELETE"])
async def test_a_missing_connection_id_is_400(
    http: httpx.AsyncClient, url: str, method: str
) -> None:
    response = await sent_anyhow(http, url, method, {})
    assert response.status_code == 400
    assert "Acp-Connection-Id is missing" in response.text


@pytest.mark.parametrize("method", ["POST", "GET", "DELETE"])
async def test_an_unknown_connection_id_is_404(
    http: httpx.AsyncClient, url: str, method: str
) -> None:
    response = await sent_anyhow(http, url, method, {"Acp-Connection-Id": "no-such-connection"})
    assert response.status_code == 404
    assert "no connection no-such-connection" in response.text


async def test_an_unknown_connection_on_another_servers_cookie_says_so(
    http: httpx.AsyncClient, url: str
) -> None:
    headers = {"Acp-Connection-Id": "elsewhere", "Cookie": "trellis_server=another-host"}
    response = await sent_anyhow(http, url, "POST", headers)
    assert response.status_code == 404
    assert "its cookie names server another-host" in response.text


async def test_an_unknown_session_id_is_404_for_a_stream_and_a_post(
    http: httpx.AsyncClient, url: str
) -> None:
    connection = await initialized(http, url)
    headers = {
        **bearer(),
        "Accept": "text/event-stream",
        "Acp-Connection-Id": connection,
        "Acp-Session-Id": "no-such-session",
    }
    assert (await http.get(url, headers=headers)).status_code == 404
    cancel = rpc(None, "session/cancel", {"sessionId": "no-such-session"})
    response = await post(http, url, cancel, connection_id=connection, session_id="no-such-session")
    assert response.status_code == 404
    assert "no session no-such-session" in response.text


async def test_a_session_scoped_post_without_the_session_id_is_400(
    http: httpx.AsyncClient, url: str
) -> None:
    connection = await initialized(http, url)
    prompt = prompt_message("s")
    response = await post(http, url, prompt, connection_id=connection)
    assert response.status_code == 400
    assert "session/prompt needs the Acp-Session-Id header" in response.text


async def test_a_session_header_that_is_not_the_messages_session_is_400(
    http: httpx.AsyncClient, url: str, server: ServeProcess
) -> None:
    connection = await initialized(http, url)
    async with sse(http, url, connection) as stream:
        session = await new_session(http, url, connection, stream, server)
    prompt = prompt_message("another")
    response = await post(http, url, prompt, connection_id=connection, session_id=session)
    assert response.status_code == 400
    assert "is not the message's sessionId another" in response.text


async def test_delete_ends_the_connection_and_its_streams(
    http: httpx.AsyncClient, url: str
) -> None:
    connection = await initialized(http, url)
    async with sse(http, url, connection) as stream:
        response = await http.delete(url, headers={**bearer(), "Acp-Connection-Id": connection})
        assert response.status_code == 202
        with pytest.raises(AssertionError, match="the stream ended"):
            await stream.next()
    again = await post(http, url, rpc(1, "session/list"), connection_id=connection)
    assert again.status_code == 404


async def test_another_method_is_405_and_another_path_404(
    http: httpx.AsyncClient, url: str
) -> None:
    put = await http.put(url, headers=bearer())
    assert put.status_code == 405
    assert put.headers["allow"] == "GET, POST, DELETE"
    assert (await http.get(url.replace("/acp", "/other"), headers=bearer())).status_code == 404


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 401),
        ({"Authorization": "Bearer wrong"}, 401),
        ({"Authorization": "Basic dXNlcjpwdw=="}, 401),
        ({**bearer(), "Origin": "https://evil.example"}, 403),
        ({"Origin": "https://evil.example"}, 403),
    ],
)
async def test_the_token_and_origin_rules_of_the_websocket(
    http: httpx.AsyncClient, url: str, headers: dict[str, str], status: int
) -> None:
    sent = {"Content-Type": "application/json", **headers}
    initialize = json.dumps(rpc(0, "initialize", {"protocolVersion": 1}))
    response = await http.post(url, content=initialize, headers=sent)
    assert response.status_code == status
    assert "acp-connection-id" not in response.headers
    if status == 401:
        assert response.headers["www-authenticate"] == 'Bearer realm="trellis"'
    stream = await http.get(url, headers={"Accept": "text/event-stream", **headers})
    assert stream.status_code == status


async def test_an_allowed_origin_with_the_token_is_served(
    http: httpx.AsyncClient, url: str
) -> None:
    headers = {**bearer(), "Origin": "https://editor.example"}
    response = await post(http, url, rpc(0, "initialize", {"protocolVersion": 1}), headers=headers)
    assert response.status_code == 200


async def test_a_websocket_upgrade_on_the_same_path_speaks_acp(url: str) -> None:
    ws_url = url.replace("http://", "ws://")
    async with connect(ws_url, additional_headers=bearer(), open_timeout=WAIT) as ws:
        assert ws.response is not None
        assert ws.response.headers["Acp-Connection-Id"]
        assert ws.response.headers["Set-Cookie"].startswith("trellis_server=")
        await ws.send(json.dumps(rpc(0, "initialize", {"protocolVersion": 1})))
        answer = json.loads(await ws.recv())
    assert answer["result"]["protocolVersion"] == 1


@pytest.mark.parametrize(
    ("headers", "status"),
    [({}, 401), ({**bearer(), "Origin": "https://evil.example"}, 403)],
)
async def test_a_websocket_upgrade_follows_the_same_token_rules(
    url: str, headers: dict[str, str], status: int
) -> None:
    ws_url = url.replace("http://", "ws://")
    with pytest.raises(InvalidStatus) as refused:
        async with connect(ws_url, additional_headers=headers, open_timeout=WAIT):
            pass
    assert refused.value.response.status_code == status


async def test_a_stream_opened_again_replaces_the_first(http: httpx.AsyncClient, url: str) -> None:
    connection = await initialized(http, url)
    async with sse(http, url, connection) as first, sse(http, url, connection) as second:
        with pytest.raises(AssertionError, match="the stream ended"):
            await first.next()
        await post(http, url, rpc(3, "session/list"), connection_id=connection)
        answer, _ = await second.until_answer(3)
    assert "sessions" in answer["result"]


async def test_a_refused_post_leaves_the_clients_other_streams_open(
    http: httpx.AsyncClient, url: str
) -> None:
    connection = await initialized(http, url)
    async with sse(http, url, connection) as stream:
        # a body in many HTTP/2 frames, refused on its headers alone (415)
        refused = await http.post(
            url,
            content=b"x" * 256 * 1024,
            headers={**bearer(), "Content-Type": "text/plain", "Acp-Connection-Id": connection},
        )
        assert refused.status_code == 415
        await post(http, url, rpc(4, "session/list"), connection_id=connection)
        answer, _ = await stream.until_answer(4)
    assert "sessions" in answer["result"]


async def test_a_session_stream_opened_before_the_load_carries_its_replay(
    http: httpx.AsyncClient, url: str, server: ServeProcess
) -> None:
    first = await initialized(http, url)
    async with sse(http, url, first) as stream:
        session = await new_session(http, url, first, stream, server)
        async with sse(http, url, first, session) as session_stream:
            await post_prompt(http, url, first, session)
            await session_stream.until_answer(2)
    await http.delete(url, headers={**bearer(), "Acp-Connection-Id": first})
    # the RFD's resume flow: a new connection opens both streams, then loads the session
    second = await initialized(http, url)
    async with sse(http, url, second) as stream, sse(http, url, second, session) as session_stream:
        params = {"sessionId": session, "cwd": str(server.root), "mcpServers": []}
        load = rpc(3, "session/load", params)
        response = await post(http, url, load, connection_id=second, session_id=session)
        assert response.status_code == 202
        answer, on_connection = await stream.until_answer(3)
        replayed = [await session_stream.next() for _ in range(3)]
    assert answer["result"].keys() == {"modes"}
    assert on_connection == []  # the replay went to the session's stream
    told = [
        m["params"]["update"]["content"]["text"]
        for m in replayed
        if m["params"]["update"]["sessionUpdate"] == "user_message_chunk"
    ]
    assert told == ["hi"]


async def test_an_allowed_page_gets_its_preflight_and_may_read_the_answers(
    http: httpx.AsyncClient, url: str
) -> None:
    asked = {
        "Origin": "https://editor.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    preflight = await http.options(url, headers=asked)
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "https://editor.example"
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert "authorization" in preflight.headers["access-control-allow-headers"]
    assert "acp-session-id" in preflight.headers["access-control-allow-headers"]
    headers = {**bearer(), "Origin": "https://editor.example"}
    response = await post(http, url, rpc(0, "initialize", {"protocolVersion": 1}), headers=headers)
    assert response.headers["access-control-allow-origin"] == "https://editor.example"
    assert response.headers["access-control-expose-headers"] == "acp-connection-id"
    assert response.headers["access-control-allow-credentials"] == "true"


@pytest.mark.parametrize("origin", [{"Origin": "https://evil.example"}, {}])
async def test_a_preflight_from_another_page_is_403(
    http: httpx.AsyncClient, url: str, origin: dict[str, str]
) -> None:
    preflight = await http.options(url, headers={**origin, "Access-Control-Request-Method": "POST"})
    assert preflight.status_code == 403
    assert "access-control-allow-origin" not in preflight.headers


async def test_an_answer_without_an_origin_has_no_cors_headers(
    http: httpx.AsyncClient, url: str
) -> None:
    response = await post(http, url, rpc(0, "initialize", {"protocolVersion": 1}))
    assert "access-control-allow-origin" not in response.headers


@pytest.mark.parametrize("ident", [{}, [1], 1.5, True])
async def test_an_initialize_whose_id_is_no_id_is_400_at_once(
    http: httpx.AsyncClient, url: str, ident: object
) -> None:
    message = {"jsonrpc": "2.0", "id": ident, "method": "initialize", "params": {}}
    response = await asyncio.wait_for(post(http, url, message), 5)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32600
    assert "acp-connection-id" not in response.headers
