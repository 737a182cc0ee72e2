"""Permission modes over ACP, driven by the `acp` package's client against `trellis acp` run as a
process: `modes` and the `mode` config option in the answers, `session/set_mode`,
`session/set_config_option`, `/mode`, `current_mode_update`, a read-only refusal without a
question, and a `session/load` in another process that replays every change but not approve-all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.exceptions import RequestError

from tests.acp.stdio_peer import StdioPeer, script_args, trellis_acp
from tests.waiting import until

WRITE = {"tool_calls": [{"name": "write_file", "arguments": {"path": "out.txt", "content": "x"}}]}


def modes_sent(peer: StdioPeer, session_id: str) -> list[str]:
    return [
        u["currentModeId"]
        for u in peer.updates(session_id)
        if u["sessionUpdate"] == "current_mode_update"
    ]


def mode_option(options: list[Any] | None) -> Any:
    (option,) = [o for o in options or [] if o.id == "mode"]
    return option


async def test_modes_over_acp_and_a_load_that_drops_approve_all(
    tmp_path: Path, home: Path, config: Path, workspace: Path
) -> None:
    args = script_args(tmp_path, WRITE, {"text": "refused"}, {"text": "hello"})
    async with trellis_acp(home=home, config=config, cwd=workspace, args=args) as peer:
        await peer.conn.initialize(protocol_version=1)
        new = await peer.conn.new_session(cwd=str(workspace), mcp_servers=[])
        session_id = new.session_id
        assert new.modes is not None
        assert new.modes.current_mode_id == "ask"
        assert [m.id for m in new.modes.available_modes] == [
            "ask",
            "accept-edits",
            "read-only",
            "approve-all",
        ]
        option = mode_option(new.config_options)
        assert (option.category, option.current_value) == ("mode", "ask")

        await peer.conn.set_session_mode(session_id=session_id, mode_id="read-only")
        response = await peer.conn.prompt(session_id=session_id, prompt=[text_block("write")])
        assert response.stop_reason == "end_turn"
        assert peer.client.asked == []  # refused at permission time: nobody was asked
        assert not (workspace / "out.txt").exists()
        failed = [
            u
            for u in peer.updates(session_id)
            if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "failed"
        ]
        assert "the session is in read-only mode" in json.dumps(failed)

        with pytest.raises(RequestError) as bad:
            await peer.conn.set_session_mode(session_id=session_id, mode_id="yolo")
        assert bad.value.code == -32602
        assert "modeId" in str(bad.value)

        changed = await peer.conn.set_config_option(
            config_id="mode", session_id=session_id, value="accept-edits"
        )
        assert mode_option(changed.config_options).current_value == "accept-edits"
        said = await peer.conn.prompt(
            session_id=session_id, prompt=[text_block("/mode approve-all")]
        )
        assert said.stop_reason == "end_turn"
        assert "mode approve all" in peer.text(session_id)
        # the opening notes name the mode the session opened in, then each change
        assert modes_sent(peer, session_id) == ["ask", "read-only", "accept-edits", "approve-all"]
        await peer.conn.prompt(session_id=session_id, prompt=[text_block("hi")])

    async with trellis_acp(home=home, config=config, cwd=workspace, args=args) as again:
        await again.conn.initialize(protocol_version=1)
        loaded = await again.conn.load_session(cwd=str(workspace), session_id=session_id)
        assert loaded.modes is not None
        assert loaded.modes.current_mode_id == "ask"  # approve-all is never reopened
        # the whole history, in order, and the fallback said in words
        # the whole history replayed, then the fallback as the Agent opens, said in words, and
        # the opening notes' mode
        await until(lambda: len(modes_sent(again, session_id)) == 5, "five mode updates sent")
        assert modes_sent(again, session_id) == [
            "read-only",
            "accept-edits",
            "approve-all",
            "ask",
            "ask",
        ]
        assert "approve all ends when a session is reopened" in again.text(session_id)
        assert "/mode approve-all" in again.text(session_id, "user_message_chunk")
        (options,) = [
            u["configOptions"]
            for u in again.updates(session_id)
            if u["sessionUpdate"] == "config_option_update"
        ]
        assert [o["currentValue"] for o in options if o["id"] == "mode"] == ["ask"]


async def test_a_command_that_changes_an_option_sends_the_options(
    tmp_path: Path, home: Path, config: Path, workspace: Path
) -> None:
    """`/mode NAME` changes the `mode` option: a `config_option_update` says so; `/pin` changes
    no option and sends none."""
    async with trellis_acp(home=home, config=config, cwd=workspace) as peer:
        await peer.conn.initialize(protocol_version=1)
        session_id = (await peer.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await until(
            lambda: len(option_updates(peer, session_id)) == 1, "one option update"
        )  # the opening notes
        await peer.conn.prompt(session_id=session_id, prompt=[text_block("/pin keep it short")])
        await peer.conn.prompt(session_id=session_id, prompt=[text_block("/mode read-only")])
        sent = option_updates(peer, session_id)
        assert [[o["currentValue"] for o in u if o["id"] == "mode"] for u in sent] == [
            ["ask"],
            ["read-only"],
        ]


def option_updates(peer: StdioPeer, session_id: str) -> list[list[dict[str, Any]]]:
    return [
        u["configOptions"]
        for u in peer.updates(session_id)
        if u["sessionUpdate"] == "config_option_update"
    ]
