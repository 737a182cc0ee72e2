"""Strict JSON-RPC at `trellis acp` as a real process, driven by the `acp` package's client side:
errors carry `data.details`, bad params are -32602 without a traceback in `trellis.log`, and
`$/cancel_request` ends a prompt in flight."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import text_block
from acp.exceptions import RequestError

from tests.acp.stdio_peer import (
    LONG_REPLY,
    open_session,
    script_args,
    streaming_prompt,
    trellis_acp,
)


async def test_errors_carry_their_reason_in_data_details_and_leave_no_traceback(
    tmp_path: Path, home: Path, config: Path, workspace: Path
) -> None:
    args = script_args(tmp_path, {"error": "the endpoint fell over"})
    async with trellis_acp(home=home, config=config, cwd=workspace, args=args) as peer:
        session_id = await open_session(peer, workspace)
        with pytest.raises(RequestError) as failed:
            await peer.conn.prompt(session_id=session_id, prompt=[text_block("hi")])
        assert failed.value.code == -32012
        assert "the endpoint fell over" in (failed.value.data or {})["details"]
        for params, field in (
            ({"cwd": f"{workspace}/a\u0000b", "mcpServers": []}, "cwd"),
            ({"cwd": "/" + "x" * 10_000, "mcpServers": []}, "cwd"),
            ({"sessionId": "\u0000\ud800", "cwd": str(workspace), "mcpServers": []}, "sessionId"),
        ):
            method = "session/load" if "sessionId" in params else "session/new"
            with pytest.raises(RequestError) as invalid:
                await peer.conn._conn.send_request(method, params)
            assert invalid.value.code == -32602
            assert f"{field}:" in str(invalid.value)
            assert (invalid.value.data or {})["details"]
        await peer.raw(b'{"jsonrpc": "1.0", "id": 9001, "method": "session/list", "params": {}}')
        [wrong_version] = await peer.errors_for(9001)
        assert wrong_version["error"]["code"] == -32600
        assert "result" not in wrong_version
        await peer.raw(b'{"jsonrpc": "2.0", "id": 424242, "result": {}}')  # answers nothing
        listed = await peer.conn.list_sessions()
        assert [s.session_id for s in listed.sessions] == [session_id]
    log = (home / "trellis.log").read_text()
    assert "Traceback" not in log
    assert "424242" in log  # the stray response was logged, and only logged


async def test_cancel_request_ends_the_prompt_in_flight(
    tmp_path: Path, home: Path, config: Path, workspace: Path
) -> None:
    args = script_args(tmp_path, LONG_REPLY)
    async with trellis_acp(home=home, config=config, cwd=workspace, args=args) as peer:
        session_id = await open_session(peer, workspace)
        prompt = await streaming_prompt(peer, session_id)
        [ident] = [i for i, method in peer.asked.items() if method == "session/prompt"]
        await peer.conn._conn.send_notification("$/cancel_request", {"requestId": ident})
        assert (await prompt).stop_reason == "cancelled"
        assert len(peer.text(session_id)) < len("word " * 500)
