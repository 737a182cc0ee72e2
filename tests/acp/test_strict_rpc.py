"""Strict JSON-RPC through the whole core (protocol, handlers, connection) in process: bad params
are -32602 naming the field and never an internal error with a traceback in the log."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from app.acp import rpc
from app.acp.core import AcpServer
from engine.gateway.scripted import Reply
from tests.acp.peer import Peer


def invalid(answer: dict[str, Any], field: str) -> str:
    """The message of a -32602 answer that names `field`."""
    assert "result" not in answer, answer
    assert answer["error"]["code"] == rpc.INVALID_PARAMS, answer
    message = str(answer["error"]["message"])
    assert f"{field}:" in message, message
    return message


def no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert failures == [], [r.getMessage() for r in failures]


async def test_initialize_with_client_capabilities_not_an_object(
    server: AcpServer, caplog: pytest.LogCaptureFixture
) -> None:
    peer = Peer(server)
    with caplog.at_level(logging.INFO):
        for capabilities, field in (
            (5, "clientCapabilities"),
            ({"fs": 5}, "clientCapabilities.fs"),
        ):
            params = {"protocolVersion": 1, "clientCapabilities": capabilities}
            invalid(await peer.request("initialize", params), field)
    no_traceback(caplog)
    assert (await peer.initialize())["protocolVersion"] == 1  # a good one still works


CWDS = {
    "nul": ("/a\u0000b", "NUL"),
    "lone_surrogate": ("/caf\ud800", "lone surrogate"),
    "name_too_long": ("/" + "x" * 10_000, "File name too long"),
}


@pytest.mark.parametrize("case", sorted(CWDS))
@pytest.mark.parametrize("method", ["session/new", "session/load", "session/list"])
async def test_a_cwd_no_file_system_can_take(
    server: AcpServer,
    workspace: Path,
    caplog: pytest.LogCaptureFixture,
    case: str,
    method: str,
) -> None:
    suffix, reason = CWDS[case]
    peer = Peer(server)
    await peer.initialize()
    params: dict[str, Any] = {"cwd": f"{workspace}{suffix}", "mcpServers": []}
    if method == "session/load":
        params["sessionId"] = "f" * 32
    with caplog.at_level(logging.INFO):
        message = invalid(await peer.request(method, params), "cwd")
    assert reason in message
    assert len(message) < 300  # the 10,000-character name is not echoed back
    no_traceback(caplog)


@pytest.mark.parametrize("session_id", ["\u0000\ud800", "\ud800", "a\u0000"])
@pytest.mark.parametrize("method", ["session/load", "session/resume", "session/delete"])
async def test_a_session_id_no_store_can_hold(
    server: AcpServer,
    workspace: Path,
    caplog: pytest.LogCaptureFixture,
    session_id: str,
    method: str,
) -> None:
    peer = Peer(server)
    await peer.initialize()
    params = {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
    with caplog.at_level(logging.INFO):
        invalid(await peer.request(method, params), "sessionId")
    no_traceback(caplog)


async def test_a_model_failure_says_its_reason_in_data_details(
    server: AcpServer, workspace: Path, replies: list[list[Reply]]
) -> None:
    replies.append([Reply(error="the endpoint fell over")])
    peer = Peer(server)
    await peer.initialize()
    opened = await peer.result("session/new", {"cwd": str(workspace), "mcpServers": []})
    prompt = {"sessionId": opened["sessionId"], "prompt": [{"type": "text", "text": "hi"}]}
    failed = await peer.request("session/prompt", prompt)
    assert failed["error"]["code"] == rpc.TURN_FAILED
    assert "the endpoint fell over" in failed["error"]["data"]["details"]


async def test_every_error_answer_carries_data_details(server: AcpServer, workspace: Path) -> None:
    peer = Peer(server)
    early = await peer.request("session/list", {})
    await peer.initialize()
    unknown = await peer.request("session/fly", {})
    missing = await peer.request("session/new", {"mcpServers": []})
    outside = await peer.request("session/new", {"cwd": "/", "mcpServers": []})
    for answer in (early, unknown, missing, outside):
        details = answer["error"]["data"]["details"]
        assert isinstance(details, str)
        assert details
    assert "not under the served roots" in outside["error"]["data"]["details"]
    assert missing["error"]["data"]["errors"][0]["field"] == "cwd"  # what was there stays


async def test_cancel_request_ends_a_running_prompt_which_answers_cancelled(
    server: AcpServer, workspace: Path, replies: list[list[Reply]]
) -> None:
    replies.append([Reply(text="tick " * 400, chunk_delay=0.01)])
    peer = Peer(server)
    await peer.initialize()
    opened = await peer.result("session/new", {"cwd": str(workspace), "mcpServers": []})
    session_id = opened["sessionId"]
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "count"}]}
    running = await peer.start("session/prompt", prompt)
    ident = max(peer.asked)
    for _ in range(500):
        if peer.text(session_id):
            break
        await asyncio.sleep(0.01)
    await peer.send(
        {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": ident}}
    )
    answer = await asyncio.wait_for(running, 10)
    assert answer["result"]["stopReason"] == "cancelled"
    assert len(peer.text(session_id)) < len("tick " * 400)


async def test_cancel_request_stops_another_request_which_answers_32800(
    server: AcpServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entered = asyncio.Event()

    async def never(_: AcpServer, cwd: str) -> Path:
        entered.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    peer = Peer(server)
    await peer.initialize()
    monkeypatch.setattr(AcpServer, "workspace", never)
    waiting = await peer.start("session/list", {"cwd": str(workspace)})
    ident = max(peer.asked)
    await asyncio.wait_for(entered.wait(), 10)
    await peer.send(
        {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": ident}}
    )
    answer = await asyncio.wait_for(waiting, 10)
    assert "result" not in answer
    assert answer["error"]["code"] == rpc.REQUEST_CANCELLED
    assert answer["error"]["data"]["details"]
    monkeypatch.undo()
    assert (await peer.result("session/list", {}))["sessions"] == []  # the connection goes on


async def test_each_note_of_trellis_is_a_message_with_an_id_of_its_own(
    server: AcpServer, workspace: Path
) -> None:
    peer = Peer(server)
    await peer.initialize()
    opened = await peer.result("session/new", {"cwd": str(workspace), "mcpServers": []})
    session_id = opened["sessionId"]
    for line in ("/pin one", "/pin two"):
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": line}]}
        await peer.result("session/prompt", prompt)
    ids = [
        u["messageId"]
        for u in peer.updates(session_id)
        if u["sessionUpdate"] == "agent_message_chunk"
    ]
    assert len(ids) == 2
    assert len(set(ids)) == 2
