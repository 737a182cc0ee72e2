"""A write's or an edit's diff stays: the completed `tool_call_update` carries the whole file
before and after from the call's record, beside the result, live and in `session/load` alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.gateway.scripted import Reply
from engine.tools import PermissionAnswer, PermissionQuestion, default_registry
from replay.acp import AcpProjection, AcpUpdate, replay_updates
from tests.acp.schema_check import check_update
from tests.agent.conftest import FlakyStore, MakeAgent, call, record


async def allow(question: PermissionQuestion) -> PermissionAnswer:
    return PermissionAnswer.allow_once


def finals(updates: list[AcpUpdate]) -> dict[str, dict[str, Any]]:
    """Each call's completed update, as a client receives it."""
    found: dict[str, dict[str, Any]] = {}
    for update in updates:
        check_update({"sessionId": "s" * 32, "update": update})
        if update["sessionUpdate"] == "tool_call_update" and update.get("status") in (
            "completed",
            "failed",
        ):
            found[update["toolCallId"]] = update
    return found


async def test_the_completed_update_keeps_the_whole_files_diff_beside_the_result(
    make_agent: MakeAgent, store: FlakyStore, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    (workspace / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    (workspace / ".env").write_text("TOKEN=abc123\n")
    agent = await make_agent(
        [
            Reply(
                tool_calls=[
                    call("write_file", "w1", path="src/new.py", content="print(1)\n"),
                    call("edit_file", "e1", path="notes.txt", old="beta", new="BETA"),
                    call("edit_file", "s1", path=".env", old="abc123", new="xyz789"),
                ]
            ),
            Reply(text="done"),
        ],
        tools=default_registry(),
        responder=allow,
    )
    live = record(agent)
    agent.send("change the files")
    await agent.when_idle()
    root = str(workspace.resolve())
    projection = AcpProjection(root)
    live_finals = finals([u for event in live.events for u in projection.apply(event)])
    events = (await store.inspect(agent.session_id)).events
    loaded = finals(list(replay_updates(events, root)))
    assert live_finals == loaded

    created = loaded["w1"]
    assert created["status"] == "completed"
    assert created["locations"] == [{"path": f"{root}/src/new.py", "line": 1}]
    assert created["content"] == [
        {"type": "diff", "path": f"{root}/src/new.py", "oldText": None, "newText": "print(1)\n"},
        {
            "type": "content",
            "content": {"type": "text", "text": "created src/new.py (9 characters, 1 line)"},
        },
    ]
    edited = loaded["e1"]
    assert edited["locations"] == [{"path": f"{root}/notes.txt", "line": 2}]
    assert edited["content"][0] == {
        "type": "diff",
        "path": f"{root}/notes.txt",
        "oldText": "alpha\nbeta\ngamma\n",
        "newText": "alpha\nBETA\ngamma\n",
    }
    assert edited["content"][1]["content"]["text"].startswith("edited notes.txt")
    secret = loaded["s1"]  # hashes only: no text of the file goes to the client
    assert [c["type"] for c in secret["content"]] == ["content"]
    assert "TOKEN" not in str(secret)
