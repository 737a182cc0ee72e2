"""The ACP core without processes: an in-process peer drives `AcpConnection.receive`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from app.acp.core import AcpOptions, AcpServer
from engine.config import Config
from engine.gateway.scripted import Reply, ScriptedGateway
from tests.acp.peer import Peer

Script = Callable[[list[Reply]], None]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    (path / "hello.txt").write_text("hello there\n")
    return path


@pytest.fixture
def replies() -> list[list[Reply]]:
    """Each new gateway plays the next script; a test appends scripts before opening sessions."""
    return []


@pytest.fixture
async def server(
    tmp_path: Path, workspace: Path, replies: list[list[Reply]]
) -> AsyncIterator[AcpServer]:
    def gateway() -> ScriptedGateway:
        return ScriptedGateway(replies.pop(0) if replies else [])

    made = AcpServer(
        AcpOptions(
            store_path=tmp_path / "data" / "sessions.sqlite",
            roots=[workspace],
            config=Config(),
            gateway_factory=gateway,
        )
    )
    yield made
    await made.aclose()


async def _new(peer: Peer, workspace: Path) -> str:
    await peer.initialize()
    result = await peer.result("session/new", {"cwd": str(workspace), "mcpServers": []})
    return str(result["sessionId"])


async def test_initialize_offers_version_1_load_embedded_context_and_list(
    server: AcpServer,
) -> None:
    peer = Peer(server)
    result = await peer.initialize()
    assert result["protocolVersion"] == 1
    capabilities = result["agentCapabilities"]
    assert capabilities["loadSession"] is True
    assert capabilities["promptCapabilities"]["embeddedContext"] is True
    assert capabilities["sessionCapabilities"]["list"] == {}
    assert result["agentInfo"]["name"] == "trellis"


async def test_new_answers_first_then_sends_the_command_registry(
    server: AcpServer, workspace: Path
) -> None:
    peer = Peer(server)
    session_id = await _new(peer, workspace)
    answer_at = next(i for i, m in enumerate(peer.sent) if m.get("result", {}).get("sessionId"))
    await asyncio.sleep(0)
    commands = [
        (i, u)
        for i, u in enumerate(peer.sent)
        if u.get("method") == "session/update"
        and u["params"]["update"]["sessionUpdate"] == "available_commands_update"
    ]
    assert commands
    index, message = commands[0]
    assert index > answer_at
    names = {c["name"] for c in message["params"]["update"]["availableCommands"]}
    assert {"inject", "model", "compact", "pin"} <= names
    assert message["params"]["sessionId"] == session_id


async def test_a_prompt_streams_its_reply_and_ends_the_turn(
    server: AcpServer, workspace: Path, replies: list[list[Reply]]
) -> None:
    replies.append([Reply(text="Hello from the script")])
    peer = Peer(server)
    session_id = await _new(peer, workspace)
    result = await peer.result(
        "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]}
    )
    assert result == {"stopReason": "end_turn"}
    assert peer.text(session_id) == "Hello from the script"
    kinds = [u["sessionUpdate"] for u in peer.updates(session_id)]
    assert "usage_update" in kinds
    answer = next(i for i, m in enumerate(peer.sent) if m.get("result") == result)
    last_update = max(i for i, m in enumerate(peer.sent) if m.get("method") == "session/update")
    assert last_update < answer
