"""A shell command's changes to the workspace through `trellis acp` as a real process (issue 30,
ACP): its completed update shows the unified diffs of the files its batch created, changed and
removed, with their paths as locations, live and again on `session/load`."""

from __future__ import annotations

from pathlib import Path

from acp import text_block
from acp.schema import ClientCapabilities

from tests.acp.stdio_peer import script_args, trellis_acp
from tests.acp.test_stdio_plans_diffs import tool_updates


async def test_a_commands_diffs_live_and_loaded(tmp_path: Path) -> None:
    home, config, workspace = tmp_path / "home", tmp_path / "config.toml", tmp_path / "ws"
    config.write_text("")
    workspace.mkdir()
    (workspace / "keep.txt").write_text("one\ntwo\n")
    (workspace / "gone.txt").write_text("bye\n")
    root = str(workspace.resolve())
    command = "printf 'new\\n' > made.txt; printf 'one\\n2\\n' > keep.txt; rm gone.txt; echo ran"
    args = script_args(
        tmp_path,
        {"tool_calls": [{"name": "run_shell", "arguments": {"command": command}}]},
        {"text": "done"},
    )
    async with trellis_acp(home=home, config=config, cwd=workspace, args=args) as peer:
        await peer.conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        session_id = (await peer.conn.new_session(cwd=root, mcp_servers=[])).session_id
        answer = await peer.conn.prompt(session_id=session_id, prompt=[text_block("change")])
        assert answer.stop_reason == "end_turn"
        (call,) = [
            u["toolCallId"] for u in peer.updates(session_id) if u["sessionUpdate"] == "tool_call"
        ]
        updates = tool_updates(peer, session_id, call)
        final = updates[-1]
        assert final["status"] == "completed"
        assert {location["path"] for location in final["locations"]} == {
            f"{root}/made.txt",
            f"{root}/keep.txt",
            f"{root}/gone.txt",
        }
        result, diffs = (c["content"]["text"] for c in final["content"])
        assert "ran" in result  # the command's output stays before the diffs
        assert "created made.txt (+1 -0):\n```diff\n" in diffs
        assert "\n-two\n+2" in diffs
        assert "removed gone.txt (+0 -1)" in diffs
        assert "-bye" in diffs
        # the result alone came first: the diffs follow once the batch's checkpoint is taken
        assert any(
            u.get("status") == "completed" and len(u.get("content", ())) == 1 for u in updates
        )
        peer.check_schema()

    async with trellis_acp(home=home, config=config, cwd=workspace) as peer:
        await peer.conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        await peer.conn.load_session(cwd=root, session_id=session_id, mcp_servers=[])
        assert tool_updates(peer, session_id, call)[-1] == final
        peer.check_schema()
