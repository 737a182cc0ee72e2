"""The streamable HTTP side of the ACP tests: the URL `trellis serve` prints for it, the `acp`
package's HTTP client (`acp.http.create_http_stream`) connected to it, and raw SSE reading for the
tests about which stream carries what.

`h2_client` speaks HTTP/2 from the first byte (prior knowledge), as a client of the RFD's
transport must; the package's own default client speaks HTTP/1.1 to a plain `http://` URL (httpx
negotiates HTTP/2 only over TLS), which the server serves too.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

import httpx
from acp import connect_to_agent
from acp.client.connection import ClientSideConnection
from acp.http import create_http_stream
from acp.interfaces import Client

from tests.acp.ws_peer import TOKEN, WAIT, RecordingClient, ServeProcess, bearer

HTTP_MARKER = "streamable HTTP (HTTP/2, or a WebSocket upgrade) at "


def http_url(server: ServeProcess) -> str:
    """The streamable HTTP endpoint's URL from the server's banner."""
    for line in server.stderr:
        if HTTP_MARKER in line:
            return line.split(HTTP_MARKER, 1)[1].split()[0]
    raise AssertionError(f"trellis serve printed no HTTP URL: {''.join(server.stderr)}")


def h2_client(versions: list[str] | None = None) -> httpx.AsyncClient:
    """An HTTP/2-only client (prior knowledge) with no read timeout (streams are long-lived);
    each response's HTTP version is added to `versions`."""

    async def seen(response: httpx.Response) -> None:
        if versions is not None:
            versions.append(response.http_version)

    return httpx.AsyncClient(
        http1=False,
        http2=True,
        timeout=httpx.Timeout(WAIT, read=None),
        event_hooks={"response": [seen]},
    )


@asynccontextmanager
async def http_acp_client(
    url: str,
    client: RecordingClient | None = None,
    *,
    http: httpx.AsyncClient | None = None,
    token: str = TOKEN,
) -> AsyncIterator[tuple[ClientSideConnection, RecordingClient]]:
    """The `acp` package's client over its streamable HTTP transport, initialized, bearer token
    set; `http` is the httpx client it uses (None: the package's own)."""
    recorder = client or RecordingClient()
    transport = create_http_stream(url, client=http, headers=bearer(token))
    connection = connect_to_agent(cast(Client, recorder), transport)
    try:
        await asyncio.wait_for(connection.initialize(protocol_version=1), WAIT)
        yield connection, recorder
    finally:
        await connection.close()


def rpc(ident: int | None, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if ident is not None:
        message["id"] = ident
    return message


class SseReader:
    """One GET stream read event by event (each `data:` a JSON-RPC message)."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._lines = response.aiter_lines()
        self.comments: list[str] = []

    async def next(self) -> dict[str, Any]:
        """The next message (comments are kept aside); fails when the stream ends first."""
        async with asyncio.timeout(WAIT):
            data: list[str] = []
            async for line in self._lines:
                if line.startswith(":"):
                    self.comments.append(line)
                elif line.startswith("data: "):
                    data.append(line[len("data: ") :])
                elif not line and data:
                    return cast(dict[str, Any], json.loads("\n".join(data)))
        raise AssertionError("the stream ended")

    async def until_answer(self, ident: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The answer to `ident`, and every message before it."""
        before: list[dict[str, Any]] = []
        while True:
            message = await self.next()
            if "method" not in message and message.get("id") == ident:
                return message, before
            before.append(message)


@asynccontextmanager
async def sse(
    http: httpx.AsyncClient, url: str, connection_id: str, session_id: str | None = None
) -> AsyncIterator[SseReader]:
    """A GET stream of the connection (or of the session), open while the block runs."""
    headers = {**bearer(), "Accept": "text/event-stream", "Acp-Connection-Id": connection_id}
    if session_id is not None:
        headers["Acp-Session-Id"] = session_id
    async with http.stream("GET", url, headers=headers) as response:
        assert response.status_code == 200, response.status_code
        yield SseReader(response)


async def post(
    http: httpx.AsyncClient,
    url: str,
    message: Any,
    *,
    connection_id: str | None = None,
    session_id: str | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """A POST of `message` as JSON, with the bearer token and the ids given."""
    sent = {**bearer(), "Content-Type": "application/json", **(headers or {})}
    if connection_id is not None:
        sent["Acp-Connection-Id"] = connection_id
    if session_id is not None:
        sent["Acp-Session-Id"] = session_id
    return await http.post(url, content=json.dumps(message), headers=sent)


async def initialized(http: httpx.AsyncClient, url: str) -> str:
    """A new connection's id (after its `initialize`)."""
    response = await post(http, url, rpc(0, "initialize", {"protocolVersion": 1}))
    assert response.status_code == 200, response.text
    return response.headers["Acp-Connection-Id"]
