"""The official TypeScript SDK's streamable HTTP client (`@agentclientprotocol/sdk`, its
`experimental/http-client`) against `trellis serve`'s HTTP endpoint as a real process (issue 29,
section 4): a prompt streams its updates on the session's stream, a permission request is answered
by POST, `session/cancel` ends a turn, and another process loads the session with its replay (the
client opens the session's stream before it sends `session/load`, the RFD's resume flow). Node's
fetch speaks HTTP/1.1 to a plain `http://` URL."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.acp.http_peer import http_url
from tests.acp.node_peers import serve_run
from tests.acp.test_http_sessions import slow_model, tool_model
from tests.acp.ws_peer import TOKEN, ServeProcess, serving

pytestmark = pytest.mark.slow


async def run(
    server: ServeProcess, steps: list[dict[str, Any]], *, permission: str = "allow_once"
) -> list[dict[str, Any]]:
    """Every message the TypeScript client got running `steps`, in order; fails on an SDK
    error."""
    return await asyncio.to_thread(
        serve_run, http_url(server), TOKEN, server.home.parent, steps, permission=permission
    )


INITIALIZE = {"method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}


def new_session(server: ServeProcess) -> dict[str, Any]:
    params = {"cwd": str(server.root), "mcpServers": []}
    return {"method": "session/new", "params": params, "save": {"session": "sessionId"}}


def prompt(text: str, **extra: str) -> dict[str, Any]:
    params = {"sessionId": "$session", "prompt": [{"type": "text", "text": text}]}
    return {"method": "session/prompt", "params": params, **extra}


def responses(lines: list[dict[str, Any]], method: str) -> list[Any]:
    return [
        line["result"] for line in lines if line["kind"] == "response" and line["method"] == method
    ]


def updates(lines: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [
        line["params"]
        for line in lines
        if line["kind"] == "notification" and line["params"]["update"]["sessionUpdate"] == kind
    ]


async def test_a_prompt_streams_and_another_process_loads_the_session(tmp_path: Path) -> None:
    with serving(tmp_path) as server:
        first = await run(server, [INITIALIZE, new_session(server), prompt("remember me")])
        session = responses(first, "session/new")[0]["sessionId"]
        load = {
            "method": "session/load",
            "params": {"sessionId": session, "cwd": str(server.root), "mcpServers": []},
        }
        second = await run(server, [INITIALIZE, load])
    assert [r["stopReason"] for r in responses(first, "session/prompt")] == ["end_turn"]
    chunks = updates(first, "agent_message_chunk")
    assert len(chunks) > 1
    assert {chunk["sessionId"] for chunk in chunks} == {session}
    assert [r.keys() for r in responses(second, "session/load")] == [{"modes"}]
    told = [u["update"]["content"]["text"] for u in updates(second, "user_message_chunk")]
    said = "".join(u["update"]["content"]["text"] for u in updates(second, "agent_message_chunk"))
    assert told == ["remember me"]
    assert said == "".join(c["update"]["content"]["text"] for c in chunks)


async def test_a_permission_request_and_a_cancel(tmp_path: Path) -> None:
    with serving(tmp_path, name="tool", config=tool_model(tmp_path)) as server:
        asked = await run(server, [INITIALIZE, new_session(server), prompt("write it")])
        made = (server.root / "made.txt").read_text(encoding="utf-8")
    with serving(tmp_path, name="slow", config=slow_model(tmp_path, replies=1)) as server:
        cancelled = await run(
            server,
            [
                INITIALIZE,
                new_session(server),
                prompt("go on", background="prompt"),
                {"streaming": "$session"},
                {"notify": "session/cancel", "params": {"sessionId": "$session"}},
                {"await": "prompt"},
            ],
        )
    assert [line["method"] for line in asked if line["kind"] == "request"] == [
        "session/request_permission"
    ]
    assert [r["stopReason"] for r in responses(asked, "session/prompt")] == ["end_turn"]
    assert made == "hello\n"
    assert responses(cancelled, "session/prompt") == [{"stopReason": "cancelled"}]
