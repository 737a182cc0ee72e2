"""Plans and diffs through `trellis acp` as a real process, driven by the `acp` package's
client: a new file and an edit show the whole file's diff before they run and keep it when they
complete, `/plan` fills the client's plan panel, and `session/load` shows the same again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acp import text_block
from acp.schema import ClientCapabilities

from tests.acp.stdio_peer import StdioPeer, script_args, trellis_acp


def tool_updates(peer: StdioPeer, session_id: str, call_id: str) -> list[dict[str, Any]]:
    return [
        u
        for u in peer.updates(session_id)
        if u["sessionUpdate"] in ("tool_call", "tool_call_update") and u["toolCallId"] == call_id
    ]


def plans(peer: StdioPeer, session_id: str) -> list[list[tuple[str, str, str]]]:
    return [
        [(e["content"], e["status"], e["priority"]) for e in u["entries"]]
        for u in peer.updates(session_id)
        if u["sessionUpdate"] == "plan"
    ]


async def test_diffs_and_plans_live_and_loaded(tmp_path: Path) -> None:
    home, config, workspace = tmp_path / "home", tmp_path / "config.toml", tmp_path / "ws"
    config.write_text("")
    workspace.mkdir()
    (workspace / "notes.txt").write_text("remember the milk\nand the eggs\n")
    (workspace / ".env").write_text("TOKEN=abc\nOTHER=keep-me\n")
    root = str(workspace.resolve())
    args = script_args(
        tmp_path,
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "new.txt", "content": "hello\n"}},
                {
                    "name": "edit_file",
                    "arguments": {"path": "notes.txt", "old": "the eggs", "new": "the bread"},
                },
                {
                    "name": "edit_file",
                    "arguments": {"path": ".env", "old": "TOKEN=abc", "new": "TOKEN=xyz"},
                },
            ]
        },
        {"text": "done"},
    )
    new_diff = {"type": "diff", "path": f"{root}/new.txt", "oldText": None, "newText": "hello\n"}
    edit_diff = {
        "type": "diff",
        "path": f"{root}/notes.txt",
        "oldText": "remember the milk\nand the eggs\n",
        "newText": "remember the milk\nand the bread\n",
    }
    plan = [
        [("buy bread", "pending", "medium")],
        [("buy bread", "pending", "medium"), ("pay", "pending", "medium")],
        [("buy bread", "completed", "medium"), ("pay", "pending", "medium")],
    ]
    async with trellis_acp(home=home, config=config, cwd=workspace, args=args) as peer:
        await peer.conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        session_id = (await peer.conn.new_session(cwd=root, mcp_servers=[])).session_id
        answer = await peer.conn.prompt(session_id=session_id, prompt=[text_block("change")])
        assert answer.stop_reason == "end_turn"
        # the turn's reported tokens, under _meta while ACP's `usage` is unstable
        usage = (answer.field_meta or {})["usage"]
        assert usage["totalTokens"] == usage["inputTokens"] + usage["outputTokens"] > 0
        for line in ("/plan add buy bread", "/plan add pay", "/plan check 1"):
            await peer.conn.prompt(session_id=session_id, prompt=[text_block(line)])

        calls = [
            u["toolCallId"] for u in peer.updates(session_id) if u["sessionUpdate"] == "tool_call"
        ]
        write, edit, secret = calls
        written = tool_updates(peer, session_id, write)
        # before it runs: the whole file's diff, read from the disk, then asked about
        (preview,) = [u for u in written if u.get("content") == [new_diff] and "status" not in u]
        assert preview["locations"] == [{"path": f"{root}/new.txt", "line": 1}]
        assert "content" not in peer.client.asked[0].model_dump(exclude_none=True)
        # completed: the diff stays beside the result
        assert written[-1]["status"] == "completed"
        assert written[-1]["content"][0] == new_diff
        assert written[-1]["content"][1]["content"]["text"].startswith("created new.txt")
        edited = tool_updates(peer, session_id, edit)
        assert any(u.get("content") == [edit_diff] for u in edited)
        assert edited[-1]["content"][0] == edit_diff
        assert edited[-1]["locations"] == [{"path": f"{root}/notes.txt", "line": 2}]
        assert plans(peer, session_id) == plan
        # a secret file's text reaches the client neither before nor after the edit
        assert "keep-me" not in json.dumps(tool_updates(peer, session_id, secret))
        assert tool_updates(peer, session_id, secret)[-1]["status"] == "completed"
        live_final = {call: tool_updates(peer, session_id, call)[-1] for call in calls}

    async with trellis_acp(home=home, config=config, cwd=workspace) as peer:
        await peer.conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        await peer.conn.load_session(cwd=root, session_id=session_id, mcp_servers=[])
        assert {call: tool_updates(peer, session_id, call)[-1] for call in calls} == live_final
        assert plans(peer, session_id) == plan
