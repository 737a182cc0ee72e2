"""`app.acp.connection` on the event loop: what a transport that fails leaves behind."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from app.acp.core import AcpOptions, AcpServer
from engine.config import Config


async def test_a_transport_that_refused_a_write_still_lets_the_sessions_go_on_close(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    server = AcpServer(
        AcpOptions(store_path=tmp_path / "sessions.sqlite", roots=[workspace], config=Config())
    )
    answers: list[dict[str, object]] = []
    broken = False
    refused: list[str] = []

    async def send(text: str) -> None:
        if broken:
            refused.append(text)
            raise ConnectionResetError("the peer went away")
        answers.append(json.loads(text))

    connection = server.connect(send, connection_id="c1")
    try:
        for ident, method, params in (
            (1, "initialize", {"protocolVersion": 1}),
            (2, "session/new", {"cwd": str(workspace), "mcpServers": []}),
        ):
            await connection.receive(
                json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
            )
            for _ in range(1000):
                if any(a.get("id") == ident for a in answers):
                    break
                await asyncio.sleep(0.01)
        [opened] = [a for a in answers if a.get("id") == 2]
        session_id = opened["result"]["sessionId"]  # type: ignore[index]
        assert server.sessions.get(session_id) is not None
        broken = True
        await connection.receive(
            json.dumps({"jsonrpc": "2.0", "id": 3, "method": "session/list", "params": {}})
        )
        for _ in range(1000):
            if refused:
                break
            await asyncio.sleep(0.01)
        assert refused
        await connection.aclose()
        assert server.sessions.get(session_id) is None  # its Agent disposed, its lease given back
    finally:
        await server.aclose()
